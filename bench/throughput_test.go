package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/actors"
)

// throughputSpec is what one run writes: tasks x perTask records.
type throughputSpec struct {
	tasks     int
	perTask   int64
	valueSize int
}

func (s throughputSpec) total() int64 { return int64(s.tasks) * s.perTask }

// rawKey is Datagen's record key "<connector>-<task>", as StringConverter
// writes it.
func rawKey(connector string, task int) []byte {
	return []byte(connector + "-" + strconv.Itoa(task))
}

// appendRawValue appends Datagen's record value as JsonConverter with
// schemas.enable=false writes it: {"task":T,"seq":N,"pad":"<pad>"}.
// TestBenchSmoke checks the two byte for byte.
func appendRawValue(dst []byte, task int, seq int64, pad string) []byte {
	dst = append(dst, `{"task":`...)
	dst = strconv.AppendInt(dst, int64(task), 10)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"pad":"`...)
	dst = append(dst, pad...)
	return append(dst, `"}`...)
}

// runRaw is the limit: what a minimal Go program does to write Datagen's
// records with the worker's producer options. One goroutine per task, as
// Sluice polls each task on a goroutine of its own; values are built per
// record (kgo keeps each until it is acknowledged); it returns once every
// record is acknowledged.
func runRaw(ctx context.Context, cl *kgo.Client, topic, connector string, s throughputSpec) (time.Duration, error) {
	pad := strings.Repeat("x", s.valueSize)
	var (
		acks     sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	acks.Add(int(s.total()))
	onAck := func(_ *kgo.Record, err error) {
		if err != nil {
			errMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
		}
		acks.Done()
	}
	start := time.Now()
	for task := range s.tasks {
		go func() {
			key := rawKey(connector, task)
			size := len(`{"task":,"seq":,"pad":""}`) + 2*20 + len(pad)
			for seq := range s.perTask {
				// Partition -1: the worker's partitioner pins records
				// whose Partition is set, and Sluice leaves it at -1.
				cl.Produce(ctx, &kgo.Record{
					Topic: topic, Key: key, Partition: -1,
					Value: appendRawValue(make([]byte, 0, size), task, seq, pad),
				}, onAck)
			}
		}()
	}
	acks.Wait()
	return time.Since(start), firstErr
}

// sluiceTimes are the two ends of a Sluice run, from the connector's
// creation: acked when Kafka acknowledged every record (the topic's end
// offsets reach the total), committed when every task's last offset is
// stored in the offsets topic too.
type sluiceTimes struct {
	acked, committed time.Duration
}

// runSluice creates a Datagen connector and waits until its records are
// acknowledged and their offsets committed. The clock starts before the
// connector config is written, so it includes what a user waits for: the
// config round trip, task configs, spawning and opening the tasks.
func runSluice(ctx context.Context, e *env, name, topic string, s throughputSpec) (sluiceTimes, error) {
	var t sluiceTimes
	start := time.Now()
	if err := e.createConnector(ctx, name, datagenConfig(name, topic, s.tasks, s.perTask, s.valueSize)); err != nil {
		return t, err
	}
	return e.waitSluice(ctx, name, topic, s.total(), start, func() (bool, error) {
		return e.committedAll(name, s.tasks, s.perTask)
	})
}

// runAndDrop creates connector name with config and waits until wait (the
// topic it writes to) holds every record of s, acked, and every offset is
// committed; then it deletes the connector and that topic, so that the
// next run starts from a worker and a broker that hold nothing of it.
func (e *env) runAndDrop(ctx context.Context, name, wait string, config map[string]string, s throughputSpec) (sluiceTimes, error) {
	start := time.Now()
	if err := e.createConnector(ctx, name, config); err != nil {
		return sluiceTimes{}, err
	}
	t, err := e.waitSluice(ctx, name, wait, s.total(), start, func() (bool, error) {
		return e.committedAll(name, s.tasks, s.perTask)
	})
	if err != nil {
		return t, err
	}
	if err := e.deleteConnector(ctx, name); err != nil {
		return t, err
	}
	return t, e.deleteTopic(ctx, wait)
}

// waitSluice polls a Sluice run of connector name that started at start
// until topic holds want records (acked) and committed reports every
// offset stored (committed). A failed task, or more records than want,
// ends it with an error.
func (e *env) waitSluice(ctx context.Context, name, topic string, want int64, start time.Time, committed func() (bool, error)) (sluiceTimes, error) {
	var t sluiceTimes
	// Polled every 10 ms: fine enough against runs of seconds, coarse
	// enough not to load the broker the run is writing to.
	err := e.pollRun(ctx, name, 10*time.Millisecond, func() (bool, error) {
		if t.acked == 0 {
			n, err := e.endOffsets(ctx, topic)
			if err != nil {
				return false, err
			}
			if n > want {
				return false, fmt.Errorf("topic %s holds %d records, more than the %d written", topic, n, want)
			}
			if n < want {
				return false, nil
			}
			t.acked = time.Since(start)
		}
		ok, err := committed()
		if ok {
			t.committed = time.Since(start)
		}
		return ok, err
	})
	return t, err
}

// pairResult is one raw run and one Sluice run of the same records, with
// the process's CPU time during each (cpuPair).
type pairResult struct {
	runTimes[sluiceTimes]
	cpuPair
}

// cpuPair is the process's CPU time during the raw run and during the
// Sluice run of a pair: the broker's, the client's and the collector's
// included, which both sides share. Unlike the wall clock it hardly moves
// with what else the machine runs.
type cpuPair struct{ rawCPU, sluiceCPU time.Duration }

// cpuRatio is the raw side's CPU over Sluice's over all pairs: 1 means
// Sluice's run cost the process no more CPU than the raw program's.
func cpuRatio[R any](rows []R, cpu func(R) cpuPair) float64 {
	var raw, sluice time.Duration
	for _, r := range rows {
		c := cpu(r)
		raw, sluice = raw+c.rawCPU, sluice+c.sluiceCPU
	}
	if sluice <= 0 {
		return 0
	}
	return raw.Seconds() / sluice.Seconds()
}

// runPair runs the raw producer and Sluice one after the other on topics of
// their own, rawFirst choosing the order: alternating it between pairs
// spreads warm-up and the previous run's garbage evenly over both. check,
// when given, sees both topics before they are deleted.
func runPair(ctx context.Context, e *env, raw *kgo.Client, run int, s throughputSpec, rawFirst bool,
	check func(rawTopic, sluiceTopic, connector string) error,
) (pairResult, error) {
	var r pairResult
	name := fmt.Sprintf("gen-%d", run)
	// Unique on a real broker, which earlier runs share.
	rawTopic, sluiceTopic := e.k.Topic(name+"-raw"), e.k.Topic(name+"-sluice")
	// Same partition count for both; Sluice finds its topic existing.
	for _, topic := range []string{rawTopic, sluiceTopic} {
		if err := e.createTopic(ctx, topic, int32(s.tasks)); err != nil {
			return r, err
		}
	}
	// Without a check, each topic goes as soon as its run ended: a run
	// writes hundreds of megabytes into the in-process broker, which the
	// other side's run should not have to carry through its collections.
	drop := func(topic string) error {
		if check != nil {
			return nil
		}
		return e.deleteTopic(ctx, topic)
	}
	doRaw := func() (err error) {
		runtime.GC()
		cpu := processCPU()
		r.raw, err = runRaw(ctx, raw, rawTopic, name, s)
		r.rawCPU = processCPU() - cpu
		if err != nil {
			return err
		}
		return drop(rawTopic)
	}
	doSluice := func() (err error) {
		runtime.GC()
		cpu := processCPU()
		r.sluice, err = runSluice(ctx, e, name, sluiceTopic, s)
		r.sluiceCPU = processCPU() - cpu
		if err != nil {
			return err
		}
		// Its tasks, idle now, stop before the raw run may follow.
		if err := e.deleteConnector(ctx, name); err != nil {
			return err
		}
		return drop(sluiceTopic)
	}
	if err := inOrder(rawFirst, nil, doRaw, doSluice); err != nil {
		return r, err
	}
	if check != nil {
		if err := check(rawTopic, sluiceTopic, name); err != nil {
			return r, err
		}
		for _, topic := range []string{rawTopic, sluiceTopic} {
			if err := e.deleteTopic(ctx, topic); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}

// newRawProducer is the raw side's client: the worker's producer options
// (idempotent, acks=all, the same partitioner, buffer and linger), long-lived
// like the worker's shared producer.
func newRawProducer(tb testing.TB, e *env) *kgo.Client {
	tb.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), actors.ProducerOpts()...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	return cl
}

func rate(records int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(records) / d.Seconds()
}

// throughputTable renders the runs and their totals for people; the
// benchmark line carries the same totals for benchstat.
func throughputTable(s throughputSpec, rows []pairResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Datagen -> Kafka, %d records per run (%d tasks x %d, value.size %d), records/s:\n",
		s.total(), s.tasks, s.perTask, s.valueSize)
	fmt.Fprintf(&b, "%-6s %14s %14s %16s %10s %12s %10s %10s %12s\n", "run", "raw franz-go", "sluice acked", "sluice committed", "ratio", "acked ratio", "cpu ratio", "raw cores", "sluice cores")
	var raw, acked, committed, rawCPU, sluiceCPU time.Duration
	for i, r := range rows {
		raw += r.raw
		acked += r.sluice.acked
		committed += r.sluice.committed
		rawCPU += r.rawCPU
		sluiceCPU += r.sluiceCPU
		fmt.Fprintf(&b, "%-6d %14.0f %14.0f %16.0f %10.3f %12.3f %10.3f %10.2f %12.2f\n", i,
			rate(s.total(), r.raw), rate(s.total(), r.sluice.acked), rate(s.total(), r.sluice.committed),
			r.raw.Seconds()/r.sluice.committed.Seconds(), r.raw.Seconds()/r.sluice.acked.Seconds(),
			cpuRatio([]pairResult{r}, func(r pairResult) cpuPair { return r.cpuPair }),
			r.rawCPU.Seconds()/r.raw.Seconds(), r.sluiceCPU.Seconds()/r.sluice.committed.Seconds())
	}
	n := s.total() * int64(len(rows))
	fmt.Fprintf(&b, "%-6s %14.0f %14.0f %16.0f %10.3f %12.3f %10.3f %10.2f %12.2f\n", "all",
		rate(n, raw), rate(n, acked), rate(n, committed), raw.Seconds()/committed.Seconds(), raw.Seconds()/acked.Seconds(),
		cpuRatio(rows, func(r pairResult) cpuPair { return r.cpuPair }),
		rawCPU.Seconds()/raw.Seconds(), sluiceCPU.Seconds()/committed.Seconds())
	return b.String()
}

// BenchmarkThroughput writes the same records through the raw producer and
// through Sluice, alternately, and reports:
//
//	raw-records/s           the raw producer, until every record is acked
//	sluice-records/s        Sluice, until every record is acked and its
//	                        source offset committed (what the brief asks)
//	sluice-acked-records/s  Sluice, until every record is acked
//	ratio-vs-raw            sluice-records/s / raw-records/s
//	acked-ratio-vs-raw      sluice-acked-records/s / raw-records/s
//	cpu-ratio-vs-raw        the process's CPU time during the raw runs
//	                        over that during the Sluice runs
//
// One iteration is one pair of runs; ns/op is the time of a pair.
func BenchmarkThroughput(b *testing.B) {
	if *flagTasks < 1 || *flagRecords < *flagTasks {
		b.Fatalf("-bench.tasks must be at least 1 and -bench.records at least -bench.tasks")
	}
	s := throughputSpec{tasks: *flagTasks, perTask: int64(*flagRecords / *flagTasks), valueSize: *flagValueSize}
	e := newEnv(b)
	raw := newRawProducer(b, e)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rows := loopRuns(b, func(i int) (pairResult, error) { return runPair(ctx, e, raw, i, s, i%2 == 0, nil) })
	rawT := sum(rows, func(r pairResult) time.Duration { return r.raw })
	acked := sum(rows, func(r pairResult) time.Duration { return r.sluice.acked })
	committed := sum(rows, func(r pairResult) time.Duration { return r.sluice.committed })
	n := s.total() * int64(len(rows))
	b.ReportMetric(rate(n, rawT), "raw-records/s")
	b.ReportMetric(rate(n, committed), "sluice-records/s")
	b.ReportMetric(rate(n, acked), "sluice-acked-records/s")
	b.ReportMetric(rawT.Seconds()/committed.Seconds(), "ratio-vs-raw")
	b.ReportMetric(rawT.Seconds()/acked.Seconds(), "acked-ratio-vs-raw")
	b.ReportMetric(cpuRatio(rows, func(r pairResult) cpuPair { return r.cpuPair }), "cpu-ratio-vs-raw")
	b.Log("\n" + throughputTable(s, rows))
}
