package kafkatest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"software.sslmate.com/src/go-pkcs12"
)

// Each user of the secure broker, on each listener, can produce a record
// and read it back with a raw franz-go client: the broker side of the
// secure tests works, on Apache Kafka (kafka.sh) as on embedded kfake.
func TestSecureBrokerServesEachUserOnEachListener(t *testing.T) {
	s := NewSecure(t)
	t.Logf("external: %v; SASL_SSL %s, SASL_PLAINTEXT %s", s.External, s.SASLSSL, s.SASLPlaintext)
	for _, protocol := range []string{SASLSSL, SASLPlaintext} {
		for _, u := range s.Users {
			t.Run(protocol+"/"+u.Mechanism+"/"+u.Name, func(t *testing.T) {
				opts := s.ClientOpts(t, Client{Protocol: protocol, User: u})
				topic := Unique("secure-" + strings.ToLower(protocol))
				CreateTopic(t, opts, topic, 1, nil)
				Produce(t, NewClient(t, opts), &kgo.Record{Topic: topic, Value: []byte(u.Name)})
				var got []string
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				defer cancel()
				_, err := ConsumeTo(ctx, NewConsumer(t, opts, []string{topic}), map[int32]int64{0: 1}, func(r *kgo.Record) {
					got = append(got, string(r.Value))
				}, nil)
				if err != nil || len(got) != 1 || got[0] != u.Name {
					t.Fatalf("read back %q (%v), want [%q]", got, err, u.Name)
				}
			})
		}
	}
}

// A wrong password is refused on both listeners, and the error does not
// carry the password. Apache Kafka answers SASL_AUTHENTICATION_FAILED;
// kfake closes the connection instead (its SaslAuthenticate handler
// returns an error, which drops the connection), so the client sees EOF.
func TestSecureBrokerRefusesAWrongPassword(t *testing.T) {
	s := NewSecure(t)
	for _, protocol := range []string{SASLSSL, SASLPlaintext} {
		for _, mech := range []string{ScramSHA512, Plain} {
			u := s.User(t, mech, 0)
			u.Password = "not-" + u.Password
			err := ping(t, s.ClientOpts(t, Client{Protocol: protocol, User: u}))
			switch {
			case err == nil:
				t.Errorf("%s %s with a wrong password: connected", protocol, mech)
			case s.External && !errors.Is(err, kerr.SaslAuthenticationFailed):
				t.Errorf("%s %s with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", protocol, mech, err)
			case !s.External && !errors.Is(err, io.EOF):
				t.Errorf("%s %s with a wrong password on kfake: %v, want the connection closed (EOF)", protocol, mech, err)
			case strings.Contains(err.Error(), u.Password):
				t.Errorf("%s %s: the error carries the password: %v", protocol, mech, err)
			}
		}
	}
}

// The SASL_SSL listener presents a certificate that only the test CA
// vouches for: a client trusting the system's roots alone cannot connect,
// and one trusting the CA can (TestSecureBrokerServesEachUserOnEachListener).
func TestSecureBrokerPresentsTheTestCertificate(t *testing.T) {
	s := NewSecure(t)
	opts := s.ClientOpts(t, Client{Protocol: SASLPlaintext, User: s.User(t, ScramSHA512, 0)})
	opts[0] = kgo.SeedBrokers(strings.Split(s.SASLSSL, ",")...)
	opts = append(opts, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
	var unknownCA x509.UnknownAuthorityError
	if err := ping(t, opts); !errors.As(err, &unknownCA) {
		t.Fatalf("a client without the test CA: %v, want an unknown-authority error", err)
	}
}

func ping(t *testing.T, opts []kgo.Opt) error {
	t.Helper()
	cl := NewClient(t, opts, kgo.RetryTimeout(5*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// The stores GenerateTLS writes open with the known passwords, hold the
// CA and the key pairs, and refuse a wrong password; the server
// certificate verifies against the CA for every loopback name.
func TestGeneratedStoresOpen(t *testing.T) {
	f := NewTLS(t)
	caPEM, err := os.ReadFile(f.CAPEM)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}

	ts := loadJKS(t, f.TruststoreJKS, StorePassword)
	entry, err := ts.GetTrustedCertificateEntry("sluice-test-ca")
	if err != nil || !bytes.Equal(entry.Certificate.Content, ca.Raw) {
		t.Fatalf("JKS truststore: %v, or its certificate is not ca.pem's", err)
	}
	p12, _ := os.ReadFile(f.TruststorePKCS12)
	if certs, err := pkcs12.DecodeTrustStore(p12, StorePassword); err != nil || len(certs) != 1 || !certs[0].Equal(ca) {
		t.Fatalf("PKCS12 truststore: %v, %d certificates", err, len(certs))
	}
	if _, err := pkcs12.DecodeTrustStore(p12, "wrong"); err == nil {
		t.Fatal("the PKCS12 truststore opened with a wrong password")
	}

	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, kp := range []struct {
		name  string
		files KeyPairFiles
		usage x509.ExtKeyUsage
		hosts []string
	}{
		{"server", f.Server, x509.ExtKeyUsageServerAuth, []string{"127.0.0.1", "localhost", "::1"}},
		{"client", f.Client, x509.ExtKeyUsageClientAuth, []string{""}},
	} {
		pemPair, err := tls.LoadX509KeyPair(kp.files.KeystorePEM, kp.files.KeystorePEM)
		if err != nil {
			t.Fatalf("%s PEM keystore: %v", kp.name, err)
		}
		leaf, _ := x509.ParseCertificate(pemPair.Certificate[0])
		for _, host := range kp.hosts {
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{kp.usage}}); err != nil {
				t.Errorf("%s certificate for %q: %v", kp.name, host, err)
			}
		}

		ks := loadJKS(t, kp.files.KeystoreJKS, StorePassword)
		if _, err := ks.GetPrivateKeyEntry("sluice-test", []byte(StorePassword)); err == nil {
			t.Errorf("%s JKS key opened with the store password; it must need KeyPassword", kp.name)
		}
		pk, err := ks.GetPrivateKeyEntry("sluice-test", []byte(KeyPassword))
		if err != nil || len(pk.CertificateChain) != 2 || !bytes.Equal(pk.CertificateChain[0].Content, leaf.Raw) {
			t.Fatalf("%s JKS keystore: %v", kp.name, err)
		}

		p12, _ := os.ReadFile(kp.files.KeystorePKCS12)
		key, cert, chain, err := pkcs12.DecodeChain(p12, StorePassword)
		if err != nil || key == nil || !cert.Equal(leaf) || len(chain) != 1 || !chain[0].Equal(ca) {
			t.Fatalf("%s PKCS12 keystore: %v", kp.name, err)
		}
	}

	if err := keystore.New().Load(bytes.NewReader(mustRead(t, f.TruststoreJKS)), []byte("wrong")); err == nil {
		t.Fatal("the JKS truststore opened with a wrong password")
	}
	if g, err := LoadTLS(f.Dir); err != nil || *g != *f {
		t.Fatalf("LoadTLS of the directory: %+v, %v; want %+v", g, err, f)
	}
	if _, err := LoadTLS(t.TempDir()); err == nil {
		t.Fatal("LoadTLS of an empty directory succeeded")
	}
}

func loadJKS(t *testing.T, path, password string) keystore.KeyStore {
	t.Helper()
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(mustRead(t, path)), []byte(password)); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ks
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSASLUsers(t *testing.T) {
	got, err := ParseSASLUsers("SCRAM-SHA-512:a:pw:with:colons, PLAIN:b:x")
	want := []SASLUser{{ScramSHA512, "a", "pw:with:colons"}, {Plain, "b", "x"}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "SCRAM-SHA-512:a", "GSSAPI:a:secret-pw", "PLAIN::secret-pw", "PLAIN:a:"} {
		_, err := ParseSASLUsers(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), "secret-pw") {
			t.Errorf("%q: the error quotes the password: %v", bad, err)
		}
	}
}

// The client keys follow Kafka's rules: a PEM truststore has no password
// (Kafka refuses one), SASL_PLAINTEXT has no ssl.* key, and a worker's
// task clients get the keys with Connect's producer. and consumer.
// prefixes.
func TestClientPropsAreKafkasKeys(t *testing.T) {
	s := &Secure{SASLSSL: "127.0.0.1:1", SASLPlaintext: "127.0.0.1:2", TLS: tlsFilesIn("/tls"), Users: embeddedUsers}
	u := s.User(t, ScramSHA512, 0)
	pemProps := s.ClientProps(t, Client{Protocol: SASLSSL, User: u, Truststore: TruststorePEM})
	if _, ok := pemProps["ssl.truststore.password"]; ok || pemProps["ssl.truststore.location"] != "/tls/ca.pem" || pemProps["ssl.truststore.type"] != "PEM" {
		t.Errorf("PEM truststore keys: %v", pemProps)
	}
	for k := range s.ClientProps(t, Client{Protocol: SASLPlaintext, User: s.User(t, Plain, 0)}) {
		if strings.HasPrefix(k, "ssl.") {
			t.Errorf("SASL_PLAINTEXT has %s", k)
		}
	}
	w := s.WorkerProps(t, Client{Protocol: SASLSSL, User: u, Truststore: TruststoreJKS})
	for _, k := range []string{"", "producer.", "consumer."} {
		if w[k+"ssl.truststore.type"] != "JKS" || w[k+"sasl.jaas.config"] != `org.apache.kafka.common.security.scram.ScramLoginModule required username="sluice512" password="sluice512-secret";` {
			t.Errorf("worker keys with prefix %q missing: %v", k, w)
		}
	}
	if w["bootstrap.servers"] != "127.0.0.1:1" {
		t.Errorf("bootstrap.servers %q, want the SASL_SSL listener", w["bootstrap.servers"])
	}
}
