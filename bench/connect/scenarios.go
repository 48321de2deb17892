package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-io/sluice/bench/internal/benchproc"
)

// harness holds what every scenario shares.
type harness struct {
	opts    options
	ctx     context.Context
	broker  *broker
	launch  *launcher
	res     *results
	workers map[string]*worker // the long-lived worker of each system for the throughput scenarios
	warm    *dataset
	data    *dataset
	empty   string // an empty file: the idle connectors' input
	log     func(format string, args ...any)
}

// order is the systems in round r's order: it flips every round, so that
// neither system always runs on a machine the other has just warmed (page
// cache, broker's heap) or left busy (garbage, compaction).
func (h *harness) order(r int) []string {
	out := slices.Clone(h.opts.systems)
	if r%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// throughputScenario is one of the three record-moving scenarios.
type throughputScenario struct {
	key string
	run func(h *harness, w *worker, d *dataset, tag string) (measured, error)
}

// measured is one throughput run: its records, the time from the first
// POST until the last record was seen, and the worker's CPU seconds over
// that same span (not over the connector's deletion after it).
type measured struct {
	records int
	elapsed time.Duration
	cpu     float64
}

// measure reads the worker's CPU and the clock, calls begin (the POSTs
// that create the connectors), waits for the run's end with done, and
// reads the CPU again at once.
func measure(w *worker, records int, begin func() error, done func() (time.Time, error)) (measured, error) {
	cpu, err := startCPU(w.proc.Pid())
	if err != nil {
		return measured{}, err
	}
	start := time.Now()
	if err := begin(); err != nil {
		return measured{}, err
	}
	end, err := done()
	if err != nil {
		return measured{}, err
	}
	secs, err := cpu.seconds()
	if err != nil {
		return measured{}, err
	}
	return measured{records: records, elapsed: end.Sub(start), cpu: secs}, nil
}

var throughputScenarios = []throughputScenario{
	{"source", (*harness).runSource},
	{"sink", (*harness).runSink},
	{"parallel", (*harness).runParallel},
}

// runThroughput starts one worker per system, runs a warm-up pass of each
// scenario on each (not recorded), then the measured rounds. With the
// warm-up on, a measured round that follows the other system's run comes
// after a primer: the same scenario on the same system, at full size, not
// recorded. Without it, each system's first round after the other's was
// two to three times slower than its next one, on both systems (Sluice's
// FileStreamSource 2.2-2.8 s against 0.7-1.1 s, Connect's 6-10 s against
// 4.1-4.4 s), so that a median of rounds in the flipping order mixed the
// two kinds and the ratio moved with the order (bench/README, "the round
// after the other system's"). A primer of a tenth of the records did not
// remove it.
func (h *harness) runThroughput(which []throughputScenario) error {
	h.workers = map[string]*worker{}
	defer func() {
		for _, w := range h.workers {
			w.proc.Stop(60 * time.Second)
		}
	}()
	for _, sys := range h.opts.systems {
		w, _, err := h.launch.startHealthy(sys, "bench-"+strings.ToLower(sys), "main-"+strings.ToLower(sys), nil, "")
		if err != nil {
			return err
		}
		h.workers[sys] = w
	}
	for _, sc := range which {
		if h.opts.warmup {
			for _, sys := range h.opts.systems {
				m, err := sc.run(h, h.workers[sys], h.warm, "warm")
				if err != nil {
					return fmt.Errorf("%s warm-up on %s: %w", sc.key, sys, err)
				}
				h.log("%-8s %-7s warm-up: %d records in %v (not recorded)", sc.key, sys, m.records, m.elapsed.Round(time.Millisecond))
			}
		}
		last := ""
		if h.opts.warmup {
			last = h.opts.systems[len(h.opts.systems)-1]
		}
		for r := range h.opts.rounds {
			for _, sys := range h.order(r) {
				if last != "" && last != sys {
					h.settle()
					m, err := sc.run(h, h.workers[sys], h.data, fmt.Sprintf("primer%d", r))
					if err != nil {
						return fmt.Errorf("%s primer of round %d on %s: %w", sc.key, r+1, sys, err)
					}
					h.log("%-8s %-7s primer: %d records in %v (not recorded)", sc.key, sys, m.records, m.elapsed.Round(time.Millisecond))
				}
				last = sys
				h.settle()
				m, err := sc.run(h, h.workers[sys], h.data, fmt.Sprint(r))
				if err != nil {
					return fmt.Errorf("%s round %d on %s: %w", sc.key, r+1, sys, err)
				}
				rps := float64(m.records) / m.elapsed.Seconds()
				h.res.add(sc.key+"-rps", sys, rps)
				h.res.add(sc.key+"-cpu", sys, m.cpu/(float64(m.records)/1e6))
				h.log("%-8s %-7s round %d: %d records in %v = %.0f records/s, %.2f CPU s", sc.key, sys, r+1, m.records, m.elapsed.Round(time.Millisecond), rps, m.cpu)
			}
		}
	}
	return nil
}

// settle readies the machine for a measured round, untimed. It writes out
// the page cache's dirty pages (sync(2)), so that the kernel's writeback of
// what came before (the input files, the sink's input topic, the last
// rounds' data) does not fall in the round: on this VM the broker's writes
// were three to five times slower while writeback ran. Then it waits until
// the broker and the workers together use less than a tenth of a core over
// half a second (at most 20 s), so that a round does not share the two
// cores with what the previous one left behind: a JVM collecting and
// compiling after its round, the broker removing the last round's files
// (bench/README, "two speeds").
func (h *harness) settle() {
	syscall.Sync()
	pids := []int{}
	if pid, err := h.broker.pid(); err == nil {
		pids = append(pids, pid)
	}
	for _, w := range h.workers {
		pids = append(pids, w.proc.Pid())
	}
	ticks := func() int64 {
		var n int64
		for _, pid := range pids {
			t, _ := benchproc.CPUTicks(pid)
			n += t
		}
		return n
	}
	const window = 500 * time.Millisecond
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		before := ticks()
		time.Sleep(window)
		if float64(ticks()-before)/benchproc.ClockTicks < 0.1*window.Seconds() {
			return
		}
	}
	h.log("the broker and the workers were still busy 20 s after the last round; measuring anyway")
}

// topicName is a run's own topic: fresh, so that its end offsets count
// exactly the run's records.
func topicName(scenario, system, tag string) string {
	return strings.ToLower(fmt.Sprintf("bench-%s-%s-%s", scenario, system, tag))
}

// connectorName is unique per system as well as per run: a sink
// connector's consumer group is connect-<name> on both systems, and the
// two share the broker, so equal names would share committed offsets.
func connectorName(scenario, system, tag string) string {
	return strings.ToLower(fmt.Sprintf("%s-%s-%s", scenario, system, tag))
}

// runSource: one FileStreamSource connector reads the whole file into a
// fresh topic. Timed from the POST that creates it until the topic holds
// every line.
func (h *harness) runSource(w *worker, d *dataset, tag string) (measured, error) {
	topic := topicName("source", w.system, tag)
	if err := h.broker.CreateTopic(h.ctx, topic, 1); err != nil {
		return measured{}, err
	}
	name := connectorName("source", w.system, tag)
	m, err := measure(w, d.lines,
		func() error { return w.createConnector(name, fileSourceConfig(d.file, topic), time.Minute) },
		func() (time.Time, error) {
			return h.broker.waitRecords(h.ctx, topic, int64(d.lines), h.opts.runTimeout, w.alive)
		})
	if err != nil {
		return measured{}, err
	}
	if err := w.deleteConnector(name, time.Minute); err != nil {
		return measured{}, err
	}
	return m, h.broker.deleteTopic(h.ctx, topic)
}

// runParallel: one FileStreamSource connector per part file (Connect's
// FileStreamSource runs one task whatever tasks.max says, so four
// connectors are four tasks), all into one topic with a partition each.
func (h *harness) runParallel(w *worker, d *dataset, tag string) (measured, error) {
	topic := topicName("parallel", w.system, tag)
	if err := h.broker.CreateTopic(h.ctx, topic, int32(len(d.parts))); err != nil {
		return measured{}, err
	}
	total := d.partLines * len(d.parts)
	var names []string
	m, err := measure(w, total,
		func() error {
			for i, part := range d.parts {
				name := connectorName("parallel", w.system, fmt.Sprintf("%s-%d", tag, i))
				if err := w.createConnector(name, fileSourceConfig(part, topic), time.Minute); err != nil {
					return err
				}
				names = append(names, name)
			}
			return nil
		},
		func() (time.Time, error) {
			return h.broker.waitRecords(h.ctx, topic, int64(total), h.opts.runTimeout, w.alive)
		})
	if err != nil {
		return measured{}, err
	}
	for _, name := range names {
		if err := w.deleteConnector(name, time.Minute); err != nil {
			return measured{}, err
		}
	}
	return m, h.broker.deleteTopic(h.ctx, topic)
}

// runSink: one FileStreamSink connector (a new name, so a new consumer
// group reading from the earliest offset) writes the input topic to a
// file. Timed from the POST until the file has every line; the file must
// then equal the source file byte for byte.
func (h *harness) runSink(w *worker, d *dataset, tag string) (measured, error) {
	dir := filepath.Join(h.launch.runDir, "out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return measured{}, err
	}
	out := filepath.Join(dir, fmt.Sprintf("sink-%s-%s.txt", strings.ToLower(w.system), tag))
	name := connectorName("sink", w.system, tag)
	m, err := measure(w, d.lines,
		func() error { return w.createConnector(name, fileSinkConfig(out, d.sinkTopic), time.Minute) },
		func() (time.Time, error) { return waitFileSize(out, d.size, h.opts.runTimeout, w.alive) })
	if err != nil {
		return measured{}, err
	}
	if err := w.deleteConnector(name, time.Minute); err != nil {
		return measured{}, err
	}
	same, err := sameFile(out, d.file)
	if err != nil {
		return measured{}, err
	}
	if !same {
		return measured{}, fmt.Errorf("%s wrote %s, which differs from the input %s", w.proc.Name, out, d.file)
	}
	return m, os.Remove(out)
}

// waitFileSize polls a file every 20 ms until it is size bytes long.
func waitFileSize(path string, size int64, timeout time.Duration, alive func() error) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	var last int64
	for time.Now().Before(deadline) {
		if err := alive(); err != nil {
			return time.Time{}, err
		}
		st, err := os.Stat(path)
		seen := time.Now()
		if err == nil {
			last = st.Size()
			if last == size {
				return seen, nil
			}
			if last > size {
				return time.Time{}, fmt.Errorf("%s is %d bytes, more than the %d of the input", path, last, size)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return time.Time{}, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("%s is %d of %d bytes after %v", path, last, size, timeout)
}

// runIdle starts a fresh worker of each system per round (its own group
// and internal topics, created at its start as on a first deployment),
// times exec -> GET /health 200, then measures RSS and CPU with 0 and
// with each count of idle FileStreamSource connectors (tailing an empty
// file), created through REST.
func (h *harness) runIdle() error {
	if err := h.broker.CreateTopic(h.ctx, "bench-idle", 1); err != nil {
		return err
	}
	for r := range h.opts.rounds {
		for _, sys := range h.order(r) {
			if err := h.idleRound(sys, r); err != nil {
				return fmt.Errorf("idle round %d on %s: %w", r+1, sys, err)
			}
		}
	}
	return nil
}

func (h *harness) idleRound(sys string, r int) error {
	group := strings.ToLower(fmt.Sprintf("idle-%s-%d", sys, r))
	w, up, err := h.launch.startHealthy(sys, group, group, nil, "")
	if err != nil {
		return err
	}
	defer w.proc.Stop(60 * time.Second)
	startSecs := up.Sub(w.proc.Started).Seconds()
	h.res.add("start", sys, startSecs)
	h.log("start    %-7s round %d: exec -> GET /health 200 in %.2f s", sys, r+1, startSecs)
	var names []string
	for _, count := range append([]int{0}, h.opts.idle...) {
		for i := len(names); i < count; i++ {
			name := fmt.Sprintf("idle-%d", i)
			if err := w.createConnector(name, fileSourceConfig(h.empty, "bench-idle"), 2*time.Minute); err != nil {
				return err
			}
			names = append(names, name)
		}
		if _, _, err := w.waitRunning(names, nil, 10*time.Minute, time.Second); err != nil {
			return err
		}
		rss, cpu, err := h.measureIdle(w)
		if err != nil {
			return err
		}
		h.res.add(fmt.Sprintf("idle-rss-%d", count), sys, rss)
		h.res.add(fmt.Sprintf("idle-cpu-%d", count), sys, cpu)
		h.log("idle     %-7s round %d: %d connectors: RSS %.0f MiB, CPU %.2f%%", sys, r+1, count, rss, cpu)
	}
	return nil
}

// measureIdle waits the settle period, then over the window samples RSS
// each second (returned as the mean, MiB) and the CPU used (returned as a
// percentage of one core).
func (h *harness) measureIdle(w *worker) (rssMiB, cpuPct float64, err error) {
	if err := sleepAlive(h.opts.settle, w.alive); err != nil {
		return 0, 0, err
	}
	cpu, err := startCPU(w.proc.Pid())
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	var sum float64
	var n int
	for time.Since(start) < h.opts.window {
		rss, err := benchproc.RSSBytes(w.proc.Pid())
		if err != nil {
			return 0, 0, err
		}
		sum += float64(rss) / (1 << 20)
		n++
		if err := sleepAlive(time.Second, w.alive); err != nil {
			return 0, 0, err
		}
	}
	secs, err := cpu.seconds()
	if err != nil {
		return 0, 0, err
	}
	return sum / float64(n), 100 * secs / time.Since(start).Seconds(), nil
}

func sleepAlive(d time.Duration, alive func() error) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := alive(); err != nil {
			return err
		}
		time.Sleep(min(time.Until(deadline), 200*time.Millisecond))
	}
	return alive()
}

// failoverVariant is one way a 3-worker cluster is run for the failover
// scenario.
type failoverVariant struct {
	key    string // the figure it adds to
	system string
	extra  map[string]string
	rounds int
}

func (h *harness) failoverVariants() []failoverVariant {
	vs := []failoverVariant{
		{"failover-delay0", connectName, map[string]string{"scheduled.rebalance.max.delay.ms": "0"}, h.opts.rounds},
		// Sluice has one behaviour, the one scheduled.rebalance.max.delay.ms=0
		// asks for (it refuses other values): its runs fill both rows.
		{"failover-sluice", sluiceName, nil, h.opts.rounds},
	}
	if h.opts.failoverDefaultRounds > 0 {
		vs = append(vs, failoverVariant{"failover-defaults", connectName, nil, h.opts.failoverDefaultRounds})
	}
	return slices.DeleteFunc(vs, func(v failoverVariant) bool { return !slices.Contains(h.opts.systems, v.system) })
}

// runFailover: per round and variant, a fresh cluster of three workers
// with idle FileStreamSource connectors (one task each); once every task
// runs, the worker with the most tasks other than the group's leader is
// killed with SIGKILL, and the leader's status is read every 50 ms until
// every task is RUNNING on a survivor.
func (h *harness) runFailover() error {
	vs := h.failoverVariants()
	rounds := 0
	for _, v := range vs {
		rounds = max(rounds, v.rounds)
	}
	for r := range rounds {
		round := slices.Clone(vs)
		if r%2 == 1 {
			slices.Reverse(round)
		}
		for _, v := range round {
			if r >= v.rounds {
				continue
			}
			secs, err := h.failoverRound(v, r)
			if err != nil {
				return fmt.Errorf("failover round %d, %s: %w", r+1, v.key, err)
			}
			if v.key == "failover-sluice" {
				h.res.add("failover-delay0", sluiceName, secs)
				if h.opts.failoverDefaultRounds > 0 && r < h.opts.failoverDefaultRounds {
					h.res.add("failover-defaults", sluiceName, secs)
				}
			} else {
				h.res.add(v.key, v.system, secs)
			}
			h.log("failover %-7s round %d (%s): kill -9 -> all tasks RUNNING on survivors in %.2f s", v.system, r+1, v.key, secs)
		}
	}
	return nil
}

func (h *harness) failoverRound(v failoverVariant, r int) (float64, error) {
	group := fmt.Sprintf("%s-%d", v.key, r)
	var ws []*worker
	defer func() {
		for _, w := range ws {
			w.proc.Stop(60 * time.Second)
		}
	}()
	join := ""
	for i := range 3 {
		w, _, err := h.launch.startHealthy(v.system, group, fmt.Sprintf("%s-w%d", group, i), v.extra, join)
		if err != nil {
			return 0, err
		}
		ws = append(ws, w)
		if i == 0 {
			join = w.bind
		}
	}
	var names []string
	for i := range h.opts.failoverConnectors {
		name := fmt.Sprintf("fo-%d", i)
		if err := ws[0].createConnector(name, fileSourceConfig(h.empty, "bench-idle"), 2*time.Minute); err != nil {
			return 0, err
		}
		names = append(names, name)
	}
	// Wait until the tasks are spread over all three workers, so that the
	// victim's share is a third of them, as in a balanced cluster.
	spread := func(place map[string]string) bool {
		seen := map[string]bool{}
		for _, id := range place {
			seen[id] = true
		}
		return len(seen) == len(ws)
	}
	deadline := time.Now().Add(3 * time.Minute)
	var place map[string]string
	for {
		var err error
		_, place, err = ws[0].waitRunning(names, nil, 3*time.Minute, 200*time.Millisecond)
		if err != nil {
			return 0, err
		}
		if spread(place) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The victim is not the group's leader. A new leader starts without
	// the previous assignment, so Connect reassigns a dead leader's tasks
	// at once whatever scheduled.rebalance.max.delay.ms says; the delay,
	// Connect's default behaviour, applies to the other workers, two in
	// three here.
	leader, err := groupLeader(ws[0])
	if err != nil {
		return 0, err
	}
	perWorker := map[string]int{}
	for _, id := range place {
		perWorker[id]++
	}
	var victim, survivor *worker
	for _, w := range ws {
		if w.id == leader {
			survivor = w
		} else if victim == nil || perWorker[w.id] >= perWorker[victim.id] {
			victim = w
		}
	}
	if survivor == nil || victim == nil {
		return 0, fmt.Errorf("the group's leader %s is none of the workers %s, %s, %s", leader, ws[0].id, ws[1].id, ws[2].id)
	}
	if perWorker[victim.id] == 0 {
		return 0, fmt.Errorf("no task runs on %s, the non-leader with the most tasks: placement %v", victim.id, place)
	}
	killed, err := victim.proc.Kill()
	if err != nil {
		return 0, err
	}
	timeout := 2 * time.Minute
	if v.key == "failover-defaults" {
		timeout = 10 * time.Minute // Connect waits scheduled.rebalance.max.delay.ms, 5 minutes
	}
	done, _, err := survivor.waitRunning(names, func(id string) bool { return id != victim.id }, timeout, 50*time.Millisecond)
	if err != nil {
		return 0, err
	}
	return done.Sub(killed).Seconds(), nil
}

// leaderLine finds the group's leader in a worker's log: Connect logs
// each assignment with leaderUrl='http://host:port/', Sluice with
// "leader_worker":"host:port"; both are the leader's worker id.
var leaderLine = regexp.MustCompile(`leaderUrl='http://([^/']+)/'|"leader_worker":"([^"]+)"`)

// groupLeader is the leader of w's group as w last logged it.
func groupLeader(w *worker) (string, error) {
	b, err := os.ReadFile(w.proc.LogPath)
	if err != nil {
		return "", err
	}
	all := leaderLine.FindAllSubmatch(b, -1)
	if len(all) == 0 {
		return "", fmt.Errorf("%s: no leaderUrl= or leader_worker in its log %s: cannot tell the group's leader", w.proc.Name, w.proc.LogPath)
	}
	last := all[len(all)-1]
	return string(last[1]) + string(last[2]), nil
}
