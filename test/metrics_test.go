package test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sluice-io/sluice/internal/metrics/metricstest"
)

// TestMetricsFollowAFailover runs two worker processes; after a kill -9 of
// one, the survivor's /metrics shows the failover (sluice_rebalance_last_failover_seconds),
// one gossip member, the moved tasks RUNNING in its status gauges, and its
// write counters for them.
func TestMetricsFollowAFailover(t *testing.T) {
	c, ws := startWorkers(t, "metrics", 2)
	createOn(t, c.any(), "gen", map[string]string{
		"connector.class": "Datagen", "topic": c.topic("gen"), "tasks.max": "4", "records.per.second": "100",
		"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter.schemas.enable": "false",
	})
	c.placement("gen", 4, []string{"w1", "w2"}, func(p map[int]string) bool {
		n := 0
		for _, w := range p {
			if w == "w2" {
				n++
			}
		}
		return n > 0 // w2 runs some: the kill moves them
	})
	ws[1].Kill9()
	c.placement("gen", 4, []string{"w1"}, nil)

	url := "http://" + ws[0].rest + "/metrics"
	var got map[string]*dto.MetricFamily
	deadline := time.Now().Add(stateDeadline)
	for {
		var err error
		if got, err = metricstest.Scrape(httpClient, url, nil); err != nil {
			t.Fatal(err)
		}
		members, _ := metricstest.Value(got, "sluice_gossip_members", nil)
		_, failover := metricstest.Value(got, "sluice_rebalance_last_failover_seconds", nil)
		running := 0
		for task := range 4 {
			if v, _ := metricstest.Value(got, "kafka_connect_connector_task_status", map[string]string{
				"connector": "gen", "task": strconv.Itoa(task), "status": "running"}); v == 1 {
				running++
			}
		}
		if members == 1 && failover && running == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the kill: gossip members %v, failover time present %v, %d of 4 tasks running in the status gauges", members, failover, running)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if v, _ := metricstest.Value(got, "sluice_rebalance_last_failover_seconds", nil); v <= 0 || v > 10 {
		t.Errorf("failover took %v s by the metric; the tasks ran again within seconds", v)
	}
	if v, _ := metricstest.Value(got, "kafka_connect_worker_rebalance_completed_rebalances_total", nil); v < 2 {
		t.Errorf("completed rebalances %v, want the join and the failover", v)
	}
	if v, _ := metricstest.Value(got, "kafka_connect_worker_task_count", nil); v != 4 {
		t.Errorf("task count %v on the survivor, want 4", v)
	}
}

// sluice worker --metrics=false serves no /metrics.
func TestMetricsFlagOff(t *testing.T) {
	c := startCluster(t, "metricsoff")
	w := c.addWith("w1", []string{"--metrics=false"})
	if code, _ := mustSend(t, "GET", "http://"+w.rest+"/metrics", ""); code != http.StatusNotFound {
		t.Fatalf("GET /metrics with --metrics=false: %d, want 404", code)
	}
	if code, _ := mustSend(t, "GET", "http://"+w.rest+"/connectors", ""); code != http.StatusOK {
		t.Fatalf("GET /connectors with --metrics=false: %d, want 200", code)
	}
}
