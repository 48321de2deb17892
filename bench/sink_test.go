package bench

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors/file"
	"github.com/sluice-io/sluice/internal/actors"
)

var (
	// 4,000,000, as BenchmarkThroughput's: a run of 1,000,000 lasts about a
	// quarter of a second on the raw side, against the sink's 30-40 ms from
	// its creation to its first byte, so that the start weighed a seventh
	// of the figure (issue 13 asks for the warm-up to be left out).
	flagSinkRecords    = flag.Int("bench.sink-records", 4000000, "records per run of the sink throughput benchmark")
	flagSinkPartitions = flag.Int("bench.sink-partitions", 4, "partitions of the sink throughput benchmark's topic (one task, one raw consumer read them all)")
)

// sinkSpec is what one sink run reads: records of Datagen's values (100 B
// of padding) from a topic of partitions partitions.
type sinkSpec struct {
	records    int
	partitions int
	valueSize  int
}

// fillSinkTopic writes the run's records, untimed, and returns how many
// bytes a file holding every value on a line of its own has.
func fillSinkTopic(ctx context.Context, e *env, topic string, s sinkSpec) (int64, error) {
	if err := e.createTopic(ctx, topic, int32(s.partitions)); err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), actors.ProducerOpts()...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	pad := strings.Repeat("x", s.valueSize)
	recs := make([]*kgo.Record, 0, s.records)
	var size int64
	for i := range s.records {
		v := appendRawValue(nil, i%s.partitions, int64(i), pad)
		size += int64(len(v)) + 1
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % s.partitions), Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return 0, fmt.Errorf("fill topic %s: %w", topic, err)
	}
	return size, nil
}

// runSinkRaw is the limit: a minimal Go program that does the sink's job
// with franz-go: joins a consumer group, reads the topic from the start,
// appends each value and a line break to a file through a 64 KiB buffer,
// and commits its offsets at the end. It does not fsync: the Sluice side's
// clock stops when the file holds every line, before its data is synced
// and its offsets committed, so a raw side timed until its data is durable
// would be the slower for it. The clock runs from the client's
// creation to the last byte written and the offsets committed.
func runSinkRaw(ctx context.Context, e *env, topic, path string, s sinkSpec) (time.Duration, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	start := time.Now()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...),
		kgo.ConsumeTopics(topic), kgo.ConsumerGroup("raw-"+topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	w := bufio.NewWriterSize(f, 64<<10)
	for n := 0; n < s.records; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return 0, err
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			w.Write(r.Value)
			w.WriteByte('\n')
			n++
		}
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// runSinkSluice creates a FileStreamSink connector (one task,
// StringConverter values) on the filled topic and waits until the file
// holds every line. The clock starts before the connector config is
// written, so it includes the config round trip, the task's start and its
// joining the consumer group, as the raw side's includes its join.
func runSinkSluice(ctx context.Context, e *env, name, topic, path string, size int64) (firstDone, error) {
	start := time.Now()
	err := e.createConnector(ctx, name, map[string]string{
		"name": name, "connector.class": file.SinkClass, "tasks.max": "1",
		"topics": topic, file.FileKey: path,
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
	})
	if err != nil {
		return firstDone{}, err
	}
	var t firstDone
	err = e.pollRun(ctx, name, 5*time.Millisecond, func() (bool, error) {
		st, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if st.Size() > size {
			return false, fmt.Errorf("sink file %s has %d bytes, more than the %d of the records", path, st.Size(), size)
		}
		t.done = time.Since(start)
		if st.Size() > 0 && t.first == 0 {
			t.first = t.done
		}
		return st.Size() == size, nil
	})
	return t, err
}

// sinkPair is one raw run and one Sluice run of a topic, with the process's
// CPU time during each.
type sinkPair struct {
	runTimes[firstDone]
	cpuPair
}

// runSinkPair fills a topic, then runs the raw consumer and the sink one
// after the other, rawFirst choosing the order, and checks that both files
// hold the same bytes.
func runSinkPair(ctx context.Context, e *env, dir string, run int, s sinkSpec, rawFirst bool) (sinkPair, error) {
	var r sinkPair
	name := fmt.Sprintf("sink-%d", run)
	size, err := fillSinkTopic(ctx, e, name, s)
	if err != nil {
		return r, err
	}
	rawPath, sinkPath := filepath.Join(dir, name+"-raw.txt"), filepath.Join(dir, name+"-sluice.txt")
	doRaw := func() (err error) {
		runtime.GC()
		cpu := processCPU()
		r.raw, err = runSinkRaw(ctx, e, name, rawPath, s)
		r.rawCPU = processCPU() - cpu
		return err
	}
	doSluice := func() (err error) {
		runtime.GC()
		cpu := processCPU()
		r.sluice, err = runSinkSluice(ctx, e, name, name, sinkPath, size)
		r.sluiceCPU = processCPU() - cpu
		if err != nil {
			return err
		}
		return e.deleteConnector(ctx, name)
	}
	if err := inOrder(rawFirst, nil, doRaw, doSluice); err != nil {
		return r, err
	}
	if err := sameLines(rawPath, sinkPath); err != nil {
		return r, err
	}
	os.Remove(rawPath)
	os.Remove(sinkPath)
	return r, e.deleteTopic(ctx, name)
}

// sameLines checks that the two files hold the same lines. Across
// partitions the order may differ, so each side's lines are counted.
func sameLines(a, b string) error {
	count := func(path string) (map[string]int, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		m := map[string]int{}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			m[l]++
		}
		return m, nil
	}
	ma, err := count(a)
	if err != nil {
		return err
	}
	mb, err := count(b)
	if err != nil {
		return err
	}
	if len(ma) != len(mb) {
		return fmt.Errorf("%s has %d distinct lines, %s %d", a, len(ma), b, len(mb))
	}
	for l, n := range ma {
		if mb[l] != n {
			return fmt.Errorf("line %q: %d times in %s, %d in %s", l, n, a, mb[l], b)
		}
	}
	return nil
}

func sinkTable(s sinkSpec, rows []sinkPair) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Kafka -> file, %d records per run (%d partitions, one task), records/s:\n", s.records, s.partitions)
	fmt.Fprintf(&b, "%-6s %12s %12s %8s %15s %10s %14s %14s\n", "run", "raw kgo", "sluice", "ratio", "first byte (ms)", "cpu ratio",
		"raw cpu s/M", "sluice cpu s/M")
	perM := func(d time.Duration) float64 { return d.Seconds() * 1e6 / float64(s.records) }
	for i, r := range rows {
		fmt.Fprintf(&b, "%-6d %12.0f %12.0f %8.3f %15d %10.3f %14.3f %14.3f\n", i, rate(int64(s.records), r.raw), rate(int64(s.records), r.sluice.done),
			r.raw.Seconds()/r.sluice.done.Seconds(), r.sluice.first.Milliseconds(),
			cpuRatio([]sinkPair{r}, func(r sinkPair) cpuPair { return r.cpuPair }), perM(r.rawCPU), perM(r.sluiceCPU))
	}
	return b.String()
}

// BenchmarkSinkThroughput reads the same records from Kafka into a file
// through a raw franz-go consumer and through FileStreamSink run by the
// runtime, alternately (the order flips each iteration), on the same
// embedded broker, and reports:
//
//	raw-records/s     the raw consumer
//	sluice-records/s  the sink, from the connector's creation until the
//	                  file holds every record
//	ratio-vs-raw      sluice-records/s / raw-records/s, median of the runs
//	ratio-min, ratio-max  the range of the runs' ratios
//	first-byte-ms     mean time from the connector's creation to the first
//	                  byte in the file (start-up)
//	cpu-ratio-vs-raw  the process's CPU time during the raw runs over that
//	                  during the Sluice runs
func BenchmarkSinkThroughput(b *testing.B) {
	s := sinkSpec{records: *flagSinkRecords, partitions: *flagSinkPartitions, valueSize: *flagValueSize}
	if s.records < 1 || s.partitions < 1 {
		b.Fatal("-bench.sink-records and -bench.sink-partitions must be at least 1")
	}
	e := newEnv(b)
	dir := b.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rows := loopRuns(b, func(i int) (sinkPair, error) { return runSinkPair(ctx, e, dir, i, s, i%2 == 0) })
	raw := sum(rows, func(r sinkPair) time.Duration { return r.raw })
	sl := sum(rows, func(r sinkPair) time.Duration { return r.sluice.done })
	first := sum(rows, func(r sinkPair) time.Duration { return r.sluice.first })
	n := int64(s.records) * int64(len(rows))
	ratios := make([]float64, len(rows))
	for i, r := range rows {
		ratios[i] = r.raw.Seconds() / r.sluice.done.Seconds()
	}
	lo, med, hi := spread(ratios)
	b.ReportMetric(rate(n, raw), "raw-records/s")
	b.ReportMetric(rate(n, sl), "sluice-records/s")
	b.ReportMetric(med, "ratio-vs-raw")
	b.ReportMetric(lo, "ratio-min")
	b.ReportMetric(hi, "ratio-max")
	b.ReportMetric(float64(first.Milliseconds())/float64(len(rows)), "first-byte-ms")
	b.ReportMetric(cpuRatio(rows, func(r sinkPair) cpuPair { return r.cpuPair }), "cpu-ratio-vs-raw")
	b.Log("\n" + sinkTable(s, rows))
}

// TestSinkBenchSmoke runs the sink benchmark's code with tiny sizes, so
// that `go test ./bench/` keeps it working and checks both sides wrote the
// same lines.
func TestSinkBenchSmoke(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := sinkSpec{records: 3000, partitions: 2, valueSize: 16}
	var rows []sinkPair
	smokePairs(t, func(run int, rawFirst bool) (runTimes[firstDone], error) {
		r, err := runSinkPair(ctx, e, t.TempDir(), run, s, rawFirst)
		rows = append(rows, r)
		return r.runTimes, err
	})
	for _, r := range rows {
		if r.rawCPU <= 0 || r.sluiceCPU <= 0 {
			t.Fatalf("a run measured no CPU time: %+v", r.cpuPair)
		}
	}
	t.Log("\n" + sinkTable(s, rows))
}

// spread returns the smallest, the median and the largest of v.
func spread(v []float64) (lo, med, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}
