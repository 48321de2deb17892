package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
)

func startWorker(t *testing.T, bootstrap string) *Worker {
	t.Helper()
	return startWorkerWith(t, Config{
		Cluster: "wt", Bootstrap: []string{bootstrap}, RESTAddr: "127.0.0.1:0",
		OffsetFlushInterval: 100 * time.Millisecond,
		Log:                 zerolog.Nop(),
	})
}

// startWorkerWith starts a worker with cfg, stopped when the test ends.
func startWorkerWith(t *testing.T, cfg Config) *Worker {
	t.Helper()
	w, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return w
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestWorkerRunsADatagenConnectorOverREST(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close) // after the worker stops: cleanups run last-in first-out
	w := startWorker(t, broker.ListenAddrs()[0])
	base := "http://" + w.RESTAddr()
	deadline := time.Now().Add(20 * time.Second)
	for !w.Ready() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := get(t, base+"/health"); code != 200 {
		t.Fatalf("health %d %s", code, body)
	}
	if _, body := get(t, base+"/"); !strings.Contains(body, `"kafka_cluster_id":"`) || strings.Contains(body, `"kafka_cluster_id":""`) {
		t.Fatalf("GET / %s: the Kafka cluster id is missing", body)
	}
	resp, err := http.Post(base+"/connectors", "application/json", strings.NewReader(`{"name":"gen","config":{
		"connector.class":"Datagen","topic":"gen","tasks.max":"2","max.records":"100",
		"value.converter.schemas.enable":"false"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	for time.Now().Before(deadline.Add(10 * time.Second)) {
		_, body := get(t, base+"/connectors/gen/status")
		var st struct {
			Connector struct{ State string }
			Tasks     []struct{ State string }
		}
		_ = json.Unmarshal([]byte(body), &st)
		if st.Connector.State == "RUNNING" && len(st.Tasks) == 2 && st.Tasks[0].State == "RUNNING" && st.Tasks[1].State == "RUNNING" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("connector and its two tasks never all RUNNING")
}

// An unreachable broker is retried; meanwhile the REST API answers 503 and
// the worker does not give up.
func TestWorkerAnswers503WhileKafkaIsUnreachable(t *testing.T) {
	w := startWorker(t, "127.0.0.1:1")
	time.Sleep(1500 * time.Millisecond)
	code, body := get(t, "http://"+w.RESTAddr()+"/health")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"status":"starting"`) ||
		!strings.Contains(body, "Kafka is unreachable") || !strings.Contains(body, "127.0.0.1:1") {
		t.Fatalf("health %d %s, want 503 starting, saying why", code, body)
	}
	select {
	case <-w.Done():
		t.Fatalf("worker gave up: %v", w.Err())
	default:
	}
}

func TestRuntimeKeysRefuseBadConverters(t *testing.T) {
	ce := checkRuntimeKeys(map[string]string{"value.converter": "Nope"}, nil)
	if ce == nil || !strings.Contains(fmt.Sprint(ce.Errors["value.converter"]), "Nope") {
		t.Fatalf("errors %v", ce)
	}
	if ce := checkRuntimeKeys(map[string]string{"value.converter": "StringConverter"}, nil); ce != nil {
		t.Fatalf("valid config refused: %v", ce)
	}
}

func TestConnectWorkerKeysApply(t *testing.T) {
	c := Config{Cluster: "x", Bootstrap: []string{"b"}, Props: map[string]string{
		"config.storage.topic": "my-configs", "offset.storage.partitions": "7",
		"status.storage.replication.factor": "1", "offset.flush.interval.ms": "250",
	}}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	if c.ConfigTopic != "my-configs" || c.OffsetsTopic != "x-offsets" || c.OffsetsPartitions != 7 || c.ReplicationFactor != 1 || c.OffsetFlushInterval != 250*time.Millisecond {
		t.Fatalf("config %+v", c)
	}
	bad := Config{Cluster: "x", Bootstrap: []string{"b"}, Props: map[string]string{"offset.storage.partitions": "many"}}
	if err := bad.defaults(); err == nil || !strings.Contains(err.Error(), "offset.storage.partitions") {
		t.Fatalf("bad key accepted: %v", err)
	}
	timing := Config{Cluster: "x", Bootstrap: []string{"b"}, Props: map[string]string{
		"session.timeout.ms": "30000", "heartbeat.interval.ms": "3000", "rebalance.timeout.ms": "120000"}}
	if err := timing.defaults(); err != nil {
		t.Fatal(err)
	}
	if timing.SessionTimeout != 30*time.Second || timing.HeartbeatInterval != 3*time.Second || timing.RebalanceTimeout != 2*time.Minute {
		t.Fatalf("group timing keys not applied: %+v", timing)
	}
}
