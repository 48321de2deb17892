package offsets

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/testutil"
	"github.com/sluice-io/sluice/internal/topics"
)

const offsetsTopic = "c-offsets"

func compacted() map[string]*string {
	return map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
}

func startStore(t *testing.T, opts []kgo.Opt) *SourceStore {
	t.Helper()
	s, err := NewSourceStore(opts, offsetsTopic)
	kafkatest.StartStore(t, testCtx(t), s, err)
	return s
}

func mustOffset(t *testing.T, s *SourceStore, connector string, partition map[string]any) map[string]any {
	t.Helper()
	off, err := s.Offset(connector, partition)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func TestSourceStoreRoundTrip(t *testing.T) {
	_, opts := kafkatest.NewCluster(t)
	kafkatest.CreateTopic(t, opts, offsetsTopic, 5, compacted())
	s := startStore(t, opts)

	fileA := map[string]any{"filename": "/data/a.txt"}
	fileB := map[string]any{"filename": "/data/b&c.txt"}
	err := s.Write(testCtx(t), "fs", []PartitionOffset{
		{Partition: fileA, Offset: map[string]any{"position": 30}},
		{Partition: fileB, Offset: map[string]any{"position": int64(1) << 53, "ratio": 0.5, "tag": "x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Read-your-writes: no waiting for the tailer.
	if got, want := mustOffset(t, s, "fs", fileA), map[string]any{"position": int64(30)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("offset of a: %#v, want %#v", got, want)
	}
	wantB := map[string]any{"position": int64(1) << 53, "ratio": 0.5, "tag": "x"}
	if got := mustOffset(t, s, "fs", fileB); !reflect.DeepEqual(got, wantB) {
		t.Fatalf("offset of b: %#v, want %#v", got, wantB)
	}
	if got := mustOffset(t, s, "other", fileA); got != nil {
		t.Fatalf("another connector's offset leaked: %v", got)
	}

	// Another worker reads the same from the topic.
	s2 := startStore(t, opts)
	got := s2.Offsets("fs")
	want := []PartitionOffset{
		{Partition: fileA, Offset: map[string]any{"position": int64(30)}},
		{Partition: fileB, Offset: wantB},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("second store Offsets: %#v, want %#v", got, want)
	}

	// A returned map is the caller's to change.
	got[0].Offset["position"] = int64(99)
	if off := mustOffset(t, s2, "fs", fileA); off["position"] != int64(30) {
		t.Fatalf("mutating a returned offset changed the store: %v", off)
	}

	// Tombstone.
	if err := s.Write(testCtx(t), "fs", []PartitionOffset{{Partition: fileA}}); err != nil {
		t.Fatal(err)
	}
	if off := mustOffset(t, s, "fs", fileA); off != nil {
		t.Fatalf("deleted offset still visible: %v", off)
	}
	if err := s2.t.WaitForEnd(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if off := mustOffset(t, s2, "fs", fileA); off != nil {
		t.Fatalf("second store still sees the deleted offset: %v", off)
	}
	if n := len(s2.Offsets("fs")); n != 1 {
		t.Fatalf("Offsets after delete lists %d partitions, want 1", n)
	}
	s3 := startStore(t, opts)
	if off := mustOffset(t, s3, "fs", fileA); off != nil {
		t.Fatalf("a fresh store sees the deleted offset: %v", off)
	}
}

// Kafka Connect writes keys with its map's field order; a lookup with any
// order finds them, and a new write replaces the same record key so that
// compaction and partitioning treat it as the same source partition.
func TestSourceStoreFindsConnectKey(t *testing.T) {
	_, opts := kafkatest.NewCluster(t)
	kafkatest.CreateTopic(t, opts, offsetsTopic, 5, compacted())
	prod := kafkatest.NewClient(t, opts)
	connectKey := []byte(`["jdbc",{"table":"users","db":"prod","shard":3}]`)
	kafkatest.Produce(t, prod, &kgo.Record{Topic: offsetsTopic, Key: connectKey, Value: []byte(`{"id":1234,"ts":1.5}`)})

	s := startStore(t, opts)
	part := map[string]any{"shard": 3, "db": "prod", "table": "users"}
	want := map[string]any{"id": int64(1234), "ts": 1.5}
	if got := mustOffset(t, s, "jdbc", part); !reflect.DeepEqual(got, want) {
		t.Fatalf("offset under a Connect key: %#v, want %#v", got, want)
	}

	if err := s.Write(testCtx(t), "jdbc", []PartitionOffset{{Partition: part, Offset: map[string]any{"id": 2000}}}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	tl, err := topics.NewTailer(opts, offsetsTopic, func(r *kgo.Record) { keys = append(keys, string(r.Key)) })
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if err := tl.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] != string(connectKey) || keys[1] != string(connectKey) {
		t.Fatalf("keys in the topic: %q, want Connect's key twice", keys)
	}

	// New partitions get the canonical key: sorted fields, compact, and
	// no HTML escaping (as Jackson writes it).
	if err := s.Write(testCtx(t), "jdbc", []PartitionOffset{{Partition: map[string]any{"z": "a&b", "a": 1}, Offset: map[string]any{"id": 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := tl.WaitForEnd(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := keys[len(keys)-1]; got != `["jdbc",{"a":1,"z":"a&b"}]` {
		t.Fatalf("canonical key %s", got)
	}
}

func TestSourceStoreSkipsUnreadableRecords(t *testing.T) {
	_, opts := kafkatest.NewCluster(t)
	kafkatest.CreateTopic(t, opts, offsetsTopic, 1, compacted())
	prod := kafkatest.NewClient(t, opts)
	kafkatest.Produce(t, prod,
		&kgo.Record{Topic: offsetsTopic, Key: []byte(`not json`), Value: []byte(`{"a":1}`)},
		&kgo.Record{Topic: offsetsTopic, Key: []byte(`["fs",{"f":"x"}]`), Value: []byte(`[1,2]`)},
		&kgo.Record{Topic: offsetsTopic, Key: []byte(`["fs"]`), Value: []byte(`{"a":1}`)},
		&kgo.Record{Topic: offsetsTopic, Key: []byte(`["fs",{"f":"y"}]`), Value: []byte(`{"position":7}`)},
	)
	var logs testutil.LogBuffer
	s, err := NewSourceStore(opts, offsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetLogger(zerolog.New(&logs))
	if err := s.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := s.Offsets("fs"); len(got) != 1 || got[0].Offset["position"] != int64(7) {
		t.Fatalf("Offsets: %#v", got)
	}
	if n := strings.Count(logs.String(), "skipping unreadable source offset record"); n != 3 {
		t.Fatalf("logged %d unreadable records, want 3:\n%s", n, logs.String())
	}
}

func TestSourceStoreSurvivesBrokerRestart(t *testing.T) {
	dir := t.TempDir()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	kafkatest.CreateTopic(t, opts, offsetsTopic, 3, compacted())
	s, err := NewSourceStore(opts, offsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	for pos := range 5 {
		if err := s.Write(testCtx(t), "fs", []PartitionOffset{
			{Partition: map[string]any{"filename": "a"}, Offset: map[string]any{"position": pos}},
			{Partition: map[string]any{"filename": "b"}, Offset: map[string]any{"position": pos * 10}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Write(testCtx(t), "fs", []PartitionOffset{{Partition: map[string]any{"filename": "b"}}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	c.Close()

	c2, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Compact()
	opts2 := []kgo.Opt{kgo.SeedBrokers(c2.ListenAddrs()...)}
	s2 := startStore(t, opts2)
	want := []PartitionOffset{{Partition: map[string]any{"filename": "a"}, Offset: map[string]any{"position": int64(4)}}}
	if got := s2.Offsets("fs"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after broker restart and compaction: %#v, want %#v", got, want)
	}
}

// Invariant 1: an offset Kafka did not acknowledge is never reported as
// committed; the write fails within its deadline and stays invisible.
func TestSourceStoreWriteHonoursDeadline(t *testing.T) {
	s, err := NewSourceStore([]kgo.Opt{kgo.SeedBrokers(testutil.ClosedAddr(t))}, offsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Write(ctx, "fs", []PartitionOffset{{Partition: map[string]any{"f": "a"}, Offset: map[string]any{"p": 1}}})
	if err == nil {
		t.Fatal("Write succeeded against a closed port")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Write took %v with a 500ms deadline", took)
	}
	if off := mustOffset(t, s, "fs", map[string]any{"f": "a"}); off != nil {
		t.Fatalf("a failed write is visible: %v", off)
	}
	sctx, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	if err := s.Start(sctx); err == nil || !strings.Contains(err.Error(), "source offsets") {
		t.Fatalf("Start against a closed port: %v", err)
	}
}

// The tailer may still be reading older records of a partition when a Write
// returns; they must not undo the write that Offset already shows.
func TestSourceStoreLaggingTailerDoesNotUndoWrite(t *testing.T) {
	_, opts := kafkatest.NewCluster(t)
	kafkatest.CreateTopic(t, opts, offsetsTopic, 3, compacted())
	s := startStore(t, opts)
	// Hold the tailer back so that it has not read the writes below.
	s.t.Client().PauseFetchTopics(offsetsTopic)
	part := map[string]any{"f": "a"}
	for pos := 1; pos <= 2; pos++ {
		if err := s.Write(testCtx(t), "fs", []PartitionOffset{{Partition: part, Offset: map[string]any{"position": pos}}}); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.RLock()
	e := *s.entries["fs"][`{"f":"a"}`]
	s.mu.RUnlock()
	s.apply(&kgo.Record{Topic: offsetsTopic, Key: e.rawKey, Value: []byte(`{"position":1}`), Partition: e.kpart, Offset: e.koff - 1})
	if off := mustOffset(t, s, "fs", part); off["position"] != int64(2) {
		t.Fatalf("an older record read late replaced the write: %v", off)
	}

	if err := s.Write(testCtx(t), "fs", []PartitionOffset{{Partition: part}}); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	e = *s.entries["fs"][`{"f":"a"}`]
	s.mu.RUnlock()
	s.apply(&kgo.Record{Topic: offsetsTopic, Key: e.rawKey, Value: []byte(`{"position":2}`), Partition: e.kpart, Offset: e.koff - 1})
	if off := mustOffset(t, s, "fs", part); off != nil {
		t.Fatalf("an older record read late undid a delete: %v", off)
	}
	s.t.Client().ResumeFetchTopics(offsetsTopic)
	if err := s.t.WaitForEnd(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	n := len(s.entries["fs"])
	s.mu.RUnlock()
	if n != 0 {
		t.Fatalf("delete marker kept after the tailer read the tombstone: %d entries", n)
	}
}
