package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/proctest"
)

// settings are read from the environment so that CI can run the same test
// longer, and a failing run can be replayed with its seed.
type settings struct {
	seed      uint64
	duration  time.Duration
	workers   int
	rate      int    // records per second of each Datagen task
	bootstrap string // external broker; empty starts `sluice broker`
	report    string
	// eos runs the workers with exactly.once.source.support=enabled and the
	// sources with exactly.once.support=required: every sequence number
	// must then reach a read_committed consumer exactly once (issue 12).
	eos bool
}

// mode names the delivery guarantee under test, for the log and verdict.
func (s settings) mode() string {
	if s.eos {
		return "exactly-once"
	}
	return "at-least-once"
}

func loadSettings(t *testing.T) settings {
	t.Helper()
	s := settings{seed: uint64(time.Now().UnixNano()), duration: 25 * time.Second, workers: 4, rate: 50,
		bootstrap: os.Getenv("SLUICE_TEST_BOOTSTRAP"), report: os.Getenv("SLUICE_CHAOS_REPORT")}
	if v := os.Getenv("SLUICE_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SLUICE_CHAOS_SEED=%q is not an unsigned integer: %v", v, err)
		}
		s.seed = n
	}
	if v := os.Getenv("SLUICE_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SLUICE_CHAOS_DURATION=%q is not a positive duration (like 25s or 3m): %v", v, err)
		}
		s.duration = d
	}
	if v := os.Getenv("SLUICE_CHAOS_WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 3 || n > 5 {
			t.Fatalf("SLUICE_CHAOS_WORKERS=%q: want 3, 4 or 5", v)
		}
		s.workers = n
	}
	if v := os.Getenv("SLUICE_CHAOS_RATE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SLUICE_CHAOS_RATE=%q: want records per second per Datagen task, at least 1", v)
		}
		s.rate = n
	}
	switch v := os.Getenv("SLUICE_CHAOS_EOS"); v {
	case "", "0", "false":
	case "1", "true":
		s.eos = true
	default:
		t.Fatalf("SLUICE_CHAOS_EOS=%q: want 1 (exactly-once sources) or 0 (at-least-once, the default)", v)
	}
	if s.report == "" {
		s.report = filepath.Join(t.TempDir(), "chaos-report.json")
	}
	return s
}

// The workload: two Datagen connectors of four tasks each, and a
// FileStream sink of two tasks reading the first connector's topic.
const (
	sourceTasks = 4
	sinkTasks   = 2
)

type worker struct {
	id, rest, bind string
	p              *proctest.Proc
	up             bool // healthy and not being stopped; guarded by chaosRun.mu
}

type chaosRun struct {
	t         *testing.T
	s         settings
	rng       *rand.Rand
	name      string // cluster name, also the prefix of the topics
	bootstrap string
	broker    *proctest.Proc // nil for an external broker
	workers   []*worker
	sources   []string // Datagen connector names
	topics    map[string]string
	sink      string
	sinkFile  string
	allProcs  []*proctest.Proc // every worker incarnation, for the log checks

	mu        sync.Mutex
	pending   []time.Time // kills whose failover has not been seen yet
	failovers []time.Duration
	lastPoll  string
	badStops  []string // graceful stops that did not exit 0
}

// fatalf fails the run naming the seed, so that any failure can be replayed.
func (c *chaosRun) fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("chaos FAIL seed=%d (replay: SLUICE_CHAOS_SEED=%d): %s", c.s.seed, c.s.seed, fmt.Sprintf(format, args...))
}

func (c *chaosRun) taskCount() int { return len(c.sources)*sourceTasks + sinkTasks }

// TestChaos is issue 5's chaos run: workers die by SIGKILL and stop by
// SIGTERM at seeded random moments while data flows; afterwards nothing may
// be missing, every task must run, and no task may have run on two workers
// in one generation.
func TestChaos(t *testing.T) {
	s := loadSettings(t)
	c := &chaosRun{t: t, s: s, rng: rand.New(rand.NewPCG(s.seed, s.seed^0x5eed))}
	fmt.Printf("chaos: mode=%s seed=%d duration=%v workers=%d rate=%d/s per task (replay with SLUICE_CHAOS_SEED=%d)\n", s.mode(), s.seed, s.duration, s.workers, s.rate, s.seed)
	t.Logf("chaos: mode=%s seed=%d duration=%v workers=%d rate=%d/s per task", s.mode(), s.seed, s.duration, s.workers, s.rate)

	c.startBroker()
	c.startWorkers()
	c.createConnectors()
	begin := time.Now()
	c.waitAllRunning("before the chaos", 3*startDeadline)
	t.Logf("all %d tasks RUNNING after %v", c.taskCount(), time.Since(begin).Round(time.Millisecond))

	ctx, stopPoll := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() { defer close(polled); c.pollFailovers(ctx) }()
	kills, stalled, graceful := c.chaos()

	// Every worker is back; the run must settle with every task RUNNING.
	settle := time.Now()
	c.waitAllRunning("after the chaos", 4*startDeadline)
	t.Logf("all tasks RUNNING %v after the last restart", time.Since(settle).Round(time.Millisecond))
	// The poller resolves the last kills' failovers on its next round.
	time.Sleep(time.Second)
	stopPoll()
	<-polled
	time.Sleep(2 * time.Second) // every task produces a little on its final worker

	// Pause the sources so that their topics stop growing and can be read
	// to the end; the sink keeps running and catches up.
	for _, name := range c.sources {
		c.put("/connectors/" + name + "/pause")
	}
	c.waitSourcesPaused()
	t.Logf("sources PAUSED %v after the last restart", time.Since(settle).Round(time.Millisecond))
	res := c.verify()
	t.Logf("verified %v after the last restart", time.Since(settle).Round(time.Millisecond))
	res.Kills, res.KillsInBrokerStall, res.GracefulRestarts = kills, stalled, graceful

	// All tasks must end RUNNING: resume the sources and wait for it.
	for _, name := range c.sources {
		c.put("/connectors/" + name + "/resume")
	}
	c.waitAllRunning("after resuming the sources", 3*startDeadline)
	c.finish(res)
}

func (c *chaosRun) startBroker() {
	if c.s.bootstrap != "" {
		// A shared external broker: a cluster name of its own keeps this
		// run's group and topics apart from other runs and suites.
		c.name = fmt.Sprintf("chaos-%d-%d", c.s.seed%1_000_000, time.Now().UnixNano()%1_000_000)
		c.bootstrap = c.s.bootstrap
		c.t.Logf("external broker %s, cluster %s", c.bootstrap, c.name)
	} else {
		c.name = "chaos"
		c.bootstrap = proctest.FreeAddr(c.t)
		b := startProc(c.t, "broker", "broker", "--addr", c.bootstrap, "--data-dir", c.t.TempDir())
		c.broker = b
		c.t.Cleanup(func() {
			if c.t.Failed() {
				c.t.Logf("--- broker stderr, last lines:\n%s", proctest.Tail(b.Stderr, 20))
			}
		})
		if b.Exited() {
			c.fatalf("broker exited at once: %s", proctest.Tail(b.Stderr, 20))
		}
	}
	deadline := time.Now().Add(startDeadline)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap))
		if err == nil {
			pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err = cl.Ping(pctx)
			cancel()
			cl.Close()
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.fatalf("broker %s not reachable within %v: %v", c.bootstrap, startDeadline, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *chaosRun) startWorkers() {
	for i := range c.s.workers {
		c.workers = append(c.workers, &worker{id: fmt.Sprintf("w%d", i+1), rest: proctest.FreeAddr(c.t), bind: proctest.FreeAddr(c.t)})
	}
	// Started together: each waits for its group in parallel, not in turn.
	for _, w := range c.workers {
		c.launch(w)
	}
	for _, w := range c.workers {
		c.waitHealthy(w)
	}
	c.t.Cleanup(func() {
		if !c.t.Failed() {
			return
		}
		// SLUICE_CHAOS_LOGS keeps every incarnation's whole log for the
		// post-mortem; the test's own directory goes with the test.
		keep := os.Getenv("SLUICE_CHAOS_LOGS")
		for _, p := range c.allProcs {
			c.t.Logf("--- %s (pid %d) stderr, last lines:\n%s", p.Name, p.Pid(), proctest.Tail(p.Stderr, 25))
			if keep == "" {
				continue
			}
			b, err := os.ReadFile(p.Stderr)
			if err == nil {
				err = os.WriteFile(filepath.Join(keep, fmt.Sprintf("%s-%d.log", p.Name, p.Pid())), b, 0o644)
			}
			if err != nil {
				c.t.Logf("SLUICE_CHAOS_LOGS: %v", err)
			}
		}
	})
}

// launch starts an incarnation of w with its fixed id and ports, told every
// other worker's gossip address.
func (c *chaosRun) launch(w *worker) {
	args := []string{"worker", "--cluster", c.name, "--bootstrap", c.bootstrap, "--rest-addr", w.rest,
		"--worker-id", w.id, "--bind", w.bind, "--session-timeout", "6s", "--offset-flush-interval-ms", "200"}
	var join []string
	for _, o := range c.workers {
		if o != w {
			join = append(join, o.bind)
		}
	}
	args = append(args, "--join", strings.Join(join, ","))
	if c.s.eos {
		args = append(args, "--prop", "exactly.once.source.support=enabled")
	}
	w.p = startProc(c.t, "worker-"+w.id, args...)
	c.allProcs = append(c.allProcs, w.p)
}

func (c *chaosRun) waitHealthy(w *worker) {
	c.t.Helper()
	err := proctest.WaitHealthy(httpClient, w.rest, startDeadline, 100*time.Millisecond, func() {
		if w.p.Exited() {
			c.fatalf("worker %s exited while starting (%v); stderr tail:\n%s", w.id, w.p.Cmd.ProcessState, proctest.Tail(w.p.Stderr, 30))
		}
	})
	if err != nil {
		c.fatalf("worker %s: %v", w.id, err)
	}
	c.mu.Lock()
	w.up = true
	c.mu.Unlock()
}

// live returns the REST address of a worker that is up, and the set of
// worker ids that are up.
func (c *chaosRun) live() (string, map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	up := map[string]bool{}
	rest := ""
	for _, w := range c.workers {
		if w.up {
			up[w.id] = true
			if rest == "" {
				rest = w.rest
			}
		}
	}
	return rest, up
}

func (c *chaosRun) post(path string, body any) {
	c.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	rest, _ := c.live()
	code, resp, err := send("POST", "http://"+rest+path, string(b))
	if err != nil || code != http.StatusCreated {
		c.fatalf("POST %s: %d %s %v", path, code, resp, err)
	}
}

// put retries on transport errors and 5xx: the worker asked may be the one
// forwarding to a leader that is still settling.
func (c *chaosRun) put(path string) {
	c.t.Helper()
	deadline := time.Now().Add(startDeadline)
	for {
		rest, _ := c.live()
		code, resp, err := send("PUT", "http://"+rest+path, "")
		if err == nil && code == http.StatusAccepted {
			return
		}
		if time.Now().After(deadline) || (err == nil && code < 500) {
			c.fatalf("PUT %s: %d %s %v", path, code, resp, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (c *chaosRun) createConnectors() {
	c.topics = map[string]string{}
	c.sink = c.name + "-sink"
	c.sinkFile = filepath.Join(c.t.TempDir(), "sink.txt")
	for _, suffix := range []string{"a", "b"} {
		name := c.name + "-gen-" + suffix
		c.sources = append(c.sources, name)
		c.topics[name] = c.name + "-" + suffix
	}
	// The sink first: it reads its topic from the start either way, and it
	// then consumes while the sources produce, through every kill.
	sink := map[string]string{
		"connector.class": "FileStreamSink", "file": c.sinkFile, "topics": c.topics[c.sources[0]],
		"tasks.max": strconv.Itoa(sinkTasks),
		// The value's JSON text as one line per record, parsed back with
		// datagen.ParseValue.
		"value.converter": "org.apache.kafka.connect.storage.StringConverter",
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
	}
	if c.s.eos {
		// Sinks stay at-least-once, as in Connect; reading committed
		// records only keeps aborted transactions out of the file.
		sink["consumer.override.isolation.level"] = "read_committed"
	}
	c.post("/connectors", map[string]any{"name": c.sink, "config": sink})
	for i, name := range c.sources {
		cfg := map[string]string{
			"connector.class": "Datagen", "topic": c.topics[name], "tasks.max": strconv.Itoa(sourceTasks),
			"records.per.second":             strconv.Itoa(c.s.rate),
			"key.converter":                  "org.apache.kafka.connect.storage.StringConverter",
			"value.converter.schemas.enable": "false",
		}
		if c.s.eos {
			cfg["exactly.once.support"] = "required"
			// Both ways of ending a transaction that matter under kills:
			// a timer the worker keeps, and boundaries the connector draws.
			if i == 0 {
				cfg["transaction.boundary"] = "interval"
				cfg["transaction.boundary.interval.ms"] = "100"
			} else {
				cfg["transaction.boundary"] = "connector"
				cfg["transaction.size"] = "7"
			}
		}
		c.post("/connectors", map[string]any{"name": name, "config": cfg})
	}
}

type taskStatus struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace"`
}

type connStatus struct {
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	} `json:"connector"`
	Tasks []taskStatus `json:"tasks"`
}

// statuses reads every connector's status from one live worker.
func (c *chaosRun) statuses() (map[string]connStatus, string, error) {
	rest, _ := c.live()
	if rest == "" {
		return nil, "", fmt.Errorf("no worker up")
	}
	code, body, err := send("GET", "http://"+rest+"/connectors?expand=status", "")
	if err != nil {
		return nil, "", err
	}
	if code != http.StatusOK {
		return nil, string(body), fmt.Errorf("GET /connectors?expand=status: %d", code)
	}
	var raw map[string]struct {
		Status connStatus `json:"status"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, string(body), err
	}
	out := map[string]connStatus{}
	for k, v := range raw {
		out[k] = v.Status
	}
	return out, string(body), nil
}

// settled reports whether every connector and all of its tasks are in want
// on workers that are up now.
func (c *chaosRun) settled(st map[string]connStatus, up map[string]bool, want func(conn string) string) bool {
	for _, name := range append(slices.Clone(c.sources), c.sink) {
		cs, ok := st[name]
		n := sourceTasks
		if name == c.sink {
			n = sinkTasks
		}
		if !ok || cs.Connector.State != want(name) || !up[cs.Connector.WorkerID] || len(cs.Tasks) != n {
			return false
		}
		for _, task := range cs.Tasks {
			if task.State != want(name) || !up[task.WorkerID] {
				return false
			}
		}
	}
	return true
}

func running(string) string { return "RUNNING" }

func (c *chaosRun) waitAllRunning(what string, timeout time.Duration) {
	c.t.Helper()
	c.waitStates(what, timeout, running)
}

func (c *chaosRun) waitSourcesPaused() {
	c.t.Helper()
	c.waitStates("sources paused", 2*startDeadline, func(conn string) string {
		if conn == c.sink {
			return "RUNNING"
		}
		return "PAUSED"
	})
}

func (c *chaosRun) waitStates(what string, timeout time.Duration, want func(string) string) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		_, up := c.live()
		st, body, err := c.statuses()
		if err == nil && c.settled(st, up, want) {
			return
		}
		if err != nil {
			last = fmt.Sprintf("%v %s", err, body)
		} else {
			last = body
		}
		time.Sleep(250 * time.Millisecond)
	}
	c.fatalf("%s: tasks not in their wanted state on live workers within %v; last status: %s", what, timeout, last)
}

// pollFailovers measures failover: the time from a kill until every task
// is RUNNING again on workers that are up, as the status API shows it.
func (c *chaosRun) pollFailovers(ctx context.Context) {
	for ctx.Err() == nil {
		_, up := c.live()
		st, body, err := c.statuses()
		now := time.Now()
		c.mu.Lock()
		if err == nil && c.settled(st, up, running) {
			for _, k := range c.pending {
				c.failovers = append(c.failovers, now.Sub(k))
			}
			c.pending = nil
		}
		c.lastPoll = body
		c.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// chaos runs the seeded schedule for the set duration: at random moments a
// random live worker is killed (SIGKILL, three times in four) or stopped
// (SIGTERM), and started again with the same id and ports after a short
// random delay. At least one worker is always up. It returns once every
// worker runs again.
//
// Half of the kills (when the broker is ours to signal) land while the
// broker is frozen with SIGSTOP. On loopback an ack takes about a
// millisecond, so a worker killed at a random moment almost never has
// records produced but unacknowledged whose offsets were already stored;
// while the broker stalls, the records of a whole flush interval wait for
// their acks, and a source that commits offsets before the ack (breaking
// invariant 1) loses them. Correct code commits nothing during the stall.
func (c *chaosRun) chaos() (kills, stalled, graceful int) {
	c.t.Helper()
	type restart struct {
		w  *worker
		at time.Time
	}
	var restarts []restart
	end := time.Now().Add(c.s.duration)
	next := time.Now().Add(between(c.rng, time.Second, 3*time.Second))
	for {
		now := time.Now()
		if now.After(end) && len(restarts) == 0 {
			return kills, stalled, graceful
		}
		wake := next
		if now.After(end) {
			wake = restarts[0].at
		} else if len(restarts) > 0 && restarts[0].at.Before(wake) {
			wake = restarts[0].at
		}
		time.Sleep(time.Until(wake))
		now = time.Now()

		for len(restarts) > 0 && !restarts[0].at.After(now) {
			w := restarts[0].w
			restarts = restarts[1:]
			if err := proctest.PortsFree(w.rest, w.bind); err != nil {
				c.fatalf("restart of %s: %v", w.id, err)
			}
			c.launch(w)
			c.waitHealthy(w)
			c.t.Logf("%6.1fs restarted %s (pid %d)", c.s.duration.Seconds()-time.Until(end).Seconds(), w.id, w.p.Pid())
		}
		if now.Before(next) || now.After(end) {
			continue
		}
		next = now.Add(between(c.rng, 1500*time.Millisecond, 5*time.Second))

		_, up := c.live()
		if len(up) < 2 {
			continue // the last live worker is never stopped
		}
		var candidates []*worker
		for _, w := range c.workers {
			if up[w.id] {
				candidates = append(candidates, w)
			}
		}
		w := candidates[c.rng.IntN(len(candidates))]
		kill := c.rng.IntN(4) != 0
		delay := between(c.rng, 300*time.Millisecond, 4*time.Second)
		c.mu.Lock()
		w.up = false
		c.mu.Unlock()
		at := c.s.duration.Seconds() - time.Until(end).Seconds()
		if kill {
			c.mu.Lock()
			c.pending = append(c.pending, time.Now())
			c.mu.Unlock()
			how := ""
			if c.broker != nil && c.rng.IntN(2) == 0 {
				// Longer than the 200 ms flush interval, so that a flush
				// runs while acks are held back; far shorter than the 6 s
				// session timeout, so that the stall alone moves no work.
				stall := between(c.rng, 300*time.Millisecond, 900*time.Millisecond)
				if err := c.broker.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
					c.fatalf("SIGSTOP broker: %v", err)
				}
				time.Sleep(stall)
				how = fmt.Sprintf(" after the broker stalled %v", stall.Round(time.Millisecond))
				stalled++
			}
			err := w.p.Signal(syscall.SIGKILL)
			if how != "" {
				if cerr := c.broker.Cmd.Process.Signal(syscall.SIGCONT); cerr != nil {
					c.fatalf("SIGCONT broker: %v", cerr)
				}
			}
			if err != nil {
				c.fatalf("%v", err)
			}
			kills++
			c.t.Logf("%6.1fs SIGKILL %s (pid %d)%s, back in %v", at, w.id, w.p.Pid(), how, delay.Round(time.Millisecond))
		} else {
			if err := w.p.Signal(syscall.SIGTERM); err != nil {
				c.fatalf("%v", err)
			}
			// A graceful stop must exit 0. A failure is recorded and the
			// run goes on, so that the data is still verified and the
			// report still written; the test fails at the end.
			if code := w.p.Cmd.ProcessState.ExitCode(); code != 0 {
				c.mu.Lock()
				c.badStops = append(c.badStops, fmt.Sprintf("worker %s (pid %d) exited %d on SIGTERM, want 0; stderr tail:\n%s",
					w.id, w.p.Pid(), code, proctest.Tail(w.p.Stderr, 25)))
				c.mu.Unlock()
				c.t.Logf("%6.1fs worker %s exited %d on SIGTERM (want 0); see the problems at the end", at, w.id, code)
			}
			graceful++
			c.t.Logf("%6.1fs SIGTERM %s (pid %d), back in %v", at, w.id, w.p.Pid(), delay.Round(time.Millisecond))
		}
		restarts = append(restarts, restart{w: w, at: time.Now().Add(delay)})
		sort.Slice(restarts, func(i, j int) bool { return restarts[i].at.Before(restarts[j].at) })
	}
}

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}
