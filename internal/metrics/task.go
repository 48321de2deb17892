package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Kinds of task, as TaskRate.Kind and the kind label say.
const (
	KindSource = "source"
	KindSink   = "sink"
)

// Task is the recorder of one running task instance: the pipeline calls its
// methods on the record path, so each is one or two atomic operations, with
// no lock and no allocation. A nil *Task records nothing, which is how a
// worker runs with metrics off. Rates, averages and ratios are computed from
// these counters when something reads them (collector.go, TaskRates).
type Task struct {
	connector string
	task      int
	kind      string
	started   time.Time
	// labels are the task's connector and task label pairs, made at its
	// first scrape (labelPairs) and shared by its samples from then on.
	labels atomic.Pointer[[]*dto.LabelPair]

	// Source: records returned by poll, records acknowledged by Kafka, and
	// polled records that will not be (failed, dropped by a transform,
	// skipped). Those polled and neither are active (activeCount): a
	// counter of its own would cost each record a second atomic add, on a
	// line the polling goroutine writes too.
	polled, written, unwritten atomic.Int64
	// Sink: records fetched from Kafka, records put to the task.
	read, put atomic.Int64
	// Batches: poll batches (source) or put batches (sink), with their total
	// size and total duration.
	batches, batchRecords, batchNanos atomic.Int64
	batchMax, batchMaxNanos           atomic.Int64
	// Offset commits: attempts, successes, total and maximum duration.
	commits, commitsOK, commitNanos, commitMaxNanos atomic.Int64
	// Sink offset commits that completed (Connect's offset-commit-completion).
	commitsCompleted atomic.Int64
	// Error handling (Connect's task-error-metrics): shared by the
	// successive instances of the task on this worker (taskErrors).
	*taskErrors
	// Running and paused time: the state and since when, plus the time
	// spent in each state before.
	paused     atomic.Bool
	stateSince atomic.Int64 // unix nanos
	// endedAt is when the instance stopped (unix nanos), 0 while it runs.
	// A failed instance stays in view until the supervisor's restart
	// replaces it (Registry.StopTask), and from then on its time counts as
	// neither running nor paused, as a FAILED task's in Connect.
	endedAt                   atomic.Int64
	runningNanos, pausedNanos atomic.Int64
	stateMu                   sync.Mutex   // serialises state changes (rare), never the record path
	partitions                atomic.Int64 // assigned to a sink task
	lagMu                     sync.Mutex
	lags                      map[Partition]*atomic.Int64
	lagsCopy                  atomic.Pointer[[]partitionLag]
	window                    rateWindow // guarded by Registry.mu
}

// Partition names one topic partition a sink task consumes.
type Partition struct {
	Topic     string
	Partition int32
}

type partitionLag struct {
	Partition
	lag *atomic.Int64
}

// taskErrors are a task's error counts. Unlike the other counters they
// outlive a task instance: Sluice restarts a failed task by itself (Connect
// leaves it FAILED, its metrics in view), so counts kept per instance would
// vanish with the very instance that failed. They go when the task leaves
// the worker (Registry.TaskLeft).
type taskErrors struct {
	recordErrors, recordFailures, recordsSkipped, errorsLogged atomic.Int64
	dlqRequests, dlqFailures, retries                          atomic.Int64
	lastErrorMillis                                            atomic.Int64
}

// Label names of the per-task metrics (taskLabels), in the sorted order
// label pairs must have.
var connectorLabelName, taskLabelName = "connector", "task"

// labelPairs are the task's label pairs, the same slice at every scrape.
func (t *Task) labelPairs() []*dto.LabelPair {
	if p := t.labels.Load(); p != nil {
		return *p
	}
	task := strconv.Itoa(t.task)
	pairs := []*dto.LabelPair{{Name: &connectorLabelName, Value: &t.connector}, {Name: &taskLabelName, Value: &task}}
	t.labels.CompareAndSwap(nil, &pairs)
	return *t.labels.Load()
}

func newTask(connector string, task int, kind string, now time.Time, errs *taskErrors) *Task {
	t := &Task{connector: connector, task: task, kind: kind, started: now, taskErrors: errs}
	t.stateSince.Store(now.UnixNano())
	return t
}

// Polled records a source poll that returned n records after taking d.
func (t *Task) Polled(n int, d time.Duration) {
	if t == nil {
		return
	}
	t.polled.Add(int64(n))
	t.batch(n, d)
}

// Written records one source record acknowledged by Kafka (ok) or failed.
// Either way it is no longer active.
func (t *Task) Written(ok bool) {
	if t == nil {
		return
	}
	if ok {
		t.written.Add(1)
	} else {
		t.unwritten.Add(1)
	}
}

// Dropped records a polled source record that will not be written (a
// transform dropped it or errors.tolerance skipped it): no longer active.
func (t *Task) Dropped() {
	if t == nil {
		return
	}
	t.unwritten.Add(1)
}

// activeCount is the records polled and not yet written or given up. The
// ends are loaded before polled, which only grows, so it is never negative.
func (t *Task) activeCount() int64 {
	done := t.written.Load() + t.unwritten.Load()
	return t.polled.Load() - done
}

// Read records n records a sink task fetched from Kafka.
func (t *Task) Read(n int) {
	if t == nil {
		return
	}
	t.read.Add(int64(n))
}

// Put records a put of n records to the sink task that took d.
func (t *Task) Put(n int, d time.Duration) {
	if t == nil {
		return
	}
	t.put.Add(int64(n))
	t.batch(n, d)
}

func (t *Task) batch(n int, d time.Duration) {
	t.batches.Add(1)
	t.batchRecords.Add(int64(n))
	t.batchNanos.Add(int64(d))
	storeMax(&t.batchMax, int64(n))
	storeMax(&t.batchMaxNanos, int64(d))
}

// OffsetCommit records one offset commit that took d and succeeded or not.
// A sink commit that succeeded also counts as completed.
func (t *Task) OffsetCommit(d time.Duration, ok bool) {
	if t == nil {
		return
	}
	t.commits.Add(1)
	t.commitNanos.Add(int64(d))
	storeMax(&t.commitMaxNanos, int64(d))
	if ok {
		t.commitsOK.Add(1)
		if t.kind == KindSink {
			t.commitsCompleted.Add(1)
		}
	}
}

// RecordError records a record that failed in a stage (conversion,
// transformation, put); failure says whether the task failed for it rather
// than tolerating it.
func (t *Task) RecordError(failure bool) {
	if t == nil {
		return
	}
	t.recordErrors.Add(1)
	t.lastErrorMillis.Store(time.Now().UnixMilli())
	if failure {
		t.recordFailures.Add(1)
	}
}

// Skipped records a record errors.tolerance=all skipped.
func (t *Task) Skipped() {
	if t == nil {
		return
	}
	t.recordsSkipped.Add(1)
}

// ErrorLogged records an error written to the log (errors.log.enable).
func (t *Task) ErrorLogged() {
	if t == nil {
		return
	}
	t.errorsLogged.Add(1)
}

// DeadLetter records one produce to the dead letter queue, failed or not.
func (t *Task) DeadLetter(ok bool) {
	if t == nil {
		return
	}
	t.dlqRequests.Add(1)
	if !ok {
		t.dlqFailures.Add(1)
	}
}

// Retry records one retry of a failed operation.
func (t *Task) Retry() {
	if t == nil {
		return
	}
	t.retries.Add(1)
}

// Paused records that the task paused (true) or resumed (false).
func (t *Task) Paused(paused bool) {
	if t == nil {
		return
	}
	t.setPaused(paused, time.Now())
}

func (t *Task) setPaused(paused bool, now time.Time) {
	t.stateMu.Lock()
	defer t.stateMu.Unlock()
	if t.paused.Load() == paused {
		return
	}
	spent := now.UnixNano() - t.stateSince.Load()
	if t.paused.Load() {
		t.pausedNanos.Add(spent)
	} else {
		t.runningNanos.Add(spent)
	}
	t.stateSince.Store(now.UnixNano())
	t.paused.Store(paused)
}

// end records that the instance stopped at now (the first stop counts).
func (t *Task) end(now time.Time) { t.endedAt.CompareAndSwap(0, now.UnixNano()) }

// ratios are the fractions of the task's life spent running and paused;
// an ended instance's life goes on, in neither state.
func (t *Task) ratios(now time.Time) (running, paused float64) {
	t.stateMu.Lock()
	run, pause := t.runningNanos.Load(), t.pausedNanos.Load()
	until, ended := now.UnixNano(), int64(0)
	if end := t.endedAt.Load(); end != 0 && end < until {
		until, ended = end, until-end
	}
	current := until - t.stateSince.Load()
	if t.paused.Load() {
		pause += current
	} else {
		run += current
	}
	t.stateMu.Unlock()
	total := run + pause + ended
	if total <= 0 {
		return 1, 0
	}
	return float64(run) / float64(total), float64(pause) / float64(total)
}

// Lag records a sink partition's lag: the records between the last one the
// task read and the partition's end. Called once per fetched partition, not
// per record; the first call for a partition allocates its slot.
func (t *Task) Lag(topic string, partition int32, lag int64) {
	if t == nil {
		return
	}
	if lag < 0 {
		lag = 0
	}
	key := Partition{topic, partition}
	t.lagMu.Lock()
	slot, ok := t.lags[key]
	if !ok {
		if t.lags == nil {
			t.lags = map[Partition]*atomic.Int64{}
		}
		slot = new(atomic.Int64)
		t.lags[key] = slot
		t.publishLagsLocked()
	}
	t.lagMu.Unlock()
	slot.Store(lag)
}

// Assigned records partitions assigned to a sink task.
func (t *Task) Assigned(partitions int) {
	if t == nil {
		return
	}
	t.partitions.Add(int64(partitions))
}

// Revoked records partitions revoked from (or lost by) a sink task and
// forgets their lag.
func (t *Task) Revoked(topic string, partitions []int32) {
	if t == nil {
		return
	}
	t.partitions.Add(-int64(len(partitions)))
	t.lagMu.Lock()
	defer t.lagMu.Unlock()
	for _, p := range partitions {
		delete(t.lags, Partition{topic, p})
	}
	t.publishLagsLocked()
}

func (t *Task) publishLagsLocked() {
	list := make([]partitionLag, 0, len(t.lags))
	for k, v := range t.lags {
		list = append(list, partitionLag{k, v})
	}
	t.lagsCopy.Store(&list)
}

// partitionLags is a snapshot of the lag per partition.
func (t *Task) partitionLags() map[Partition]int64 {
	out := map[Partition]int64{}
	if l := t.lagsCopy.Load(); l != nil {
		for _, pl := range *l {
			out[pl.Partition] = pl.lag.Load()
		}
	}
	return out
}

// partitionCount is the number of partitions the task consumes.
func (t *Task) partitionCount() int64 { return t.partitions.Load() }

// maxLag is the largest lag over the task's partitions (0 with none).
func (t *Task) maxLag() int64 {
	var max int64
	if l := t.lagsCopy.Load(); l != nil {
		for _, pl := range *l {
			if v := pl.lag.Load(); v > max {
				max = v
			}
		}
	}
	return max
}

// total is the count TaskRate.Total shows: written for a source, put for a
// sink.
func (t *Task) total() int64 {
	if t.kind == KindSource {
		return t.written.Load()
	}
	return t.put.Load()
}
