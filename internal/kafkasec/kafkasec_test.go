package kafkasec

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/tlsconf/tlstest"
)

const scramJAAS = `org.apache.kafka.common.security.scram.ScramLoginModule required username="connect" password="%s";`

// secureCluster is a kfake broker that requires TLS and SASL with a
// SCRAM-SHA-512 user connect/connect-secret.
func secureCluster(t *testing.T) (seeds []string, trustPEM string) {
	p := tlstest.New(t)
	c, _ := kafkatest.NewCluster(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "connect", "connect-secret"), kfake.TLS(p.ServerTLS()))
	return c.ListenAddrs(), tlstest.WriteFile(t, "ca.pem", []byte(tlstest.CertPEM(p.CA)))
}

// ping makes a client with the security options of props and returns the
// error of one metadata request, seen through AuthFailure when it is one.
func ping(t *testing.T, seeds []string, props map[string]string) error {
	t.Helper()
	s, err := Load(props)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	cl, err := kgo.NewClient(append(s.Options(), kgo.SeedBrokers(seeds...), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = cl.Ping(ctx)
	if authErr := s.AuthFailure(err); authErr != nil {
		return authErr
	}
	return err
}

func isAuthFailure(err error) bool {
	var authErr *AuthError
	return errors.As(err, &authErr)
}

func saslSSL(trust, password string) map[string]string {
	return map[string]string{
		"security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512",
		"sasl.jaas.config":    strings.Replace(scramJAAS, "%s", password, 1),
		"ssl.truststore.type": "PEM", "ssl.truststore.location": trust,
	}
}

func TestSASLSSLAgainstTheEmbeddedBroker(t *testing.T) {
	seeds, trust := secureCluster(t)
	if err := ping(t, seeds, saslSSL(trust, "connect-secret")); err != nil {
		t.Fatalf("SASL_SSL with the right password: %v", err)
	}

	err := ping(t, seeds, saslSSL(trust, "Wrong-Password-42"))
	if err == nil {
		t.Fatal("SASL_SSL with a wrong password succeeded")
	}
	if !isAuthFailure(err) || !strings.Contains(err.Error(), `SCRAM-SHA-512 as user "connect"`) {
		t.Errorf("a wrong password gave %v, want an AuthError naming mechanism and user", err)
	}
	if strings.Contains(err.Error(), "Wrong-Password-42") {
		t.Errorf("the error shows the password: %v", err)
	}

	// A truststore without the broker's CA fails the handshake.
	other := tlstest.New(t)
	props := saslSSL(tlstest.WriteFile(t, "other.pem", []byte(tlstest.CertPEM(other.CA))), "connect-secret")
	if err := ping(t, seeds, props); !isAuthFailure(err) || !IsAuthError(errors.Unwrap(err)) {
		t.Errorf("an untrusted broker certificate gave %v, want an AuthError", err)
	}
	// A broker that is not there is not an authentication failure.
	if err := ping(t, []string{"127.0.0.1:1"}, saslSSL(trust, "connect-secret")); err == nil || isAuthFailure(err) {
		t.Errorf("an unreachable broker gave %v, want an error that is not an AuthError", err)
	}
}

func TestOptionsRefuseBadKeysByName(t *testing.T) {
	cases := []struct {
		props map[string]string
		key   string
	}{
		{map[string]string{"security.protocol": "TLS"}, "security.protocol"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT"}, "sasl.jaas.config"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}, "sasl.mechanism"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "plain"}, "sasl.mechanism"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": "x.Y required"}, "sasl.jaas.config"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;"}, "sasl.jaas.config"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + ` required username="u" password="Pw-Secret-1" serviceName="kafka";`}, "sasl.jaas.config"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + ` required password="Pw-Secret-1";`}, "sasl.jaas.config"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + ` required username="u" password="Pw-Secret-1"; ` + plainLoginModule + ` required username="v" password="w";`}, "sasl.jaas.config"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + ` required username="u" password="Pw-Secret-1";`, "sasl.client.callback.handler.class": "com.example.Handler"}, "sasl.client.callback.handler.class"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + ` required username="u" password="Pw-Secret-1";`, "sasl.kerberos.service.name": "kafka"}, "sasl.kerberos.service.name"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + ` required username="u" password="Pw-Secret-1";`, "sasl.login.callback.handler.class": "com.example.Login"}, "sasl.login.callback.handler.class"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + ` required username="u" password="Pw-Secret-1";`, "sasl.oauthbearer.token.endpoint.url": "https://idp/token"}, "sasl.oauthbearer.token.endpoint.url"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + ` required username="u" password="Pw-Secret-1";`, "sasl.unheard.of": "x"}, "sasl.unheard.of"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + ` required username="u" password="Pw-Secret-1";`, "sasl.login.refresh.window.factor": "0.9"}, "sasl.login.refresh.window.factor"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": scramLoginModule + ` required username="u" password="Pw-Secret-1" tokenauth=true;`}, "sasl.jaas.config"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/nonexistent/ca.pem"}, "ssl.truststore.location"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": oauthLoginModule + ` required clientId="c" clientSecret="Pw-Secret-1";`}, "sasl.oauthbearer.token.endpoint.url"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": oauthLoginModule + ` required unsecuredLoginStringClaim_sub="me";`, "sasl.oauthbearer.token.endpoint.url": "https://idp/token"}, "unsecuredLoginStringClaim_sub"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": oauthLoginModule + ` required clientSecret="Pw-Secret-1";`, "sasl.oauthbearer.token.endpoint.url": "https://idp/token"}, "clientId"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": oauthLoginModule + ` required clientId="c" clientSecret="Pw-Secret-1";`, "sasl.oauthbearer.token.endpoint.url": "file:///tmp/token"}, "sasl.oauthbearer.token.endpoint.url"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": oauthLoginModule + ` required clientId="c" clientSecret="Pw-Secret-1";`, "sasl.oauthbearer.token.endpoint.url": "https://idp/token", "sasl.login.refresh.window.factor": "2"}, "sasl.login.refresh.window.factor"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": oauthLoginModule + ` required clientId="c" clientSecret="Pw-Secret-1";`, "sasl.oauthbearer.token.endpoint.url": "https://idp/token", "sasl.login.callback.handler.class": "com.example.Login"}, "sasl.login.callback.handler.class"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": oauthLoginModule + ` required clientId="c" clientSecret="Pw-Secret-1";`, "sasl.oauthbearer.token.endpoint.url": "https://idp/token", "sasl.oauthbearer.jwks.endpoint.url": "https://idp/jwks"}, "sasl.oauthbearer.jwks.endpoint.url"},
	}
	for _, c := range cases {
		_, err := Options(c.props)
		if err == nil {
			t.Errorf("%v: accepted", c.props)
			continue
		}
		if !strings.Contains(err.Error(), c.key) {
			t.Errorf("%v: error %q does not name %s", c.props, err, c.key)
		}
		if strings.Contains(err.Error(), "Pw-Secret-1") {
			t.Errorf("%v: error %q shows a password", c.props, err)
		}
	}
}

func TestKeysTheProtocolDoesNotUseAreNotRead(t *testing.T) {
	// A worker's ssl.* keys may be its HTTPS listener's; a PLAINTEXT
	// client leaves them, and unused sasl.* keys, alone, as Kafka does.
	opts, err := Options(map[string]string{
		"security.protocol": "PLAINTEXT", "ssl.keystore.location": "/for/the/rest/listener.jks",
		"sasl.jaas.config": "not even parsed",
	})
	if err != nil || len(opts) != 0 {
		t.Fatalf("PLAINTEXT with unused keys: %d options, %v", len(opts), err)
	}
	opts, err = Options(map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + ` required username="u" password="p";`})
	if err != nil || len(opts) != 1 {
		t.Fatalf("SASL_PLAINTEXT: %d options, %v; want the SASL option only", len(opts), err)
	}
	opts, err = Options(map[string]string{"security.protocol": "SSL"})
	if err != nil || len(opts) != 1 {
		t.Fatalf("SSL: %d options, %v; want the TLS option only", len(opts), err)
	}
}

func TestPlainAndSCRAMSHA256AgainstTheEmbeddedBroker(t *testing.T) {
	c, _ := kafkatest.NewCluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "p-user", "p-pass"), kfake.Superuser("SCRAM-SHA-256", "s-user", "s-pass"))
	for _, props := range []map[string]string{
		{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + " required username=p-user password=p-pass;"},
		{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": scramLoginModule + " required username=s-user password=s-pass;"},
	} {
		if err := ping(t, c.ListenAddrs(), props); err != nil {
			t.Errorf("%s: %v", props["sasl.mechanism"], err)
		}
	}
	err := ping(t, c.ListenAddrs(), map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": plainLoginModule + " required username=p-user password=nope;"})
	if !isAuthFailure(err) {
		t.Errorf("PLAIN with a wrong password gave %v, want an AuthError", err)
	}
}
