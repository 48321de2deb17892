package testutil

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Relay stands between two peers on loopback and keeps a copy of every
// byte that passes, both ways, as a capture of the wire would: tests use
// it to prove what an eavesdropper could or could not read. It relays TCP
// connections and UDP datagrams on one port (memberlist speaks both on
// one address). UDP answers are not relayed back: memberlist answers a
// packet at the sender's advertised address, not at the packet's source.
type Relay struct {
	tcp    net.Listener
	udp    *net.UDPConn
	target atomic.Value // string: host:port to relay to

	mu       sync.Mutex
	captured bytes.Buffer
}

// StartRelay listens on a free loopback port, TCP and UDP alike, until
// the test ends. Nothing is relayed before SetTarget.
func StartRelay(tb testing.TB) *Relay {
	tb.Helper()
	r := &Relay{}
	r.target.Store("")
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if r.tcp, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			tb.Fatal(err)
		}
		port := r.tcp.Addr().(*net.TCPAddr).Port
		if r.udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}); err == nil {
			break
		}
		r.tcp.Close() // the UDP port is taken: try another
	}
	if err != nil {
		tb.Fatalf("relay: no port free for both TCP and UDP: %v", err)
	}
	tb.Cleanup(func() {
		r.tcp.Close()
		r.udp.Close()
	})
	go r.acceptTCP()
	go r.relayUDP()
	return r
}

// Addr is where peers reach the relay.
func (r *Relay) Addr() string { return r.tcp.Addr().String() }

// SetTarget names where the relay forwards to (host:port, TCP and UDP).
func (r *Relay) SetTarget(addr string) { r.target.Store(addr) }

// Captured is every byte relayed so far, both ways.
func (r *Relay) Captured() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.captured.Bytes())
}

func (r *Relay) record(p []byte) {
	r.mu.Lock()
	r.captured.Write(p)
	r.mu.Unlock()
}

func (r *Relay) acceptTCP() {
	for {
		in, err := r.tcp.Accept()
		if err != nil {
			return // closed at the end of the test
		}
		go r.pipe(in)
	}
}

func (r *Relay) pipe(in net.Conn) {
	defer in.Close()
	target, _ := r.target.Load().(string)
	if target == "" {
		return
	}
	out, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	copyRecorded := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, io.TeeReader(src, recorder{r}))
		// Half-close so the other side sees the end of this direction.
		if c, ok := dst.(*net.TCPConn); ok {
			_ = c.CloseWrite()
		}
		done <- struct{}{}
	}
	go copyRecorded(out, in)
	go copyRecorded(in, out)
	<-done
	<-done
}

func (r *Relay) relayUDP() {
	buf := make([]byte, 64<<10)
	for {
		n, _, err := r.udp.ReadFromUDP(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		r.record(buf[:n])
		target, _ := r.target.Load().(string)
		addr, err := net.ResolveUDPAddr("udp", target)
		if target == "" || err != nil {
			continue
		}
		// From an unbound socket: the answer goes to the sender's
		// advertised address anyway (see Relay).
		if c, err := net.DialUDP("udp", nil, addr); err == nil {
			_, _ = c.Write(buf[:n])
			c.Close()
		}
	}
}

// recorder is an io.Writer into the relay's capture.
type recorder struct{ r *Relay }

func (w recorder) Write(p []byte) (int, error) {
	w.r.record(p)
	return len(p), nil
}
