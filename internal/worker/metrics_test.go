package worker

import (
	"context"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/builtin"
	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/internal/basicauth"
	"github.com/sluice-io/sluice/internal/metrics/metricstest"
)

// panicOnceSource is Datagen whose first task instance panics in its first
// poll: the supervisor must restart it, and sluice_task_restarts_total say so.
type panicOnceSource struct{ datagen.Connector }

var panicked atomic.Bool

func (c *panicOnceSource) NewTask() connectors.SourceTask { return &panicOnceTask{} }

type panicOnceTask struct{ datagen.Task }

func (t *panicOnceTask) Poll(ctx context.Context) ([]*connectors.SourceRecord, error) {
	if panicked.CompareAndSwap(false, true) {
		panic("panicOnceTask: the first poll panics")
	}
	return t.Task.Poll(ctx)
}

func metricsWorker(t *testing.T, disable bool) (*Worker, string) {
	t.Helper()
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	reg := builtin.Registry()
	reg.MustRegister(connectors.Plugin{Class: "test.PanicOnceSource", Type: connectors.Source, Version: "1",
		New: func() connectors.Connector { return &panicOnceSource{} }})
	w := startWorkerWith(t, Config{
		Cluster: "mt", Bootstrap: []string{broker.ListenAddrs()[0]}, RESTAddr: "127.0.0.1:0",
		OffsetFlushInterval: 100 * time.Millisecond, Registry: reg,
		RestartBackoffMin: 50 * time.Millisecond, RestartBackoffMax: 200 * time.Millisecond,
		DisableMetrics: disable, Log: zerolog.Nop(),
	})
	deadline := time.Now().Add(20 * time.Second)
	for !w.Ready() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !w.Ready() {
		t.Fatal("worker never ready")
	}
	return w, "http://" + w.RESTAddr()
}

func createConnector(t *testing.T, base, body string) {
	t.Helper()
	resp, err := http.Post(base+"/connectors", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
}

// TestMetricsWhileDatagenAndFileSinkRun scrapes /metrics while a Datagen
// source feeds a FileStream sink: every name of issue 14 is there with its
// labels and type, the counters grow, and a task that panicked shows its
// restart.
func TestMetricsWhileDatagenAndFileSinkRun(t *testing.T) {
	panicked.Store(false)
	w, base := metricsWorker(t, false)
	createConnector(t, base, `{"name":"gen","config":{"connector.class":"Datagen","topic":"gen","tasks.max":"1",
		"records.per.second":"500","value.converter.schemas.enable":"false"}}`)
	createConnector(t, base, `{"name":"file","config":{"connector.class":"FileStreamSink","topics":"gen",
		"file":"`+filepath.Join(t.TempDir(), "out.txt")+`","value.converter.schemas.enable":"false"}}`)
	createConnector(t, base, `{"name":"panicky","config":{"connector.class":"test.PanicOnceSource","topic":"p","tasks.max":"1",
		"records.per.second":"10","value.converter.schemas.enable":"false"}}`)

	want := maps.Clone(metricstest.Worker)
	maps.Copy(want, metricstest.Running)
	want["sluice_task_restarts_total"] = metricstest.Family{Type: dto.MetricType_COUNTER, Labels: []string{"connector", "task"}}
	want["sluice_gossip_members"] = metricstest.Family{Type: dto.MetricType_GAUGE}
	want["process_cpu_seconds_total"] = metricstest.Family{Type: dto.MetricType_COUNTER}

	gen := map[string]string{"connector": "gen", "task": "0"}
	file := map[string]string{"connector": "file", "task": "0"}
	var got map[string]*dto.MetricFamily
	var problems []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var err error
		if got, err = metricstest.Scrape(http.DefaultClient, base+"/metrics", nil); err != nil {
			t.Fatal(err)
		}
		problems = metricstest.Check(got, want)
		written, _ := metricstest.Value(got, "kafka_connect_source_task_source_record_write_total", gen)
		sent, _ := metricstest.Value(got, "kafka_connect_sink_task_sink_record_send_total", file)
		restarts, _ := metricstest.Value(got, "sluice_task_restarts_total", map[string]string{"connector": "panicky", "task": "0"})
		running, _ := metricstest.Value(got, "kafka_connect_connector_task_status", map[string]string{"connector": "file", "task": "0", "status": "running"})
		if len(problems) == 0 && written > 0 && sent > 0 && restarts >= 1 && running == 1 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, c := range []struct {
		name  string
		match map[string]string
	}{
		{"kafka_connect_source_task_source_record_write_total", gen},
		{"kafka_connect_sink_task_sink_record_send_total", file},
		{"sluice_task_restarts_total", map[string]string{"connector": "panicky", "task": "0"}},
		{"kafka_connect_worker_task_startup_attempts_total", nil},
		{"kafka_connect_worker_rebalance_completed_rebalances_total", nil},
	} {
		if v, ok := metricstest.Value(got, c.name, c.match); !ok || v <= 0 {
			t.Errorf("%s%v = %v (present %v), want > 0", c.name, c.match, v, ok)
		}
	}
	if v, _ := metricstest.Value(got, "kafka_connect_worker_connector_count", nil); v != 3 {
		t.Errorf("connector count %v, want 3", v)
	}
	if v, _ := metricstest.Value(got, "kafka_connect_worker_task_count", nil); v != 3 {
		t.Errorf("task count %v, want 3", v)
	}

	// Counters grow while the connectors run.
	before := map[string]float64{}
	grows := []struct {
		name  string
		match map[string]string
	}{
		{"kafka_connect_source_task_source_record_poll_total", gen},
		{"kafka_connect_source_task_source_record_write_total", gen},
		{"kafka_connect_sink_task_sink_record_read_total", file},
		{"kafka_connect_sink_task_sink_record_send_total", file},
		{"kafka_connect_sink_task_offset_commit_completion_total", file},
	}
	for _, g := range grows {
		before[g.name], _ = metricstest.Value(got, g.name, g.match)
	}
	time.Sleep(1500 * time.Millisecond)
	later, err := metricstest.Scrape(http.DefaultClient, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range grows {
		if v, _ := metricstest.Value(later, g.name, g.match); v <= before[g.name] {
			t.Errorf("%s did not grow: %v then %v", g.name, before[g.name], v)
		}
	}
	if v, _ := metricstest.Value(later, "kafka_connect_source_task_source_record_write_rate", gen); v <= 0 {
		t.Errorf("source write rate %v, want > 0 while Datagen runs at 500/s", v)
	}

	// TaskRates, for the dashboard, sees the same tasks.
	rates := w.Metrics().TaskRates()
	if len(rates) != 3 || rates[0].Connector != "file" || rates[0].Kind != "sink" || rates[1].Connector != "gen" || rates[1].Lag != -1 {
		t.Errorf("TaskRates = %+v, want file (sink), gen, panicky sorted", rates)
	}

	// OpenMetrics when asked.
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(strings.TrimSpace(string(body)), "# EOF") {
		t.Errorf("OpenMetrics asked: content type %q, body ends %q", ct, tail(string(body)))
	}
}

func tail(s string) string {
	if len(s) > 40 {
		return s[len(s)-40:]
	}
	return s
}

// With --metrics=false there is no /metrics and nothing is recorded.
func TestMetricsOff(t *testing.T) {
	w, base := metricsWorker(t, true)
	if code, _ := get(t, base+"/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics with metrics off: %d, want 404", code)
	}
	if w.Metrics() != nil || w.Metrics().TaskRates() != nil {
		t.Error("metrics off, yet a registry")
	}
}

// /metrics is behind the REST API's basic authentication: Prometheus
// scrapes it with the credentials of a REST user.
func TestMetricsNeedTheRESTCredentials(t *testing.T) {
	w := startWithProps(t, basicAuthProps(t, "prometheus", "scrape-secret"))
	main, _ := w.ListenerURLs()
	url := main[0] + "/metrics"
	if code := status(t, http.DefaultClient, url); code != http.StatusUnauthorized {
		t.Fatalf("GET /metrics without credentials: %d, want 401", code)
	}
	auth := http.Header{"Authorization": []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("prometheus:scrape-secret"))}}
	got, err := metricstest.Scrape(http.DefaultClient, url, auth)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range metricstest.Check(got, metricstest.Worker) {
		t.Error(p)
	}
}

// basicAuthProps are the worker keys of a REST API on an ephemeral http
// listener that asks for HTTP basic authentication, with one user.
func basicAuthProps(t *testing.T, user, password string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	users := filepath.Join(dir, "users.properties")
	if err := os.WriteFile(users, []byte(user+": "+password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	jaasPath := filepath.Join(dir, "connect.jaas")
	jaasText := "KafkaConnect {\n  " + basicauth.LoginModule + " required\n  file=\"" + users + "\";\n};\n"
	if err := os.WriteFile(jaasPath, []byte(jaasText), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"listeners": "http://127.0.0.1:0",
		basicauth.ExtensionsKey: basicauth.ExtensionClass, basicauth.JAASKey: jaasPath}
}
