// Package metrics is a worker's metrics: the per-task recorders the
// pipelines call on the record path (atomics only), the worker's counters,
// and the Prometheus collector that turns them into Kafka Connect's metric
// names as Strimzi's JMX exporter rules spell them (collector.go), with rates,
// averages and ratios computed at scrape time.
package metrics

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
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
	restarts map[taskKey]int64 // supervisor restarts, kept across task instances

	connectorStarts, connectorStartsOK, connectorStartsFailed atomic.Int64
	taskStarts, taskStartsOK, taskStartsFailed                atomic.Int64

	rebalancing        atomic.Bool
	rebalanceStarted   atomic.Int64 // unix nanos of the current rebalance's start
	rebalances         atomic.Int64 // completed
	rebalanceNanos     atomic.Int64 // total time of the completed ones
	rebalanceMaxNanos  atomic.Int64
	lastRebalanceEnded atomic.Int64 // unix nanos; 0: none yet
	epoch              atomic.Int64
	lastFailoverNanos  atomic.Int64 // -1: no failover measured yet

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
	// GossipMembers is the number of live members the worker's gossip sees;
	// nil when the worker runs no gossip.
	GossipMembers func() int
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

// NewRegistry makes an empty registry.
func NewRegistry() *Registry {
	r := &Registry{now: time.Now, tasks: map[taskKey]*Task{}, restarts: map[taskKey]int64{}}
	r.lastFailoverNanos.Store(-1)
	return r
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
// totals count from its start, as Connect's task metrics do.
func (r *Registry) StartTask(connector string, task int, kind string) *Task {
	if r == nil {
		return nil
	}
	t := newTask(connector, task, kind, r.now())
	r.mu.Lock()
	r.tasks[taskKey{connector, task}] = t
	r.mu.Unlock()
	return t
}

// StopTask unregisters a task instance; a newer instance of the same task
// stays registered.
func (r *Registry) StopTask(t *Task) {
	if r == nil || t == nil {
		return
	}
	r.mu.Lock()
	k := taskKey{t.connector, t.task}
	if r.tasks[k] == t {
		delete(r.tasks, k)
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

// ConnectorStartup records one connector start attempt and its outcome.
func (r *Registry) ConnectorStartup(ok bool) {
	if r == nil {
		return
	}
	r.connectorStarts.Add(1)
	if ok {
		r.connectorStartsOK.Add(1)
	} else {
		r.connectorStartsFailed.Add(1)
	}
}

// TaskStartup records one task start attempt and its outcome.
func (r *Registry) TaskStartup(ok bool) {
	if r == nil {
		return
	}
	r.taskStarts.Add(1)
	if ok {
		r.taskStartsOK.Add(1)
	} else {
		r.taskStartsFailed.Add(1)
	}
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
		r.rebalanceNanos.Add(d)
		storeMax(&r.rebalanceMaxNanos, d)
	}
	r.rebalances.Add(1)
	r.lastRebalanceEnded.Store(now)
}

// Failover records how long the last failover took: from the moment a
// worker was known gone to the moment its work ran again elsewhere.
func (r *Registry) Failover(d time.Duration) {
	if r == nil {
		return
	}
	r.lastFailoverNanos.Store(int64(d))
}

func storeMax(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// runningTasks is a snapshot of the registered task instances, sorted by
// connector then task.
func (r *Registry) runningTasks() []*Task {
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
	tasks := r.runningTasks()
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
