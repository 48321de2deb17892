// Package testutil holds the small helpers that tests of any package
// share and that belong to no subsystem: a log buffer safe for concurrent
// writers, a context that ends with the test, polling until a condition
// holds, and loopback addresses. It imports only the standard library, so
// that every package, the lowest included, can use it from its tests.
//
// It is an ordinary package rather than a _test.go file because test files
// cannot be imported across packages.
package testutil

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

// LogBuffer is a log destination that goroutines write to while the test
// reads it. The zero value is ready to use.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Take returns everything written so far and empties the buffer.
func (l *LogBuffer) Take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// Context returns a context that ends after d, or when the test ends.
func Context(tb testing.TB, d time.Duration) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// pollEvery is how often Eventually tries its condition again.
const pollEvery = 20 * time.Millisecond

// Eventually calls cond until it returns nil, and fails the test, naming
// what and cond's last error, if that does not happen within d.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(d)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(pollEvery)
	}
	tb.Fatalf("%s: not within %s: %v", what, d, err)
}

// Poll calls cond every interval until it holds or fails, or ctx ends; it
// returns cond's error or ctx's.
func Poll(ctx context.Context, interval time.Duration, cond func() (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ClosedAddr returns a loopback address that nothing listens on: a client
// pointed there is refused at once.
func ClosedAddr(tb testing.TB) string {
	tb.Helper()
	l := listen(tb)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Occupied returns a loopback address that is in use until the test ends,
// so that whatever is told to listen there fails.
func Occupied(tb testing.TB) string {
	tb.Helper()
	l := listen(tb)
	tb.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

func listen(tb testing.TB) net.Listener {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// Gaps looks for holes in a sequence counted from 0, such as the seq of a
// Datagen task's records: it returns the highest number in seqs (-1 when
// there is none), how many numbers from 0 to it are missing, and the first
// of them, at most limit.
func Gaps(seqs map[int64]bool, limit int) (highest int64, missing int, first []int64) {
	highest = -1
	for s := range seqs {
		highest = max(highest, s)
	}
	for s := int64(0); s <= highest; s++ {
		if !seqs[s] {
			if len(first) < limit {
				first = append(first, s)
			}
			missing++
		}
	}
	return highest, missing, first
}

// Receive returns the next value from ch, and fails the test, saying
// what did not happen, if none comes within d.
func Receive[T any](tb testing.TB, ch <-chan T, d time.Duration, what string) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		tb.Fatal(what)
		panic("unreachable")
	}
}
