package actors

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-io/sluice/internal/kafkasec"
	"github.com/sluice-io/sluice/internal/metrics"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/configprovider"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/state"
)

// OffsetStore is where source offsets live (the offsets topic).
type OffsetStore interface {
	Offset(connector string, partition map[string]any) (map[string]any, error)
	Write(ctx context.Context, connector string, entries []offsets.PartitionOffset) error
}

// OffsetTopics opens the store of a connector-specific offsets topic
// (*offsets.TopicStores).
type OffsetTopics interface {
	Open(ctx context.Context, topic string) (*offsets.SourceStore, error)
}

// StatusReporter records connector and task status. Calls must not block:
// actors make them from Receive.
type StatusReporter interface {
	PutConnector(name string, st state.Status)
	PutTask(id connectors.TaskID, st state.Status)
	DeleteConnector(name string, tasks int)
}

// TaskConfigWriter stores a connector's task configs. In a cluster only the
// leader writes them (invariant 2); this is the seam where a follower forwards.
type TaskConfigWriter interface {
	PutTaskConfigs(ctx context.Context, name string, tasks []map[string]string) error
}

// Options are the worker-wide settings and services the actors use.
type Options struct {
	WorkerID string
	// GroupID is the worker's group.id, which prefixes the transactional
	// ids of exactly-once source tasks (TransactionalID).
	GroupID  string
	Registry *connectors.Registry
	// WorkerProps are the worker's own config keys: converter defaults
	// (key.converter, value.converter.schemas.enable, ...).
	WorkerProps map[string]string
	Offsets     OffsetStore
	// OffsetTopics opens the stores of connector-specific offsets topics
	// (offsets.storage.topic); nil when the worker has none to offer.
	OffsetTopics OffsetTopics
	Status       StatusReporter
	TaskConfigs  TaskConfigWriter
	// Topics records the topics tasks produce to or consume from
	// (topics.go); nil records nothing.
	Topics TopicRecorder
	// KafkaOpts connect to the cluster's Kafka (seed brokers, an embedding
	// program's options); every client the actors make starts from them.
	KafkaOpts []kgo.Opt
	// Security is the TLS and SASL of each kind of client the actors make
	// (kafkasec.Producer, Consumer, Admin), from the worker's security
	// keys; a connector's security overrides replace it
	// (ClientOverrides.Security). A kind not in it is PLAINTEXT.
	Security map[string]*kafkasec.Settings
	// Producer is shared by every source task and the dead letter queues of
	// this worker: one idempotent acks=all client instead of one per task.
	// A connector with producer overrides has its own (clients.go). It and
	// Admin are made with Security[kafkasec.Producer] and [kafkasec.Admin].
	Producer *kgo.Client
	Admin    *kadm.Client
	// Worker is what parsing connector configs needs of the worker's own
	// config: the client override policy and topic.creation.enable. The
	// zero value is Kafka Connect's defaults.
	Worker connconfig.Worker
	// Providers resolve the ${provider:path:key} placeholders of connector
	// and task configs at each start (the worker's config.providers); nil
	// leaves configs as they are.
	Providers *configprovider.Transformer

	Backoff             Backoff
	OffsetFlushInterval time.Duration // offset.flush.interval.ms
	// OffsetFlushTimeout bounds one offset flush or commit; one that takes
	// longer is given up and retried at the next interval
	// (offset.flush.timeout.ms; default 30 s).
	OffsetFlushTimeout time.Duration
	// ShutdownTimeout bounds how long a stopping task may take to drain its
	// in-flight records and flush offsets (task.shutdown.graceful.timeout.ms).
	ShutdownTimeout time.Duration
	// MaxInFlight bounds a source task's records produced but not acked.
	MaxInFlight int
	// TopicCheckInterval is how often the runtime asks whether topics its
	// producers wrote to were deleted (dropDeletedTopics, ADR 0032);
	// DefaultTopicCheckInterval by default.
	TopicCheckInterval time.Duration
	Log                zerolog.Logger
	// Metrics records what the pipelines and actors do; nil records
	// nothing (the worker's --metrics=false).
	Metrics *metrics.Registry
}

func (o *Options) defaults() {
	if o.Backoff.Initial == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.OffsetFlushInterval <= 0 {
		o.OffsetFlushInterval = time.Second
	}
	if o.OffsetFlushTimeout <= 0 {
		o.OffsetFlushTimeout = 30 * time.Second
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 5 * time.Second
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 20000
	}
	if o.TopicCheckInterval <= 0 {
		o.TopicCheckInterval = DefaultTopicCheckInterval
	}
}

// DefaultBufferMemory is Kafka's Java producer's default buffer.memory,
// the bound of a source task's unacknowledged bytes (bufferMemory) unless
// the worker's producer.buffer.memory or the connector's
// producer.override.buffer.memory says otherwise.
const DefaultBufferMemory = 32 << 20

// bufferMemory is the most bytes of a source task's records, keys, values
// and headers, that may be handed to the producer and not yet
// acknowledged. In Connect every source task has a producer of its own,
// whose buffer.memory bounds what it holds, and a send blocks while the
// buffer is full (Connect sets max.block.ms to its maximum); the tasks of
// a Sluice worker share a producer, so the runtime bounds each task's
// share instead: a record waits for the acknowledgements that make room
// for it (offsetTracker.reserve). Without it a task holds as many bytes as
// its MaxInFlight records are large: with Debezium's change events and
// their JSON schemas, about 100 MB (docs/adr/0019-buffer-memory.md).
func (r *Runtime) bufferMemory(o connconfig.ProducerOverrides) int64 {
	switch {
	case o.BufferMemory > 0:
		return o.BufferMemory
	case r.opts.Worker.Clients.Producer.BufferMemory > 0:
		return r.opts.Worker.Clients.Producer.BufferMemory
	}
	return DefaultBufferMemory
}

// Runtime is the actor side of one worker.
type Runtime struct {
	opts   Options
	system *actor.ActorSystem
	worker *actor.PID
	leases *leases
	// naps resumes idle source tasks whose Polls return at once (nap.go).
	naps *napRoom
	// producers are the connectors' own producers; shared holds the
	// generations of the producer the other connectors' tasks share
	// (clients.go).
	producers ownProducers
	shared    sharedProducers

	// stopWatch ends watchDeletedTopics; watched is closed once it has.
	stopWatch context.CancelFunc
	watched   chan struct{}

	mu      sync.Mutex
	stopped bool

	// live counts the task actors of each task key, from spawn to final
	// stop, so WaitStopped also sees tasks whose stop is still in the mail.
	liveMu sync.Mutex
	live   map[string]int
}

// NewRuntime starts the actor system and the worker actor.
func NewRuntime(opts Options) (*Runtime, error) {
	opts.defaults()
	if opts.Registry == nil || opts.Offsets == nil || opts.Status == nil || opts.TaskConfigs == nil || opts.Producer == nil {
		return nil, fmt.Errorf("actors: registry, offsets, status, task config writer and producer are required")
	}
	// protoactor logs through slog; keep it at Warn (docs/adr/0002), our own
	// logs carry the worker, connector and task fields.
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(routine{slog.NewTextHandler(opts.Log, &slog.HandlerOptions{Level: slog.LevelWarn})})
	}))
	r := &Runtime{opts: opts, system: system, leases: newLeases(), naps: newNapRoom(), live: map[string]int{}}
	props, mailbox := r.propsOf(func() actor.Actor { return newWorkerActor(r) })
	pid, err := system.Root.SpawnNamed(props, "worker")
	if err != nil {
		return nil, fmt.Errorf("actors: spawn worker: %w", err)
	}
	r.watchMailbox(pid, "worker", mailbox)
	r.worker = pid
	var watch context.Context
	watch, r.stopWatch = context.WithCancel(context.Background())
	r.watched = make(chan struct{})
	go func() {
		defer close(r.watched)
		r.watchDeletedTopics(watch, opts.TopicCheckInterval)
	}()
	return r, nil
}

// routine drops protoactor's errors about connections that end as a matter
// of course: every admin command (`sluice connectors ...`) is a short-lived
// remote that disconnects when done, and a worker that dies is reported by
// gossip, with its id, anyway.
type routine struct{ slog.Handler }

func (h routine) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "EndpointWriter lost connection" {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h routine) WithAttrs(as []slog.Attr) slog.Handler { return routine{h.Handler.WithAttrs(as)} }
func (h routine) WithGroup(name string) slog.Handler    { return routine{h.Handler.WithGroup(name)} }

// ActorSystem is the runtime's actor system, for the actor cluster that
// joins it to the other workers (internal/cluster/actorcluster).
func (r *Runtime) ActorSystem() *actor.ActorSystem { return r.system }

// Apply hands the worker actor the work it should run now. It returns at
// once; the actors converge in the background.
func (r *Runtime) Apply(a *Assignment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.system.Root.Send(r.worker, a)
}

// Restart restarts a connector's instance on this worker, and with
// includeTasks its tasks here; onlyFailed restarts only what is FAILED.
// It returns at once.
func (r *Runtime) Restart(connector string, includeTasks, onlyFailed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.system.Root.Send(r.worker, &restart{connector: connector, includeTasks: includeTasks, onlyFailed: onlyFailed})
}

// RestartTask restarts one task if it runs on this worker, whatever its
// state; it returns at once and reports whether the task runs here.
func (r *Runtime) RestartTask(connector string, task int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || !r.isLive(taskKey(connectors.TaskID{Connector: connector, Task: task})) {
		return false
	}
	r.system.Root.Send(r.worker, &restart{connector: connector, task: task, onlyTask: true})
	return true
}

// WaitStopped returns once none of tasks runs on this worker any more: no
// actor of it is alive and its pipeline (with its last offset flush) has
// ended. A revoking worker waits for this before it rejoins its group, so a
// task never runs on two workers at once (invariant 4).
func (r *Runtime) WaitStopped(ctx context.Context, tasks []connectors.TaskID) error {
	for {
		busy := ""
		for _, t := range tasks {
			if k := taskKey(t); r.isLive(k) || r.leases.held(k) {
				busy = k
				break
			}
		}
		if busy == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("task %s still running: %w", busy, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func taskKey(t connectors.TaskID) string { return t.Connector + "/" + strconv.Itoa(t.Task) }

func (r *Runtime) setLive(key string, delta int) {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	if r.live[key] += delta; r.live[key] <= 0 {
		delete(r.live, key)
	}
}

func (r *Runtime) isLive(key string) bool {
	r.liveMu.Lock()
	defer r.liveMu.Unlock()
	return r.live[key] > 0
}

// Stop stops every connector and task, waits until their pipelines drained
// in-flight records and flushed offsets, and shuts the actor system down.
func (r *Runtime) Stop(ctx context.Context) error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	r.mu.Unlock()
	// StopFuture waits up to 10 s for the actors to stop; the pipelines'
	// drain is awaited below, bounded by ctx.
	if err := r.system.Root.StopFuture(r.worker).Wait(); err != nil {
		r.opts.Log.Warn().Err(err).Msg("worker actor did not stop in time")
	}
	err := r.leases.wait(ctx)
	r.stopWatch()
	<-r.watched
	// A task still running past ctx no longer keeps its connector's own
	// producer open: no client outlives the runtime.
	r.producers.closeAll()
	r.shared.closeAll()
	if !r.system.IsStopped() {
		r.system.Shutdown()
	}
	if err != nil {
		return fmt.Errorf("tasks still running at shutdown: %w", err)
	}
	return nil
}

func (r *Runtime) status(st state.State, trace string, generation int64) state.Status {
	return state.Status{State: st, Trace: trace, WorkerID: r.opts.WorkerID, Generation: generation}
}

// mailboxCell holds the mailbox protoactor made for one spawn, so the
// metrics registry can read its depth (sluice_actor_mailbox_depth).
type mailboxCell struct{ mb actor.Mailbox }

// propsOf is actor.PropsFromProducer with, when metrics are on, a mailbox
// the registry can watch once the actor is spawned (watchMailbox).
func (r *Runtime) propsOf(p actor.Producer) (*actor.Props, *mailboxCell) {
	if r.opts.Metrics == nil {
		return actor.PropsFromProducer(p), nil
	}
	cell := &mailboxCell{}
	return actor.PropsFromProducer(p, actor.WithMailbox(func() actor.Mailbox {
		cell.mb = actor.Unbounded()()
		return cell.mb
	})), cell
}

// watchMailbox reports the spawned actor's mailbox depth under label until
// forgetMailbox.
func (r *Runtime) watchMailbox(pid *actor.PID, label string, cell *mailboxCell) {
	if cell != nil && cell.mb != nil && pid != nil {
		r.opts.Metrics.WatchMailbox(pid.Id, label, cell.mb)
	}
}

func (r *Runtime) forgetMailbox(pid *actor.PID) {
	if pid != nil {
		r.opts.Metrics.ForgetMailbox(pid.Id)
	}
}
