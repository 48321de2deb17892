package actors

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/internal/metrics"
	"github.com/sluice-io/sluice/internal/transform"
)

// taskRun is one incarnation of a task's pipeline, run on its own goroutine.
type taskRun struct {
	rt    *Runtime
	id    connectors.TaskID
	setup *setup // the connector config, as stored
	// taskConfig is the task config as stored, with its placeholders;
	// run resolves it before the task opens with it.
	taskConfig map[string]string
	gate       *gate
	log        zerolog.Logger
	// opened is called once the task's Open succeeded.
	opened func()
	// rec records the task's metrics; nil with metrics off.
	rec *metrics.Task
	// offsets is where a source task's offsets are read and written: the
	// worker's store, or with offsets.storage.topic the connector's own
	// topic over it (offsets.Layered).
	offsets OffsetStore
	// txnContext is what TransactionContext gives a source task that
	// defines its transactions; nil otherwise.
	txnContext connectors.TransactionContext
	napState
}

// codec is what a task's records go through between the task and Kafka:
// the transforms and the key, value and header converters.
type codec struct {
	key, value converters.Converter
	headers    converters.HeaderConverter
	chain      *transform.Chain // nil: no transforms
}

// openTimeout bounds SourceTask.Open and SinkTask.Open.
const openTimeout = time.Minute

// pipeline is a source or sink pipeline, ready to run.
type pipeline interface {
	run(ctx context.Context) error
}

// run builds the task's pipeline and runs it. What it sets up is undone
// when the run ends (atEnd, taskRun.drive), not when run returns: a
// napping source returns errNapping and goes on later on another goroutine
// (nap.go).
func (r *taskRun) run(ctx context.Context) error {
	p, kind, closeChain, err := r.build()
	if err != nil {
		return err
	}
	r.atEnd(closeChain)
	r.atEnd(r.record(kind))
	return p.run(ctx)
}

// build makes the task's pipeline. It is a call of its own, returned from
// before the pipeline runs, because its frame is large (converters,
// transforms, the connector's config): the task's goroutine then sits on a
// stack under 4 KiB while it waits, which the collector shrinks to 8 KiB.
// (It shrinks a stack only while less than a quarter of it is in use; an
// idle task's stack stayed at 16 KiB with this frame under it.)
func (r *taskRun) build() (p pipeline, kind string, closeChain func(), err error) {
	st, err := r.setup.start()
	if err != nil {
		return nil, "", nil, err
	}
	// Connect resolves a task's config at each start too
	// (ClusterConfigState.taskConfig).
	if r.taskConfig, err = r.setup.resolve(r.taskConfig); err != nil {
		return nil, "", nil, err
	}
	keyConv, err := newConverter(st.config, r.rt.opts.WorkerProps, true)
	if err != nil {
		return nil, "", nil, err
	}
	valConv, err := newConverter(st.config, r.rt.opts.WorkerProps, false)
	if err != nil {
		return nil, "", nil, err
	}
	hdrConv, err := converters.ResolveHeader(st.config, r.rt.opts.WorkerProps)
	if err != nil {
		return nil, "", nil, err
	}
	// Transforms keep state (cached schemas): each task incarnation has
	// its own chain.
	chain, err := transform.Build(r.rt.opts.Registry, st.config)
	if err != nil {
		return nil, "", nil, err
	}
	closeChain = func() {
		if err := chain.Close(); err != nil {
			r.log.Warn().Err(err).Msg("closing the transforms failed")
		}
	}
	c := codec{key: keyConv, value: valConv, headers: hdrConv, chain: chain}
	keys := st.keys
	switch conn := st.plugin.New().(type) {
	case connectors.SourceConnector:
		return &sourcePipeline{taskRun: r, task: conn.NewTask(), conn: conn, connConfig: st.config, codec: c, keys: keys}, metrics.KindSource, closeChain, nil
	case connectors.SinkConnector:
		// The sink task's Open gets r.taskConfig: a map of its own, as the
		// source's gets (sourcePipeline.run), not the config log's shared one.
		r.taskConfig = maps.Clone(r.taskConfig)
		return &sinkPipeline{taskRun: r, task: conn.NewTask(), codec: c, keys: keys}, metrics.KindSink, closeChain, nil
	default:
		closeChain()
		return nil, "", nil, fmt.Errorf("connector class %q makes neither source nor sink tasks", st.plugin.Class)
	}
}

// record registers the task's metrics recorder for this run, following the
// gate's pauses for the running and pause ratios; the returned func
// unregisters it.
func (r *taskRun) record(kind string) func() {
	r.rec = r.rt.opts.Metrics.StartTask(r.id.Connector, r.id.Task, kind)
	if r.rec == nil {
		return func() {}
	}
	r.gate.watch(r.rec.Paused)
	return func() {
		r.gate.watch(nil)
		r.rt.opts.Metrics.StopTask(r.rec)
	}
}

// taskContext is the runtime as a task sees it.
type taskContext struct {
	r *taskRun
}

func (t taskContext) ConnectorName() string   { return t.r.id.Connector }
func (t taskContext) TaskID() int             { return t.r.id.Task }
func (t taskContext) Logger() *zerolog.Logger { return &t.r.log }

func (t taskContext) TransactionContext() connectors.TransactionContext { return t.r.txnContext }

func (t taskContext) Offset(partition map[string]any) (map[string]any, error) {
	return t.r.offsets.Offset(t.r.id.Connector, partition)
}

// waitResumed blocks while the task is paused; it returns false when ctx ended.
func (r *taskRun) waitResumed(ctx context.Context) bool {
	for {
		changed := r.gate.changed() // before the check, so no change is missed
		if !r.gate.paused() {
			break
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
	return ctx.Err() == nil
}
