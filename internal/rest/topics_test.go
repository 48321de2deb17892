package rest_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/rest"
	"github.com/sluice-io/sluice/internal/state"
)

// newTopicsServer serves a control.API whose topic tracking is the env's
// real status log, configured like a worker's.
func newTopicsServer(t *testing.T, tracking state.TopicTracking) *server {
	t.Helper()
	env := controltest.NewEnv(t)
	env.C = env.TopicsController(t, tracking)
	ts := httptest.NewServer(rest.NewHandler(env.C, zerolog.Nop()))
	t.Cleanup(ts.Close)
	return &server{Env: env, url: ts.URL}
}

func TestConnectorTopics(t *testing.T) {
	s := newTopicsServer(t, state.TopicTracking{Enabled: true, AllowReset: true})
	if r := do(t, "POST", s.url+"/connectors", createBody("my src", controltest.SourceConfig())); r.code != 201 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	base := s.url + "/connectors/my%20src/topics"
	r := do(t, "GET", base, "")
	if r.code != 200 || strings.TrimSpace(string(r.body)) != `{"my src":{"topics":[]}}` {
		t.Fatalf("before any use: %d %s", r.code, r.body)
	}
	s.Statuses.RecordActiveTopic("my src", 1, "orders")
	s.Statuses.RecordActiveTopic("my src", 0, "inventory")
	r = do(t, "GET", base, "")
	if r.code != 200 || strings.TrimSpace(string(r.body)) != `{"my src":{"topics":["inventory","orders"]}}` {
		t.Fatalf("%d %s", r.code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if r := do(t, "GET", base+"/", ""); r.code != 200 {
		t.Fatalf("with a trailing slash: %d %s", r.code, r.body)
	}

	r = do(t, "PUT", base+"/reset", "")
	if r.code != 202 || len(r.body) != 0 {
		t.Fatalf("reset: %d %q, want 202 without a body", r.code, r.body)
	}
	r = do(t, "GET", base, "")
	if r.code != 200 || strings.TrimSpace(string(r.body)) != `{"my src":{"topics":[]}}` {
		t.Fatalf("after the reset: %d %s", r.code, r.body)
	}

	for _, req := range [][2]string{{"GET", "/connectors/nope/topics"}, {"PUT", "/connectors/nope/topics/reset"}} {
		if msg := wantError(t, do(t, req[0], s.url+req[1], ""), 404); !strings.Contains(msg, "nope") {
			t.Errorf("%s %s: %q does not name the connector", req[0], req[1], msg)
		}
	}
	r = do(t, "POST", base, "")
	wantError(t, r, 405)
	if allow := r.header.Get("Allow"); allow != "GET" {
		t.Errorf("Allow %q", allow)
	}
	r = do(t, "GET", base+"/reset", "")
	wantError(t, r, 405)
	if allow := r.header.Get("Allow"); allow != "PUT" {
		t.Errorf("Allow %q", allow)
	}
}

func TestConnectorTopicsDisabled(t *testing.T) {
	s := newTopicsServer(t, state.TopicTracking{Enabled: false, AllowReset: true})
	if r := do(t, "POST", s.url+"/connectors", createBody("src", controltest.SourceConfig())); r.code != 201 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	for _, req := range [][2]string{{"GET", "/connectors/src/topics"}, {"PUT", "/connectors/src/topics/reset"}} {
		if msg := wantError(t, do(t, req[0], s.url+req[1], ""), 403); msg != "Topic tracking is disabled." {
			t.Errorf("%s %s: message %q", req[0], req[1], msg)
		}
	}

	s.Statuses.SetTopicTracking(state.TopicTracking{Enabled: true, AllowReset: false})
	s.Statuses.RecordActiveTopic("src", 0, "t")
	if msg := wantError(t, do(t, "PUT", s.url+"/connectors/src/topics/reset", ""), 403); msg != "Topic tracking reset is disabled." {
		t.Errorf("reset disallowed: message %q", msg)
	}
	if r := do(t, "GET", s.url+"/connectors/src/topics", ""); r.code != 200 || strings.TrimSpace(string(r.body)) != `{"src":{"topics":["t"]}}` {
		t.Fatalf("reset disallowed, GET: %d %s", r.code, r.body)
	}
}
