package test

import (
	"bytes"
	"encoding/json"
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

// sluiceBin is the real binary, built once by TestMain from this module, so
// that the tests exercise exactly what `go build ./cmd/sluice` produces:
// flags, signal handling and exit codes included.
var sluiceBin string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sluice-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir for the sluice binary:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	sluiceBin = filepath.Join(dir, "sluice")
	// A plain build even under `go test -race`: the children are the system
	// under test, not the test, and a race build would slow them down on
	// small machines. `go test` puts its own toolchain first in PATH.
	build := exec.Command("go", "build", "-o", sluiceBin, "github.com/sluice-io/sluice/cmd/sluice")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build ./cmd/sluice:", err)
		return 1
	}
	return m.Run()
}

// Generous deadlines: the suite shares two cores with the rest of
// `go test ./...`, and a slow machine must not turn into a failed test.
const (
	startDeadline = 60 * time.Second
	stateDeadline = 60 * time.Second
	exitDeadline  = 45 * time.Second
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

// waitPortsFree waits until every address can be listened on again, so that
// a restart on the same ports does not race the dead process's sockets.
func waitPortsFree(t *testing.T, addrs ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range addrs {
		for {
			ln, err := net.Listen("tcp", a)
			if err == nil {
				ln.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("port %s still busy after the process exited: %v", a, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

var procSeq atomic.Int64

// proc is one running sluice child process. Its stdout and stderr go to files
// so that a failing test can show what the process said.
type proc struct {
	t      *testing.T
	name   string
	stdout string
	stderr string
	cmd    *exec.Cmd
	done   chan struct{} // closed once the process has exited and been reaped
}

// startProc starts the binary with args and extra environment (KEY=VALUE).
// The test's own SLUICE_* variables are not passed on: a developer's shell
// must not change what the tests run. The process is killed in t.Cleanup,
// and the tail of its stderr is printed if the test failed.
func startProc(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	logDir := t.TempDir()
	n := procSeq.Add(1)
	p := &proc{
		t:      t,
		name:   name,
		stdout: filepath.Join(logDir, fmt.Sprintf("%s-%d.stdout", name, n)),
		stderr: filepath.Join(logDir, fmt.Sprintf("%s-%d.stderr", name, n)),
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
	cmd.Env = append(cmd.Env, env...)
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
	// Cleanups run last-registered first: the kill below runs before the
	// tail is printed, so the tail is complete.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s (pid %d, %s) stderr, last lines:\n%s", name, cmd.Process.Pid, strings.Join(args, " "), tail(p.stderr, 40))
		}
	})
	t.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Kill()
		}
		<-p.done
	})
	t.Logf("started %s (pid %d): sluice %s", name, cmd.Process.Pid, strings.Join(args, " "))
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

// failIfExited ends the test if the process died, showing why.
func (p *proc) failIfExited() {
	p.t.Helper()
	if p.exited() {
		p.t.Fatalf("%s exited unexpectedly (%v); stderr tail:\n%s", p.name, p.cmd.ProcessState, tail(p.stderr, 40))
	}
}

// kill9 sends SIGKILL and waits until the process is reaped.
func (p *proc) kill9() {
	p.t.Helper()
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("kill -9 %s: %v", p.name, err)
	}
	p.waitExit()
}

// terminate sends SIGTERM and returns the exit code once the process exits.
func (p *proc) terminate() int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM %s: %v", p.name, err)
	}
	p.waitExit()
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) waitExit() {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(exitDeadline):
		p.t.Fatalf("%s did not exit within %v; stderr tail:\n%s", p.name, exitDeadline, tail(p.stderr, 40))
	}
}

func (p *proc) stderrText() string {
	b, err := os.ReadFile(p.stderr)
	if err != nil {
		p.t.Fatal(err)
	}
	return string(b)
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

// dev is a `sluice dev` process: broker, worker and REST API in one.
type dev struct {
	*proc
	t         *testing.T
	dataDir   string
	kafkaAddr string
	restAddr  string
	// bindAddr is the gossip address, where the admin commands --join.
	bindAddr string
	extra    []string
}

// startDev starts `sluice dev` on fresh loopback ports with its own data
// directory and waits until GET /health answers 200.
func startDev(t *testing.T, dataDir string, extraArgs ...string) *dev {
	t.Helper()
	d := &dev{t: t, dataDir: dataDir, kafkaAddr: freeAddr(t), restAddr: freeAddr(t), bindAddr: freeAddr(t), extra: extraArgs}
	d.start()
	return d
}

func (d *dev) start() {
	d.t.Helper()
	args := append([]string{"dev", "--data-dir", d.dataDir, "--kafka-addr", d.kafkaAddr, "--rest-addr", d.restAddr, "--bind", d.bindAddr}, d.extra...)
	d.proc = startProc(d.t, "sluice-dev", nil, args...)
	waitHealthy(d.t, d.proc, d.restAddr)
}

// restart starts `sluice dev` again on the same data directory and ports,
// once the previous process has exited and its ports are free.
func (d *dev) restart() {
	d.t.Helper()
	if !d.exited() {
		d.t.Fatalf("restart of a running process")
	}
	waitPortsFree(d.t, d.kafkaAddr, d.restAddr, d.bindAddr)
	d.start()
}

func (d *dev) url(path string) string { return "http://" + d.restAddr + path }

// waitHealthy polls GET /health until it answers 200.
func waitHealthy(t *testing.T, p *proc, restAddr string) {
	t.Helper()
	deadline := time.Now().Add(startDeadline)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		p.failIfExited()
		code, body, err := send("GET", "http://"+restAddr+"/health", "")
		if err == nil && code == http.StatusOK {
			return
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: GET /health did not answer 200 within %v (last: %s)", p.name, startDeadline, last)
}

// send does one HTTP request with a JSON body (if any) and returns the status
// and the body.
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

// mustSend is send that fails the test on a transport error.
func mustSend(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	code, b, err := send(method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return code, b
}

// connectorJSON is a POST /connectors body.
func connectorJSON(t *testing.T, name string, config map[string]string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"name": name, "config": config})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// createConnector POSTs a connector and requires 201 Created.
func createConnector(t *testing.T, d *dev, name string, config map[string]string) {
	t.Helper()
	code, body := mustSend(t, "POST", d.url("/connectors"), connectorJSON(t, name, config))
	if code != http.StatusCreated {
		t.Fatalf("POST /connectors %s: %d %s", name, code, body)
	}
}

type connectorStatus struct {
	Name      string `json:"name"`
	Connector struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
}

// running reports whether the connector and all of its (at least one) tasks
// are RUNNING.
func (s connectorStatus) running() bool {
	if s.Connector.State != "RUNNING" || len(s.Tasks) == 0 {
		return false
	}
	for _, task := range s.Tasks {
		if task.State != "RUNNING" {
			return false
		}
	}
	return true
}

// waitRunning polls the connector's status until it and its tasks run.
func waitRunning(t *testing.T, d *dev, name string) connectorStatus {
	t.Helper()
	deadline := time.Now().Add(stateDeadline)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		d.failIfExited()
		code, body, err := send("GET", d.url("/connectors/"+name+"/status"), "")
		switch {
		case err != nil:
			last = err.Error()
		case code != http.StatusOK:
			last = fmt.Sprintf("%d %s", code, body)
		default:
			last = string(body)
			var st connectorStatus
			if err := json.Unmarshal(body, &st); err != nil {
				t.Fatalf("status of %s is not JSON: %v: %s", name, err, body)
			}
			if st.running() {
				return st
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("connector %s not RUNNING within %v; last status: %s", name, stateDeadline, last)
	return connectorStatus{}
}

// fileSource and fileSink are the FileStream configs the tests use, under
// Kafka Connect's class names and with Connect's StringConverter.
func fileSource(file, topic string) map[string]string {
	return map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"file":            file,
		"topic":           topic,
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
	}
}

func fileSink(file, topic string) map[string]string {
	return map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"file":            file,
		"topics":          topic,
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
	}
}

// writeLines writes n distinct lines and returns the file's content.
func writeLines(t *testing.T, path string, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %06d of the sluice round trip\n", i)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// readFile returns a file's content, or nothing if it does not exist yet.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return b
}

// countLines counts complete lines.
func countLines(b []byte) int { return bytes.Count(b, []byte{'\n'}) }
