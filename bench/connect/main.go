// Command connect runs Sluice and Apache Kafka Connect side by side on
// one Apache Kafka broker and writes the figures to bench/results: see
// --help, and docs/adr/0018-benchmark-against-connect.md for why it
// measures what it measures the way it does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const help = `go run ./bench/connect [flags]   (or: just bench-connect [flags])

Runs Sluice and Apache Kafka Connect 4.1.1 side by side and writes a table of
every figure (min and median per system, and the ratio Sluice / Connect) and
SVG plots of them to --out (default bench/results).

What it starts, all on 127.0.0.1:
  - one Apache Kafka broker (test/kafka/kafka.sh; Maven fetches its jars on
    first use),
  - Kafka Connect distributed workers (java -Xmx2G, the JVM options of
    kafka-run-class.sh, Connect's defaults) from the jars bench/connect/pom.xml
    names, and Sluice workers ('go build' of ./cmd/sluice, then 'sluice
    worker --config' with the same worker properties). Each system has its own
    group and internal topics.

What it measures, each scenario on both systems in turn, round after round,
the order flipping every round (Connect, Sluice; Sluice, Connect; ...):
  source    one FileStreamSource connector, a file of --records lines of
            --line-bytes bytes into a fresh topic, timed from the POST that
            creates it until the topic's end offsets count every line
  sink      one FileStreamSink connector, --records records from a topic into
            a file, timed until the file has every line (it must then equal
            the source file byte for byte)
  parallel  4 FileStreamSource connectors (Connect's has one task each: 4
            tasks), each with a quarter of the lines, into a 4-partition topic
  (each of the three also gives the worker's CPU seconds per million records,
  from /proc/PID/stat, and runs once unmeasured first as a warm-up, and
  unmeasured at full size before a round that follows the other system's)
  idle      per round a fresh worker: exec -> GET /health 200, then RSS and
            CPU% over --window after --settle, with 0 and with each --idle
            count of FileStreamSource connectors tailing an empty file
  failover  per round a fresh 3-worker cluster with --failover-connectors
            connectors; kill -9 of the worker with the most tasks; time until
            every task is RUNNING on a survivor (GET /connectors?expand=status
            every 50 ms). Connect with scheduled.rebalance.max.delay.ms=0, and
            at its defaults (5 minutes' delay: --failover-default-rounds)

A full run takes over an hour; --smoke proves the harness end to end in a few
minutes with tiny sizes and writes to a temporary directory unless --out is
given. Run it on a quiet machine: every other process's CPU shows in the
figures.

Flags:
`

type options struct {
	repo                  string
	out                   string
	workDir               string
	keep                  bool
	smoke                 bool
	scenarios             []string
	records               int
	lineBytes             int
	rounds                int
	warmup                bool
	idle                  []int
	settle                time.Duration
	window                time.Duration
	failoverConnectors    int
	failoverDefaultRounds int
	connectHeap           string
	runTimeout            time.Duration
	note                  string
	systems               []string // in the order the first round runs them
	pprof                 bool
}

var allScenarios = []string{"source", "sink", "parallel", "idle", "failover"}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench/connect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, help)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.repo, "repo", ".", "the Sluice repository's root (where go.mod is)")
	fs.StringVar(&o.out, "out", "", "where README.md and the SVGs go (default bench/results; with --smoke, <work-dir>/results)")
	fs.StringVar(&o.workDir, "work-dir", "", "where the broker's data, the input files and the workers' logs go (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep --work-dir after the run (it is always kept when the run fails, for its logs)")
	fs.BoolVar(&o.smoke, "smoke", false, "tiny sizes: 10,000 records, 5 idle connectors, 1 round, no warm-up, 2 s settle, 3 s window, no failover at Connect's defaults; flags given explicitly still win")
	scen := fs.String("scenarios", strings.Join(allScenarios, ","), "which scenarios to run, comma-separated: "+strings.Join(allScenarios, ", "))
	fs.IntVar(&o.records, "records", 1_000_000, "records of the source, sink and parallel scenarios")
	fs.IntVar(&o.lineBytes, "line-bytes", 100, "bytes per line of the input file, newline included (at least 12)")
	fs.IntVar(&o.rounds, "rounds", 3, "measured rounds of each scenario on each system")
	fs.BoolVar(&o.warmup, "warmup", true, "run each throughput scenario once on each system with a tenth of --records before the measured rounds, and at full size before a measured round that follows the other system's, unrecorded (the JVM's JIT, the page cache, the broker's state after the other system's round)")
	idle := fs.String("idle", "100,500", "counts of idle FileStreamSource connectors the idle scenario measures, comma-separated, ascending (0 is always measured)")
	fs.DurationVar(&o.settle, "settle", 30*time.Second, "idle scenario: wait after the connectors run before measuring")
	fs.DurationVar(&o.window, "window", 30*time.Second, "idle scenario: how long RSS and CPU are measured")
	fs.IntVar(&o.failoverConnectors, "failover-connectors", 6, "connectors (one task each) of the failover cluster")
	fs.IntVar(&o.failoverDefaultRounds, "failover-default-rounds", -1, "rounds of failover with Connect at its defaults, each waits ~5 minutes (default: --rounds; 0 skips them)")
	fs.StringVar(&o.connectHeap, "connect-heap", "2G", "the Connect workers' -Xmx, as connect-distributed.sh sets it")
	fs.DurationVar(&o.runTimeout, "run-timeout", 10*time.Minute, "how long one throughput run may take before the harness gives up")
	fs.StringVar(&o.note, "note", "", "a paragraph for the results README, such as what else ran on the machine")
	sys := fs.String("systems", strings.ToLower(connectName+","+sluiceName), "which systems to run, comma-separated: connect, sluice (one alone gives no ratios; for before/after runs of one system, which then skip the other's start, and Maven too without connect)")
	fs.BoolVar(&o.pprof, "pprof", false, "start the Sluice workers with --pprof, so that `go tool pprof http://<worker>/debug/pprof/profile` profiles them while the scenarios run; the harness logs each worker's address")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q: every setting is a flag (see --help)", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.smoke {
		smoke := map[string]func(){
			"records": func() { o.records = 10_000 }, "rounds": func() { o.rounds = 1 },
			"warmup": func() { o.warmup = false }, "idle": func() { *idle = "5" },
			"settle": func() { o.settle = 2 * time.Second }, "window": func() { o.window = 3 * time.Second },
			"failover-default-rounds": func() { o.failoverDefaultRounds = 0 },
		}
		for name, apply := range smoke {
			if !set[name] {
				apply()
			}
		}
	}
	if o.failoverDefaultRounds < 0 {
		o.failoverDefaultRounds = o.rounds
	}
	var err error
	if o.idle, err = parseCounts(*idle); err != nil {
		return o, fmt.Errorf("--idle: %w", err)
	}
	if o.systems, err = parseSystems(*sys); err != nil {
		return o, fmt.Errorf("--systems: %w", err)
	}
	o.scenarios = nil
	for _, s := range strings.Split(*scen, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allScenarios, s) {
			return o, fmt.Errorf("--scenarios: unknown scenario %q (known: %s)", s, strings.Join(allScenarios, ", "))
		}
		o.scenarios = append(o.scenarios, s)
	}
	switch {
	case o.records < 4:
		return o, fmt.Errorf("--records must be at least 4 (the parallel scenario splits them over 4 files), not %d", o.records)
	case o.lineBytes < 12:
		return o, fmt.Errorf("--line-bytes must be at least 12 (a 9-digit line number, a space, a letter and the newline), not %d", o.lineBytes)
	case o.rounds < 1:
		return o, fmt.Errorf("--rounds must be at least 1, not %d", o.rounds)
	case o.window < time.Second:
		return o, fmt.Errorf("--window must be at least 1s (RSS is sampled every second), not %v", o.window)
	case o.settle < 0:
		return o, fmt.Errorf("--settle must not be negative, not %v", o.settle)
	case o.failoverConnectors < 3:
		return o, fmt.Errorf("--failover-connectors must be at least 3, a task per worker, not %d", o.failoverConnectors)
	case !regexp.MustCompile(`^[0-9]+[kKmMgG]?$`).MatchString(o.connectHeap):
		return o, fmt.Errorf("--connect-heap must be a JVM size such as 2G or 512m, not %q", o.connectHeap)
	}
	return o, nil
}

// parseSystems parses "sluice,connect" (any case) into the systems'
// names, kept in the harness's own order whatever the flag's order.
func parseSystems(s string) ([]string, error) {
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f != strings.ToLower(connectName) && f != strings.ToLower(sluiceName) {
			return nil, fmt.Errorf("unknown system %q (known: connect, sluice)", f)
		}
		want[f] = true
	}
	var out []string
	for _, sys := range systems {
		if want[strings.ToLower(sys)] {
			out = append(out, sys)
		}
	}
	return out, nil
}

// parseCounts parses "100,500": positive, ascending counts.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("counts must ascend (each adds connectors to the previous ones): %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench/connect: %v\n", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "bench/connect: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(repo, "test/kafka/kafka.sh")); err != nil {
		return fmt.Errorf("--repo %s is not the Sluice repository's root: %w", repo, err)
	}
	if o.workDir == "" {
		if o.workDir, err = os.MkdirTemp("", "sluice-bench-connect-"); err != nil {
			return err
		}
	}
	if o.workDir, err = filepath.Abs(o.workDir); err != nil {
		return err
	}
	if o.out == "" {
		o.out = filepath.Join(repo, "bench/results")
		if o.smoke {
			o.out = filepath.Join(o.workDir, "results")
		}
	}
	defer func() {
		if err == nil && !o.keep {
			os.RemoveAll(o.workDir)
			return
		}
		logf("the broker's and workers' logs are in %s", o.workDir)
	}()
	// The revision now, before the build: the checkout may change while
	// the run goes on, and the figures are those of the binary built here.
	revision := gitRevision(repo)
	started := time.Now()
	load := startLoadMeter()
	defer load.close()

	logf("building the sluice binary")
	bin := filepath.Join(o.workDir, "sluice")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/sluice: %w", err)
	}
	var cpFile, kafkaVersion string
	if slices.Contains(o.systems, connectName) {
		logf("resolving Kafka Connect's jars with Maven (bench/connect/pom.xml)")
		if cpFile, kafkaVersion, err = connectClasspath(ctx, repo, o.workDir); err != nil {
			return err
		}
	}
	logf("starting Apache Kafka")
	b, err := startBroker(ctx, repo, filepath.Join(o.workDir, "kafka"))
	if err != nil {
		return err
	}
	defer b.Stop()
	if kafkaVersion == "" {
		// Without Connect, the version the report names is the broker's,
		// from the classpath kafka.sh resolved.
		if kafkaVersion, err = brokerVersion(repo); err != nil {
			return err
		}
	}

	h := &harness{opts: o, ctx: ctx, broker: b, res: newResults(o), log: logf,
		launch: &launcher{ctx: ctx, bootstrap: b.Bootstrap, connectCP: cpFile, connectHeap: o.connectHeap, sluiceBin: bin, runDir: o.workDir, pprof: o.pprof}}
	h.empty = filepath.Join(o.workDir, "data", "empty.txt")
	if err := os.MkdirAll(filepath.Dir(h.empty), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(h.empty, nil, 0o644); err != nil {
		return err
	}
	// The report is rewritten after every scenario, so that a run that
	// fails or is interrupted late still leaves what it measured, marked
	// as incomplete.
	report := func(status string) error {
		e := describeEnvironment(kafkaVersion)
		e.sluiceRevision, e.started, e.finished = revision, started, time.Now()
		e.load = load.summary()
		notes := []string{"Both systems run on the same broker, the same machine and the same input; " +
			"the machine also runs whatever else was running (see the ADR on noise)."}
		if o.note != "" {
			notes = append(notes, o.note)
		}
		if len(o.systems) < len(systems) {
			notes = append(notes, fmt.Sprintf("Only %s ran (`--systems`): this run has no ratios.", strings.Join(o.systems, " and ")))
		}
		if o.smoke {
			notes = append(notes, "**Smoke run: tiny sizes that prove the harness works; the figures mean little.**")
		}
		if status != "" {
			notes = append(notes, "**Incomplete run: "+status+".**")
		}
		return writeReport(o.out, o, e, h.res, notes)
	}
	if err := h.runScenarios(report); err != nil {
		// The first line: a worker's exit also carries its log's tail.
		if rerr := report("it stopped with: " + strings.SplitN(err.Error(), "\n", 2)[0]); rerr != nil {
			logf("writing the partial report: %v", rerr)
		}
		return err
	}
	if err := report(""); err != nil {
		return err
	}
	logf("results in %s", filepath.Join(o.out, "README.md"))
	return nil
}

// connectClasspath resolves bench/connect/pom.xml's dependencies with
// Maven (fetching what ~/.m2 lacks) into a classpath file, and returns it
// with the Kafka version its connect-runtime jar carries.
func connectClasspath(ctx context.Context, repo, workDir string) (string, string, error) {
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", "", errors.New("mvn not found: install Maven 3 (apt-get install maven)")
	}
	cp := filepath.Join(workDir, "connect-classpath.txt")
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "-f", filepath.Join(repo, "bench/connect/pom.xml"),
		"org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath",
		"-Dmdep.outputFile="+cp, "-Dmdep.includeScope=runtime")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("mvn could not resolve bench/connect/pom.xml: %w", err)
	}
	b, err := os.ReadFile(cp)
	if err != nil {
		return "", "", err
	}
	m := regexp.MustCompile(`connect-runtime-([0-9][^/:]*)\.jar`).FindStringSubmatch(string(b))
	if m == nil {
		return "", "", fmt.Errorf("%s names no connect-runtime jar", cp)
	}
	return cp, m[1], nil
}

// brokerVersion is the Kafka version of the jars test/kafka/kafka.sh
// runs the broker from.
func brokerVersion(repo string) (string, error) {
	cp := filepath.Join(repo, "test/.kafka/classpath.txt")
	b, err := os.ReadFile(cp)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`kafka_[0-9.]+-([0-9][^/:]*)\.jar`).FindStringSubmatch(string(b))
	if m == nil {
		return "", fmt.Errorf("%s names no kafka_<scala>-<version>.jar", cp)
	}
	return m[1], nil
}

// runScenarios runs the chosen scenarios in order, calling report after
// each with a note of what is still to run.
func (h *harness) runScenarios(report func(status string) error) error {
	o := h.opts
	var which []throughputScenario
	for _, sc := range throughputScenarios {
		if slices.Contains(o.scenarios, sc.key) {
			which = append(which, sc)
		}
	}
	if len(which) > 0 {
		h.log("writing %s lines of %d B and filling the sink's input topic", count(o.records), o.lineBytes)
		var err error
		dataDir := filepath.Join(h.launch.runDir, "data")
		if h.data, err = makeDataset(h.ctx, h.broker, dataDir, "lines", o.records, o.lineBytes, 4); err != nil {
			return err
		}
		if o.warmup {
			if h.warm, err = makeDataset(h.ctx, h.broker, dataDir, "warmup", max(o.records/10, 4), o.lineBytes, 4); err != nil {
				return err
			}
		}
		if err := h.runThroughput(which); err != nil {
			return err
		}
		if err := report("the idle and failover scenarios were still to run"); err != nil {
			return err
		}
	}
	if slices.Contains(o.scenarios, "idle") {
		if err := h.runIdle(); err != nil {
			return err
		}
		if err := report("the failover scenario was still to run"); err != nil {
			return err
		}
	}
	if slices.Contains(o.scenarios, "failover") {
		return h.runFailover()
	}
	return nil
}
