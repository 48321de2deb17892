package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/internal/kafkatest"
)

// topicReport is what one Datagen topic held at the end.
type topicReport struct {
	Records    int    `json:"records"`
	Distinct   int    `json:"distinct"`
	Duplicates int    `json:"duplicates"`
	Gaps       int    `json:"gaps"` // missing sequence numbers below each task's highest
	Missing    string `json:"missing,omitempty"`
	// Uncommitted counts, in the exactly-once mode, the records only a
	// read_uncommitted consumer sees: those of aborted transactions.
	Uncommitted int `json:"uncommitted_records"`
}

// sinkReport compares the sink's file with its topic.
type sinkReport struct {
	Topic      string `json:"topic"`
	Lines      int    `json:"lines"`
	Distinct   int    `json:"distinct"`
	Duplicates int    `json:"duplicates"`
	Torn       int    `json:"torn_lines"`
	Missing    int    `json:"missing"` // records of the topic not in the file
	MissingSeq string `json:"missing_seq,omitempty"`
}

type report struct {
	Mode               string                 `json:"mode"`
	Seed               uint64                 `json:"seed"`
	Duration           string                 `json:"duration"`
	Workers            int                    `json:"workers"`
	Broker             string                 `json:"broker"`
	Kills              int                    `json:"kills"`
	KillsInBrokerStall int                    `json:"kills_in_broker_stall"`
	GracefulRestarts   int                    `json:"graceful_restarts"`
	BadGracefulStops   int                    `json:"graceful_stops_not_exit_0"`
	Records            int                    `json:"records"`
	Gaps               int                    `json:"gaps"`
	Duplicates         int                    `json:"duplicates"`      // in the sources' topics
	SinkDuplicates     int                    `json:"sink_duplicates"` // lines the at-least-once sink wrote twice
	Uncommitted        int                    `json:"uncommitted_records"`
	Topics             map[string]topicReport `json:"topics"`
	Sink               sinkReport             `json:"sink"`
	Failovers          []string               `json:"failovers"`
	SlowestFailover    string                 `json:"slowest_failover"`
	Generations        int                    `json:"generations_seen"`
	Problems           []string               `json:"problems,omitempty"`
	Verdict            string                 `json:"verdict"`
}

type seqKey struct {
	task int
	seq  int64
}

// verify reads the paused sources' topics to their ends, waits for the sink
// to write all of its topic, and checks the logs and the status topic.
func (c *chaosRun) verify() *report {
	c.t.Helper()
	res := &report{Mode: c.s.mode(), Seed: c.s.seed, Duration: c.s.duration.String(), Workers: c.s.workers,
		Broker: "sluice broker", Topics: map[string]topicReport{}}
	if c.s.bootstrap != "" {
		res.Broker = c.s.bootstrap
	}
	sinkTopic := c.topics[c.sources[0]]
	var sinkWant map[seqKey]bool
	for _, name := range c.sources {
		topic := c.topics[name]
		recs, uncommitted := c.readTopic(topic)
		counts := map[seqKey]int{}
		where := map[seqKey][]*kgo.Record{}
		for _, r := range recs {
			task, seq, err := datagen.ParseValue(r.Value)
			if err != nil || task < 0 || task >= sourceTasks {
				res.Problems = append(res.Problems, fmt.Sprintf("topic %s: a record that is not a Datagen value of tasks 0-%d: %q (%v)", topic, sourceTasks-1, r.Value, err))
				continue
			}
			k := seqKey{task, seq}
			counts[k]++
			where[k] = append(where[k], r)
		}
		tr := topicReport{Records: len(recs), Distinct: len(counts), Duplicates: len(recs) - len(counts), Uncommitted: uncommitted}
		var missing []string
		for task := range sourceTasks {
			top := int64(-1)
			for k := range counts {
				if k.task == task && k.seq > top {
					top = k.seq
				}
			}
			if top < 0 {
				res.Problems = append(res.Problems, fmt.Sprintf("topic %s: task %d produced nothing", topic, task))
				continue
			}
			var gaps []int64
			for s := int64(0); s < top; s++ {
				if counts[seqKey{task, s}] == 0 {
					gaps = append(gaps, s)
				}
			}
			if len(gaps) > 0 {
				tr.Gaps += len(gaps)
				missing = append(missing, fmt.Sprintf("task %d seq %s (%d of 0-%d)", task, ranges(gaps), len(gaps), top))
			}
		}
		if len(missing) > 0 {
			tr.Missing = strings.Join(missing, "; ")
			res.Problems = append(res.Problems, fmt.Sprintf("connector %s lost records: topic %s is missing %s", name, topic, tr.Missing))
		}
		res.Topics[topic] = tr
		res.Records += tr.Records
		res.Gaps += tr.Gaps
		res.Duplicates += tr.Duplicates
		res.Uncommitted += tr.Uncommitted
		if c.s.eos && tr.Duplicates > 0 {
			res.Problems = append(res.Problems, fmt.Sprintf("connector %s is exactly-once, but a read_committed consumer of %s sees %d records twice: %s",
				name, topic, tr.Duplicates, describeDuplicates(where)))
		}
		if topic == sinkTopic {
			sinkWant = map[seqKey]bool{}
			for k := range counts {
				sinkWant[k] = true
			}
		}
	}
	c.t.Logf("topics read: %d records", res.Records)
	sinkWait := time.Now()
	res.Sink = c.checkSink(sinkTopic, sinkWant)
	c.t.Logf("sink file checked after %v", time.Since(sinkWait).Round(time.Millisecond))
	if res.Sink.Missing > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("sink %s: %d records of topic %s are not in %s: %s",
			c.sink, res.Sink.Missing, sinkTopic, c.sinkFile, res.Sink.MissingSeq))
	}
	if res.Sink.Torn > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("sink %s: %d lines of %s are not whole Datagen values (torn writes)", c.sink, res.Sink.Torn, c.sinkFile))
	}
	res.Gaps += res.Sink.Missing
	// Sinks are at-least-once in both modes, as in Connect: a replay after
	// a kill may write a line twice, so the sink's duplicates are counted
	// apart from the sources'.
	res.SinkDuplicates = res.Sink.Duplicates
	gens, problems := c.checkGenerations()
	res.Generations = gens
	res.Problems = append(res.Problems, problems...)
	res.Problems = append(res.Problems, c.checkStatusTopic()...)
	return res
}

// describeDuplicates names the first sequence numbers seen more than once
// and where each copy is: partition, offset, the producer id and epoch that
// wrote it, and its timestamp, which tell the task instances (and, on a
// cluster with transaction.version 2, where each commit bumps the epoch,
// the transactions) that committed each copy.
func describeDuplicates(where map[seqKey][]*kgo.Record) string {
	var keys []seqKey
	for k, rs := range where {
		if len(rs) > 1 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].task != keys[j].task {
			return keys[i].task < keys[j].task
		}
		return keys[i].seq < keys[j].seq
	})
	var parts []string
	for i, k := range keys {
		if i == 10 {
			parts = append(parts, "...")
			break
		}
		var copies []string
		for _, r := range where[k] {
			copies = append(copies, fmt.Sprintf("p%d@%d producer %d/%d at %s", r.Partition, r.Offset, r.ProducerID, r.ProducerEpoch, r.Timestamp.UTC().Format("15:04:05.000")))
		}
		parts = append(parts, fmt.Sprintf("task %d seq %d [%s]", k.task, k.seq, strings.Join(copies, "; ")))
	}
	return strings.Join(parts, ", ")
}

// ranges renders sorted numbers as "3-7, 12, 20-21", the first 20 ranges.
func ranges(ns []int64) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if len(parts) == 20 {
			parts = append(parts, "...")
			break
		}
		if i == j {
			parts = append(parts, strconv.FormatInt(ns[i], 10))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// readTopic waits until the topic stops growing, then returns every value
// up to its end offsets. In the exactly-once mode it returns what a
// read_committed consumer sees, and also counts the records that a
// read_uncommitted one sees besides (aborted transactions' records).
func (c *chaosRun) readTopic(topic string) (recs []*kgo.Record, uncommitted int) {
	c.t.Helper()
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap))
	if err != nil {
		c.t.Fatal(err)
	}
	defer adm.Close()
	admin := kadm.NewClient(adm)
	list := func(what string, f func(context.Context, ...string) (kadm.ListedOffsets, error)) map[int32]int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		lo, err := f(ctx, topic)
		if err != nil {
			c.fatalf("%s offsets of %s: %v", what, topic, err)
		}
		out := map[int32]int64{}
		lo.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				c.fatalf("%s offset of %s[%d]: %v", what, topic, o.Partition, o.Err)
			}
			out[o.Partition] = o.Offset
		})
		return out
	}
	ends := func() map[int32]int64 { return list("end", admin.ListEndOffsets) }
	// Paused tasks still finish what was in flight: the end offsets must
	// hold still for two seconds.
	deadline := time.Now().Add(startDeadline)
	end := ends()
	for {
		time.Sleep(2 * time.Second)
		now := ends()
		if fmt.Sprint(now) == fmt.Sprint(end) {
			break
		}
		if time.Now().After(deadline) {
			c.fatalf("topic %s still grows %v after its connector was paused (%v -> %v)", topic, startDeadline, end, now)
		}
		end = now
	}
	all := c.consume(topic, end, false)
	if !c.s.eos {
		return all, 0
	}
	// A paused exactly-once task commits its open transaction, and the
	// transactions of killed tasks were aborted when their successors
	// fenced them: nothing may stay open (the last stable offset of each
	// partition reaches its end).
	for {
		stable := list("last stable", admin.ListCommittedOffsets)
		if fmt.Sprint(stable) == fmt.Sprint(end) {
			break
		}
		if time.Now().After(deadline) {
			c.fatalf("topic %s: a transaction is still open after its connector was paused: last stable offsets %v, end offsets %v", topic, stable, end)
		}
		time.Sleep(500 * time.Millisecond)
	}
	committed := c.consume(topic, end, true)
	return committed, len(all) - len(committed)
}

// consume reads topic from its start up to end, with read_committed or
// read_uncommitted. A transactional topic's last offsets may be commit or
// abort markers: the consumer is handed them (KeepControlRecords) so that
// it can tell it reached the end, and skips them.
func (c *chaosRun) consume(topic string, end map[int32]int64, committed bool) []*kgo.Record {
	c.t.Helper()
	opts := []kgo.Opt{kgo.FetchMaxWait(500 * time.Millisecond), kgo.KeepControlRecords()}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := kafkatest.NewConsumer(c.t, []kgo.Opt{kgo.SeedBrokers(c.bootstrap)}, []string{topic}, opts...)
	var vals []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 2*startDeadline)
	defer cancel()
	next, err := kafkatest.ConsumeTo(ctx, cl, end, func(r *kgo.Record) {
		if !r.Attrs.IsControl() {
			vals = append(vals, r)
		}
	}, func(_ string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) {
			c.t.Logf("fetch %s[%d]: %v", topic, p, err)
		}
	})
	if err != nil {
		c.fatalf("topic %s: not read to its end offsets %v within %v (at %v)", topic, end, 2*startDeadline, next)
	}
	return vals
}

// checkSink waits until the sink's file holds every record of want and
// stops growing, then counts its lines.
func (c *chaosRun) checkSink(topic string, want map[seqKey]bool) sinkReport {
	c.t.Helper()
	read := func() (sinkReport, map[seqKey]bool, int) {
		b, err := os.ReadFile(c.sinkFile)
		if err != nil && !os.IsNotExist(err) {
			c.t.Fatal(err)
		}
		r := sinkReport{Topic: topic}
		seen := map[seqKey]bool{}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			r.Lines++
			task, seq, err := datagen.ParseValue(sc.Bytes())
			if err != nil {
				r.Torn++
				continue
			}
			seen[seqKey{task, seq}] = true
		}
		r.Distinct = len(seen)
		r.Duplicates = r.Lines - r.Torn - r.Distinct
		return r, seen, len(b)
	}
	deadline := time.Now().Add(3 * startDeadline)
	var (
		r       sinkReport
		seen    map[seqKey]bool
		size    int
		stable  time.Time
		prevLen = -1
	)
	for {
		r, seen, size = read()
		complete := true
		for k := range want {
			if !seen[k] {
				complete = false
				break
			}
		}
		if size != prevLen {
			prevLen, stable = size, time.Now()
		}
		// Complete, and no replay still being written for three seconds.
		if complete && time.Since(stable) >= 3*time.Second {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	missing := map[int][]int64{}
	for k := range want {
		if !seen[k] {
			missing[k.task] = append(missing[k.task], k.seq)
			r.Missing++
		}
	}
	var parts []string
	for task := range sourceTasks {
		if s := missing[task]; len(s) > 0 {
			slices.Sort(s)
			parts = append(parts, fmt.Sprintf("task %d seq %s", task, ranges(s)))
		}
	}
	r.MissingSeq = strings.Join(parts, "; ")
	return r
}

// assignmentLine is the part of a worker's "assignment received" log line
// that the generation check needs.
type assignmentLine struct {
	Message    string `json:"message"`
	Worker     string `json:"worker"`
	Generation int32  `json:"generation"`
	Tasks      int    `json:"tasks"`
}

// checkGenerations reads every worker incarnation's log: in one generation
// the workers' assignments together may hold at most every task once. The
// log line carries the number of tasks, not their ids, so this catches a
// task handed to two workers in one generation only as an excess over the
// total; the status topic check below names tasks.
func (c *chaosRun) checkGenerations() (int, []string) {
	perGen := map[int32]map[string]int{}
	for _, p := range c.allProcs {
		b, err := os.ReadFile(p.Stderr)
		if err != nil {
			c.t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if !strings.Contains(line, "assignment received") {
				continue
			}
			var a assignmentLine
			if json.Unmarshal([]byte(line), &a) != nil || a.Message != "assignment received" {
				continue
			}
			if perGen[a.Generation] == nil {
				perGen[a.Generation] = map[string]int{}
			}
			// The same worker may get a generation's assignment twice
			// (a rejoin that did not rebalance): count it once.
			perGen[a.Generation][a.Worker] = max(perGen[a.Generation][a.Worker], a.Tasks)
		}
	}
	var problems []string
	total := c.taskCount()
	gens := slices.Sorted(func(yield func(int32) bool) {
		for g := range perGen {
			if !yield(g) {
				return
			}
		}
	})
	for _, g := range gens {
		sum := 0
		for _, n := range perGen[g] {
			sum += n
		}
		if sum > total {
			problems = append(problems, fmt.Sprintf("generation %d: workers' assignments hold %d tasks, but there are only %d (%v): a task was assigned twice", g, sum, total, perGen[g]))
		}
	}
	if len(gens) == 0 {
		problems = append(problems, `no worker logged "assignment received": the generation check has nothing to check`)
	}
	return len(gens), problems
}

// statusValue is a task status record of the status topic.
type statusValue struct {
	State      string `json:"state"`
	WorkerID   string `json:"worker_id"`
	Generation int64  `json:"generation"`
}

// checkStatusTopic reads the whole status topic: a task reported RUNNING by
// two workers with the same generation ran on both in that generation
// (invariant 4).
func (c *chaosRun) checkStatusTopic() []string {
	c.t.Helper()
	topic := c.name + "-status"
	vals := map[string][]statusValue{}
	cl := kafkatest.NewConsumer(c.t, []kgo.Opt{kgo.SeedBrokers(c.bootstrap)}, []string{topic}, kgo.FetchMaxWait(500*time.Millisecond))
	kafkatest.ConsumeUntilIdle(cl, 3, time.Now().Add(startDeadline), func(r *kgo.Record) {
		key := string(r.Key)
		if !strings.HasPrefix(key, "status-task-") || r.Value == nil {
			return
		}
		var v statusValue
		if json.Unmarshal(r.Value, &v) == nil {
			vals[key] = append(vals[key], v)
		}
	})
	if len(vals) == 0 {
		return []string{fmt.Sprintf("status topic %s holds no task status: the status check has nothing to check", topic)}
	}
	var problems []string
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		byGen := map[int64]map[string]bool{}
		for _, v := range vals[key] {
			if v.State != "RUNNING" {
				continue
			}
			if byGen[v.Generation] == nil {
				byGen[v.Generation] = map[string]bool{}
			}
			byGen[v.Generation][v.WorkerID] = true
		}
		for g, ws := range byGen {
			if len(ws) > 1 {
				names := make([]string, 0, len(ws))
				for w := range ws {
					names = append(names, w)
				}
				sort.Strings(names)
				problems = append(problems, fmt.Sprintf("%s: RUNNING on %s in generation %d", strings.TrimPrefix(key, "status-task-"), strings.Join(names, " and "), g))
			}
		}
	}
	return problems
}

// finish writes the report and the verdict, and fails the test on any
// problem, naming the seed.
func (c *chaosRun) finish(res *report) {
	c.t.Helper()
	c.mu.Lock()
	fos := slices.Clone(c.failovers)
	unresolved := len(c.pending)
	bad := slices.Clone(c.badStops)
	c.mu.Unlock()
	var slowest time.Duration
	for _, d := range fos {
		res.Failovers = append(res.Failovers, d.Round(time.Millisecond).String())
		slowest = max(slowest, d)
	}
	res.SlowestFailover = slowest.Round(100 * time.Millisecond).String()
	if unresolved > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d kills were never followed by all tasks RUNNING while the status was polled", unresolved))
	}
	res.BadGracefulStops = len(bad)
	res.Problems = append(res.Problems, bad...)
	if res.Kills == 0 {
		res.Problems = append(res.Problems, "no worker was killed: the run proves nothing (duration too short?)")
	}
	verdict := "PASS"
	if len(res.Problems) > 0 {
		verdict = "FAIL"
	}
	res.Verdict = fmt.Sprintf("chaos: %s mode=%s seed=%d kills=%d restarts=%d records=%d gaps=%d duplicates=%d sink_duplicates=%d uncommitted=%d slowest_failover=%s",
		verdict, res.Mode, res.Seed, res.Kills, res.GracefulRestarts, res.Records, res.Gaps, res.Duplicates, res.SinkDuplicates, res.Uncommitted, res.SlowestFailover)
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(c.s.report, append(b, '\n'), 0o644); err != nil {
		c.t.Errorf("write report %s: %v", c.s.report, err)
	}
	c.t.Logf("report %s:\n%s", c.s.report, b)
	fmt.Println(res.Verdict)
	c.t.Log(res.Verdict)
	if len(res.Problems) > 0 {
		c.fatalf("%d problems:\n  %s", len(res.Problems), strings.Join(res.Problems, "\n  "))
	}
}
