package test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/proctest"
)

// sluiceBin is the real binary, built once by TestMain from this module, so
// that the tests exercise exactly what `go build ./cmd/sluice` produces:
// flags, signal handling and exit codes included.
var sluiceBin string

func TestMain(m *testing.M) { os.Exit(proctest.Main(m, "sluice-test-bin-", &sluiceBin)) }

// Generous deadlines: the suite shares two cores with the rest of
// `go test ./...`, and a slow machine must not turn into a failed test.
const (
	startDeadline = 60 * time.Second
	stateDeadline = 60 * time.Second
	exitDeadline  = 45 * time.Second
)

var httpClient = &http.Client{Timeout: 15 * time.Second}

// startProc starts the binary with args and extra environment (KEY=VALUE).
// The test's own SLUICE_* variables are not passed on: a developer's shell
// must not change what the tests run. The process is killed in t.Cleanup,
// and the tail of its stderr is printed if the test failed.
func startProc(t *testing.T, name string, env []string, args ...string) *proctest.Proc {
	t.Helper()
	p := proctest.Start(t, sluiceBin, name, proctest.Options{ExitDeadline: exitDeadline, Env: env, LogTailOnFailure: true}, args...)
	t.Logf("started %s (pid %d): sluice %s", name, p.Pid(), strings.Join(args, " "))
	return p
}

// dev is a `sluice dev` process: broker, worker and REST API in one.
type dev struct {
	*proctest.Proc
	t         *testing.T
	dataDir   string
	kafkaAddr string
	restAddr  string
	// bindAddr is the gossip address, where the admin commands --join.
	bindAddr string
	// registryAddr is the Schema Registry's, a free port rather than
	// dev's default 8081 so that tests can run side by side.
	registryAddr string
	extra        []string
}

// startDev starts `sluice dev` on fresh loopback ports with its own data
// directory and waits until GET /health answers 200.
func startDev(t *testing.T, dataDir string, extraArgs ...string) *dev {
	t.Helper()
	d := &dev{t: t, dataDir: dataDir, kafkaAddr: proctest.FreeAddr(t), restAddr: proctest.FreeAddr(t), bindAddr: proctest.FreeAddr(t),
		registryAddr: proctest.FreeAddr(t), extra: extraArgs}
	d.start()
	return d
}

func (d *dev) start() {
	d.t.Helper()
	args := append([]string{"dev", "--data-dir", d.dataDir, "--kafka-addr", d.kafkaAddr, "--rest-addr", d.restAddr, "--bind", d.bindAddr,
		"--schema-registry-addr", d.registryAddr}, d.extra...)
	d.Proc = startProc(d.t, "sluice-dev", nil, args...)
	waitHealthy(d.t, d.Proc, d.restAddr)
}

// restart starts `sluice dev` again on the same data directory and ports,
// once the previous process has exited and its ports are free.
func (d *dev) restart() {
	d.t.Helper()
	if !d.Exited() {
		d.t.Fatalf("restart of a running process")
	}
	proctest.WaitPortsFree(d.t, d.kafkaAddr, d.restAddr, d.bindAddr, d.registryAddr)
	d.start()
}

func (d *dev) url(path string) string { return "http://" + d.restAddr + path }

// waitFor calls cond every interval until it holds, failing the test at
// the deadline with cond's last description of where things stand. alive
// runs before each wait and ends the test at once if a process it watches
// died.
func waitFor(t *testing.T, alive func(), timeout, interval time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		alive()
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v; last: %s", what, timeout, state)
		}
		time.Sleep(interval)
	}
}

// waitHealthy polls GET /health until it answers 200.
func waitHealthy(t *testing.T, p *proctest.Proc, restAddr string) {
	t.Helper()
	if err := proctest.WaitHealthy(httpClient, restAddr, startDeadline, 100*time.Millisecond, p.FailIfExited); err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
}

// send does one HTTP request with a JSON body (if any) and returns the status
// and the body.
func send(method, url, body string) (int, []byte, error) {
	return proctest.Send(httpClient, method, url, body)
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
	createOn(t, d.restAddr, name, config)
}

// createOn POSTs a connector to the worker at rest and requires 201
// Created.
func createOn(t *testing.T, rest, name string, config map[string]string) {
	t.Helper()
	code, body := mustSend(t, "POST", "http://"+rest+"/connectors", connectorJSON(t, name, config))
	if code != http.StatusCreated {
		t.Fatalf("POST /connectors %s on %s: %d %s", name, rest, code, body)
	}
}

// waitRunning polls the connector's status until it and its tasks run.
func waitRunning(t *testing.T, d *dev, name string) proctest.Status {
	t.Helper()
	deadline := time.Now().Add(stateDeadline)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		d.FailIfExited()
		code, body, err := send("GET", d.url("/connectors/"+name+"/status"), "")
		switch {
		case err != nil:
			last = err.Error()
		case code != http.StatusOK:
			last = fmt.Sprintf("%d %s", code, body)
		default:
			last = string(body)
			var st proctest.Status
			if err := json.Unmarshal(body, &st); err != nil {
				t.Fatalf("status of %s is not JSON: %v: %s", name, err, body)
			}
			if st.Running() {
				return st
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("connector %s not RUNNING within %v; last status: %s", name, stateDeadline, last)
	return proctest.Status{}
}

// Kafka Connect's names of the FileStream connectors and of its
// StringConverter.
const (
	fileSourceClass = "org.apache.kafka.connect.file.FileStreamSourceConnector"
	fileSinkClass   = "org.apache.kafka.connect.file.FileStreamSinkConnector"
	stringConverter = "org.apache.kafka.connect.storage.StringConverter"
)

// fileSource and fileSink are the FileStream configs the tests use, under
// Kafka Connect's class names and with Connect's StringConverter.
func fileSource(file, topic string) map[string]string {
	return fileConnector(fileSourceClass, file, "topic", topic)
}

func fileSink(file, topic string) map[string]string {
	return fileConnector(fileSinkClass, file, "topics", topic)
}

func fileConnector(class, file, topicKey, topic string) map[string]string {
	return map[string]string{"connector.class": class, "file": file, topicKey: topic, "value.converter": stringConverter}
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
