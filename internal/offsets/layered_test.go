package offsets_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/storetest"
)

// A connector with its own offsets topic (offsets.storage.topic), as
// Connect's ConnectorOffsetBackingStore: the offsets API reads the
// connector's topic over the worker's (offsets written before the
// connector had its own topic still count), writes both, and the
// connector's topic is created when missing.
func TestConnectorOwnOffsetsTopic(t *testing.T) {
	e := storetest.Start(t, "ownoffs")
	ctx := ctxFor(t)
	created := map[string]int{}
	stores := offsets.NewTopicStores(e.Opts, func(ctx context.Context, topic string) error {
		created[topic]++
		resp, err := e.Admin.CreateTopic(ctx, 3, -1, map[string]*string{"cleanup.policy": ptr("compact")}, topic)
		if err == nil {
			err = resp.Err
		}
		return err
	}, e.Log)
	t.Cleanup(stores.Close)
	co := offsets.NewConnectorOffsets(e.Offsets, stores, e.Admin)
	conn, own := kafkatest.Unique("fs"), kafkatest.Unique("fs-offsets")

	// Written before the connector had a topic of its own.
	if err := e.Offsets.Write(ctx, conn, []offsets.PartitionOffset{
		{Partition: map[string]any{"filename": "/old"}, Offset: map[string]any{"position": 1}},
		{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": 2}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := co.AlterSourceOffsets(ctx, conn, own, []offsets.PartitionOffset{
		{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": 30}},
	}); err != nil {
		t.Fatal(err)
	}
	want := []offsets.PartitionOffset{
		{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": int64(30)}},
		{Partition: map[string]any{"filename": "/old"}, Offset: map[string]any{"position": int64(1)}},
	}
	got, err := co.SourceOffsets(ctx, conn, own)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("offsets %v, %v; want %v", got, err, want)
	}
	ownStore, err := stores.Open(ctx, own)
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := ownStore.Offset(conn, map[string]any{"filename": "/a"}); off["position"] != int64(30) {
		t.Fatalf("the connector's topic holds %v for /a", off)
	}
	if off, _ := ownStore.Offset(conn, map[string]any{"filename": "/old"}); off != nil {
		t.Fatalf("the connector's topic holds %v for /old, which was never written there", off)
	}
	// The worker's topic has the write too.
	if off, _ := e.Offsets.Offset(conn, map[string]any{"filename": "/a"}); off["position"] != int64(30) {
		t.Fatalf("the worker's topic holds %v for /a", off)
	}
	if created[own] != 1 {
		t.Fatalf("the connector's topic was created %d times, want once", created[own])
	}

	// A reset empties both.
	if err := co.ResetSourceOffsets(ctx, conn, own); err != nil {
		t.Fatal(err)
	}
	if got, err := co.SourceOffsets(ctx, conn, own); err != nil || len(got) != 0 {
		t.Fatalf("after reset: %v, %v", got, err)
	}
	if got := e.Offsets.Offsets(conn); len(got) != 0 {
		t.Fatalf("the worker's topic keeps %v after reset", got)
	}
}

func ptr(s string) *string { return &s }
