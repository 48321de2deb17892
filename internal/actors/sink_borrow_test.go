package actors

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
)

// keepingSinkTask keeps every batch it is given, as a sink that buffers
// until PreCommit does, and says whether it only borrows them.
type keepingSinkTask struct {
	borrows bool
	// quiet: Write keeps and reads nothing (and allocates nothing).
	quiet   bool
	batches [][]*connectors.SinkRecord
	// seen is each Write's values, read while Write runs.
	seen [][]string
}

func (k *keepingSinkTask) Open(context.Context, connectors.SinkTaskContext, map[string]string) error {
	return nil
}

func (k *keepingSinkTask) Write(_ context.Context, recs []*connectors.SinkRecord) error {
	if k.quiet {
		return nil
	}
	k.batches = append(k.batches, append([]*connectors.SinkRecord(nil), recs...))
	var vals []string
	for _, r := range recs {
		v, _ := r.Value.(string)
		vals = append(vals, v)
	}
	k.seen = append(k.seen, vals)
	return nil
}

func (k *keepingSinkTask) Close() error         { return nil }
func (k *keepingSinkTask) BorrowsRecords() bool { return k.borrows }

func fetchedBatch(from, n int) []*kgo.Record {
	var out []*kgo.Record
	for i := from; i < from+n; i++ {
		out = append(out, &kgo.Record{Topic: "t", Offset: int64(i), Value: []byte(fmt.Sprintf("value-%d", i))})
	}
	return out
}

func newDeliverPipeline(task connectors.SinkTask) *sinkPipeline {
	p := &sinkPipeline{taskRun: &taskRun{}, codec: codec{key: &converters.StringConverter{}, value: &converters.StringConverter{}},
		task: task, written: map[connectors.TopicPartition]int64{}}
	p.keyArena, p.valueArena = arenaConverterOf(p.key), arenaConverterOf(p.value)
	p.takePromise()
	return p
}

// A task that does not promise to only borrow its batches keeps them as
// they were given: records of its first Write keep their values through
// the next Writes and when the fetched bytes change, each record its own.
// One that does gets its records filled again for each Write, and nothing
// of a batch is left referenced once Write returned.
func TestSinkBorrowedBatchesAreReusedOthersKept(t *testing.T) {
	ctx := context.Background()
	keeper := &keepingSinkTask{}
	p := newDeliverPipeline(keeper)
	first := fetchedBatch(0, 3)
	for _, b := range [][]*kgo.Record{first, fetchedBatch(3, 3)} {
		if err := p.deliver(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range first {
		for i := range r.Value {
			r.Value[i] = 'X'
		}
	}
	for i, r := range keeper.batches[0] {
		if want := fmt.Sprintf("value-%d", i); r.Value != want {
			t.Fatalf("a kept record of the first batch holds %#v, want %q", r.Value, want)
		}
	}
	if keeper.batches[0][0] == keeper.batches[1][0] {
		t.Fatal("a task that keeps its records was given the same record twice")
	}

	borrower := &keepingSinkTask{borrows: true}
	p = newDeliverPipeline(borrower)
	for _, b := range [][]*kgo.Record{fetchedBatch(0, 3), fetchedBatch(3, 3), fetchedBatch(6, 2)} {
		if err := p.deliver(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	for w, vals := range borrower.seen {
		for i, v := range vals {
			if want := fmt.Sprintf("value-%d", 3*w+i); v != want {
				t.Fatalf("Write %d saw %q at %d, want %q", w, v, i, want)
			}
		}
	}
	if borrower.batches[0][0] != borrower.batches[1][0] {
		t.Fatal("a borrowing task's records were not filled again")
	}
	for _, r := range borrower.batches[2] {
		if r.Value != nil || r.Topic != "" {
			t.Fatalf("a record stays referenced after its Write: %+v", r)
		}
	}
	// Filling the records again allocates nothing per record: the
	// strings share the fetched bytes, their headers come from slabs.
	borrower.quiet = true
	b := fetchedBatch(0, 200)
	if n := testing.AllocsPerRun(20, func() { _ = p.deliver(ctx, b) }); n > 5 {
		t.Fatalf("delivering 200 borrowed records allocates %v times", n)
	}
}

// A borrowing sink that goes idle keeps none of the last fetch's bytes:
// its strings shared them, and their headers were boxed in the arena's
// slab, which an idle task lets go of (sinkPipeline.idle).
func TestIdleSinkPinsNoFetchedBytes(t *testing.T) {
	p := newDeliverPipeline(&keepingSinkTask{borrows: true, quiet: true})
	defer runtime.KeepAlive(p) // the pipeline lives on, as a task's does
	fetched := new([4096]byte)
	collected := make(chan struct{})
	runtime.AddCleanup(fetched, func(c chan struct{}) { close(c) }, collected)
	var batch []*kgo.Record
	for i := range 8 {
		v := fetched[i*16 : i*16+8]
		copy(v, fmt.Sprintf("value-%02d", i))
		batch = append(batch, &kgo.Record{Topic: "t", Offset: int64(i), Value: v})
	}
	fetched = nil
	if err := p.deliver(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	batch = nil
	p.idle()
	for range 20 {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("an idle sink still holds the bytes of its last fetch")
}
