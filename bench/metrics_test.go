package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/metrics"
)

// metricsPair is one run with metrics off ("raw" here: the baseline) and one
// with metrics on, of the same records.
type metricsPair = runTimes[sluiceTimes]

// runMetricsPair runs the same Datagen connector on the worker without
// metrics (off) and on the one with them (on), offFirst choosing the order.
// While the metrics run goes, scrape gathers the registry every second, as
// a Prometheus scraping far more often than its 15 s default would: the
// run pays for its scrapes too.
func runMetricsPair(ctx context.Context, off, on *env, reg *metrics.Registry, run int, s throughputSpec, offFirst bool) (metricsPair, error) {
	var r metricsPair
	one := func(e *env, name string, scrape bool, into *sluiceTimes) func() error {
		return func() error {
			topic := e.k.Topic(name)
			if err := e.createTopic(ctx, topic, int32(s.tasks)); err != nil {
				return err
			}
			if scrape {
				stop := scrapeEvery(reg, time.Second)
				defer stop()
			}
			t, err := runSluice(ctx, e, name, topic, s)
			if err != nil {
				return err
			}
			*into = t
			if err := e.deleteConnector(ctx, name); err != nil {
				return err
			}
			return e.deleteTopic(ctx, topic)
		}
	}
	var offT sluiceTimes
	err := inOrder(offFirst, runtime.GC,
		one(off, fmt.Sprintf("off-%d", run), false, &offT),
		one(on, fmt.Sprintf("on-%d", run), true, &r.sluice))
	r.raw = offT.committed
	return r, err
}

// scrapeEvery gathers reg (what GET /metrics does, less the HTTP) and reads
// TaskRates (what the dashboard does) every interval until the returned
// func is called.
func scrapeEvery(reg *metrics.Registry, interval time.Duration) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				_, _ = reg.Gatherer().Gather()
				reg.TaskRates()
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// BenchmarkMetrics measures Datagen -> Kafka on a worker with metrics on
// against one with metrics off, each with its own in-process broker,
// alternating which runs first. Reported: both rates and ratio-on-vs-off
// (records/s with metrics over records/s without, committed; the target is
// 0.97 or more).
func BenchmarkMetrics(b *testing.B) {
	s := throughputSpec{tasks: *flagTasks, perTask: int64(*flagRecords / *flagTasks), valueSize: *flagValueSize}
	reg := metrics.NewRegistry()
	off, on := newEnv(b), newEnvWith(b, reg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rows := loopRuns(b, func(i int) (metricsPair, error) { return runMetricsPair(ctx, off, on, reg, i, s, i%2 == 0) })
	b.Log("\n" + metricsTable(s, rows))
	offT := sum(rows, func(r metricsPair) time.Duration { return r.raw })
	onT := sum(rows, func(r metricsPair) time.Duration { return r.sluice.committed })
	n := s.total() * int64(len(rows))
	b.ReportMetric(rate(n, offT), "off-records/s")
	b.ReportMetric(rate(n, onT), "on-records/s")
	b.ReportMetric(offT.Seconds()/onT.Seconds(), "ratio-on-vs-off")
}

// metricsTable renders the runs for people.
func metricsTable(s throughputSpec, rows []metricsPair) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Datagen -> Kafka, %d records per run (%d tasks x %d), committed records/s:\n", s.total(), s.tasks, s.perTask)
	fmt.Fprintf(&b, "%-6s %14s %14s %8s\n", "run", "metrics off", "metrics on", "ratio")
	for i, r := range rows {
		fmt.Fprintf(&b, "%-6d %14.0f %14.0f %8.3f\n", i, rate(s.total(), r.raw), rate(s.total(), r.sluice.committed),
			r.raw.Seconds()/r.sluice.committed.Seconds())
	}
	return b.String()
}

// TestMetricsBenchSmoke goes through the benchmark's code with tiny sizes
// and checks that the metrics side really recorded: its tasks' write
// totals add up to the records written.
func TestMetricsBenchSmoke(t *testing.T) {
	s := throughputSpec{tasks: 2, perTask: 300, valueSize: 8}
	reg := metrics.NewRegistry()
	off, on := newEnv(t), newEnvWith(t, reg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name, topic := "metrics-smoke", on.k.Topic("metrics-smoke")
	if err := on.createTopic(ctx, topic, int32(s.tasks)); err != nil {
		t.Fatal(err)
	}
	if _, err := runSluice(ctx, on, name, topic, s); err != nil {
		t.Fatal(err)
	}
	var written int64
	for _, r := range reg.TaskRates() {
		if r.Connector == name && r.Kind == metrics.KindSource {
			written += r.Total
		}
	}
	if written != s.total() {
		t.Fatalf("the metrics recorded %d records written, want %d", written, s.total())
	}
	if err := on.deleteConnector(ctx, name); err != nil {
		t.Fatal(err)
	}
	r, err := runMetricsPair(ctx, off, on, reg, 0, s, true)
	if err != nil || r.raw <= 0 || r.sluice.committed <= 0 {
		t.Fatalf("pair %+v, %v", r, err)
	}
}
