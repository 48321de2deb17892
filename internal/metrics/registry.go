// Package metrics is a worker's metrics: the per-task recorders the
// pipelines call on the record path (atomics only), the worker's counters,
// and the Prometheus collector that turns them into Kafka Connect's metric
// names as Strimzi's JMX exporter rules spell them (collector.go), with rates,
// averages and ratios computed at scrape time.
package metrics

import (
	"cmp"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TaskRate is one running task of this worker, as the dashboard and `sluice top` show it.
type TaskRate struct {
	Connector     string
	Task          int
	Kind          string  // "source" or "sink"
	RecordsPerSec float64 // source: records written per second; sink: records put per second (over the last ~5-10 s)
	Total         int64   // records written (source) / put (sink) since the task started
	Lag           int64   // sink: max lag over its partitions (records); source: -1
}

type taskKey struct {
	connector string
	task      int
}

// Registry is one worker's metrics. Its zero value is not usable: make it
// with NewRegistry. A nil *Registry records nothing (metrics off).
type Registry struct {
	now func() time.Time // the clock; a test replaces it

	mu       sync.Mutex
	tasks    map[taskKey]*Task
	restarts map[taskKey]int64       // supervisor restarts, kept across task instances
	errors   map[taskKey]*taskErrors // kept across task instances too
	// left marks tasks that left the worker while an instance was still
	// draining: its StopTask forgets them.
	left map[taskKey]bool
	// connectorRestarts are the supervisor's restarts of connector instances.
	connectorRestarts map[string]int64
	mailboxes         map[string]watchedMailbox // by actor PID id

	prom *prometheus.Registry

	// Connector and task actors alive on this worker, from their first
	// start to their final stop (restarts included).
	connectorsRunning, tasksRunning atomic.Int64

	connectorStarts, connectorStartsOK, connectorStartsFailed atomic.Int64
	taskStarts, taskStartsOK, taskStartsFailed                atomic.Int64

	rebalancing        atomic.Bool
	rebalanceStarted   atomic.Int64 // unix nanos of the current rebalance's start
	rebalances         atomic.Int64 // completed
	timedRebalances    atomic.Int64 // completed ones whose start was seen
	rebalanceNanos     atomic.Int64 // total time of the completed ones
	rebalanceMaxNanos  atomic.Int64
	lastRebalanceEnded atomic.Int64 // unix nanos; 0: none yet
	epoch              atomic.Int64
	lastFailoverNanos  atomic.Int64 // -1: no failover measured yet
	peerGoneAt         atomic.Int64 // unix nanos a peer was seen gone; 0: none pending

	view atomic.Pointer[WorkerView]
}

// WorkerView is what the worker tells the registry about the cluster at
// scrape time; every field is optional.
type WorkerView struct {
	// Statuses is the status of every connector and task the worker knows
	// (the status topic as this worker reads it).
	Statuses func() []ConnectorStatus
	// WorkerID is this worker's id, as the statuses' WorkerID name it.
	WorkerID string
	// GossipMembers is the number of live members the worker's gossip
	// sees, and false while it has none to tell.
	GossipMembers func() (int, bool)
}

// ConnectorStatus is one connector's status and its tasks'.
type ConnectorStatus struct {
	Name     string
	State    string // RUNNING, PAUSED, FAILED, ...
	WorkerID string
	Tasks    []TaskStatus
}

// TaskStatus is one task's status.
type TaskStatus struct {
	ID       int
	State    string
	WorkerID string
}

// Mailbox is what the registry reads of an actor's mailbox.
type Mailbox interface{ UserMessageCount() int }

type watchedMailbox struct {
	label string
	mb    Mailbox
}

// NewRegistry makes an empty registry, with the Go runtime and process
// collectors beside the worker's own.
func NewRegistry() *Registry {
	r := &Registry{
		now: time.Now, tasks: map[taskKey]*Task{}, restarts: map[taskKey]int64{}, errors: map[taskKey]*taskErrors{}, left: map[taskKey]bool{},
		connectorRestarts: map[string]int64{}, mailboxes: map[string]watchedMailbox{},
		prom: prometheus.NewRegistry(),
	}
	r.lastFailoverNanos.Store(-1)
	r.prom.MustRegister(collector{r}, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Handler serves the registry's metrics: Prometheus text, or OpenMetrics
// when the scraper asks for it (Accept).
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.prom, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Gatherer is the registry for tests and embedding programs that gather
// directly.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.prom }

// WatchMailbox reports the depth of the mailbox of the actor whose PID id is
// key, under label, until ForgetMailbox(key). Actors under one label (an
// old instance still stopping beside its successor) are summed.
func (r *Registry) WatchMailbox(key, label string, mb Mailbox) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.mailboxes[key] = watchedMailbox{label, mb}
	r.mu.Unlock()
}

// ForgetMailbox stops reporting the mailbox of the actor whose PID id is key.
func (r *Registry) ForgetMailbox(key string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.mailboxes, key)
	r.mu.Unlock()
}

// SetView tells the registry where the worker's statuses and gossip come from.
func (r *Registry) SetView(v WorkerView) {
	if r == nil {
		return
	}
	r.view.Store(&v)
}

// StartTask registers a task instance that starts running and returns its
// recorder; a nil registry returns nil, whose methods record nothing. A task
// started again (a restart, a new assignment) gets a new recorder: its
// totals count from its start, as Connect's task metrics do. Its error
// counts carry on from its previous instances on this worker (taskErrors).
func (r *Registry) StartTask(connector string, task int, kind string) *Task {
	if r == nil {
		return nil
	}
	k := taskKey{connector, task}
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := r.errors[k]
	if errs == nil {
		errs = &taskErrors{}
		r.errors[k] = errs
	}
	t := newTask(connector, task, kind, r.now(), errs)
	r.tasks[k] = t
	delete(r.left, k)
	return t
}

// TaskLeft records that a task left this worker for good (its actor's
// final stop, not a restart): its metrics, restarts and error counts go,
// unless an instance of it still drains (then its StopTask removes them).
func (r *Registry) TaskLeft(connector string, task int) {
	if r == nil {
		return
	}
	k := taskKey{connector, task}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tasks[k]; t == nil || t.endedAt.Load() != 0 {
		r.forgetLocked(k)
	} else {
		r.left[k] = true // an instance still drains; StopTask forgets
	}
}

func (r *Registry) forgetLocked(k taskKey) {
	delete(r.tasks, k)
	delete(r.errors, k)
	delete(r.restarts, k)
	delete(r.left, k)
}

// ConnectorLeft records that a connector instance left this worker for
// good: its restarts go.
func (r *Registry) ConnectorLeft(connector string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.connectorRestarts, connector)
	r.mu.Unlock()
}

// StopTask records that a task instance stopped. It stays in view, ended,
// until the next instance registers (StartTask) or the task leaves
// (TaskLeft). For a failed instance that is the supervisor's backoff,
// when an operator looks at its series, which would otherwise vanish from
// every scrape (Connect keeps a FAILED task's metrics). A newer instance of
// the same task stays as it is.
func (r *Registry) StopTask(t *Task) {
	if r == nil || t == nil {
		return
	}
	t.end(r.now())
	r.mu.Lock()
	k := taskKey{t.connector, t.task}
	if r.tasks[k] == t && r.left[k] {
		r.forgetLocked(k)
	}
	r.mu.Unlock()
}

// TaskRestarted records that the supervisor restarted a task after it
// failed or panicked.
func (r *Registry) TaskRestarted(connector string, task int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.restarts[taskKey{connector, task}]++
	r.mu.Unlock()
}

// What a startup or a restart is of.
const (
	Connector = "connector"
	TaskKind  = "task"
)

// StartupAttempt records that a connector or task (what) starts.
func (r *Registry) StartupAttempt(what string) {
	if r == nil {
		return
	}
	if what == Connector {
		r.connectorStarts.Add(1)
	} else {
		r.taskStarts.Add(1)
	}
}

// StartupResult records how a connector's or task's start ended: ok once
// it opened, not ok when it failed before. A start stopped before either
// counts as an attempt only, as in Connect.
func (r *Registry) StartupResult(what string, ok bool) {
	if r == nil {
		return
	}
	switch {
	case what == Connector && ok:
		r.connectorStartsOK.Add(1)
	case what == Connector:
		r.connectorStartsFailed.Add(1)
	case ok:
		r.taskStartsOK.Add(1)
	default:
		r.taskStartsFailed.Add(1)
	}
}

// Running records that a connector or task actor (what) came to this worker
// (+1) or left it (-1).
func (r *Registry) Running(what string, delta int64) {
	if r == nil {
		return
	}
	if what == Connector {
		r.connectorsRunning.Add(delta)
	} else {
		r.tasksRunning.Add(delta)
	}
}

// ConnectorRestarted records that the supervisor restarted a connector
// instance after it failed or panicked.
func (r *Registry) ConnectorRestarted(connector string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.connectorRestarts[connector]++
	r.mu.Unlock()
}

// RebalanceStarted records that the worker's group began a rebalance.
func (r *Registry) RebalanceStarted() {
	if r == nil {
		return
	}
	if r.rebalancing.CompareAndSwap(false, true) {
		r.rebalanceStarted.Store(r.now().UnixNano())
	}
}

// RebalanceCompleted records the end of a rebalance with the generation
// (Connect's epoch) it ended in.
func (r *Registry) RebalanceCompleted(epoch int64) {
	if r == nil {
		return
	}
	now := r.now().UnixNano()
	r.epoch.Store(epoch)
	if r.rebalancing.CompareAndSwap(true, false) {
		d := now - r.rebalanceStarted.Load()
		r.timedRebalances.Add(1)
		r.rebalanceNanos.Add(d)
		storeMax(&r.rebalanceMaxNanos, d)
	}
	r.rebalances.Add(1)
	r.lastRebalanceEnded.Store(now)
	if gone := r.peerGoneAt.Swap(0); gone != 0 {
		r.lastFailoverNanos.Store(now - gone)
	}
}

// PeerGone records that another worker was seen gone (gossip); the next
// completed rebalance ends the failover it starts.
func (r *Registry) PeerGone() {
	if r == nil {
		return
	}
	r.peerGoneAt.CompareAndSwap(0, r.now().UnixNano())
}

func storeMax(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// viewedTasks is a snapshot of the registered task instances, those running
// and those ended and waiting for their restart (StopTask), sorted by
// connector then task.
func (r *Registry) viewedTasks() []*Task {
	r.mu.Lock()
	out := make([]*Task, 0, len(r.tasks))
	for _, t := range r.tasks {
		out = append(out, t)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b *Task) int {
		return cmp.Or(cmp.Compare(a.connector, b.connector), cmp.Compare(a.task, b.task))
	})
	return out
}

// taskRates computes the windowed rates of t at now. The windows are
// guarded by r.mu: readers (scrapes, the dashboard) are few and slow.
func (r *Registry) taskRates(t *Task, now time.Time) rates {
	r.mu.Lock()
	defer r.mu.Unlock()
	return t.window.perSecond(now, t.counts(), t.started)
}

// TaskRates is this worker's running tasks, sorted by connector, task.
func (r *Registry) TaskRates() []TaskRate {
	if r == nil {
		return nil
	}
	now := r.now()
	tasks := r.viewedTasks()
	out := make([]TaskRate, 0, len(tasks))
	for _, t := range tasks {
		rt := r.taskRates(t, now)
		tr := TaskRate{Connector: t.connector, Task: t.task, Kind: t.kind, Total: t.total(), Lag: -1}
		if t.kind == KindSource {
			tr.RecordsPerSec = rt.written
		} else {
			tr.RecordsPerSec = rt.put
			tr.Lag = t.maxLag()
		}
		out = append(out, tr)
	}
	return out
}
