package actors

import (
	"context"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/metrics"
	"github.com/sluice-io/sluice/internal/state"
)

// incarnation is shared by the successive actor instances of one child, so a
// restarted instance knows it is a restart and can tell its own pipeline's
// messages from those of a predecessor that ended late.
type incarnation struct {
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
	lifecycle
	rt     *Runtime
	id     connectors.TaskID
	config map[string]string
	setup  *setup // of the connector config the task started with
	log    zerolog.Logger
}

func newTaskActor(rt *Runtime, id connectors.TaskID, work *ConnectorWork, su *setup, config map[string]string, inc *incarnation) *taskActor {
	a := &taskActor{
		rt: rt, id: id, config: config, setup: su,
		log: rt.opts.Log.With().Str("connector", id.Connector).Int("task", id.Task).Logger(),
	}
	a.lifecycle = lifecycle{inc: inc, work: work, what: metrics.TaskKind, report: a.report, metrics: rt.opts.Metrics}
	return a
}

func (a *taskActor) Receive(c actor.Context) {
	if a.receive(c, func(ctx context.Context, gen int) { a.start(c, ctx, gen) }) {
		return
	}
	switch c.Message().(type) {
	case *actor.Stopping:
		a.report(a.work, state.StateUnassigned)
	case *actor.Stopped:
		a.rt.setLive(taskKey(a.id), -1)
		a.rt.opts.Metrics.TaskLeft(a.id.Connector, a.id.Task)
	}
}

func (a *taskActor) report(w *ConnectorWork, s state.State) {
	a.rt.opts.Status.PutTask(a.id, a.rt.status(s, "", w.Generation))
}

func (a *taskActor) start(c actor.Context, ctx context.Context, gen int) {
	if gen > 1 {
		a.log.Info().Int("attempt", gen).Msg("restarting task")
	}
	self, root := c.Self(), c.ActorSystem().Root
	run := &taskRun{
		rt: a.rt, id: a.id, setup: a.setup, taskConfig: a.config, gate: a.inc.gate, log: a.log, offsets: a.rt.opts.Offsets,
		opened: func() { root.Send(self, &pipelineOpened{gen: gen}) },
	}
	key := taskKey(a.id)
	run.launch(ctx, func(f *failure) { root.Send(self, &pipelineEnded{gen: gen, f: f}) }, func(ctx context.Context) error {
		// Invariant 4 (one worker): the previous instance of this task
		// must have stopped, offsets flushed, before this one opens.
		// Released when the run ends, the last of what it undoes.
		release, err := a.rt.leases.acquire(ctx, key)
		if err != nil {
			return nil
		}
		run.atEnd(release)
		return run.run(ctx)
	})
}

// gate pauses a pipeline between batches without stopping it.
type gate struct {
	mu     sync.Mutex
	closed bool
	wake   chan struct{}
	// watcher, when set, is told the state now and at each change (the
	// task's metrics recorder).
	watcher func(paused bool)
}

// watch sets (or with nil clears) the gate's watcher and tells it the
// current state.
func (g *gate) watch(fn func(paused bool)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.watcher = fn
	if fn != nil {
		fn(g.closed)
	}
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
	if g.watcher != nil {
		g.watcher(paused)
	}
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
