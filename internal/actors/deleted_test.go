package actors

import (
	"context"
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
