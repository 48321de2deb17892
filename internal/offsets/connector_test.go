package offsets_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

func ctxFor(t *testing.T) context.Context { return testutil.Context(t, 30*time.Second) }

// must returns v, failing the test on err.
func must[T any](t *testing.T, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// startOffsets starts the stores of a worker and returns them with the
// connector offsets API over them.
func startOffsets(t *testing.T, prefix string) (*storetest.Env, *offsets.ConnectorOffsets) {
	t.Helper()
	e := storetest.Start(t, prefix)
	return e, offsets.NewConnectorOffsets(e.Offsets, nil, e.Admin)
}

func i64(v int64) *int64 { return &v }

func sourceOffsets(t *testing.T, co *offsets.ConnectorOffsets, connector string) []offsets.PartitionOffset {
	t.Helper()
	got, err := co.SourceOffsets(ctxFor(t), connector, "")
	return must(t, got, err)
}

func TestSourceAlterThenListThenReset(t *testing.T) {
	e, co := startOffsets(t, "srcoffs")
	conn, other := kafkatest.Unique("fs"), kafkatest.Unique("other")
	ctx := ctxFor(t)

	if got := sourceOffsets(t, co, conn); len(got) != 0 {
		t.Fatalf("offsets before any write: %v", got)
	}
	if err := co.AlterSourceOffsets(ctx, other, "", []offsets.PartitionOffset{
		{Partition: map[string]any{"filename": "/other"}, Offset: map[string]any{"position": 1}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := co.AlterSourceOffsets(ctx, conn, "", []offsets.PartitionOffset{
		{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": 30}},
		{Partition: map[string]any{"filename": "/b"}, Offset: map[string]any{"position": int64(1) << 60, "eof": true}},
	}); err != nil {
		t.Fatal(err)
	}
	want := []offsets.PartitionOffset{
		{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": int64(30)}},
		{Partition: map[string]any{"filename": "/b"}, Offset: map[string]any{"position": int64(1) << 60, "eof": true}},
	}
	if got := sourceOffsets(t, co, conn); !reflect.DeepEqual(got, want) {
		t.Fatalf("after alter: %v, want %v", got, want)
	}

	// A null offset deletes that partition only.
	if err := co.AlterSourceOffsets(ctx, conn, "", []offsets.PartitionOffset{
		{Partition: map[string]any{"filename": "/a"}},
		{Partition: map[string]any{"filename": "/b"}, Offset: map[string]any{"position": 7}},
	}); err != nil {
		t.Fatal(err)
	}
	want = []offsets.PartitionOffset{{Partition: map[string]any{"filename": "/b"}, Offset: map[string]any{"position": int64(7)}}}
	if got := sourceOffsets(t, co, conn); !reflect.DeepEqual(got, want) {
		t.Fatalf("after deleting /a: %v, want %v", got, want)
	}

	// A worker that starts now reads the same from the topic: the
	// changes are records, not just this store's view.
	fresh, err := offsets.NewSourceStore(e.Opts, e.Prefix+"-offsets")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fresh.Close)
	if err := fresh.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fresh.Offsets(conn); !reflect.DeepEqual(got, want) {
		t.Fatalf("a fresh store reads %v, want %v", got, want)
	}

	if err := co.ResetSourceOffsets(ctx, conn, ""); err != nil {
		t.Fatal(err)
	}
	if got := sourceOffsets(t, co, conn); len(got) != 0 {
		t.Fatalf("after reset: %v", got)
	}
	// Resetting again is not an error, and other connectors keep theirs.
	if err := co.ResetSourceOffsets(ctx, conn, ""); err != nil {
		t.Fatal(err)
	}
	if got := sourceOffsets(t, co, other); len(got) != 1 {
		t.Fatalf("reset touched another connector: %v", got)
	}
	freshCo := offsets.NewConnectorOffsets(fresh, nil, e.Admin)
	if got := sourceOffsets(t, freshCo, conn); len(got) != 0 {
		t.Fatalf("the fresh store still sees %v after the reset", got)
	}
}

// TestSourceOffsetsReadOtherWorkersWrites: a GET answered by one worker
// shows what another worker wrote just before.
func TestSourceOffsetsReadOtherWorkersWrites(t *testing.T) {
	e := storetest.Start(t, "srcread")
	conn := kafkatest.Unique("fs")
	other, err := offsets.NewSourceStore(e.Opts, e.Prefix+"-offsets")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	ctx := ctxFor(t)
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	co := offsets.NewConnectorOffsets(e.Offsets, nil, e.Admin)
	for i := 1; i <= 5; i++ {
		if err := other.Write(ctx, conn, []offsets.PartitionOffset{
			{Partition: map[string]any{"p": 0}, Offset: map[string]any{"n": i}},
		}); err != nil {
			t.Fatal(err)
		}
		got := sourceOffsets(t, co, conn)
		if len(got) != 1 || got[0].Offset["n"] != int64(i) {
			t.Fatalf("write %d: read %v", i, got)
		}
	}
}

func produceTo(t *testing.T, e *storetest.Env, topic string, partition int32, n int) {
	t.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.Opts...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctxFor(t), &kgo.Record{Topic: topic, Partition: partition, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func makeTopic(t *testing.T, e *storetest.Env, name string, partitions int32) string {
	t.Helper()
	topic := e.Topic(name)
	if _, err := e.Admin.CreateTopic(ctxFor(t), partitions, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	return topic
}

func sinkOffsets(t *testing.T, co *offsets.ConnectorOffsets, connector string) []offsets.SinkOffset {
	t.Helper()
	got, err := co.SinkOffsets(ctxFor(t), connector)
	return must(t, got, err)
}

func members(t *testing.T, adm *kadm.Client, group string) int {
	t.Helper()
	d, err := adm.DescribeGroups(ctxFor(t), group)
	return len(must(t, d, err)[group].Members)
}

func TestSinkAlterAndResetWithLingeringStaticMember(t *testing.T) {
	e, co := startOffsets(t, "sinkoffs")
	conn := kafkatest.Unique("sink")
	topic := makeTopic(t, e, "in", 2)
	produceTo(t, e, topic, 0, 3)
	produceTo(t, e, topic, 1, 4)

	if got := sinkOffsets(t, co, conn); len(got) != 0 {
		t.Fatalf("offsets of a group that never existed: %v", got)
	}
	e.StoppedSinkTask(t, conn, topic, 7)
	want := []offsets.SinkOffset{{Topic: topic, Partition: 0, Offset: i64(3)}, {Topic: topic, Partition: 1, Offset: i64(4)}}
	if got := sinkOffsets(t, co, conn); !reflect.DeepEqual(got, want) {
		t.Fatalf("committed by the task: %+v, want %+v", got, want)
	}
	group := offsets.SinkGroup(conn)
	if n := members(t, e.Admin, group); n != 1 {
		t.Fatalf("the stopped task's static member should linger; the group has %d member(s)", n)
	}

	// Partition 0 moves back, partition 1's offset goes; for partition 0
	// given twice, the later entry counts even though it is lower.
	if err := co.AlterSinkOffsets(ctxFor(t), conn, []offsets.SinkOffset{
		{Topic: topic, Partition: 0, Offset: i64(2)},
		{Topic: topic, Partition: 1},
		{Topic: topic, Partition: 0, Offset: i64(1)},
	}); err != nil {
		t.Fatal(err)
	}
	want = []offsets.SinkOffset{{Topic: topic, Partition: 0, Offset: i64(1)}}
	if got := sinkOffsets(t, co, conn); !reflect.DeepEqual(got, want) {
		t.Fatalf("after alter: %+v, want %+v", got, want)
	}
	if n := members(t, e.Admin, group); n != 0 {
		t.Fatalf("the group still has %d member(s)", n)
	}

	// The task runs again, and stops again: reset must remove it too.
	e.StoppedSinkTask(t, conn, topic, 6)
	if got := sinkOffsets(t, co, conn); len(got) != 2 {
		t.Fatalf("committed by the restarted task: %+v", got)
	}
	if err := co.ResetSinkOffsets(ctxFor(t), conn); err != nil {
		t.Fatal(err)
	}
	if got := sinkOffsets(t, co, conn); len(got) != 0 {
		t.Fatalf("after reset: %+v", got)
	}
	// Resetting a group that is gone is not an error, nor is deleting an
	// offset from it.
	if err := co.ResetSinkOffsets(ctxFor(t), conn); err != nil {
		t.Fatal(err)
	}
	if err := co.AlterSinkOffsets(ctxFor(t), conn, []offsets.SinkOffset{{Topic: topic, Partition: 1}}); err != nil {
		t.Fatal(err)
	}
}

// TestSinkAlterRefusedWhileAnotherMemberConsumes: only the connector's own
// stopped tasks are removed; a consumer still running in the group makes
// the change fail, as in Kafka Connect.
func TestSinkAlterRefusedWhileAnotherMemberConsumes(t *testing.T) {
	e, co := startOffsets(t, "sinkbusy")
	conn := kafkatest.Unique("sink")
	topic := makeTopic(t, e, "in", 1)
	produceTo(t, e, topic, 0, 2)

	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.Opts...),
		kgo.ConsumerGroup(offsets.SinkGroup(conn)),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if fs := cl.PollFetches(ctxFor(t)); fs.NumRecords() == 0 {
		t.Fatalf("consumer got nothing: %v", fs.Errors())
	}

	err = co.AlterSinkOffsets(ctxFor(t), conn, []offsets.SinkOffset{{Topic: topic, Partition: 0, Offset: i64(0)}})
	if !errors.Is(err, offsets.ErrGroupNotEmpty) {
		t.Fatalf("alter with a live member: %v, want ErrGroupNotEmpty", err)
	}
	err = co.ResetSinkOffsets(ctxFor(t), conn)
	if !errors.Is(err, offsets.ErrGroupNotEmpty) {
		t.Fatalf("reset with a live member: %v, want ErrGroupNotEmpty", err)
	}
	if n := members(t, e.Admin, offsets.SinkGroup(conn)); n != 1 {
		t.Fatalf("the live member was removed: %d member(s)", n)
	}
}

func TestSinkAlterUnknownPartition(t *testing.T) {
	e, co := startOffsets(t, "sinkunknown")
	conn := kafkatest.Unique("sink")
	topic := makeTopic(t, e, "in", 1)
	err := co.AlterSinkOffsets(ctxFor(t), conn, []offsets.SinkOffset{
		{Topic: topic, Partition: 0, Offset: i64(0)},
		{Topic: e.Topic("no-such-topic"), Partition: 0, Offset: i64(5)},
	})
	if !errors.Is(err, offsets.ErrUnknownPartition) {
		t.Fatalf("commit to a missing topic: %v, want ErrUnknownPartition", err)
	}
}
