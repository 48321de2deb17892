package topics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// recorder collects what a Tailer applies, per partition.
type recorder struct {
	active     atomic.Int32 // apply calls running now
	concurrent atomic.Bool  // set if two ever overlapped

	mu     sync.Mutex
	values map[int32][]string
}

func newRecorder() *recorder { return &recorder{values: make(map[int32][]string)} }

func (r *recorder) apply(rec *kgo.Record) {
	if r.active.Add(1) > 1 {
		r.concurrent.Store(true)
	}
	defer r.active.Add(-1)
	r.mu.Lock()
	r.values[rec.Partition] = append(r.values[rec.Partition], string(rec.Value))
	r.mu.Unlock()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.values {
		n += len(v)
	}
	return n
}

// checkOrder verifies every partition's values were applied in the order
// they were produced: producer i's values carry increasing sequence numbers.
func (r *recorder) checkOrder(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.concurrent.Load() {
		t.Error("apply ran concurrently with itself")
	}
	for p, vs := range r.values {
		last := map[string]int{}
		for _, v := range vs {
			var key string
			var seq int
			if _, err := fmt.Sscanf(v, "%s %d", &key, &seq); err != nil {
				t.Fatalf("partition %d: value %q: %v", p, v, err)
			}
			if prev, ok := last[key]; ok && seq <= prev {
				t.Errorf("partition %d: %s %d applied after %d", p, key, seq, prev)
			}
			last[key] = seq
		}
	}
}

func produceSeq(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		key := fmt.Sprintf("k%d", i%7)
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: fmt.Appendf(nil, "%s %d", key, i)})
	}
	kafkatest.Produce(t, cl, recs...)
}

func TestTailerWaitForEndAcrossPartitionsAndRestart(t *testing.T) {
	_, opts := kafkatest.NewCluster(t)
	kafkatest.CreateTopic(t, opts, "tail", 3, nil)
	prod := kafkatest.NewClient(t, opts)
	produceSeq(t, prod, "tail", 0, 300)

	rec := newRecorder()
	tl, err := NewTailer(opts, "tail", rec.apply)
	kafkatest.StartStore(t, testCtx(t), tl, err)
	if n := rec.count(); n != 300 {
		t.Fatalf("after Start: applied %d records, want 300", n)
	}
	if len(rec.values) != 3 {
		t.Fatalf("records came from %d partitions, want 3", len(rec.values))
	}

	produceSeq(t, prod, "tail", 300, 450)
	if err := tl.WaitForEnd(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n := rec.count(); n != 450 {
		t.Fatalf("after WaitForEnd: applied %d records, want 450", n)
	}
	rec.checkOrder(t)
	tl.Close()

	// A new tailer (a restarted worker) reads everything again.
	rec2 := newRecorder()
	tl2, err := NewTailer(opts, "tail", rec2.apply)
	kafkatest.StartStore(t, testCtx(t), tl2, err)
	if n := rec2.count(); n != 450 {
		t.Fatalf("restarted tailer applied %d records, want 450", n)
	}
	rec2.checkOrder(t)
}

func TestTailerEmptyTopicAndCloseUnblocksWaiters(t *testing.T) {
	_, opts := kafkatest.NewCluster(t)
	kafkatest.CreateTopic(t, opts, "empty", 2, nil)
	rec := newRecorder()
	tl, err := NewTailer(opts, "empty", rec.apply)
	if err != nil {
		t.Fatal(err)
	}
	if err := tl.Start(testCtx(t)); err != nil {
		t.Fatalf("empty topic: %v", err)
	}
	// A wait for an offset nobody writes must end when the tailer closes.
	errc := make(chan error, 1)
	go func() { errc <- tl.WaitPosition(testCtx(t), 0, 5) }()
	time.Sleep(50 * time.Millisecond)
	tl.Close()
	err = testutil.Receive(t, errc, 5*time.Second, "Close did not unblock WaitPosition")
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("wait on a closed tailer: %v", err)
	}
}

// Transaction markers are records without a value for apply; a topic that
// ends with one must still count as read to its end, and records of an
// aborted transaction must never be applied.
func TestTailerTransactionalTail(t *testing.T) {
	_, opts := kafkatest.NewCluster(t)
	kafkatest.CreateTopic(t, opts, "txn", 1, nil)
	tx := kafkatest.NewClient(t, opts, kgo.TransactionalID("tx-1"))
	ctx := testCtx(t)
	for i, commit := range []bool{true, false, true} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		kafkatest.Produce(t, tx, &kgo.Record{Topic: "txn", Key: []byte("k"), Value: fmt.Appendf(nil, "k %d", i)})
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecorder()
	tl, err := NewTailer(opts, "txn", rec.apply)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tl.Start(sctx); err != nil {
		t.Fatalf("topic ending in a commit marker: %v", err)
	}
	rec.mu.Lock()
	got := strings.Join(rec.values[0], ",")
	rec.mu.Unlock()
	if got != "k 0,k 2" {
		t.Fatalf("applied %q, want the two committed records only", got)
	}
}

func TestTailerApplyPanicDoesNotStall(t *testing.T) {
	_, opts := kafkatest.NewCluster(t)
	kafkatest.CreateTopic(t, opts, "p", 1, nil)
	prod := kafkatest.NewClient(t, opts)
	produceSeq(t, prod, "p", 0, 3)
	var applied []string
	tl, err := NewTailer(opts, "p", func(r *kgo.Record) {
		if string(r.Value) == "k1 1" {
			panic("boom")
		}
		applied = append(applied, string(r.Value))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if err := tl.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if strings.Join(applied, ",") != "k0 0,k2 2" {
		t.Fatalf("applied %v", applied)
	}
	if err := tl.LastError(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("LastError = %v, want the panic", err)
	}
}

func TestTailerUnreachableBrokerFailsWithinDeadline(t *testing.T) {
	addr := testutil.ClosedAddr(t)
	tl, err := NewTailer([]kgo.Opt{kgo.SeedBrokers(addr)}, "t", func(*kgo.Record) {})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	err = kafkatest.StartWithin(t, tl, 700*time.Millisecond)
	if err == nil {
		t.Fatal("Start succeeded against a closed port")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"t"`) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("error does not name the topic and the cause: %v", err)
	}
}
