package actors

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// waitDone fails the test unless ctx ends within a generous deadline.
func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%v not done after 10 s", ctx)
	}
}

// A Poll's context ends at its deadline, not before, with
// context.DeadlineExceeded, as context.WithDeadline's; contexts of several
// deadlines end each at its own, and none is left on the grid.
func TestPollContextEndsAtItsDeadline(t *testing.T) {
	var g pollGrid
	parent, stop := context.WithCancel(context.Background())
	defer stop()
	start := time.Now()
	var ctxs []context.Context
	for i := range 6 {
		d := start.Add(time.Duration(20+30*(i%3)) * time.Millisecond) // three deadlines, two contexts each
		ctx, cancel := g.withDeadline(parent, d)
		defer cancel()
		if got, ok := ctx.Deadline(); !ok || !got.Equal(d) {
			t.Fatalf("Deadline() = %v, %v; want %v", got, ok, d)
		}
		if ctx.Err() != nil {
			t.Fatalf("Err() before the deadline: %v", ctx.Err())
		}
		ctxs = append(ctxs, ctx)
	}
	for _, ctx := range ctxs {
		waitDone(t, ctx)
		d, _ := ctx.Deadline()
		if now := time.Now(); now.Before(d) {
			t.Errorf("ended at %v, before its deadline %v", now, d)
		}
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err() = %v, want context.DeadlineExceeded", err)
		}
	}
	if n := g.pending(); n != 0 {
		t.Fatalf("%d contexts left on the grid after their deadlines", n)
	}
	// The grid's timer is armed again for a later deadline.
	ctx, cancel := g.withDeadline(parent, time.Now().Add(10*time.Millisecond))
	defer cancel()
	waitDone(t, ctx)
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err() = %v", ctx.Err())
	}
}

// cancel ends the context with context.Canceled and takes it off the grid;
// its deadline passing later changes nothing.
func TestPollContextCancel(t *testing.T) {
	var g pollGrid
	ctx, cancel := g.withDeadline(context.Background(), time.Now().Add(30*time.Millisecond))
	if g.pending() != 1 {
		t.Fatalf("pending %d, want 1", g.pending())
	}
	cancel()
	waitDone(t, ctx)
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err() = %v, want context.Canceled", ctx.Err())
	}
	if g.pending() != 0 {
		t.Fatalf("pending %d after cancel", g.pending())
	}
	time.Sleep(60 * time.Millisecond)
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err() after the deadline = %v, want context.Canceled", ctx.Err())
	}
	cancel() // a second cancel is harmless
}

// A parent that ends first ends the context with the parent's error; a
// parent whose deadline comes first gives its deadline; a deadline already
// past gives a context that has ended; values come from the parent.
func TestPollContextParent(t *testing.T) {
	var g pollGrid
	type key struct{}
	parent, stop := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	ctx, cancel := g.withDeadline(parent, time.Now().Add(time.Hour))
	defer cancel()
	if ctx.Value(key{}) != "v" {
		t.Fatalf("Value = %v", ctx.Value(key{}))
	}
	stop()
	waitDone(t, ctx)
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("Err() = %v, want the parent's context.Canceled", ctx.Err())
	}

	early := time.Now().Add(time.Hour)
	dparent, dstop := context.WithDeadline(context.Background(), early)
	defer dstop()
	ctx2, cancel2 := g.withDeadline(dparent, early.Add(time.Hour))
	defer cancel2()
	if d, ok := ctx2.Deadline(); !ok || !d.Equal(early) {
		t.Fatalf("Deadline() = %v, %v; want the parent's %v", d, ok, early)
	}

	ctx3, cancel3 := g.withDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel3()
	waitDone(t, ctx3)
	if !errors.Is(ctx3.Err(), context.DeadlineExceeded) {
		t.Fatalf("past deadline: Err() = %v", ctx3.Err())
	}
	if g.pending() != 0 {
		t.Fatalf("pending %d", g.pending())
	}
}

// Contexts derived from a Poll's context, and context.AfterFunc on it, end
// with it and see context.DeadlineExceeded, as under context.WithDeadline:
// a connector that wraps the Poll's context in one of its own tells a Poll
// that reached its deadline from a failure in the same way.
func TestPollContextChildren(t *testing.T) {
	var g pollGrid
	ctx, cancel := g.withDeadline(context.Background(), time.Now().Add(20*time.Millisecond))
	defer cancel()
	child, ccancel := context.WithTimeout(ctx, time.Hour)
	defer ccancel()
	if d, _ := child.Deadline(); d.After(time.Now().Add(time.Minute)) {
		t.Fatalf("child's deadline %v is not its parent's", d)
	}
	var ran atomic.Bool
	afterDone := make(chan struct{})
	context.AfterFunc(ctx, func() { ran.Store(true); close(afterDone) })
	var stoppedRan atomic.Bool
	stopF := context.AfterFunc(ctx, func() { stoppedRan.Store(true) })
	if !stopF() {
		t.Fatal("stop of an AfterFunc before the end reported false")
	}
	waitDone(t, child)
	if !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Fatalf("child Err() = %v, want context.DeadlineExceeded", child.Err())
	}
	select {
	case <-afterDone:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc did not run after the end")
	}
	if !ran.Load() || stoppedRan.Load() {
		t.Fatalf("AfterFunc ran %v, the stopped one ran %v", ran.Load(), stoppedRan.Load())
	}
	// A child made after the end has ended at once.
	late, lcancel := context.WithCancel(ctx)
	defer lcancel()
	waitDone(t, late)
	if !errors.Is(late.Err(), context.DeadlineExceeded) {
		t.Fatalf("late child Err() = %v", late.Err())
	}
	lateRan := make(chan struct{})
	context.AfterFunc(ctx, func() { close(lateRan) })
	select {
	case <-lateRan:
	case <-time.After(10 * time.Second):
		t.Fatal("AfterFunc on an ended context did not run")
	}
}
