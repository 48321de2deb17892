package actors

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// metadataRequests counts the Metadata requests a client wrote.
type metadataRequests struct{ n atomic.Int64 }

func (m *metadataRequests) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == 3 {
		m.n.Add(1)
	}
}

// topicsOf returns a copy of the topics a producer's tasks noted.
func topicsOf(t *producedTopics) map[string]struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.topics)
}

// ADR 0032: a topic deleted after the connector that wrote to it stopped
// stays deleted, and the worker's shared producer stops asking about it:
// when another task starts (it checks before its first record; the
// periodic check is off), while another task runs (the periodic check
// finds it, the task moves), or when no task is left. Before, the shared
// producer's next metadata refresh (another connector's first record to
// another topic, or its periodic refresh, forced here) let the broker
// create the topic again, for as long as the worker ran; and a client that
// asks about a topic that does not exist refreshes its metadata every
// second (and holds a new topic's first record for up to 250 ms).
func TestDeletedTopicStaysDeletedAndLeavesTheProducer(t *testing.T) {
	for _, c := range []struct {
		name     string
		second   string // "starts" after the deletion, "runs" from before it, or ""
		interval time.Duration
	}{
		{"a-task-starts", "starts", time.Hour},
		{"a-task-runs", "runs", 200 * time.Millisecond},
		{"no-task-left", "", 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta := &metadataRequests{}
			e := newEnvOn(t, storetest.Start(t, "t", append(ProducerOpts(), kgo.WithHooks(meta))...), false, func(o *Options) {
				o.TopicCheckInterval = c.interval
			})
			gone, next := e.topic("gone"), e.topic("next")
			hooksFor("first").pollGap = 20 * time.Millisecond
			hooksFor("second").pollGap = 20 * time.Millisecond
			startSecond := func() {
				e.create("second", withConv(map[string]string{"name": "second", "connector.class": "test.TestSource", "topic": next, "tasks.max": "1"}))
				if n := len(e.readTopic(next, 50)); n < 50 {
					t.Fatalf("%d records in %s", n, next)
				}
			}
			e.create("first", withConv(map[string]string{"name": "first", "connector.class": "test.TestSource", "topic": gone, "tasks.max": "1"}))
			if n := len(e.readTopic(gone, 50)); n < 50 {
				t.Fatalf("%d records in %s", n, gone)
			}
			if c.second == "runs" {
				startSecond()
			}
			e.setTarget("first", state.TargetStopped)
			testutil.Eventually(t, 20*time.Second, "first stopped", func() error {
				if st, _ := e.statuses.Connector("first"); st.State != state.StateStopped {
					return fmt.Errorf("status %+v", st)
				}
				return nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := e.adm.DeleteTopic(ctx, gone); err != nil {
				t.Fatal(err)
			}
			e.waitTopicGone(ctx, gone)

			e.rt.shared.mu.Lock()
			worker := e.rt.shared.current
			e.rt.shared.mu.Unlock()
			if c.second == "starts" {
				startSecond()
			} else {
				e.k.Producer.ForceMetadataRefresh()
			}
			// The refresh asked the brokers about every topic the
			// shared producer knew.
			for range 10 {
				// Not kadm's ListTopics: its cache may still hold the
				// absence waitTopicGone saw.
				if deletedTopic(ctx, e.client, []string{gone}) != gone {
					t.Fatalf("%s, deleted, was created again (or could not be looked up)", gone)
				}
				time.Sleep(200 * time.Millisecond)
			}
			// franz-go refreshes a client's metadata every 5 minutes when
			// nothing fails; a deleted topic it still asks about fails
			// every refresh, and the next comes within a second.
			testutil.Eventually(t, 30*time.Second, "the worker's producer quiet", func() error {
				before := meta.n.Load()
				time.Sleep(3 * time.Second)
				if n := meta.n.Load() - before; n > 1 {
					return fmt.Errorf("it asked for metadata %d times in 3 s", n)
				}
				return nil
			})
			// It went quiet because the runtime renewed the shared
			// producer, any task moved, and the worker's producer forgot
			// its topics.
			e.rt.shared.mu.Lock()
			cur := e.rt.shared.current
			tasks := 0
			if c.second != "" {
				tasks = 1
			}
			if cur == worker || worker.refs != 0 || cur.refs != tasks {
				t.Errorf("renewed %v, %d tasks on the worker's producer, %d on the current one", cur != worker, worker.refs, cur.refs)
			}
			e.rt.shared.mu.Unlock()
			if now, old := topicsOf(&cur.topics), topicsOf(&worker.topics); len(now) != tasks || old != nil {
				t.Errorf("the current producer's topics: %v; the worker's: %v", now, old)
			}
			if c.second == "" {
				return
			}
			// The second task wrote on, without a gap, on the new producer.
			got := e.readTopic(next, 150)
			seen := map[string]bool{}
			for _, r := range got {
				seen[string(r.Value)] = true
			}
			if len(got) < 150 || len(seen) != len(got) {
				t.Fatalf("%d records (%d distinct) in %s", len(got), len(seen), next)
			}
			if st := e.taskState("second", 0); st.State != state.StateRunning {
				t.Errorf("second: %s %s", st.State, st.Trace)
			}
			h := hooksFor("second")
			h.mu.Lock()
			opened := h.opened
			h.mu.Unlock()
			if opened != 1 {
				t.Errorf("second opened %d times: the move restarted it", opened)
			}
		})
	}
}

// ADR 0032 for a connector's own producer (producer overrides): its task
// writes to one topic, then to another, and the first is deleted while
// the task runs. The periodic check retires the producer; the task moves
// to a new one of its own without a restart or a gap, and no client asks
// about the deleted topic again (nor creates it).
func TestDeletedTopicRetiresTheConnectorsOwnProducer(t *testing.T) {
	e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, func(o *Options) {
		o.TopicCheckInterval = 200 * time.Millisecond
	})
	gone, next := e.topic("gone"), e.topic("next")
	h := hooksFor("own")
	h.pollGap = 20 * time.Millisecond
	e.create("own", withConv(map[string]string{"name": "own", "connector.class": "test.TestSource", "topic": gone, "tasks.max": "1",
		"producer.override.linger.ms": "1"}))
	if n := len(e.readTopic(gone, 50)); n < 50 {
		t.Fatalf("%d records in %s", n, gone)
	}
	h.mu.Lock()
	h.topic = next
	h.mu.Unlock()
	if n := len(e.readTopic(next, 50)); n < 50 {
		t.Fatalf("%d records in %s", n, next)
	}
	ownProducers := func() []*ownProducer {
		p := &e.rt.producers
		p.mu.Lock()
		defer p.mu.Unlock()
		var out []*ownProducer
		for _, o := range p.m {
			out = append(out, o)
		}
		return out
	}
	first := ownProducers()
	if len(first) != 1 {
		t.Fatalf("%d producers of the connector's own", len(first))
	}
	if got := topicsOf(&first[0].topics); len(got) != 2 {
		t.Fatalf("the producer noted %v, want %s and %s", got, gone, next)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.adm.DeleteTopic(ctx, gone); err != nil {
		t.Fatal(err)
	}
	e.waitTopicGone(ctx, gone)
	testutil.Eventually(t, 20*time.Second, "the connector's producer retired", func() error {
		now := ownProducers()
		if len(now) != 1 || now[0] == first[0] || !first[0].stale.Load() {
			return fmt.Errorf("%d producers, the first stale %v", len(now), first[0].stale.Load())
		}
		if got := topicsOf(&now[0].topics); len(got) != 1 {
			return fmt.Errorf("the new producer noted %v", got)
		}
		return nil
	})
	// The old client, the one that asks about the deleted topic at each
	// metadata refresh (every second once a refresh failed), is closed
	// once the task moved off it. (The periodic check's own requests go
	// through the current client every 200 ms here, so counting requests
	// would not tell.)
	testutil.Eventually(t, 20*time.Second, "the retired producer closed", func() error {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		if err := first[0].client.ProduceSync(pctx, &kgo.Record{Topic: next, Value: []byte("probe")}).FirstErr(); !errors.Is(err, kgo.ErrClientClosed) {
			return fmt.Errorf("producing with it: %v", err)
		}
		return nil
	})
	if deletedTopic(ctx, e.client, []string{gone}) != gone {
		t.Fatalf("%s, deleted, was created again (or could not be looked up)", gone)
	}
	// The task wrote on without a gap: its sequence numbers in next run
	// from the first to the last with none missing, on the new producer.
	h.mu.Lock()
	opened := h.opened
	h.mu.Unlock()
	if opened != 1 {
		t.Errorf("the task opened %d times: the move restarted it", opened)
	}
	got := e.readTopic(next, 200)
	seqs := map[int64]bool{}
	lo, hi := int64(-1), int64(-1)
	for _, r := range got {
		var task, seq int64
		if _, err := fmt.Sscanf(string(r.Value), "%d:%d", &task, &seq); err != nil {
			t.Fatalf("value %q: %v", r.Value, err)
		}
		seqs[seq] = true
		if lo < 0 || seq < lo {
			lo = seq
		}
		hi = max(hi, seq)
	}
	if len(got) < 200 || int64(len(seqs)) != hi-lo+1 {
		t.Fatalf("%d records in %s, %d distinct sequence numbers from %d to %d", len(got), next, len(seqs), lo, hi)
	}
}

// ADR 0032 for a sink's dead letter queue: its topic is deleted while the
// sink runs. The periodic check renews the producer it went through; the
// next bad record makes the queue's topic again, as the task made it at its
// start, without failing the task, and the good records go on being
// written.
func TestDeletedDeadLetterQueueTopic(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra map[string]string
	}{
		{"shared-producer", nil},
		{"own-producer", map[string]string{"producer.override.linger.ms": "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, func(o *Options) {
				o.TopicCheckInterval = 200 * time.Millisecond
			})
			in, dlq := e.topic("dlq-gone-in"), e.topic("dlq-gone")
			good := produceMixed(t, e, in)
			extra := map[string]string{"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq}
			maps.Copy(extra, c.extra)
			e.create("dlq-gone", jsonSink("dlq-gone", in, extra))
			h := hooksFor("dlq-gone")
			written := func(want int) {
				t.Helper()
				testutil.Eventually(t, 40*time.Second, "good records written", func() error {
					h.mu.Lock()
					defer h.mu.Unlock()
					if len(h.written) < want {
						return fmt.Errorf("%d written", len(h.written))
					}
					return nil
				})
			}
			written(good)
			if got := e.readTopic(dlq, 10); len(got) != 10 {
				t.Fatalf("dead letter queue has %d records, want 10", len(got))
			}
			// The producer the queue goes through: the shared one's
			// generation, or the connector's own.
			producerNow := func() (stale func() bool) {
				if c.extra == nil {
					e.rt.shared.mu.Lock()
					defer e.rt.shared.mu.Unlock()
					return e.rt.shared.current.stale.Load
				}
				p := &e.rt.producers
				p.mu.Lock()
				defer p.mu.Unlock()
				if len(p.m) != 1 {
					t.Fatalf("%d producers of the connector's own", len(p.m))
				}
				for _, o := range p.m {
					stale = o.stale.Load
				}
				return stale
			}
			before := producerNow()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if _, err := e.adm.DeleteTopic(ctx, dlq); err != nil {
				t.Fatal(err)
			}
			e.waitTopicGone(ctx, dlq)
			testutil.Eventually(t, 20*time.Second, "the queue's producer renewed", func() error {
				if !before() {
					return errors.New("not stale")
				}
				return nil
			})
			var recs []*kgo.Record
			for i := 100; i < 200; i++ {
				v := fmt.Sprintf(`"0:%d"`, i)
				if i%10 == 5 {
					v = fmt.Sprintf("not json %d", i)
				}
				recs = append(recs, &kgo.Record{Topic: in, Key: []byte("k"), Value: []byte(v)})
			}
			if err := e.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			written(2 * good)
			got := e.readTopic(dlq, 10)
			if len(got) != 10 {
				t.Fatalf("the dead letter queue's new topic has %d records, want 10", len(got))
			}
			for i, r := range got {
				if want := fmt.Sprintf("not json %d", 105+10*i); string(r.Value) != want {
					t.Errorf("dead letter %d: %q, want %q", i, r.Value, want)
				}
			}
			if st := e.taskState("dlq-gone", 0); st.State != state.StateRunning {
				t.Errorf("task: %s %s", st.State, st.Trace)
			}
			h.mu.Lock()
			opened := h.opened
			h.mu.Unlock()
			if opened != 1 {
				t.Errorf("the task opened %d times: the deleted topic failed it", opened)
			}
		})
	}
}
