package actors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/internal/kafkasec"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// A topic deleted and recreated while tasks produce to it: franz-go fails
// every record for the new instance with UNKNOWN_TOPIC_ID in a client that
// produced to the old one, and a worker's tasks share a client. The task
// that meets it must fail and start again with a client that can write to
// the new instance (a new generation of the shared producer, or a new
// producer of the connector's own with producer.override.*), whatever
// errors.tolerance says, and then write every record it had not
// committed; a task writing to another topic keeps running on its
// producer. Before the renewal, the task failed again at each restart and
// never wrote another record (and, with errors.tolerance=all, skipped
// every record and committed their offsets).
func TestRecreatedTopicTasksStartAgainWithANewProducer(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra map[string]string
		eos   bool
	}{
		{"shared", nil, false},
		{"tolerance-all", map[string]string{"errors.tolerance": "all"}, false},
		// A single task's own producer closed when it failed, so this
		// worked before; the task's transactional producer is its own.
		{"own-producer", map[string]string{"producer.override.linger.ms": "1"}, false},
		{"exactly-once", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e *env
			if c.eos {
				e = newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, withExactlyOnce)
			} else {
				e = newEnv(t)
			}
			recreated, other := e.topic("recreated"), e.topic("bystander")
			writer, bystander := "writer-"+c.name, "bystander-"+c.name
			for _, n := range []string{writer, bystander} {
				hooksFor(n).pollGap = 20 * time.Millisecond
			}
			cfg := withConv(map[string]string{"name": writer, "connector.class": "test.TestSource", "topic": recreated, "tasks.max": "1"})
			for k, v := range c.extra {
				cfg[k] = v
			}
			e.create(writer, cfg)
			e.create(bystander, withConv(map[string]string{"name": bystander, "connector.class": "test.TestSource", "topic": other, "tasks.max": "1"}))
			e.waitTaskState(writer, 0, state.StateRunning)
			e.waitTaskState(bystander, 0, state.StateRunning)
			if n := len(e.readTopic(recreated, 300)); n < 300 {
				t.Fatalf("%d records before the topic was deleted", n)
			}

			e.rt.shared.mu.Lock()
			before := e.rt.shared.current
			e.rt.shared.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := e.adm.DeleteTopic(ctx, recreated); err != nil {
				t.Fatal(err)
			}
			e.waitTopicGone(ctx, recreated)
			if _, err := e.adm.CreateTopic(ctx, 1, -1, nil, recreated); err != nil {
				t.Fatal(err)
			}

			// The new instance gets records again, from a task that
			// started again; the bystander never stopped.
			after := e.readRecords(recreated, 300, 0)
			if len(after) < 300 {
				h := hooksFor(writer)
				h.mu.Lock()
				opened := h.opened
				h.mu.Unlock()
				t.Fatalf("%d records in the recreated topic; the writer opened %d times, its status %+v", len(after), opened, e.taskState(writer, 0))
			}
			e.waitTaskState(writer, 0, state.StateRunning)
			h := hooksFor(writer)
			h.mu.Lock()
			opened := h.opened
			h.mu.Unlock()
			if opened < 2 {
				t.Errorf("the writer opened %d times: it never started again", opened)
			}
			hb := hooksFor(bystander)
			hb.mu.Lock()
			openedB := hb.opened
			hb.mu.Unlock()
			if openedB != 1 {
				t.Errorf("the bystander opened %d times: a recreated topic it does not write to restarted it", openedB)
			}
			if st := e.taskState(bystander, 0); st.State != state.StateRunning {
				t.Errorf("bystander %s: %s", st.State, st.Trace)
			}
			if c.extra == nil && !c.eos {
				// The bystander, still running, leaves the stale
				// generation too once it has nothing in flight.
				testutil.Eventually(t, 20*time.Second, "no task on the stale shared producer", func() error {
					e.rt.shared.mu.Lock()
					defer e.rt.shared.mu.Unlock()
					if !before.stale.Load() || before.refs != 0 || e.rt.shared.current.refs != 2 {
						return fmt.Errorf("stale %v, %d tasks on it, %d on the current one", before.stale.Load(), before.refs, e.rt.shared.current.refs)
					}
					return nil
				})
			}

			// Nothing skipped: the new instance holds every seq from
			// the first it got on, and the offsets committed are of
			// records it holds.
			e.setTarget(writer, state.TargetStopped)
			testutil.Eventually(t, 20*time.Second, "the writer stopped", func() error {
				st, _ := e.statuses.Connector(writer)
				if c := e.configs.Snapshot().Connectors[writer]; st.State != state.StateStopped || c == nil || len(c.Tasks) != 0 {
					return fmt.Errorf("status %+v", st)
				}
				return nil
			})
			seen := map[int64]bool{}
			lo, hi := int64(-1), int64(-1)
			// Stopped: the topic holds all it will; read past the 300
			// known to be there for as long again as they took.
			for _, r := range e.readRecords(recreated, 300, 2*time.Second) {
				_, s, _ := strings.Cut(string(r.Value), ":")
				seq, err := strconv.ParseInt(strings.Trim(s, `"`), 10, 64)
				if err != nil {
					t.Fatalf("value %q: %v", r.Value, err)
				}
				seen[seq] = true
				if lo < 0 || seq < lo {
					lo = seq
				}
				hi = max(hi, seq)
			}
			for s := lo; s <= hi; s++ {
				if !seen[s] {
					t.Fatalf("seq %d missing from the recreated topic, which holds %d..%d", s, lo, hi)
				}
			}
			off, err := e.offsets.Offset(writer, map[string]any{"task": 0})
			if err != nil || off == nil {
				t.Fatalf("offset %v, %v", off, err)
			}
			if seq := off["seq"].(int64); seq > hi || seq < lo {
				t.Errorf("committed seq %d, the recreated topic holds %d..%d", seq, lo, hi)
			}
		})
	}
}

// The shared producer's generations (ADR 0031): a renewal makes one new
// client however many tasks of the stale generation ask; tasks that take
// the producer afterwards get it; a generation the runtime made is closed
// once stale and released by its last task, or when the runtime stops;
// the worker's own is never closed by the runtime.
func TestSharedProducerGenerations(t *testing.T) {
	seed := kgo.SeedBrokers("127.0.0.1:1") // never dialled: nothing is produced
	worker, err := kgo.NewClient(seed)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	r := &Runtime{opts: Options{Producer: worker, WorkerID: "w", KafkaOpts: []kgo.Opt{seed}, Log: zerolog.Nop()}}
	closed := func(cl *kgo.Client) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		return errors.Is(cl.ProduceSync(ctx, &kgo.Record{Topic: "t"}).FirstErr(), kgo.ErrClientClosed)
	}
	security := r.security(kafkasec.Producer, nil)

	a, releaseA := r.takeShared(security)
	b, releaseB := r.takeShared(security)
	if a.Client != worker || b.Client != worker || a.stale() {
		t.Fatal("the first generation is not the worker's producer")
	}
	a.recreated("t")
	b.recreated("t") // too late: a renewed the generation they share
	if !a.stale() || !b.stale() {
		t.Fatal("the renewed generation is not stale")
	}
	c, releaseC := r.takeShared(security)
	d, releaseD := r.takeShared(security)
	if c.Client == worker || d.Client != c.Client || c.stale() {
		t.Fatalf("after a renewal: %p and %p, the worker's %p, stale %v", c.Client, d.Client, worker, c.stale())
	}
	second := c.Client
	c.recreated("u")
	e, releaseE := r.takeShared(security)
	if e.Client == second || e.Client == worker {
		t.Fatal("a second renewal gave no third client")
	}
	releaseC()
	if closed(second) {
		t.Fatal("a stale generation closed while a task still holds it")
	}
	releaseD()
	releaseD() // a release is idempotent
	if !closed(second) {
		t.Error("a stale generation the runtime made stayed open after its last task released it")
	}
	releaseA()
	releaseB()
	if closed(worker) {
		t.Error("the runtime closed the worker's producer")
	}
	// A stale generation a task still holds when the runtime stops is
	// closed with the current one.
	e.recreated("v")
	g, releaseG := r.takeShared(security)
	r.shared.closeAll()
	if !closed(e.Client) || !closed(g.Client) {
		t.Errorf("after the runtime stopped: the stale generation a task held closed %v, the current one %v", closed(e.Client), closed(g.Client))
	}
	releaseE()
	releaseG()
	f, releaseF := r.takeShared(security)
	defer releaseF()
	if f.recreated("t"); r.shared.current.client != g.Client {
		t.Error("a stopped runtime made a new generation")
	}
}

// A sink's input topic deleted and recreated: franz-go's consumer refuses
// the new instance for good and returned UNKNOWN_TOPIC_ID at every poll,
// which the task logged (164,083 lines in 40 s on Apache Kafka) and
// otherwise ignored, RUNNING and reading nothing. It must fail and start
// again with a new consumer, which reads the new instance. Where it starts
// there is the group's committed offset for the topic's name: Kafka drops
// a deleted topic's offsets, but a commit made by name after the topic
// was created again (by any consumer of the group, Connect's included)
// lands on the new instance, so the test asks only for the records past
// the old instance's end (at least once from there).
func TestRecreatedTopicSinkStartsAgainWithANewConsumer(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("sink-recreated")
	// The connector's group, connect-<name>, is unique on a shared broker.
	name := topic
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produce := func(from, n int64) {
		t.Helper()
		cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), kgo.DefaultProduceTopic(topic))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := from; i < from+n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("0:%d", i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	written := func() map[int64]bool {
		h := hooksFor(name)
		h.mu.Lock()
		defer h.mu.Unlock()
		m := map[int64]bool{}
		for _, s := range h.written {
			m[s] = true
		}
		return m
	}
	all := func(from, to int64) func() error {
		return func() error {
			w := written()
			for s := from; s < to; s++ {
				if !w[s] {
					return fmt.Errorf("seq %d not written (%d written); task %+v", s, len(w), e.taskState(name, 0))
				}
			}
			return nil
		}
	}
	produce(0, 50)
	e.create(name, withConv(map[string]string{"name": name, "connector.class": "test.TestSink", "topics": topic}))
	testutil.Eventually(t, 20*time.Second, "the first instance's records written", all(0, 50))

	if _, err := e.adm.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	e.waitTopicGone(ctx, topic)
	if _, err := e.adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produce(100, 100)
	testutil.Eventually(t, 40*time.Second, "the new instance's records past offset 50 written", all(150, 200))
	e.waitTaskState(name, 0, state.StateRunning)
}

// waitTopicGone waits until the broker no longer lists topic.
func (e *env) waitTopicGone(ctx context.Context, topic string) {
	e.t.Helper()
	testutil.Eventually(e.t, 20*time.Second, topic+" deleted", func() error {
		td, err := e.adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		if td.Has(topic) {
			return fmt.Errorf("still listed")
		}
		return nil
	})
}

// A sink's offset commit refused because the partition does not exist is
// dropped, not retried (a retry could land on a topic of the same name
// created meanwhile, ADR 0031); it must not stop the partition's later
// offsets from being committed once the task writes more of it, nor
// commit anything the task did not write. The embedded broker refuses the
// group's first commits with UNKNOWN_TOPIC_OR_PARTITION.
func TestSinkCommitRefusedForAMissingPartitionIsDroppedNotLost(t *testing.T) {
	e := newFakeEnv(t) // the refusals are injected with ControlKey
	topic := e.topic("commit-refused")
	name := "refused"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	refusing, refused := true, 0
	e.broker.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.broker.KeepControl()
		oc := req.(*kmsg.OffsetCommitRequest)
		mu.Lock()
		defer mu.Unlock()
		if oc.Group != "connect-"+name || !refusing {
			return nil, nil, false
		}
		refused++
		resp := oc.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range oc.Topics {
			t := kmsg.NewOffsetCommitResponseTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			for _, p := range rt.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
				t.Partitions = append(t.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil, true
	})
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(from, n int64) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("0:%d", i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	committed := func() (int64, error) {
		o, err := e.adm.FetchOffsets(ctx, "connect-"+name)
		if err != nil {
			return -1, err
		}
		r, ok := o.Lookup(topic, 0)
		if !ok {
			return -1, nil
		}
		return r.At, r.Err
	}
	writtenCount := func() int {
		h := hooksFor(name)
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.written)
	}

	produce(0, 50)
	e.create(name, withConv(map[string]string{"name": name, "connector.class": "test.TestSink", "topics": topic}))
	testutil.Eventually(t, 20*time.Second, "50 written and a commit refused", func() error {
		mu.Lock()
		n := refused
		mu.Unlock()
		if w := writtenCount(); w < 50 || n == 0 {
			return fmt.Errorf("%d written, %d commits refused", w, n)
		}
		return nil
	})
	// Dropped, not retried: no more commits come while nothing new is
	// written (a commit every 100 ms would otherwise be refused again).
	mu.Lock()
	before := refused
	mu.Unlock()
	time.Sleep(time.Second)
	mu.Lock()
	after := refused
	refusing = false
	mu.Unlock()
	if after > before+1 {
		t.Errorf("the refused offset was committed again %d times in a second", after-before)
	}
	if at, err := committed(); err != nil || at > 50 {
		t.Fatalf("committed %d (%v) with nothing accepted", at, err)
	}
	produce(50, 10)
	testutil.Eventually(t, 20*time.Second, "the partition committed once more was written", func() error {
		at, err := committed()
		if err != nil || at != 60 {
			return fmt.Errorf("committed %d (%v), %d written", at, err, writtenCount())
		}
		return nil
	})
	if st := e.taskState(name, 0); st.State != state.StateRunning {
		t.Errorf("task %s: %s", st.State, st.Trace)
	}
}
