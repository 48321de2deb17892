package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// storeType reads a *.type key: JKS (Kafka's default), PKCS12 or PEM.
func storeType(props map[string]string, key string) (string, error) {
	t := strings.ToUpper(strings.TrimSpace(props[key]))
	switch t {
	case "":
		return "JKS", nil
	case "JKS", "PKCS12", "PEM":
		return t, nil
	default:
		return "", fmt.Errorf("%s: %q is not supported (JKS, PKCS12 or PEM)", key, props[key])
	}
}

// loadTrustStore returns the CA pool of ssl.truststore.*, or nil (the
// system's roots) when no truststore is configured.
func loadTrustStore(props map[string]string) (*x509.CertPool, error) {
	typ, err := storeType(props, "ssl.truststore.type")
	if err != nil {
		return nil, err
	}
	location := strings.TrimSpace(props["ssl.truststore.location"])
	inline := strings.TrimSpace(props["ssl.truststore.certificates"])
	password, hasPassword := props["ssl.truststore.password"]
	if inline != "" {
		if typ != "PEM" {
			return nil, errors.New("ssl.truststore.certificates: needs ssl.truststore.type=PEM")
		}
		if location != "" {
			return nil, errors.New("ssl.truststore.certificates: set either it or ssl.truststore.location, not both")
		}
	}
	if location == "" && inline == "" {
		if hasPassword && password != "" {
			return nil, errors.New("ssl.truststore.password: set without ssl.truststore.location")
		}
		return nil, nil
	}
	var certs []*x509.Certificate
	switch typ {
	case "PEM":
		if hasPassword && password != "" {
			// As Kafka: a PEM truststore has no integrity password.
			return nil, errors.New("ssl.truststore.password: not allowed with ssl.truststore.type=PEM")
		}
		key, data := "ssl.truststore.certificates", []byte(inline)
		if location != "" {
			key = "ssl.truststore.location"
			if data, err = readLocation(key, location); err != nil {
				return nil, err
			}
		}
		if certs, err = pemCertificates(key, data); err != nil {
			return nil, err
		}
	default: // JKS or PKCS12: a binary store file
		data, err := readLocation("ssl.truststore.location", location)
		if err != nil {
			return nil, err
		}
		if typ == "JKS" {
			certs, err = jksTrustedCertificates(data, password, hasPassword)
		} else {
			certs, err = pkcs12TrustedCertificates(data, password)
		}
		if err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

func pemCertificates(key string, data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %w", key, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE block", key)
	}
	return certs, nil
}

// errJKSDigest is the error keystore-go returns when the store's integrity
// digest does not match the password; it has no exported sentinel.
const errJKSDigest = "got invalid digest"

// jksTrustedCertificates reads a JKS truststore. Without
// ssl.truststore.password Java loads the certificates and skips the
// integrity check; keystore-go checks it after reading every entry, so a
// digest mismatch is tolerated exactly in that case.
func jksTrustedCertificates(data []byte, password string, hasPassword bool) ([]*x509.Certificate, error) {
	ks := keystore.New()
	err := ks.Load(bytes.NewReader(data), []byte(password))
	switch {
	case err == nil:
	case !hasPassword && strings.Contains(err.Error(), errJKSDigest):
	case strings.Contains(err.Error(), errJKSDigest):
		return nil, errors.New("ssl.truststore.password: wrong password for the JKS truststore (its integrity check failed)")
	default:
		return nil, fmt.Errorf("ssl.truststore.location: not a readable JKS store: %w", err)
	}
	var certs []*x509.Certificate
	for _, alias := range ks.Aliases() {
		var raw []keystore.Certificate
		if ks.IsTrustedCertificateEntry(alias) {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, fmt.Errorf("ssl.truststore.location: entry %q: %w", alias, err)
			}
			raw = []keystore.Certificate{e.Certificate}
		} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(alias); err == nil {
			// Java's PKIX trust manager trusts the chain certificates of
			// key entries in a truststore as well.
			raw = chain
		}
		for _, r := range raw {
			c, err := x509.ParseCertificate(r.Content)
			if err != nil {
				return nil, fmt.Errorf("ssl.truststore.location: entry %q: %w", alias, err)
			}
			certs = append(certs, c)
		}
	}
	if len(certs) == 0 {
		return nil, errors.New("ssl.truststore.location: the JKS store holds no certificate")
	}
	return certs, nil
}

// pkcs12TrustedCertificates reads a PKCS12 truststore: Java's (keytool's
// trusted-certificate bags) or, failing that, one written by openssl with
// a key, its certificate and CA certificates, all of which are trusted.
func pkcs12TrustedCertificates(data []byte, password string) ([]*x509.Certificate, error) {
	certs, err := pkcs12.DecodeTrustStore(data, password)
	if err == nil {
		if len(certs) == 0 {
			return nil, errors.New("ssl.truststore.location: the PKCS12 store holds no certificate")
		}
		return certs, nil
	}
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return nil, errors.New("ssl.truststore.password: wrong password for the PKCS12 truststore")
	}
	_, leaf, cas, chainErr := pkcs12.DecodeChain(data, password)
	if chainErr != nil {
		return nil, fmt.Errorf("ssl.truststore.location: not a readable PKCS12 truststore: %w", err)
	}
	return append([]*x509.Certificate{leaf}, cas...), nil
}

// loadKeyStore returns the keystore's key and chain, or nothing when no
// keystore is configured. ssl.key.password defaults to the store password
// for JKS, as in Java.
func loadKeyStore(props map[string]string) ([]tls.Certificate, error) {
	typ, err := storeType(props, "ssl.keystore.type")
	if err != nil {
		return nil, err
	}
	location := strings.TrimSpace(props["ssl.keystore.location"])
	inlineKey := strings.TrimSpace(props["ssl.keystore.key"])
	inlineChain := strings.TrimSpace(props["ssl.keystore.certificate.chain"])
	storePassword := props["ssl.keystore.password"]
	keyPassword, hasKeyPassword := props["ssl.key.password"]
	if inlineKey != "" || inlineChain != "" {
		switch {
		case typ != "PEM":
			return nil, errors.New("ssl.keystore.key: ssl.keystore.key and ssl.keystore.certificate.chain need ssl.keystore.type=PEM")
		case inlineKey == "":
			return nil, errors.New("ssl.keystore.key: required with ssl.keystore.certificate.chain")
		case inlineChain == "":
			return nil, errors.New("ssl.keystore.certificate.chain: required with ssl.keystore.key")
		case location != "":
			return nil, errors.New("ssl.keystore.location: set either it or ssl.keystore.key and ssl.keystore.certificate.chain, not both")
		}
	}
	if location == "" && inlineKey == "" {
		if storePassword != "" {
			return nil, errors.New("ssl.keystore.password: set without ssl.keystore.location")
		}
		return nil, nil
	}
	var cert tls.Certificate
	switch typ {
	case "PEM":
		if storePassword != "" {
			// As Kafka: only the key of a PEM keystore may be encrypted.
			return nil, errors.New("ssl.keystore.password: not allowed with ssl.keystore.type=PEM; an encrypted key's password is ssl.key.password")
		}
		keyKey, chainKey := "ssl.keystore.key", "ssl.keystore.certificate.chain"
		keyPEM, chainPEM := []byte(inlineKey), []byte(inlineChain)
		if location != "" {
			keyKey, chainKey = "ssl.keystore.location", "ssl.keystore.location"
			if keyPEM, err = readLocation(keyKey, location); err != nil {
				return nil, err
			}
			chainPEM = keyPEM
		}
		if cert, err = pemKeyPair(keyKey, chainKey, keyPEM, chainPEM, hasKeyPassword && keyPassword != ""); err != nil {
			return nil, err
		}
	case "JKS":
		if !hasKeyPassword {
			keyPassword = storePassword
		}
		data, err := readLocation("ssl.keystore.location", location)
		if err != nil {
			return nil, err
		}
		if cert, err = jksKeyPair(data, storePassword, keyPassword); err != nil {
			return nil, err
		}
	case "PKCS12":
		if hasKeyPassword && keyPassword != storePassword {
			return nil, errors.New("ssl.key.password: differs from ssl.keystore.password; Sluice reads PKCS12 keystores whose key is protected by the store password only")
		}
		data, err := readLocation("ssl.keystore.location", location)
		if err != nil {
			return nil, err
		}
		key, leaf, cas, err := pkcs12.DecodeChain(data, storePassword)
		if errors.Is(err, pkcs12.ErrIncorrectPassword) {
			return nil, errors.New("ssl.keystore.password: wrong password for the PKCS12 keystore")
		}
		if err != nil {
			return nil, fmt.Errorf("ssl.keystore.location: not a readable PKCS12 keystore: %w", err)
		}
		if cert, err = keyPair("ssl.keystore.location", key, append([]*x509.Certificate{leaf}, cas...)); err != nil {
			return nil, err
		}
	}
	return []tls.Certificate{cert}, nil
}

func jksKeyPair(data []byte, storePassword, keyPassword string) (tls.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(storePassword)); err != nil {
		if strings.Contains(err.Error(), errJKSDigest) {
			return tls.Certificate{}, errors.New("ssl.keystore.password: wrong password for the JKS keystore (its integrity check failed)")
		}
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location: not a readable JKS store: %w", err)
	}
	var aliases []string
	for _, a := range ks.Aliases() {
		if ks.IsPrivateKeyEntry(a) {
			aliases = append(aliases, a)
		}
	}
	if len(aliases) != 1 {
		// Java's key manager would pick a key per handshake by algorithm;
		// Sluice takes a store with one key so the choice is never a guess.
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location: the JKS store holds %d private keys; Sluice needs exactly one", len(aliases))
	}
	entry, err := ks.GetPrivateKeyEntry(aliases[0], []byte(keyPassword))
	if err != nil {
		return tls.Certificate{}, errors.New("ssl.key.password: cannot decrypt the JKS keystore's private key (wrong key password)")
	}
	key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location: private key %q: %w", aliases[0], err)
	}
	var chain []*x509.Certificate
	for _, r := range entry.CertificateChain {
		c, err := x509.ParseCertificate(r.Content)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("ssl.keystore.location: certificate of %q: %w", aliases[0], err)
		}
		chain = append(chain, c)
	}
	return keyPair("ssl.keystore.location", key, chain)
}

// pemKeyPair reads a PEM private key and certificate chain. Encrypted keys
// (ENCRYPTED PRIVATE KEY, or legacy Proc-Type encryption) are refused:
// Go's standard library cannot decrypt them.
func pemKeyPair(keyKey, chainKey string, keyPEM, chainPEM []byte, keyPasswordSet bool) (tls.Certificate, error) {
	var keyBlock *pem.Block
	for rest := keyPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			keyBlock = b
			break
		}
	}
	if keyBlock == nil {
		return tls.Certificate{}, fmt.Errorf("%s: no PEM PRIVATE KEY block", keyKey)
	}
	if keyBlock.Type == "ENCRYPTED PRIVATE KEY" || keyBlock.Headers["Proc-Type"] != "" {
		return tls.Certificate{}, fmt.Errorf("%s: the private key is encrypted, which Sluice cannot read in PEM form; "+
			"store it unencrypted (openssl pkcs8 -nocrypt) or use ssl.keystore.type=PKCS12", keyKey)
	}
	if keyPasswordSet {
		return tls.Certificate{}, fmt.Errorf("ssl.key.password: set, but the PEM private key in %s is not encrypted", keyKey)
	}
	key, err := parsePrivateKey(keyBlock)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", keyKey, err)
	}
	chain, err := pemCertificates(chainKey, chainPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	return keyPair(chainKey, key, chain)
}

func parsePrivateKey(b *pem.Block) (crypto.PrivateKey, error) {
	switch b.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(b.Bytes)
	default:
		return x509.ParsePKCS8PrivateKey(b.Bytes)
	}
}

// keyPair checks that the key belongs to the chain's first certificate, as
// a mismatch would otherwise surface only as a failed handshake.
func keyPair(key string, priv crypto.PrivateKey, chain []*x509.Certificate) (tls.Certificate, error) {
	if len(chain) == 0 {
		return tls.Certificate{}, fmt.Errorf("%s: the private key has no certificate", key)
	}
	type publicKeyer interface{ Public() crypto.PublicKey }
	signer, ok := priv.(publicKeyer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("%s: unsupported private key type %T", key, priv)
	}
	switch pub := signer.Public().(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		if !pub.(interface{ Equal(crypto.PublicKey) bool }).Equal(chain[0].PublicKey) {
			return tls.Certificate{}, fmt.Errorf("%s: the private key does not match the first certificate of the chain", key)
		}
	default:
		return tls.Certificate{}, fmt.Errorf("%s: unsupported private key type %T", key, priv)
	}
	cert := tls.Certificate{PrivateKey: priv, Leaf: chain[0]}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}
