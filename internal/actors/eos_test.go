package actors

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// withExactlyOnce runs the worker's source tasks in transactions.
func withExactlyOnce(o *Options) {
	o.Worker.ExactlyOnce = connconfig.ExactlyOnceEnabled
	o.GroupID = "eos-test"
}

func datagenConfig(name, topic string, records int, extra ...string) map[string]string {
	cfg := map[string]string{
		"name": name, "connector.class": datagen.Class, "topic": topic, "tasks.max": "2",
		"max.records": fmt.Sprint(records), "batch.size": "100",
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
		"value.converter": "org.apache.kafka.connect.json.JsonConverter",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	return cfg
}

// readCommitted reads topic from the start as a read_committed consumer
// until it has want records, and a second more, in which a duplicate would
// show up.
func (e *env) readCommitted(topic string, want int) []*kgo.Record {
	e.t.Helper()
	return e.readRecords(topic, want, time.Second, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
}

// exactlyOnce checks that recs hold every (task, seq) below n once.
func exactlyOnce(t *testing.T, recs []*kgo.Record, tasks int, n int64) {
	t.Helper()
	seen := map[[2]int64]int{}
	for _, r := range recs {
		task, seq, err := datagen.ParseValue(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		seen[[2]int64{int64(task), seq}]++
	}
	for task := range int64(tasks) {
		for seq := range n {
			if c := seen[[2]int64{task, seq}]; c != 1 {
				t.Fatalf("task %d seq %d seen %d times by a read_committed consumer", task, seq, c)
			}
		}
	}
	if len(recs) != tasks*int(n) {
		t.Fatalf("%d records, want %d", len(recs), tasks*int(n))
	}
}

// seqRuns describes the seqs of recs as runs in the order read ("0-99
// 0-99" for a transaction seen twice), for failure messages.
func seqRuns(t *testing.T, recs []*kgo.Record) string {
	t.Helper()
	var b strings.Builder
	start, prev := int64(-2), int64(-2)
	flush := func() {
		if start >= 0 {
			fmt.Fprintf(&b, " %d-%d", start, prev)
		}
	}
	for _, r := range recs {
		_, seq, err := datagen.ParseValue(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if seq != prev+1 {
			flush()
			start = seq
		}
		prev = seq
	}
	flush()
	return strings.TrimSpace(b.String())
}

func TestExactlyOnceSourceCommitsRecordsWithTheirOffsets(t *testing.T) {
	for _, boundary := range []string{"poll", "interval", "connector"} {
		t.Run(boundary, func(t *testing.T) {
			e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, withExactlyOnce)
			name := "eos-" + boundary
			cfg := datagenConfig(name, e.topic(name), 1000, "transaction.boundary", boundary,
				"transaction.boundary.interval.ms", "50", "transaction.size", "70")
			e.create(name, cfg)
			e.waitTaskState(name, 0, state.StateRunning)
			exactlyOnce(t, e.readCommitted(e.topic(name), 2000), 2, 1000)
			for task := range 2 {
				testutil.Eventually(t, 10*time.Second, "the last offset committed", func() error {
					off, err := e.offsets.Offset(name, map[string]any{"task": task})
					if err != nil || off == nil || off["seq"] != int64(999) {
						return fmt.Errorf("offset %v, err %v", off, err)
					}
					return nil
				})
			}
		})
	}
}

// Invariant 9: a source offset is never visible before the records it is
// the offset of. The broker refuses the first commits; had the offsets been
// written outside the transactions, they would be visible for records that
// were aborted, and the restarted task would resume past them (a gap). A
// fresh read_committed view of the offsets never runs ahead of the records
// a read_committed consumer sees, and in the end each record is there once.
func TestExactlyOnceOffsetsNeverVisibleBeforeTheirRecords(t *testing.T) {
	e := newEnvOn(t, storetest.StartFake(t, "t", ProducerOpts()...), false, withExactlyOnce)
	var mu sync.Mutex
	refuse := 3
	e.broker.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.broker.KeepControl()
		end := req.(*kmsg.EndTxnRequest)
		mu.Lock()
		defer mu.Unlock()
		if !end.Commit || refuse == 0 {
			return nil, nil, false
		}
		refuse--
		resp := end.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.InvalidTxnState.Code
		return resp, nil, true
	})
	name := "eos-refused"
	e.create(name, datagenConfig(name, e.topic(name), 3000, "records.per.second", "3000"))
	check := func() {
		view, err := offsets.NewSourceStore(e.kopts, e.k.Prefix+"-offsets")
		if err != nil {
			t.Fatal(err)
		}
		defer view.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := view.Start(ctx); err != nil {
			t.Fatal(err)
		}
		committed := map[int64]int64{}
		for task := range int64(2) {
			committed[task] = -1
			if off, _ := view.Offset(name, map[string]any{"task": int(task)}); off != nil {
				committed[task] = off["seq"].(int64)
			}
		}
		visible := map[[2]int64]bool{}
		for _, r := range e.readCommitted(e.topic(name), int(committed[0]+committed[1]+2)) {
			task, seq, err := datagen.ParseValue(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			visible[[2]int64{int64(task), seq}] = true
		}
		for task, upTo := range committed {
			for seq := range upTo + 1 {
				if !visible[[2]int64{task, seq}] {
					t.Fatalf("offset seq %d of task %d committed, but record %d is not visible to read_committed (invariant 9)", upTo, task, seq)
				}
			}
		}
	}
	testutil.Eventually(t, 20*time.Second, "the refused commits fail the tasks", func() error {
		mu.Lock()
		defer mu.Unlock()
		if refuse > 0 {
			return fmt.Errorf("%d commits still to refuse", refuse)
		}
		return nil
	})
	check()
	exactlyOnce(t, e.readCommitted(e.topic(name), 6000), 2, 3000)
	check()
}

// Invariant 10: a fenced generation never commits. The test fences the
// task's transactional id as the leader does for a new generation: the
// task stops with a trace that says it was fenced, what it had open never
// becomes visible, and the instance its supervisor starts next resumes
// from the last commit, without a gap or a duplicate.
func TestExactlyOnceFencedTaskNeverCommitsAgain(t *testing.T) {
	// The fenced task fails and its supervisor restarts it (invariant 5);
	// with the harness's 50 ms backoff its FAILED status could be
	// replaced by RUNNING before the status topic showed it to the test
	// (seen once on a loaded machine against Apache Kafka). 3 s keeps it.
	e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, withExactlyOnce, func(o *Options) {
		o.Backoff = Backoff{Initial: 3 * time.Second, Max: 3 * time.Second, Jitter: 0.1, ResetAfter: 10 * time.Second}
	})
	name := "eos-fenced"
	e.create(name, datagenConfig(name, e.topic(name), 2000, "records.per.second", "1000", "tasks.max", "1",
		"transaction.boundary", "interval", "transaction.boundary.interval.ms", "300"))
	e.waitTaskState(name, 0, state.StateRunning)
	time.Sleep(500 * time.Millisecond) // some commits, and a transaction open
	fencer, err := kgo.NewClient(e.kopts...)
	if err != nil {
		t.Fatal(err)
	}
	defer fencer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := TransactionalID("eos-test", connectors.TaskID{Connector: name, Task: 0})
	if err := FenceProducers(ctx, fencer, []string{id}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the task reports it was fenced", func() error {
		if st := e.taskState(name, 0); st.State != state.StateFailed || !strings.Contains(st.Trace, "fenced by a newer generation") {
			return fmt.Errorf("state %s, trace %q", st.State, st.Trace)
		}
		return nil
	})
	exactlyOnce(t, e.readCommitted(e.topic(name), 2000), 1, 2000)
}

// Invariant 10: an instance of a task that read its offsets commits nothing
// once a later instance started. Two workers run the same task, as a
// zombie and its successor do: the first reads its offsets and is held in
// Open; the second starts, produces every record and commits; then the
// first goes on from the offsets it read. Its producer must have taken its
// epoch before it read them, so that the second's fenced it: before, a
// separate InitProducerID fenced the id and the producer took a newer
// epoch of its own at its first transaction, and the first instance
// committed every record a second time (the chaos run found six).
func TestExactlyOnceAnInstanceHeldAfterReadingItsOffsetsNeverCommits(t *testing.T) {
	k := storetest.Start(t, "t", ProducerOpts()...)
	first := newEnvOn(t, k, false, withExactlyOnce)
	name := "eos-held"
	h := hooksFor(name)
	h.mu.Lock()
	h.records = 100
	h.holdOpen, h.heldOpen = make(chan struct{}), make(chan struct{})
	h.mu.Unlock()
	first.create(name, withConv(map[string]string{"name": name, "connector.class": "test.TestSource",
		"topic": first.topic(name), "tasks.max": "1"}))
	select {
	case <-h.heldOpen:
	case <-time.After(20 * time.Second):
		t.Fatal("the first instance never opened")
	}
	newEnvOn(t, k, false, withExactlyOnce, func(o *Options) { o.WorkerID = "w2" })
	if got := first.readCommitted(first.topic(name), 100); len(got) != 100 {
		t.Fatalf("the second instance committed %d records, want 100", len(got))
	}
	close(h.holdOpen)
	// The first instance polls the same 100 records from the offsets it
	// read. Fenced, it fails at its first transaction and its supervisor
	// starts a third instance, which reads the second's offsets and idles;
	// had it not been fenced, it commits within a few seconds.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		h.mu.Lock()
		restarted := h.opened >= 3
		h.mu.Unlock()
		if restarted {
			break
		}
	}
	time.Sleep(time.Second) // a commit of the first instance would be visible by now
	recs := first.readCommitted(first.topic(name), 100)
	seen := map[string]int{}
	for _, r := range recs {
		seen[string(r.Value)]++
	}
	for seq := range 100 {
		if c := seen[fmt.Sprintf("0:%d", seq)]; c != 1 {
			t.Fatalf("seq %d seen %d times by a read_committed consumer (%d records in all)", seq, c, len(recs))
		}
	}
	if len(recs) != 100 {
		t.Fatalf("%d records visible to read_committed, want 100", len(recs))
	}
}

// A source with its own offsets topic (offsets.storage.topic) writes its
// offsets there, in its transactions when exactly once, and to the
// worker's topic after; the topic is created when missing, and a task
// that restarts resumes from it.
func TestSourceWithItsOwnOffsetsTopic(t *testing.T) {
	for _, exactly := range []bool{false, true} {
		t.Run(fmt.Sprintf("exactly-once=%v", exactly), func(t *testing.T) {
			k := storetest.Start(t, "t", ProducerOpts()...)
			stores := offsets.NewTopicStores(k.Opts, func(ctx context.Context, topic string) error {
				return createTopic(ctx, k.Admin, topic, 3, -1, map[string]string{"cleanup.policy": "compact"})
			}, k.Log)
			t.Cleanup(stores.Close)
			e := newEnvOn(t, k, false, func(o *Options) {
				o.OffsetTopics = stores
				if exactly {
					withExactlyOnce(o)
				}
			})
			name, own := fmt.Sprintf("own-%v", exactly), e.topic(fmt.Sprintf("own-offsets-%v", exactly))
			e.create(name, datagenConfig(name, e.topic(name), 500, "offsets.storage.topic", own, "tasks.max", "1"))
			e.waitTaskState(name, 0, state.StateRunning)
			recs := e.readCommitted(e.topic(name), 500)
			if exactly {
				exactlyOnce(t, recs, 1, 500)
			}
			ownStore, err := stores.Open(context.Background(), own)
			if err != nil {
				t.Fatal(err)
			}
			for what, store := range map[string]*offsets.SourceStore{"the connector's topic": ownStore, "the worker's topic": e.offsets} {
				testutil.Eventually(t, 10*time.Second, "the last offset in "+what, func() error {
					if off, err := store.Offset(name, map[string]any{"task": 0}); err != nil || off == nil || off["seq"] != int64(499) {
						return fmt.Errorf("offset %v, err %v", off, err)
					}
					return nil
				})
			}
			// What the task resumes from is the connector's topic: with
			// a later offset there than in the worker's, it goes on
			// after the connector's.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := ownStore.Write(ctx, name, []offsets.PartitionOffset{{Partition: map[string]any{"task": 0}, Offset: map[string]any{"seq": int64(599)}}}); err != nil {
				t.Fatal(err)
			}
			e.setTarget(name, state.TargetPaused)
			e.create(name, datagenConfig(name, e.topic(name), 700, "offsets.storage.topic", own, "tasks.max", "1"))
			e.setTarget(name, state.TargetStarted)
			testutil.Eventually(t, 20*time.Second, "the task resumed after seq 599", func() error {
				if off, _ := ownStore.Offset(name, map[string]any{"task": 0}); off == nil || off["seq"] != int64(699) {
					return fmt.Errorf("offset %v", off)
				}
				return nil
			})
			seen := map[int64]bool{}
			for _, r := range e.readCommitted(e.topic(name), 600) {
				_, seq, err := datagen.ParseValue(r.Value)
				if err != nil {
					t.Fatal(err)
				}
				seen[seq] = true
			}
			if seen[500] || !seen[600] || !seen[699] {
				t.Fatalf("after the connector's topic said 599: seq 500 seen %v, 600 %v, 699 %v", seen[500], seen[600], seen[699])
			}
		})
	}
}

// With transaction.boundary=connector a stopping task commits only what the
// connector asked to commit, as Connect's CONNECTOR boundary manager does:
// the records after its last request are aborted, never visible, and the
// stored offset stays at the last commit.
func TestExactlyOnceConnectorBoundaryStopAbortsTheOpenTransaction(t *testing.T) {
	e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, withExactlyOnce)
	name := "eos-connector-stop"
	cfg := datagenConfig(name, e.topic(name), -1, "tasks.max", "1", "transaction.boundary", "connector",
		"transaction.size", "100", "records.per.second", "500", "batch.size", "10")
	e.create(name, cfg)
	e.waitTaskState(name, 0, state.StateRunning)
	testutil.Eventually(t, 20*time.Second, "a transaction committed", func() error {
		if off, err := e.offsets.Offset(name, map[string]any{"task": 0}); err != nil || off == nil {
			return fmt.Errorf("offset %v, err %v", off, err)
		}
		return nil
	})
	time.Sleep(150 * time.Millisecond) // into the next transaction, most likely
	e.setTarget(name, state.TargetStopped)
	testutil.Eventually(t, 20*time.Second, "the task gone", func() error {
		if tasks := e.statuses.Tasks(name); len(tasks) > 0 && tasks[0].State == state.StateRunning {
			return fmt.Errorf("task %v", tasks[0].State)
		}
		return nil
	})
	// The task's status leaves RUNNING when it is told to stop, but a
	// transaction the connector asked to commit just before still commits
	// while it stops (seen on Apache Kafka: the commit of 100-199 ran after
	// the stop, and the offsets read here still said 99). So the offsets are
	// read once the pipeline ended, and from the end of their topic.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.rt.WaitStopped(ctx, []connectors.TaskID{{Connector: name, Task: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := e.offsets.ReadToEnd(ctx); err != nil {
		t.Fatal(err)
	}
	off, err := e.offsets.Offset(name, map[string]any{"task": 0})
	if err != nil {
		t.Fatal(err)
	}
	last := off["seq"].(int64)
	if (last+1)%100 != 0 {
		t.Fatalf("the stored offset is seq %d, not the end of a transaction the connector asked for", last)
	}
	recs := e.readCommitted(e.topic(name), int(last)+1)
	if len(recs) != int(last)+1 {
		t.Fatalf("%d records visible to read_committed, want %d (those of the committed transactions); seqs %s", len(recs), last+1, seqRuns(t, recs))
	}
	exactlyOnce(t, recs, 1, last+1)
}

// With transaction.boundary=connector every boundary the connector asks for
// ends a transaction, however many one poll's batch holds, as Connect keeps
// them in sets (WorkerTransactionContext). Datagen asks after every 70th
// record and after its last; its polls of 1,000 records hold 15 boundaries.
// The pipeline once kept only the last request of a batch, and committed
// one transaction where the connector had asked for 15.
func TestExactlyOnceEveryConnectorBoundaryOfABatchEndsATransaction(t *testing.T) {
	e := newEnvOn(t, storetest.StartFake(t, "t", ProducerOpts()...), false, withExactlyOnce)
	var mu sync.Mutex
	commits, aborts := 0, 0
	e.broker.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.broker.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		if req.(*kmsg.EndTxnRequest).Commit {
			commits++
		} else {
			aborts++
		}
		return nil, nil, false
	})
	name := "eos-many-boundaries"
	e.create(name, datagenConfig(name, e.topic(name), 1000, "tasks.max", "1", "batch.size", "1000",
		"transaction.boundary", "connector", "transaction.size", "70"))
	exactlyOnce(t, e.readCommitted(e.topic(name), 1000), 1, 1000)
	testutil.Eventually(t, 10*time.Second, "the last offset committed", func() error {
		off, err := e.offsets.Offset(name, map[string]any{"task": 0})
		if err != nil || off == nil || off["seq"] != int64(999) {
			return fmt.Errorf("offset %v, err %v", off, err)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if commits != 15 || aborts != 0 {
		t.Fatalf("%d transactions committed and %d aborted; the connector asked for 15 commits (after seq 69, 139, ..., 979 and 999)", commits, aborts)
	}
}

// A connector that asks both to commit and to abort after the same record,
// or after the same batch, fails its task, as Connect's
// WorkerTransactionContext does; a request on one record leaves the others
// alone, and a nil record asks nothing.
func TestTransactionBoundaryRequests(t *testing.T) {
	var tx transactions
	a, b, c := &connectors.SourceRecord{Topic: "t"}, &connectors.SourceRecord{Topic: "t"}, &connectors.SourceRecord{Topic: "t"}
	tx.CommitTransactionAfter(a)
	tx.AbortTransactionAfter(b)
	tx.CommitTransactionAfter(c)
	tx.AbortTransactionAfter(c)
	tx.CommitTransactionAfter(nil)
	if end, commit, err := tx.boundaryAfter(a); !end || !commit || err != nil {
		t.Fatalf("after a: end %v commit %v err %v, want a commit", end, commit, err)
	}
	if end, _, _ := tx.boundaryAfter(a); end {
		t.Fatal("a's request was kept after it was acted on")
	}
	if end, commit, err := tx.boundaryAfter(b); !end || commit || err != nil {
		t.Fatalf("after b: end %v commit %v err %v, want an abort", end, commit, err)
	}
	_, _, err := tx.boundaryAfter(c)
	if err == nil || !strings.Contains(err.Error(), "both commit and abort of same record against topic/partition t/null") {
		t.Fatalf("after c: %v, want the error Connect fails the task with", err)
	}
	if end, _, err := tx.boundaryAfter(nil); end || err != nil {
		t.Fatalf("nil record: end %v err %v", end, err)
	}
	tx.CommitTransaction()
	tx.AbortTransaction()
	if _, _, err := tx.boundaryNow(); err == nil || !strings.Contains(err.Error(), "both commit and abort of same transaction") {
		t.Fatalf("batch: %v, want the error Connect fails the task with", err)
	}
	tx.AbortTransaction()
	if end, commit, err := tx.boundaryNow(); !end || commit || err != nil {
		t.Fatalf("batch abort: end %v commit %v err %v", end, commit, err)
	}
	tx.CommitTransactionAfter(a)
	tx.forgetRecordBoundaries()
	if end, _, _ := tx.boundaryAfter(a); end {
		t.Fatal("a request survived forgetRecordBoundaries")
	}
}
