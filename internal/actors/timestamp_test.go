package actors

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// stampsBySeq reads n records of "0:<seq>" from topic and returns their
// timestamps in seq order.
func stampsBySeq(t *testing.T, e *env, topic string, n int) []time.Time {
	t.Helper()
	recs := e.readTopic(topic, n)
	if len(recs) < n {
		t.Fatalf("%d records in %s, want %d", len(recs), topic, n)
	}
	sort.Slice(recs, func(i, j int) bool { return seqOf(string(recs[i].Value)) < seqOf(string(recs[j].Value)) })
	out := make([]time.Time, n)
	for i, r := range recs[:n] {
		if seq := seqOf(string(r.Value)); seq != int64(i) {
			t.Fatalf("record %d has seq %d", i, seq)
		}
		out[i] = r.Timestamp
	}
	return out
}

// A record whose source gives no timestamp is stamped when the pipeline
// hands it to the producer, as Java's producer stamps it at send. The
// pipeline reads the clock once for a run of records converted back to
// back (sendClock), so this tries the two ways a run could outlive its
// moment: the next poll's records, which come 300 ms later, must not carry
// the previous poll's stamp.
func TestSourceRecordsOfALaterPollGetALaterTimestamp(t *testing.T) {
	e := newEnv(t)
	h := hooksFor("stamp-poll")
	h.mu.Lock()
	h.records, h.pollGap = 200, 300*time.Millisecond
	h.mu.Unlock()
	e.create("stamp-poll", withConv(map[string]string{"name": "stamp-poll", "connector.class": "test.TestSource",
		"topic": e.topic("stamp-poll-out"), "tasks.max": "1"}))
	stamps := stampsBySeq(t, e, e.topic("stamp-poll-out"), 200)
	// The test source polls 100 records at a time.
	for i := 100; i < 200; i++ {
		if gap := stamps[i].Sub(stamps[99]); gap < 250*time.Millisecond {
			t.Fatalf("seq %d, of the second poll, is stamped %v after seq 99 of the first; want the 300 ms between the polls", i, gap)
		}
	}
	if d := stamps[99].Sub(stamps[0]); d < 0 || d > 250*time.Millisecond {
		t.Errorf("the first poll's records are stamped %v apart", d)
	}
}

// ... and the records after a wait for buffer.memory: with room for one
// record and each produce answered 40 ms late, each record waits for the
// one before it. A record is stamped before its own wait, as Java's
// producer stamps it before it blocks on buffer.memory, so seq 1 carries
// seq 0's moment; every later one is stamped after the wait of the one
// before it and must show it.
func TestSourceRecordAfterABufferMemoryWaitGetsALaterTimestamp(t *testing.T) {
	e := newFakeEnv(t)
	topic := e.topic("stamp-wait-out")
	if _, err := e.adm.CreateTopic(context.Background(), 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	e.broker.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.broker.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		// Produce v13+ names topics by id: every produce is slowed, which
		// only this test's connector sends.
		if len(pr.Topics) > 0 {
			e.broker.SleepControl(func() { time.Sleep(40 * time.Millisecond) })
		}
		return nil, nil, false
	})
	h := hooksFor("stamp-wait")
	h.mu.Lock()
	h.records = 10
	h.mu.Unlock()
	e.create("stamp-wait", withConv(map[string]string{"name": "stamp-wait", "connector.class": "test.TestSource",
		"topic": topic, "tasks.max": "1", "producer.override.buffer.memory": "6"}))
	stamps := stampsBySeq(t, e, topic, 10)
	for i := 2; i < 10; i++ {
		if d := stamps[i].Sub(stamps[i-1]); d < 30*time.Millisecond {
			t.Fatalf("seq %d is stamped %v after seq %d, whose 40 ms wait for buffer.memory came between them; stamps %v", i, d, i-1, stamps)
		}
	}
}
