//go:build linux

// The idle-worker benchmark reads the worker process from /proc.

package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors/file"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/proctest"
)

var (
	flagIdleConnectors = flag.String("bench.idle-connectors", "100,500",
		"comma-separated counts of idle FileStreamSource connectors of the idle-worker benchmark")
	flagIdleWindow = flag.Duration("bench.idle-window", 10*time.Second,
		"how long the idle-worker benchmark measures CPU, after the warm-up")
	flagIdleScrape = flag.Duration("bench.idle-scrape", 0,
		"when positive, GET /metrics at this interval through the warm-up and the window, as Prometheus would (a scraped worker holds more)")
)

// flagIdleWarmUp is how long the worker sits with its connectors RUNNING
// before the CPU window opens. The creations' rebalances, the first status
// and offset writes and the first polls of every task are over within 5 s;
// the collector's idle pace takes longer: it follows the fastest
// allocation of the last 10 s (internal/gcpace, ADR 0023), and Go's
// scavenger then returns the pages the smaller goal frees at its own pace.
// Before ADR 0023 the default was 5 s.
var flagIdleWarmUp = flag.Duration("bench.idle-warmup", 30*time.Second,
	"how long the idle-worker benchmark lets the worker sit idle before it measures")

// userHZ is the unit of utime and stime in /proc/<pid>/stat. The kernel
// fixes it at 100 for user space whatever its own tick rate (USER_HZ).
const userHZ = 100

// procSample is one reading of a process from /proc.
type procSample struct {
	at       time.Time
	cpuTicks uint64 // utime + stime, in 1/userHZ s
	rssBytes uint64
}

// readProc reads the process's CPU time and resident set from /proc, as ps
// and top do. Linux only; the benchmark fails elsewhere.
func readProc(pid int) (procSample, error) {
	s := procSample{at: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields are counted after its closing parenthesis.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: no ')' in %q", pid, stat)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	s.cpuTicks = utime + stime
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer status.Close()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		if kb, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 10, 64)
			if err != nil {
				return s, fmt.Errorf("/proc/%d/status: VmRSS %q", pid, kb)
			}
			s.rssBytes = n << 10
			return s, nil
		}
	}
	return s, fmt.Errorf("/proc/%d/status: no VmRSS line", pid)
}

// cpuPercent is the CPU the process used between a and b, in percent of one
// core.
func cpuPercent(a, b procSample) float64 {
	return float64(b.cpuTicks-a.cpuTicks) / userHZ / b.at.Sub(a.at).Seconds() * 100
}

// idleFigures is a worker process at rest: its CPU over the window, its
// resident set at the window's end, its own count of goroutines and bytes
// of goroutine stacks from GET /metrics, and its live heap: the heap
// allocated right after a collection, which GET /debug/pprof/heap?gc=1
// runs (the worker runs with --pprof).
type idleFigures struct {
	cpuPct     float64
	rss        uint64
	goroutines float64
	stack      float64
	liveHeap   float64
}

// idleWorkerRun is one run: the worker with no connector, then with k idle
// ones.
type idleWorkerRun struct {
	k           int
	empty, full idleFigures
	start       time.Duration // from the first POST until all k RUNNING
}

// scrapeHTTP is the idle benchmark's scraper's client.
var scrapeHTTP = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// idleTiming is how long a run lets the worker settle and then measures
// it, and how often /metrics is scraped meanwhile (0: never).
type idleTiming struct{ warmUp, window, scrape time.Duration }

// measureIdle waits out the warm-up, then samples the process over the
// window, scraping /metrics every tm.scrape through both.
func measureIdle(tb testing.TB, w *foWorker, tm idleTiming) idleFigures {
	tb.Helper()
	if tm.scrape > 0 {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(tm.scrape)
			defer tick.Stop()
			for {
				// The whole exposition, read and dropped, as a scraper
				// reads it, on a connection of its own each time: a
				// kept-alive one would hold a goroutine in the worker,
				// which the goroutine figures would count.
				if code, _, err := proctest.Send(scrapeHTTP, "GET", "http://"+w.rest+"/metrics", ""); err != nil || code != http.StatusOK {
					tb.Errorf("GET /metrics: %d %v", code, err)
					return
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		defer func() { close(stop); <-done }()
	}
	time.Sleep(tm.warmUp)
	a, err := readProc(w.Pid())
	if err != nil {
		tb.Fatal(err)
	}
	time.Sleep(tm.window)
	b, err := readProc(w.Pid())
	if err != nil {
		tb.Fatal(err)
	}
	w.FailIfExited()
	m := scrapeMetrics(tb, w.rest, "go_goroutines", "go_memstats_stack_inuse_bytes")
	// After RSS and CPU are read: the collection it forces changes both.
	if code, _, err := foGet("http://" + w.rest + "/debug/pprof/heap?gc=1"); err != nil || code != http.StatusOK {
		tb.Fatalf("GET /debug/pprof/heap?gc=1: %d %v", code, err)
	}
	heap := scrapeMetrics(tb, w.rest, "go_memstats_heap_alloc_bytes")
	return idleFigures{cpuPct: cpuPercent(a, b), rss: b.rssBytes, goroutines: m[0], stack: m[1], liveHeap: heap[0]}
}

// scrapeMetrics reads the named unlabelled samples from GET /metrics.
func scrapeMetrics(tb testing.TB, rest string, names ...string) []float64 {
	tb.Helper()
	code, body, err := foGet("http://" + rest + "/metrics")
	if err != nil || code != http.StatusOK {
		tb.Fatalf("GET /metrics: %d %v", code, err)
	}
	out := make([]float64, len(names))
	for i, name := range names {
		found := false
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				if out[i], err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					tb.Fatalf("GET /metrics: %s %q: %v", name, v, err)
				}
				found = true
				break
			}
		}
		if !found {
			tb.Fatalf("GET /metrics: no sample %s", name)
		}
	}
	return out
}

// startIdleWorker starts a broker and one worker at its defaults (metrics
// on, offset.flush.interval.ms 1 s), as an operator runs it, and with
// --pprof, which serves the profiles only when asked.
func startIdleWorker(tb testing.TB) *foWorker {
	tb.Helper()
	bootstrap := proctest.FreeAddr(tb)
	broker := foNewProc(tb, "broker", "broker", "--addr", bootstrap, "--data-dir", tb.TempDir())
	broker.start()
	if err := kafkatest.WaitUp(bootstrap, foStartDeadline, broker.FailIfExited); err != nil {
		tb.Fatalf("broker on %s not up within %v: %v", bootstrap, foStartDeadline, err)
	}
	w := &foWorker{id: "w1", rest: proctest.FreeAddr(tb), bind: proctest.FreeAddr(tb)}
	w.foProc = foNewProc(tb, "worker-w1", "worker", "--cluster", "bench-idle", "--bootstrap", bootstrap,
		"--rest-addr", w.rest, "--worker-id", w.id, "--bind", w.bind, "--pprof")
	w.start()
	if err := proctest.WaitHealthy(foHTTP, w.rest, foStartDeadline, 50*time.Millisecond, w.FailIfExited); err != nil {
		tb.Fatalf("%s: %v", w.name, err)
	}
	return w
}

// runIdleWorker measures one fresh worker empty, then creates k
// FileStreamSource connectors, each on an empty file of its own (at its end,
// as a tailed log with nothing new), and measures it again.
func runIdleWorker(tb testing.TB, k int, tm idleTiming) idleWorkerRun {
	tb.Helper()
	w := startIdleWorker(tb)
	r := idleWorkerRun{k: k, empty: measureIdle(tb, w, tm)}
	dir := tb.TempDir()
	start := time.Now()
	// A few creations in flight at once: k one-by-one round trips would
	// take long, and REST serialises the config writes anyway.
	var wg sync.WaitGroup
	errs := make(chan error, k)
	sem := make(chan struct{}, 8)
	for i := 0; i < k; i++ {
		path := filepath.Join(dir, fmt.Sprintf("in-%d.txt", i))
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			tb.Fatal(err)
		}
		body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("idle-%d", i), "config": map[string]string{
			"connector.class": file.SourceClass, "tasks.max": "1",
			file.FileKey: path, file.TopicKey: fmt.Sprintf("idle-%d", i),
		}})
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			code, resp, err := proctest.Send(foHTTP, "POST", "http://"+w.rest+"/connectors", string(body))
			if err != nil || code != http.StatusCreated {
				errs <- fmt.Errorf("POST /connectors: %d %s %v", code, resp, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	waitAllRunning(tb, w, k)
	r.start = time.Since(start)
	r.full = measureIdle(tb, w, tm)
	return r
}

// waitAllRunning polls GET /connectors?expand=status until k connectors and
// their tasks are RUNNING.
func waitAllRunning(tb testing.TB, w *foWorker, k int) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	running := 0
	for time.Now().Before(deadline) {
		w.FailIfExited()
		code, body, err := foGet("http://" + w.rest + "/connectors?expand=status")
		if err == nil && code == http.StatusOK {
			var all map[string]struct {
				Status proctest.Status `json:"status"`
			}
			if err := json.Unmarshal(body, &all); err != nil {
				tb.Fatalf("GET /connectors?expand=status: %v", err)
			}
			running = 0
			for _, c := range all {
				if c.Status.Running() && len(c.Status.Tasks) == 1 {
					running++
				}
			}
			if running == k {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	tb.Fatalf("%d of %d connectors RUNNING after 5 minutes", running, k)
}

// BenchmarkIdleWorker measures a real `sluice worker` process (with a
// `sluice broker` beside it) from /proc: its CPU% and RSS with no connector
// and with K idle FileStreamSource connectors of one task each, and per
// connector the goroutines, goroutine stacks and resident memory it added
// (goroutines and stacks from the worker's own GET /metrics), and the live
// heap it added. The CPU window opens after a warm-up. Each iteration is a
// fresh worker; the metrics are medians over iterations.
func BenchmarkIdleWorker(b *testing.B) {
	counts, err := parseIdleCounts(*flagIdleConnectors)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range counts {
		b.Run("connectors="+strconv.Itoa(k), func(b *testing.B) {
			tm := idleTiming{warmUp: *flagIdleWarmUp, window: *flagIdleWindow, scrape: *flagIdleScrape}
			runs := loopRuns(b, func(int) (idleWorkerRun, error) { return runIdleWorker(b, k, tm), nil })
			med := func(f func(r idleWorkerRun) float64) float64 {
				v := make([]float64, len(runs))
				for i, r := range runs {
					v[i] = f(r)
				}
				sort.Float64s(v)
				return v[len(v)/2]
			}
			b.ReportMetric(med(func(r idleWorkerRun) float64 { return r.full.cpuPct }), "cpu-%")
			b.ReportMetric(med(func(r idleWorkerRun) float64 { return float64(r.full.rss) / (1 << 20) }), "rss-MiB")
			b.ReportMetric(med(func(r idleWorkerRun) float64 { return r.empty.cpuPct }), "empty-cpu-%")
			b.ReportMetric(med(func(r idleWorkerRun) float64 { return float64(r.empty.rss) / (1 << 20) }), "empty-rss-MiB")
			b.ReportMetric(med(func(r idleWorkerRun) float64 { return (r.full.goroutines - r.empty.goroutines) / float64(r.k) }), "goroutines/conn")
			b.ReportMetric(med(func(r idleWorkerRun) float64 { return (r.full.stack - r.empty.stack) / float64(r.k) }), "stack-B/conn")
			b.ReportMetric(med(func(r idleWorkerRun) float64 { return (float64(r.full.rss) - float64(r.empty.rss)) / float64(r.k) }), "rss-B/conn")
			b.ReportMetric(med(func(r idleWorkerRun) float64 { return (r.full.liveHeap - r.empty.liveHeap) / float64(r.k) }), "heap-B/conn")
			b.Log("\n" + idleWorkerTable(runs))
		})
	}
}

func idleWorkerTable(runs []idleWorkerRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-4s %5s %10s %10s %9s %9s %11s %11s %14s %8s\n", "run", "conns", "empty CPU%", "empty RSS", "CPU%", "RSS MiB",
		"goroutines", "stack MiB", "live heap MiB", "start")
	for i, r := range runs {
		fmt.Fprintf(&b, "%-4d %5d %10.2f %10.1f %9.2f %9.1f %11.0f %11.1f %14.1f %8s\n", i, r.k, r.empty.cpuPct,
			float64(r.empty.rss)/(1<<20), r.full.cpuPct, float64(r.full.rss)/(1<<20), r.full.goroutines,
			r.full.stack/(1<<20), r.full.liveHeap/(1<<20), r.start.Round(time.Millisecond))
	}
	return b.String()
}

// TestIdleWorkerBenchSmoke runs the idle-worker benchmark's code once with
// three connectors and short windows, so that `go test ./bench/` keeps it
// working: the process must be found in /proc, and each connector must have
// added its task's goroutine.
func TestIdleWorkerBenchSmoke(t *testing.T) {
	r := runIdleWorker(t, 3, idleTiming{warmUp: 200 * time.Millisecond, window: 500 * time.Millisecond})
	if r.full.rss == 0 || r.empty.rss == 0 || r.full.cpuPct < 0 || r.empty.liveHeap <= 0 || r.full.liveHeap <= 0 {
		t.Fatalf("implausible figures: %+v", r)
	}
	// Read from the worker's /metrics. Idle file tasks nap between their
	// Polls with no goroutine (ADR 0027), but a task that has just started
	// may still be in its first Poll's back-off: no count is asserted.
	if r.full.goroutines <= 0 || r.empty.goroutines <= 0 {
		t.Fatalf("goroutines not read: %+v", r)
	}
	t.Log("\n" + idleWorkerTable([]idleWorkerRun{r}))
}

// The scraper of -bench.idle-scrape reads the whole exposition of a running
// worker (measureIdle fails the test if a scrape does not answer 200). The
// smoke test above runs without it: a scrape in flight adds goroutines to
// the worker, which its goroutine check counts.
func TestIdleWorkerScrapeSmoke(t *testing.T) {
	w := startIdleWorker(t)
	f := measureIdle(t, w, idleTiming{warmUp: 100 * time.Millisecond, window: 300 * time.Millisecond, scrape: 50 * time.Millisecond})
	if f.rss == 0 || f.liveHeap <= 0 {
		t.Fatalf("implausible figures: %+v", f)
	}
}
