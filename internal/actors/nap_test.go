package actors

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/testutil"
)

// napRun is a taskRun driven by steps of the test's own: what it undid and
// how its end was reported.
type napRun struct {
	*taskRun
	mu    sync.Mutex
	undid []string
	ended []*failure
	endAt chan struct{}
}

func newNapRun() *napRun {
	n := &napRun{taskRun: &taskRun{rt: &Runtime{naps: newNapRoom()}}, endAt: make(chan struct{}, 4)}
	for _, name := range []string{"lease", "task"} {
		n.atEnd(func() {
			n.mu.Lock()
			n.undid = append(n.undid, name)
			n.mu.Unlock()
		})
	}
	return n
}

func (n *napRun) done(f *failure) {
	n.mu.Lock()
	n.ended = append(n.ended, f)
	n.mu.Unlock()
	n.endAt <- struct{}{}
}

func (n *napRun) waitEnd(t *testing.T, within time.Duration) *failure {
	t.Helper()
	select {
	case <-n.endAt:
	case <-time.After(within):
		t.Fatalf("the run did not end within %v", within)
	}
	time.Sleep(50 * time.Millisecond) // a second end would show now
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.ended) != 1 {
		t.Fatalf("the run's end was reported %d times", len(n.ended))
	}
	if strings.Join(n.undid, ",") != "task,lease" {
		t.Fatalf("undone %v, want task then lease, once each", n.undid)
	}
	return n.ended[0]
}

// nothingUndone fails when the run undid anything yet: a nap is not an end.
func (n *napRun) nothingUndone() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.undid) > 0 {
		return fmt.Errorf("undone %v before the run ended", n.undid)
	}
	return nil
}

// A run that naps ends its goroutine but not itself: nothing is undone and
// no end reported until the step after the nap ends the run; then what it
// set up is undone, last first, once.
func TestNapResumesAtItsTimeAndEndsOnce(t *testing.T) {
	n := newNapRun()
	var resumed, napEnds []time.Time
	var undoneEarly error
	nap := func() error {
		n.napUntil = time.Now().Add(30 * time.Millisecond)
		napEnds = append(napEnds, n.napUntil)
		return errNapping
	}
	n.resume = func(context.Context) error {
		resumed = append(resumed, time.Now())
		if err := n.nothingUndone(); err != nil && undoneEarly == nil {
			undoneEarly = err
		}
		if len(resumed) < 3 {
			return nap()
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func(context.Context) error { return nap() }
	n.launch(ctx, n.done, start)
	if f := n.waitEnd(t, 10*time.Second); f != nil {
		t.Fatalf("failure %v", f.err)
	}
	if undoneEarly != nil {
		t.Fatal(undoneEarly)
	}
	if len(resumed) != 3 {
		t.Fatalf("resumed %d times, want 3", len(resumed))
	}
	for i, at := range resumed {
		if at.Before(napEnds[i]) {
			t.Fatalf("resumed at %v, before its nap's end %v", at, napEnds[i])
		}
	}
}

// A stop ends a nap at once, however long the nap: the stop watch resumes
// the run, which sees its context ended.
func TestStopEndsANapAtOnce(t *testing.T) {
	n := newNapRun()
	resumes := 0
	n.resume = func(ctx context.Context) error {
		resumes++
		if ctx.Err() == nil {
			return fmt.Errorf("resumed before its nap ended, and not stopped")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	napping := make(chan struct{})
	n.launch(ctx, n.done, func(context.Context) error {
		n.napUntil = time.Now().Add(time.Hour)
		close(napping)
		return errNapping
	})
	<-napping
	time.Sleep(20 * time.Millisecond)
	if err := n.nothingUndone(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if f := n.waitEnd(t, 10*time.Second); f != nil {
		t.Fatalf("failure %v", f.err)
	}
	if resumes != 1 {
		t.Fatalf("resumed %d times, want 1", resumes)
	}
}

// A stop that comes as the run is about to nap, before the nap is set up,
// still ends it, and the run is resumed once, not twice.
func TestStopJustBeforeANapResumesOnce(t *testing.T) {
	for i := 0; i < 50; i++ {
		n := newNapRun()
		var mu sync.Mutex
		resumes := 0
		n.resume = func(context.Context) error {
			mu.Lock()
			resumes++
			mu.Unlock()
			return nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		n.launch(ctx, n.done, func(context.Context) error {
			n.napUntil = time.Now().Add(time.Hour)
			cancel()
			return errNapping
		})
		if f := n.waitEnd(t, 10*time.Second); f != nil {
			t.Fatalf("failure %v", f.err)
		}
		mu.Lock()
		if resumes != 1 {
			t.Fatalf("round %d: resumed %d times, want 1", i, resumes)
		}
		mu.Unlock()
	}
}

// A panic in the task's code after a nap is the run's failure, reported
// once, with what the run set up undone (invariants 5 and 8).
func TestPanicAfterANapIsTheRunsFailure(t *testing.T) {
	n := newNapRun()
	n.resume = func(context.Context) error { panic("test panic after a nap") }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n.launch(ctx, n.done, func(context.Context) error {
		n.napUntil = time.Now().Add(10 * time.Millisecond)
		return errNapping
	})
	f := n.waitEnd(t, 10*time.Second)
	if f == nil || !strings.Contains(f.trace, "test panic after a nap") {
		t.Fatalf("failure %+v, want the panic with its trace", f)
	}
}

// Tasks due at the same moment are resumed one after another on one
// goroutine; one that goes on (it found records, or waits) does not hold up
// the others: they are resumed on another goroutine after napHandOff.
func TestNapRoomHandsOffATaskThatGoesOn(t *testing.T) {
	room := newNapRoom()
	at := time.Now().Add(50 * time.Millisecond)
	bResumed := make(chan struct{})
	a, b := newNapRun(), newNapRun()
	a.rt.naps, b.rt.naps = room, room
	a.resume = func(context.Context) error {
		select {
		case <-bResumed:
			return nil
		case <-time.After(20 * time.Second):
			return fmt.Errorf("b was not resumed while a went on")
		}
	}
	b.resume = func(context.Context) error {
		close(bResumed)
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, n := range []*napRun{a, b} {
		n.launch(ctx, n.done, func(context.Context) error {
			n.napUntil = at
			return errNapping
		})
		// a is first in line: it naps before b is started.
		testutil.Eventually(t, 10*time.Second, "napping", func() error {
			if !n.napping.Load() {
				return fmt.Errorf("not napping yet")
			}
			return nil
		})
	}
	if f := a.waitEnd(t, 30*time.Second); f != nil {
		t.Fatalf("a: %v", f.err)
	}
	if f := b.waitEnd(t, 10*time.Second); f != nil {
		t.Fatalf("b: %v", f.err)
	}
}

// sourceLoops counts the goroutines in a source pipeline's poll loop.
func sourceLoops() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "actors.(*sourcePipeline).loop(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Idle tasks whose Polls return at once (connectors.IdleReturner) hold no
// goroutine between Polls (ADR 0027), while a task that waits in Poll holds
// its own; a napping task delivers records that come after its naps, and a
// panic after a nap restarts it from its committed offset.
func TestIdleTasksNapWithoutAGoroutine(t *testing.T) {
	e := newEnv(t)
	const nappers = 8
	names := []string{"awake"}
	hooksFor("awake").records = 10
	for i := 0; i < nappers; i++ {
		name := fmt.Sprintf("napper-%d", i)
		h := hooksFor(name)
		h.records, h.returns = 10, true
		names = append(names, name)
	}
	for _, name := range names {
		e.create(name, withConv(map[string]string{"name": name, "connector.class": "test.TestSource", "topic": e.topic(name + "-out"), "tasks.max": "1"}))
	}
	committed := func(name string, seq int64) func() error {
		return func() error {
			off, err := e.offsets.Offset(name, map[string]any{"task": 0})
			if err != nil || off == nil || off["seq"] != seq {
				return fmt.Errorf("%s: offset %v, err %v", name, off, err)
			}
			return nil
		}
	}
	for _, name := range names {
		e.waitTaskState(name, 0, state.StateRunning)
		testutil.Eventually(t, 20*time.Second, name+" offset 9 committed", committed(name, 9))
		testutil.Eventually(t, 20*time.Second, name+" idle", func() error {
			h := hooksFor(name)
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.idlePolls) < 2 {
				return fmt.Errorf("%d idle Polls", len(h.idlePolls))
			}
			return nil
		})
	}
	// The nappers wake once a second for a moment each: most looks find
	// only the task that waits in its Poll.
	testutil.Eventually(t, 20*time.Second, "one goroutine in a poll loop, the waiting task's", func() error {
		if n := sourceLoops(); n != 1 {
			return fmt.Errorf("%d goroutines in a poll loop", n)
		}
		return nil
	})
	// A nap is not an end: no napping task was closed.
	for _, name := range names {
		h := hooksFor(name)
		h.mu.Lock()
		closed := h.closed
		h.mu.Unlock()
		if closed != 0 {
			t.Fatalf("%s closed %d times while it napped", name, closed)
		}
	}
	// An idle Poll of a napper returns at once, and the next one comes
	// at its deadline, not before.
	h := hooksFor("napper-0")
	h.mu.Lock()
	polls := append([]pollSpan(nil), h.idlePolls...)
	h.mu.Unlock()
	for i := 1; i < len(polls); i++ {
		if polls[i].start.Before(polls[i-1].deadline) {
			t.Fatalf("idle Poll %d began at %v, before the deadline %v of the one before: the nap ended early", i, polls[i].start, polls[i-1].deadline)
		}
	}

	// Records that come while a task naps are polled after the nap.
	h.mu.Lock()
	h.records = 25
	h.mu.Unlock()
	testutil.Eventually(t, 20*time.Second, "napper-0 offset 24 committed", committed("napper-0", 24))
	if n := len(e.readTopic(e.topic("napper-0-out"), 25)); n != 25 {
		t.Fatalf("napper-0 wrote %d records, want 25", n)
	}

	// A panic after a nap: the task is restarted and goes on from its
	// committed offset; the instance that panicked was closed.
	h = hooksFor("napper-1")
	h.mu.Lock()
	h.panics, h.panicAt, h.records = 1, 10, 20
	h.mu.Unlock()
	testutil.Eventually(t, 30*time.Second, "napper-1 restarted, offset 19 committed", func() error {
		h.mu.Lock()
		opened, closed, left := h.opened, h.closed, h.panics
		h.mu.Unlock()
		if left > 0 || opened < 2 || closed < 1 {
			return fmt.Errorf("panics left %d, opened %d, closed %d", left, opened, closed)
		}
		return committed("napper-1", 19)()
	})
	if n := len(e.readTopic(e.topic("napper-1-out"), 20)); n < 20 {
		t.Fatalf("napper-1 wrote %d records, want 20", n)
	}

	// A stop ends the naps: every task closes, and no goroutine is left
	// in a poll loop.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range names {
		if err := e.configs.DeleteConnector(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 20*time.Second, "every task closed", func() error {
		for _, name := range names {
			h := hooksFor(name)
			h.mu.Lock()
			opened, closed := h.opened, h.closed
			h.mu.Unlock()
			if closed < opened {
				return fmt.Errorf("%s opened %d, closed %d", name, opened, closed)
			}
		}
		if n := sourceLoops(); n != 0 {
			return fmt.Errorf("%d goroutines in a poll loop", n)
		}
		return nil
	})
}
