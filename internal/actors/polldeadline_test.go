package actors

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/testutil"
)

// A Poll ends on the grid's next tick or at its bound, whichever comes
// first: never after the bound, never before now, and with the full
// bound, always on a whole second.
func TestPollDeadlineIsTheNextTickWithinTheBound(t *testing.T) {
	base := time.Now()
	for i := 0; i < 10000; i++ {
		now := base.Add(time.Duration(rand.Int64N(int64(10 * time.Second))))
		if i%10 == 0 {
			now = now.Truncate(time.Second) // exactly on a tick
		}
		for _, bound := range []time.Duration{10 * time.Millisecond, 300 * time.Millisecond, 999 * time.Millisecond, pollTimeout} {
			d := pollDeadline(now, bound)
			if !d.After(now) || d.After(now.Add(bound)) {
				t.Fatalf("now %v bound %v: deadline %v, outside (now, now+bound]", now, bound, d)
			}
			tick := now.Truncate(pollTimeout).Add(pollTimeout)
			want := tick
			if now.Add(bound).Before(tick) {
				want = now.Add(bound)
			}
			if !d.Equal(want) {
				t.Fatalf("now %v bound %v: deadline %v, want %v", now, bound, d, want)
			}
			if bound == pollTimeout && d.Nanosecond() != 0 {
				t.Fatalf("now %v: a full-length Poll ends at %v, off the grid", now, d)
			}
		}
	}
}

// settled is true only with nothing in flight and every acknowledged offset
// flushed; an ack after a settled look makes it false again.
func TestTrackerSettled(t *testing.T) {
	tr := newOffsetTracker()
	if !tr.settled() {
		t.Fatal("a new tracker is not settled")
	}
	a := map[string]any{"p": "a"}
	batch := []*connectors.SourceRecord{trackerRecord(a, 1), trackerRecord(a, 2)}
	es := make([]pending, len(batch))
	tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
	if tr.settled() {
		t.Fatal("settled with two records in flight")
	}
	tr.ack(&es[0], nil)
	tr.ack(&es[1], nil)
	if tr.settled() {
		t.Fatal("settled with acknowledged offsets not flushed")
	}
	tr.markFlushed(tr.committable())
	if !tr.settled() {
		t.Fatal("not settled once every acknowledged offset was flushed")
	}

	// Acked after a settled look: the cached answer must not hide it.
	batch = []*connectors.SourceRecord{trackerRecord(a, 3)}
	es = make([]pending, 1)
	tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
	tr.ack(&es[0], nil)
	if tr.settled() {
		t.Fatal("settled with a new acknowledged offset not flushed")
	}
	// A flush of an older snapshot leaves the newer offset to flush.
	stale := tr.committable()
	batch = []*connectors.SourceRecord{trackerRecord(a, 4)}
	es = make([]pending, 1)
	tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
	tr.ack(&es[0], nil)
	tr.markFlushed(stale)
	if tr.settled() {
		t.Fatal("settled though seq 4 was acknowledged after the flushed snapshot")
	}
	tr.markFlushed(tr.committable())
	if !tr.settled() {
		t.Fatal("not settled after the last flush")
	}

	// A released record (never produced) leaves nothing to flush.
	batch = []*connectors.SourceRecord{trackerRecord(a, 5)}
	es = make([]pending, 1)
	tr.addBatch(batch, func(i int) *pending { return &es[i] }, nil)
	tr.release(&es[0])
	if !tr.settled() {
		t.Fatal("not settled after the only record in flight was released")
	}
}

// Once an idle task's offsets are flushed, its Polls end on the grid's whole
// seconds, none later than pollTimeout after it began and none late on its
// deadline, and the last record's offset was flushed before: an offset
// flush is never put off by the grid.
func TestIdleSourcePollsEndOnTheGrid(t *testing.T) {
	e := newEnv(t)
	h := hooksFor("grid")
	h.records = 50
	e.create("grid", withConv(map[string]string{"name": "grid", "connector.class": "test.TestSource", "topic": e.topic("grid-out"), "tasks.max": "1"}))
	e.waitTaskState("grid", 0, state.StateRunning)
	testutil.Eventually(t, 10*time.Second, "offset of the last record committed", func() error {
		off, err := e.offsets.Offset("grid", map[string]any{"task": 0})
		if err != nil || off == nil || off["seq"] != int64(49) {
			return fmt.Errorf("offset %v, err %v", off, err)
		}
		return nil
	})
	flushed := time.Now()
	testutil.Eventually(t, 10*time.Second, "three idle Polls after the flush", func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		n := 0
		for _, p := range h.idlePolls {
			if p.start.After(flushed) {
				n++
			}
		}
		if n < 3 {
			return fmt.Errorf("%d idle Polls began after the flush", n)
		}
		return nil
	})
	h.mu.Lock()
	polls := append([]pollSpan(nil), h.idlePolls...)
	h.mu.Unlock()
	onGrid := 0
	for i, p := range polls {
		if p.deadline.IsZero() {
			t.Fatalf("idle Poll %d had no deadline", i)
		}
		if p.deadline.Sub(p.start) > pollTimeout {
			t.Fatalf("idle Poll %d began at %v with deadline %v: longer than %v", i, p.start, p.deadline, pollTimeout)
		}
		// The timer fires at the deadline; a loaded machine may run
		// the task a little later, never by much.
		if late := p.end.Sub(p.deadline); late > 500*time.Millisecond {
			t.Fatalf("idle Poll %d ended %v after its deadline", i, late)
		}
		if p.start.After(flushed) {
			if p.deadline.Nanosecond() != 0 {
				t.Fatalf("idle Poll %d after the flush ends at %v, off the grid", i, p.deadline)
			}
			onGrid++
		}
	}
	if onGrid < 3 {
		t.Fatalf("%d idle Polls on the grid, want 3", onGrid)
	}
}

// A task that keeps its Poll deadline itself (connectors.DeadlineKeeper)
// gets the deadline but no timer: its context is not cancelled at the
// deadline, its own timer ends each idle Poll and the next one follows, and
// a stop still cancels the Poll under way at once.
func TestKeptDeadlineIsNotEnforcedButAStopIs(t *testing.T) {
	e := newEnv(t)
	h := hooksFor("keeper")
	h.records, h.keeps = 20, true
	e.create("keeper", withConv(map[string]string{"name": "keeper", "connector.class": "test.TestSource", "topic": e.topic("keeper-out"), "tasks.max": "1"}))
	e.waitTaskState("keeper", 0, state.StateRunning)
	testutil.Eventually(t, 15*time.Second, "three idle Polls", func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if n := len(h.idlePolls); n < 3 {
			return fmt.Errorf("%d idle Polls", n)
		}
		return nil
	})
	h.mu.Lock()
	polls := append([]pollSpan(nil), h.idlePolls...)
	h.mu.Unlock()
	for i, p := range polls {
		if p.deadline.IsZero() || p.deadline.Sub(p.start) > pollTimeout {
			t.Fatalf("idle Poll %d began at %v with deadline %v: none, or more than %v away", i, p.start, p.deadline, pollTimeout)
		}
		if p.cancelled {
			t.Fatalf("idle Poll %d of a task that keeps its deadline: its context was cancelled (deadline %v, ended %v)", i, p.deadline, p.end)
		}
	}

	// A stop cancels the Poll under way. An idle task's Polls follow one
	// another with microseconds between them, so the stop finds one under
	// way, and that Poll is the task's last.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.configs.DeleteConnector(ctx, "keeper"); err != nil {
		t.Fatal(err)
	}
	var current pollSpan
	testutil.Eventually(t, 30*time.Second, "the task closed", func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.closed == 0 {
			return fmt.Errorf("%d Polls, not closed", len(h.idlePolls))
		}
		current = h.idlePolls[len(h.idlePolls)-1]
		return nil
	})
	if !current.cancelled || !current.end.Before(current.deadline) {
		t.Fatalf("the last Poll, under way at the stop, ended at %v (deadline %v), cancelled: %v; want cancelled before its deadline",
			current.end, current.deadline, current.cancelled)
	}
}
