package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/proctest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// eosWorker is the flag that runs a worker's sources exactly once.
var eosWorker = []string{"--prop", "exactly.once.source.support=enabled"}

// TestExactlyOnceZombieWorkerNeverCommits is issue 12's zombie test on real
// processes: a worker running exactly-once Datagen tasks, with transactions
// open, is frozen with SIGSTOP past its session timeout; its tasks start on
// the other worker, which fences their transactional ids; then it is thawed
// with SIGCONT. Nothing it writes after that becomes visible to a
// read_committed consumer, its tasks stop with a trace that says they were
// fenced, and every sequence number is there exactly once.
func TestExactlyOnceZombieWorkerNeverCommits(t *testing.T) {
	c := startCluster(t, "eos-zombie")
	w1 := c.addWith("w1", eosWorker)
	c.addWith("w2", eosWorker, w1.bind)
	createOn(t, c.any(), "gen", map[string]string{
		"connector.class": "Datagen", "topic": c.topic("gen"), "tasks.max": "2", "records.per.second": "200",
		"exactly.once.support": "required", "transaction.boundary": "interval", "transaction.boundary.interval.ms": "1000",
		"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter.schemas.enable": "false",
	})
	before, _ := c.placement("gen", 2, []string{"w1", "w2"}, nil)
	victimID := before[0]
	victim, other := c.workers[victimID], c.workers[map[string]string{"w1": "w2", "w2": "w1"}[victimID]]
	time.Sleep(1500 * time.Millisecond) // commits, and a transaction open
	if err := victim.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Cmd.Process.Signal(syscall.SIGCONT) })
	t.Logf("froze %s, which ran task 0", victimID)
	// Past the session timeout (6 s): the group and gossip give its tasks
	// to the other worker.
	c.placementOn(other, "gen", 2)
	time.Sleep(7 * time.Second)
	if err := victim.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("thawed %s", victimID)
	waitFor(t, victim.FailIfExited, stateDeadline, 200*time.Millisecond, "the thawed worker's tasks to say they were fenced", func() (bool, string) {
		log := victim.StderrText()
		return strings.Contains(log, "fenced by a newer generation"), "no fenced task in its log yet"
	})
	time.Sleep(3 * time.Second) // the cluster settles and produces on
	if code, body := mustSend(t, "PUT", "http://"+other.rest+"/connectors/gen/pause", ""); code != http.StatusAccepted {
		t.Fatalf("pause: %d %s", code, body)
	}
	time.Sleep(2 * time.Second)
	checkExactlyOnce(t, c.bootstrap, c.topic("gen"), 2)
}

// placementOn polls rest's status until every one of n tasks is RUNNING on
// worker, for a cluster another of whose workers cannot answer.
func (c *cluster) placementOn(w *workerProc, connector string, n int) {
	c.t.Helper()
	waitFor(c.t, w.FailIfExited, stateDeadline, 100*time.Millisecond, fmt.Sprintf("tasks of %s RUNNING on %s", connector, w.id), func() (bool, string) {
		code, body, err := send("GET", "http://"+w.rest+"/connectors/"+connector+"/status", "")
		var st proctest.Status
		if err != nil || code != http.StatusOK || json.Unmarshal(body, &st) != nil || len(st.Tasks) != n {
			return false, fmt.Sprint(code, err, string(body))
		}
		for _, task := range st.Tasks {
			if task.State != "RUNNING" || task.WorkerID != w.id {
				return false, string(body)
			}
		}
		return true, ""
	})
}

// checkExactlyOnce reads topic (which must have stopped growing) as a
// read_committed consumer: each Datagen task's sequence has no gap and no
// duplicate.
func checkExactlyOnce(t *testing.T, bootstrap, topic string, tasks int) {
	t.Helper()
	cl := kafkatest.NewConsumer(t, []kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...)}, []string{topic},
		kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := make([]map[int64]bool, tasks)
	for i := range seen {
		seen[i] = map[int64]bool{}
	}
	duplicates := 0
	kafkatest.ConsumeUntilIdle(cl, 3, time.Time{}, func(r *kgo.Record) {
		task, seq, err := datagen.ParseValue(r.Value)
		if err != nil || task < 0 || task >= tasks {
			t.Fatalf("unexpected record %q: %v", r.Value, err)
		}
		if seen[task][seq] {
			duplicates++
		}
		seen[task][seq] = true
	})
	for task, seqs := range seen {
		highest, _, missing := testutil.Gaps(seqs, 10)
		t.Logf("task %d: sequence 0..%d", task, highest)
		if highest < 0 {
			t.Fatalf("task %d produced nothing", task)
		}
		if len(missing) > 0 {
			t.Fatalf("task %d: sequence numbers missing below %d: %v", task, highest, missing)
		}
	}
	if duplicates > 0 {
		t.Fatalf("%d duplicates seen by a read_committed consumer", duplicates)
	}
}
