package control

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// LeaderWrites are the requests only the group leader carries out, because
// they write the config topic or need the leader's view (invariant 2):
// every Writer request, the offsets and topics resets, cluster-wide log
// levels, and the task configs a connector's instance computed.
// *Controller carries them out; a follower reaches the leader's through
// the actor cluster (internal/admin).
type LeaderWrites interface {
	Writer
	AlterOffsets(ctx context.Context, name string, offs []ConnectorOffset) (Message, error)
	ResetOffsets(ctx context.Context, name string) (Message, error)
	ResetTopics(ctx context.Context, name string) error
	// SetLogger here is always scope=cluster: a worker-scope level is set
	// where it was asked.
	SetLogger(ctx context.Context, name, level, scope string) (changed []string, err error)
	PutTaskConfigs(ctx context.Context, name string, tasks []map[string]string) error
}

var _ LeaderWrites = (*Controller)(nil)

// Cluster is the worker's group membership as the router needs it.
type Cluster interface {
	// Leader tells who carries out writes now: self when this worker
	// leads, else the leader's control plane; neither while no leader is
	// known (the worker is joining, or a rebalance is under way).
	Leader() (self bool, leader LeaderWrites)
	// Sync returns once this worker's view of the config topic holds every
	// record written before the call.
	Sync(ctx context.Context) error
}

// DefaultRequestTimeout bounds how long a request waits for the worker to
// join its group or for a rebalance to name a leader, as Kafka Connect's
// REST request timeout (90 s) bounds its herder's queue.
const DefaultRequestTimeout = 90 * time.Second

// syncTimeout bounds the read of the config topic to its end before a read
// is answered. A worker that cannot reach Kafka then answers from the view
// it has, which is what it can do.
const syncTimeout = 2 * time.Second

// ErrNotLeader is the answer of a worker that got a forwarded write but no
// longer leads: the forwarding worker asks again once it knows the new
// leader. It never reaches a client: a write still unplaced when the
// request timeout ends is answered 409.
var ErrNotLeader = &Error{Code: http.StatusMisdirectedRequest, Message: "this worker is not the group leader (any more)"}

// Router is a worker's control plane in a cluster, and the one place that
// decides where a request is carried out: writes by the group leader,
// reads by this worker once its view holds every write that had answered
// when the read began. Both front doors (REST and the admin actor) and the
// connectors' task config writes go through it.
type Router struct {
	local   *Controller
	cluster Cluster
	timeout time.Duration
}

// NewRouter routes over local, this worker's Controller; timeout bounds the
// wait for a leader (DefaultRequestTimeout when zero).
func NewRouter(local *Controller, cluster Cluster, timeout time.Duration) *Router {
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	return &Router{local: local, cluster: cluster, timeout: timeout}
}

var _ API = (*Router)(nil)

type forwardedKey struct{}

// Forwarded marks ctx as carrying a write another worker forwarded to this
// one as the leader: it is carried out here or refused with ErrNotLeader,
// never forwarded again.
func Forwarded(ctx context.Context) context.Context {
	return context.WithValue(ctx, forwardedKey{}, true)
}

func isForwarded(ctx context.Context) bool { return ctx.Value(forwardedKey{}) != nil }

// conflict is Connect's answer when no leader could be found in time.
func conflict() *Error {
	return &Error{Code: http.StatusConflict, Message: "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"}
}

// write carries do out on the leader: here when this worker leads, else on
// the leader's control plane. While the worker is starting or no leader is
// known, it waits (up to the request timeout) rather than failing at once,
// so that a script that creates a connector as soon as a worker answers
// works; a leader that moves while the request is forwarded is asked
// again.
func (r *Router) write(ctx context.Context, do func(LeaderWrites) error) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	for {
		if r.local.ready() {
			self, leader := r.cluster.Leader()
			switch {
			case self:
				return do(r.local)
			case isForwarded(ctx):
				return ErrNotLeader
			case leader != nil:
				err := do(leader)
				if !errors.Is(err, ErrNotLeader) {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			if !r.local.ready() {
				return notReady()
			}
			return conflict()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// fresh brings this worker's view up to the end of the config topic before
// a read, so that a read never misses a write that answered before it
// began, whichever worker took the write.
func (r *Router) fresh() {
	if !r.local.ready() {
		return // the read answers 503
	}
	ctx, cancel := context.WithTimeout(context.Background(), syncTimeout)
	defer cancel()
	if err := r.cluster.Sync(ctx); err != nil {
		r.local.o.Log.Debug().Err(err).Msg("answering from this worker's view: the config topic could not be read to its end")
	}
}

func (r *Router) ServerInfo() ServerInfo { return r.local.ServerInfo() }
func (r *Router) Health() Health         { return r.local.Health() }

func (r *Router) Connectors() ([]string, error) {
	r.fresh()
	return r.local.Connectors()
}

func (r *Router) Info(name string) (ConnectorInfo, error) {
	r.fresh()
	return r.local.Info(name)
}

func (r *Router) Config(name string) (map[string]string, error) {
	r.fresh()
	return r.local.Config(name)
}

func (r *Router) Tasks(name string) ([]TaskInfo, error) {
	r.fresh()
	return r.local.Tasks(name)
}

func (r *Router) Status(name string) (ConnectorStatus, error) {
	r.fresh()
	return r.local.Status(name)
}

func (r *Router) TaskStatus(name string, task int) (TaskState, error) {
	r.fresh()
	return r.local.TaskStatus(name, task)
}

func (r *Router) Offsets(ctx context.Context, name string) (ConnectorOffsets, error) {
	r.fresh()
	return r.local.Offsets(ctx, name)
}

func (r *Router) Topics(name string) (map[string]ActiveTopics, error) {
	r.fresh()
	return r.local.Topics(name)
}

func (r *Router) Plugins(connectorsOnly bool) []PluginInfo { return r.local.Plugins(connectorsOnly) }
func (r *Router) PluginConfig(class string) ([]ConfigKeyInfo, error) {
	return r.local.PluginConfig(class)
}
func (r *Router) Validate(class string, config map[string]string) (ConfigInfos, error) {
	return r.local.Validate(class, config)
}
func (r *Router) Loggers() map[string]LoggerLevel         { return r.local.Loggers() }
func (r *Router) Logger(name string) (LoggerLevel, error) { return r.local.Logger(name) }

// SetLogger sets a level on this worker, or with scope=cluster on every
// worker through the config topic, which only the leader writes.
func (r *Router) SetLogger(ctx context.Context, name, level, scope string) (changed []string, err error) {
	if s, _ := ParseLoggerScope(scope); s != ScopeCluster {
		return r.local.SetLogger(ctx, name, level, scope)
	}
	err = r.write(ctx, func(l LeaderWrites) (err error) {
		changed, err = l.SetLogger(ctx, name, level, scope)
		return err
	})
	return changed, err
}

func (r *Router) Create(ctx context.Context, name string, config map[string]string, initial InitialState) (info ConnectorInfo, err error) {
	err = r.write(ctx, func(l LeaderWrites) (err error) {
		info, err = l.Create(ctx, name, config, initial)
		return err
	})
	return info, err
}

func (r *Router) PutConfig(ctx context.Context, name string, config map[string]string) (info ConnectorInfo, created bool, err error) {
	err = r.write(ctx, func(l LeaderWrites) (err error) {
		info, created, err = l.PutConfig(ctx, name, config)
		return err
	})
	return info, created, err
}

func (r *Router) PatchConfig(ctx context.Context, name string, patch map[string]*string) (info ConnectorInfo, err error) {
	err = r.write(ctx, func(l LeaderWrites) (err error) {
		info, err = l.PatchConfig(ctx, name, patch)
		return err
	})
	return info, err
}

func (r *Router) Delete(ctx context.Context, name string) error {
	return r.write(ctx, func(l LeaderWrites) error { return l.Delete(ctx, name) })
}

func (r *Router) Pause(ctx context.Context, name string) error {
	return r.write(ctx, func(l LeaderWrites) error { return l.Pause(ctx, name) })
}

func (r *Router) Resume(ctx context.Context, name string) error {
	return r.write(ctx, func(l LeaderWrites) error { return l.Resume(ctx, name) })
}

func (r *Router) Stop(ctx context.Context, name string) error {
	return r.write(ctx, func(l LeaderWrites) error { return l.Stop(ctx, name) })
}

func (r *Router) Restart(ctx context.Context, name string, includeTasks, onlyFailed bool) (st ConnectorStatus, err error) {
	err = r.write(ctx, func(l LeaderWrites) (err error) {
		st, err = l.Restart(ctx, name, includeTasks, onlyFailed)
		return err
	})
	return st, err
}

func (r *Router) RestartTask(ctx context.Context, name string, task int) error {
	return r.write(ctx, func(l LeaderWrites) error { return l.RestartTask(ctx, name, task) })
}

func (r *Router) AlterOffsets(ctx context.Context, name string, offs []ConnectorOffset) (m Message, err error) {
	err = r.write(ctx, func(l LeaderWrites) (err error) {
		m, err = l.AlterOffsets(ctx, name, offs)
		return err
	})
	return m, err
}

func (r *Router) ResetOffsets(ctx context.Context, name string) (m Message, err error) {
	err = r.write(ctx, func(l LeaderWrites) (err error) {
		m, err = l.ResetOffsets(ctx, name)
		return err
	})
	return m, err
}

func (r *Router) ResetTopics(ctx context.Context, name string) error {
	return r.write(ctx, func(l LeaderWrites) error { return l.ResetTopics(ctx, name) })
}

// PutTaskConfigs stores the task configs a connector's instance on this
// worker computed; the actors call it.
func (r *Router) PutTaskConfigs(ctx context.Context, name string, tasks []map[string]string) error {
	return r.write(ctx, func(l LeaderWrites) error { return l.PutTaskConfigs(ctx, name, tasks) })
}
