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
// goroutine's deferred calls, and the nap room resumes the task when the nap
// is over, a goroutine of the task's own when it stops. 500 idle tasks held
// 500 goroutines on 8 KiB stacks, 4 MiB of an idle worker's 63.

// errNapping ends a task's goroutine, not its run: the pipeline naps until
// taskRun.napUntil.
var errNapping = errors.New("task napping")

// napped is what runSafe returns for errNapping: a nap a second for each
// idle task allocates no failure.
var napped = &failure{err: errNapping}

// napHandOff is how long the nap room lets a resumed task run on its
// goroutine before another goroutine resumes the rest of the tasks due: a
// task that found records, or waits for something, goes on where it is.
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
	go r.drive(step)
}

// drive runs step, a stretch of the task's run, on the calling goroutine:
// the start, or the rest after a nap. When step naps, drive leaves the run
// to the nap room and returns; otherwise the run ends here, what it set up
// is undone, and its end is reported (a panic in the task's code too, as a
// failure: invariants 5 and 8).
func (r *taskRun) drive(step func(context.Context) error) {
	f := runSafe(r.ctx, step)
	if f == napped {
		r.nap()
		return
	}
	if ef := r.end(); f == nil {
		f = ef
	}
	r.done(f)
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
		go r.drive(r.resume)
	}
}

// napRoom resumes napping tasks when their naps end. The tasks due at one
// moment share one timer, and its goroutine resumes them one after another,
// each on that goroutine until it naps again: idle tasks' Polls end on a
// shared grid (pollDeadline), and a goroutine started for each would hold a
// stack each at the same moment, grown anew at each wake-up.
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

// wake resumes the tasks whose naps end at key.
func (n *napRoom) wake(key int64) {
	n.mu.Lock()
	list := n.due[key]
	delete(n.due, key)
	n.mu.Unlock()
	n.resume(&wakeList{runs: list})
}

// wakeList is the tasks due at one moment, taken one at a time by the
// goroutine that resumes them.
type wakeList struct {
	mu   sync.Mutex
	runs []*taskRun
}

func (w *wakeList) take() *taskRun {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.runs) == 0 {
		return nil
	}
	r := w.runs[0]
	w.runs = w.runs[1:]
	return r
}

// resume runs the tasks of w, one after another, on this goroutine. When
// one is still running after napHandOff (it found records, or waits), a new
// goroutine takes over the rest of w, and this one stays with that task
// until it naps or ends.
func (n *napRoom) resume(w *wakeList) {
	var handOff *time.Timer
	for r := w.take(); r != nil; r = w.take() {
		if !r.napping.CompareAndSwap(true, false) {
			continue // woken for its stop already
		}
		if handOff == nil {
			handOff = time.AfterFunc(napHandOff, func() { n.resume(w) })
		} else {
			handOff.Reset(napHandOff)
		}
		r.drive(r.resume)
		if !handOff.Stop() {
			return // the rest of w went on without this goroutine
		}
	}
}
