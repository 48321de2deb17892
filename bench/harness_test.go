package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors/builtin"
	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/internal/actors"
	"github.com/sluice-io/sluice/internal/metrics"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// env is one Sluice worker without its REST API (the benchmarks do not
// measure HTTP): an in-process kfake broker on loopback, the real
// Kafka-backed config, status and offset stores, the shared producer and the
// actor runtime, driven from the config topic as internal/worker drives it.
type env struct {
	tb       testing.TB
	k        *storetest.Env
	broker   *kfake.Cluster // nil on a real broker (SLUICE_TEST_BOOTSTRAP)
	kopts    []kgo.Opt
	adm      *kadm.Client
	configs  *state.ConfigLog
	statuses *state.StatusLog
	offsets  *offsets.SourceStore
	rt       *actors.Runtime
}

// benchFlushInterval is offset.flush.interval.ms for the benchmarks. Sluice
// defaults to 1 s; a shorter interval keeps the time between the last ack
// and its committed offset (which the throughput run waits for) small
// against the run, so the run measures the pipeline rather than the flush
// cadence. Ten small offset writes per second per task cost next to nothing.
const benchFlushInterval = 100 * time.Millisecond

func newEnv(tb testing.TB) *env { return newEnvWith(tb, nil) }

// newEnvWith is newEnv whose runtime records into reg (nil: metrics off,
// as newEnv and the worker's --metrics=false); each of with may change the
// runtime's options before it starts.
func newEnvWith(tb testing.TB, reg *metrics.Registry, with ...func(*actors.Options)) *env {
	tb.Helper()
	k := storetest.Start(tb, "bench", actors.ProducerOpts()...)
	e := &env{tb: tb, k: k, broker: k.Broker, kopts: k.Opts, adm: k.Admin,
		configs: k.Configs, statuses: k.Statuses, offsets: k.Offsets}
	log, producer := k.Log, k.Producer
	opts := actors.Options{
		WorkerID: "bench", Registry: builtin.Registry(),
		Offsets: e.offsets, Status: e.statuses, TaskConfigs: e.configs,
		KafkaOpts: e.kopts, Producer: producer, Admin: e.adm,
		OffsetFlushInterval: benchFlushInterval,
		Log:                 log,
		Metrics:             reg,
	}
	for _, f := range with {
		f(&opts)
	}
	var err error
	e.rt, err = actors.NewRuntime(opts)
	if err != nil {
		tb.Fatal(err)
	}

	// A cluster of one, driven from the config topic as internal/worker does;
	// as internal/worker's Stop, the tasks' last statuses are written before
	// the status log's client closes.
	k.Drive(tb, func(ctx context.Context) { e.rt.FollowAlone(ctx, e.configs, 1) }, e.rt.Stop, 30*time.Second, true)
	return e
}

// datagenConfig is the connector config of the benchmarks: string keys and
// schemaless JSON values, the bytes rawKey and appendRawValue reproduce.
func datagenConfig(name, topic string, tasks int, maxRecords int64, valueSize int) map[string]string {
	return map[string]string{
		"name":                           name,
		"connector.class":                datagen.Class,
		"tasks.max":                      strconv.Itoa(tasks),
		datagen.TopicKey:                 topic,
		datagen.MaxRecordsKey:            strconv.FormatInt(maxRecords, 10),
		datagen.RecordsPerSecondKey:      "0",
		datagen.ValueSizeKey:             strconv.Itoa(valueSize),
		"key.converter":                  "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
	}
}

func (e *env) createConnector(ctx context.Context, name string, config map[string]string) error {
	if err := e.configs.PutConnectorConfig(ctx, name, config); err != nil {
		return fmt.Errorf("create connector %s: %w", name, err)
	}
	return nil
}

// deleteConnector deletes the connector and waits until its tasks stopped
// and their statuses are gone, so that the next run starts from a worker
// that runs nothing.
func (e *env) deleteConnector(ctx context.Context, name string) error {
	if err := e.configs.DeleteConnector(ctx, name); err != nil {
		return fmt.Errorf("delete connector %s: %w", name, err)
	}
	err := testutil.Poll(ctx, 20*time.Millisecond, func() (bool, error) {
		_, conn := e.statuses.Connector(name)
		return !conn && len(e.statuses.Tasks(name)) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for connector %s to stop: %w", name, err)
	}
	// The statuses above are this worker's view; their writes to the
	// status topic may still be in flight, and should not be during the
	// next run.
	return e.statuses.Flush(ctx)
}

// runningTasks counts the connector's tasks whose status is RUNNING.
func (e *env) runningTasks(name string) int {
	n := 0
	for _, st := range e.statuses.Tasks(name) {
		if st.State == state.StateRunning {
			n++
		}
	}
	return n
}

// failedTrace returns the trace of a FAILED task of the connector, if any:
// a benchmark waiting for a failed task would otherwise only time out.
func (e *env) failedTrace(name string) string {
	for n, st := range e.statuses.Tasks(name) {
		if st.State == state.StateFailed {
			return fmt.Sprintf("task %d failed: %s", n, st.Trace)
		}
	}
	return ""
}

func (e *env) createTopic(ctx context.Context, topic string, partitions int32) error {
	resp, err := e.adm.CreateTopic(ctx, partitions, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// deleteTopic frees what kfake holds in memory for topic: a benchmark writes
// tens of megabytes per run, and the broker shares the process (and its GC)
// with what is measured.
func (e *env) deleteTopic(ctx context.Context, topic string) error {
	resps, err := e.adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	return nil
}

// endOffsets sums the topic's end offsets: the records Kafka acknowledged.
func (e *env) endOffsets(ctx context.Context, topic string) (int64, error) {
	listed, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	var sum int64
	var perr error
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && perr == nil {
			perr = o.Err
		}
		sum += o.Offset
	})
	return sum, perr
}

// committedAll reports whether every one of the connector's tasks has its
// last record's seq (perTask-1) as committed source offset.
func (e *env) committedAll(name string, tasks int, perTask int64) (bool, error) {
	got := 0
	for _, po := range e.offsets.Offsets(name) {
		seq, ok := po.Offset[datagen.SeqField].(int64)
		if !ok {
			return false, fmt.Errorf("connector %s: offset %v has no integer seq", name, po.Offset)
		}
		if seq > perTask-1 {
			return false, fmt.Errorf("connector %s: committed seq %d beyond the last record %d", name, seq, perTask-1)
		}
		if seq == perTask-1 {
			got++
		}
	}
	return got == tasks, nil
}

// loopRuns calls run once per iteration of b.Loop, with the number of runs
// before it, and returns what the runs returned; an error ends the
// benchmark.
func loopRuns[R any](b *testing.B, run func(i int) (R, error)) []R {
	var rows []R
	for b.Loop() {
		r, err := run(len(rows))
		if err != nil {
			b.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// sum adds up d of every row.
func sum[R any](rows []R, d func(R) time.Duration) time.Duration {
	var total time.Duration
	for _, r := range rows {
		total += d(r)
	}
	return total
}

// runTimes is the times of one raw run and one Sluice run of the same work.
type runTimes[T any] struct {
	raw    time.Duration
	sluice T
}

// pollRun polls cond every interval while Sluice runs connector name,
// until cond holds or fails, a task of the connector fails, or ctx ends.
func (e *env) pollRun(ctx context.Context, name string, interval time.Duration, cond func() (bool, error)) error {
	err := testutil.Poll(ctx, interval, func() (bool, error) {
		if tr := e.failedTrace(name); tr != "" {
			return false, errors.New(tr)
		}
		return cond()
	})
	if err != nil {
		return fmt.Errorf("sluice run %s: %w", name, err)
	}
	return nil
}

// inOrder runs raw and then sluice, or sluice first when not rawFirst:
// alternating the order between pairs spreads warm-up and the previous
// run's garbage evenly over both. before, if not nil, runs ahead of each.
// It stops at the first error.
func inOrder(rawFirst bool, before func(), raw, sluice func() error) error {
	steps := []func() error{raw, sluice}
	if !rawFirst {
		steps[0], steps[1] = steps[1], steps[0]
	}
	for _, step := range steps {
		if before != nil {
			before()
		}
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// firstDone are the two ends of a sink run, from the connector's creation:
// first when the destination first held a record (start-up: config round
// trip, task, consumer group, first fetch), done when it held every one.
type firstDone struct{ first, done time.Duration }

// smokePairs runs pair twice, raw side first and then Sluice first, as a
// smoke test does, and fails t on an error or on implausible times.
func smokePairs(t *testing.T, pair func(run int, rawFirst bool) (runTimes[firstDone], error)) []runTimes[firstDone] {
	t.Helper()
	var rows []runTimes[firstDone]
	for run, rawFirst := range []bool{true, false} {
		r, err := pair(run, rawFirst)
		if err != nil {
			t.Fatal(err)
		}
		if r.raw <= 0 || r.sluice.first <= 0 || r.sluice.done < r.sluice.first {
			t.Fatalf("run %d: implausible times %+v", run, r)
		}
		rows = append(rows, r)
	}
	return rows
}
