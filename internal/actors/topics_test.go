package actors

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// countingRecorder counts the calls that reach the recorder.
type countingRecorder struct {
	mu    sync.Mutex
	calls map[string]int // "connector/task/topic" -> calls
	epoch atomic.Uint64
}

func (c *countingRecorder) RecordActiveTopic(connector string, task int, topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[fmt.Sprintf("%s/%d/%s", connector, task, topic)]++
}

func (c *countingRecorder) ActiveTopicsEpoch() uint64 { return c.epoch.Load() }

func (c *countingRecorder) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

func newTestTaskTopics(ctx context.Context, rec TopicRecorder) *taskTopics {
	r := &taskRun{rt: &Runtime{opts: Options{Topics: rec}}, id: connectors.TaskID{Connector: "c", Task: 3}}
	return r.newTaskTopics(ctx)
}

// The recorder is called once per topic and epoch, however many records
// and goroutines use the topic; the hot path allocates nothing.
func TestTaskTopicsCallsTheRecorderOncePerEpoch(t *testing.T) {
	rec := &countingRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tt := newTestTaskTopics(ctx, rec)
	orders, payments := tt.entry("orders"), tt.entry("payments")
	if tt.entry("orders") != orders {
		t.Fatal("a second entry for the same topic")
	}

	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10000 {
				tt.used(orders)
				tt.used(payments)
			}
		}()
	}
	wg.Wait()
	want := map[string]int{"c/3/orders": 1, "c/3/payments": 1}
	if got := rec.snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("recorder calls %v, want %v", got, want)
	}
	if allocs := testing.AllocsPerRun(1000, func() { tt.used(orders) }); allocs != 0 {
		t.Fatalf("a recorded topic's use allocates %.1f times", allocs)
	}

	// The recorder forgot (a reset): the next use of each topic records
	// it again, once.
	rec.epoch.Add(1)
	for range 100 {
		tt.use("orders")
	}
	want["c/3/orders"] = 2
	if got := rec.snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a reset, recorder calls %v, want %v", got, want)
	}

	// A stopping task records nothing, not even a new topic.
	cancel()
	rec.epoch.Add(1)
	tt.use("orders")
	tt.use("refunds")
	if got := rec.snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("a stopping task recorded: %v", got)
	}

	// Without a recorder nothing is recorded and nothing fails.
	var none *taskTopics = newTestTaskTopics(context.Background(), nil)
	if none != nil {
		t.Fatal("task topics without a recorder")
	}
	none.use("orders")
	none.used(none.entry("orders"))
}

// newTrackingEnv is newEnv with the status log recording the topics tasks
// use, as a worker with topic.tracking.enable=true runs.
func newTrackingEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), true)
}

func (e *env) waitActiveTopics(name string, want ...string) {
	e.t.Helper()
	if want == nil {
		want = []string{}
	}
	testutil.Eventually(e.t, 20*time.Second, fmt.Sprintf("active topics of %s %v", name, want), func() error {
		if got := e.statuses.ActiveTopics(name); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("active topics %v", got)
		}
		return nil
	})
}

// topicRecordCount counts the records (tombstones too) of one active topic
// key in the status topic.
func (e *env) topicRecordCount(connector, topic string) (records, tombstones int) {
	e.t.Helper()
	key := "status-topic-" + topic + ":connector-" + connector
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.statuses.Flush(ctx); err != nil {
		e.t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), kgo.ConsumeTopics(e.k.Prefix+"-status"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	// The status topic is small here: read until a poll finds nothing new.
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if fs.NumRecords() == 0 {
			return records, tombstones
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) != key {
				return
			}
			if r.Value == nil {
				tombstones++
			} else {
				records++
			}
		})
	}
}

// A source records the topic it produces to once, however many records it
// sends with however many tasks; after a reset it records it again; its
// deletion tombstones it for good.
func TestSourceRecordsItsTopic(t *testing.T) {
	e := newTrackingEnv(t)
	h := hooksFor("tracked-src")
	h.records = 1000
	out := e.topic("tracked-src-out")
	e.create("tracked-src", withConv(map[string]string{"name": "tracked-src", "connector.class": "test.TestSource", "topic": out, "tasks.max": "2"}))
	e.waitTaskState("tracked-src", 0, state.StateRunning)
	e.waitTaskState("tracked-src", 1, state.StateRunning)
	e.readTopic(out, 2000)
	e.waitActiveTopics("tracked-src", out)
	if n, _ := e.topicRecordCount("tracked-src", out); n != 1 {
		t.Fatalf("%d records of the active topic after thousands of produced records, want 1", n)
	}

	// After a reset, tasks that produce again record the topic again.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.statuses.ResetActiveTopics(ctx, "tracked-src"); err != nil {
		t.Fatal(err)
	}
	e.waitActiveTopics("tracked-src")
	h.mu.Lock()
	h.records = 1100
	h.mu.Unlock()
	e.readTopic(out, 2200)
	e.waitActiveTopics("tracked-src", out)
	if n, tomb := e.topicRecordCount("tracked-src", out); n != 2 || tomb != 1 {
		t.Fatalf("after a reset: %d records and %d tombstones, want 2 and 1", n, tomb)
	}

	// Deleted: the topic is tombstoned once the tasks stopped, and no
	// late acknowledgement records it again.
	if err := e.configs.DeleteConnector(ctx, "tracked-src"); err != nil {
		t.Fatal(err)
	}
	e.waitActiveTopics("tracked-src")
	time.Sleep(500 * time.Millisecond)
	if got := e.statuses.ActiveTopics("tracked-src"); len(got) != 0 {
		t.Fatalf("a deleted connector's topic came back: %v", got)
	}
	if n, tomb := e.topicRecordCount("tracked-src", out); n != 2 || tomb != 2 {
		t.Fatalf("after the deletion: %d records and %d tombstones, want 2 and 2", n, tomb)
	}
}

// A sink records each topic it consumes from.
func TestSinkRecordsTheTopicsItConsumes(t *testing.T) {
	e := newTrackingEnv(t)
	in1, in2 := e.topic("tracked-in-1"), e.topic("tracked-in-2")
	var recs []*kgo.Record
	for i := range 50 {
		recs = append(recs, &kgo.Record{Topic: in1, Value: []byte(fmt.Sprintf("0:%d", i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, topic := range []string{in1, in2} {
		if err := createTopic(ctx, e.adm, topic, 1, -1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.create("tracked-sink", withConv(map[string]string{"name": "tracked-sink", "connector.class": "test.TestSink",
		"topics": in1 + "," + in2}))
	e.waitTaskState("tracked-sink", 0, state.StateRunning)
	// Only the topic a record came from counts, not every subscribed one.
	e.waitActiveTopics("tracked-sink", in1)
	if err := e.client.ProduceSync(ctx, &kgo.Record{Topic: in2, Value: []byte("0:50")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want := []string{in1, in2}
	if in2 < in1 {
		want = []string{in2, in1}
	}
	e.waitActiveTopics("tracked-sink", want...)
	if n, _ := e.topicRecordCount("tracked-sink", in1); n != 1 {
		t.Fatalf("%d records of %s, want 1", n, in1)
	}

	// After a reset, the next record consumed records its topic again.
	if err := e.statuses.ResetActiveTopics(ctx, "tracked-sink"); err != nil {
		t.Fatal(err)
	}
	e.waitActiveTopics("tracked-sink")
	if err := e.client.ProduceSync(ctx, &kgo.Record{Topic: in1, Value: []byte("0:51")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.waitActiveTopics("tracked-sink", in1)
	if n, tomb := e.topicRecordCount("tracked-sink", in1); n != 2 || tomb != 1 {
		t.Fatalf("after a reset: %d records and %d tombstones of %s, want 2 and 1", n, tomb, in1)
	}
}
