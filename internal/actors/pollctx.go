package actors

import (
	"context"
	"sync"
	"time"
)

// pollGrid ends the contexts of source Polls at their deadlines with one
// timer for all of them. A context.WithDeadline arms a timer of its own, and
// an expiring context timer starts a goroutine to cancel its context: idle
// tasks' Polls all end on the same tick (pollDeadline), so every second 500
// idle tasks started 500 goroutines at once, each with its stack, and the
// worker kept about 4 MiB of goroutine stacks and 500 goroutine descriptors
// for them (ADR 0017, fifth round). The grid ends every context due at a
// moment from one goroutine, one after the other.
//
// The zero pollGrid is ready to use.
type pollGrid struct {
	mu    sync.Mutex
	due   map[int64]*pollBucket // by deadline, in Unix nanoseconds
	timer *time.Timer           // fires at next, runs fire
	next  int64                 // the deadline the timer is armed for; 0 when none
}

// pollBucket is the contexts that end at the same moment.
type pollBucket struct {
	at   time.Time
	ctxs map[*pollCtx]struct{}
}

// withDeadline is context.WithDeadline(parent, d) for a Poll: a context that
// reports d as its deadline and ends with context.DeadlineExceeded at d,
// ended by the grid's timer instead of a timer of its own. As with
// context.WithDeadline, a parent that ends first ends it with the parent's
// error, cancel ends it with context.Canceled, and a parent deadline not
// later than d gives a plain cancelable context.
func (g *pollGrid) withDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if pd, ok := parent.Deadline(); ok && !pd.After(d) {
		return context.WithCancel(parent)
	}
	c := &pollCtx{parent: parent, deadline: d, grid: g, done: make(chan struct{})}
	if parent.Done() != nil {
		// Holds no goroutine: the parent (a task's context) registers the
		// func as it registers a child, and runs it on a goroutine only
		// when it is cancelled.
		c.stopParent = context.AfterFunc(parent, func() {
			c.end(parent.Err())
			g.forget(c)
		})
	}
	if time.Until(d) <= 0 {
		c.end(context.DeadlineExceeded)
		return c, c.cancel
	}
	k := d.UnixNano()
	g.mu.Lock()
	b := g.due[k]
	if b == nil {
		if g.due == nil {
			g.due = make(map[int64]*pollBucket)
		}
		b = &pollBucket{at: d, ctxs: make(map[*pollCtx]struct{})}
		g.due[k] = b
	}
	b.ctxs[c] = struct{}{}
	if g.next == 0 || k < g.next {
		g.arm(k, d)
	}
	g.mu.Unlock()
	return c, c.cancel
}

// arm sets the timer to fire at d (k in Unix nanoseconds); g.mu is held.
func (g *pollGrid) arm(k int64, d time.Time) {
	g.next = k
	if g.timer == nil {
		g.timer = time.AfterFunc(time.Until(d), g.fire)
	} else {
		g.timer.Reset(time.Until(d))
	}
}

// fire ends every context whose deadline has come and arms the timer for
// the next deadline left.
func (g *pollGrid) fire() {
	now := time.Now()
	var ended []*pollCtx
	g.mu.Lock()
	g.next = 0
	var nextAt time.Time
	var nextK int64
	for k, b := range g.due {
		if b.at.After(now) {
			if nextK == 0 || k < nextK {
				nextK, nextAt = k, b.at
			}
			continue
		}
		for c := range b.ctxs {
			ended = append(ended, c)
		}
		delete(g.due, k)
	}
	if nextK != 0 {
		g.arm(nextK, nextAt)
	}
	g.mu.Unlock()
	for _, c := range ended {
		c.end(context.DeadlineExceeded)
	}
}

// forget takes c off the grid, when it ended otherwise or is cancelled.
func (g *pollGrid) forget(c *pollCtx) {
	k := c.deadline.UnixNano()
	g.mu.Lock()
	if b := g.due[k]; b != nil {
		delete(b.ctxs, c)
		if len(b.ctxs) == 0 {
			delete(g.due, k)
		}
	}
	g.mu.Unlock()
}

// pending is how many contexts wait on the grid (tests).
func (g *pollGrid) pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, b := range g.due {
		n += len(b.ctxs)
	}
	return n
}

// pollCtx is a Poll's context (pollGrid.withDeadline). It implements the
// AfterFunc method the standard library looks for (context's afterFuncer):
// contexts derived from it, and context.AfterFunc on it, register with it
// and end when it ends, with its error (context.DeadlineExceeded at the
// deadline), holding no goroutine meanwhile.
//
// One difference from context.WithDeadline's context: context.Cause of a
// pollCtx ended by its deadline or cancel is its parent's cause (nil while
// the parent is live), not the pollCtx's error; the runtime and the
// connectors read Err.
type pollCtx struct {
	parent     context.Context
	deadline   time.Time
	grid       *pollGrid
	done       chan struct{}
	stopParent func() bool // stops the parent's AfterFunc; nil if the parent never ends

	mu    sync.Mutex
	err   error
	funcs map[*func()]struct{} // AfterFunc's, run once when the context ends
}

func (c *pollCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *pollCtx) Done() <-chan struct{}       { return c.done }
func (c *pollCtx) Value(key any) any           { return c.parent.Value(key) }

func (c *pollCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *pollCtx) String() string { return "actors.pollCtx(" + c.deadline.String() + ")" }

// AfterFunc arranges for f to run once c has ended; the returned stop
// unregisters f and reports whether it did so before f ran. The standard
// library calls it for each context derived from c (propagateCancel) and
// for context.AfterFunc(c, ...), with the child's lock held: f must not be
// run here, so a context that has ended already runs f on a goroutine.
func (c *pollCtx) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	p := &f
	if c.funcs == nil {
		c.funcs = make(map[*func()]struct{})
	}
	c.funcs[p] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.funcs[p]; !ok {
			return false
		}
		delete(c.funcs, p)
		return true
	}
}

// end ends c with err, unless it has ended already, and runs the funcs
// registered by AfterFunc.
func (c *pollCtx) end(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	funcs := c.funcs
	c.funcs = nil
	close(c.done)
	c.mu.Unlock()
	for f := range funcs {
		(*f)()
	}
}

// cancel is the context.CancelFunc of c: it ends c with context.Canceled
// (unless it has ended) and releases what c holds, its place on the grid
// and its registration with its parent.
func (c *pollCtx) cancel() {
	if c.stopParent != nil {
		c.stopParent()
	}
	c.grid.forget(c)
	c.end(context.Canceled)
}
