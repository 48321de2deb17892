package actors

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/cluster/state"
	"github.com/sluice-io/sluice/connectors"
)

// connectorActor runs a Connector instance: Start, TaskConfigs whenever the
// connector asks to be reconfigured, Stop. Its results travel to the
// supervisor, which stores task configs.
type connectorActor struct {
	rt   *Runtime
	work *ConnectorWork
	inc  *incarnation
	log  zerolog.Logger

	gen      int
	cancel   context.CancelFunc
	gate     *gate
	opened   bool
	stopping bool
}

func newConnectorActor(rt *Runtime, work *ConnectorWork, inc *incarnation) *connectorActor {
	return &connectorActor{
		rt: rt, work: work, inc: inc,
		log:  rt.opts.Log.With().Str("connector", work.Name).Logger(),
		gate: inc.gate,
	}
}

// startTimeout bounds Connector.Start and TaskConfigs.
const startTimeout = time.Minute

func (a *connectorActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.inc.starts++
		a.gen = a.inc.starts
		if a.gen > 1 {
			a.report(state.Restarting, "")
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
	case *computed:
		if m.gen == a.gen {
			c.Send(c.Parent(), &taskConfigsComputed{configs: m.configs})
		}
	case *pipelineEnded:
		if m.gen != a.gen || a.stopping {
			return
		}
		f := m.f
		if f == nil {
			f = &failure{err: fmt.Errorf("connector stopped unexpectedly"), trace: "connector stopped unexpectedly"}
		}
		panic(f)
	case *actor.Restarting:
		a.stop()
	case *actor.Stopping:
		a.stop()
	}
}

type computed struct {
	gen     int
	configs []map[string]string
}

func (a *connectorActor) stop() {
	a.stopping = true
	if a.cancel != nil {
		a.cancel()
	}
}

func (a *connectorActor) reportRunState() {
	if a.gate.paused() {
		a.report(state.PausedS, "")
	} else {
		a.report(state.Running, "")
	}
}

func (a *connectorActor) report(s state.State, trace string) {
	a.rt.opts.Status.PutConnector(a.work.Name, a.rt.status(s, trace, a.work.Generation))
}

func (a *connectorActor) start(c actor.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	self, root, gen := c.Self(), c.ActorSystem().Root, a.gen
	cc := &connectorContext{name: a.work.Name, log: a.log, reconfigure: make(chan struct{}, 1), errs: make(chan error, 1)}
	work := a.work
	goSafe(ctx, func(ctx context.Context) error {
		plugin, err := a.rt.opts.Registry.Lookup(work.Config["connector.class"])
		if err != nil {
			return err
		}
		conn := plugin.New()
		maxTasks := 1
		if v, ok := work.Config["tasks.max"]; ok {
			if maxTasks, err = strconv.Atoi(v); err != nil || maxTasks < 1 {
				return fmt.Errorf("tasks.max: %q is not a positive integer", v)
			}
		}
		sctx, scancel := context.WithTimeout(ctx, startTimeout)
		err = conn.Start(sctx, cc, work.Config)
		scancel()
		if err != nil {
			return fmt.Errorf("start connector: %w", err)
		}
		defer func() {
			if err := conn.Stop(); err != nil {
				a.log.Warn().Err(err).Msg("connector stop failed")
			}
		}()
		split := func() error {
			tctx, tcancel := context.WithTimeout(ctx, startTimeout)
			defer tcancel()
			configs, err := conn.TaskConfigs(tctx, maxTasks)
			if err != nil {
				return fmt.Errorf("task configs: %w", err)
			}
			if len(configs) > maxTasks {
				configs = configs[:maxTasks]
			}
			root.Send(self, &computed{gen: gen, configs: configs})
			return nil
		}
		if err := split(); err != nil {
			return err
		}
		root.Send(self, &pipelineOpened{gen: gen})
		for {
			select {
			case <-ctx.Done():
				return nil
			case err := <-cc.errs:
				return err
			case <-cc.reconfigure:
				a.log.Info().Msg("connector asked for a task reconfiguration")
				if err := split(); err != nil {
					return err
				}
			}
		}
	}, func(f *failure) { root.Send(self, &pipelineEnded{gen: gen, f: f}) })
}

type connectorContext struct {
	name        string
	log         zerolog.Logger
	reconfigure chan struct{}
	errs        chan error
}

func (c *connectorContext) Name() string { return c.name }

func (c *connectorContext) RequestTaskReconfiguration() {
	select {
	case c.reconfigure <- struct{}{}:
	default:
	}
}

func (c *connectorContext) RaiseError(err error) {
	select {
	case c.errs <- err:
	default:
	}
}

func (c *connectorContext) Logger() *zerolog.Logger { return &c.log }

var _ connectors.ConnectorContext = (*connectorContext)(nil)
