// Package proctest runs the real sluice binary as child processes for the
// suites that test it from the outside: package test, the chaos run in
// test/chaos and the failover benchmark in bench. It builds the binary,
// starts and stops the children, picks loopback ports for them, talks
// HTTP to their REST API and compares where their tasks run.
//
// It is an ordinary package rather than a _test.go file because test files
// cannot be imported across packages, and under internal/ because nothing
// outside this module should depend on it.
package proctest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Main is the TestMain of a suite that starts the binary from its first
// test on: it builds the binary into a temporary directory whose name
// starts with tempPrefix, sets *bin to its path, runs the tests and removes
// the directory. A failed build fails the run before any test.
func Main(m *testing.M, tempPrefix string, bin *string) int {
	dir, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir for the sluice binary:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *bin, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Build builds ./cmd/sluice into dir and returns the binary's path, so that
// the tests exercise exactly what `go build ./cmd/sluice` produces: flags,
// signal handling and exit codes included. The error carries the compiler's
// output.
//
// It is a plain build even under `go test -race`: the children are the
// system under test, not the test, and a race build would slow them down on
// small machines. `go test` puts its own toolchain first in PATH.
func Build(dir string) (string, error) {
	path := filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", path, "github.com/sluice-io/sluice/cmd/sluice")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, out)
	}
	return path, nil
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("pick a free port: %v", err)
		}
		addr := ln.Addr().String()
		ln.Close()
		// The kernel may hand a port it just freed out again: a test
		// that picks a REST and a gossip port in a row must not get the
		// same one twice (seen: both flags on one port, one bind failed).
		handedMu.Lock()
		_, taken := handed[addr]
		handed[addr] = struct{}{}
		handedMu.Unlock()
		if !taken {
			return addr
		}
	}
}

// handed are the addresses FreeAddr gave out in this process.
var (
	handedMu sync.Mutex
	handed   = map[string]struct{}{}
)

// portsFreeDeadline bounds how long a dead process's sockets may keep its
// ports.
const portsFreeDeadline = 30 * time.Second

// PortsFree waits until every address can be listened on again, so that a
// restart on the same ports does not race the dead process's sockets. Only
// TCP is tried, although memberlist also binds UDP on the gossip port. It
// returns an error rather than failing the test, for a caller that words
// its own failure.
func PortsFree(addrs ...string) error {
	deadline := time.Now().Add(portsFreeDeadline)
	for _, a := range addrs {
		for {
			ln, err := net.Listen("tcp", a)
			if err == nil {
				ln.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("port %s still busy after the process exited: %w", a, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// WaitPortsFree is PortsFree that fails the test.
func WaitPortsFree(tb testing.TB, addrs ...string) {
	tb.Helper()
	if err := PortsFree(addrs...); err != nil {
		tb.Fatal(err)
	}
}

// Tail returns about the last n lines of a file.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Send does one HTTP request with a JSON body (if any) and returns the
// status and the body. The client is the caller's: its timeout is a choice
// of the suite (a benchmark's status poll must not hang long, a test on a
// loaded machine may wait).
func Send(client *http.Client, method, url, body string) (int, []byte, error) {
	code, _, b, err := Do(client, method, url, body)
	return code, b, err
}

// Do is Send that also returns the response headers.
func Do(client *http.Client, method, url, body string) (int, http.Header, []byte, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, nil, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// WaitHealthy polls GET /health on the REST address rest every interval
// until it answers 200. Before each poll it calls alive, which should end
// the test if the process died. It returns an error naming the last answer
// if 200 does not come within timeout.
func WaitHealthy(client *http.Client, rest string, timeout, interval time.Duration, alive func()) error {
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		alive()
		code, body, err := Send(client, "GET", "http://"+rest+"/health", "")
		if err == nil && code == http.StatusOK {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%d %s", code, body)
		}
		time.Sleep(interval)
	}
	return fmt.Errorf("GET /health not 200 within %v (last: %s)", timeout, last)
}
