package worker

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluice-io/sluice/internal/testutil"
)

// logLines is the lines of a JSON log so far.
func logLines(b *testutil.LogBuffer) []string {
	return strings.Split(strings.TrimSpace(b.String()), "\n")
}

// errNotYet is a condition testutil.Eventually waits for.
var errNotYet = errors.New("not yet")

// Every line a connector or its tasks emit, and every line the runtime
// writes about them, carries the connector field, and task lines the task
// field, as Connect's connector.context prefixes them: a worker's JSON log
// is captured while a source waits for its file and a sink fails again and
// again.
func TestLogLinesAboutAConnectorCarryItsFields(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	var logs testutil.LogBuffer
	w := startWorkerWith(t, Config{
		Cluster: "logctx", Bootstrap: broker.ListenAddrs(), RESTAddr: "127.0.0.1:0",
		OffsetFlushInterval: 100 * time.Millisecond,
		Log:                 zerolog.New(&logs).Level(zerolog.DebugLevel),
	})
	base := "http://" + w.RESTAddr()
	testutil.Eventually(t, 30*time.Second, "worker ready", func() error {
		if !w.Ready() {
			return errNotYet
		}
		return nil
	})
	dir := t.TempDir()
	post(t, base+"/connectors", `{"name":"waiting-source","config":{"connector.class":"FileStreamSource",
		"file":"`+filepath.Join(dir, "not-yet.txt")+`","topic":"lines"}}`)
	post(t, base+"/connectors", `{"name":"failing-sink","config":{"connector.class":"FileStreamSink",
		"file":"`+filepath.Join(dir, "no-such-dir", "out.txt")+`","topics":"lines"}}`)
	testutil.Eventually(t, 30*time.Second, "the sink's task failed and the source waits", func() error {
		var failed, waiting bool
		for _, l := range logLines(&logs) {
			failed = failed || strings.Contains(l, `"task failed"`) && strings.Contains(l, "failing-sink")
			waiting = waiting || strings.Contains(l, "file does not exist yet")
		}
		if !failed || !waiting {
			return errNotYet
		}
		return nil
	})

	// A REST request about the task is a line about it too.
	if code, body := get(t, base+"/connectors/failing-sink/tasks/0/status"); code != 200 {
		t.Fatalf("task status: %d %s", code, body)
	}
	testutil.Eventually(t, 10*time.Second, "the request's log line", func() error {
		if !strings.Contains(logs.String(), `"path":"/connectors/failing-sink/tasks/0/status"`) {
			return errNotYet
		}
		return nil
	})
	if testing.Verbose() {
		t.Log(strings.Join(logLines(&logs), "\n"))
	}
	names := []string{"waiting-source", "failing-sink"}
	var fromTasks, requests int
	for _, l := range logLines(&logs) {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		for _, name := range names {
			if !strings.Contains(l, name) {
				continue
			}
			if line["connector"] != name {
				t.Errorf("a line about %s lacks connector=%s: %s", name, name, l)
			}
		}
		// The connectors' own task lines (they add connector_class).
		if _, ok := line["connector_class"]; ok {
			fromTasks++
			if line["task"] == nil || line["connector"] == nil {
				t.Errorf("a task's own line lacks connector and task: %s", l)
			}
		}
		if line["message"] == "request" && line["path"] == "/connectors/failing-sink/tasks/0/status" {
			requests++
			if line["task"] != 0.0 {
				t.Errorf("a request about task 0 lacks task=0: %s", l)
			}
		}
		if line["message"] == "task failed" && line["task"] == nil {
			t.Errorf("a task failure without its task: %s", l)
		}
	}
	if requests != 1 {
		t.Errorf("%d request lines for the task's status, want 1", requests)
	}
	if fromTasks == 0 {
		t.Fatalf("no line from the connectors' own code:\n%s", strings.Join(logLines(&logs), "\n"))
	}
}
