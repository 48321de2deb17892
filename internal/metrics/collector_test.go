package metrics

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/metrics/metricstest"
)

type fakeMailbox int

func (f fakeMailbox) UserMessageCount() int { return int(f) }

// busyRegistry is a registry with a source and a sink task that did work,
// and a worker view with their statuses.
func busyRegistry(t *testing.T) (*Registry, *Task, *Task) {
	t.Helper()
	r, c := newTestRegistry()
	src := r.StartTask("gen", 0, KindSource)
	sink := r.StartTask("file", 0, KindSink)
	r.Running(Connector, 1)
	r.Running(TaskKind, 2)
	r.StartupAttempt(TaskKind)
	r.StartupResult(TaskKind, true)
	r.PeerGone()
	r.RebalanceStarted()
	c.advance(250 * time.Millisecond)
	r.RebalanceCompleted(3)
	r.TaskRestarted("gen", 0)
	r.WatchMailbox("pid-1", "worker", fakeMailbox(3))
	r.WatchMailbox("pid-2", "worker", fakeMailbox(1)) // a second instance: summed
	r.WatchMailbox("pid-3", "task:gen/0", fakeMailbox(9))
	r.ForgetMailbox("pid-3")
	r.SetView(WorkerView{WorkerID: "w1", GossipMembers: func() (int, bool) { return 2, true }, Statuses: func() []ConnectorStatus {
		return []ConnectorStatus{
			{Name: "gen", State: "RUNNING", WorkerID: "w1", Tasks: []TaskStatus{{ID: 0, State: "RUNNING", WorkerID: "w1"}, {ID: 1, State: "FAILED", WorkerID: "w2"}}},
			{Name: "file", State: "RUNNING", WorkerID: "w2", Tasks: []TaskStatus{{ID: 0, State: "PAUSED", WorkerID: "w1"}}},
		}
	}})
	src.Polled(10, 2*time.Millisecond)
	for i := 0; i < 7; i++ {
		src.Written(true)
	}
	src.OffsetCommit(4*time.Millisecond, true)
	src.OffsetCommit(8*time.Millisecond, false)
	sink.Assigned(3)
	sink.Read(5)
	sink.Put(5, 6*time.Millisecond)
	sink.Lag("in", 2, 11)
	sink.OffsetCommit(time.Millisecond, true)
	sink.RecordError(false)
	sink.Skipped()
	sink.DeadLetter(true)
	c.advance(2 * time.Second)
	return r, src, sink
}

func TestCollectorServesConnectNamesTypesAndLabels(t *testing.T) {
	r, _, _ := busyRegistry(t)
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	got, err := metricstest.Scrape(srv.Client(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(metricstest.Worker)
	maps.Copy(want, metricstest.Running)
	for _, p := range metricstest.Check(got, want) {
		t.Error(p)
	}
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"kafka_connect_source_task_source_record_poll_total", map[string]string{"connector": "gen"}, 10},
		{"kafka_connect_source_task_source_record_write_total", map[string]string{"connector": "gen"}, 7},
		{"kafka_connect_source_task_source_record_active_count", map[string]string{"connector": "gen"}, 3},
		{"kafka_connect_connector_task_offset_commit_success_percentage", map[string]string{"connector": "gen"}, 0.5},
		{"kafka_connect_connector_task_offset_commit_avg_time_ms", map[string]string{"connector": "gen"}, 6},
		{"kafka_connect_connector_task_offset_commit_max_time_ms", map[string]string{"connector": "gen"}, 8},
		{"kafka_connect_sink_task_sink_record_lag_max", map[string]string{"connector": "file"}, 11},
		{"sluice_sink_partition_lag", map[string]string{"topic": "in", "partition": "2"}, 11},
		{"kafka_connect_sink_task_offset_commit_completion_total", map[string]string{"connector": "file"}, 1},
		{"kafka_connect_task_error_total_records_skipped", map[string]string{"connector": "file"}, 1},
		{"kafka_connect_task_error_deadletterqueue_produce_requests", map[string]string{"connector": "file"}, 1},
		{"kafka_connect_sink_task_put_batch_avg_time_ms", map[string]string{"connector": "file"}, 6},
		{"kafka_connect_sink_task_partition_count", map[string]string{"connector": "file"}, 3},
		{"kafka_connect_connector_status", map[string]string{"connector": "gen", "status": "running"}, 1},
		{"kafka_connect_connector_task_status", map[string]string{"connector": "file", "task": "0", "status": "paused"}, 1},
		{"kafka_connect_worker_connector_paused_task_count", map[string]string{"connector": "file"}, 1},
		{"kafka_connect_worker_connector_total_task_count", map[string]string{"connector": "gen"}, 1},
		{"kafka_connect_worker_rebalance_epoch", nil, 3},
		{"kafka_connect_worker_rebalance_rebalance_avg_time_ms", nil, 250},
		{"kafka_connect_worker_rebalance_time_since_last_rebalance_ms", nil, 2000},
		{"kafka_connect_worker_task_count", nil, 2},
		{"sluice_task_restarts_total", map[string]string{"connector": "gen", "task": "0"}, 1},
		{"sluice_gossip_members", nil, 2},
		{"sluice_rebalance_last_failover_seconds", nil, 0.25},
		{"kafka_connect_worker_rebalance_rebalancing", nil, 0},
		{"kafka_connect_worker_rebalance_completed_rebalances_total", nil, 1},
		{"sluice_actor_mailbox_depth", map[string]string{"actor": "worker"}, 4},
	} {
		v, ok := metricstest.Value(got, c.name, c.match)
		if !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.match, v, ok, c.want)
		}
	}
	// Only what runs on this worker has a status: gen's task 1 is on w2,
	// and so is the file connector.
	if _, ok := metricstest.Value(got, "kafka_connect_connector_task_status", map[string]string{"connector": "gen", "task": "1"}); ok {
		t.Error("a task of another worker has a status series here")
	}
	if _, ok := metricstest.Value(got, "kafka_connect_connector_status", map[string]string{"connector": "file"}); ok {
		t.Error("a connector of another worker has a status series here")
	}
	// A sink task has no source metrics.
	if _, ok := metricstest.Value(got, "kafka_connect_source_task_source_record_poll_total", map[string]string{"connector": "file"}); ok {
		t.Error("the sink task has a source metric")
	}
}

func TestOpenMetricsByContentNegotiation(t *testing.T) {
	r, _, _ := busyRegistry(t)
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0; charset=utf-8")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("content type %q, want OpenMetrics", ct)
	}
	text := string(body)
	// OpenMetrics names a counter family without _total and ends with # EOF.
	for _, want := range []string{
		"# TYPE kafka_connect_source_task_source_record_poll counter",
		`kafka_connect_source_task_source_record_poll_total{connector="gen",task="0"} 10`,
		"# EOF",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("OpenMetrics output lacks %q", want)
		}
	}
}

func TestNoStatusesWithoutAView(t *testing.T) {
	srv := httptest.NewServer(NewRegistry().Handler())
	defer srv.Close()
	got, err := metricstest.Scrape(srv.Client(), srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range metricstest.Check(got, metricstest.Worker) {
		t.Error(p)
	}
	if v, _ := metricstest.Value(got, "kafka_connect_worker_rebalance_time_since_last_rebalance_ms", nil); v < 1e300 {
		t.Errorf("time since last rebalance before any = %v, want +Inf", v)
	}
	if _, ok := got["sluice_rebalance_last_failover_seconds"]; ok {
		t.Error("a failover time before any failover")
	}
}

func TestForgottenMailboxIsNotReported(t *testing.T) {
	r, _, _ := busyRegistry(t)
	got, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		if f.GetName() != "sluice_actor_mailbox_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == "task:gen/0" {
					t.Fatal("a forgotten mailbox is still reported")
				}
			}
		}
	}
}
