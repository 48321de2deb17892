// Package control is the control plane of a worker: what the front doors
// (the REST server and the admin actor) ask of the cluster. Controller
// answers on this worker: reads from its view of the config and status
// topics; writes validated in full before anything is written, then written
// to the config topic and read back. Router, in front of it, is the one
// place that decides where a request is carried out: writes by the group
// leader (reached through the actor cluster when it is another worker),
// reads here once this worker's view has caught up with the config topic.
package control

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/configprovider"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/state"
)

// ConfigStore is the config topic as the control plane uses it
// (*state.ConfigLog).
type ConfigStore interface {
	Snapshot() state.Snapshot
	// Connector is one connector of the snapshot, copied alone; false
	// when it has no config.
	Connector(name string) (*state.Connector, bool)
	// Names are the connectors that have a config, in no order.
	Names() []string
	// Write writes a batch and returns once this worker's snapshot holds it.
	Write(ctx context.Context, b *state.Batch) error
	DeleteConnector(ctx context.Context, name string) error
	RequestRestart(ctx context.Context, r state.RestartRequest) error
}

// StatusStore is the status topic as the control plane uses it
// (*state.StatusLog).
type StatusStore interface {
	Connector(name string) (state.Status, bool)
	Tasks(name string) map[int]state.Status
}

// Writer is the connector requests that change the cluster's state; with
// the others of LeaderWrites, only the group leader carries them out.
// Controller performs them on this worker; Router sends them to the leader.
type Writer interface {
	// Create creates a connector; an empty initial state means RUNNING.
	Create(ctx context.Context, name string, config map[string]string, initial InitialState) (ConnectorInfo, error)
	// PutConfig creates or replaces a connector's config and reports which.
	PutConfig(ctx context.Context, name string, config map[string]string) (info ConnectorInfo, created bool, err error)
	// PatchConfig merges patch into the config; a nil value removes a key.
	PatchConfig(ctx context.Context, name string, patch map[string]*string) (ConnectorInfo, error)
	Delete(ctx context.Context, name string) error
	Pause(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	// Stop shuts the connector and its tasks down and empties its task
	// configs (target state STOPPED).
	Stop(ctx context.Context, name string) error
	// Restart restarts the connector and, with includeTasks, its tasks;
	// onlyFailed limits it to what is FAILED. The status shows RESTARTING
	// for what restarts.
	Restart(ctx context.Context, name string, includeTasks, onlyFailed bool) (ConnectorStatus, error)
	// RestartTask restarts one task on the worker that runs it.
	RestartTask(ctx context.Context, name string, task int) error
}

var _ Writer = (*Controller)(nil)

// Options are a Controller's dependencies.
type Options struct {
	Configs  ConfigStore
	Statuses StatusStore
	Plugins  *connectors.Registry
	// Converters and HeaderConverters are the converter and header
	// converter class names GET /connector-plugins lists with
	// connectorsOnly=false.
	Converters, HeaderConverters []string
	// Worker is what connector validation needs of this worker's config:
	// connector.client.config.override.policy and topic.creation.enable.
	// The zero value is Kafka Connect's defaults.
	Worker connconfig.Worker
	// FenceSources fences the transactional producers of the first tasks
	// tasks of source connector name (exactly-once sources: the leader
	// does it before a new generation of task configs is written, with
	// Worker.ExactlyOnce preparing or enabled). Required then.
	FenceSources func(ctx context.Context, name string, tasks int) error
	// CheckConverters validates the converter keys of a connector config; nil
	// skips that check.
	CheckConverters func(config map[string]string) *connectors.ConfigError
	WorkerID        string
	// KafkaClusterID is reported by GET /; a worker learns it only once
	// Kafka answers, so KafkaClusterIDFunc, when set, is asked instead.
	KafkaClusterID     string
	KafkaClusterIDFunc func() string
	Version            string
	Commit             string
	// KafkaProblem, when it returns an error, is why the worker cannot use
	// Kafka right now (it cannot authenticate): GET /health then says so.
	// The error must carry no secret. Nil means no such check.
	KafkaProblem func() error
	// Ready reports whether the worker has read its state topics and can
	// answer; until then, requests about connectors get 503. Nil means ready.
	Ready func() bool
	// Standing, when set, is where the ready worker stands in its cluster
	// (group membership, config topic): GET /health reports it. Nil means
	// a ready worker is healthy.
	Standing func() Standing
	// WriteTimeout bounds each write to the config topic; default 30s.
	WriteTimeout time.Duration

	// Log is where the control plane logs; the zero value discards.
	Log zerolog.Logger

	// Providers resolve the ${provider:path:key} placeholders of a config
	// wherever the control plane runs connector code on it: validation,
	// the leader's split, offset changes, as Connect resolves them there.
	// Stored and shown configs keep their placeholders. Nil leaves configs
	// as they are.
	Providers *configprovider.Transformer

	// RestartTask asks worker workerID to restart a task it runs, and
	// reports whether it runs it; nil answers task restarts with 501.
	RestartTask func(ctx context.Context, workerID, connector string, task int) (bool, error)

	// Offsets reads and changes connectors' offsets (offsets.go); nil
	// answers the offsets endpoints with 501.
	Offsets OffsetsBackend
	// Topics tracks the topics connectors use (topics.go).
	Topics TopicsBackend
	// Loggers holds this worker's run-time log levels (loggers.go).
	Loggers LoggersBackend
}

// Controller answers control requests on one worker. It is safe for
// concurrent use.
type Controller struct {
	o Options
	// writes serializes this worker's writes, so that the existence check
	// and the write of one request are not interleaved with another's.
	writes chan struct{}
}

// New returns a Controller over o.
func New(o Options) (*Controller, error) {
	if o.Configs == nil || o.Statuses == nil || o.Plugins == nil {
		return nil, errors.New("control: Configs, Statuses and Plugins are required")
	}
	if o.Worker.ExactlyOnce.Fences() && o.FenceSources == nil {
		return nil, errors.New("control: FenceSources is required with exactly.once.source.support " + string(o.Worker.ExactlyOnce))
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	return &Controller{o: o, writes: make(chan struct{}, 1)}, nil
}

// WorkerID is the id of the worker this Controller runs on.
func (c *Controller) WorkerID() string { return c.o.WorkerID }

func (c *Controller) ready() bool { return c.o.Ready == nil || c.o.Ready() }

// ServerInfo answers GET /.
func (c *Controller) ServerInfo() ServerInfo {
	id := c.o.KafkaClusterID
	if c.o.KafkaClusterIDFunc != nil {
		id = c.o.KafkaClusterIDFunc()
	}
	return ServerInfo{Version: c.o.Version, Commit: c.o.Commit, KafkaClusterID: id}
}

// Standing is why a worker that has started is not healthy now; the zero
// value is a healthy worker.
type Standing struct {
	// Unhealthy is why the worker cannot make progress (it has lost its
	// broker or its group membership for longer than the session timeout):
	// GET /health answers 500 with it.
	Unhealthy string
	// Pending is why the worker cannot serve yet but expects to soon (a
	// rebalance, a config topic not read to its end): GET /health answers
	// 503 with it.
	Pending string
}

// Connect's GET /health messages (KIP-1017, WorkerStatus): tools that match
// on them keep working; Sluice appends why after a colon.
const (
	healthyMessage   = "Worker has completed startup and is ready to handle requests."
	startingMessage  = "Worker is still starting up."
	unhealthyMessage = "Worker is unhealthy"
)

// Health answers GET /health as Connect's does (KIP-1017): 200 "healthy"
// only when the worker is in its group with its assignment and has read the
// config topic to its end, 503 "starting" while it starts or rebalances, and
// 500 "unhealthy" when it cannot make progress. REST serving is implied: an
// answer is one.
func (c *Controller) Health() Health {
	unhealthy := func(why string) Health {
		return Health{Status: "unhealthy", Message: unhealthyMessage + ": " + why, Code: http.StatusInternalServerError}
	}
	starting := func(why string) Health {
		msg := startingMessage
		if why != "" {
			msg = strings.TrimSuffix(msg, ".") + ": " + why
		}
		return Health{Status: "starting", Message: msg, Code: http.StatusServiceUnavailable}
	}
	if c.o.KafkaProblem != nil {
		if err := c.o.KafkaProblem(); err != nil {
			// Connect answers "unhealthy" with 500 when its worker cannot
			// make progress; a worker that cannot authenticate cannot.
			return unhealthy(err.Error())
		}
	}
	var st Standing
	if c.o.Standing != nil {
		st = c.o.Standing()
	}
	if st.Unhealthy != "" {
		return unhealthy(st.Unhealthy)
	}
	if !c.ready() {
		return starting(st.Pending)
	}
	if st.Pending != "" {
		// KIP-1017 has three states; a rebalancing worker is "starting"
		// again: it will serve once the round ends, as at startup.
		return starting(st.Pending)
	}
	return Health{Status: "healthy", Message: healthyMessage, Code: http.StatusOK}
}

// lookup returns the connector from a fresh snapshot.
func (c *Controller) lookup(name string) (*state.Connector, error) {
	if !c.ready() {
		return nil, notReady()
	}
	conn, ok := c.o.Configs.Connector(name)
	if !ok {
		return nil, notFound(name)
	}
	return conn, nil
}

// Connectors returns the names of all connectors, sorted.
func (c *Controller) Connectors() ([]string, error) {
	if !c.ready() {
		return nil, notReady()
	}
	names := c.o.Configs.Names()
	sort.Strings(names)
	return names, nil
}

// typeOf is the connector's type by its class, "unknown" when no plugin has
// the class (a config written by a worker with other plugins).
func (c *Controller) typeOf(config map[string]string) string {
	p, err := c.o.Plugins.Lookup(config[connconfig.ConnectorClass])
	if err != nil {
		return TypeUnknown
	}
	return string(p.Type)
}

func (c *Controller) info(conn *state.Connector) ConnectorInfo {
	tasks := make([]connectors.TaskID, len(conn.Tasks))
	for i := range conn.Tasks {
		tasks[i] = connectors.TaskID{Connector: conn.Name, Task: i}
	}
	cfg := maps.Clone(conn.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	return ConnectorInfo{Name: conn.Name, Config: cfg, Tasks: tasks, Type: c.typeOf(conn.Config)}
}

// Info returns a connector's config and tasks.
func (c *Controller) Info(name string) (ConnectorInfo, error) {
	conn, err := c.lookup(name)
	if err != nil {
		return ConnectorInfo{}, err
	}
	return c.info(conn), nil
}

// Config returns a connector's config.
func (c *Controller) Config(name string) (map[string]string, error) {
	conn, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	cfg := maps.Clone(conn.Config)
	if cfg == nil {
		cfg = map[string]string{}
	}
	return cfg, nil
}

// Tasks returns a connector's committed task configs.
func (c *Controller) Tasks(name string) ([]TaskInfo, error) {
	conn, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, len(conn.Tasks))
	for i, tc := range conn.Tasks {
		cfg := maps.Clone(tc)
		if cfg == nil {
			cfg = map[string]string{}
		}
		out[i] = TaskInfo{ID: connectors.TaskID{Connector: name, Task: i}, Config: cfg}
	}
	return out, nil
}

// observed maps a status record to what REST shows. No record, or one left
// by a deleted earlier connector of the same name, means nobody runs it yet.
func observed(s state.Status, ok bool) (st, worker, trace string) {
	if !ok || s.State == "" || s.State == state.StateDestroyed {
		return string(state.StateUnassigned), "", ""
	}
	return string(s.State), s.WorkerID, s.Trace
}

// Status returns the connector's state and one entry per committed task.
func (c *Controller) Status(name string) (ConnectorStatus, error) {
	conn, err := c.lookup(name)
	if err != nil {
		return ConnectorStatus{}, err
	}
	st, worker, trace := observed(c.o.Statuses.Connector(name))
	out := ConnectorStatus{
		Name:      name,
		Connector: StateInfo{State: st, WorkerID: worker, Trace: trace},
		Tasks:     make([]TaskState, len(conn.Tasks)),
		Type:      c.typeOf(conn.Config),
	}
	tasks := c.o.Statuses.Tasks(name)
	for i := range conn.Tasks {
		s, ok := tasks[i]
		st, worker, trace := observed(s, ok)
		out.Tasks[i] = TaskState{ID: i, State: st, WorkerID: worker, Trace: trace}
	}
	return out, nil
}

// TaskStatus returns one task's state; 404 when the connector has no such
// committed task.
func (c *Controller) TaskStatus(name string, task int) (TaskState, error) {
	conn, err := c.lookup(name)
	if err != nil {
		return TaskState{}, err
	}
	if task < 0 || task >= len(conn.Tasks) {
		return TaskState{}, errorf(http.StatusNotFound, "Task %d of connector %s not found: the connector has %d task(s)", task, name, len(conn.Tasks))
	}
	s, ok := c.o.Statuses.Tasks(name)[task]
	st, worker, trace := observed(s, ok)
	return TaskState{ID: task, State: st, WorkerID: worker, Trace: trace}, nil
}

// Plugins lists the connector plugins, and with connectorsOnly false the
// converters too.
func (c *Controller) Plugins(connectorsOnly bool) []PluginInfo {
	var out []PluginInfo
	for _, p := range c.o.Plugins.Plugins() {
		v := p.Version
		if v == "" {
			v = c.o.Version
		}
		out = append(out, PluginInfo{Class: p.Class, Type: string(p.Type), Version: v})
	}
	if !connectorsOnly {
		conv := append([]string(nil), c.o.Converters...)
		sort.Strings(conv)
		for _, cl := range conv {
			out = append(out, PluginInfo{Class: cl, Type: PluginTypeConverter, Version: c.o.Version})
		}
		hconv := append([]string(nil), c.o.HeaderConverters...)
		sort.Strings(hconv)
		for _, cl := range hconv {
			out = append(out, PluginInfo{Class: cl, Type: PluginTypeHeaderConverter, Version: c.o.Version})
		}
		for _, t := range c.o.Plugins.Transforms() {
			out = append(out, PluginInfo{Class: t.Class, Type: PluginTypeTransformation, Version: cmp.Or(t.Version, c.o.Version)})
		}
		for _, p := range c.o.Plugins.Predicates() {
			out = append(out, PluginInfo{Class: p.Class, Type: PluginTypePredicate, Version: cmp.Or(p.Version, c.o.Version)})
		}
	}
	if out == nil {
		out = []PluginInfo{}
	}
	return out
}

// PluginConfig returns the config definitions a connector plugin takes:
// the runtime's keys for its type (name, connector.class, tasks.max,
// converters, errors.*, ...) followed by the plugin's own, as Connect does
// since 3.5 (KAFKA-14843).
func (c *Controller) PluginConfig(class string) ([]ConfigKeyInfo, error) {
	p, err := c.o.Plugins.Lookup(class)
	if err != nil {
		// A transform's or predicate's own keys, as Connect lists them.
		if def, ok, derr := c.transformDef(class); ok {
			if derr != nil {
				return nil, errorf(http.StatusInternalServerError, "%v", derr)
			}
			orders := map[string]int{}
			out := []ConfigKeyInfo{}
			for _, k := range def.Keys() {
				out = append(out, keyInfo(k, orders))
			}
			return out, nil
		}
		return nil, errorf(http.StatusNotFound, "Unknown plugin %s. %v", class, err)
	}
	own, err := pluginDef(p)
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, "%v", err)
	}
	orders := map[string]int{}
	out := []ConfigKeyInfo{}
	for _, k := range connconfig.ConfigDef(p.Type).Merge(own).Keys() {
		out = append(out, keyInfo(k, orders))
	}
	return out, nil
}

// pluginDef asks the plugin for its ConfigDef. Plugin code may panic; a
// panic must not take the request, let alone the worker, down with it.
func pluginDef(p connectors.Plugin) (def *connectors.ConfigDef, err error) {
	err = safely(p.Class, "describing its config", func() {
		def = p.New().Config()
	})
	if err == nil && def == nil {
		def = connectors.NewConfigDef()
	}
	return def, err
}

func safely(class, doing string, f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("connector plugin %s panicked while %s: %v", class, doing, r)
		}
	}()
	f()
	return nil
}

// transformDef is the config definition of the transform or predicate
// class names, and whether there is one. Plugin code may panic.
func (c *Controller) transformDef(class string) (def *connectors.ConfigDef, ok bool, err error) {
	if t, lerr := c.o.Plugins.LookupTransform(class); lerr == nil {
		err = safely(t.Class, "describing its config", func() {
			inst := t.New()
			def = inst.Config()
			_ = inst.Close()
		})
		return cmp.Or(def, connectors.NewConfigDef()), true, err
	}
	if p, lerr := c.o.Plugins.LookupPredicate(class); lerr == nil {
		err = safely(p.Class, "describing its config", func() {
			inst := p.New()
			def = inst.Config()
			_ = inst.Close()
		})
		return cmp.Or(def, connectors.NewConfigDef()), true, err
	}
	return nil, false, nil
}
