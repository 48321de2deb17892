package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/tlsconf/tlstest"
)

// handshake serves one TLS connection with serverCfg on 127.0.0.1 and
// dials it with clientCfg; it returns the client's error, or the server's
// when the client saw none.
func handshake(t *testing.T, serverCfg, clientCfg *tls.Config, dialHost string) error {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", serverCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serverErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer c.Close()
		err = c.(*tls.Conn).Handshake()
		if err == nil {
			_, err = c.Write([]byte("ok"))
		}
		serverErr <- err
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(dialHost, port), clientCfg)
	if err != nil {
		<-serverErr
		return err
	}
	defer conn.Close()
	buf := make([]byte, 2)
	if _, err := io.ReadFull(conn, buf); err != nil {
		return errors.Join(err, <-serverErr)
	}
	return <-serverErr
}

func mustLoad(t *testing.T, props map[string]string) *Material {
	t.Helper()
	m, err := Load(props)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return m
}

func serverProps(t *testing.T, p *tlstest.PKI) map[string]string {
	return map[string]string{
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.key":               tlstest.KeyPEM(t, p.ServerKey),
		"ssl.keystore.certificate.chain": tlstest.CertPEM(p.ServerCert, p.CA),
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.certificates":    tlstest.CertPEM(p.CA),
	}
}

func TestHandshakeWithEachStoreType(t *testing.T) {
	p := tlstest.New(t)
	server, err := mustLoad(t, serverProps(t, p)).Server("required")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string]string{
		"JKS": {
			"ssl.truststore.location": tlstest.JKSTrustStore(t, "trustpass", p.CA),
			"ssl.truststore.password": "trustpass",
			"ssl.keystore.location":   tlstest.JKSKeyStore(t, "storepass", "keypass", p.ClientKey, p.ClientCert, p.CA),
			"ssl.keystore.password":   "storepass",
			"ssl.key.password":        "keypass",
		},
		"PKCS12": {
			"ssl.truststore.type":     "pkcs12",
			"ssl.truststore.location": tlstest.PKCS12TrustStore(t, "trustpass", p.CA),
			"ssl.truststore.password": "trustpass",
			"ssl.keystore.type":       "PKCS12",
			"ssl.keystore.location":   tlstest.PKCS12KeyStore(t, "storepass", p.ClientKey, p.ClientCert, p.CA),
			"ssl.keystore.password":   "storepass",
		},
		"PEM files": {
			"ssl.truststore.type":     "PEM",
			"ssl.truststore.location": tlstest.WriteFile(t, "ca.pem", []byte(tlstest.CertPEM(p.CA))),
			"ssl.keystore.type":       "PEM",
			"ssl.keystore.location":   tlstest.WriteFile(t, "client.pem", []byte(tlstest.KeyPEM(t, p.ClientKey)+tlstest.CertPEM(p.ClientCert))),
		},
		"PEM inline": {
			"ssl.truststore.type":            "PEM",
			"ssl.truststore.certificates":    tlstest.CertPEM(p.CA),
			"ssl.keystore.type":              "PEM",
			"ssl.keystore.key":               tlstest.KeyPEM(t, p.ClientKey),
			"ssl.keystore.certificate.chain": tlstest.CertPEM(p.ClientCert),
		},
	}
	for name, props := range cases {
		t.Run(name, func(t *testing.T) {
			m := mustLoad(t, props)
			if err := handshake(t, server, m.Client("localhost"), "127.0.0.1"); err != nil {
				t.Fatalf("handshake: %v", err)
			}
		})
	}
}

func TestRequiredClientAuthRefusesClientWithoutCertificate(t *testing.T) {
	p := tlstest.New(t)
	m := mustLoad(t, serverProps(t, p))
	server, err := m.Server("required")
	if err != nil {
		t.Fatal(err)
	}
	client := mustLoad(t, map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": tlstest.CertPEM(p.CA)})
	if err := handshake(t, server, client.Client("localhost"), "127.0.0.1"); err == nil {
		t.Fatal("a client without a certificate completed a handshake with ssl.client.auth=required")
	}
	requested, _ := m.Server("requested")
	if err := handshake(t, requested, client.Client("localhost"), "127.0.0.1"); err != nil {
		t.Fatalf("ssl.client.auth=requested refused a client without certificate: %v", err)
	}
}

func TestHostnameIdentification(t *testing.T) {
	p := tlstest.New(t)
	server, _ := mustLoad(t, serverProps(t, p)).Server("none")
	trust := map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": tlstest.CertPEM(p.CA)}

	// The certificate names localhost and 127.0.0.1, not this name.
	err := handshake(t, server, mustLoad(t, trust).Client("broker.example"), "127.0.0.1")
	var hostErr x509.HostnameError
	if !errors.As(err, &hostErr) {
		t.Fatalf("with identification https, a name mismatch gave %v, want a HostnameError", err)
	}

	trust["ssl.endpoint.identification.algorithm"] = ""
	if err := handshake(t, server, mustLoad(t, trust).Client("broker.example"), "127.0.0.1"); err != nil {
		t.Fatalf("with identification off, a name mismatch still failed: %v", err)
	}

	// Identification off still verifies the chain: another CA is refused.
	other := tlstest.New(t)
	untrusting := map[string]string{
		"ssl.truststore.type": "PEM", "ssl.truststore.certificates": tlstest.CertPEM(other.CA),
		"ssl.endpoint.identification.algorithm": "",
	}
	err = handshake(t, server, mustLoad(t, untrusting).Client("localhost"), "127.0.0.1")
	var unknownAuthority x509.UnknownAuthorityError
	if !errors.As(err, &unknownAuthority) {
		t.Fatalf("with identification off, an untrusted chain gave %v, want UnknownAuthorityError", err)
	}
}

func TestWrongPasswordsNameTheKeyAndHideThePassword(t *testing.T) {
	p := tlstest.New(t)
	jksTrust := tlstest.JKSTrustStore(t, "right-trust", p.CA)
	jksKeys := tlstest.JKSKeyStore(t, "right-store", "right-key", p.ClientKey, p.ClientCert)
	p12Trust := tlstest.PKCS12TrustStore(t, "right-trust", p.CA)
	p12Keys := tlstest.PKCS12KeyStore(t, "right-store", p.ClientKey, p.ClientCert)
	cases := []struct {
		name    string
		props   map[string]string
		wantKey string
	}{
		{"JKS truststore", map[string]string{"ssl.truststore.location": jksTrust, "ssl.truststore.password": "Wrong-Secret-1"}, "ssl.truststore.password"},
		{"JKS keystore", map[string]string{"ssl.keystore.location": jksKeys, "ssl.keystore.password": "Wrong-Secret-1", "ssl.key.password": "right-key"}, "ssl.keystore.password"},
		{"JKS key", map[string]string{"ssl.keystore.location": jksKeys, "ssl.keystore.password": "right-store", "ssl.key.password": "Wrong-Secret-1"}, "ssl.key.password"},
		{"JKS key defaulting to store password", map[string]string{"ssl.keystore.location": jksKeys, "ssl.keystore.password": "right-store"}, "ssl.key.password"},
		{"PKCS12 truststore", map[string]string{"ssl.truststore.type": "PKCS12", "ssl.truststore.location": p12Trust, "ssl.truststore.password": "Wrong-Secret-1"}, "ssl.truststore.password"},
		{"PKCS12 keystore", map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p12Keys, "ssl.keystore.password": "Wrong-Secret-1"}, "ssl.keystore.password"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.props)
			if err == nil {
				t.Fatal("Load accepted a wrong password")
			}
			if !strings.HasPrefix(err.Error(), c.wantKey+":") {
				t.Errorf("error %q does not start with the key %s", err, c.wantKey)
			}
			for _, secret := range []string{"Wrong-Secret-1", "right-trust", "right-store", "right-key"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q contains a password", err)
				}
			}
		})
	}
}

func TestJKSTrustStoreWithoutPasswordSkipsIntegrityCheck(t *testing.T) {
	p := tlstest.New(t)
	m := mustLoad(t, map[string]string{"ssl.truststore.location": tlstest.JKSTrustStore(t, "whatever", p.CA)})
	server, _ := mustLoad(t, serverProps(t, p)).Server("none")
	if err := handshake(t, server, m.Client("localhost"), "127.0.0.1"); err != nil {
		t.Fatalf("handshake with a JKS truststore read without its password: %v", err)
	}
}

func TestProtocolsAndCipherSuites(t *testing.T) {
	cases := []struct {
		props    map[string]string
		min, max uint16
		suites   int
	}{
		{map[string]string{}, tls.VersionTLS12, tls.VersionTLS13, 0},
		{map[string]string{"ssl.enabled.protocols": "TLSv1.3"}, tls.VersionTLS13, tls.VersionTLS13, 0},
		{map[string]string{"ssl.protocol": "TLSv1.2"}, tls.VersionTLS12, tls.VersionTLS12, 0},
		{map[string]string{"ssl.protocol": "TLS", "ssl.enabled.protocols": "TLSv1.1, TLSv1.2"}, tls.VersionTLS11, tls.VersionTLS12, 0},
		{map[string]string{"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}, tls.VersionTLS12, tls.VersionTLS12, 2},
		{map[string]string{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256"}, tls.VersionTLS13, tls.VersionTLS13, 0},
	}
	for _, c := range cases {
		m := mustLoad(t, c.props)
		if m.MinVersion != c.min || m.MaxVersion != c.max || len(m.CipherSuites) != c.suites {
			t.Errorf("%v: got versions %x..%x with %d suites, want %x..%x with %d", c.props, m.MinVersion, m.MaxVersion, len(m.CipherSuites), c.min, c.max, c.suites)
		}
	}
}

func TestBadValuesNameTheKey(t *testing.T) {
	cases := map[string]map[string]string{
		"ssl.enabled.protocols":                 {"ssl.enabled.protocols": "SSLv3"},
		"ssl.enabled.protocols ":                {"ssl.enabled.protocols": "TLSv1.1,TLSv1.3"},
		"ssl.protocol":                          {"ssl.protocol": "SSL"},
		"ssl.cipher.suites":                     {"ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_NOTHING"},
		"ssl.cipher.suites ":                    {"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"},
		"ssl.endpoint.identification.algorithm": {"ssl.endpoint.identification.algorithm": "ldap"},
		"ssl.client.auth":                       {"ssl.client.auth": "sometimes"},
		"ssl.keystore.type":                     {"ssl.keystore.type": "JCEKS"},
		"ssl.truststore.type":                   {"ssl.truststore.type": "BCFKS"},
		"ssl.keymanager.algorithm":              {"ssl.keymanager.algorithm": "PKIX"},
		"ssl.trustmanager.algorithm":            {"ssl.trustmanager.algorithm": "SunX509"},
		"ssl.provider":                          {"ssl.provider": "BC"},
		"ssl.secure.random.implementation":      {"ssl.secure.random.implementation": "SHA1PRNG"},
		"ssl.engine.factory.class":              {"ssl.engine.factory.class": "com.example.Factory"},
		"ssl.unheard.of":                        {"ssl.unheard.of": "1"},
		"ssl.truststore.location":               {"ssl.truststore.location": "/nonexistent/trust.jks"},
		"ssl.truststore.certificates":           {"ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----"},
		"ssl.truststore.password":               {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": "x", "ssl.truststore.password": "Secret-p"},
		"ssl.keystore.key":                      {"ssl.keystore.type": "PEM", "ssl.keystore.key": "not pem", "ssl.keystore.certificate.chain": "not pem"},
		"ssl.keystore.certificate.chain":        {"ssl.keystore.type": "PEM", "ssl.keystore.key": "not pem"},
		"ssl.keystore.password":                 {"ssl.keystore.password": "set-alone"},
	}
	for key, props := range cases {
		key = strings.TrimSpace(key)
		_, err := Load(props)
		if err == nil {
			t.Errorf("%v: accepted", props)
			continue
		}
		if !strings.Contains(err.Error(), key) {
			t.Errorf("%v: error %q does not name %s", props, err, key)
		}
		for k, v := range props {
			if strings.Contains(k, "password") && strings.Contains(err.Error(), v) {
				t.Errorf("%v: error %q shows a password", props, err)
			}
		}
	}
	// Java's defaults for the machinery keys are accepted.
	mustLoad(t, map[string]string{"ssl.keymanager.algorithm": "SunX509", "ssl.trustmanager.algorithm": "PKIX", "ssl.provider": ""})
}

func TestEncryptedPEMKeyIsRefusedClearly(t *testing.T) {
	p := tlstest.New(t)
	props := serverProps(t, p)
	props["ssl.keystore.key"] = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
	props["ssl.key.password"] = "Key-Secret-9"
	_, err := Load(props)
	if err == nil || !strings.Contains(err.Error(), "ssl.keystore.key") || !strings.Contains(err.Error(), "encrypted") {
		t.Fatalf("encrypted PEM key: got %v, want a refusal naming ssl.keystore.key", err)
	}
	if strings.Contains(err.Error(), "Key-Secret-9") {
		t.Fatalf("error %q shows the key password", err)
	}
}

func TestServerWithoutKeystoreIsRefused(t *testing.T) {
	if _, err := mustLoad(t, map[string]string{}).Server("none"); err == nil || !strings.Contains(err.Error(), "ssl.keystore.location") {
		t.Fatalf("Server without keystore: got %v", err)
	}
}
