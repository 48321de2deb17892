package actors

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/testutil"
)

func TestBackoffDoublesUpToCap(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 60 * time.Second}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i, w := range want {
		if got := b.Delay(i + 1); got != w*time.Second {
			t.Errorf("restart %d: delay %s, want %s", i+1, got, w*time.Second)
		}
	}
	b.Jitter = 0.2
	for i := 0; i < 200; i++ {
		if d := b.Delay(3); d < 3200*time.Millisecond || d > 4800*time.Millisecond {
			t.Fatalf("jittered delay %s outside 4s±20%%", d)
		}
	}
}

func TestLeasesRunOneInstanceAtATime(t *testing.T) {
	l := newLeases()
	release, err := l.acquire(context.Background(), "c/0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		r2, err := l.acquire(context.Background(), "c/0")
		if err == nil {
			close(got)
			r2()
		}
	}()
	select {
	case <-got:
		t.Fatal("second instance acquired the lease while the first held it (invariant 4)")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("second instance never got the lease after release")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSourceDeliversEverySequenceAndCommitsOffsets(t *testing.T) {
	e := newEnv(t)
	hooksFor("src").records = 1000
	e.create("src", withConv(map[string]string{"name": "src", "connector.class": "test.TestSource", "topic": e.topic("src-out"), "tasks.max": "2"}))
	e.waitTaskState("src", 0, state.StateRunning)
	e.waitTaskState("src", 1, state.StateRunning)
	recs := e.readTopic(e.topic("src-out"), 2000)
	seen := map[string]bool{}
	for _, r := range recs {
		seen[string(r.Value)] = true
	}
	for task := 0; task < 2; task++ {
		for seq := 0; seq < 1000; seq++ {
			if !seen[fmt.Sprintf("%d:%d", task, seq)] {
				t.Fatalf("task %d seq %d missing from the topic", task, seq)
			}
		}
		testutil.Eventually(t, 10*time.Second, "offset of the last record committed", func() error {
			off, err := e.offsets.Offset("src", map[string]any{"task": task})
			if err != nil || off == nil || off["seq"] != int64(999) {
				return fmt.Errorf("offset %v, err %v", off, err)
			}
			return nil
		})
	}
	if st, _ := e.statuses.Connector("src"); st.State != state.StateRunning || st.WorkerID != "w1" {
		t.Fatalf("connector status %+v", st)
	}
}

// Invariant 1 (source): produce fails part way; no committed offset may name
// a record that Kafka does not have.
func TestSourceNeverCommitsUnacknowledgedOffsets(t *testing.T) {
	neverCommitsUnacknowledged(t, nil)
}

// Invariant 1 holds as well for a source producing through a producer of
// its own (producer overrides), which its failed task closes and its
// restarted one makes anew.
func TestOwnProducerNeverCommitsUnacknowledgedOffsets(t *testing.T) {
	neverCommitsUnacknowledged(t, map[string]string{"producer.override.linger.ms": "5", "producer.override.client.id": "ack-own"})
}

func neverCommitsUnacknowledged(t *testing.T, extra map[string]string) {
	// Always on kfake: the failures are injected with ControlKey.
	e := newFakeEnv(t)
	created, err := e.adm.CreateTopic(context.Background(), 1, -1, nil, e.topic("ack-out"))
	if err != nil || created.Err != nil {
		t.Fatal(err, created.Err)
	}
	var mu sync.Mutex
	allowed, failing := 3, true
	e.broker.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.broker.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		// Produce v13+ names topics by id.
		if len(pr.Topics) == 0 || (pr.Topics[0].Topic != e.topic("ack-out") && pr.Topics[0].TopicID != created.ID) {
			return nil, nil, false
		}
		mu.Lock()
		defer mu.Unlock()
		if !failing {
			return nil, nil, false
		}
		if allowed > 0 {
			allowed--
			return nil, nil, false
		}
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, tp := range pr.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, p := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.InvalidRecord.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	cfg := withConv(map[string]string{"name": "ack", "connector.class": "test.TestSource", "topic": e.topic("ack-out"), "tasks.max": "1"})
	for k, v := range extra {
		cfg[k] = v
	}
	e.create("ack", cfg)
	testutil.Eventually(t, 20*time.Second, "the task fails on the refused produce", func() error {
		if st := e.taskState("ack", 0); st.State != state.StateFailed {
			return fmt.Errorf("state %s", st.State)
		}
		return nil
	})
	check := func() {
		off, err := e.offsets.Offset("ack", map[string]any{"task": 0})
		if err != nil {
			t.Fatal(err)
		}
		if off == nil {
			return
		}
		committed := off["seq"].(int64)
		present := map[string]bool{}
		for _, r := range e.readTopic(e.topic("ack-out"), int(committed)+1) {
			present[string(r.Value)] = true
		}
		for seq := int64(0); seq <= committed; seq++ {
			if !present[fmt.Sprintf("0:%d", seq)] {
				t.Fatalf("offset seq %d committed but record 0:%d is not in Kafka (invariant 1)", committed, seq)
			}
		}
	}
	check()
	mu.Lock()
	failing = false
	mu.Unlock()
	// The supervisor restarts the task; it resumes from the committed offset
	// and completes the sequence without a gap.
	testutil.Eventually(t, 30*time.Second, "progress after recovery", func() error {
		off, _ := e.offsets.Offset("ack", map[string]any{"task": 0})
		if off == nil || off["seq"].(int64) < 5000 {
			return fmt.Errorf("offset %v", off)
		}
		return nil
	})
	// check reads everything up to the committed offset: no gap.
	check()
}

// Invariant 5: a panicking task is restarted by its supervisor with backoff,
// status going FAILED (with the panic's trace) -> RESTARTING -> RUNNING, and
// the worker keeps running other connectors meanwhile.
func TestPanickingTaskRestartsAndWorkerCarriesOn(t *testing.T) {
	e := newEnv(t)
	h := hooksFor("panicky")
	h.panics, h.panicAt = 3, 10
	e.create("steady", withConv(map[string]string{"name": "steady", "connector.class": "test.TestSource", "topic": e.topic("steady-out")}))
	e.create("panicky", withConv(map[string]string{"name": "panicky", "connector.class": "test.TestSource", "topic": e.topic("panicky-out")}))

	var history []string
	sawTrace := false
	testutil.Eventually(t, 30*time.Second, "FAILED, RESTARTING, RUNNING after three panics", func() error {
		st := e.taskState("panicky", 0)
		if n := len(history); n == 0 || history[n-1] != string(st.State) {
			history = append(history, string(st.State))
		}
		if st.State == state.StateFailed && strings.Contains(st.Trace, "test panic") && strings.Contains(st.Trace, "goroutine") {
			sawTrace = true
		}
		h.mu.Lock()
		left, opened := h.panics, h.opened
		h.mu.Unlock()
		// The status read back may still be the RUNNING of the instance
		// that panicked last: wait for the fourth instance too.
		if left > 0 || opened < 4 || st.State != state.StateRunning || !sawTrace {
			return fmt.Errorf("history %v, panics left %d, opened %d", history, left, opened)
		}
		return nil
	})
	joined := strings.Join(history, ",")
	if !strings.Contains(joined, "FAILED") || !strings.Contains(joined, "RUNNING") {
		t.Fatalf("status history %v", history)
	}
	h.mu.Lock()
	opened := h.opened
	h.mu.Unlock()
	if opened < 4 {
		t.Fatalf("task opened %d times, want >= 4 (1 + 3 restarts)", opened)
	}
	// The other connector was never disturbed.
	if st := e.taskState("steady", 0); st.State != state.StateRunning {
		t.Fatalf("steady task %+v", st)
	}
	if n := len(e.readTopic(e.topic("steady-out"), 1000)); n < 1000 {
		t.Fatalf("steady connector produced only %d records meanwhile", n)
	}
}

// A task whose Open keeps failing is reported FAILED with the reason and
// retried, not given up on.
func TestFailingOpenIsRetriedAndReported(t *testing.T) {
	e := newEnv(t)
	hooksFor("opener").openErrors = 2
	e.create("opener", withConv(map[string]string{"name": "opener", "connector.class": "test.TestSource", "topic": e.topic("opener-out")}))
	testutil.Eventually(t, 20*time.Second, "FAILED with the reason", func() error {
		st := e.taskState("opener", 0)
		if st.State == state.StateFailed && strings.Contains(st.Trace, "open refused by the test") {
			return nil
		}
		h := hooksFor("opener")
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.opened >= 3 {
			return nil // both failures already passed; RUNNING is checked below
		}
		return fmt.Errorf("state %+v", st)
	})
	e.waitTaskState("opener", 0, state.StateRunning)
}

// Invariant 8: a task stuck inside connector code (ignoring its deadline)
// does not block its actor: pausing still works, and other connectors run.
func TestStuckConnectorCodeDoesNotBlockActors(t *testing.T) {
	e := newEnv(t)
	block := make(chan struct{})
	h := hooksFor("stuck")
	h.blockPoll = block
	e.create("stuck", withConv(map[string]string{"name": "stuck", "connector.class": "test.TestSource", "topic": e.topic("stuck-out")}))
	e.waitTaskState("stuck", 0, state.StateRunning)
	e.setTarget("stuck", state.TargetPaused)
	e.waitTaskState("stuck", 0, state.StatePaused)
	e.create("other", withConv(map[string]string{"name": "other", "connector.class": "test.TestSource", "topic": e.topic("other-out")}))
	e.waitTaskState("other", 0, state.StateRunning)
	if n := len(e.readTopic(e.topic("other-out"), 500)); n < 500 {
		t.Fatalf("other connector produced %d records", n)
	}
	h.mu.Lock()
	h.blockPoll = nil
	h.mu.Unlock()
	close(block)
}

func TestPauseStopsProducingAndResumeContinues(t *testing.T) {
	e := newEnv(t)
	e.create("pz", withConv(map[string]string{"name": "pz", "connector.class": "test.TestSource", "topic": e.topic("pz-out")}))
	e.waitTaskState("pz", 0, state.StateRunning)
	e.setTarget("pz", state.TargetPaused)
	e.waitTaskState("pz", 0, state.StatePaused)
	testutil.Eventually(t, 10*time.Second, "connector PAUSED", func() error {
		if st, _ := e.statuses.Connector("pz"); st.State != state.StatePaused {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	count := func() int64 {
		off, _ := e.offsets.Offset("pz", map[string]any{"task": 0})
		if off == nil {
			return -1
		}
		return off["seq"].(int64)
	}
	// Records produced before the pause are acked and their offsets
	// flushed a little later (on Apache Kafka, the first acks of a new
	// topic can take a while): wait until the offset settles.
	before := count()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		time.Sleep(400 * time.Millisecond)
		now := count()
		if now == before && now >= 0 {
			break
		}
		before = now
	}
	time.Sleep(500 * time.Millisecond)
	if after := count(); after != before {
		t.Fatalf("paused task kept producing: offset %d -> %d", before, after)
	}
	e.setTarget("pz", state.TargetStarted)
	e.waitTaskState("pz", 0, state.StateRunning)
	testutil.Eventually(t, 10*time.Second, "progress after resume", func() error {
		if c := count(); c <= before {
			return fmt.Errorf("offset still %d", c)
		}
		return nil
	})
}

// STOPPED shuts the tasks down and empties their configs, as Connect does.
func TestStopEmptiesTaskConfigs(t *testing.T) {
	e := newEnv(t)
	e.create("st", withConv(map[string]string{"name": "st", "connector.class": "test.TestSource", "topic": e.topic("st-out"), "tasks.max": "2"}))
	e.waitTaskState("st", 1, state.StateRunning)
	e.setTarget("st", state.TargetStopped)
	testutil.Eventually(t, 10*time.Second, "STOPPED with no tasks", func() error {
		c := e.configs.Snapshot().Connectors["st"]
		st, _ := e.statuses.Connector("st")
		if st.State != state.StateStopped || c == nil || len(c.Tasks) != 0 {
			return fmt.Errorf("status %+v, tasks %v", st, c)
		}
		return nil
	})
	e.setTarget("st", state.TargetStarted)
	e.waitTaskState("st", 1, state.StateRunning)
}

// Invariant 1 (sink): consumer offsets are committed only for records the
// sink wrote; a failing Write is redelivered after the restart, nothing lost.
func TestSinkCommitsOnlyWrittenRecords(t *testing.T) {
	e := newEnv(t)
	hooksFor("feed").records = 2000
	e.create("feed", withConv(map[string]string{"name": "feed", "connector.class": "test.TestSource", "topic": e.topic("sink-in")}))
	input := e.readTopic(e.topic("sink-in"), 2000)
	if len(input) != 2000 {
		t.Fatalf("feed produced %d", len(input))
	}
	// Every record of task 0 has key "0", so they share one partition.
	part := input[0].Partition
	seqAt := map[int64]int64{}
	for _, r := range input {
		var task int
		var seq int64
		fmt.Sscanf(string(r.Value), "%d:%d", &task, &seq)
		seqAt[r.Offset] = seq
	}
	h := hooksFor("sinky")
	h.writeFail, h.retriable = 2, 2
	e.create("sinky", withConv(map[string]string{"name": "sinky", "connector.class": "test.TestSink", "topics": e.topic("sink-in")}))

	ctx := context.Background()
	last := ""
	stop := time.Now().Add(30 * time.Second)
	for time.Now().Before(stop) {
		offs, err := e.adm.FetchOffsets(ctx, "connect-sinky")
		// Apache Kafka answers COORDINATOR_NOT_AVAILABLE (retriable) while
		// it creates __consumer_offsets for the first group; kfake never does.
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) && !kerr.IsRetriable(err) {
			t.Fatal(err)
		}
		committed := int64(0)
		if o, ok := offs.Lookup(e.topic("sink-in"), part); ok {
			committed = o.At
		}
		h.mu.Lock()
		written := map[int64]bool{}
		for _, s := range h.written {
			written[s] = true
		}
		h.mu.Unlock()
		for off := int64(0); off < committed; off++ {
			if !written[seqAt[off]] {
				t.Fatalf("offset %d committed but record at %d (seq %d) was never written (invariant 1)", committed, off, seqAt[off])
			}
		}
		if committed == 2000 && len(written) == 2000 {
			return
		}
		last = fmt.Sprintf("committed %d, written %d distinct, status %+v", committed, len(written), e.taskState("sinky", 0))
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("sink did not write and commit all 2000 records in time: %s", last)
}

// Graceful stop: every acknowledged record's offset is flushed.
func TestStopFlushesAcknowledgedOffsets(t *testing.T) {
	e := newEnv(t)
	e.create("gs", withConv(map[string]string{"name": "gs", "connector.class": "test.TestSource", "topic": e.topic("gs-out")}))
	e.waitTaskState("gs", 0, state.StateRunning)
	time.Sleep(300 * time.Millisecond)
	e.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	off, err := e.offsets.Offset("gs", map[string]any{"task": 0})
	if err != nil || off == nil {
		t.Fatalf("no offset after stop: %v %v", off, err)
	}
	last := off["seq"].(int64)
	recs := e.readTopic(e.topic("gs-out"), int(last)+1)
	maxSeq := int64(-1)
	for _, r := range recs {
		var task int
		var seq int64
		fmt.Sscanf(string(r.Value), "%d:%d", &task, &seq)
		if seq > maxSeq {
			maxSeq = seq
		}
	}
	if maxSeq != last {
		t.Fatalf("topic has up to seq %d, committed offset %d: a graceful stop must flush every acked offset", maxSeq, last)
	}
}

// Restart on request: the whole connector with its tasks, or only what is
// FAILED (nothing, for a healthy task).
func TestRestartOnRequest(t *testing.T) {
	e := newEnv(t)
	e.create("rs", withConv(map[string]string{"name": "rs", "connector.class": "test.TestSource", "topic": e.topic("rs-out")}))
	e.waitTaskState("rs", 0, state.StateRunning)
	h := hooksFor("rs")
	opened := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.opened
	}
	before := opened()
	e.rt.Restart("rs", true, true)
	time.Sleep(500 * time.Millisecond)
	if n := opened(); n != before {
		t.Fatalf("onlyFailed restarted a healthy task: opened %d -> %d", before, n)
	}
	e.rt.Restart("rs", true, false)
	testutil.Eventually(t, 10*time.Second, "task reopened", func() error {
		if n := opened(); n != before+1 {
			return fmt.Errorf("opened %d, want %d", n, before+1)
		}
		return nil
	})
	e.waitTaskState("rs", 0, state.StateRunning)
}

// WaitStopped returns only once a revoked task's pipeline has closed, even
// when it is called before the runtime processed the change (invariant 4
// across workers relies on it).
func TestWaitStoppedWaitsForThePipeline(t *testing.T) {
	e := newEnv(t)
	e.create("ws", withConv(map[string]string{"name": "ws", "connector.class": "test.TestSource", "topic": e.topic("ws-out")}))
	e.waitTaskState("ws", 0, state.StateRunning)
	e.cancel() // stop following the config topic: the test drives the runtime
	id := connectors.TaskID{Connector: "ws", Task: 0}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := e.rt.WaitStopped(ctx, []connectors.TaskID{id}); err == nil {
		t.Fatal("WaitStopped returned while the task runs")
	}
	e.rt.Apply(&Assignment{Generation: 2, Work: map[string]*ConnectorWork{}})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := e.rt.WaitStopped(ctx2, []connectors.TaskID{id}); err != nil {
		t.Fatal(err)
	}
	h := hooksFor("ws")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed < 1 {
		t.Fatal("WaitStopped returned before the task was closed")
	}
}

// A connector created PAUSED gets no tasks until it is resumed, as in
// Connect (KIP-980); a connector paused later keeps its tasks, paused.
func TestCreatedPausedHasNoTasksUntilResumed(t *testing.T) {
	e := newEnv(t)
	e.setTarget("cp", state.TargetPaused)
	e.create("cp", withConv(map[string]string{"name": "cp", "connector.class": "test.TestSource", "topic": e.topic("cp-out")}))
	testutil.Eventually(t, 20*time.Second, "connector PAUSED", func() error {
		if st, _ := e.statuses.Connector("cp"); st.State != state.StatePaused {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // time enough to have written task configs
	if tasks := e.configs.Snapshot().Connectors["cp"].Tasks; len(tasks) != 0 {
		t.Fatalf("connector created PAUSED has %d task config(s), want none until resumed", len(tasks))
	}
	e.setTarget("cp", state.TargetStarted)
	e.waitTaskState("cp", 0, state.StateRunning)
}

// topics.regex must match a whole topic name, as in Connect: a sink of
// "<t>" does not also consume "<t>-dlq" or "x<t>", which a regex matched
// anywhere in the name would.
func TestSinkTopicsRegexMatchesWholeNames(t *testing.T) {
	e := newEnv(t)
	base := e.topic("rx")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, topic := range []string{base, base + "-dlq", "x" + base} {
		if _, err := e.adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
		rec := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "0:%d", i)}
		if err := e.client.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	h := hooksFor("rx")
	e.create("rx", withConv(map[string]string{"name": "rx", "connector.class": "test.TestSink", "topics.regex": regexp.QuoteMeta(base)}))
	testutil.Eventually(t, 20*time.Second, "the sink writes the record of its topic", func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.written) == 0 {
			return fmt.Errorf("nothing written yet")
		}
		return nil
	})
	time.Sleep(time.Second) // time enough to consume the others, were they matched
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Equal(h.written, []int64{0}) {
		t.Fatalf("sink of topics.regex %q wrote sequence numbers %v, want only [0] (from %s)", base, h.written, base)
	}
}
