package test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A worker process's JSON log (stderr, not a terminal) while a source waits
// for its file and a sink fails to open its own: every line that names one
// of the connectors carries its connector field, the task failures and the
// connectors' own lines the task field too.
func TestWorkerLogLinesCarryConnectorAndTask(t *testing.T) {
	c := startCluster(t, "logctx")
	w := c.add("w1")
	dir := t.TempDir()
	src, sink := "waiting-source", "failing-sink"
	createOn(t, w.rest, src, fileSource(filepath.Join(dir, "not-yet.txt"), c.topic("logctx-lines")))
	createOn(t, w.rest, sink, fileSink(filepath.Join(dir, "no-such-dir", "out.txt"), c.topic("logctx-lines")))
	waitFor(t, w.FailIfExited, stateDeadline, 200*time.Millisecond, "the sink's task failure and the source's wait in the log", func() (bool, string) {
		log := w.StderrText()
		return strings.Contains(log, `"message":"task failed"`) && strings.Contains(log, "file does not exist yet"), ""
	})

	var taskLines int
	for _, l := range strings.Split(strings.TrimSpace(w.StderrText()), "\n") {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("a log line is not JSON: %q: %v", l, err)
		}
		for _, name := range []string{src, sink} {
			if strings.Contains(l, name) && line["connector"] != name {
				t.Errorf("a line about %s without connector=%s: %s", name, name, l)
			}
		}
		if line["message"] == "task failed" || line["connector_class"] != nil {
			taskLines++
			if line["task"] != 0.0 || line["worker"] != "w1" {
				t.Errorf("a task's line without task=0 and worker=w1: %s", l)
			}
		}
	}
	if taskLines < 2 {
		t.Fatalf("%d lines from or about the tasks, want the failure and the source's wait:\n%s", taskLines, w.StderrText())
	}
}
