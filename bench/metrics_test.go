package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/metrics"
)

// metricsRun is one Datagen run: its times, and the CPU time the whole
// process spent meanwhile (the broker's included), which the load of other
// programs on the machine disturbs less than the wall clock.
type metricsRun struct {
	sluiceTimes
	cpu time.Duration
}

// metricsPair is one run with metrics off and one with metrics on, of the
// same records.
type metricsPair struct{ off, on metricsRun }

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runMetricsPair runs the same Datagen connector on the worker without
// metrics (off) and on the one with them (on), offFirst choosing the order.
// While the metrics run goes, scrape gathers the registry every second, as
// a Prometheus scraping far more often than its 15 s default would: the
// run pays for its scrapes too.
func runMetricsPair(ctx context.Context, off, on *env, reg *metrics.Registry, run int, s throughputSpec, offFirst bool) (metricsPair, error) {
	var r metricsPair
	one := func(e *env, name string, scrape bool, into *metricsRun) func() error {
		return func() error {
			topic := e.k.Topic(name)
			if err := e.createTopic(ctx, topic, int32(s.tasks)); err != nil {
				return err
			}
			if scrape {
				stop := scrapeEvery(reg, time.Second)
				defer stop()
			}
			cpu := processCPU()
			t, err := e.runAndDrop(ctx, name, topic, datagenConfig(name, topic, s.tasks, s.perTask, s.valueSize), s)
			*into = metricsRun{sluiceTimes: t, cpu: processCPU() - cpu}
			return err
		}
	}
	err := inOrder(offFirst, runtime.GC,
		one(off, fmt.Sprintf("off-%d", run), false, &r.off),
		one(on, fmt.Sprintf("on-%d", run), true, &r.on))
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

// scopedTB is a testing.TB whose cleanups run when close is called rather
// than at the end of the benchmark, so that each iteration's environments
// go away before the next iteration's start.
type scopedTB struct {
	testing.TB
	cleanups []func()
}

func (s *scopedTB) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

func (s *scopedTB) close() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}

// BenchmarkMetrics measures Datagen -> Kafka on a worker with metrics on
// against one with metrics off, each with its own in-process broker. Which
// environment is made first was seen to matter more than metrics (the
// first is faster, by up to 25% on a loaded machine), so each iteration
// makes a fresh pair and alternates the order they are made in (i%2) and
// the order they run in (i/2%2): run a multiple of 4 iterations. Reported:
// both rates and ratio-on-vs-off (records/s with metrics over records/s
// without, committed; the target is 0.97 or more).
func BenchmarkMetrics(b *testing.B) {
	s := throughputSpec{tasks: *flagTasks, perTask: int64(*flagRecords / *flagTasks), valueSize: *flagValueSize}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rows := loopRuns(b, func(i int) (metricsPair, error) {
		b.StopTimer()
		scope := &scopedTB{TB: b}
		defer scope.close()
		reg := metrics.NewRegistry()
		var off, on *env
		if i%2 == 0 {
			off, on = newEnv(scope), newEnvWith(scope, reg)
		} else {
			on, off = newEnvWith(scope, reg), newEnv(scope)
		}
		b.StartTimer()
		return runMetricsPair(ctx, off, on, reg, i, s, i/2%2 == 0)
	})
	b.Log("\n" + metricsTable(s, rows))
	offT := sum(rows, func(r metricsPair) time.Duration { return r.off.committed })
	onT := sum(rows, func(r metricsPair) time.Duration { return r.on.committed })
	offCPU := sum(rows, func(r metricsPair) time.Duration { return r.off.cpu })
	onCPU := sum(rows, func(r metricsPair) time.Duration { return r.on.cpu })
	n := s.total() * int64(len(rows))
	b.ReportMetric(rate(n, offT), "off-records/s")
	b.ReportMetric(rate(n, onT), "on-records/s")
	b.ReportMetric(offT.Seconds()/onT.Seconds(), "ratio-on-vs-off")
	b.ReportMetric(offCPU.Seconds()/onCPU.Seconds(), "cpu-ratio-on-vs-off")
}

// metricsTable renders the runs for people: committed records per second
// and CPU microseconds per record, off and on, and their ratios (off/on,
// so that 1 means no cost and less means a cost).
func metricsTable(s throughputSpec, rows []metricsPair) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Datagen -> Kafka, %d records per run (%d tasks x %d):\n", s.total(), s.tasks, s.perTask)
	fmt.Fprintf(&b, "%-4s %12s %12s %7s %11s %11s %7s\n", "run", "off rec/s", "on rec/s", "ratio", "off cpu us", "on cpu us", "ratio")
	perRecord := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(s.total()) }
	for i, r := range rows {
		fmt.Fprintf(&b, "%-4d %12.0f %12.0f %7.3f %11.2f %11.2f %7.3f\n", i,
			rate(s.total(), r.off.committed), rate(s.total(), r.on.committed), r.off.committed.Seconds()/r.on.committed.Seconds(),
			perRecord(r.off.cpu), perRecord(r.on.cpu), r.off.cpu.Seconds()/r.on.cpu.Seconds())
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
	if err != nil || r.off.committed <= 0 || r.on.committed <= 0 || r.on.cpu <= 0 {
		t.Fatalf("pair %+v, %v", r, err)
	}
}
