package schemaregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
)

// testBroker is a broker for the test: the real one SLUICE_TEST_BOOTSTRAP
// names, or an embedded kfake, with a topic name no other run shares.
func testBroker(t *testing.T) ([]kgo.Opt, string) {
	t.Helper()
	topic := kafkatest.Unique("_schemas")
	if seeds := kafkatest.Bootstrap(); len(seeds) > 0 {
		return []kgo.Opt{kgo.SeedBrokers(seeds...)}, topic
	}
	_, opts := kafkatest.NewCluster(t)
	return opts, topic
}

// openRegistry opens a registry on the topic and serves it until the test
// ends (or until the returned stop is called).
func openRegistry(t *testing.T, opts []kgo.Opt, topic string) (*Registry, *httptest.Server, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := Open(ctx, Config{Kafka: opts, Topic: topic, Log: zerolog.Nop(), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r.Handler())
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			srv.Close()
			r.Close()
		}
	}
	t.Cleanup(stop)
	return r, srv, stop
}

// newTestRegistry is one registry on a fresh broker and topic.
func newTestRegistry(t *testing.T) *httptest.Server {
	t.Helper()
	opts, topic := testBroker(t)
	_, srv, _ := openRegistry(t, opts, topic)
	return srv
}

// answer is an HTTP answer: the status and the body.
type answer struct {
	status int
	body   string
}

func do(t *testing.T, srv *httptest.Server, method, path, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ContentType)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		t.Errorf("%s %s: Content-Type %q, want %q", method, path, ct, ContentType)
	}
	return answer{resp.StatusCode, string(b)}
}

// want checks an answer's status and, when wantBody is not empty, that its
// JSON equals wantBody's.
func (a answer) want(t *testing.T, what string, status int, wantBody string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: status %d, want %d (body %s)", what, a.status, status, a.body)
	}
	if wantBody != "" && !jsonEqual(a.body, wantBody) {
		t.Fatalf("%s: body %s, want %s", what, a.body, wantBody)
	}
}

// wantCode checks a Confluent error answer's status and error_code.
func (a answer) wantCode(t *testing.T, what string, status, code int) {
	t.Helper()
	var e struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(a.body), &e); err != nil || a.status != status || e.Code != code || e.Message == "" {
		t.Fatalf("%s: status %d body %s, want status %d error_code %d with a message", what, a.status, a.body, status, code)
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// body is a register/lookup body for schema of typ ("" for AVRO).
func body(typ, schema string, refs ...Reference) string {
	m := map[string]any{"schema": schema}
	if typ != "" {
		m["schemaType"] = typ
	}
	if len(refs) > 0 {
		m["references"] = refs
	}
	b, _ := json.Marshal(m)
	return string(b)
}
