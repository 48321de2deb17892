package actors

import (
	"context"
	"fmt"
	"maps"
	"sync"
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

// newConnectorActor logs with log, its supervisor's: the same fields, and
// one logger's context buffer (500 B) less per connector.
func newConnectorActor(rt *Runtime, work *ConnectorWork, su *setup, inc *incarnation, log zerolog.Logger) *connectorActor {
	a := &connectorActor{rt: rt, setup: su, log: log}
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
	r := &connectorRun{
		ctx: ctx, name: a.work.Name, setup: a.setup, log: a.log,
		computed: func(configs []map[string]string) { root.Send(self, &computed{gen: gen, configs: configs}) },
		opened:   func() { root.Send(self, &pipelineOpened{gen: gen}) },
		ended:    func(f *failure) { root.Send(self, &pipelineEnded{gen: gen, f: f}) },
	}
	r.do(r.start)
	// Stop runs once the actor stops or restarts, after whatever the
	// connector is doing then: AfterFunc holds no goroutine until then.
	context.AfterFunc(ctx, func() { r.do(func() { r.end(nil) }) })
}

// connectorRun is one incarnation of a Connector instance. Its calls
// (Start and the first TaskConfigs, a TaskConfigs for each
// RequestTaskReconfiguration, Stop) run one at a time and in the order
// they were asked for, on a goroutine that exists only while there is one
// to run: an idle connector holds no goroutine, and its stack, of its own.
// Each call runs under runSafe, so a panic in connector code is a failure,
// never the worker's end (invariants 5 and 8).
type connectorRun struct {
	ctx   context.Context
	name  string
	setup *setup
	log   zerolog.Logger
	// computed, opened and ended tell the actor, as messages.
	computed func(configs []map[string]string)
	opened   func()
	ended    func(f *failure)

	mu      sync.Mutex
	queue   []func()
	running bool // a goroutine is running the queue
	// reconfiguring and failing are a call asked for and not yet run:
	// more requests before it runs fold into it.
	reconfiguring, failing bool

	// Read and written by the calls only, one at a time.
	conn     connectors.Connector // nil until Start succeeded
	maxTasks int
	done     bool // Stop ran, or Start failed: later calls do nothing
}

// do queues call after the calls asked for before it, and starts a
// goroutine to run the queue unless one is running.
func (r *connectorRun) do(call func()) {
	r.mu.Lock()
	r.queue = append(r.queue, call)
	if r.running {
		r.mu.Unlock()
		return
	}
	r.running = true
	r.mu.Unlock()
	go r.drain()
}

func (r *connectorRun) drain() {
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.queue, r.running = nil, false
			r.mu.Unlock()
			return
		}
		call := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		r.mu.Unlock()
		call()
	}
}

func (r *connectorRun) start() {
	f := runSafe(r.ctx, func(ctx context.Context) error {
		st, err := r.setup.start()
		if err != nil {
			return err
		}
		conn := st.plugin.New()
		sctx, scancel := context.WithTimeout(ctx, startTimeout)
		// The plugin gets a map of its own, as Connect hands each start
		// a fresh one: st.config may be the config log's shared map.
		err = conn.Start(sctx, &connectorContext{name: r.name, log: r.log, run: r}, maps.Clone(st.config))
		scancel()
		if err != nil {
			return fmt.Errorf("start connector: %w", err)
		}
		r.conn, r.maxTasks = conn, st.keys.TasksMax
		return r.split(ctx)
	})
	if f != nil {
		r.end(f)
		return
	}
	r.opened()
}

// split asks the connector for its task configs and hands them to the
// actor.
func (r *connectorRun) split(ctx context.Context) error {
	tctx, tcancel := context.WithTimeout(ctx, startTimeout)
	defer tcancel()
	configs, err := r.conn.TaskConfigs(tctx, r.maxTasks)
	if err != nil {
		return fmt.Errorf("task configs: %w", err)
	}
	if len(configs) > r.maxTasks {
		configs = configs[:r.maxTasks]
	}
	// The connector computed them from the resolved config: put the
	// placeholders back, so no secret reaches the config topic; each task
	// resolves its config when it starts.
	r.computed(configprovider.ReverseTransform(r.setup.config, configs))
	return nil
}

// reconfigure runs TaskConfigs again, after the calls asked for before.
func (r *connectorRun) reconfigure() {
	r.doFolded(&r.reconfiguring, func() {
		if r.done || r.ctx.Err() != nil {
			return
		}
		r.log.Info().Msg("connector asked for a task reconfiguration")
		if f := runSafe(r.ctx, r.split); f != nil {
			r.end(f)
		}
	})
}

// fail ends the connector with err, as if a call had returned it.
func (r *connectorRun) fail(err error) {
	r.doFolded(&r.failing, func() { r.end(&failure{err: err, trace: err.Error()}) })
}

// doFolded queues call unless a call of the same kind (pending, guarded by
// mu) is queued and has not begun: a connector asking again and again
// before it runs gets it once.
func (r *connectorRun) doFolded(pending *bool, call func()) {
	r.mu.Lock()
	if *pending {
		r.mu.Unlock()
		return
	}
	*pending = true
	r.mu.Unlock()
	r.do(func() {
		r.mu.Lock()
		*pending = false
		r.mu.Unlock()
		call()
	})
}

// end stops the connector once, if it started, and tells the actor how it
// ended: f, or the failure of a Stop that panicked.
func (r *connectorRun) end(f *failure) {
	if r.done {
		return
	}
	r.done = true
	if r.conn != nil {
		conn := r.conn
		if sf := runSafe(r.ctx, func(context.Context) error {
			if err := conn.Stop(); err != nil {
				r.log.Warn().Err(err).Msg("connector stop failed")
			}
			return nil
		}); f == nil {
			f = sf
		}
	}
	r.ended(f)
}

type connectorContext struct {
	name string
	log  zerolog.Logger
	run  *connectorRun
}

func (c *connectorContext) Name() string { return c.name }

func (c *connectorContext) RequestTaskReconfiguration() { c.run.reconfigure() }

func (c *connectorContext) RaiseError(err error) { c.run.fail(err) }

func (c *connectorContext) Logger() *zerolog.Logger { return &c.log }

var _ connectors.ConnectorContext = (*connectorContext)(nil)
