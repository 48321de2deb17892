package actors

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/cluster/state"
)

// incarnation is shared by the successive actor instances of one child, so a
// restarted instance knows it is a restart and can tell its own pipeline's
// messages from those of a predecessor that ended late.
type incarnation struct {
	seq    int
	starts int
	// gate outlives an instance, so a restart keeps the latest target state.
	gate *gate
}

// setTarget tells a connector or task actor whether to run or pause.
type setTarget struct {
	paused     bool
	generation int64
}

// pipelineOpened and pipelineEnded are sent by a pipeline goroutine to its
// actor; gen names the incarnation that started it.
type pipelineOpened struct{ gen int }

type pipelineEnded struct {
	gen int
	f   *failure
}

// taskActor runs one task: its pipeline (source or sink) on a goroutine of
// its own, reporting back as messages (invariant 8). A pipeline error makes
// the actor fail, and its supervisor restarts it (invariant 5).
type taskActor struct {
	rt     *Runtime
	id     state.TaskID
	work   *ConnectorWork
	config map[string]string
	inc    *incarnation
	log    zerolog.Logger

	gen      int
	cancel   context.CancelFunc
	gate     *gate
	opened   bool
	stopping bool
}

func newTaskActor(rt *Runtime, id state.TaskID, work *ConnectorWork, config map[string]string, inc *incarnation) *taskActor {
	return &taskActor{
		rt: rt, id: id, work: work, config: config, inc: inc,
		log:  rt.opts.Log.With().Str("connector", id.Connector).Int("task", id.Task).Logger(),
		gate: inc.gate,
	}
}

func (a *taskActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.inc.starts++
		a.gen = a.inc.starts
		if a.gen > 1 {
			a.report(state.Restarting, "")
			a.log.Info().Int("attempt", a.gen).Msg("restarting task")
		}
		a.start(c)
	case *setTarget:
		a.work = withGeneration(a.work, m.generation)
		if a.gate.set(m.paused) && a.opened {
			a.reportRunState()
		}
	case *pipelineOpened:
		if m.gen == a.gen {
			a.opened = true
			a.reportRunState()
		}
	case *pipelineEnded:
		if m.gen != a.gen || a.stopping {
			return
		}
		f := m.f
		if f == nil {
			f = &failure{err: errors.New("task pipeline ended unexpectedly"), trace: "task pipeline ended unexpectedly"}
		}
		// Failing the actor hands the error to the supervisor's restart
		// policy, which reports FAILED and restarts after a backoff.
		panic(f)
	case *actor.Restarting:
		a.stop()
	case *actor.Stopping:
		a.stop()
		a.report(state.Unassigned, "")
	}
}

func withGeneration(w *ConnectorWork, g int64) *ConnectorWork {
	if w.Generation == g {
		return w
	}
	cp := *w
	cp.Generation = g
	return &cp
}

func (a *taskActor) stop() {
	a.stopping = true
	if a.cancel != nil {
		a.cancel()
	}
}

func (a *taskActor) reportRunState() {
	if a.gate.paused() {
		a.report(state.PausedS, "")
	} else {
		a.report(state.Running, "")
	}
}

func (a *taskActor) report(s state.State, trace string) {
	a.rt.opts.Status.PutTask(a.id, a.rt.status(s, trace, a.work.Generation))
}

func (a *taskActor) start(c actor.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	self, root, gen := c.Self(), c.ActorSystem().Root, a.gen
	run := &taskRun{
		rt: a.rt, id: a.id, connConfig: a.work.Config, taskConfig: a.config, gate: a.gate, log: a.log,
		opened: func() { root.Send(self, &pipelineOpened{gen: gen}) },
	}
	key := a.id.Connector + "/" + strconv.Itoa(a.id.Task)
	goSafe(ctx, func(ctx context.Context) error {
		// Invariant 4 (one worker): the previous instance of this task
		// must have stopped, offsets flushed, before this one opens.
		release, err := a.rt.leases.acquire(ctx, key)
		if err != nil {
			return nil
		}
		defer release()
		return run.run(ctx)
	}, func(f *failure) { root.Send(self, &pipelineEnded{gen: gen, f: f}) })
}

// gate pauses a pipeline between batches without stopping it.
type gate struct {
	mu     sync.Mutex
	closed bool
	wake   chan struct{}
}

func newGate(paused bool) *gate { return &gate{closed: paused, wake: make(chan struct{})} }

// set changes the state and reports whether it changed.
func (g *gate) set(paused bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == paused {
		return false
	}
	g.closed = paused
	close(g.wake)
	g.wake = make(chan struct{})
	return true
}

func (g *gate) paused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// changed returns a channel closed at the next state change.
func (g *gate) changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wake
}
