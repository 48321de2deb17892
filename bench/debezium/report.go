package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// results collects every run's figures and writes the README.
type results struct {
	opts      options
	pgVersion string
	runs      map[string][]measured
	duration  time.Duration
}

func (r *results) add(system string, m measured) {
	if r.runs == nil {
		r.runs = map[string][]measured{}
	}
	r.runs[system] = append(r.runs[system], m)
}

// metric is one row of the table: how to read it off a run, and whether
// more is better.
type metric struct {
	name   string
	unit   string
	value  func(measured) float64
	higher bool
}

var metrics = []metric{
	{"snapshot", "rows/s", func(m measured) float64 { return m.snapshotRate }, true},
	{"streaming", "changes/s", func(m measured) float64 { return m.streamRate }, true},
	{"streaming writer (PostgreSQL)", "changes/s", func(m measured) float64 { return m.writerRate }, true},
	{"streaming CPU", "s per million changes", nil, false},
	{"peak RSS, snapshot", "MiB", func(m measured) float64 { return float64(m.snapshotRSS) / (1 << 20) }, false},
	{"peak RSS, streaming", "MiB", func(m measured) float64 { return float64(m.streamRSS) / (1 << 20) }, false},
	{"peak RSS, lag phase", "MiB", func(m measured) float64 { return float64(m.lagRSS) / (1 << 20) }, false},
	{"lag p50", "ms", func(m measured) float64 { return float64(m.lagP50.Microseconds()) / 1000 }, false},
	{"lag p99", "ms", func(m measured) float64 { return float64(m.lagP99.Microseconds()) / 1000 }, false},
}

// minMedian returns the best (min, or max when higher is better) and the
// median of vs.
func minMedian(vs []float64, higher bool) (best, median float64) {
	s := slices.Clone(vs)
	slices.Sort(s)
	best = s[0]
	if higher {
		best = s[len(s)-1]
	}
	if n := len(s); n%2 == 1 {
		median = s[n/2]
	} else {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return best, median
}

func (r *results) table() string {
	var b strings.Builder
	b.WriteString("| figure | unit | Debezium best / median | Sluice best / median | Sluice / Debezium (medians) |\n|---|---|---:|---:|---:|\n")
	changes := float64(r.opts.changes)
	for _, mt := range metrics {
		value := mt.value
		if value == nil { // CPU per million changes
			value = func(m measured) float64 { return m.streamCPU.Seconds() / changes * 1e6 }
		}
		var med [2]float64
		var cells [2]string
		for i, sys := range []string{"Debezium", "Sluice"} {
			var vs []float64
			for _, m := range r.runs[sys] {
				vs = append(vs, value(m))
			}
			if len(vs) == 0 { // not run (--systems)
				cells[i] = "-"
				continue
			}
			best, median := minMedian(vs, mt.higher)
			med[i] = median
			cells[i] = fmt.Sprintf("%s / %s", num(best), num(median))
		}
		ratio := "-"
		if med[0] != 0 && med[1] != 0 {
			ratio = ratioText(med[1] / med[0])
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mt.name, mt.unit, cells[0], cells[1], ratio)
	}
	return b.String()
}

// ratioText shows a ratio with two decimals, or two significant digits
// below 0.1 (a lag of 2 ms against 500 ms is not 0.00).
func ratioText(r float64) string {
	if r < 0.1 {
		return strconv.FormatFloat(r, 'g', 2, 64)
	}
	return fmt.Sprintf("%.2f", r)
}

func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// runsTable lists every run, in the order they ran within each system.
func (r *results) runsTable() string {
	var b strings.Builder
	b.WriteString("| system | round | snapshot rows/s | streaming changes/s | writer changes/s | RSS MiB (snapshot / streaming / lag) | lag p50 / p99 ms | load average |\n|---|---:|---:|---:|---:|---|---|---:|\n")
	for _, sys := range []string{"Debezium", "Sluice"} {
		for i, m := range r.runs[sys] {
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.0f | %d / %d / %d | %.1f / %.1f | %.1f |\n", sys, i+1, m.snapshotRate, m.streamRate, m.writerRate,
				m.snapshotRSS>>20, m.streamRSS>>20, m.lagRSS>>20, float64(m.lagP50.Microseconds())/1000, float64(m.lagP99.Microseconds())/1000, m.load)
		}
	}
	return b.String()
}

// machine describes the host: CPU model and count, memory, kernel.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]); len(f) >= 2 {
			mem = f[1] + " kB memory"
		}
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	return fmt.Sprintf("%d × %s, %s, Linux %s", runtime.NumCPU(), model, mem, strings.TrimSpace(string(kernel)))
}

// command is the command line that reruns this run.
func (o options) command() string {
	cmd := fmt.Sprintf("go run ./bench/debezium --rows %d --changes %d --tx-rows %d --lag-rate %d --lag-duration %v --rounds %d --connect-heap %s",
		o.rows, o.changes, o.txRows, o.lagRate, o.lagDuration, o.rounds, o.connectHeap)
	if len(o.systems) != 2 {
		cmd += " --systems " + strings.ToLower(strings.Join(o.systems, ","))
	}
	for _, kv := range o.sluiceProps {
		cmd += " --sluice-prop " + kv
	}
	for _, kv := range o.sluiceEnv {
		cmd += " --sluice-env " + kv
	}
	return cmd
}

func javaVersion() string {
	out, _ := exec.Command("java", "-version").CombinedOutput()
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

func (r *results) write() error {
	o := r.opts
	var b strings.Builder
	fmt.Fprintf(&b, `# Sluice against Debezium: PostgreSQL change data capture

Written by `+"`bench/debezium`"+` (`+"`just bench-debezium`"+`, see `+"`go run ./bench/debezium --help`"+`) on %s, in %v.

- Machine: %s.
- Debezium's PostgreSQL connector 3.6.1.Final in an Apache Kafka Connect 4.1.1 standalone worker
  (`+"`java -Xms256M -Xmx%s`"+`, %s), the jars of test/debezium/pom.xml.
- Sluice: `+"`sluice worker`"+` built from this repository (%s).
- PostgreSQL %s (a server of the harness's own: wal_level=logical, fsync and full_page_writes off,
  shared_buffers=256MB), Apache Kafka 4.1.1 (test/kafka/kafka.sh), one of each
  for both systems.
- Both run the same Debezium config (pgoutput, a filtered publication, snapshot.mode=initial, every
  other key at its default) with Connect's JSON converter and its schemas for keys and values.
- Command: `+"`%s`"+`.

Each round runs each system once, in turn, the order flipping every round; a run is a fresh worker
process and a fresh connector (its own slot, publication and topics). Best is the highest rate or the
lowest time or memory of the %d runs. The topics exist (one partition each) before the worker starts.
The snapshot's rate counts from the first record in the topic to the last (its end offsets, polled
every 100 ms), so the worker's start-up and the slot's creation are not in it. The streaming writer
commits %d changes (half inserts, half updates, %d rows a transaction) as fast as PostgreSQL takes
them, and the streaming rate counts from its start to the last record in the topic; the writer's own
rate is in the table, and where it is above a connector's, the connector is what limits.
Lag is from a row's commit (the event's source.ts_us) to its record's arrival at a consumer, under
%d rows/s in transactions of 10 rows for %v, the first 2 s left out. RSS is the worker process's
(the JVM's, or sluice's), sampled every 200 ms; CPU is its user and system time while streaming.

`, time.Now().UTC().Format("2006-01-02 15:04 MST"), r.duration.Round(time.Second), machine(), o.connectHeap, javaVersion(),
		runtime.Version(), r.pgVersion, o.command(),
		o.rounds, o.changes, o.txRows, o.lagRate, o.lagDuration)
	if o.note != "" {
		b.WriteString(o.note + "\n\n")
	}
	b.WriteString("## Summary\n\n" + r.table() + "\n## Every run\n\n" + r.runsTable())
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	path := filepath.Join(o.out, "README.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	logf("wrote %s", path)
	fmt.Print(r.table())
	return nil
}
