package kafkatest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// The passwords of the stores GenerateTLS writes. They are fixed so that
// a shell harness (test/kafka/kafka.sh) and the tests agree on them
// without passing secrets around; they protect nothing but test keys.
const (
	// StorePassword opens every JKS and PKCS12 store, and is the key
	// password of the PKCS12 keystores (Java requires the two to match
	// there).
	StorePassword = "sluice-store-pw"
	// KeyPassword guards the private key inside the JKS keystores, which
	// Java lets differ from the store's: Connect's ssl.key.password.
	KeyPassword = "sluice-key-pw"
)

// The names of the files GenerateTLS writes in its directory. A
// directory written by test/kafka/gencerts has the same layout, so
// LoadTLS can describe it.
const (
	caPEMFile                = "ca.pem"
	truststoreJKSFile        = "truststore.jks"
	truststorePKCS12File     = "truststore.p12"
	serverCertPEMFile        = "server-cert.pem"
	serverKeyPEMFile         = "server-key.pem"
	serverKeystorePEMFile    = "server-keystore.pem"
	serverKeystoreJKSFile    = "server-keystore.jks"
	serverKeystorePKCS12File = "server-keystore.p12"
	clientCertPEMFile        = "client-cert.pem"
	clientKeyPEMFile         = "client-key.pem"
	clientKeystorePEMFile    = "client-keystore.pem"
	clientKeystoreJKSFile    = "client-keystore.jks"
	clientKeystorePKCS12File = "client-keystore.p12"
)

// certValidity is how long the generated certificates are valid: long
// enough for a CI run, and for a kafka.sh data directory kept a while.
const certValidity = 30 * 24 * time.Hour

// TLSFiles are the paths of a test certificate authority, a server
// certificate for 127.0.0.1 and localhost signed by it, a client
// certificate signed by it, and the stores holding them in each format
// Kafka Connect's ssl.* keys take: PEM, JKS and PKCS12.
type TLSFiles struct {
	Dir string
	// CAPEM is the CA certificate: a PEM truststore.
	CAPEM string
	// TruststoreJKS and TruststorePKCS12 hold the CA certificate as a
	// trusted entry, opened with StorePassword.
	TruststoreJKS, TruststorePKCS12 string

	Server, Client KeyPairFiles
}

// KeyPairFiles are one certificate with its private key, in each format.
type KeyPairFiles struct {
	// CertPEM is the certificate then the CA's; KeyPEM the unencrypted
	// PKCS#8 private key.
	CertPEM, KeyPEM string
	// KeystorePEM is KeyPEM and CertPEM in one file: Kafka's PEM
	// keystore (ssl.keystore.type=PEM).
	KeystorePEM string
	// KeystoreJKS holds the key (guarded by KeyPassword) and the chain,
	// under StorePassword; KeystorePKCS12 holds both under StorePassword.
	KeystoreJKS, KeystorePKCS12 string
}

// LoadTLS describes the files of a directory GenerateTLS wrote, and
// checks that they are there.
func LoadTLS(dir string) (*TLSFiles, error) {
	f := tlsFilesIn(dir)
	for _, p := range []string{f.CAPEM, f.TruststoreJKS, f.TruststorePKCS12,
		f.Server.CertPEM, f.Server.KeyPEM, f.Server.KeystorePEM, f.Server.KeystoreJKS, f.Server.KeystorePKCS12,
		f.Client.CertPEM, f.Client.KeyPEM, f.Client.KeystorePEM, f.Client.KeystoreJKS, f.Client.KeystorePKCS12} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("TLS directory %s is incomplete: %w", dir, err)
		}
	}
	return f, nil
}

func tlsFilesIn(dir string) *TLSFiles {
	at := func(name string) string { return filepath.Join(dir, name) }
	return &TLSFiles{
		Dir:              dir,
		CAPEM:            at(caPEMFile),
		TruststoreJKS:    at(truststoreJKSFile),
		TruststorePKCS12: at(truststorePKCS12File),
		Server: KeyPairFiles{CertPEM: at(serverCertPEMFile), KeyPEM: at(serverKeyPEMFile), KeystorePEM: at(serverKeystorePEMFile),
			KeystoreJKS: at(serverKeystoreJKSFile), KeystorePKCS12: at(serverKeystorePKCS12File)},
		Client: KeyPairFiles{CertPEM: at(clientCertPEMFile), KeyPEM: at(clientKeyPEMFile), KeystorePEM: at(clientKeystorePEMFile),
			KeystoreJKS: at(clientKeystoreJKSFile), KeystorePKCS12: at(clientKeystorePKCS12File)},
	}
}

// NewTLS generates a fresh CA, server and client certificates and their
// stores in a temporary directory of the test.
func NewTLS(tb testing.TB) *TLSFiles {
	tb.Helper()
	f, err := GenerateTLS(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// GenerateTLS writes a new CA, a server certificate valid for 127.0.0.1,
// ::1 and localhost, a client certificate, and their PEM, JKS and PKCS12
// stores into dir (created if needed).
func GenerateTLS(dir string) (*TLSFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	now := time.Now()
	ca, err := newCert(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "Sluice test CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, nil, now)
	if err != nil {
		return nil, err
	}
	server, err := newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, now)
	if err != nil {
		return nil, err
	}
	client, err := newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "sluice-test-client"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, now)
	if err != nil {
		return nil, err
	}

	f := tlsFilesIn(dir)
	caPEM := certPEM(ca.cert)
	if err := os.WriteFile(f.CAPEM, caPEM, 0o644); err != nil {
		return nil, err
	}
	if err := writeTruststores(f, ca.cert, now); err != nil {
		return nil, err
	}
	if err := writeKeyPair(f.Server, server, ca, now); err != nil {
		return nil, err
	}
	if err := writeKeyPair(f.Client, client, ca, now); err != nil {
		return nil, err
	}
	return f, nil
}

// issued is a certificate with its key.
type issued struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// newCert creates the certificate template describes, signed by parent,
// or self-signed when parent is nil. ECDSA P-256: fast to generate, and
// Java's TLS accepts it.
func newCert(template *x509.Certificate, parent *issued, now time.Time) (*issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	template.NotBefore = now.Add(-time.Hour) // clocks of a CI machine and its containers may differ
	template.NotAfter = now.Add(certValidity)
	signer, signerKey := template, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("creating certificate %q: %w", template.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &issued{cert: cert, key: key}, nil
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func writeTruststores(f *TLSFiles, ca *x509.Certificate, now time.Time) error {
	jks := keystore.New()
	if err := jks.SetTrustedCertificateEntry("sluice-test-ca", keystore.TrustedCertificateEntry{
		CreationTime: now,
		Certificate:  keystore.Certificate{Type: "X509", Content: ca.Raw},
	}); err != nil {
		return err
	}
	if err := writeJKS(f.TruststoreJKS, jks, 0o644); err != nil {
		return err
	}
	p12, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca}, StorePassword)
	if err != nil {
		return fmt.Errorf("encoding the PKCS12 truststore: %w", err)
	}
	return os.WriteFile(f.TruststorePKCS12, p12, 0o644)
}

func writeKeyPair(files KeyPairFiles, leaf, ca *issued, now time.Time) error {
	pkcs8, err := x509.MarshalPKCS8PrivateKey(leaf.key)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	chainPEM := append(certPEM(leaf.cert), certPEM(ca.cert)...)
	for path, content := range map[string][]byte{
		files.CertPEM:     chainPEM,
		files.KeyPEM:      keyPEM,
		files.KeystorePEM: append(append([]byte(nil), keyPEM...), chainPEM...),
	} {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			return err
		}
	}

	jks := keystore.New()
	if err := jks.SetPrivateKeyEntry("sluice-test", keystore.PrivateKeyEntry{
		CreationTime: now,
		PrivateKey:   pkcs8,
		CertificateChain: []keystore.Certificate{
			{Type: "X509", Content: leaf.cert.Raw},
			{Type: "X509", Content: ca.cert.Raw},
		},
	}, []byte(KeyPassword)); err != nil {
		return err
	}
	if err := writeJKS(files.KeystoreJKS, jks, 0o600); err != nil {
		return err
	}
	p12, err := pkcs12.Modern.Encode(leaf.key, leaf.cert, []*x509.Certificate{ca.cert}, StorePassword)
	if err != nil {
		return fmt.Errorf("encoding the PKCS12 keystore: %w", err)
	}
	return os.WriteFile(files.KeystorePKCS12, p12, 0o600)
}

// writeJKS stores ks under StorePassword with perm: 0o600 for a store
// holding a private key.
func writeJKS(path string, ks keystore.KeyStore, perm os.FileMode) error {
	var b bytes.Buffer
	if err := ks.Store(&b, []byte(StorePassword)); err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, b.Bytes(), perm)
}

// ServerTLS is the server side of f: its certificate and key, for an
// embedded broker's listener (kfake.TLS).
func (f *TLSFiles) ServerTLS() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(f.Server.CertPEM, f.Server.KeyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// ClientTLS trusts f's CA only, so a connection that succeeds proves the
// server presented f's server certificate. kgo fills in ServerName from
// the address it dials, so the hostname is verified too.
func (f *TLSFiles) ClientTLS() (*tls.Config, error) {
	b, err := os.ReadFile(f.CAPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("no certificate in " + f.CAPEM)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
