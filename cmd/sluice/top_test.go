package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/ui"
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
