package rest_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/state"
)

func TestPatchConfigEndpoint(t *testing.T) {
	s := newServer(t)
	wantError(t, do(t, "PATCH", s.url+"/connectors/c/config", `{"topic":"x"}`), 404)
	if r := do(t, "POST", s.url+"/connectors", createBody("c", controltest.SourceConfig("query", "q"))); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	r := do(t, "PATCH", s.url+"/connectors/c/config", `{"topic":"x","batch.size":5,"query":null}`)
	want := map[string]any{"connector.class": controltest.SourceClass, "topic": "x", "batch.size": "5", "name": "c"}
	if r.code != 200 || !reflect.DeepEqual(r.object(t)["config"], want) {
		t.Fatalf("PATCH = %d %s, want 200 with config %v", r.code, r.body, want)
	}
	msg := wantError(t, do(t, "PATCH", s.url+"/connectors/c/config", `{"batch.size":"0","topic":null}`), 400)
	if !strings.Contains(msg, "batch.size") || !strings.Contains(msg, "topic") {
		t.Fatalf("invalid patch message %q does not name batch.size and topic", msg)
	}
	wantError(t, do(t, "PATCH", s.url+"/connectors/c/config", `{"topic":`), 400)
	wantError(t, do(t, "PATCH", s.url+"/connectors/c/config", `{"topic":["a"]}`), 400)
}

func TestStopAndRestartEndpoints(t *testing.T) {
	s := newServer(t)
	wantError(t, do(t, "PUT", s.url+"/connectors/c/stop", ""), 404)
	wantError(t, do(t, "POST", s.url+"/connectors/c/restart", ""), 404)
	wantError(t, do(t, "POST", s.url+"/connectors/c/tasks/0/restart", ""), 404)
	if r := do(t, "POST", s.url+"/connectors", createBody("c", controltest.SourceConfig())); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if err := s.Configs.PutTaskConfigs(t.Context(), "c", []map[string]string{{}}); err != nil {
		t.Fatal(err)
	}
	s.Statuses.PutConnector("c", state.Status{State: state.StateRunning, WorkerID: "w1", Generation: 1})
	s.Statuses.PutTask(connectors.TaskID{Connector: "c", Task: 0}, state.Status{State: state.StateFailed, WorkerID: "w1", Generation: 1})

	if r := do(t, "POST", s.url+"/connectors/c/restart", ""); r.code != 204 || len(r.body) != 0 {
		t.Fatalf("plain restart: %d %s, want 204", r.code, r.body)
	}
	r := do(t, "POST", s.url+"/connectors/c/restart?includeTasks=true&onlyFailed=true", "")
	if r.code != 202 {
		t.Fatalf("restart includeTasks onlyFailed: %d %s, want 202", r.code, r.body)
	}
	body := r.object(t)
	if c := body["connector"].(map[string]any); c["state"] != "RUNNING" {
		t.Errorf("connector %v: it was not failed, so it does not restart", c)
	}
	if tasks := body["tasks"].([]any); len(tasks) != 1 || tasks[0].(map[string]any)["state"] != "RESTARTING" {
		t.Errorf("tasks %v, want task 0 RESTARTING", tasks)
	}
	wantError(t, do(t, "POST", s.url+"/connectors/c/restart?includeTasks=yes", ""), 400)
	wantError(t, do(t, "POST", s.url+"/connectors/c/tasks/1/restart", ""), 404)
	wantError(t, do(t, "POST", s.url+"/connectors/c/tasks/x/restart", ""), 404)

	if r := do(t, "PUT", s.url+"/connectors/c/stop", ""); r.code != 204 {
		t.Fatalf("stop: %d %s, want 204", r.code, r.body)
	}
	if ts := s.Configs.Snapshot().Connectors["c"].TargetState; ts != state.TargetStopped {
		t.Fatalf("target %s after stop", ts)
	}
}
