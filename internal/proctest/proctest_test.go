package proctest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shell returns sh, which stands in for the sluice binary here.
func shell(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh:", err)
	}
	return sh
}

// waitReady waits until the script has written "ready" to stdout, so that
// its traps are set before a signal arrives.
func waitReady(t *testing.T, p *Proc) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(p.Stdout)
		if strings.Contains(string(b), "ready") {
			return
		}
		p.FailIfExited()
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready; stderr: %s", p.Name, Tail(p.Stderr, 10))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartDropsSluiceEnvAndAddsEnv(t *testing.T) {
	t.Setenv("SLUICE_FROM_THE_TEST", "1")
	p := Start(t, shell(t), "env", Options{ExitDeadline: 10 * time.Second, Env: []string{"ADDED=yes"}},
		"-c", "env; echo oops >&2")
	p.WaitExit()
	out, err := os.ReadFile(p.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "SLUICE_FROM_THE_TEST") {
		t.Errorf("SLUICE_FROM_THE_TEST reached the child:\n%s", out)
	}
	if !strings.Contains(string(out), "ADDED=yes") {
		t.Errorf("ADDED=yes did not reach the child:\n%s", out)
	}
	if got := p.StderrText(); got != "oops\n" {
		t.Errorf("stderr %q, want %q", got, "oops\n")
	}
	if filepath.Dir(p.Stdout) != filepath.Dir(p.Stderr) || p.Stdout == p.Stderr {
		t.Errorf("stdout %s and stderr %s: want two files in one directory", p.Stdout, p.Stderr)
	}
}

func TestCombinedOutputKeepsOrder(t *testing.T) {
	p := Start(t, shell(t), "both", Options{ExitDeadline: 10 * time.Second, CombinedOutput: true},
		"-c", "echo one; echo two >&2; echo three")
	p.WaitExit()
	if p.Stdout != p.Stderr {
		t.Fatalf("stdout %s and stderr %s: want one file", p.Stdout, p.Stderr)
	}
	if got, want := p.StderrText(), "one\ntwo\nthree\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

func TestTerminateReturnsExitCode(t *testing.T) {
	p := Start(t, shell(t), "term", Options{ExitDeadline: 10 * time.Second},
		"-c", `trap 'exit 3' TERM; echo ready; while :; do sleep 0.05; done`)
	waitReady(t, p)
	if p.Exited() {
		t.Fatal("exited before SIGTERM")
	}
	if code := p.Terminate(); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	if !p.Exited() {
		t.Error("Exited is false after Terminate")
	}
}

func TestKill9AndSignalAfterExit(t *testing.T) {
	p := Start(t, shell(t), "kill", Options{ExitDeadline: 10 * time.Second},
		"-c", `trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	waitReady(t, p)
	p.Kill9()
	if !p.Exited() {
		t.Fatal("Exited is false after Kill9")
	}
	if ws, ok := p.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signal() != syscall.SIGKILL {
		t.Errorf("process state %v, want killed by SIGKILL", p.Cmd.ProcessState)
	}
	// Stopping a process that is already gone is not an error: it is
	// stopped.
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Errorf("Signal after exit: %v", err)
	}
}

func TestSignalReportsAProcessThatDoesNotExit(t *testing.T) {
	p := Start(t, shell(t), "stubborn", Options{ExitDeadline: 300 * time.Millisecond},
		"-c", `trap '' TERM; echo ready; echo still here >&2; while :; do sleep 0.05; done`)
	waitReady(t, p)
	err := p.Signal(syscall.SIGTERM)
	if err == nil {
		t.Fatal("Signal returned nil for a process that ignores SIGTERM")
	}
	if msg := err.Error(); !strings.Contains(msg, "stubborn did not exit within 300ms") || !strings.Contains(msg, "still here") {
		t.Errorf("error %q: want the name, the deadline and the stderr tail", msg)
	}
	// The cleanup kills it.
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("a\nb\nc\nd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Tail(path, 2); got != "c\nd" {
		t.Errorf("Tail 2: %q", got)
	}
	if got := Tail(path, 10); got != "a\nb\nc\nd" {
		t.Errorf("Tail 10: %q", got)
	}
	if got := Tail(filepath.Join(t.TempDir(), "missing"), 2); !strings.HasPrefix(got, "(cannot read ") {
		t.Errorf("Tail of a missing file: %q", got)
	}
}

func TestFreeAddrIsFree(t *testing.T) {
	a, b := FreeAddr(t), FreeAddr(t)
	if !strings.HasPrefix(a, "127.0.0.1:") {
		t.Errorf("FreeAddr %s: want loopback", a)
	}
	if err := PortsFree(a, b); err != nil {
		t.Error(err)
	}
}

func TestSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, r.Method+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("Accept")+" "+string(b))
	}))
	defer srv.Close()
	code, body, err := Send(srv.Client(), "PUT", srv.URL, `{"a":1}`)
	if err != nil || code != http.StatusTeapot || string(body) != `PUT application/json application/json {"a":1}` {
		t.Errorf("PUT with a body: %d %q %v", code, body, err)
	}
	code, body, err = Send(srv.Client(), "GET", srv.URL, "")
	if err != nil || code != http.StatusTeapot || string(body) != "GET  application/json " {
		t.Errorf("GET: %d %q %v", code, body, err)
	}
}
