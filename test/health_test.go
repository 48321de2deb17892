package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/proctest"
)

// healthIs waits until GET /health on rest answers code with a status and
// a message that has every one of messageHas.
func healthIs(t *testing.T, w *workerProc, code int, status string, messageHas ...string) string {
	t.Helper()
	var msg string
	waitFor(t, w.FailIfExited, stateDeadline, 200*time.Millisecond, fmt.Sprintf("GET /health %d %s", code, status), func() (bool, string) {
		got, body, err := send("GET", "http://"+w.rest+"/health", "")
		if err != nil {
			return false, err.Error()
		}
		var h struct{ Status, Message string }
		if err := json.Unmarshal(body, &h); err != nil {
			return false, fmt.Sprintf("%d %s: %v", got, body, err)
		}
		msg = h.Message
		if got != code || h.Status != status {
			return false, fmt.Sprintf("%d %s", got, body)
		}
		for _, s := range messageHas {
			if !strings.Contains(h.Message, s) {
				return false, fmt.Sprintf("%d %s", got, body)
			}
		}
		return true, ""
	})
	return msg
}

// A worker process through a broker that freezes and one that stops and
// starts again on its data: healthy, unhealthy once the session timeout
// (6 s) has passed without an answer, saying so, and healthy again once the
// broker is back, without a restart of the worker.
//
// The broker is an embedded one of the test's own, also when the suite
// runs against Apache Kafka: the test freezes and stops it, which it must
// not do to a shared broker, and the worker's health does not depend on
// which broker it lost.
func TestHealthThroughABrokerOutage(t *testing.T) {
	addr, dir := proctest.FreeAddr(t), t.TempDir()
	startBroker := func() *proctest.Proc {
		b := startProc(t, "broker", nil, "broker", "--addr", addr, "--data-dir", dir)
		if err := kafkatest.WaitUp(addr, startDeadline, b.FailIfExited); err != nil {
			t.Fatalf("broker not up: %v", err)
		}
		return b
	}
	b := startBroker()
	c := &cluster{t: t, name: "health", bootstrap: addr, workers: map[string]*workerProc{}}
	w := c.add("w1")
	healthIs(t, w, 200, "healthy", "ready to handle requests")

	// Frozen: connections stay open and nothing answers.
	if err := b.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Cmd.Process.Signal(syscall.SIGCONT) })
	healthIs(t, w, 500, "unhealthy", `no answer from the coordinator of group "health"`, "session.timeout.ms (6s)")
	if err := b.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	healthIs(t, w, 200, "healthy", "ready to handle requests")

	// Gone: connections refused until a new broker process serves the
	// same data on the same address.
	b.Terminate()
	healthIs(t, w, 500, "unhealthy", "session.timeout.ms (6s)")
	startBroker()
	healthIs(t, w, 200, "healthy", "ready to handle requests")
	// Still a working worker: it answers from the config topic.
	if code, body := mustSend(t, "GET", "http://"+w.rest+"/connectors", ""); code != 200 {
		t.Fatalf("GET /connectors after the outage: %d %s", code, body)
	}
}
