package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/internal/proctest"
)

// The embedded broker asks clients for no telemetry, as an Apache Kafka
// broker with no client-metrics subscription: it would discard it.
func TestBrokerAsksForNoTelemetry(t *testing.T) {
	addr := proctest.FreeAddr(t)
	b, err := startBroker(addr, filepath.Join(t.TempDir(), "kafka"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableClientMetrics())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.RequestedMetrics) != 0 || resp.PushIntervalMillis != 300000 || resp.ClientInstanceID == [16]byte{} {
		t.Fatalf("GetTelemetrySubscriptions: error %d, requested %q, push interval %d ms, client id %x; want no metrics requested, 300000 ms and an id",
			resp.ErrorCode, resp.RequestedMetrics, resp.PushIntervalMillis, resp.ClientInstanceID)
	}
}
