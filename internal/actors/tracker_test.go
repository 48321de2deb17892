package actors

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/twmb/franz-go/pkg/kgo"
)

func trackerRecord(partition map[string]any, seq int) *connectors.SourceRecord {
	return &connectors.SourceRecord{Partition: partition, Offset: map[string]any{"seq": seq}}
}

// committedSeq is the seq the tracker would commit for partition, or -1.
func committedSeq(t *testing.T, tr *offsetTracker, partition map[string]any) int {
	t.Helper()
	for _, e := range tr.committable() {
		if e.Partition["p"] == partition["p"] {
			return e.Offset["seq"].(int)
		}
	}
	return -1
}

// A poll's records are registered at once; offsets commit in produce order
// only, whatever order the acks come in, and records that were never
// produced (released) leave the count in flight without ever committing.
func TestTrackerBatchCommitsInOrderAndReleases(t *testing.T) {
	tr := newOffsetTracker()
	a, b := map[string]any{"p": "a"}, map[string]any{"p": "b"}
	batch := []*connectors.SourceRecord{
		trackerRecord(a, 1), nil, trackerRecord(b, 1), trackerRecord(a, 2), trackerRecord(a, 3), trackerRecord(b, 2),
	}
	es := make([]pending, len(batch))
	tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
	if got := tr.inFlight(); got != 5 {
		t.Fatalf("%d in flight, want 5 (the nil record is not one)", got)
	}

	tr.ack(&es[3], nil) // a:2 before a:1
	if got := committedSeq(t, tr, a); got != -1 {
		t.Fatalf("a commits seq %d before its first record was acked", got)
	}
	tr.ack(&es[0], nil)
	if got := committedSeq(t, tr, a); got != 2 {
		t.Fatalf("a commits seq %d, want 2", got)
	}
	tr.ack(&es[2], nil)
	if got := committedSeq(t, tr, b); got != 1 {
		t.Fatalf("b commits seq %d, want 1", got)
	}

	// The task stops before a:3 and b:2 are produced.
	for i := range es[4:] {
		tr.release(&es[4+i])
	}
	tr.release(&es[4]) // twice: counted once
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := tr.waitAtMost(ctx, 0); err != nil {
		t.Fatalf("drain after release: %v (%d in flight)", err, tr.inFlight())
	}
	if a3, b2 := committedSeq(t, tr, a), committedSeq(t, tr, b); a3 != 2 || b2 != 1 {
		t.Fatalf("after release a commits %d and b %d, want 2 and 1", a3, b2)
	}
}

// A failed record stops its partition for good and is the task's failure.
func TestTrackerFailedRecordStopsItsPartition(t *testing.T) {
	tr := newOffsetTracker()
	a := map[string]any{"p": "a"}
	batch := []*connectors.SourceRecord{trackerRecord(a, 1), trackerRecord(a, 2), trackerRecord(a, 3)}
	es := make([]pending, len(batch))
	tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
	boom := errors.New("boom")
	tr.ack(&es[0], nil)
	tr.ack(&es[1], boom)
	tr.ack(&es[2], nil)
	if got := committedSeq(t, tr, a); got != 1 {
		t.Fatalf("a commits seq %d, want 1 (the record before the failed one)", got)
	}
	if !errors.Is(tr.failure(), boom) || tr.inFlight() != 0 {
		t.Fatalf("failure %v, %d in flight", tr.failure(), tr.inFlight())
	}
}

// Equal partitions in different maps are one partition; the cache of the
// last map does not confuse partitions that follow each other.
func TestTrackerPartitionsByContent(t *testing.T) {
	tr := newOffsetTracker()
	batch := []*connectors.SourceRecord{
		trackerRecord(map[string]any{"p": "a"}, 1), trackerRecord(map[string]any{"p": "b"}, 1),
		trackerRecord(map[string]any{"p": "a"}, 2),
	}
	es := make([]pending, len(batch))
	tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
	tr.ack(&es[2], nil)
	tr.ack(&es[1], nil)
	if got := committedSeq(t, tr, map[string]any{"p": "a"}); got != -1 {
		t.Fatalf("a commits seq %d though its first record is not acked", got)
	}
	tr.ack(&es[0], nil)
	if got := committedSeq(t, tr, map[string]any{"p": "a"}); got != 2 {
		t.Fatalf("a commits seq %d, want 2", got)
	}
	if n := len(tr.committable()); n != 2 {
		t.Fatalf("%d partitions committable, want 2", n)
	}
}

// The byte window blocks a record until acknowledgements make room for it,
// as a Connect task's producer blocks its send while buffer.memory is full;
// a record larger than the whole budget goes once nothing is in flight; a
// released record gives its bytes back; a stop ends the wait.
func TestTrackerReserveBlocksUntilAcksMakeRoom(t *testing.T) {
	tr := newOffsetTracker()
	p := map[string]any{"p": "a"}
	batch := []*connectors.SourceRecord{trackerRecord(p, 1), trackerRecord(p, 2), trackerRecord(p, 3), trackerRecord(p, 4)}
	es := make([]pending, len(batch))
	tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	const budget = 100
	if waited, err := tr.reserve(ctx, &es[0], 60, budget); err != nil || waited {
		t.Fatalf("reserve in an empty window: waited %v, err %v; want neither", waited, err)
	}
	reserved := make(chan error, 1)
	go func() {
		waited, err := tr.reserve(ctx, &es[1], 60, budget)
		if err == nil && !waited {
			err = errors.New("reserve waited for an ack but did not say so")
		}
		reserved <- err
	}()
	select {
	case err := <-reserved:
		t.Fatalf("a record went past the byte budget (60 + 60 > 100): %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	tr.ack(&es[0], nil)
	if err := <-reserved; err != nil {
		t.Fatalf("reserve after the ack that made room: %v", err)
	}

	// Larger than the budget: waits for the window to empty, then goes.
	go func() { _, err := tr.reserve(ctx, &es[2], 500, budget); reserved <- err }()
	select {
	case err := <-reserved:
		t.Fatalf("a record larger than the budget went while 60 bytes were in flight: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	tr.release(&es[1])
	if err := <-reserved; err != nil {
		t.Fatalf("reserve of a record larger than the budget on an empty window: %v", err)
	}

	stopped, stop := context.WithCancel(ctx)
	go func() { _, err := tr.reserve(stopped, &es[3], 1, budget); reserved <- err }()
	time.Sleep(50 * time.Millisecond)
	stop()
	if err := <-reserved; !errors.Is(err, context.Canceled) {
		t.Fatalf("reserve on a stopped task returned %v, want context.Canceled", err)
	}
	tr.ack(&es[2], nil)
	tr.release(&es[3])
	if n := tr.inflightBytes.Load(); n != 0 {
		t.Fatalf("%d bytes in flight after every record was acked or released, want 0", n)
	}
}

// A record's bytes go at its ack, not when the last record of its poll is
// acknowledged: the records of one poll share one slab, which stays while
// any of them is in flight, and a poll's worth of acknowledged values held
// there would be memory beyond what buffer.memory allows.
func TestAckedRecordLetsItsBytesGo(t *testing.T) {
	p := &sourcePipeline{taskRun: &taskRun{}, tracker: newOffsetTracker()}
	out := make([]outgoing, 2)
	p.tracker.addBatch([]*connectors.SourceRecord{{}, {}}, func(i int) *pending { return &out[i].pending }, nil)
	for i := range out {
		out[i].record = kgo.Record{Key: []byte("k"), Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}
	}
	p.acked(&out[0].record, nil)
	if r := out[0].record; r.Key != nil || r.Value != nil || r.Headers != nil {
		t.Errorf("an acknowledged record still holds its bytes: %+v", r)
	}
	if r := out[1].record; string(r.Value) != "v" || string(r.Key) != "k" || len(r.Headers) != 1 {
		t.Errorf("a record in flight lost its bytes: %+v", r)
	}
	if n := p.tracker.inFlight(); n != 1 {
		t.Errorf("in flight %d, want 1", n)
	}
}

// A produce failure does not end the drain: the records produced before it
// are still waited for, so that they reach Kafka and their offsets commit.
func TestTrackerDrainWaitsPastAFailure(t *testing.T) {
	tr := newOffsetTracker()
	part := map[string]any{"p": 0}
	es := make([]pending, 2)
	tr.addBatch([]*connectors.SourceRecord{trackerRecord(part, 1), trackerRecord(part, 2)}, func(i int) *pending { return &es[i] }, nil)
	tr.ack(&es[1], errors.New("refused"))
	done := make(chan error, 1)
	go func() { done <- tr.drain(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("drain returned (%v) with a record in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	tr.ack(&es[0], nil)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("drain did not return once nothing was in flight")
	}
	if got := tr.committable(); len(got) != 1 || got[0].Offset["seq"] != 1 {
		t.Errorf("committable %v: the record before the failed one commits, nothing after", got)
	}
}

// Offsets given as integers (SourceRecord.OffsetKey) follow invariant 1 as
// maps do: they commit in produce order whatever the ack order, become a
// map only when committable, and once flushed are not committable again
// until a later record moves them, even when a source re-sends the same
// integer.
func TestTrackerIntegerOffsets(t *testing.T) {
	tr := newOffsetTracker()
	a := map[string]any{"p": "a"}
	rec := func(n int64) *connectors.SourceRecord {
		return &connectors.SourceRecord{Partition: a, OffsetKey: "position", OffsetInt: n}
	}
	batch := []*connectors.SourceRecord{rec(10), rec(20), rec(20), rec(30)}
	es := make([]pending, len(batch))
	tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
	committed := func() any {
		got := tr.committable()
		if len(got) == 0 {
			return nil
		}
		if len(got) != 1 || len(got[0].Offset) != 1 {
			t.Fatalf("committable %v, want one offset of one key", got)
		}
		return got[0].Offset["position"]
	}

	tr.ack(&es[1], nil)
	if got := committed(); got != nil {
		t.Fatalf("commits %v before the first record was acked", got)
	}
	tr.ack(&es[0], nil)
	if got := committed(); got != int64(20) {
		t.Fatalf("commits %v, want 20", got)
	}
	tr.markFlushed(tr.committable())
	if got := committed(); got != nil {
		t.Fatalf("commits %v again after the flush", got)
	}
	tr.ack(&es[2], nil) // the same position again
	if got := committed(); got != nil {
		t.Fatalf("a re-sent position commits %v again", got)
	}
	if tr.settled() {
		t.Fatal("settled with a record in flight")
	}
	tr.ack(&es[3], nil)
	if tr.settled() {
		t.Fatal("settled with position 30 acked and not flushed")
	}
	if got := committed(); got != int64(30) {
		t.Fatalf("commits %v, want 30", got)
	}
	tr.markFlushed(tr.committable())
	if !tr.settled() {
		t.Fatal("not settled after everything was flushed")
	}
}

// A partition's queue takes its acknowledged prefix off without moving
// along its array: in a steady state of polls acknowledged in order, the
// tracker allocates nothing, where a queue resliced past its prefix
// reallocated at the next append past the array's end.
func TestTrackerQueueUsesItsArrayAgain(t *testing.T) {
	tr := newOffsetTracker()
	a := map[string]any{"p": "a"}
	batch := make([]*connectors.SourceRecord, 100)
	for i := range batch {
		batch[i] = trackerRecord(a, i)
	}
	es := make([]pending, len(batch))
	poll := func() {
		tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
		for i := range es {
			tr.ack(&es[i], nil)
		}
	}
	poll()
	if allocs := testing.AllocsPerRun(100, poll); allocs != 0 {
		t.Fatalf("%.1f allocations per poll of 100 records acknowledged in order, want 0", allocs)
	}
	tr.idle()
	if q := tr.parts[`{"p":"a"}`].queue; q != nil {
		t.Fatalf("an idle task's empty queue keeps its array (cap %d)", cap(q))
	}
}

// Invariant 1 under the queue's reuse and compaction: acknowledgements in
// random order over many polls, some left open for a long while; the
// committable offset is always the end of the longest acknowledged prefix,
// as a plain model of it says.
func TestTrackerQueueMatchesAModelUnderRandomAcks(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 5))
	tr := newOffsetTracker()
	a := map[string]any{"p": "a"}
	var open []*pending
	seqOf := map[*pending]int{}
	acked := map[int]bool{}
	next, committed := 0, -1
	for range 3000 {
		n := 1 + rng.IntN(40)
		batch := make([]*connectors.SourceRecord, n)
		es := make([]pending, n)
		for i := range n {
			batch[i] = trackerRecord(a, next+i)
		}
		tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
		for i := range es {
			open = append(open, &es[i])
			seqOf[&es[i]] = next + i
		}
		next += n
		for k := rng.IntN(len(open) + 1); k > 0; k-- {
			j := rng.IntN(len(open))
			if j < len(open)/4 && rng.IntN(4) != 0 {
				continue // the oldest records stay open longer
			}
			e := open[j]
			open = append(open[:j], open[j+1:]...)
			tr.ack(e, nil)
			acked[seqOf[e]] = true
		}
		for acked[committed+1] {
			committed++
		}
		if got := committedSeq(t, tr, a); got != committed {
			t.Fatalf("after %d records: the tracker commits seq %d, the model %d", next, got, committed)
		}
	}
	for _, e := range open {
		tr.ack(e, nil)
	}
	if got := committedSeq(t, tr, a); got != next-1 {
		t.Fatalf("every record acknowledged: the tracker commits seq %d, want %d", got, next-1)
	}
}
