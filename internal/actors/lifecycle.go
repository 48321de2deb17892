package actors

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluice-io/sluice/internal/metrics"
	"github.com/sluice-io/sluice/internal/state"
)

// lifecycle is what connector and task actors share: each incarnation starts
// its pipeline on a goroutine (invariant 8), reports RESTARTING when it is a
// restart, RUNNING or PAUSED once the pipeline opened, and fails (handing the
// error to the supervisor's restart policy, invariant 5) when the pipeline
// ends on its own.
type lifecycle struct {
	inc  *incarnation
	work *ConnectorWork
	what string // "task" or "connector", for messages
	// report writes this actor's status.
	report func(work *ConnectorWork, s state.State)
	// metrics counts startups and the connectors and tasks running here.
	metrics *metrics.Registry

	gen      int
	cancel   context.CancelFunc
	opened   bool
	stopping bool
}

// receive handles the lifecycle messages and reports whether it did; start
// launches an incarnation's pipeline under ctx, tagged with gen.
func (l *lifecycle) receive(c actor.Context, start func(ctx context.Context, gen int)) bool {
	switch m := c.Message().(type) {
	case *actor.Started:
		l.inc.starts++
		l.gen = l.inc.starts
		if l.gen > 1 {
			l.report(l.work, state.StateRestarting)
		} else {
			l.metrics.Running(l.what, 1)
		}
		l.metrics.StartupAttempt(l.what)
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel = cancel
		start(ctx, l.gen)
	case *setTarget:
		l.work = withGeneration(l.work, m.generation)
		if l.inc.gate.set(m.paused) && l.opened {
			l.reportRunState()
		}
	case *pipelineOpened:
		if m.gen == l.gen {
			l.opened = true
			l.metrics.StartupResult(l.what, true)
			l.reportRunState()
		}
	case *pipelineEnded:
		// A late message of an earlier incarnation, or the end of a
		// pipeline this actor cancelled, is no failure.
		if m.gen != l.gen || l.stopping {
			return true
		}
		if !l.opened {
			l.metrics.StartupResult(l.what, false)
		}
		f := m.f
		if f == nil {
			msg := fmt.Sprintf("%s pipeline ended unexpectedly", l.what)
			f = &failure{err: fmt.Errorf("%s", msg), trace: msg}
		}
		panic(f)
	case *actor.Restarting:
		l.stop()
	case *actor.Stopping:
		l.stop()
		l.metrics.Running(l.what, -1)
		return false // the actor may report more
	default:
		return false
	}
	return true
}

func (l *lifecycle) stop() {
	l.stopping = true
	if l.cancel != nil {
		l.cancel()
	}
}

func (l *lifecycle) reportRunState() {
	if l.inc.gate.paused() {
		l.report(l.work, state.StatePaused)
	} else {
		l.report(l.work, state.StateRunning)
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
