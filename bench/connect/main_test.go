package main

// These tests start no JVM and no broker: they cover the harness's own
// logic (options, statistics, /proc parsing, the report), so that they
// can run in `go test ./...`. The harness end to end is `--smoke`.

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-io/sluice/bench/internal/benchproc"
)

func TestSmokeSetsTinySizesButExplicitFlagsWin(t *testing.T) {
	o, err := parseOptions([]string{"--smoke", "--rounds", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.records != 10_000 || o.warmup || o.failoverDefaultRounds != 0 || len(o.idle) != 1 || o.idle[0] != 5 {
		t.Errorf("smoke sizes not applied: %+v", o)
	}
	if o.rounds != 2 {
		t.Errorf("--rounds 2 given with --smoke: rounds = %d", o.rounds)
	}
	full, err := parseOptions(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if full.records != 1_000_000 || full.rounds != 3 || full.failoverDefaultRounds != 3 || !full.warmup {
		t.Errorf("defaults: %+v", full)
	}
}

func TestBadOptionsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--records", "3"}, "--records"},
		{[]string{"--line-bytes", "5"}, "--line-bytes"},
		{[]string{"--rounds", "0"}, "--rounds"},
		{[]string{"--idle", "500,100"}, "--idle"},
		{[]string{"--idle", "x"}, "--idle"},
		{[]string{"--scenarios", "source,bogus"}, "--scenarios"},
		{[]string{"--window", "10ms"}, "--window"},
		{[]string{"--failover-connectors", "2"}, "--failover-connectors"},
		{[]string{"--connect-heap", "2 GB"}, "--connect-heap"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parseOptions(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%v: error %v does not name %s", tc.args, err, tc.flag)
		}
	}
}

func TestStatIsMinAndMedian(t *testing.T) {
	o, _ := parseOptions(nil, io.Discard)
	r := newResults(o)
	for _, v := range []float64{30, 10, 20, 40} {
		r.add("start", connectName, v)
	}
	r.add("start", sluiceName, 5)
	f := r.byKey["start"]
	if lo, med, n := f.stat(connectName); lo != 10 || med != 25 || n != 4 {
		t.Errorf("stat = %v %v %v, want 10 25 4", lo, med, n)
	}
	if q := f.ratio(); q != 0.2 {
		t.Errorf("ratio = %v, want 5/25", q)
	}
	if _, _, n := r.byKey["sink-rps"].stat(sluiceName); n != 0 {
		t.Errorf("an unmeasured figure has %d samples", n)
	}
	if r.byKey["sink-rps"].ratio() != 0 {
		t.Error("an unmeasured figure has a ratio")
	}
}

func TestCPUTicksAndRSSOfThisProcess(t *testing.T) {
	m, err := startCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn 300 ms of CPU as getrusage counts it (wall time would not do
	// on a busy machine); /proc must count about the same. Its unit is
	// 10 ms, and each read may fall up to a tick short.
	before := rusageSeconds(t)
	for deadline := time.Now().Add(30 * time.Second); rusageSeconds(t)-before < 0.3; {
		if time.Now().After(deadline) {
			t.Fatal("could not burn 300 ms of CPU in 30 s")
		}
	}
	secs, err := m.seconds()
	if err != nil {
		t.Fatal(err)
	}
	if secs < 0.25 || secs > 1 {
		t.Errorf("300 ms of CPU (getrusage) measured from /proc as %v s", secs)
	}
	rss, err := benchproc.RSSBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 {
		t.Errorf("RSS of a Go test binary measured as %d bytes", rss)
	}
}

func TestLinesAreDistinctAndEnvelopedAsJsonConverterDoes(t *testing.T) {
	a, b := make([]byte, 100), make([]byte, 100)
	makeLine(a, 7)
	makeLine(b, 8)
	if bytes.Equal(a, b) || a[99] != '\n' || bytes.IndexByte(a[:99], '\n') >= 0 {
		t.Fatalf("lines: %q %q", a, b)
	}
	var env struct {
		Schema  map[string]any `json:"schema"`
		Payload string         `json:"payload"`
	}
	if err := json.Unmarshal(jsonStringEnvelope(a[:99]), &env); err != nil {
		t.Fatal(err)
	}
	if env.Payload != string(a[:99]) || env.Schema["type"] != "string" || env.Schema["optional"] != false {
		t.Errorf("envelope: %+v", env)
	}
}

func TestReportHasEveryFigureAndDrawsPlots(t *testing.T) {
	o, _ := parseOptions(nil, io.Discard)
	r := newResults(o)
	r.add("source-rps", connectName, 200_000)
	r.add("source-rps", sluiceName, 800_000)
	r.add("failover-delay0", connectName, 11)
	r.add("failover-delay0", sluiceName, 0.8)
	r.add("failover-defaults", connectName, 311)
	r.add("failover-defaults", sluiceName, 0.85)
	dir := t.TempDir()
	if err := writeReport(dir, o, environment{command: "go run ./bench/connect"}, r, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{
		"| FileStreamSource, 1,000,000 x 100 B lines -> topic | records/s | 200,000 | 200,000 | 800,000 | 800,000 | 4.00 | higher |",
		"| RSS with 500 idle FileStreamSource connectors | MiB | not run |",
		"| 0.80 | 0.80 | 0.073 | lower |",
		"| 0.85 | 0.85 | 0.0027 | lower |",
		"![throughput](throughput.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("README lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "![cpu](cpu.svg)") {
		t.Error("README links a plot of figures that have no sample")
	}
	for _, name := range []string{"throughput.svg", "failover.svg"} {
		svg, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("Sluice")) {
			t.Errorf("%s is not an SVG with a legend", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu.svg")); !os.IsNotExist(err) {
		t.Errorf("cpu.svg drawn without samples (%v)", err)
	}
}

// rusageSeconds is this process's user and system CPU time.
func rusageSeconds(t *testing.T) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func TestLoadMeterSummarisesTheSamples(t *testing.T) {
	if _, err := benchproc.LoadAverage(); err != nil {
		t.Fatal(err)
	}
	m := &loadMeter{samples: []float64{9, 1, 4}}
	if got, want := m.summary(), "min 1.0, median 4.0, max 9.0 (3 samples, every 5 s)"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
	if (&loadMeter{}).summary() != "" {
		t.Error("a meter without samples summarises to something")
	}
}

func TestGroupLeaderIsTheLastOneEachSystemLogged(t *testing.T) {
	for _, tc := range []struct{ log, want string }{
		{"... Assignment{error=0, leader='connect-1', leaderUrl='http://127.0.0.1:35289/', offset=3}\n" +
			"... Assignment{error=0, leader='connect-2', leaderUrl='http://127.0.0.1:34295/', offset=5}\n", "127.0.0.1:34295"},
		{`{"logger":"sluice.group","generation":1,"leader":true,"leader_worker":"127.0.0.1:43475"}` + "\n" +
			`{"logger":"sluice.group","generation":2,"leader":false,"leader_worker":"127.0.0.1:38871"}` + "\n", "127.0.0.1:38871"},
	} {
		path := filepath.Join(t.TempDir(), "w.log")
		if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := groupLeader(&worker{proc: &proc{Name: "w", LogPath: path}})
		if err != nil || got != tc.want {
			t.Errorf("groupLeader = %q, %v; want %q", got, err, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "empty.log")
	os.WriteFile(path, []byte("starting\n"), 0o644)
	if _, err := groupLeader(&worker{proc: &proc{Name: "w", LogPath: path}}); err == nil {
		t.Error("a log without a leader gave one")
	}
}

func TestSystemsFlagKeepsTheHarnessOrderAndRefusesUnknownNames(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.systems, ",") != connectName+","+sluiceName {
		t.Errorf("default systems = %v, want both, Connect first", o.systems)
	}
	o, err = parseOptions([]string{"--systems", "Sluice"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{opts: o}
	for r := range 2 {
		if got := h.order(r); len(got) != 1 || got[0] != sluiceName {
			t.Errorf("--systems sluice, round %d runs %v", r, got)
		}
	}
	o, err = parseOptions([]string{"--systems", "sluice, connect"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h = &harness{opts: o}
	if a, b := strings.Join(h.order(0), ","), strings.Join(h.order(1), ","); a != connectName+","+sluiceName || b != sluiceName+","+connectName {
		t.Errorf("rounds run %s then %s: the order must flip from Connect first", a, b)
	}
	if _, err := parseOptions([]string{"--systems", "sluice,flink"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--systems") {
		t.Errorf("an unknown system: error %v does not name --systems", err)
	}
	h.opts.systems = []string{sluiceName}
	h.opts.failoverDefaultRounds = 3
	for _, v := range h.failoverVariants() {
		if v.system != sluiceName {
			t.Errorf("--systems sluice runs the failover variant %s of %s", v.key, v.system)
		}
	}
}

// The README links the harness's ADR from wherever it is written.
func TestADRLinkResolvesFromTheReportsDirectory(t *testing.T) {
	repo := t.TempDir()
	for _, dir := range []string{"bench/results", "bench/results/throughput", "bench/results/idle"} {
		link := adrLink(filepath.Join(repo, dir), repo)
		if got := filepath.Clean(filepath.Join(repo, dir, link)); got != filepath.Join(repo, "docs/adr/0018-benchmark-against-connect.md") {
			t.Fatalf("from %s the link %s leads to %s", dir, link, got)
		}
	}
	// Written outside the clone (--out /tmp/x), then copied to
	// bench/results: the link must work from there, not lead out.
	if link := adrLink(t.TempDir(), repo); link != "../../docs/adr/0018-benchmark-against-connect.md" {
		t.Fatalf("from outside the repository the link is %s", link)
	}
}
