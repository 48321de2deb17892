package rest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/rest"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/testutil"
)

type server struct {
	*controltest.Env
	url string
}

func newServer(t *testing.T) *server {
	t.Helper()
	env := controltest.NewEnv(t)
	ts := httptest.NewServer(rest.NewHandler(env.C, zerolog.Nop()))
	t.Cleanup(ts.Close)
	return &server{Env: env, url: ts.URL}
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("response is not JSON (%v): %s", err, r.body)
	}
	return v
}

func (r response) object(t *testing.T) map[string]any {
	t.Helper()
	m, ok := r.json(t).(map[string]any)
	if !ok {
		t.Fatalf("response is not a JSON object: %s", r.body)
	}
	return m
}

// do sends a request; a non-empty body is sent as application/json unless
// a Content-Type is given.
func do(t *testing.T, method, url, body string, header ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: res.StatusCode, header: res.Header, body: b}
}

// wantError checks Connect's error shape and returns the message.
func wantError(t *testing.T, r response, code int) string {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d; body %s", r.code, code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	m := r.object(t)
	if len(m) != 2 || m["error_code"] != float64(code) {
		t.Fatalf("error body %s, want {error_code: %d, message}", r.body, code)
	}
	msg, _ := m["message"].(string)
	if msg == "" {
		t.Fatalf("error body without message: %s", r.body)
	}
	return msg
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func createBody(name string, cfg map[string]string) string {
	return mustJSON(map[string]any{"name": name, "config": cfg})
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestRoot(t *testing.T) {
	s := newServer(t)
	r := do(t, "GET", s.url+"/", "")
	want := map[string]any{"version": "0.9.0", "commit": "abc123", "kafka_cluster_id": "kc-1"}
	if r.code != 200 || !reflect.DeepEqual(r.object(t), want) {
		t.Fatalf("GET / = %d %s", r.code, r.body)
	}
}

func TestHealth(t *testing.T) {
	s := newServer(t)
	r := do(t, "GET", s.url+"/health", "")
	if m := r.object(t); r.code != 200 || m["status"] != "healthy" || m["message"] == "" {
		t.Fatalf("ready: %d %s", r.code, r.body)
	}
	s.Ready.Set(false)
	r = do(t, "GET", s.url+"/health", "")
	if m := r.object(t); r.code != 503 || m["status"] != "starting" {
		t.Fatalf("starting: %d %s", r.code, r.body)
	}
	wantError(t, do(t, "GET", s.url+"/connectors", ""), 503)
}

func TestCreateAndRead(t *testing.T) {
	s := newServer(t)
	r := do(t, "POST", s.url+"/connectors", createBody("src", controltest.SourceConfig()))
	if r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if loc := r.header.Get("Location"); loc != "/connectors/src" {
		t.Errorf("Location %q", loc)
	}
	wantCfg := map[string]any{"connector.class": controltest.SourceClass, "topic": "out", "name": "src"}
	// The leader splits a connector as it creates it: its first task is
	// in the answer already.
	task0 := map[string]any{"connector": "src", "task": float64(0)}
	wantInfo := map[string]any{"name": "src", "config": wantCfg, "tasks": []any{task0}, "type": "source"}
	if got := r.object(t); !reflect.DeepEqual(got, wantInfo) {
		t.Fatalf("create body %s", r.body)
	}
	for path, want := range map[string]any{
		"/connectors":            []any{"src"},
		"/connectors/src":        wantInfo,
		"/connectors/src/config": wantCfg,
		"/connectors/src/tasks":  []any{map[string]any{"id": task0, "config": map[string]any{"task": "0"}}},
		"/connectors/src/status": map[string]any{
			"name":      "src",
			"connector": map[string]any{"state": "UNASSIGNED", "worker_id": ""},
			"tasks":     []any{map[string]any{"id": float64(0), "state": "UNASSIGNED", "worker_id": ""}},
			"type":      "source",
		},
	} {
		r := do(t, "GET", s.url+path, "")
		if r.code != 200 || !reflect.DeepEqual(r.json(t), want) {
			t.Errorf("GET %s = %d %s", path, r.code, r.body)
		}
	}
}

func TestCreateErrors(t *testing.T) {
	s := newServer(t)
	if r := do(t, "POST", s.url+"/connectors", createBody("dup", controltest.SourceConfig())); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	before := len(s.Configs.Calls())
	big := createBody("big", controltest.SourceConfig("pad", strings.Repeat("x", rest.MaxBodyBytes)))
	for _, tc := range []struct {
		name    string
		body    string
		header  []string
		code    int
		contain []string
	}{
		{"duplicate", createBody("dup", controltest.SourceConfig()), nil, 409, []string{"dup", "already exists"}},
		{"malformed", `{"name": "x", "config": {"a": }}`, nil, 400, []string{"line 1, column 31", "offset 30", "invalid character"}},
		{"malformed later line", "{\n  \"name\": \"x\",\n  \"config\": {\"a\" \"b\"}\n}", nil, 400, []string{"line 3, column 18"}},
		{"truncated", `{"name": "x", "config": {`, nil, 400, []string{"unexpected end of input", "offset 25"}},
		{"trailing data", `{"name": "x", "config": {}}  {}`, nil, 400, []string{"unexpected data after the JSON object", "column 30"}},
		{"not an object", `["x"]`, nil, 400, []string{"must be a JSON object", "array"}},
		{"empty body", ``, nil, 400, []string{"empty"}},
		{"missing config", `{"name": "x"}`, nil, 400, []string{`"config"`}},
		{"null config", `{"name": "x", "config": null}`, nil, 400, []string{`"config"`}},
		{"config is an array", `{"name": "x", "config": ["a"]}`, nil, 400, []string{`"config"`, "array"}},
		{"config is a string", `{"name": "x", "config": "topic=x"}`, nil, 400, []string{`"config"`, "string"}},
		{"config value is an object", `{"name": "x", "config": {"connector.class": "TestSource", "topic": {"a": 1}, "x": null}}`, nil, 400,
			[]string{`"topic" must be a string, not an object`, `"x" must be a string, not null`}},
		{"name not a string", `{"name": 5, "config": {}}`, nil, 400, []string{`"name"`}},
		{"missing connector.class", createBody("x", map[string]string{"topic": "t"}), nil, 400,
			[]string{"\nconnector.class: ", `Missing required configuration "connector.class"`}},
		{"unknown class", createBody("x", controltest.SourceConfig("connector.class", "FileStreamSorce")), nil, 400,
			[]string{"\nconnector.class: ", "FileStreamSorce", controltest.SourceClass, controltest.SinkClass}},
		{"several bad keys", createBody("x", controltest.SourceConfig("tasks.max", "0", "batch.size", "many", "errors.tolerance", "some", "value.converter", "Avro")), nil, 400,
			[]string{"4 error(s)", "\ntasks.max: ", "\nbatch.size: ", "\nerrors.tolerance: ", "\nvalue.converter: "}},
		{"bad name", createBody("a/b", controltest.SourceConfig()), nil, 400, []string{"\nname: ", "'/'"}},
		{"name with control character", createBody("a\tb", controltest.SourceConfig()), nil, 400, []string{"\nname: ", "control"}},
		{"name mismatch", createBody("x", controltest.SourceConfig("name", "y")), nil, 400, []string{"\nname: ", "doesn't match"}},
		{"bad initial state", `{"name": "x", "config": {"connector.class": "TestSource", "topic": "t"}, "initial_state": "SLEEPING"}`, nil, 400,
			[]string{"initial_state", "SLEEPING"}},
		{"wrong content type", createBody("x", controltest.SourceConfig()), []string{"Content-Type", "text/plain"}, 415, []string{"text/plain"}},
		{"form content type", "name=x", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, []string{"application/json"}},
		{"too large", big, nil, 413, []string{"exceeds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := wantError(t, do(t, "POST", s.url+"/connectors", tc.body, tc.header...), tc.code)
			for _, c := range tc.contain {
				if !strings.Contains(msg, c) {
					t.Errorf("message lacks %q:\n%s", c, msg)
				}
			}
		})
	}
	if calls := s.Configs.Calls(); len(calls) != before {
		t.Fatalf("refused requests wrote to the config topic: %+v", calls[before:])
	}
	if r := do(t, "GET", s.url+"/connectors", ""); !reflect.DeepEqual(r.json(t), []any{"dup"}) {
		t.Fatalf("connectors after refusals: %s", r.body)
	}
}

func TestCreateAccepts(t *testing.T) {
	s := newServer(t)
	for _, tc := range []struct {
		name, path, body, wantName string
		want                       state.TargetState
	}{
		// Connect coerces numbers and booleans to strings.
		{"numbers", "/connectors", `{"name": "n", "config": {"connector.class": "TestSource", "topic": "t", "tasks.max": 2, "errors.log.enable": true}}`, "n", state.TargetStarted},
		{"name from config", "/connectors", `{"config": {"name": "fromcfg", "connector.class": "TestSource", "topic": "t"}}`, "fromcfg", state.TargetStarted},
		{"trailing slash", "/connectors/", createBody("slash", controltest.SourceConfig()), "slash", state.TargetStarted},
		{"initial state", "/connectors", `{"name": "p", "config": {"connector.class": "TestSource", "topic": "t"}, "initial_state": "paused"}`, "p", state.TargetPaused},
		{"charset", "/connectors", createBody("cs", controltest.SourceConfig()), "cs", state.TargetStarted},
		// curl -d without -H sends no JSON type; a missing one is JSON.
		{"no content type", "/connectors", createBody("nct", controltest.SourceConfig()), "nct", state.TargetStarted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			switch tc.name {
			case "charset":
				hdr = []string{"Content-Type", "application/json; charset=utf-8"}
			case "no content type":
				hdr = []string{"Content-Type", ""}
			}
			r := do(t, "POST", s.url+tc.path, tc.body, hdr...)
			if r.code != 201 {
				t.Fatalf("%d %s", r.code, r.body)
			}
			conn := s.Configs.Snapshot().Connectors[tc.wantName]
			if conn == nil || conn.TargetState != tc.want {
				t.Fatalf("connector %q: %+v, want target %s", tc.wantName, conn, tc.want)
			}
		})
	}
	if cfg := s.Configs.Snapshot().Connectors["n"].Config; cfg["tasks.max"] != "2" || cfg["errors.log.enable"] != "true" {
		t.Fatalf("coerced config %v", cfg)
	}
}

func TestNameIsEscapedInURLs(t *testing.T) {
	s := newServer(t)
	r := do(t, "POST", s.url+"/connectors", createBody("my conn?#", controltest.SourceConfig()))
	if r.code != 201 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	loc := r.header.Get("Location")
	if loc != "/connectors/my%20conn%3F%23" {
		t.Fatalf("Location %q", loc)
	}
	if r := do(t, "GET", s.url+loc, ""); r.code != 200 || r.object(t)["name"] != "my conn?#" {
		t.Fatalf("GET Location: %d %s", r.code, r.body)
	}
}

func TestUnknownConnectorIs404(t *testing.T) {
	s := newServer(t)
	for _, req := range [][2]string{
		{"GET", "/connectors/nope"},
		{"GET", "/connectors/nope/config"},
		{"GET", "/connectors/nope/status"},
		{"GET", "/connectors/nope/tasks"},
		{"GET", "/connectors/nope/tasks/0/status"},
		{"DELETE", "/connectors/nope"},
		{"PUT", "/connectors/nope/pause"},
		{"PUT", "/connectors/nope/resume"},
	} {
		msg := wantError(t, do(t, req[0], s.url+req[1], ""), 404)
		if !strings.Contains(msg, "nope") {
			t.Errorf("%s %s: message %q does not name the connector", req[0], req[1], msg)
		}
	}
}

func TestTasksAndTaskStatus(t *testing.T) {
	s := newServer(t)
	if r := do(t, "POST", s.url+"/connectors", createBody("c", controltest.SourceConfig())); r.code != 201 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Configs.PutTaskConfigs(ctx, "c", []map[string]string{{"k": "v0"}, {"k": "v1"}}); err != nil {
		t.Fatal(err)
	}
	s.Statuses.PutTask(connectors.TaskID{Connector: "c", Task: 1}, state.Status{State: state.StateFailed, Trace: "trace", WorkerID: "w2", Generation: 3})

	r := do(t, "GET", s.url+"/connectors/c/tasks", "")
	want := []any{
		map[string]any{"id": map[string]any{"connector": "c", "task": float64(0)}, "config": map[string]any{"k": "v0"}},
		map[string]any{"id": map[string]any{"connector": "c", "task": float64(1)}, "config": map[string]any{"k": "v1"}},
	}
	if r.code != 200 || !reflect.DeepEqual(r.json(t), want) {
		t.Fatalf("tasks: %d %s", r.code, r.body)
	}
	r = do(t, "GET", s.url+"/connectors/c/tasks/1/status", "")
	if wantSt := map[string]any{"id": float64(1), "state": "FAILED", "worker_id": "w2", "trace": "trace"}; r.code != 200 || !reflect.DeepEqual(r.json(t), wantSt) {
		t.Fatalf("task 1 status: %d %s", r.code, r.body)
	}
	r = do(t, "GET", s.url+"/connectors/c/tasks/0/status", "")
	if wantSt := map[string]any{"id": float64(0), "state": "UNASSIGNED", "worker_id": ""}; r.code != 200 || !reflect.DeepEqual(r.json(t), wantSt) {
		t.Fatalf("task 0 status: %d %s", r.code, r.body)
	}
	for _, id := range []string{"2", "99", "-1", "abc"} {
		wantError(t, do(t, "GET", s.url+"/connectors/c/tasks/"+id+"/status", ""), 404)
	}
	r = do(t, "GET", s.url+"/connectors/c/info", "")
	wantError(t, r, 404)
	if st := do(t, "GET", s.url+"/connectors/c/status", "").object(t); len(st["tasks"].([]any)) != 2 {
		t.Fatalf("status: %v", st)
	}
}

func TestExpand(t *testing.T) {
	s := newServer(t)
	for _, n := range []string{"a", "b"} {
		if r := do(t, "POST", s.url+"/connectors", createBody(n, controltest.SourceConfig())); r.code != 201 {
			t.Fatalf("%d %s", r.code, r.body)
		}
	}
	r := do(t, "GET", s.url+"/connectors?expand=status&expand=info", "")
	m := r.object(t)
	if r.code != 200 || !reflect.DeepEqual(keysOf(m), []string{"a", "b"}) {
		t.Fatalf("%d %s", r.code, r.body)
	}
	for _, n := range []string{"a", "b"} {
		e := m[n].(map[string]any)
		if !reflect.DeepEqual(keysOf(e), []string{"info", "status"}) {
			t.Fatalf("%s: %v", n, e)
		}
		info, status := e["info"].(map[string]any), e["status"].(map[string]any)
		if info["name"] != n || info["type"] != "source" || info["config"].(map[string]any)["name"] != n {
			t.Errorf("%s info: %v", n, info)
		}
		if !reflect.DeepEqual(keysOf(status), []string{"connector", "name", "tasks", "type"}) || status["name"] != n {
			t.Errorf("%s status: %v", n, status)
		}
	}
	m = do(t, "GET", s.url+"/connectors?expand=status", "").object(t)
	if !reflect.DeepEqual(keysOf(m["a"].(map[string]any)), []string{"status"}) {
		t.Errorf("expand=status: %v", m)
	}
	// Connect ignores expansions it does not know, but still answers a map.
	m = do(t, "GET", s.url+"/connectors?expand=everything", "").object(t)
	if !reflect.DeepEqual(m, map[string]any{"a": map[string]any{}, "b": map[string]any{}}) {
		t.Errorf("expand=everything: %v", m)
	}
}

func TestPutConfig(t *testing.T) {
	s := newServer(t)
	r := do(t, "PUT", s.url+"/connectors/c/config", mustJSON(controltest.SourceConfig()))
	if r.code != 201 || r.header.Get("Location") != "/connectors/c" || r.object(t)["name"] != "c" {
		t.Fatalf("create: %d %v %s", r.code, r.header, r.body)
	}
	r = do(t, "PUT", s.url+"/connectors/c/config", mustJSON(controltest.SourceConfig("topic", "t2")))
	if r.code != 200 || r.object(t)["config"].(map[string]any)["topic"] != "t2" {
		t.Fatalf("update: %d %s", r.code, r.body)
	}
	if r.header.Get("Location") != "" {
		t.Errorf("update sent Location %q", r.header.Get("Location"))
	}
	msg := wantError(t, do(t, "PUT", s.url+"/connectors/c/config", mustJSON(controltest.SourceConfig("tasks.max", "-1", "mode", "sometimes"))), 400)
	for _, k := range []string{"\ntasks.max: ", "\nmode: "} {
		if !strings.Contains(msg, k) {
			t.Errorf("message lacks %q: %s", k, msg)
		}
	}
	wantError(t, do(t, "PUT", s.url+"/connectors/c/config", `[]`), 400)
	wantError(t, do(t, "PUT", s.url+"/connectors/c/config", `{"topic": [1]}`), 400)
	wantError(t, do(t, "PUT", s.url+"/connectors/c/config", `{"topic": `), 400)
	wantError(t, do(t, "PUT", s.url+"/connectors/a%2Fb/config", mustJSON(controltest.SourceConfig())), 400)
	if cfg := s.Configs.Snapshot().Connectors["c"].Config; cfg["topic"] != "t2" {
		t.Fatalf("refused updates changed the config: %v", cfg)
	}
}

func TestDelete(t *testing.T) {
	s := newServer(t)
	do(t, "POST", s.url+"/connectors", createBody("c", controltest.SourceConfig()))
	r := do(t, "DELETE", s.url+"/connectors/c", "")
	if r.code != 204 || len(r.body) != 0 {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	wantError(t, do(t, "GET", s.url+"/connectors/c", ""), 404)
	wantError(t, do(t, "DELETE", s.url+"/connectors/c", ""), 404)
	if r := do(t, "GET", s.url+"/connectors", ""); strings.TrimSpace(string(r.body)) != "[]" {
		t.Fatalf("no connectors: %s, want []", r.body)
	}
}

func TestPauseResume(t *testing.T) {
	s := newServer(t)
	do(t, "POST", s.url+"/connectors", `{"name": "c", "config": {"connector.class": "TestSource", "topic": "t"}, "initial_state": "STOPPED"}`)
	target := func() state.TargetState { return s.Configs.Snapshot().Connectors["c"].TargetState }
	for _, step := range []struct {
		path string
		want state.TargetState
	}{
		{"/connectors/c/pause", state.TargetPaused},
		{"/connectors/c/pause", state.TargetPaused},
		{"/connectors/c/resume", state.TargetStarted},
		{"/connectors/c/resume", state.TargetStarted},
	} {
		r := do(t, "PUT", s.url+step.path, "")
		if r.code != 202 || len(r.body) != 0 {
			t.Fatalf("PUT %s: %d %s", step.path, r.code, r.body)
		}
		if got := target(); got != step.want {
			t.Fatalf("after PUT %s: %s, want %s", step.path, got, step.want)
		}
	}
}

func TestUnknownPathAndMethod(t *testing.T) {
	s := newServer(t)
	for _, p := range []string{"/nope", "/connectors/c/bogus", "/connectors/c/tasks/0", "/connector-plugins/x"} {
		if msg := wantError(t, do(t, "GET", s.url+p, ""), 404); msg != "HTTP 404 Not Found" {
			t.Errorf("GET %s: %q", p, msg)
		}
	}
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", "/connectors", "GET, POST"},
		{"POST", "/connectors/c/status", "GET"},
		{"GET", "/connectors/c/pause", "PUT"},
		{"POST", "/connectors/c", "GET, DELETE"},
		{"GET", "/connector-plugins/x/config/validate", "PUT"},
	} {
		r := do(t, tc.method, s.url+tc.path, "")
		if msg := wantError(t, r, 405); msg != "HTTP 405 Method Not Allowed" {
			t.Errorf("%s %s: %q", tc.method, tc.path, msg)
		}
		if got := r.header.Get("Allow"); got != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
}

func TestPlugins(t *testing.T) {
	s := newServer(t)
	classes := func(r response) []string {
		var out []string
		for _, p := range r.json(t).([]any) {
			m := p.(map[string]any)
			if !reflect.DeepEqual(keysOf(m), []string{"class", "type", "version"}) {
				t.Fatalf("plugin entry %v", m)
			}
			out = append(out, m["class"].(string))
		}
		return out
	}
	only := classes(do(t, "GET", s.url+"/connector-plugins", ""))
	if !reflect.DeepEqual(only, []string{controltest.PanicClass, controltest.SinkClass, controltest.SourceClass}) {
		t.Errorf("connectors only: %v", only)
	}
	if got := classes(do(t, "GET", s.url+"/connector-plugins?connectorsOnly=true", "")); !reflect.DeepEqual(got, only) {
		t.Errorf("connectorsOnly=true: %v", got)
	}
	all := classes(do(t, "GET", s.url+"/connector-plugins?connectorsOnly=false", ""))
	// Two converters, a transformation and a predicate.
	if !slices.Contains(all, controltest.JSONConverter) || !slices.Contains(all, controltest.TransformClass) || len(all) != len(only)+4 {
		t.Errorf("all plugins: %v", all)
	}
	wantError(t, do(t, "GET", s.url+"/connector-plugins?connectorsOnly=maybe", ""), 400)
}

func TestPluginConfig(t *testing.T) {
	s := newServer(t)
	r := do(t, "GET", s.url+"/connector-plugins/TestSource/config", "")
	if r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	keys := r.json(t).([]any)
	first := keys[0].(map[string]any)
	want := []string{"default_value", "dependents", "display_name", "documentation", "group", "importance", "name", "order", "required", "type", "width"}
	last := keys[len(keys)-5].(map[string]any)
	if len(keys) <= 5 || first["name"] != "name" || last["name"] != "topic" || !reflect.DeepEqual(keysOf(first), want) {
		t.Fatalf("keys %s: want the runtime's keys from name on, then the plugin's from topic on", r.body)
	}
	msg := wantError(t, do(t, "GET", s.url+"/connector-plugins/com.example.Nope/config", ""), 404)
	if !strings.Contains(msg, controltest.SourceClass) {
		t.Errorf("unknown plugin message does not list the known ones: %s", msg)
	}
}

func TestValidateEndpoint(t *testing.T) {
	s := newServer(t)
	body := mustJSON(controltest.SourceConfig("name", "c", "tasks.max", "zero"))
	r := do(t, "PUT", s.url+"/connector-plugins/"+controltest.SourceClass+"/config/validate", body)
	if r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	m := r.object(t)
	if !reflect.DeepEqual(keysOf(m), []string{"configs", "error_count", "groups", "name"}) || m["name"] != controltest.SourceClass || m["error_count"] != float64(1) {
		t.Fatalf("validate: %s", r.body)
	}
	var tasksMax map[string]any
	for _, c := range m["configs"].([]any) {
		ci := c.(map[string]any)
		if !reflect.DeepEqual(keysOf(ci), []string{"definition", "value"}) {
			t.Fatalf("config entry %v", ci)
		}
		if v := ci["value"].(map[string]any); v["name"] == "tasks.max" {
			tasksMax = ci
		}
	}
	v := tasksMax["value"].(map[string]any)
	if !reflect.DeepEqual(keysOf(v), []string{"errors", "name", "recommended_values", "value", "visible"}) ||
		v["value"] != "zero" || len(v["errors"].([]any)) != 1 || v["visible"] != true {
		t.Fatalf("tasks.max value %v", v)
	}
	if d := tasksMax["definition"].(map[string]any); d["type"] != "INT" || d["default_value"] != "1" || d["group"] != "Common" {
		t.Fatalf("tasks.max definition %v", d)
	}
	wantError(t, do(t, "PUT", s.url+"/connector-plugins/Nope/config/validate", body), 400)
	wantError(t, do(t, "PUT", s.url+"/connector-plugins/TestSink/config/validate", body), 400)
	wantError(t, do(t, "PUT", s.url+"/connector-plugins/TestSource/config/validate", `{"a":`), 400)
}

func TestRequestsAreLoggedAtDebug(t *testing.T) {
	env := controltest.NewEnv(t)
	var buf testutil.LogBuffer
	ts := httptest.NewServer(rest.NewHandler(env.C, zerolog.New(&buf).Level(zerolog.DebugLevel)))
	defer ts.Close()
	do(t, "GET", ts.URL+"/connectors/nope", "")
	var entry map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(buf.String())), &entry); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	if entry["level"] != "debug" || entry["method"] != "GET" || entry["path"] != "/connectors/nope" ||
		entry["status"] != float64(404) || entry["duration"] == nil || entry["connector"] != "nope" || entry["task"] != nil {
		t.Fatalf("log entry %v", entry)
	}
	// A request about a task names the connector and the task, as every
	// line about them does.
	buf.Take()
	do(t, "GET", ts.URL+"/connectors/nope/tasks/3/status", "")
	if err := json.Unmarshal([]byte(strings.TrimSpace(buf.String())), &entry); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	if entry["connector"] != "nope" || entry["task"] != float64(3) {
		t.Fatalf("log entry %v", entry)
	}
}

// panicking fails inside the handler, as a bug would.
type panicking struct{ control.API }

func (panicking) Info(string) (control.ConnectorInfo, error) { panic("bug") }

func TestPanicIs500JSON(t *testing.T) {
	env := controltest.NewEnv(t)
	ts := httptest.NewServer(rest.NewHandler(panicking{env.C}, zerolog.Nop()))
	defer ts.Close()
	wantError(t, do(t, "GET", ts.URL+"/connectors/x", ""), 500)
	if r := do(t, "GET", ts.URL+"/connectors", ""); r.code != 200 {
		t.Fatalf("server unusable after a panic: %d", r.code)
	}
}
