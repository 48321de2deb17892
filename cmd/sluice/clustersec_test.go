package main

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/internal/testutil"
	"github.com/sluice-io/sluice/internal/worker"
)

func b64(b byte, n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n)) }

// The gossip key: the flag (repeatable, comma-separated) wins over the
// worker key; SLUICE_GOSSIP_KEY sets it too; a bad one is an error that
// names where it came from and never shows it.
func TestGossipKeySettings(t *testing.T) {
	base := []string{"--cluster", "c", "--bootstrap", "k:9092"}
	k1, k2, k3 := b64(1, 32), b64(2, 16), b64(3, 24)

	cfg, err := resolvedWorker(t, append(base, "--gossip-key", k1+","+k2, "--gossip-key", k3, "--prop", worker.KeyGossipKey+"="+b64(9, 32))...)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.GossipKeys) != 3 || cfg.GossipKeys[0][0] != 1 || cfg.GossipKeys[2][0] != 3 {
		t.Fatalf("flag keys: %v", cfg.GossipKeys)
	}
	cfg, err = resolvedWorker(t, append(base, "--prop", worker.KeyGossipKey+"="+k2)...)
	if err != nil || len(cfg.GossipKeys) != 1 || cfg.GossipKeys[0][0] != 2 {
		t.Fatalf("worker key: %v %v", cfg.GossipKeys, err)
	}
	// A list in --prop: base64 ends in "=", yet the pieces stay one value;
	// a key=value after them is its own.
	cfg, err = resolvedWorker(t, append(base, "--prop", worker.KeyGossipKey+"="+k1+","+k2+" "+k3+",group.id=g")...)
	if err != nil || len(cfg.GossipKeys) != 3 || cfg.GossipKeys[1][0] != 2 || cfg.GossipKeys[2][0] != 3 || cfg.Props["group.id"] != "g" {
		t.Fatalf("worker key list in --prop: %d keys, group.id %q, %v", len(cfg.GossipKeys), cfg.Props["group.id"], err)
	}
	cfg, err = resolvedWorker(t, "--cluster", "c", "--prop", "bootstrap.servers=a:9092,b:9092")
	if err != nil || strings.Join(cfg.Bootstrap, " ") != "a:9092 b:9092" {
		t.Fatalf("a list value in --prop: %v %v", cfg.Bootstrap, err)
	}

	secret := "c2VjcmV0LWJ1dC1zaG9ydCE=" // base64, 17 bytes: a wrong length
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gossip-key", secret}, "--gossip-key (or SLUICE_GOSSIP_KEY): key 1 is 17 bytes"},
		{[]string{"--gossip-key", k1 + ",not base64 " + secret}, "--gossip-key (or SLUICE_GOSSIP_KEY): key 2 is not base64"},
		{[]string{"--prop", worker.KeyGossipKey + "=" + secret}, worker.KeyGossipKey + ": key 1 is 17 bytes"},
	} {
		_, err := resolvedWorker(t, append(base, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%v: the error shows the key: %v", tc.args, err)
		}
	}
	t.Setenv("SLUICE_GOSSIP_KEY", k3)
	cfg, err = resolvedWorker(t, base...)
	if err != nil || len(cfg.GossipKeys) != 1 || cfg.GossipKeys[0][0] != 3 {
		t.Fatalf("SLUICE_GOSSIP_KEY: %v %v", cfg.GossipKeys, err)
	}
}

// The cluster TLS files: each flag wins over its worker key, the others
// still come from the keys, and an error names the flag or key of the
// file at fault.
func TestClusterTLSSettings(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t, dir, "cluster")
	cert, key := ca.Issue(t, dir, "w1")
	base := []string{"--cluster", "c", "--bootstrap", "k:9092"}
	props := func(cert, key, ca string) []string {
		return []string{"--prop", worker.KeyClusterTLSCert + "=" + cert, "--prop", worker.KeyClusterTLSKey + "=" + key, "--prop", worker.KeyClusterTLSCA + "=" + ca}
	}

	cfg, err := resolvedWorker(t, append(base, props(cert, key, ca.File)...)...)
	if err != nil || cfg.ClusterTLS == nil || cfg.ClusterTLS.Server.ClientCAs == nil {
		t.Fatalf("from worker keys: %+v %v", cfg.ClusterTLS, err)
	}
	// The flag's CA replaces the key's unreadable one; cert and key come
	// from the keys.
	cfg, err = resolvedWorker(t, append(append(base, props(cert, key, dir+"/missing.pem")...), "--cluster-tls-ca", ca.File)...)
	if err != nil || cfg.ClusterTLS == nil {
		t.Fatalf("flag over key: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster-tls-cert", cert}, "--cluster-tls-key is required with --cluster-tls-cert"},
		{append(props(cert, key, dir+"/missing.pem"), "--cluster-tls-cert", cert), worker.KeyClusterTLSCA + ": "},
		{props(cert, key, dir+"/missing.pem"), worker.KeyClusterTLSCA + ": "},
		{[]string{"--cluster-tls-cert", cert, "--cluster-tls-key", key, "--cluster-tls-ca", testutil.NewCA(t, dir, "other").File}, "--cluster-tls-cert: this member's own certificate would be refused"},
	} {
		_, err := resolvedWorker(t, append(base, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
