package gossip

import (
	"bytes"
	"compress/lzw"
	"encoding/base64"
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/testutil"
)

func key(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

// startKeyed starts worker id of cluster "k" with the given gossip keys,
// logging into log (if not nil); the caller makes it leave.
func startKeyed(t *testing.T, id string, keys [][]byte, log *testutil.LogBuffer, join ...string) *Gossip {
	t.Helper()
	l := zerolog.Nop()
	if log != nil {
		l = zerolog.New(log)
	}
	g, err := Start(Config{Cluster: "k", Meta: Meta{WorkerID: id, URL: "http://" + id}, Bind: "127.0.0.1:0",
		Join: join, Keys: keys, Log: l})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// staysAlone requires g to see only itself for a while: a peer that
// cannot join is retried by memberlist, so a moment is not enough.
func staysAlone(t *testing.T, g *Gossip, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if n := len(g.Alive()); n != 1 {
			t.Fatalf("%s sees %d members, want only itself: %v", g.cfg.Meta.WorkerID, n, g.Alive())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Workers with the same key form a cluster; one with another key, or
// with none, never joins it, and the logs say why.
func TestWrongGossipKeyCannotJoin(t *testing.T) {
	good := [][]byte{key(1, 32)}
	var aLog, strangerLog, plainLog testutil.LogBuffer
	a := startKeyed(t, "a", good, &aLog)
	defer a.Leave()
	b := startKeyed(t, "b", good, nil, a.Addr())
	defer b.Leave()
	waitAlive(t, a, 2)
	waitAlive(t, b, 2)

	wrong := startKeyed(t, "wrong", [][]byte{key(2, 32)}, &strangerLog, a.Addr())
	defer wrong.Leave()
	plain := startKeyed(t, "plain", nil, &plainLog, a.Addr())
	defer plain.Leave()
	staysAlone(t, wrong, 2*time.Second)
	staysAlone(t, plain, 0)
	if n := len(a.Alive()); n != 2 {
		t.Fatalf("the keyed cluster sees %d members, want 2: %v", n, a.Alive())
	}
	const advice = "does not use this worker's gossip key"
	if !strings.Contains(aLog.String(), advice) {
		t.Fatalf("the keyed worker's log does not say a peer has another key:\n%s", aLog.String())
	}
	if !strings.Contains(strangerLog.String(), "gossip key may differ") {
		t.Fatalf("the worker with the wrong key does not say why it cannot join:\n%s", strangerLog.String())
	}
	if !strings.Contains(plainLog.String(), "this worker has no gossip key") {
		t.Fatalf("the worker without a key does not say why it cannot join:\n%s", plainLog.String())
	}
	// One warning per peer and minute, however often memberlist retries.
	if n := strings.Count(aLog.String(), advice); n > 2 {
		t.Fatalf("the key warning came %d times within seconds; it is rate-limited per peer", n)
	}
}

// Rotation: every step of replacing key old by key new (add new as a
// second key, make it the first, drop old) interworks with the step
// before it, so workers can be restarted one by one.
func TestGossipKeyRotationSteps(t *testing.T) {
	old, next := key(3, 16), key(4, 16)
	steps := [][][]byte{{old}, {old, next}, {next, old}, {next}}
	for i := 1; i < len(steps); i++ {
		a := startKeyed(t, "before", steps[i-1], nil)
		b := startKeyed(t, "after", steps[i], nil, a.Addr())
		waitAlive(t, a, 2)
		waitAlive(t, b, 2)
		a.Leave()
		b.Leave()
	}
	// The control: the first and last steps share no key.
	a := startKeyed(t, "old-only", steps[0], nil)
	defer a.Leave()
	b := startKeyed(t, "new-only", steps[3], nil, a.Addr())
	defer b.Leave()
	staysAlone(t, b, time.Second)
}

// readable is what an eavesdropper reads in captured memberlist traffic:
// the bytes as they are, and the LZW-compressed payloads memberlist sends
// unencrypted ({"Algo": 0, "Buf": <bytes>} in msgpack), decompressed as
// memberlist decompresses them.
func readable(captured []byte) []byte {
	out := bytes.Clone(captured)
	rest := captured
	for {
		i := bytes.Index(rest, []byte("\xa3Buf"))
		if i < 0 {
			return out
		}
		rest = rest[i+4:]
		if len(rest) < 3 {
			return out
		}
		var n, head int
		switch rest[0] {
		case 0xc4, 0xd9: // bin8, str8
			n, head = int(rest[1]), 2
		case 0xc5, 0xda: // bin16, str16
			n, head = int(binary.BigEndian.Uint16(rest[1:3])), 3
		default:
			continue
		}
		if head+n > len(rest) {
			continue
		}
		plain, _ := io.ReadAll(lzw.NewReader(bytes.NewReader(rest[head:head+n]), lzw.LSB, 8))
		out = append(out, plain...)
	}
}

// What an eavesdropper on the wire reads: with a key, neither a worker's
// id nor its URL; without one (the control, which shows the capture sees
// the traffic) both.
func TestGossipTrafficIsEncrypted(t *testing.T) {
	const secretID, secretURL = "zq-worker-name-7c1", "zq-worker-url-4b2"
	capture := func(keys [][]byte) []byte {
		relay := testutil.StartRelay(t)
		// a is reached only through the relay: it advertises the relay.
		a, err := Start(Config{Cluster: "k", Meta: Meta{WorkerID: "a", URL: "http://" + secretURL}, Bind: "127.0.0.1:0",
			Advertise: relay.Addr(), Keys: keys, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Leave()
		relay.SetTarget(a.ml.LocalNode().Address()) // the advertised one is the relay's
		b := startKeyed(t, secretID, keys, nil, relay.Addr())
		defer b.Leave()
		waitAlive(t, a, 2)
		waitAlive(t, b, 2)
		time.Sleep(500 * time.Millisecond) // some probes and gossip
		return relay.Captured()
	}
	plain := readable(capture(nil))
	if !bytes.Contains(plain, []byte(secretID)) || !bytes.Contains(plain, []byte(secretURL)) {
		t.Fatalf("the capture of plaintext gossip (%d bytes) lacks the worker's id or URL: the capture is not seeing the traffic", len(plain))
	}
	raw := capture([][]byte{key(5, 32)})
	if len(raw) < 100 {
		t.Fatalf("only %d bytes captured of encrypted gossip", len(raw))
	}
	sealed := readable(raw)
	for _, s := range []string{secretID, secretURL} {
		if bytes.Contains(sealed, []byte(s)) {
			t.Fatalf("encrypted gossip carries %q in plaintext", s)
		}
	}
}

func TestParseKeys(t *testing.T) {
	k16, k32 := base64.StdEncoding.EncodeToString(key(1, 16)), base64.StdEncoding.EncodeToString(key(2, 32))
	keys, err := ParseKeys([]string{k32 + ", " + k16, k16})
	if err != nil || len(keys) != 3 || len(keys[0]) != 32 || len(keys[1]) != 16 {
		t.Fatalf("ParseKeys: %d keys, %v", len(keys), err)
	}
	secret := "bm90LWEta2V5LWF0LWFsbA" // base64 without padding: refused
	for _, tc := range []struct{ in, want string }{
		{"%%%not base64", "key 1 is not base64"},
		{k16 + "," + secret, "key 2 is not base64"},
		{base64.StdEncoding.EncodeToString(key(1, 20)), "key 1 is 20 bytes"},
	} {
		_, err := ParseKeys([]string{tc.in})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseKeys(%q): %v, want %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), strings.Split(tc.in, ",")[len(strings.Split(tc.in, ","))-1]) {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	if keys, err := ParseKeys([]string{" , "}); err != nil || len(keys) != 0 {
		t.Fatalf("blank: %v %v", keys, err)
	}
}
