package main

import (
	"fmt"
	"slices"
)

// figure is one measured quantity, with every sample of each system.
type figure struct {
	key          string
	title        string
	short        string // its label on the plot's x axis
	unit         string
	higherBetter bool
	plot         string // the SVG it is drawn in
	samples      map[string][]float64
}

// results are the figures in the order the README's table lists them.
type results struct {
	figures []*figure
	byKey   map[string]*figure
}

// newResults declares every figure the options will measure, so that a
// figure with no samples (a scenario that was not run) still shows as
// such rather than vanishing from the table.
func newResults(o options) *results {
	r := &results{byKey: map[string]*figure{}}
	add := func(key, short, title, unit string, higherBetter bool, plot string) {
		f := &figure{key: key, short: short, title: title, unit: unit, higherBetter: higherBetter, plot: plot, samples: map[string][]float64{}}
		r.figures = append(r.figures, f)
		r.byKey[key] = f
	}
	lines := fmt.Sprintf("%s x %d B lines", count(o.records), o.lineBytes)
	add("source-rps", "FileStreamSource", "FileStreamSource, "+lines+" -> topic", "records/s", true, "throughput")
	add("sink-rps", "FileStreamSink", fmt.Sprintf("FileStreamSink, %s records -> file", count(o.records)), "records/s", true, "throughput")
	add("parallel-rps", "4 FileStreamSources", fmt.Sprintf("4 FileStreamSource connectors (4 tasks), %s lines in all -> 4 partitions", count(o.records/4*4)), "records/s", true, "throughput")
	add("source-cpu", "FileStreamSource", "worker CPU per million records, FileStreamSource", "CPU s", false, "cpu")
	add("sink-cpu", "FileStreamSink", "worker CPU per million records, FileStreamSink", "CPU s", false, "cpu")
	add("parallel-cpu", "4 FileStreamSources", "worker CPU per million records, 4 FileStreamSource connectors", "CPU s", false, "cpu")
	for _, n := range append([]int{0}, o.idle...) {
		add(fmt.Sprintf("idle-rss-%d", n), fmt.Sprintf("%d connectors", n), fmt.Sprintf("RSS with %d idle FileStreamSource connectors", n), "MiB", false, "idle-rss")
	}
	for _, n := range append([]int{0}, o.idle...) {
		add(fmt.Sprintf("idle-cpu-%d", n), fmt.Sprintf("%d connectors", n), fmt.Sprintf("worker CPU with %d idle FileStreamSource connectors", n), "% of a core", false, "idle-cpu")
	}
	add("start", "exec -> /health 200", "exec -> GET /health 200 (fresh group, internal topics created)", "s", false, "start")
	add("failover-delay0", "Connect max.delay=0", "kill -9 -> every task RUNNING on survivors, Connect with scheduled.rebalance.max.delay.ms=0", "s", false, "failover")
	add("failover-defaults", "Connect defaults", "kill -9 -> every task RUNNING on survivors, Connect at its defaults", "s", false, "failover")
	return r
}

func (r *results) add(key, system string, v float64) {
	f, ok := r.byKey[key]
	if !ok {
		panic("results.add: undeclared figure " + key)
	}
	f.samples[system] = append(f.samples[system], v)
}

// stat is the min and median of a system's samples of a figure, and
// how many there are (0: the figure was not measured).
func (f *figure) stat(system string) (minV, median float64, n int) {
	s := slices.Clone(f.samples[system])
	if len(s) == 0 {
		return 0, 0, 0
	}
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[0], m, len(s)
}

// ratio is Sluice's median over Connect's, 0 when either is missing.
func (f *figure) ratio() float64 {
	_, c, nc := f.stat(connectName)
	_, s, ns := f.stat(sluiceName)
	if nc == 0 || ns == 0 || c == 0 {
		return 0
	}
	return s / c
}

// count prints a record count as 1,000,000.
func count(n int) string {
	s := fmt.Sprint(n)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}
