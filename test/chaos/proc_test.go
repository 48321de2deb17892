// Package chaos kills and restarts real `sluice worker` processes at seeded
// random moments while Datagen sources and a FileStream sink run, then
// proves that no record was lost, that every task ends RUNNING and that no
// task ran on two workers in one generation.
//
// It has its own process helper rather than importing package test: test
// packages cannot be imported, and this one must stay runnable on its own
// (`just chaos`) for long CI runs.
package chaos

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// sluiceBin is the real binary, built once by TestMain: the chaos run
// exercises exactly what `go build ./cmd/sluice` produces, signal handling
// included.
var sluiceBin string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sluice-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir for the sluice binary:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	sluiceBin = filepath.Join(dir, "sluice")
	// A plain build even under `go test -race`: the children are the system
	// under test, and a race build would slow them down on small machines.
	build := exec.Command("go", "build", "-o", sluiceBin, "github.com/sluice-io/sluice/cmd/sluice")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build ./cmd/sluice:", err)
		return 1
	}
	return m.Run()
}

// Generous deadlines: the machine may have two shared cores and other
// suites running; slowness must not read as lost data.
const (
	startDeadline = 90 * time.Second
	exitDeadline  = 60 * time.Second
)

var httpClient = &http.Client{Timeout: 15 * time.Second}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a free port: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// portsFree waits until every address can be listened on again, so that a
// restart on the same ports does not race the dead process's sockets.
func portsFree(addrs ...string) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range addrs {
		for {
			ln, err := net.Listen("tcp", a)
			if err == nil {
				ln.Close()
				break
			}
			// memberlist also binds UDP on the gossip port.
			if time.Now().After(deadline) {
				return fmt.Errorf("port %s still busy after the process exited: %w", a, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

var procSeq atomic.Int64

// proc is one incarnation of a sluice child process; its stdout and stderr
// go to files, kept for the log checks and shown when the test fails.
type proc struct {
	name   string
	args   []string
	stdout string
	stderr string
	cmd    *exec.Cmd
	done   chan struct{} // closed once the process has exited and been reaped
}

// startProc starts the binary. The test's own SLUICE_* variables are not
// passed on: they configure this test (seed, duration, bootstrap), not the
// children. The process is killed in t.Cleanup.
func startProc(t *testing.T, logDir, name string, args ...string) *proc {
	t.Helper()
	n := procSeq.Add(1)
	p := &proc{
		name:   name,
		args:   args,
		stdout: filepath.Join(logDir, fmt.Sprintf("%03d-%s.stdout", n, name)),
		stderr: filepath.Join(logDir, fmt.Sprintf("%03d-%s.stderr", n, name)),
		done:   make(chan struct{}),
	}
	outF, err := os.Create(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(p.stderr)
	if err != nil {
		outF.Close()
		t.Fatal(err)
	}
	cmd := exec.Command(sluiceBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = outF, errF
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		outF.Close()
		errF.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p.cmd = cmd
	go func() {
		_ = cmd.Wait()
		outF.Close()
		errF.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Kill()
		}
		<-p.done
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// signal sends sig and waits until the process is reaped.
func (p *proc) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%v to %s: %w", sig, p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(exitDeadline):
		return fmt.Errorf("%s did not exit within %v of %v; stderr tail:\n%s", p.name, exitDeadline, sig, tail(p.stderr, 30))
	}
}

// tail returns about the last n lines of a file.
func tail(path string, n int) string {
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

// send does one HTTP request with a JSON body (if any) and returns the
// status and the body.
func send(method, url, body string) (int, []byte, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
