// Command debezium runs Sluice's PostgreSQL CDC connector and Debezium's
// (3.6.1.Final, in Apache Kafka Connect 4.1.1) side by side on one
// PostgreSQL server and one Apache Kafka broker, and writes what it
// measured to bench/results/debezium/README.md: see --help.
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
	"slices"
	"strings"
	"syscall"
	"time"
)

const help = `go run ./bench/debezium [flags]   (or: just bench-debezium [flags])

Runs Debezium's PostgreSQL connector 3.6.1.Final in an Apache Kafka Connect
4.1.1 standalone worker and Sluice's port of it in a 'sluice worker', with the
same Debezium config, on the same PostgreSQL (a server of the harness's own,
wal_level=logical) and the same Apache Kafka broker (test/kafka/kafka.sh), and
writes min and median per system, and the ratio Sluice / Debezium, to
--out/README.md.

Each round runs each system once, the order flipping every round. A run is a
fresh worker process with a fresh connector (its own slot, publication and
topics, created with one partition before the worker starts) that goes
through three phases:
  snapshot   the connector snapshots a table of --rows rows; rows/s from the
             first record in its topic to the last (the topics' end offsets,
             polled every 100 ms)
  streaming  a writer commits --changes changes as fast as PostgreSQL takes
             them (half inserts, half updates, --tx-rows rows a transaction) into a
             second table; changes/s from the writer's start to the last
             record in the topic. The writer's own rate is reported too: it
             must be above both connectors' for the figure to be the
             connector's
  lag        a writer commits --lag-rate rows/s (10 rows a transaction) for
             --lag-duration into a third table while a consumer reads the
             topic; lag = when the consumer got the record - the commit time
             in its source.ts_us; p50 and p99 (the first 2 s left out)
and, per phase, the worker's peak RSS (/proc/PID/status every 200 ms) and its
CPU seconds. Run it on a quiet machine: every other process shows.

Flags:
`

type options struct {
	repo, out, workDir string
	keep               bool
	rows, changes      int
	txRows             int
	lagRate            int
	lagDuration        time.Duration
	rounds             int
	connectHeap        string
	phaseTimeout       time.Duration
	note               string
	// systems are the systems that run, in the order of a round's first
	// run: "Debezium", "Sluice" or both.
	systems []string
	// sluiceProps and sluiceEnv are what a Sluice worker gets besides the
	// harness's settings: worker properties (--prop) and environment
	// variables, to measure a setting's effect on Sluice alone.
	sluiceProps, sluiceEnv []string
}

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench/debezium", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, help)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.repo, "repo", ".", "the Sluice repository's root (where go.mod is)")
	fs.StringVar(&o.out, "out", "bench/results/debezium", "where README.md goes")
	fs.StringVar(&o.workDir, "work-dir", "", "where PostgreSQL's and the broker's data and the workers' logs go (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep --work-dir after the run (it is always kept when the run fails, for its logs)")
	fs.IntVar(&o.rows, "rows", 1_000_000, "rows of the snapshot table")
	fs.IntVar(&o.changes, "changes", 500_000, "changes of the streaming phase (an even number: half inserts, half updates)")
	fs.IntVar(&o.txRows, "tx-rows", 1000, "rows per transaction of the streaming writer")
	fs.IntVar(&o.lagRate, "lag-rate", 1000, "rows per second of the lag phase (a multiple of 10: 10 rows a transaction)")
	fs.DurationVar(&o.lagDuration, "lag-duration", 20*time.Second, "how long the lag phase writes")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; each runs each system once")
	fs.StringVar(&o.connectHeap, "connect-heap", "2G", "the Connect worker's -Xmx, as connect-standalone.sh sets it")
	fs.DurationVar(&o.phaseTimeout, "phase-timeout", 10*time.Minute, "how long one phase may take before the harness gives up")
	fs.StringVar(&o.note, "note", "", "a paragraph for the results README, such as what else ran on the machine")
	systems := fs.String("systems", "debezium,sluice", "which systems run, comma-separated: debezium, sluice (one alone measures a setting's effect; the README then has no ratios)")
	fs.Var((*listFlag)(&o.sluiceProps), "sluice-prop", "a worker property key=value for the Sluice worker (its --prop); may be repeated")
	fs.Var((*listFlag)(&o.sluiceEnv), "sluice-env", "an environment variable NAME=value for the Sluice worker, such as GODEBUG=gctrace=1; may be repeated")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q: every setting is a flag (see --help)", fs.Args())
	case o.rows < 1:
		return o, fmt.Errorf("--rows must be at least 1, not %d", o.rows)
	case o.changes < 2 || o.changes%2 != 0:
		return o, fmt.Errorf("--changes must be a positive even number (half inserts, half updates), not %d", o.changes)
	case o.txRows < 1:
		return o, fmt.Errorf("--tx-rows must be at least 1, not %d", o.txRows)
	case o.lagRate < 10 || o.lagRate%10 != 0:
		return o, fmt.Errorf("--lag-rate must be a positive multiple of 10, not %d", o.lagRate)
	case o.lagDuration < 5*time.Second:
		return o, fmt.Errorf("--lag-duration must be at least 5s (the first 2 s are left out), not %v", o.lagDuration)
	case o.rounds < 1:
		return o, fmt.Errorf("--rounds must be at least 1, not %d", o.rounds)
	}
	for _, name := range strings.Split(*systems, ",") {
		var sys string
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "debezium":
			sys = "Debezium"
		case "sluice":
			sys = "Sluice"
		default:
			return o, fmt.Errorf("--systems: unknown system %q (known: debezium, sluice)", name)
		}
		if slices.Contains(o.systems, sys) {
			return o, fmt.Errorf("--systems names %s twice", sys)
		}
		o.systems = append(o.systems, sys)
	}
	for _, kv := range append(slices.Clone(o.sluiceProps), o.sluiceEnv...) {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return o, fmt.Errorf("--sluice-prop and --sluice-env take key=value, not %q", kv)
		}
	}
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench/debezium: %v\n", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "bench/debezium: %v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(o options) (err error) {
	if o.repo, err = filepath.Abs(o.repo); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(o.repo, "go.mod")); err != nil {
		return fmt.Errorf("--repo %s is not the repository's root: %w", o.repo, err)
	}
	if !filepath.IsAbs(o.out) {
		o.out = filepath.Join(o.repo, o.out)
	}
	if o.workDir == "" {
		if o.workDir, err = os.MkdirTemp("", "sluice-bench-debezium-"); err != nil {
			return err
		}
	}
	defer func() {
		if err == nil && !o.keep {
			os.RemoveAll(o.workDir)
		} else {
			logf("work directory kept: %s", o.workDir)
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	bin := filepath.Join(o.workDir, "sluice")
	logf("building sluice")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sluice")
	build.Dir, build.Stdout, build.Stderr = o.repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/sluice: %w", err)
	}
	logf("starting PostgreSQL")
	pg, err := startPostgres(mkdir(o.workDir, "postgres"))
	if err != nil {
		return err
	}
	defer pg.stop()
	logf("starting Apache Kafka")
	b, err := startBroker(o.repo, mkdir(o.workDir, "kafka"))
	if err != nil {
		return err
	}
	defer b.Stop()
	var systems []system
	for _, name := range o.systems {
		switch name {
		case "Debezium":
			dbz, err := newDebezium(o.repo, b.Bootstrap, o.connectHeap)
			if err != nil {
				return err
			}
			systems = append(systems, dbz)
		case "Sluice":
			systems = append(systems, &sluice{bin: bin, bootstrap: b.Bootstrap, props: o.sluiceProps, env: o.sluiceEnv})
		}
	}

	logf("loading %d rows into the snapshot table", o.rows)
	if err := pg.exec(ctx,
		`CREATE TABLE snap (id bigint PRIMARY KEY, name text NOT NULL, amount numeric(12,2), created timestamptz NOT NULL, active boolean)`,
		fmt.Sprintf(`INSERT INTO snap SELECT g, 'customer-' || g, (g %% 100000) / 100.0, timestamptz '2026-01-01' + g * interval '1 second', g %% 3 = 0
			FROM generate_series(1, %d) g`, o.rows),
		`CREATE TABLE stream (id bigint PRIMARY KEY, name text NOT NULL, amount numeric(12,2), created timestamptz NOT NULL, active boolean)`,
		`CREATE TABLE lag (id bigint PRIMARY KEY, name text NOT NULL, amount numeric(12,2), created timestamptz NOT NULL, active boolean)`,
		`VACUUM ANALYZE`,
	); err != nil {
		return err
	}
	res := &results{opts: o, pgVersion: pg.version}
	started := time.Now()
	for round := 1; round <= o.rounds; round++ {
		order := systems
		if round%2 == 0 {
			order = slices.Clone(systems)
			slices.Reverse(order)
		}
		for _, sys := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			logf("round %d: %s", round, sys.name())
			m, err := runOnce(ctx, o, pg, b, sys, fmt.Sprintf("r%d_%s", round, strings.ToLower(sys.name())))
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, sys.name(), err)
			}
			logf("round %d: %s: %s", round, sys.name(), m)
			res.add(sys.name(), m)
		}
	}
	res.duration = time.Since(started)
	return res.write()
}

func mkdir(parent, name string) string {
	dir := filepath.Join(parent, name)
	_ = os.MkdirAll(dir, 0o755)
	return dir
}
