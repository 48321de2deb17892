package ui

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/controlpb"
)

type fakeMembers struct {
	infos []*controlpb.WorkerInfo
	rates []*controlpb.TaskRates
	errs  []error
}

func (f fakeMembers) Workers(context.Context) ([]*controlpb.WorkerInfo, []error) {
	return f.infos, f.errs
}
func (f fakeMembers) TaskRates(context.Context) ([]*controlpb.TaskRates, []error) {
	return f.rates, f.errs
}

type fakeStatuses map[string]control.ConnectorStatus

func (f fakeStatuses) Connectors() ([]string, error) {
	names := []string{"src", "sink", "deleted"}
	return names, nil
}

func (f fakeStatuses) Status(name string) (control.ConnectorStatus, error) {
	st, ok := f[name]
	if !ok {
		return st, &control.Error{Code: http.StatusNotFound, Message: "Connector " + name + " not found"}
	}
	return st, nil
}

func cluster() (fakeMembers, fakeStatuses) {
	members := fakeMembers{
		infos: []*controlpb.WorkerInfo{
			{WorkerId: "w2", RestUrl: "http://w2", Generation: 4},
			{WorkerId: "w1", RestUrl: "http://w1", Generation: 4, Leader: true},
		},
		rates: []*controlpb.TaskRates{
			{WorkerId: "w1", Rates: []*controlpb.TaskRate{{Connector: "src", Task: 0, Kind: "source", RecordsPerSec: 12.5, Total: 300}}},
			{WorkerId: "w2", Rates: []*controlpb.TaskRate{{Connector: "sink", Task: 0, Kind: "sink", RecordsPerSec: 7, Total: 90, Lag: 42}}},
		},
		errs: []error{errors.New("worker at 127.0.0.1:9: timeout")},
	}
	statuses := fakeStatuses{
		"src": {Name: "src", Type: "source", Connector: control.StateInfo{State: "RUNNING", WorkerID: "w1"},
			Tasks: []control.TaskState{
				{ID: 0, State: "RUNNING", WorkerID: "w1"},
				// w3 was killed: the status topic still names it.
				{ID: 1, State: "RUNNING", WorkerID: "w3"},
			}},
		"sink": {Name: "sink", Type: "sink", Connector: control.StateInfo{State: "RUNNING", WorkerID: "w2"},
			Tasks: []control.TaskState{{ID: 0, State: "FAILED", WorkerID: "w2", Trace: "boom\n\tat here"}}},
	}
	return members, statuses
}

func TestBuildJoinsMembersStatusesAndRates(t *testing.T) {
	members, statuses := cluster()
	v, err := Build(t.Context(), "w1", members, statuses)
	if err != nil {
		t.Fatal(err)
	}
	if v.Worker != "w1" || len(v.Unreachable) != 1 {
		t.Fatalf("served_by %q, unreachable %v", v.Worker, v.Unreachable)
	}
	wantWorkers := []Worker{
		{ID: "w1", URL: "http://w1", Leader: true, Generation: 4, Alive: true},
		{ID: "w2", URL: "http://w2", Generation: 4, Alive: true},
		{ID: "w3"}, // gone, but its task still shows under it
	}
	if len(v.Workers) != len(wantWorkers) {
		t.Fatalf("workers %+v, want %+v", v.Workers, wantWorkers)
	}
	for i := range wantWorkers {
		if v.Workers[i] != wantWorkers[i] {
			t.Fatalf("worker %d: %+v, want %+v", i, v.Workers[i], wantWorkers[i])
		}
	}
	if len(v.Connectors) != 2 {
		t.Fatalf("connectors %+v: the deleted one must be left out", v.Connectors)
	}
	src, sink := v.Connectors[0], v.Connectors[1]
	if src.Name != "src" || sink.Name != "sink" {
		t.Fatalf("order %q %q, want the control plane's", src.Name, sink.Name)
	}
	if got := src.Tasks[0]; !got.Measured || got.RecordsPerSec != 12.5 || got.Total != 300 {
		t.Fatalf("src/0 %+v, want w1's rates", got)
	}
	if got := src.Tasks[1]; got.Measured || got.WorkerID != "w3" {
		t.Fatalf("src/1 %+v: its worker is gone, so it is not measured", got)
	}
	if got := sink.Tasks[0]; !got.Measured || got.Lag != 42 || got.State != "FAILED" || !strings.Contains(got.Trace, "boom") {
		t.Fatalf("sink/0 %+v, want w2's rates, the state and the trace", got)
	}
}

// Rates are matched by the worker that runs the task: a stale report from
// another worker (the task's previous home) is not taken for it.
func TestBuildTakesRatesOnlyFromTheTasksWorker(t *testing.T) {
	members, statuses := cluster()
	members.rates = []*controlpb.TaskRates{{WorkerId: "w2", Rates: []*controlpb.TaskRate{{Connector: "src", Task: 0, RecordsPerSec: 99}}}}
	v, err := Build(t.Context(), "w1", members, statuses)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Connectors[0].Tasks[0]; got.Measured {
		t.Fatalf("src/0 %+v took w2's rates, but runs on w1", got)
	}
}

type failingStatuses struct{}

func (failingStatuses) Connectors() ([]string, error) {
	return nil, &control.Error{Code: http.StatusServiceUnavailable, Message: "not in the group yet"}
}
func (failingStatuses) Status(string) (control.ConnectorStatus, error) {
	return control.ConnectorStatus{}, nil
}

func TestHandlerServesThePageAssetsAndState(t *testing.T) {
	members, statuses := cluster()
	srv := httptest.NewServer(Handler(func(ctx context.Context) (View, error) { return Build(ctx, "w1", members, statuses) }))
	defer srv.Close()
	for path, want := range map[string]string{
		"/ui":                  `<script src="/ui/assets/app.js">`,
		"/ui/assets/app.js":    "/ui/state",
		"/ui/assets/style.css": "[data-state=\"FAILED\"]",
	} {
		code, body, _ := fetch(t, srv.URL+path)
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("GET %s: %d, body without %q", path, code, want)
		}
	}
	code, body, ctype := fetch(t, srv.URL+"/ui/state")
	var v View
	if code != http.StatusOK || ctype != "application/json" || json.Unmarshal([]byte(body), &v) != nil || len(v.Connectors) != 2 {
		t.Fatalf("GET /ui/state: %d %s %s", code, ctype, body)
	}
	if code, _, _ := fetch(t, srv.URL+"/ui/assets/missing.js"); code != http.StatusNotFound {
		t.Fatalf("a missing asset: %d, want 404", code)
	}
}

// The page must not load anything from elsewhere: it works offline.
func TestPageLoadsNothingFromOtherOrigins(t *testing.T) {
	for _, name := range []string{"assets/index.html", "assets/app.js", "assets/style.css"} {
		b, err := assets.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"http://", "https://", "//cdn", "innerHTML"} {
			if strings.Contains(string(b), bad) {
				t.Fatalf("%s contains %q: the page must be self-contained and put cluster text in as text", name, bad)
			}
		}
	}
}

func TestStateAnswersTheControlPlanesError(t *testing.T) {
	members, _ := cluster()
	srv := httptest.NewServer(Handler(func(ctx context.Context) (View, error) { return Build(ctx, "w1", members, failingStatuses{}) }))
	defer srv.Close()
	code, body, _ := fetch(t, srv.URL+"/ui/state")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "not in the group yet") {
		t.Fatalf("GET /ui/state: %d %s, want 503 with the reason", code, body)
	}
}

func fetch(t *testing.T, url string) (int, string, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b), res.Header.Get("Content-Type")
}
