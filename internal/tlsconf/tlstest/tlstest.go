// Package tlstest makes TLS material for tests at test time: a CA, a
// server certificate for localhost and 127.0.0.1, a client certificate,
// and the stores Kafka's ssl.* keys point at (PEM, JKS, PKCS12), written
// with the same libraries internal/tlsconf reads them with.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// PKI is a CA with one server and one client certificate.
type PKI struct {
	CA                     *x509.Certificate
	ServerKey, ClientKey   *ecdsa.PrivateKey
	ServerCert, ClientCert *x509.Certificate
}

// New generates a PKI valid for an hour either side of now.
func New(tb testing.TB) *PKI {
	tb.Helper()
	caKey := newKey(tb)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	p := &PKI{CA: sign(tb, caTmpl, caTmpl, &caKey.PublicKey, caKey)}
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, hosts ...string) (*ecdsa.PrivateKey, *x509.Certificate) {
		key := newKey(tb)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
		return key, sign(tb, tmpl, p.CA, &key.PublicKey, caKey)
	}
	p.ServerKey, p.ServerCert = issue(2, "server", x509.ExtKeyUsageServerAuth, "localhost", "127.0.0.1")
	p.ClientKey, p.ClientCert = issue(3, "client", x509.ExtKeyUsageClientAuth)
	return p
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func sign(tb testing.TB, tmpl, parent *x509.Certificate, pub, signer any) *x509.Certificate {
	tb.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// CertPEM encodes certificates as PEM CERTIFICATE blocks.
func CertPEM(certs ...*x509.Certificate) string {
	var b strings.Builder
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.String()
}

// KeyPEM encodes key as an unencrypted PKCS#8 PRIVATE KEY block.
func KeyPEM(tb testing.TB, key *ecdsa.PrivateKey) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// WriteFile writes data to a new file in a temporary directory of tb.
func WriteFile(tb testing.TB, name string, data []byte) string {
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// ServerTLS is a listener configuration serving the server certificate
// (with the CA in the chain) and asking for no client certificate.
func (p *PKI) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{
			Certificate: [][]byte{p.ServerCert.Raw, p.CA.Raw},
			PrivateKey:  p.ServerKey, Leaf: p.ServerCert,
		}},
	}
}

// JKSTrustStore writes a JKS truststore holding certs, each as a trusted
// certificate entry.
func JKSTrustStore(tb testing.TB, password string, certs ...*x509.Certificate) string {
	ks := keystore.New()
	for i, c := range certs {
		if err := ks.SetTrustedCertificateEntry(string(rune('a'+i))+"-ca", keystore.TrustedCertificateEntry{
			CreationTime: time.Now(), Certificate: keystore.Certificate{Type: "X509", Content: c.Raw},
		}); err != nil {
			tb.Fatal(err)
		}
	}
	return storeJKS(tb, ks, password)
}

// JKSKeyStore writes a JKS keystore with one private key entry.
func JKSKeyStore(tb testing.TB, storePassword, keyPassword string, key *ecdsa.PrivateKey, chain ...*x509.Certificate) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	entry := keystore.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: der}
	for _, c := range chain {
		entry.CertificateChain = append(entry.CertificateChain, keystore.Certificate{Type: "X509", Content: c.Raw})
	}
	ks := keystore.New()
	if err := ks.SetPrivateKeyEntry("key", entry, []byte(keyPassword)); err != nil {
		tb.Fatal(err)
	}
	return storeJKS(tb, ks, storePassword)
}

func storeJKS(tb testing.TB, ks keystore.KeyStore, password string) string {
	path := filepath.Join(tb.TempDir(), "store.jks")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := ks.Store(f, []byte(password)); err != nil {
		tb.Fatal(err)
	}
	return path
}

// PKCS12KeyStore writes a PKCS12 keystore with key, its certificate and CAs.
func PKCS12KeyStore(tb testing.TB, password string, key *ecdsa.PrivateKey, leaf *x509.Certificate, cas ...*x509.Certificate) string {
	data, err := pkcs12.Modern.Encode(key, leaf, cas, password)
	if err != nil {
		tb.Fatal(err)
	}
	return WriteFile(tb, "store.p12", data)
}

// PKCS12TrustStore writes a PKCS12 truststore as Java's keytool does.
func PKCS12TrustStore(tb testing.TB, password string, certs ...*x509.Certificate) string {
	data, err := pkcs12.Modern.EncodeTrustStore(certs, password)
	if err != nil {
		tb.Fatal(err)
	}
	return WriteFile(tb, "trust.p12", data)
}
