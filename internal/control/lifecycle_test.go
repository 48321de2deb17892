package control_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/state"
)

func TestPatchConfigMergesAndRemoves(t *testing.T) {
	e := controltest.NewEnv(t)
	if _, err := e.C.PatchConfig(ctx(t), "c", map[string]*string{"topic": ptr("x")}); code(err) != http.StatusNotFound {
		t.Fatalf("PATCH of an unknown connector: %v, want 404", err)
	}
	if _, err := e.C.Create(ctx(t), "c", controltest.SourceConfig("batch.size", "10", "query", "q"), ""); err != nil {
		t.Fatal(err)
	}
	info, err := e.C.PatchConfig(ctx(t), "c", map[string]*string{"batch.size": ptr("20"), "query": nil, "extra": ptr("1")})
	if err != nil {
		t.Fatal(err)
	}
	want := controltest.SourceConfig("name", "c", "batch.size", "20", "extra", "1")
	if !reflect.DeepEqual(info.Config, want) || info.Type != "source" {
		t.Fatalf("PatchConfig = %+v, want config %v", info, want)
	}
	if got, _ := e.C.Config("c"); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored config %v, want %v", got, want)
	}
	// A patch that makes the config invalid is refused as a whole, every
	// bad key named, and nothing is written.
	before := len(e.Configs.Calls())
	_, err = e.C.PatchConfig(ctx(t), "c", map[string]*string{"topic": nil, "batch.size": ptr("0")})
	if code(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "topic") || !strings.Contains(err.Error(), "batch.size") {
		t.Fatalf("invalid patch: %v, want 400 naming topic and batch.size", err)
	}
	if n := len(e.Configs.Calls()); n != before {
		t.Fatalf("invalid patch wrote %d record(s)", n-before)
	}
	if _, err := e.C.PatchConfig(ctx(t), "c", map[string]*string{"name": ptr("other")}); code(err) != http.StatusBadRequest {
		t.Fatalf("patch renaming the connector: %v, want 400", err)
	}
}

func ptr(s string) *string { return &s }

func TestStopIsIdempotent(t *testing.T) {
	e := controltest.NewEnv(t)
	if err := e.C.Stop(ctx(t), "c"); code(err) != http.StatusNotFound {
		t.Fatalf("Stop of an unknown connector: %v, want 404", err)
	}
	if _, err := e.C.Create(ctx(t), "c", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := e.C.Stop(ctx(t), "c"); err != nil {
			t.Fatal(err)
		}
		if ts := e.Configs.Snapshot().Connectors["c"].TargetState; ts != state.TargetStopped {
			t.Fatalf("target %s, want STOPPED", ts)
		}
	}
}

func TestRestartPlansAndRequests(t *testing.T) {
	e := controltest.NewEnv(t)
	if _, err := e.C.Restart(ctx(t), "c", true, false); code(err) != http.StatusNotFound {
		t.Fatalf("Restart of an unknown connector: %v, want 404", err)
	}
	if _, err := e.C.Create(ctx(t), "c", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	if err := e.Configs.PutTaskConfigs(ctx(t), "c", []map[string]string{{}, {}}); err != nil {
		t.Fatal(err)
	}
	e.Statuses.PutConnector("c", state.Status{State: state.StateRunning, WorkerID: "w1", Generation: 1})
	e.Statuses.PutTask(connectors.TaskID{Connector: "c", Task: 0}, state.Status{State: state.StateFailed, Trace: "boom", WorkerID: "w2", Generation: 1})
	e.Statuses.PutTask(connectors.TaskID{Connector: "c", Task: 1}, state.Status{State: state.StateRunning, WorkerID: "w1", Generation: 1})
	states := func(st control.ConnectorStatus) []string {
		out := []string{st.Connector.State}
		for _, ts := range st.Tasks {
			out = append(out, ts.State)
		}
		return out
	}
	for _, tc := range []struct {
		includeTasks, onlyFailed bool
		want                     []string
	}{
		{false, false, []string{"RESTARTING", "FAILED", "RUNNING"}},
		{true, false, []string{"RESTARTING", "RESTARTING", "RESTARTING"}},
		{true, true, []string{"RUNNING", "RESTARTING", "RUNNING"}},
		{false, true, []string{"RUNNING", "FAILED", "RUNNING"}},
	} {
		st, err := e.C.Restart(ctx(t), "c", tc.includeTasks, tc.onlyFailed)
		if err != nil {
			t.Fatal(err)
		}
		if got := states(st); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("includeTasks=%v onlyFailed=%v: states %v, want %v", tc.includeTasks, tc.onlyFailed, got, tc.want)
		}
		select {
		case r := <-e.Configs.Restarts():
			want := state.RestartRequest{Connector: "c", IncludeTasks: tc.includeTasks, OnlyFailed: tc.onlyFailed}
			if r != want {
				t.Errorf("restart record %+v, want %+v", r, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no restart record for includeTasks=%v onlyFailed=%v", tc.includeTasks, tc.onlyFailed)
		}
	}
}

func TestRestartTaskAsksTheWorkerThatRunsIt(t *testing.T) {
	e := controltest.NewEnv(t)
	type call struct {
		worker, connector string
		task              int
	}
	var calls []call
	runs, fail := true, error(nil)
	c, err := control.New(control.Options{
		Configs: e.Configs, Statuses: e.Statuses, Plugins: controltest.Registry(),
		RestartTask: func(_ context.Context, w, conn string, task int) (bool, error) {
			calls = append(calls, call{w, conn, task})
			return runs, fail
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RestartTask(ctx(t), "c", 0); code(err) != http.StatusNotFound {
		t.Fatalf("unknown connector: %v, want 404", err)
	}
	if _, err := c.Create(ctx(t), "c", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	if err := e.Configs.PutTaskConfigs(ctx(t), "c", []map[string]string{{}, {}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{2, -1} {
		if err := c.RestartTask(ctx(t), "c", id); code(err) != http.StatusNotFound {
			t.Errorf("task %d: %v, want 404", id, err)
		}
	}
	if err := c.RestartTask(ctx(t), "c", 1); code(err) != http.StatusConflict {
		t.Fatalf("unassigned task: %v, want 409", err)
	}
	e.Statuses.PutTask(connectors.TaskID{Connector: "c", Task: 1}, state.Status{State: state.StateFailed, WorkerID: "w2:8083", Generation: 1})
	if err := c.RestartTask(ctx(t), "c", 1); err != nil {
		t.Fatal(err)
	}
	if want := []call{{"w2:8083", "c", 1}}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	runs = false // the status is stale: the task moved on
	if err := c.RestartTask(ctx(t), "c", 1); code(err) != http.StatusConflict {
		t.Fatalf("task not on the worker its status names: %v, want 409", err)
	}
	runs, fail = true, errors.New("connection refused")
	if err := c.RestartTask(ctx(t), "c", 1); code(err) != http.StatusConflict || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("unreachable worker: %v, want 409 with the cause", err)
	}
	if err := e.C.RestartTask(ctx(t), "c", 1); code(err) != http.StatusNotImplemented {
		t.Fatalf("without a worker: %v, want 501", err)
	}
}
