package rest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/rest"
)

// The body bound holds for every route, a chunked body (no length given)
// included, and is answered 413 with Connect's error body.
func TestMaxBody(t *testing.T) {
	env := controltest.NewEnv(t)
	ts := httptest.NewServer(rest.NewHandler(env.C, zerolog.Nop(), rest.WithMaxBody(300)))
	t.Cleanup(ts.Close)
	small := createBody("small", controltest.SourceConfig())
	if len(small) > 300 {
		t.Fatalf("the small body is %d bytes", len(small))
	}
	if r := do(t, "POST", ts.URL+"/connectors", small); r.code != 201 {
		t.Fatalf("a body within the bound: %d %s", r.code, r.body)
	}
	big := createBody("big", controltest.SourceConfig("pad", strings.Repeat("x", 300)))
	if msg := wantError(t, do(t, "POST", ts.URL+"/connectors", big), 413); !strings.Contains(msg, "exceeds 300 bytes") {
		t.Fatalf("message %q", msg)
	}
	// Chunked: the length is not known before reading.
	req, _ := http.NewRequest("PUT", ts.URL+"/connectors/c/config", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 413 {
		t.Fatalf("chunked large body: %d", res.StatusCode)
	}
	// A route that reads no body refuses a declared large one too.
	if r := do(t, "GET", ts.URL+"/connectors", big); r.code != 413 {
		t.Fatalf("GET with a large body: %d", r.code)
	}
}

func TestCORS(t *testing.T) {
	env := controltest.NewEnv(t)
	h := rest.NewCORS("https://ui.example.com, https://*.corp.example", "GET,PUT").Wrap(rest.NewHandler(env.C, zerolog.Nop()))
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)

	for _, tc := range []struct {
		name, method, origin, reqMethod, reqHeaders string
		code                                        int
		allowOrigin, allowMethods                   string
	}{
		{"simple from an allowed origin", "GET", "https://ui.example.com", "", "", 200, "https://ui.example.com", ""},
		{"wildcard origin", "GET", "https://a.corp.example", "", "", 200, "https://a.corp.example", ""},
		{"wildcard does not match the dot literally elsewhere", "GET", "https://a.corpxexample", "", "", 200, "", ""},
		{"other origin", "GET", "https://evil.example", "", "", 200, "", ""},
		{"no origin", "GET", "", "", "", 200, "", ""},
		{"preflight", "OPTIONS", "https://ui.example.com", "PUT", "content-type", 204, "https://ui.example.com", "GET,PUT"},
		{"preflight of a method not allowed", "OPTIONS", "https://ui.example.com", "DELETE", "", 204, "", ""},
		{"preflight with a header not allowed", "OPTIONS", "https://ui.example.com", "PUT", "X-Custom", 204, "", ""},
		{"preflight from another origin", "OPTIONS", "https://evil.example", "PUT", "", 405, "", ""},
	} {
		req, _ := http.NewRequest(tc.method, ts.URL+"/connectors", nil)
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.reqMethod != "" {
			req.Header.Set("Access-Control-Request-Method", tc.reqMethod)
		}
		if tc.reqHeaders != "" {
			req.Header.Set("Access-Control-Request-Headers", tc.reqHeaders)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.code || res.Header.Get("Access-Control-Allow-Origin") != tc.allowOrigin ||
			res.Header.Get("Access-Control-Allow-Methods") != tc.allowMethods {
			t.Errorf("%s: %d, Allow-Origin %q, Allow-Methods %q; want %d, %q, %q", tc.name, res.StatusCode,
				res.Header.Get("Access-Control-Allow-Origin"), res.Header.Get("Access-Control-Allow-Methods"), tc.code, tc.allowOrigin, tc.allowMethods)
		}
		if tc.allowOrigin != "" && res.Header.Get("Access-Control-Allow-Credentials") != "true" {
			t.Errorf("%s: no Access-Control-Allow-Credentials", tc.name)
		}
	}
	if rest.NewCORS(" ", "GET") != nil {
		t.Fatal("an empty access.control.allow.origin installed a CORS filter")
	}
	// "*" with the default methods.
	any := httptest.NewServer(rest.NewCORS("*", "").Wrap(rest.NewHandler(env.C, zerolog.Nop())))
	t.Cleanup(any.Close)
	req, _ := http.NewRequest("OPTIONS", any.URL+"/connectors", nil)
	req.Header.Set("Origin", "http://anything")
	req.Header.Set("Access-Control-Request-Method", "POST")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("Access-Control-Allow-Methods"); got != rest.DefaultCORSMethods {
		t.Fatalf("default methods %q", got)
	}
}

// FuzzHandler sends arbitrary methods, paths and bodies to the REST API:
// it must answer each with a status below 500 and, when it has a body,
// JSON. Its seeds run with the suite; `go test -fuzz FuzzHandler
// ./internal/rest/` runs longer.
func FuzzHandler(f *testing.F) {
	for _, s := range []struct{ method, path, body string }{
		{"POST", "/connectors", createBody("a", controltest.SourceConfig())},
		{"PUT", "/connectors/a/config", `{"connector.class": "TestSource", "topic": "t", "tasks.max": 2}`},
		{"PUT", "/connectors/a/config", `{"x": {"y": [1, null]}}`},
		{"PATCH", "/connectors/a/config", `{"topic": null}`},
		{"PUT", "/connector-plugins/TestSource/config/validate", `{"connector.class": "TestSource"}`},
		{"PATCH", "/connectors/a/offsets", `{"offsets": [{"partition": {}, "offset": null}]}`},
		{"PUT", "/admin/loggers/root", `{"level": "DEBUG"}`},
		{"GET", "/connectors?expand=status&expand=info", ""},
		{"GET", "/connectors/a%2Fb/tasks/-1/status", ""},
		{"POST", "/connectors/a/restart?includeTasks=maybe", ""},
		{"DELETE", "/connectors/%00", ""},
		{"GET", "//..//connectors/", ""},
	} {
		f.Add(s.method, s.path, s.body)
	}
	env := controltest.NewEnv(f)
	h := rest.NewHandler(env.C, zerolog.Nop())
	f.Fuzz(func(t *testing.T, method, path, body string) {
		req, err := http.NewRequest(method, "http://sluice"+path, strings.NewReader(body))
		if err != nil || !strings.HasPrefix(req.URL.Path, "/") {
			return // not a request a server could receive
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		// 501 and 503 are answers (a backend this test has not, a
		// worker not ready); 500 is a failure of the handler.
		if rec.Code == http.StatusInternalServerError {
			t.Fatalf("%s %s %q: %d %s", method, path, body, rec.Code, rec.Body.String())
		}
		if rec.Body.Len() > 0 && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s %q: %d answered non-JSON %q", method, path, body, rec.Code, rec.Body.String())
		}
	})
}
