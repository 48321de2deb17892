package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice"
)

// The binary's worker runs Counter, created over REST like any connector,
// and its numbers reach Kafka.
func TestCustomBinaryRunsCounter(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close() // after the worker stopped
	w, err := start(sluice.Config{Cluster: "custom", Bootstrap: broker.ListenAddrs(), RESTAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	base := "http://" + w.RESTAddr()
	deadline := time.Now().Add(8 * time.Second)
	for !w.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("worker not ready")
		}
		time.Sleep(20 * time.Millisecond)
	}

	resp, err := http.Post(base+"/connectors", "application/json", strings.NewReader(
		`{"name": "count", "config": {"connector.class": "Counter", "topic": "numbers", "to": "50"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /connectors: %s", resp.Status)
	}
	for {
		var st struct {
			Connector struct{ State string }
			Tasks     []struct{ State, Trace string }
		}
		if resp, err := http.Get(base + "/connectors/count/status"); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		if st.Connector.State == "RUNNING" && len(st.Tasks) == 1 && st.Tasks[0].State == "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Counter and its task not RUNNING: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for {
		ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), "numbers")
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		if err == nil && n == 50 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 50 numbers never all reached the topic: %v %v", ends, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
