package main

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkasec"
	"github.com/sluice-io/sluice/internal/tlsconf/tlstest"
)

func parseBrokerSecurity(t *testing.T, args ...string) (*brokerSecurityFlags, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var sec brokerSecurityFlags
	sec.register(fs)
	err := parseFlags(fs, args)
	return &sec, err
}

// The broker that --sasl-user and --tls-cert/--tls-key make requires SASL
// and TLS, and the keys sluice dev gives its own worker reach it, over
// each mechanism the user is created for.
func TestDevWorkerKeysReachTheSecuredBroker(t *testing.T) {
	cleanEnv(t)
	p := tlstest.New(t)
	cert := tlstest.WriteFile(t, "broker.pem", []byte(tlstest.CertPEM(p.ServerCert, p.CA)))
	key := tlstest.WriteFile(t, "broker-key.pem", []byte(tlstest.KeyPEM(t, p.ServerKey)))
	sec, err := parseBrokerSecurity(t, "--sasl-user", `connect:pa"ss\word`, "--sasl-user", "other:x", "--tls-cert", cert, "--tls-key", key)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := sec.kfakeOpts()
	if err != nil {
		t.Fatal(err)
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// The broker's certificate is for localhost and 127.0.0.1, and
	// --tls-cert (leaf and CA) serves as the truststore.
	props := map[string]string{}
	sec.workerProps(props)
	if props["security.protocol"] != "SASL_SSL" {
		t.Fatalf("dev's worker keys: %v", props)
	}
	ping := func(props map[string]string) error {
		kopts, err := kafkasec.Options(props)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(append(kopts, kgo.SeedBrokers(c.ListenAddrs()...), kgo.RequestRetries(0))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	if err := ping(props); err != nil {
		t.Fatalf("sluice dev's worker keys do not reach its broker: %v", err)
	}
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256"} {
		other := map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": mech,
			"ssl.truststore.type": "PEM", "ssl.truststore.location": cert,
			"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="other" password="x";`}
		if err := ping(other); err != nil {
			t.Errorf("the second --sasl-user over %s: %v", mech, err)
		}
	}
	// Without credentials the broker refuses the client.
	if err := ping(map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": cert}); err == nil {
		t.Error("a client without SASL reached a broker started with --sasl-user")
	}

	// A key given with --prop wins over dev's default.
	own := map[string]string{"sasl.mechanism": "PLAIN"}
	sec.workerProps(own)
	if own["sasl.mechanism"] != "PLAIN" || own["security.protocol"] != "SASL_SSL" {
		t.Errorf("--prop sasl.mechanism=PLAIN was not kept: %v", own)
	}
}

func TestBrokerSecurityFlagErrorsHideThePassword(t *testing.T) {
	cleanEnv(t)
	for _, bad := range [][]string{{"--sasl-user", "JustASecretWithoutColon"}, {"--sasl-user", ":JustASecret"}} {
		sec, err := parseBrokerSecurity(t, bad...)
		if err == nil {
			_, err = sec.kfakeOpts()
		}
		if err == nil || !strings.Contains(err.Error(), "--sasl-user") || strings.Contains(err.Error(), "JustASecret") {
			t.Errorf("%v: %v, want an error naming --sasl-user without the value", bad, err)
		}
	}
	t.Setenv("SLUICE_SASL_USER", "AnotherSecretWithoutColon")
	sec, err := parseBrokerSecurity(t)
	if err == nil {
		_, err = sec.kfakeOpts()
	}
	if err == nil || !strings.Contains(err.Error(), "SLUICE_SASL_USER") || strings.Contains(err.Error(), "AnotherSecret") {
		t.Errorf("SLUICE_SASL_USER without a colon: %v", err)
	}
	t.Setenv("SLUICE_SASL_USER", "a:1\nb:2")
	sec, err = parseBrokerSecurity(t)
	if err != nil || len(sec.users.users) != 2 {
		t.Errorf("SLUICE_SASL_USER with two lines: %v, %d users", err, len(sec.users.users))
	}
	cleanEnv(t)
	sec, _ = parseBrokerSecurity(t, "--tls-cert", "x.pem")
	if _, err := sec.kfakeOpts(); err == nil || !strings.Contains(err.Error(), "--tls-key") {
		t.Errorf("--tls-cert without --tls-key: %v", err)
	}
}
