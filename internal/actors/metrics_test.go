package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/metrics"
	"github.com/sluice-io/sluice/internal/metrics/metricstest"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"

	dto "github.com/prometheus/client_model/go"
)

func newMetricsEnv(t *testing.T) (*env, *metrics.Registry) {
	t.Helper()
	reg := metrics.NewRegistry()
	e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, func(o *Options) { o.Metrics = reg })
	return e, reg
}

// gathered is the registry's families by name, as a scrape sees them.
func gathered(t *testing.T, reg *metrics.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// Under errors.tolerance=all with a dead letter queue, the sink's error
// metrics count each bad record once: an error, skipped, logged, one DLQ
// write; its read and send totals and the lag follow the records.
func TestSinkErrorAndRecordMetrics(t *testing.T) {
	e, reg := newMetricsEnv(t)
	topic := e.topic("mixed-metrics")
	good := produceMixed(t, e, topic)
	e.create("lenient", jsonSink("lenient", topic, map[string]string{
		"errors.tolerance":                  "all",
		"errors.log.enable":                 "true",
		"errors.deadletterqueue.topic.name": e.topic("lenient-dlq-metrics"),
	}))
	task := map[string]string{"connector": "lenient", "task": "0"}
	want := map[string]float64{
		"kafka_connect_sink_task_sink_record_read_total":            100,
		"kafka_connect_sink_task_sink_record_send_total":            float64(good),
		"kafka_connect_task_error_total_record_errors":              10,
		"kafka_connect_task_error_total_records_skipped":            10,
		"kafka_connect_task_error_total_errors_logged":              10,
		"kafka_connect_task_error_deadletterqueue_produce_requests": 10,
		"kafka_connect_task_error_deadletterqueue_produce_failures": 0,
		"kafka_connect_task_error_total_record_failures":            0,
		"kafka_connect_sink_task_sink_record_lag_max":               0,
		"kafka_connect_sink_task_partition_count":                   1,
	}
	testutil.Eventually(t, 20*time.Second, "the sink's metrics", func() error {
		got := gathered(t, reg)
		for name, w := range want {
			if v, ok := metricstest.Value(got, name, task); !ok || v != w {
				return fmt.Errorf("%s = %v (present %v), want %v", name, v, ok, w)
			}
		}
		if v, _ := metricstest.Value(got, "kafka_connect_sink_task_offset_commit_completion_total", task); v < 1 {
			return fmt.Errorf("no offset commit completed yet")
		}
		return nil
	})
}

// A record the converter cannot read under errors.tolerance=none is a
// failure; the supervisor's restart of the failed task is counted, and so
// is the failed start.
func TestSourceFailureAndRestartMetrics(t *testing.T) {
	e, reg := newMetricsEnv(t)
	// The test source emits string values; ByteArrayConverter takes only bytes.
	e.create("strict-src", map[string]string{"name": "strict-src", "connector.class": "test.TestSource", "topic": e.topic("unconvertible-metrics"),
		"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"})
	task := map[string]string{"connector": "strict-src", "task": "0"}
	testutil.Eventually(t, 20*time.Second, "a failure and a restart", func() error {
		got := gathered(t, reg)
		if v, _ := metricstest.Value(got, "sluice_task_restarts_total", task); v < 1 {
			return fmt.Errorf("restarts %v", v)
		}
		if v, _ := metricstest.Value(got, "kafka_connect_task_error_total_record_failures", task); v < 1 {
			return fmt.Errorf("record failures %v", v)
		}
		if v, _ := metricstest.Value(got, "kafka_connect_worker_task_startup_success_total", nil); v < 2 {
			return fmt.Errorf("task startups that succeeded %v, want the first and a restart", v)
		}
		return nil
	})
}

// Pausing a task moves its pause ratio off zero; the gate tells the
// recorder.
func TestPauseRatioFollowsTheTarget(t *testing.T) {
	e, reg := newMetricsEnv(t)
	e.create("pausing", withConv(map[string]string{"connector.class": "test.TestSource", "topic": e.topic("pausing-metrics")}))
	e.waitTaskState("pausing", 0, state.StateRunning)
	e.setTarget("pausing", state.TargetPaused)
	e.waitTaskState("pausing", 0, state.StatePaused)
	time.Sleep(300 * time.Millisecond)
	got := gathered(t, reg)
	task := map[string]string{"connector": "pausing", "task": "0"}
	paused, _ := metricstest.Value(got, "kafka_connect_connector_task_pause_ratio", task)
	running, _ := metricstest.Value(got, "kafka_connect_connector_task_running_ratio", task)
	if paused <= 0 || paused >= 1 || running+paused < 0.999 || running+paused > 1.001 {
		t.Fatalf("pause ratio %v, running ratio %v: want a paused share in (0,1), the two adding up to 1", paused, running)
	}
}
