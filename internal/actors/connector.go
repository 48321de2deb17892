package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/configprovider"
	"github.com/sluice-io/sluice/internal/metrics"
	"github.com/sluice-io/sluice/internal/state"
)

// connectorActor runs a Connector instance: Start, TaskConfigs whenever the
// connector asks to be reconfigured, Stop. Its results travel to the
// supervisor, which stores task configs.
type connectorActor struct {
	lifecycle
	rt    *Runtime
	setup *setup // of work.Config
	log   zerolog.Logger
}

func newConnectorActor(rt *Runtime, work *ConnectorWork, su *setup, inc *incarnation) *connectorActor {
	a := &connectorActor{rt: rt, setup: su, log: rt.opts.Log.With().Str("connector", work.Name).Logger()}
	a.lifecycle = lifecycle{inc: inc, work: work, what: metrics.Connector, report: a.report, metrics: rt.opts.Metrics}
	return a
}

// startTimeout bounds Connector.Start and TaskConfigs.
const startTimeout = time.Minute

// computed carries task configs from the connector's goroutine.
type computed struct {
	gen     int
	configs []map[string]string
}

func (a *connectorActor) Receive(c actor.Context) {
	if a.receive(c, func(ctx context.Context, gen int) { a.start(c, ctx, gen) }) {
		return
	}
	switch m := c.Message().(type) {
	case *computed:
		if m.gen == a.gen {
			c.Send(c.Parent(), &taskConfigsComputed{configs: m.configs})
		}
	case *actor.Stopped:
		a.rt.opts.Metrics.ConnectorLeft(a.work.Name)
	}
}

func (a *connectorActor) report(w *ConnectorWork, s state.State) {
	a.rt.opts.Status.PutConnector(w.Name, a.rt.status(s, "", w.Generation))
}

func (a *connectorActor) start(c actor.Context, ctx context.Context, gen int) {
	self, root := c.Self(), c.ActorSystem().Root
	cc := &connectorContext{name: a.work.Name, log: a.log, reconfigure: make(chan struct{}, 1), errs: make(chan error, 1)}
	su := a.setup
	goSafe(ctx, func(ctx context.Context) error {
		st, err := su.start()
		if err != nil {
			return err
		}
		conn := st.plugin.New()
		maxTasks := st.keys.TasksMax
		sctx, scancel := context.WithTimeout(ctx, startTimeout)
		err = conn.Start(sctx, cc, st.config)
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
			// The connector computed them from the resolved config: put
			// the placeholders back, so no secret reaches the config
			// topic; each task resolves its config when it starts.
			root.Send(self, &computed{gen: gen, configs: configprovider.ReverseTransform(su.config, configs)})
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
