package actors

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
)

// taskRun is one incarnation of a task's pipeline, run on its own goroutine.
type taskRun struct {
	rt         *Runtime
	id         connectors.TaskID
	connConfig map[string]string
	taskConfig map[string]string
	gate       *gate
	log        zerolog.Logger
	// opened is called once the task's Open succeeded.
	opened func()
}

// openTimeout bounds SourceTask.Open and SinkTask.Open.
const openTimeout = time.Minute

func (r *taskRun) run(ctx context.Context) error {
	plugin, err := r.rt.opts.Registry.Lookup(r.connConfig["connector.class"])
	if err != nil {
		return err
	}
	keyConv, err := converters.Resolve(r.connConfig, r.rt.opts.WorkerProps, true)
	if err != nil {
		return err
	}
	valConv, err := converters.Resolve(r.connConfig, r.rt.opts.WorkerProps, false)
	if err != nil {
		return err
	}
	tol, err := parseTolerance(r.connConfig)
	if err != nil {
		return err
	}
	switch conn := plugin.New().(type) {
	case connectors.SourceConnector:
		return (&sourcePipeline{taskRun: r, task: conn.NewTask(), key: keyConv, value: valConv, tol: tol}).run(ctx)
	case connectors.SinkConnector:
		return (&sinkPipeline{taskRun: r, task: conn.NewTask(), key: keyConv, value: valConv, tol: tol}).run(ctx)
	default:
		return fmt.Errorf("connector class %q makes neither source nor sink tasks", plugin.Class)
	}
}

// tolerance is the errors.* config of a connector.
type tolerance struct {
	all             bool // errors.tolerance=all: skip bad records instead of failing
	logErrors       bool
	logMessages     bool
	dlqTopic        string
	dlqHeaders      bool
	dlqReplication  int16
	retryTimeout    time.Duration // errors.retry.timeout; negative = forever
	retryMaxBackoff time.Duration
}

func parseTolerance(c map[string]string) (tolerance, error) {
	// An unset DLQ replication factor takes the broker's default rather than
	// Connect's 3, so a dead letter queue also works on a one-broker setup.
	t := tolerance{dlqReplication: -1, retryMaxBackoff: time.Minute}
	switch v := strings.TrimSpace(c["errors.tolerance"]); v {
	case "", "none":
	case "all":
		t.all = true
	default:
		return t, fmt.Errorf("errors.tolerance: %q is not one of none, all", v)
	}
	var err error
	if t.logErrors, err = boolKey(c, "errors.log.enable"); err != nil {
		return t, err
	}
	if t.logMessages, err = boolKey(c, "errors.log.include.messages"); err != nil {
		return t, err
	}
	if t.dlqHeaders, err = boolKey(c, "errors.deadletterqueue.context.headers.enable"); err != nil {
		return t, err
	}
	t.dlqTopic = strings.TrimSpace(c["errors.deadletterqueue.topic.name"])
	if v := strings.TrimSpace(c["errors.deadletterqueue.topic.replication.factor"]); v != "" {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil {
			return t, fmt.Errorf("errors.deadletterqueue.topic.replication.factor: %q is not a number", v)
		}
		t.dlqReplication = int16(n)
	}
	if v := strings.TrimSpace(c["errors.retry.timeout"]); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return t, fmt.Errorf("errors.retry.timeout: %q is not a number", v)
		}
		t.retryTimeout = time.Duration(n) * time.Millisecond
	}
	if v := strings.TrimSpace(c["errors.retry.delay.max.ms"]); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return t, fmt.Errorf("errors.retry.delay.max.ms: %q is not a number", v)
		}
		t.retryMaxBackoff = time.Duration(n) * time.Millisecond
	}
	return t, nil
}

func boolKey(c map[string]string, k string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(c[k])); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, fmt.Errorf("%s: %q is not true or false", k, v)
	}
}

// retry calls fn until it succeeds, fails with an error not marked
// connectors.Retriable, or ctx ends. Retriable errors back off from 100 ms
// to max; they are logged, since a sink that retries forever looks stuck.
func retry(ctx context.Context, log zerolog.Logger, what string, max time.Duration, fn func() error) error {
	delay := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil || !connectors.IsRetriable(err) {
			return err
		}
		log.Warn().Err(err).Dur("retry_in", delay).Msgf("%s failed with a retriable error", what)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		if delay *= 2; delay > max {
			delay = max
		}
	}
}

// taskContext is the runtime as a task sees it.
type taskContext struct {
	r *taskRun
}

func (t taskContext) ConnectorName() string   { return t.r.id.Connector }
func (t taskContext) TaskID() int             { return t.r.id.Task }
func (t taskContext) Logger() *zerolog.Logger { return &t.r.log }

func (t taskContext) Offset(partition map[string]any) (map[string]any, error) {
	return t.r.rt.opts.Offsets.Offset(t.r.id.Connector, partition)
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
