package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkasec"
	"github.com/sluice-io/sluice/internal/schemaregistry"
	"github.com/sluice-io/sluice/internal/tlsconf/tlstest"
)

func TestSchemaRegistryHelpAndBadFlags(t *testing.T) {
	cleanEnv(t)
	code, stdout, stderr := cli(t, "schema-registry", "--help")
	text := stdout + stderr
	if code != 0 {
		t.Errorf("sluice schema-registry --help: exit %d, want 0", code)
	}
	for _, want := range []string{"sluice schema-registry", "SLUICE_", "-bootstrap", "-addr", "-topic", "_schemas", "schema.registry.url", "kafkastore.", "-users-file", "basic.auth.user.info"} {
		if !strings.Contains(text, want) {
			t.Errorf("sluice schema-registry --help does not mention %q:\n%s", want, text)
		}
	}
	if code, _, stderr := cli(t, "dev", "--help"); code != 0 || !strings.Contains(stderr, "-schema-registry-addr") {
		t.Errorf("sluice dev --help: exit %d, no --schema-registry-addr:\n%s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schema-registry"}, "--bootstrap is required"},
		{[]string{"schema-registry", "--bootstrap", "127.0.0.1:1", "--prop", "acks=all"}, "acks"},
		{[]string{"schema-registry", "--bootstrap", "127.0.0.1:1", "--prop", "kafkastore.security.protocol=CARRIER_PIGEON"}, "security.protocol"},
		{[]string{"schema-registry", "--bootstrap", "127.0.0.1:1", "--addr", "no-port"}, "no-port"},
		{[]string{"schema-registry", "--bootstrap", "127.0.0.1:1", "--timeout", "0s"}, "--timeout"},
		{[]string{"dev", "--schema-registry-addr", "nowhere"}, "nowhere"},
		{[]string{"schema-registry", "--bootstrap", "127.0.0.1:1", "--users-file", "/no/such/users.properties"}, "--users-file"},
		{[]string{"dev", "--schema-registry-users-file", "/no/such/users.properties"}, "--schema-registry-users-file"},
		{[]string{"dev", "--schema-registry-addr=off", "--schema-registry-users-file", "u.properties"}, "--schema-registry-addr=off"},
	} {
		code, _, stderr := cli(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("sluice %s: exit %d, stderr %q; want 2 naming %s", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

func TestKafkastoreSecurityKeys(t *testing.T) {
	got, err := kafkastoreSecurity(map[string]string{"kafkastore.security.protocol": "SSL", "ssl.truststore.type": "PEM"})
	if err != nil || got["security.protocol"] != "SSL" || got["ssl.truststore.type"] != "PEM" || len(got) != 2 {
		t.Fatalf("kafkastoreSecurity = %v, %v", got, err)
	}
	if _, err := kafkastoreSecurity(map[string]string{"kafkastore.topic": "x", "linger.ms": "5"}); err == nil ||
		!strings.Contains(err.Error(), "kafkastore.topic") || !strings.Contains(err.Error(), "linger.ms") {
		t.Fatalf("non-security keys: %v, want both named", err)
	}
}

// sluice dev's registry reaches a broker started with --sasl-user and
// --tls-cert with the keys dev gives its worker, transactions included.
func TestDevRegistryReachesTheSecuredBroker(t *testing.T) {
	cleanEnv(t)
	p := tlstest.New(t)
	cert := tlstest.WriteFile(t, "broker.pem", []byte(tlstest.CertPEM(p.ServerCert, p.CA)))
	key := tlstest.WriteFile(t, "broker-key.pem", []byte(tlstest.KeyPEM(t, p.ServerKey)))
	sec, err := parseBrokerSecurity(t, "--sasl-user", "connect:connect-secret", "--tls-cert", cert, "--tls-key", key)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := sec.kfakeOpts()
	if err != nil {
		t.Fatal(err)
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	props := map[string]string{}
	sec.workerProps(props)
	secOpts, err := kafkasec.Options(props)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := startSchemaRegistry(context.Background(), "127.0.0.1:0", nil, schemaregistry.Config{
		Kafka: append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, secOpts...), Timeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatalf("the registry does not reach the secured broker: %v", err)
	}
	defer reg.Close()
	resp, err := http.Post(reg.URL()+"/subjects/s/versions", schemaregistry.ContentType, strings.NewReader(`{"schema":"\"int\""}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != `{"id":1}` {
		t.Fatalf("register through the secured broker: %d %s", resp.StatusCode, b)
	}
}

// A registry port already taken stops sluice dev before anything else
// listens, and the error says how to move the registry or leave it out.
func TestDevRegistryPortTaken(t *testing.T) {
	cleanEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	code, _, stderr := cli(t, "dev", "--data-dir", t.TempDir(), "--kafka-addr", free(), "--rest-addr", free(), "--bind", free(),
		"--schema-registry-addr", ln.Addr().String())
	if code != 1 || !strings.Contains(stderr, ln.Addr().String()) || !strings.Contains(stderr, "--schema-registry-addr") {
		t.Fatalf("exit %d, stderr %q; want 1 naming the address and --schema-registry-addr", code, stderr)
	}
}
