package main

import (
	"bufio"
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// environment is what the results README says about the run's machine
// and software.
type environment struct {
	cpu, cores, mem       string
	goVersion, java       string
	kafka, sluiceRevision string
	command               string
	started, finished     time.Time
	load                  string // the 1-minute load average over the run
}

func describeEnvironment(kafkaVersion string) environment {
	e := environment{goVersion: runtime.Version(), kafka: kafkaVersion, command: commandLine()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				e.cpu = strings.TrimSpace(v)
			case "processor":
				n++
			}
		}
		e.cores = fmt.Sprint(n)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				var kb float64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
				e.mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	if out, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		e.java = strings.Join(strings.Fields(strings.Split(string(out), "\n")[0]), " ")
	}
	return e
}

// gitRevision names the checkout's commit, "-dirty" when it has changes.
func gitRevision(repo string) string {
	out, err := exec.Command("git", "-C", repo, "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// commandLine is how the harness was invoked, to rerun it.
func commandLine() string {
	args := []string{"go run ./bench/connect"}
	for _, a := range os.Args[1:] {
		if strings.ContainsAny(a, " \t'\"$") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

// writeReport writes README.md and one SVG per plot group into dir.
// adrLink is the harness's ADR as a link from a README written to dir: the
// report may go to bench/results or a directory under it. A report written
// outside the repository is meant to be copied to bench/results (as the
// committed one was), so its link is the one from there: a link out of the
// clone would lead nowhere.
func adrLink(dir, repo string) string {
	const adr = "docs/adr/0018-benchmark-against-connect.md"
	const fromResults = "../../" + adr
	absDir, err1 := filepath.Abs(dir)
	absRepo, err2 := filepath.Abs(repo)
	if err1 != nil || err2 != nil {
		return fromResults
	}
	if in, err := filepath.Rel(absRepo, absDir); err != nil || in == ".." || strings.HasPrefix(in, "../") {
		return fromResults
	}
	rel, err := filepath.Rel(absDir, filepath.Join(absRepo, adr))
	if err != nil {
		return fromResults
	}
	return filepath.ToSlash(rel)
}

func writeReport(dir string, o options, e environment, r *results, notes []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var plots []string
	for _, f := range r.figures {
		if !slices.Contains(plots, f.plot) {
			plots = append(plots, f.plot)
		}
	}
	var drawn []string
	for _, name := range plots {
		ok, err := drawPlot(filepath.Join(dir, name+".svg"), name, r)
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		if ok {
			drawn = append(drawn, name)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Sluice side by side with Apache Kafka Connect\n\n")
	fmt.Fprintf(&b, "Written by `bench/connect` (see [its ADR](%s)); rerun with:\n\n```sh\n%s\n```\n\n", adrLink(dir, o.repo), e.command)
	fmt.Fprintf(&b, "Run from %s to %s (UTC), %d measured round(s) per scenario, the systems' order flipping every round", e.started.UTC().Format("2006-01-02 15:04"), e.finished.UTC().Format("15:04"), o.rounds)
	if o.warmup && slices.ContainsFunc(throughputScenarios, func(sc throughputScenario) bool { return slices.Contains(o.scenarios, sc.key) }) {
		b.WriteString(", after one warm-up pass of each throughput scenario on each system, and a full-size primer of the same system before each round that follows the other system's (neither counted)")
	}
	b.WriteString(".\n\n")
	for _, n := range notes {
		fmt.Fprintf(&b, "%s\n\n", n)
	}
	b.WriteString("| figure | unit | Connect min | Connect median | Sluice min | Sluice median | Sluice / Connect (medians) | better |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, f := range r.figures {
		cmin, cmed, nc := f.stat(connectName)
		smin, smed, ns := f.stat(sluiceName)
		ratio := "n/a"
		if q := f.ratio(); q > 0 {
			ratio = fmt.Sprintf("%.2f", q)
			if q < 0.1 {
				ratio = fmt.Sprintf("%.2g", q) // two significant digits: 0.0027 is not 0.00
			}
		}
		better := "lower"
		if f.higherBetter {
			better = "higher"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", f.title, f.unit,
			cell(cmin, nc), cell(cmed, nc), cell(smin, ns), cell(smed, ns), ratio, better)
	}
	b.WriteString("\nA cell reads \"not run\" when the options skipped that measurement. Every sample, in run order:\n\n")
	b.WriteString("| figure | Connect | Sluice |\n| --- | --- | --- |\n")
	for _, f := range r.figures {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", f.key, samples(f.samples[connectName]), samples(f.samples[sluiceName]))
	}
	b.WriteString("\n## Plots\n\nBars are medians; dots are the rounds.\n\n")
	for _, name := range drawn {
		fmt.Fprintf(&b, "![%s](%s.svg)\n\n", name, name)
	}
	b.WriteString("## Machine and versions\n\n")
	fmt.Fprintf(&b, "- CPU: %s, %s logical cores; memory %s\n", orUnknown(e.cpu), orUnknown(e.cores), orUnknown(e.mem))
	fmt.Fprintf(&b, "- Load average (1 minute) during the run: %s\n", orUnknown(e.load))
	fmt.Fprintf(&b, "- Go %s (harness and Sluice); Java: %s\n", e.goVersion, orUnknown(e.java))
	fmt.Fprintf(&b, "- Apache Kafka (broker) and Kafka Connect %s from Maven Central (bench/connect/pom.xml, test/kafka/pom.xml)\n", e.kafka)
	fmt.Fprintf(&b, "- Sluice at %s\n", orUnknown(e.sluiceRevision))
	fmt.Fprintf(&b, "- Connect worker JVM: -Xms256M -Xmx%s and the G1 options of kafka-run-class.sh\n", o.connectHeap)
	fmt.Fprintf(&b, "- Sizes: %s records of %d B (newline included), idle counts %v, settle %v, window %v, %d failover connectors\n",
		count(o.records), o.lineBytes, o.idle, o.settle, o.window, o.failoverConnectors)
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(b.String()), 0o644)
}

func cell(v float64, n int) string {
	if n == 0 {
		return "not run"
	}
	return human(v)
}

// human prints a figure with three significant digits, and thousands
// separators above 1000.
func human(v float64) string {
	switch {
	case v >= 1000:
		return count(int(math.Round(v)))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func samples(vs []float64) string {
	if len(vs) == 0 {
		return "-"
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = human(v)
	}
	return strings.Join(s, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

var (
	connectColor = color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff}
	sluiceColor  = color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff}
)

// drawPlot draws the figures of one plot group as grouped bars, the
// median of each system, with every round's sample as a dot on its bar.
// It draws nothing and returns false when no figure of the group has a
// sample.
func drawPlot(path, group string, r *results) (bool, error) {
	var figs []*figure
	hasData := false
	for _, f := range r.figures {
		if f.plot == group {
			figs = append(figs, f)
			if len(f.samples[connectName])+len(f.samples[sluiceName]) > 0 {
				hasData = true
			}
		}
	}
	if !hasData {
		return false, nil
	}
	p := plot.New()
	p.Title.Text = plotTitles[group]
	p.Y.Label.Text = figs[0].unit
	var labels []string
	top := 0.0
	for _, f := range figs {
		label := f.short
		if len(f.samples[connectName])+len(f.samples[sluiceName]) == 0 {
			label += " (not run)"
		}
		labels = append(labels, label)
		for _, sys := range systems {
			for _, v := range f.samples[sys] {
				top = math.Max(top, v)
			}
		}
	}
	p.NominalX(labels...)
	// One unit of x per figure; the two bars take 0.76 of it. Headroom
	// above the tallest sample keeps the legend and the value labels
	// clear of the bars.
	p.X.Min, p.X.Max = -0.5, float64(len(figs))-0.5
	p.Y.Min, p.Y.Max = 0, top*1.25
	plotWidth := 7 * vg.Inch
	width := (plotWidth - 60) * 0.38 / vg.Length(len(figs))
	for i, sys := range systems {
		shift := -0.19 + 0.38*float64(i)
		medians := make(plotter.Values, len(figs))
		var dots plotter.XYs
		var valueLabels plotter.XYLabels
		for j, f := range figs {
			_, med, n := f.stat(sys)
			medians[j] = med
			highest := 0.0
			for _, v := range f.samples[sys] {
				dots = append(dots, plotter.XY{X: float64(j) + shift, Y: v})
				highest = math.Max(highest, v)
			}
			if n > 0 {
				// Above the highest dot, so that no dot hides the label.
				valueLabels.XYs = append(valueLabels.XYs, plotter.XY{X: float64(j) + shift, Y: highest + top*0.03})
				valueLabels.Labels = append(valueLabels.Labels, human(med))
			}
		}
		bars, err := plotter.NewBarChart(medians, width)
		if err != nil {
			return false, err
		}
		bars.XMin = shift
		bars.LineStyle.Width = 0
		bars.Color = connectColor
		if sys == sluiceName {
			bars.Color = sluiceColor
		}
		p.Add(bars)
		p.Legend.Add(sys, bars)
		if len(dots) > 0 {
			sc, err := plotter.NewScatter(dots)
			if err != nil {
				return false, err
			}
			sc.GlyphStyle.Radius = vg.Points(2.5)
			sc.GlyphStyle.Color = color.Black
			p.Add(sc)
			lb, err := plotter.NewLabels(valueLabels)
			if err != nil {
				return false, err
			}
			for k := range lb.TextStyle {
				lb.TextStyle[k].XAlign = -0.5 // centred on the bar
			}
			p.Add(lb)
		}
	}
	p.Legend.Top = true
	grid := plotter.NewGrid()
	grid.Vertical.Width = 0 // the x axis is nominal: vertical lines would cut the bar pairs
	p.Add(grid)
	return true, p.Save(plotWidth, 4*vg.Inch, path)
}

var plotTitles = map[string]string{
	"throughput": "Records/s (higher is better)",
	"cpu":        "Worker CPU seconds per million records (lower is better)",
	"idle-rss":   "Worker RSS with idle connectors (lower is better)",
	"idle-cpu":   "Worker CPU with idle connectors, % of one core (lower is better)",
	"start":      "Start: exec -> GET /health 200, s (lower is better)",
	"failover":   "kill -9 -> every task RUNNING on survivors, s (lower is better)",
}
