package actors

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// An idle source task whose Poll returns at once when it has nothing
// (connectors.IdleReturner) naps between Polls without a goroutine (ADR
// 0027): its pipeline returns errNapping up the task's goroutine, which ends;
// the run keeps what it must undo at its end (taskRun.ends) instead of in the
// goroutine's deferred calls, and the nap room starts a goroutine for the
// task again when the nap is over or the task stops. 500 idle tasks held 500
// goroutines of 8 KiB stacks each, a sixth of an idle worker's memory.

// errNapping ends a task's goroutine, not its run: the pipeline naps until
// taskRun.napUntil.
var errNapping = errors.New("task napping")

// napHandOff is how long the nap room waits for a resumed task to nap again
// or end before it resumes the next one anyway: a task that found records
// goes on, on its goroutine, while the others are resumed.
const napHandOff = 10 * time.Millisecond

// napState is the part of a taskRun that naps.
type napState struct {
	// ends is what the run undoes at its end, last first (atEnd): the
	// lease, the transforms, the metrics, the clients, the task. A
	// napping run keeps them for the goroutine that ends it.
	ends []func()
	// ctx is the run's context, done reports its end to the task actor,
	// resume continues it after a nap, from the top of the poll loop.
	ctx    context.Context
	done   func(*failure)
	resume func(context.Context) error
	// napUntil is when the nap the pipeline asked for ends.
	napUntil time.Time
	// napping is set while no goroutine runs the task: whoever clears it
	// (the nap room at napUntil, or the stop watch) resumes the run.
	napping atomic.Bool
	// stopWatch ends a nap when ctx ends; set at the first nap.
	stopWatch func() bool
}

// atEnd adds fn to what the run undoes when it ends.
func (r *taskRun) atEnd(fn func()) { r.ends = append(r.ends, fn) }

// end undoes what the run set up, last first, each whatever the others do,
// as deferred calls would: a panic in one becomes the run's failure unless
// it already had one.
func (r *taskRun) end() (f *failure) {
	for len(r.ends) > 0 {
		fn := r.ends[len(r.ends)-1]
		r.ends = r.ends[:len(r.ends)-1]
		if ef := runSafe(r.ctx, func(context.Context) error { fn(); return nil }); f == nil {
			f = ef
		}
	}
	return f
}

// launch starts the run on a goroutine of its own.
func (r *taskRun) launch(ctx context.Context, done func(*failure), step func(context.Context) error) {
	r.ctx, r.done = ctx, done
	go r.drive(step, nil)
}

// drive runs step, a stretch of the task's run, on the calling goroutine:
// the start, or the rest after a nap. When step naps the goroutine leaves
// the run to the nap room; otherwise the run ends here, what it set up is
// undone, and its end is reported (a panic in the task's code too, as a
// failure: invariants 5 and 8). settled, when set, is told either way.
func (r *taskRun) drive(step func(context.Context) error, settled chan<- struct{}) {
	f := runSafe(r.ctx, step)
	if f != nil && errors.Is(f.err, errNapping) {
		r.nap()
	} else {
		if ef := r.end(); f == nil {
			f = ef
		}
		r.done(f)
	}
	if settled != nil {
		settled <- struct{}{}
	}
}

// nap leaves the run to the nap room until napUntil, or until the task
// stops.
func (r *taskRun) nap() {
	if r.stopWatch == nil {
		r.stopWatch = context.AfterFunc(r.ctx, r.wakeForStop)
		r.atEnd(func() { r.stopWatch() })
	}
	r.napping.Store(true)
	if r.ctx.Err() != nil {
		// The stop came before napping was set: the watch found the
		// run awake and left it.
		r.wakeForStop()
		return
	}
	r.rt.naps.add(r, r.napUntil)
}

// wakeForStop resumes a napping run at once: it stops.
func (r *taskRun) wakeForStop() {
	if r.napping.CompareAndSwap(true, false) {
		go r.drive(r.resume, nil)
	}
}

// napRoom resumes napping tasks when their naps end. The tasks due at one
// moment share one timer, and they are resumed one after another, each on
// a goroutine of its own that ends when it naps again: idle tasks' Polls end
// on a shared grid (pollDeadline), and 500 goroutines started at once would
// hold 500 stacks at the same moment.
type napRoom struct {
	mu  sync.Mutex
	due map[int64][]*taskRun
}

func newNapRoom() *napRoom { return &napRoom{due: map[int64][]*taskRun{}} }

// add puts r to sleep until at.
func (n *napRoom) add(r *taskRun, at time.Time) {
	key := at.UnixNano()
	n.mu.Lock()
	list, armed := n.due[key]
	n.due[key] = append(list, r)
	n.mu.Unlock()
	if !armed {
		time.AfterFunc(time.Until(at), func() { n.wake(key) })
	}
}

// wake resumes the tasks whose naps end at key, one after another: it
// waits for each to nap again or end, for at most napHandOff.
func (n *napRoom) wake(key int64) {
	n.mu.Lock()
	list := n.due[key]
	delete(n.due, key)
	n.mu.Unlock()
	var wait *time.Timer
	for _, r := range list {
		if !r.napping.CompareAndSwap(true, false) {
			continue // woken for its stop already
		}
		settled := make(chan struct{}, 1)
		go r.drive(r.resume, settled)
		if wait == nil {
			wait = time.NewTimer(napHandOff)
		} else {
			wait.Reset(napHandOff)
		}
		select {
		case <-settled:
		case <-wait.C:
		}
	}
	if wait != nil {
		wait.Stop()
	}
}
