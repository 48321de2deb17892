package main

import (
	"strings"
	"testing"
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
