package clustertls

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/testutil"
)

var flagNames = Files{Cert: "--cert", Key: "--key", CA: "--ca"}

func load(t *testing.T, f Files) *Config {
	t.Helper()
	c, err := Load(f, flagNames)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// handshake runs a TLS handshake between a client and a server config
// over loopback TCP and returns each side's error.
func handshake(t *testing.T, client, server *tls.Config) (clientErr, serverErr error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		s := tls.Server(conn, server)
		err = s.Handshake()
		if err == nil {
			// TLS 1.3: the server learns of a refused client
			// certificate only when it reads.
			_, err = s.Read(make([]byte, 1))
		}
		done <- err
	}()
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	c := tls.Client(conn, client)
	if clientErr = c.Handshake(); clientErr == nil {
		_, _ = c.Write([]byte{1})
		// The client learns of its certificate refused when it reads.
		_, _ = c.Read(make([]byte, 1))
	}
	conn.Close()
	return clientErr, <-done
}

// With a CA, members it signed accept each other both ways, and a member
// signed by another CA, or a client with no certificate, is refused.
func TestMutualTLSWithACA(t *testing.T) {
	dir := t.TempDir()
	ca, other := testutil.NewCA(t, dir, "cluster"), testutil.NewCA(t, dir, "other")
	aCert, aKey := ca.Issue(t, dir, "a")
	bCert, bKey := ca.Issue(t, dir, "b")
	xCert, xKey := other.Issue(t, dir, "x")
	a := load(t, Files{Cert: aCert, Key: aKey, CA: ca.File})
	b := load(t, Files{Cert: bCert, Key: bKey, CA: ca.File})
	// x trusts the cluster's CA, but its own certificate is another CA's.
	x, err := New(mustPair(t, xCert, xKey), a.Server.ClientCAs)
	if err == nil {
		t.Fatalf("a member whose own certificate its CA does not admit started: %+v", x)
	}
	xOwn := load(t, Files{Cert: xCert, Key: xKey, CA: other.File})

	if ce, se := handshake(t, a.Client, b.Server); ce != nil || se != nil {
		t.Fatalf("a to b: client %v, server %v", ce, se)
	}
	if ce, se := handshake(t, b.Client, a.Server); ce != nil || se != nil {
		t.Fatalf("b to a: client %v, server %v", ce, se)
	}
	if _, se := handshake(t, xOwn.Client, a.Server); se == nil {
		t.Fatal("a accepted a client certificate of another CA")
	}
	if ce, _ := handshake(t, a.Client, xOwn.Server); ce == nil {
		t.Fatal("a trusted a server certificate of another CA")
	}
	anonymous := &tls.Config{InsecureSkipVerify: true}
	if _, se := handshake(t, anonymous, a.Server); se == nil {
		t.Fatal("a accepted a client without a certificate")
	}
}

// Without a CA, the certificate is its own trust anchor: members sharing
// one self-signed certificate accept each other, and one with another
// certificate is refused.
func TestSharedSelfSignedCertificate(t *testing.T) {
	dir := t.TempDir()
	cert, key := testutil.SelfSigned(t, dir, "shared")
	otherCert, otherKey := testutil.SelfSigned(t, dir, "stranger")
	a, b := load(t, Files{Cert: cert, Key: key}), load(t, Files{Cert: cert, Key: key})
	stranger := load(t, Files{Cert: otherCert, Key: otherKey})
	if ce, se := handshake(t, a.Client, b.Server); ce != nil || se != nil {
		t.Fatalf("shared certificate: client %v, server %v", ce, se)
	}
	if _, se := handshake(t, stranger.Client, a.Server); se == nil {
		t.Fatal("a member accepted another self-signed certificate")
	}
	if ce, _ := handshake(t, a.Client, stranger.Server); ce == nil {
		t.Fatal("a member trusted another self-signed certificate")
	}
}

func mustPair(t *testing.T, cert, key string) tls.Certificate {
	t.Helper()
	p, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Bad files are start-up errors that name the flag (or key) they came
// from.
func TestLoadErrorsNameTheSetting(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t, dir, "cluster")
	cert, key := ca.Issue(t, dir, "a")
	other := testutil.NewCA(t, dir, "other")
	for _, tc := range []struct {
		name  string
		files Files
		want  string
	}{
		{"cert without key", Files{Cert: cert}, "--key is required with --cert"},
		{"key without cert", Files{Key: key}, "--cert is required with --key"},
		{"CA alone", Files{CA: ca.File}, "--cert is required with --ca"},
		{"missing file", Files{Cert: dir + "/nope.pem", Key: key}, "--cert / --key"},
		{"key of another certificate", Files{Cert: ca.File, Key: key}, "--cert / --key"},
		{"CA file without PEM", Files{Cert: cert, Key: key, CA: key}, "--ca: "},
		{"missing CA file", Files{Cert: cert, Key: key, CA: dir + "/nope.pem"}, "--ca: "},
		{"certificate the CA did not sign", Files{Cert: cert, Key: key, CA: other.File}, "--cert: this member's own certificate would be refused"},
	} {
		_, err := Load(tc.files, flagNames)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
