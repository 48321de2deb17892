package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/ui"
	"github.com/sluice-io/sluice/internal/worker"
)

func TestPrintTopShowsTasksBusiestFirst(t *testing.T) {
	v := ui.View{Worker: "w1", Time: time.Now(),
		Workers: []ui.Worker{{ID: "w1", Leader: true, Alive: true}, {ID: "w2", Alive: true}, {ID: "w3"}},
		Connectors: []ui.Connector{
			{Name: "slow", Tasks: []ui.Task{{ID: 0, State: "RUNNING", WorkerID: "w1", Measured: true, RecordsPerSec: 1.25, Total: 10, Lag: -1}}},
			{Name: "fast", Tasks: []ui.Task{
				{ID: 0, State: "RUNNING", WorkerID: "w2", Measured: true, RecordsPerSec: 900, Total: 5000, Lag: 17},
				{ID: 1, State: "UNASSIGNED", WorkerID: "w3"},
			}},
		},
	}
	var out bytes.Buffer
	if err := printTop(&out, v); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.Contains(lines[0], "w1*") || !strings.Contains(lines[0], "gone: w3") {
		t.Fatalf("first line %q, want the leader starred and w3 gone", lines[0])
	}
	want := [][]string{
		{"CONNECTOR", "TASK", "STATE", "WORKER", "REC/S", "LAG", "TOTAL"},
		{"fast", "0", "RUNNING", "w2", "900.0", "17", "5000"},
		{"slow", "0", "RUNNING", "w1", "1.2", "-", "10"},
		{"fast", "1", "UNASSIGNED", "w3", "-", "-", "-"},
	}
	if len(lines) != 1+len(want) {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, w := range want {
		if got := strings.Fields(lines[i+1]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Fatalf("row %d: %q, want %q\n%s", i, got, w, out.String())
		}
	}
}

func TestTopRefusesBadCounts(t *testing.T) {
	for _, args := range [][]string{{"-n", "-1"}, {"--once", "-n", "3"}, {"--interval", "0s"}, {"extra"}} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"top", "--join", "127.0.0.1:1"}, args...), &stdout, &stderr); code != exitUsage {
			t.Fatalf("top %v: exit %d (%s), want %d", args, code, stderr.String(), exitUsage)
		}
	}
}

// --ui=false and sluice.ui.enable=false turn the dashboard off; the flag
// wins over the key either way; a bad value names the key.
func TestUIFlagAndKey(t *testing.T) {
	base := []string{"--cluster", "c", "--bootstrap", "127.0.0.1:9092"}
	for _, tc := range []struct {
		args []string
		off  bool
	}{
		{nil, false},
		{[]string{"--ui=false"}, true},
		{[]string{"--prop", worker.KeyUIEnable + "=false"}, true},
		{[]string{"--prop", worker.KeyUIEnable + "=FALSE", "--ui=true"}, false},
		{[]string{"--prop", worker.KeyUIEnable + "=true", "--ui=false"}, true},
	} {
		cfg, err := resolvedWorker(t, append(slices.Clone(base), tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if cfg.DisableUI != tc.off {
			t.Fatalf("%v: DisableUI %v, want %v", tc.args, cfg.DisableUI, tc.off)
		}
	}
	_, err := resolvedWorker(t, append(slices.Clone(base), "--prop", worker.KeyUIEnable+"=no")...)
	if err == nil || !strings.Contains(err.Error(), worker.KeyUIEnable) {
		t.Fatalf("sluice.ui.enable=no: %v, want an error naming the key", err)
	}
}
