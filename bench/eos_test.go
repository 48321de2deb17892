package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/actors"
	"github.com/sluice-io/sluice/internal/connconfig"
)

// eosModes are the runs of the exactly-once benchmark, in the order of its
// table: at-least-once, then exactly once with poll and with interval
// (100 ms) transaction boundaries.
var eosModes = []struct {
	name  string
	extra map[string]string // connector keys; nil runs at least once
}{
	{"at-least-once", nil},
	{"eos-poll", map[string]string{connconfig.ExactlyOnceSupport: connconfig.ExactlyOnceRequired, connconfig.TransactionBoundary: connconfig.BoundaryPoll}},
	{"eos-interval-100ms", map[string]string{connconfig.ExactlyOnceSupport: connconfig.ExactlyOnceRequired,
		connconfig.TransactionBoundary: connconfig.BoundaryInterval, connconfig.TransactionBoundaryIntervalMs: "100"}},
}

// eosEnvs are two workers, each on its own embedded broker: one running
// sources at least once, one exactly once (the worker's
// exactly.once.source.support decides, for all of its connectors).
type eosEnvs struct{ atLeastOnce, exactlyOnce *env }

func newEOSEnvs(tb testing.TB) eosEnvs {
	return eosEnvs{
		atLeastOnce: newEnv(tb),
		exactlyOnce: newEnvWith(tb, nil, func(o *actors.Options) {
			o.Worker.ExactlyOnce = connconfig.ExactlyOnceEnabled
			o.GroupID = "bench"
		}),
	}
}

// runEOSModes runs each mode once (rotating which goes first with run) and
// returns how long each took, from the connector's creation until every
// task's last offset was committed: for exactly once, that is when the last
// transaction committed, records and offsets together.
func runEOSModes(ctx context.Context, envs eosEnvs, run int, s throughputSpec) ([]time.Duration, error) {
	took := make([]time.Duration, len(eosModes))
	for k := range eosModes {
		i := (k + run) % len(eosModes)
		mode := eosModes[i]
		e := envs.atLeastOnce
		if mode.extra != nil {
			e = envs.exactlyOnce
		}
		name := fmt.Sprintf("%s-%d", mode.name, run)
		topic := e.k.Topic(name)
		if err := e.createTopic(ctx, topic, int32(s.tasks)); err != nil {
			return nil, err
		}
		config := datagenConfig(name, topic, s.tasks, s.perTask, s.valueSize)
		for k, v := range mode.extra {
			config[k] = v
		}
		runtime.GC()
		start := time.Now()
		if err := e.createConnector(ctx, name, config); err != nil {
			return nil, err
		}
		err := e.pollRun(ctx, name, 10*time.Millisecond, func() (bool, error) { return e.committedAll(name, s.tasks, s.perTask) })
		if err != nil {
			return nil, err
		}
		took[i] = time.Since(start)
		if err := e.deleteConnector(ctx, name); err != nil {
			return nil, err
		}
		if err := e.deleteTopic(ctx, topic); err != nil {
			return nil, err
		}
	}
	return took, nil
}

// eosTable renders the runs for people: records/s of each mode, and each
// exactly-once mode as a ratio of at-least-once.
func eosTable(s throughputSpec, rows [][]time.Duration) (string, []float64) {
	var b strings.Builder
	fmt.Fprintf(&b, "Datagen -> Kafka, %d records per run (%d tasks x %d, value.size %d), records/s until every offset is committed:\n",
		s.total(), s.tasks, s.perTask, s.valueSize)
	fmt.Fprintf(&b, "%-6s", "run")
	for _, m := range eosModes {
		fmt.Fprintf(&b, " %20s", m.name)
	}
	b.WriteString("\n")
	totals := make([]time.Duration, len(eosModes))
	for r, row := range rows {
		fmt.Fprintf(&b, "%-6d", r)
		for i, d := range row {
			totals[i] += d
			fmt.Fprintf(&b, " %20.0f", rate(s.total(), d))
		}
		b.WriteString("\n")
	}
	n := s.total() * int64(len(rows))
	fmt.Fprintf(&b, "%-6s", "all")
	for _, d := range totals {
		fmt.Fprintf(&b, " %20.0f", rate(n, d))
	}
	b.WriteString("\n")
	ratios := make([]float64, len(eosModes))
	fmt.Fprintf(&b, "%-6s", "ratio")
	for i, d := range totals {
		ratios[i] = totals[0].Seconds() / d.Seconds()
		fmt.Fprintf(&b, " %20.3f", ratios[i])
	}
	b.WriteString("\n")
	return b.String(), ratios
}

// BenchmarkExactlyOnce writes the same Datagen records at least once and
// exactly once (poll and 100 ms interval boundaries), and reports each
// exactly-once mode's throughput as a ratio of at-least-once in the same
// run (issue 12's goal: >= 0.7 with interval):
//
//	eos-poll-ratio       exactly once with poll boundaries / at least once
//	eos-interval-ratio   exactly once with 100 ms interval boundaries / at least once
//
// One iteration is one run of each mode.
func BenchmarkExactlyOnce(b *testing.B) {
	if *flagTasks < 1 || *flagRecords < *flagTasks {
		b.Fatalf("-bench.tasks must be at least 1 and -bench.records at least -bench.tasks")
	}
	s := throughputSpec{tasks: *flagTasks, perTask: int64(*flagRecords / *flagTasks), valueSize: *flagValueSize}
	envs := newEOSEnvs(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rows := loopRuns(b, func(i int) ([]time.Duration, error) { return runEOSModes(ctx, envs, i, s) })
	table, ratios := eosTable(s, rows)
	b.ReportMetric(ratios[1], "eos-poll-ratio")
	b.ReportMetric(ratios[2], "eos-interval-ratio")
	b.Log("\n" + table)
}

// TestExactlyOnceBenchSmoke runs BenchmarkExactlyOnce's code once with
// tiny sizes, so that `go test ./...` keeps it working.
func TestExactlyOnceBenchSmoke(t *testing.T) {
	envs := newEOSEnvs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := throughputSpec{tasks: 2, perTask: 300, valueSize: 16}
	took, err := runEOSModes(ctx, envs, 0, s)
	if err != nil {
		t.Fatal(err)
	}
	table, ratios := eosTable(s, [][]time.Duration{took})
	if ratios[0] != 1 || ratios[1] <= 0 || ratios[2] <= 0 {
		t.Fatalf("implausible ratios %v:\n%s", ratios, table)
	}
	t.Log("\n" + table)
}
