package metrics

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The metric names are Kafka Connect's, as Strimzi's kafka-connect-metrics.yaml
// JMX exporter rules turn them into Prometheus names: the MBean type and the
// attribute, lowercased, '-' made '_'. Those rules make an attribute ending in
// -total a COUNTER and every other attribute a GAUGE (the task error counts
// such as total-record-errors included), so Strimzi's Grafana dashboards read
// these unchanged. Sluice's own metrics are prefixed sluice_.

// taskSample is one task read once per scrape: its windowed rates and ratios.
type taskSample struct {
	*Task
	rates           rates
	running, paused float64
}

// taskMetric is one per-task metric: which kind of task has it and how its
// value is computed from the task's counters.
type taskMetric struct {
	desc  *prometheus.Desc
	kind  string // "" for every task
	typ   prometheus.ValueType
	value func(s *taskSample) float64
}

var taskLabels = []string{"connector", "task"}

func newTaskMetric(name, help, kind string, typ prometheus.ValueType, value func(s *taskSample) float64) taskMetric {
	return taskMetric{desc: prometheus.NewDesc(name, help, taskLabels, nil), kind: kind, typ: typ, value: value}
}

// avg is sum/n, NaN with no samples, as Connect's Avg reports it.
func avg(sum, n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return float64(sum) / float64(n)
}

func ms(nanos int64) float64 { return float64(nanos) / float64(time.Millisecond) }

var taskMetrics = []taskMetric{
	// connector-task-metrics
	newTaskMetric("kafka_connect_connector_task_offset_commit_success_percentage",
		"The fraction (0-1) of this task's offset commit attempts that succeeded.", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return avg(s.commitsOK.Load(), s.commits.Load()) }),
	newTaskMetric("kafka_connect_connector_task_offset_commit_failure_percentage",
		"The fraction (0-1) of this task's offset commit attempts that failed.", "", prometheus.GaugeValue,
		func(s *taskSample) float64 {
			n := s.commits.Load()
			return avg(n-s.commitsOK.Load(), n)
		}),
	newTaskMetric("kafka_connect_connector_task_offset_commit_avg_time_ms",
		"The average time in milliseconds taken by this task to commit offsets, since the task started.", "", prometheus.GaugeValue,
		func(s *taskSample) float64 {
			return avg(s.commitNanos.Load(), s.commits.Load()) / float64(time.Millisecond)
		}),
	newTaskMetric("kafka_connect_connector_task_offset_commit_max_time_ms",
		"The longest time in milliseconds taken by this task to commit offsets, since the task started.", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return ms(s.commitMaxNanos.Load()) }),
	newTaskMetric("kafka_connect_connector_task_batch_size_avg",
		"The average number of records in the batches the task polled (source) or put (sink), since the task started.", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return avg(s.batchRecords.Load(), s.batches.Load()) }),
	newTaskMetric("kafka_connect_connector_task_batch_size_max",
		"The largest number of records in a batch the task polled (source) or put (sink), since the task started.", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.batchMax.Load()) }),
	newTaskMetric("kafka_connect_connector_task_running_ratio",
		"The fraction of time since the task started that it spent running.", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return s.running }),
	newTaskMetric("kafka_connect_connector_task_pause_ratio",
		"The fraction of time since the task started that it spent paused.", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return s.paused }),

	// source-task-metrics
	newTaskMetric("kafka_connect_source_task_source_record_poll_total",
		"The records this source task polled, before transformations, since it started.", KindSource, prometheus.CounterValue,
		func(s *taskSample) float64 { return float64(s.polled.Load()) }),
	newTaskMetric("kafka_connect_source_task_source_record_poll_rate",
		"The records per second this source task polled, over the last ~10 s.", KindSource, prometheus.GaugeValue,
		func(s *taskSample) float64 { return s.rates.polled }),
	newTaskMetric("kafka_connect_source_task_source_record_write_total",
		"The records this source task wrote to Kafka (acknowledged), since it started.", KindSource, prometheus.CounterValue,
		func(s *taskSample) float64 { return float64(s.written.Load()) }),
	newTaskMetric("kafka_connect_source_task_source_record_write_rate",
		"The records per second this source task wrote to Kafka, over the last ~10 s.", KindSource, prometheus.GaugeValue,
		func(s *taskSample) float64 { return s.rates.written }),
	newTaskMetric("kafka_connect_source_task_source_record_active_count",
		"The records this source task polled but Kafka has not yet acknowledged.", KindSource, prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.activeCount()) }),
	newTaskMetric("kafka_connect_source_task_poll_batch_avg_time_ms",
		"The average time in milliseconds of one poll, since the task started.", KindSource, prometheus.GaugeValue,
		func(s *taskSample) float64 {
			return avg(s.batchNanos.Load(), s.batches.Load()) / float64(time.Millisecond)
		}),
	newTaskMetric("kafka_connect_source_task_poll_batch_max_time_ms",
		"The longest time in milliseconds of one poll, since the task started.", KindSource, prometheus.GaugeValue,
		func(s *taskSample) float64 { return ms(s.batchMaxNanos.Load()) }),

	// sink-task-metrics
	newTaskMetric("kafka_connect_sink_task_sink_record_read_total",
		"The records this sink task read from Kafka, since it started.", KindSink, prometheus.CounterValue,
		func(s *taskSample) float64 { return float64(s.read.Load()) }),
	newTaskMetric("kafka_connect_sink_task_sink_record_read_rate",
		"The records per second this sink task read from Kafka, over the last ~10 s.", KindSink, prometheus.GaugeValue,
		func(s *taskSample) float64 { return s.rates.read }),
	newTaskMetric("kafka_connect_sink_task_sink_record_send_total",
		"The records this sink task put to the connector after transformations, since it started.", KindSink, prometheus.CounterValue,
		func(s *taskSample) float64 { return float64(s.put.Load()) }),
	newTaskMetric("kafka_connect_sink_task_sink_record_send_rate",
		"The records per second this sink task put to the connector, over the last ~10 s.", KindSink, prometheus.GaugeValue,
		func(s *taskSample) float64 { return s.rates.put }),
	newTaskMetric("kafka_connect_sink_task_put_batch_avg_time_ms",
		"The average time in milliseconds of one put, since the task started.", KindSink, prometheus.GaugeValue,
		func(s *taskSample) float64 {
			return avg(s.batchNanos.Load(), s.batches.Load()) / float64(time.Millisecond)
		}),
	newTaskMetric("kafka_connect_sink_task_put_batch_max_time_ms",
		"The longest time in milliseconds of one put, since the task started.", KindSink, prometheus.GaugeValue,
		func(s *taskSample) float64 { return ms(s.batchMaxNanos.Load()) }),
	newTaskMetric("kafka_connect_sink_task_offset_commit_completion_total",
		"The offset commits of this sink task that completed, since it started.", KindSink, prometheus.CounterValue,
		func(s *taskSample) float64 { return float64(s.commitsCompleted.Load()) }),
	newTaskMetric("kafka_connect_sink_task_offset_commit_completion_rate",
		"The offset commits of this sink task that completed per second, over the last ~10 s.", KindSink, prometheus.GaugeValue,
		func(s *taskSample) float64 { return s.rates.commitsCompleted }),
	newTaskMetric("kafka_connect_sink_task_sink_record_lag_max",
		"The largest lag in records over the partitions this sink task consumes (records between its position and the partition's end).", KindSink, prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.maxLag()) }),
	newTaskMetric("kafka_connect_sink_task_partition_count",
		"The topic partitions this sink task consumes.", KindSink, prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.partitionCount()) }),

	// task-error-metrics: gauges under Strimzi's rules, though they only grow;
	// they outlive the task's restarts (taskErrors).
	newTaskMetric("kafka_connect_task_error_total_record_errors",
		"The record processing errors in this task, while it is on this worker (restarts included).", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.recordErrors.Load()) }),
	newTaskMetric("kafka_connect_task_error_total_record_failures",
		"The record processing failures in this task (errors not tolerated), while it is on this worker (restarts included).", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.recordFailures.Load()) }),
	newTaskMetric("kafka_connect_task_error_total_records_skipped",
		"The records skipped because of errors (errors.tolerance=all), while the task is on this worker (restarts included).", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.recordsSkipped.Load()) }),
	newTaskMetric("kafka_connect_task_error_total_errors_logged",
		"The errors logged (errors.log.enable), while the task is on this worker (restarts included).", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.errorsLogged.Load()) }),
	newTaskMetric("kafka_connect_task_error_deadletterqueue_produce_requests",
		"The writes to the dead letter queue, while the task is on this worker (restarts included).", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.dlqRequests.Load()) }),
	newTaskMetric("kafka_connect_task_error_deadletterqueue_produce_failures",
		"The failed writes to the dead letter queue, while the task is on this worker (restarts included).", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.dlqFailures.Load()) }),
	newTaskMetric("kafka_connect_task_error_total_retries",
		"The retries of failed operations, while the task is on this worker (restarts included).", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.retries.Load()) }),
	newTaskMetric("kafka_connect_task_error_last_error_timestamp",
		"The epoch timestamp in milliseconds of the task's last record error (0: none).", "", prometheus.GaugeValue,
		func(s *taskSample) float64 { return float64(s.lastErrorMillis.Load()) }),
}

// Worker, rebalance, status and Sluice metrics.
var (
	connectorCountDesc = prometheus.NewDesc("kafka_connect_worker_connector_count",
		"The connectors this worker runs.", nil, nil)
	taskCountDesc = prometheus.NewDesc("kafka_connect_worker_task_count",
		"The tasks this worker runs.", nil, nil)
	connectorStartupDescs = startupDescs("connector")
	taskStartupDescs      = startupDescs("task")

	// Per connector, the tasks of this worker in each state (Connect's
	// connector-*-task-count of connect-worker-metrics,connector=...).
	taskStates         = []string{"running", "paused", "failed", "unassigned", "destroyed", "restarting"}
	connectorTaskDescs = func() map[string]*prometheus.Desc {
		m := map[string]*prometheus.Desc{"total": prometheus.NewDesc("kafka_connect_worker_connector_total_task_count",
			"The tasks of the connector on this worker.", []string{"connector"}, nil)}
		for _, s := range taskStates {
			m[s] = prometheus.NewDesc("kafka_connect_worker_connector_"+s+"_task_count",
				"The "+s+" tasks of the connector on this worker.", []string{"connector"}, nil)
		}
		return m
	}()

	rebalancesDesc = prometheus.NewDesc("kafka_connect_worker_rebalance_completed_rebalances_total",
		"The rebalances this worker completed.", nil, nil)
	rebalancingDesc = prometheus.NewDesc("kafka_connect_worker_rebalance_rebalancing",
		"1 while this worker is rebalancing, else 0.", nil, nil)
	epochDesc = prometheus.NewDesc("kafka_connect_worker_rebalance_epoch",
		"The generation of the group this worker's last rebalance ended in.", nil, nil)
	sinceRebalanceDesc = prometheus.NewDesc("kafka_connect_worker_rebalance_time_since_last_rebalance_ms",
		"Milliseconds since this worker's last rebalance ended (+Inf before the first).", nil, nil)
	rebalanceAvgDesc = prometheus.NewDesc("kafka_connect_worker_rebalance_rebalance_avg_time_ms",
		"The average time in milliseconds of this worker's rebalances.", nil, nil)
	rebalanceMaxDesc = prometheus.NewDesc("kafka_connect_worker_rebalance_rebalance_max_time_ms",
		"The longest time in milliseconds of this worker's rebalances.", nil, nil)

	connectorStatusDesc = prometheus.NewDesc("kafka_connect_connector_status",
		"1 for the connector's status (lowercase, as Connect's connector-metrics status), for the connectors this worker runs.",
		[]string{"connector", "status"}, nil)
	taskStatusDesc = prometheus.NewDesc("kafka_connect_connector_task_status",
		"1 for the task's status (lowercase, as Connect's connector-task-metrics status), for the tasks this worker runs.",
		[]string{"connector", "task", "status"}, nil)

	restartsDesc = prometheus.NewDesc("sluice_task_restarts_total",
		"The times the supervisor restarted this task after it failed or panicked, while the task is on this worker.", taskLabels, nil)
	connectorRestartsDesc = prometheus.NewDesc("sluice_connector_restarts_total",
		"The times the supervisor restarted this connector after it failed or panicked, while the connector is on this worker.", []string{"connector"}, nil)
	failoverDesc = prometheus.NewDesc("sluice_rebalance_last_failover_seconds",
		"Seconds from a worker's departure being known to the end of the rebalance that reassigned its work, for the last such rebalance this worker saw.", nil, nil)
	partitionLagDesc = prometheus.NewDesc("sluice_sink_partition_lag",
		"Records between the sink task's position and the end of the partition, per partition it consumes.",
		[]string{"connector", "task", "topic", "partition"}, nil)
	gossipMembersDesc = prometheus.NewDesc("sluice_gossip_members",
		"The live workers this worker's gossip sees, itself included.", nil, nil)
	mailboxDesc = prometheus.NewDesc("sluice_actor_mailbox_depth",
		"User messages waiting in the actor's mailbox.", []string{"actor"}, nil)
)

func startupDescs(what string) [3]*prometheus.Desc {
	return [3]*prometheus.Desc{
		prometheus.NewDesc("kafka_connect_worker_"+what+"_startup_attempts_total", "The "+what+" starts this worker attempted.", nil, nil),
		prometheus.NewDesc("kafka_connect_worker_"+what+"_startup_success_total", "The "+what+" starts that succeeded on this worker.", nil, nil),
		prometheus.NewDesc("kafka_connect_worker_"+what+"_startup_failure_total", "The "+what+" starts that failed on this worker.", nil, nil),
	}
}

// collector is the registry as a prometheus.Collector: it reads the atomics
// and computes rates, averages and ratios at scrape time.
type collector struct{ r *Registry }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range taskMetrics {
		ch <- m.desc
	}
	for _, d := range []*prometheus.Desc{connectorCountDesc, taskCountDesc, rebalancesDesc, rebalancingDesc, epochDesc,
		sinceRebalanceDesc, rebalanceAvgDesc, rebalanceMaxDesc, connectorStatusDesc, taskStatusDesc, restartsDesc,
		connectorRestartsDesc, failoverDesc, partitionLagDesc, gossipMembersDesc, mailboxDesc} {
		ch <- d
	}
	for _, d := range connectorStartupDescs {
		ch <- d
	}
	for _, d := range taskStartupDescs {
		ch <- d
	}
	for _, d := range connectorTaskDescs {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	now := r.now()
	c.collectTasks(ch, now)
	c.collectWorker(ch, now)
	c.collectStatuses(ch)
	r.mu.Lock()
	for k, n := range r.restarts {
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.CounterValue, float64(n), k.connector, strconv.Itoa(k.task))
	}
	for name, n := range r.connectorRestarts {
		ch <- prometheus.MustNewConstMetric(connectorRestartsDesc, prometheus.CounterValue, float64(n), name)
	}
	depths := map[string]int{}
	for _, w := range r.mailboxes {
		depths[w.label] += w.mb.UserMessageCount()
	}
	r.mu.Unlock()
	for label, n := range depths {
		ch <- prometheus.MustNewConstMetric(mailboxDesc, prometheus.GaugeValue, float64(n), label)
	}
}

func (c collector) collectTasks(ch chan<- prometheus.Metric, now time.Time) {
	for _, t := range c.r.viewedTasks() {
		s := &taskSample{Task: t, rates: c.r.taskRates(t, now)}
		s.running, s.paused = t.ratios(now)
		task := strconv.Itoa(t.task)
		labels := t.labelPairs()
		// One allocation for the task's samples of this scrape.
		samples := make([]sample, len(taskMetrics))
		for i, m := range taskMetrics {
			if m.kind == "" || m.kind == t.kind {
				samples[i] = sample{desc: m.desc, typ: m.typ, value: m.value(s), labels: labels}
				ch <- &samples[i]
			}
		}
		for p, lag := range t.partitionLags() {
			ch <- prometheus.MustNewConstMetric(partitionLagDesc, prometheus.GaugeValue, float64(lag),
				t.connector, task, p.Topic, strconv.Itoa(int(p.Partition)))
		}
	}
}

// sample is one per-task value of a scrape, as prometheus.MustNewConstMetric
// makes it but with the task's label pairs made once per task
// (Task.labelPairs), not once per sample: at 500 tasks a scrape has some
// 17,000 samples, all alive until the scrape is written, and the pairs were
// most of what each one allocated.
type sample struct {
	desc   *prometheus.Desc
	typ    prometheus.ValueType
	value  float64
	labels []*dto.LabelPair
}

func (s *sample) Desc() *prometheus.Desc { return s.desc }

// Write fills out as a const metric does. The label pairs are shared by
// the task's samples of every scrape: client_golang treats a written
// metric's labels as immutable (it copies them when it must sort them).
func (s *sample) Write(out *dto.Metric) error {
	out.Label = s.labels
	switch s.typ {
	case prometheus.CounterValue:
		out.Counter = &dto.Counter{Value: &s.value}
	case prometheus.GaugeValue:
		out.Gauge = &dto.Gauge{Value: &s.value}
	default:
		out.Untyped = &dto.Untyped{Value: &s.value}
	}
	return nil
}

func (c collector) collectWorker(ch chan<- prometheus.Metric, now time.Time) {
	r := c.r
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(connectorCountDesc, float64(r.connectorsRunning.Load()))
	gauge(taskCountDesc, float64(r.tasksRunning.Load()))
	counter(connectorStartupDescs[0], r.connectorStarts.Load())
	counter(connectorStartupDescs[1], r.connectorStartsOK.Load())
	counter(connectorStartupDescs[2], r.connectorStartsFailed.Load())
	counter(taskStartupDescs[0], r.taskStarts.Load())
	counter(taskStartupDescs[1], r.taskStartsOK.Load())
	counter(taskStartupDescs[2], r.taskStartsFailed.Load())

	n := r.rebalances.Load()
	counter(rebalancesDesc, n)
	rebalancing := 0.0
	if r.rebalancing.Load() {
		rebalancing = 1
	}
	gauge(rebalancingDesc, rebalancing)
	gauge(epochDesc, float64(r.epoch.Load()))
	since := math.Inf(1)
	if last := r.lastRebalanceEnded.Load(); last != 0 {
		since = ms(now.UnixNano() - last)
	}
	gauge(sinceRebalanceDesc, since)
	gauge(rebalanceAvgDesc, avg(r.rebalanceNanos.Load(), r.timedRebalances.Load())/float64(time.Millisecond))
	gauge(rebalanceMaxDesc, ms(r.rebalanceMaxNanos.Load()))
	if d := r.lastFailoverNanos.Load(); d >= 0 {
		gauge(failoverDesc, time.Duration(d).Seconds())
	}
	if v := r.view.Load(); v != nil && v.GossipMembers != nil {
		if n, ok := v.GossipMembers(); ok {
			gauge(gossipMembersDesc, float64(n))
		}
	}
}

// collectStatuses reports the status gauges and per-connector task counts
// for what this worker runs, as Connect registers connector-metrics and
// connector-task-metrics only on the worker that runs them.
func (c collector) collectStatuses(ch chan<- prometheus.Metric) {
	v := c.r.view.Load()
	if v == nil || v.Statuses == nil {
		return
	}
	for _, cs := range v.Statuses() {
		if cs.WorkerID == v.WorkerID {
			ch <- prometheus.MustNewConstMetric(connectorStatusDesc, prometheus.GaugeValue, 1, cs.Name, strings.ToLower(cs.State))
		}
		counts := map[string]int{}
		for _, ts := range cs.Tasks {
			if ts.WorkerID != v.WorkerID {
				continue
			}
			status := strings.ToLower(ts.State)
			counts["total"]++
			counts[status]++
			ch <- prometheus.MustNewConstMetric(taskStatusDesc, prometheus.GaugeValue, 1, cs.Name, strconv.Itoa(ts.ID), status)
		}
		if counts["total"] == 0 {
			continue
		}
		for state, d := range connectorTaskDescs {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(counts[state]), cs.Name)
		}
	}
}
