package rest_test

import (
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/loglevel"
	"github.com/sluice-io/sluice/internal/rest"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/testutil"
)

type levelsServer struct {
	url     string
	backend *controltest.LoggersBackend
	log     *testutil.LogBuffer
}

// newLevelsServer serves the REST API as a worker does: the handler's own
// logger comes from the registry whose levels the API changes.
func newLevelsServer(t *testing.T) *levelsServer {
	t.Helper()
	env := controltest.NewEnv(t)
	var buf testutil.LogBuffer
	clock := time.UnixMilli(1700000000123)
	reg := loglevel.New(zerolog.New(&buf), loglevel.Options{Root: zerolog.InfoLevel, Now: func() time.Time { return clock }})
	c, b := env.LoggersController(t, reg)
	ts := httptest.NewServer(rest.NewHandler(c, reg.Logger(loglevel.REST)))
	t.Cleanup(ts.Close)
	return &levelsServer{url: ts.URL, backend: b, log: &buf}
}

func TestLoggersGet(t *testing.T) {
	s := newLevelsServer(t)
	for _, path := range []string{"/admin/loggers", "/admin/loggers/"} {
		r := do(t, "GET", s.url+path, "")
		if r.code != 200 || strings.TrimSpace(string(r.body)) != `{"root":{"level":"INFO","last_modified":null}}` {
			t.Fatalf("GET %s: %d %s", path, r.code, r.body)
		}
	}
	r := do(t, "GET", s.url+"/admin/loggers/sluice.rest", "")
	if r.code != 200 || strings.TrimSpace(string(r.body)) != `{"level":"INFO","last_modified":null}` {
		t.Fatalf("GET a logger in use: %d %s", r.code, r.body)
	}
	if msg := wantError(t, do(t, "GET", s.url+"/admin/loggers/no.such", ""), 404); msg != "Logger no.such not found." {
		t.Fatalf("unknown logger: %q, want Connect's message", msg)
	}
}

// A PUT reaches loggers in use: here the REST handler's own, created
// before, which logs each request at DEBUG.
func TestLoggersPutWorkerScope(t *testing.T) {
	s := newLevelsServer(t)
	do(t, "GET", s.url+"/connectors", "")
	if strings.Contains(s.log.String(), `"level":"debug"`) {
		t.Fatalf("debug logged at INFO: %s", s.log.String())
	}

	r := do(t, "PUT", s.url+"/admin/loggers/sluice", `{"level":"debug"}`)
	if r.code != 200 || !reflect.DeepEqual(r.json(t), []any{"sluice", "sluice.rest"}) {
		t.Fatalf("PUT: %d %s; want 200 [\"sluice\",\"sluice.rest\"]", r.code, r.body)
	}
	do(t, "GET", s.url+"/connectors", "")
	if !strings.Contains(s.log.String(), `"level":"debug","logger":"sluice.rest","method":"GET","path":"/connectors"`) {
		t.Fatalf("the handler's logger did not follow the new level:\n%s", s.log.String())
	}

	r = do(t, "GET", s.url+"/admin/loggers/sluice.rest", "")
	if r.code != 200 || strings.TrimSpace(string(r.body)) != `{"level":"DEBUG","last_modified":1700000000123}` {
		t.Fatalf("GET after PUT: %d %s", r.code, r.body)
	}
	all := do(t, "GET", s.url+"/admin/loggers", "").object(t)
	if len(all) != 3 || all["sluice"] == nil || all["sluice.rest"] == nil {
		t.Fatalf("GET /admin/loggers after PUT: %v", all)
	}

	// An unknown scope is worker, with a warning, as in Connect.
	r = do(t, "PUT", s.url+"/admin/loggers/sluice.rest?scope=galaxy", `{"level":"WARN"}`)
	if r.code != 200 || !reflect.DeepEqual(r.json(t), []any{"sluice.rest"}) {
		t.Fatalf("PUT scope=galaxy: %d %s", r.code, r.body)
	}
	if !strings.Contains(s.log.String(), `"scope":"galaxy"`) {
		t.Fatalf("no warning about the scope:\n%s", s.log.String())
	}
	if w := s.backend.Written(); len(w) != 0 {
		t.Fatalf("worker scope wrote to the config topic: %v", w)
	}
}

func TestLoggersPutClusterScope(t *testing.T) {
	s := newLevelsServer(t)
	r := do(t, "PUT", s.url+"/admin/loggers/sluice.actors?scope=cluster", `{"level":"trace"}`)
	if r.code != 204 || len(r.body) != 0 {
		t.Fatalf("PUT scope=cluster: %d %q; want 204 without a body", r.code, r.body)
	}
	if w := s.backend.Written(); !reflect.DeepEqual(w, []state.LoggerLevel{{Namespace: "sluice.actors", Level: "TRACE"}}) {
		t.Fatalf("written %v", w)
	}
	r = do(t, "GET", s.url+"/admin/loggers/sluice.actors", "")
	if r.code != 200 || r.object(t)["level"] != "TRACE" {
		t.Fatalf("this worker after the cluster-wide write: %d %s", r.code, r.body)
	}
}

func TestLoggersPutBadRequests(t *testing.T) {
	s := newLevelsServer(t)
	for _, tc := range []struct{ body, want string }{
		{``, "empty"},
		{`{}`, "'level'"},
		{`{"level":null}`, "'level'"},
		{`{"level":5}`, `"level"`},
		{`{"level":`, "Malformed JSON"},
		{`["DEBUG"]`, "JSON object"},
	} {
		msg := wantError(t, do(t, "PUT", s.url+"/admin/loggers/x", tc.body), 400)
		if !strings.Contains(msg, tc.want) {
			t.Errorf("body %q: message %q does not mention %s", tc.body, msg, tc.want)
		}
	}
	// Connect answers an unknown level with 404.
	for _, scope := range []string{"", "?scope=cluster"} {
		msg := wantError(t, do(t, "PUT", s.url+"/admin/loggers/x"+scope, `{"level":"LOUD"}`), 404)
		if !strings.Contains(msg, `invalid log level 'LOUD' in field "level"`) {
			t.Errorf("unknown level: message %q", msg)
		}
	}
	if w := s.backend.Written(); len(w) != 0 {
		t.Fatalf("a refused request was written: %v", w)
	}
	if all := do(t, "GET", s.url+"/admin/loggers", "").object(t); len(all) != 1 {
		t.Fatalf("a refused request changed levels: %v", all)
	}
	wantError(t, do(t, "POST", s.url+"/admin/loggers/x", `{"level":"INFO"}`), 405)
}

func TestLoggersWithoutBackend(t *testing.T) {
	s := newServer(t)
	if r := do(t, "GET", s.url+"/admin/loggers", ""); r.code != 200 || strings.TrimSpace(string(r.body)) != "{}" {
		t.Fatalf("GET /admin/loggers: %d %s, want 200 {}", r.code, r.body)
	}
	wantError(t, do(t, "GET", s.url+"/admin/loggers/root", ""), 501)
	wantError(t, do(t, "PUT", s.url+"/admin/loggers/x", `{"level":"INFO"}`), 501)
}
