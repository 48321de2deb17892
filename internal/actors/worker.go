package actors

import (
	"fmt"
	"slices"

	"github.com/asynkron/protoactor-go/actor"
)

// workerActor applies assignments: one connector supervisor per connector
// with local work, told what to run; supervisors of connectors no longer
// assigned here are stopped.
type workerActor struct {
	rt   *Runtime
	sups map[string]*actor.PID
	seq  int
}

func newWorkerActor(rt *Runtime) *workerActor {
	return &workerActor{rt: rt, sups: map[string]*actor.PID{}}
}

// retire tells a supervisor to stop; deleted says the connector's config is
// gone, so its status entries go too.
type retire struct{ deleted bool }

func (w *workerActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *Assignment:
		w.apply(c, m)
	case *restart:
		if pid, ok := w.sups[m.connector]; ok {
			c.Send(pid, m)
		}
	case *actor.Terminated:
		w.rt.forgetMailbox(m.Who)
		for name, pid := range w.sups {
			if pid.Equal(m.Who) {
				delete(w.sups, name)
			}
		}
	}
}

func (w *workerActor) apply(c actor.Context, a *Assignment) {
	for name, pid := range w.sups {
		if _, ok := a.Work[name]; ok {
			continue
		}
		c.Send(pid, &retire{deleted: slices.Contains(a.Deleted, name)})
		delete(w.sups, name)
	}
	for name, work := range a.Work {
		pid, ok := w.sups[name]
		if !ok {
			w.seq++
			// A unique suffix: the previous supervisor of the same
			// connector may still be stopping under its name. The
			// supervisor is its children's strategy itself
			// (supervisor.HandleFailure), so its props need none.
			props, mailbox := w.rt.propsOf(func() actor.Actor { return newSupervisor(w.rt, name) })
			var err error
			pid, err = c.SpawnNamed(props, fmt.Sprintf("connector/%s#%d", name, w.seq))
			if err != nil {
				w.rt.opts.Log.Error().Err(err).Str("connector", name).Msg("cannot spawn connector supervisor")
				continue
			}
			w.rt.watchMailbox(pid, "supervisor:"+name, mailbox)
			w.sups[name] = pid
		}
		c.Send(pid, work)
	}
}
