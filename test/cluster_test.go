package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/proctest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// cluster is a `sluice broker` and `sluice worker` processes of one cluster.
// When SLUICE_TEST_BOOTSTRAP names a real broker (Apache Kafka from
// test/kafka/kafka.sh), the workers use it instead of a `sluice broker`,
// and the cluster's name and topics are made unique, for that broker is
// shared with other tests and earlier runs.
type cluster struct {
	t         *testing.T
	name      string
	bootstrap string
	external  bool
	workers   map[string]*workerProc
}

type workerProc struct {
	*proctest.Proc
	id, rest, bind string
}

func startCluster(t *testing.T, name string) *cluster {
	t.Helper()
	if seeds := kafkatest.Bootstrap(); len(seeds) > 0 {
		c := &cluster{t: t, name: kafkatest.Unique(name), bootstrap: strings.Join(seeds, ","), external: true,
			workers: map[string]*workerProc{}}
		t.Logf("cluster %s on the broker at %s", c.name, c.bootstrap)
		return c
	}
	addr := proctest.FreeAddr(t)
	b := startProc(t, "broker", nil, "broker", "--addr", addr, "--data-dir", t.TempDir())
	if err := kafkatest.WaitUp(addr, startDeadline, b.FailIfExited); err != nil {
		t.Fatalf("broker not up: %v", err)
	}
	return &cluster{t: t, name: name, bootstrap: addr, workers: map[string]*workerProc{}}
}

// other is another cluster on c's broker.
func (c *cluster) other(name string) *cluster {
	if c.external {
		name = kafkatest.Unique(name)
	}
	return &cluster{t: c.t, name: name, bootstrap: c.bootstrap, external: c.external, workers: map[string]*workerProc{}}
}

// topic names a data topic of the cluster: name itself on the cluster's own
// `sluice broker`, and unique on a shared real broker.
func (c *cluster) topic(name string) string {
	if c.external {
		return name + "-" + c.name
	}
	return name
}

// startWorkers starts a cluster and n workers, w1 to wn, each told w1's
// gossip address, and returns them in that order.
func startWorkers(t *testing.T, name string, n int) (*cluster, []*workerProc) {
	t.Helper()
	c := startCluster(t, name)
	ws := []*workerProc{c.add("w1")}
	for i := 2; i <= n; i++ {
		ws = append(ws, c.add(fmt.Sprintf("w%d", i), ws[0].bind))
	}
	return c, ws
}

// add starts a worker; join lists gossip seeds (workers also find each
// other through the Kafka group).
func (c *cluster) add(id string, join ...string) *workerProc {
	c.t.Helper()
	return c.addWith(id, nil, join...)
}

// addWith starts a worker as add does, with extra flags (the gossip key,
// the cluster TLS files, ...).
func (c *cluster) addWith(id string, extra []string, join ...string) *workerProc {
	c.t.Helper()
	w := &workerProc{id: id, rest: proctest.FreeAddr(c.t), bind: proctest.FreeAddr(c.t)}
	args := append([]string{"worker", "--cluster", c.name, "--bootstrap", c.bootstrap, "--rest-addr", w.rest,
		"--worker-id", id, "--bind", w.bind, "--session-timeout", "6s", "--offset-flush-interval-ms", "200"}, extra...)
	if len(join) > 0 {
		args = append(args, "--join", strings.Join(join, ","))
	}
	w.Proc = startProc(c.t, "worker-"+id, nil, args...)
	waitHealthy(c.t, w.Proc, w.rest)
	c.workers[id] = w
	return w
}

// any returns a live worker's REST address.
func (c *cluster) any() string {
	ids := make([]string, 0, len(c.workers))
	for id, w := range c.workers {
		if !w.Exited() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return c.workers[ids[0]].rest
}

// placement polls the status until every one of n tasks is RUNNING on a
// worker in alive, and returns task -> worker. It returns how long that took.
func (c *cluster) placement(connector string, n int, alive []string, cond func(map[int]string) bool) (map[int]string, time.Duration) {
	c.t.Helper()
	began := time.Now()
	deadline := began.Add(stateDeadline)
	last := ""
	for time.Now().Before(deadline) {
		code, body, err := send("GET", "http://"+c.any()+"/connectors/"+connector+"/status", "")
		if err == nil && code == http.StatusOK {
			last = string(body)
			var st proctest.Status
			if json.Unmarshal(body, &st) == nil && len(st.Tasks) == n {
				place := map[int]string{}
				for _, task := range st.Tasks {
					if task.State == "RUNNING" && slices.Contains(alive, task.WorkerID) {
						place[task.ID] = task.WorkerID
					}
				}
				if len(place) == n && (cond == nil || cond(place)) {
					return place, time.Since(began)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("tasks of %s not placed as wanted on %v within %v; last status: %s", connector, alive, stateDeadline, last)
	return nil, 0
}

// TestClusterSpreadsRebalancesAndFailsOver is issue 3's done-when on real
// processes: 12 Datagen tasks run 4-4-4 on three workers; a fourth worker
// makes it 3-3-3-3 moving only 3 tasks; a worker killed with SIGKILL has its
// tasks RUNNING on the others within seconds, and no sequence has a gap.
func TestClusterSpreadsRebalancesAndFailsOver(t *testing.T) {
	c, ws := startWorkers(t, "spread", 3)
	createOn(t, c.any(), "gen", map[string]string{
		"connector.class": "Datagen", "topic": c.topic("gen"), "tasks.max": "12", "records.per.second": "100",
		"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter.schemas.enable": "false",
	})
	before, _ := c.placement("gen", 12, []string{"w1", "w2", "w3"}, proctest.Balanced(4))
	t.Logf("3 workers: %v", proctest.Counts(before))

	c.add("w4", ws[0].bind)
	after, took := c.placement("gen", 12, []string{"w1", "w2", "w3", "w4"}, proctest.Balanced(3))
	moved := proctest.Moved(before, after)
	t.Logf("4 workers after %v: %v, %d tasks moved", took.Round(time.Millisecond), proctest.Counts(after), moved)
	if moved != 3 {
		t.Fatalf("a join moved %d tasks, want exactly 3 (placement %v -> %v)", moved, before, after)
	}

	c.workers["w2"].Kill9()
	_, failover := c.placement("gen", 12, []string{"w1", "w3", "w4"}, nil)
	t.Logf("tasks of the killed worker RUNNING elsewhere after %v", failover.Round(time.Millisecond))
	if failover > 10*time.Second {
		t.Errorf("failover took %v; gossip should notice a kill -9 in about a second", failover)
	}
	time.Sleep(time.Second) // every task produces a little more after the move
	// Pause, so the topic stops growing and can be read to its end.
	if code, body := mustSend(t, "PUT", "http://"+c.any()+"/connectors/gen/pause", ""); code != http.StatusAccepted {
		t.Fatalf("pause: %d %s", code, body)
	}
	time.Sleep(time.Second)
	checkNoGaps(t, c.bootstrap, c.topic("gen"), 12)
}

// checkNoGaps reads topic (which must have stopped growing) and checks that each Datagen task's sequence has
// no gap: duplicates are allowed (at-least-once), holes are not.
func checkNoGaps(t *testing.T, bootstrap, topic string, tasks int) {
	t.Helper()
	cl := kafkatest.NewConsumer(t, []kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...)}, []string{topic},
		kgo.FetchMaxWait(200*time.Millisecond))
	seen := make([]map[int64]bool, tasks)
	for i := range seen {
		seen[i] = map[int64]bool{}
	}
	kafkatest.ConsumeUntilIdle(cl, 3, time.Time{}, func(r *kgo.Record) {
		task, seq, err := datagen.ParseValue(r.Value)
		if err != nil || task < 0 || task >= tasks {
			t.Fatalf("unexpected record %q: %v", r.Value, err)
		}
		seen[task][seq] = true
	})
	for task, seqs := range seen {
		highest, _, missing := testutil.Gaps(seqs, 10)
		if highest < 0 {
			t.Fatalf("task %d produced nothing", task)
		}
		if len(missing) > 0 {
			t.Fatalf("task %d: sequence numbers missing below %d: %v", task, highest, missing)
		}
	}
}

// Two clusters on one broker, each worker told the other's gossip address,
// stay apart: each sees and runs only its own connectors.
func TestClustersWithDifferentNamesStaySeparate(t *testing.T) {
	c := startCluster(t, "alpha")
	a := c.add("a1")
	other := c.other("beta")
	b := other.add("b1", a.bind)
	for _, x := range []struct {
		w     *workerProc
		name  string
		topic string
	}{{a, "in-alpha", c.topic("in-alpha")}, {b, "in-beta", other.topic("in-beta")}} {
		createOn(t, x.w.rest, x.name, map[string]string{
			"connector.class": "Datagen", "topic": x.topic, "tasks.max": "1", "records.per.second": "10",
		})
	}
	c.placement("in-alpha", 1, []string{"a1"}, nil)
	other.placement("in-beta", 1, []string{"b1"}, nil)
	for _, x := range []struct {
		w    *workerProc
		want string
	}{{a, `["in-alpha"]`}, {b, `["in-beta"]`}} {
		_, body := mustSend(t, "GET", "http://"+x.w.rest+"/connectors", "")
		if strings.TrimSpace(string(body)) != x.want {
			t.Fatalf("worker %s lists %s, want %s", x.w.id, body, x.want)
		}
	}
}

// GET /workers on any worker asks every worker of the cluster, through the
// actor cluster (protobuf messages over protoactor remote), what it runs:
// three workers, one leader, twelve tasks each listed exactly once.
func TestWorkersListsWhatEachWorkerRuns(t *testing.T) {
	c, ws := startWorkers(t, "listing", 3)
	w1, w3 := ws[0], ws[2]
	createOn(t, w1.rest, "gen", map[string]string{
		"connector.class": "Datagen", "topic": "gen", "tasks.max": "12", "records.per.second": "5",
	})
	c.placement("gen", 12, []string{"w1", "w2", "w3"}, proctest.Balanced(4))
	pollWorkers(t, w3.rest, "3 workers, 1 leader and 12 tasks once each", func(out workersList, _ []byte) bool {
		if len(out.Workers) != 3 || len(out.Unreachable) != 0 {
			return false
		}
		leaders, seen := 0, map[int]int{}
		for _, w := range out.Workers {
			if w.Leader {
				leaders++
			}
			for _, task := range w.Tasks {
				seen[task.Task]++
			}
		}
		ok := leaders == 1 && len(seen) == 12
		for _, n := range seen {
			ok = ok && n == 1
		}
		return ok
	})
}

// workersList is GET /workers: what each worker runs.
type workersList struct {
	Workers []struct {
		WorkerID   string   `json:"worker_id"`
		Leader     bool     `json:"leader"`
		Connectors []string `json:"connectors"`
		Tasks      []struct {
			Connector string `json:"connector"`
			Task      int    `json:"task"`
		} `json:"tasks"`
	} `json:"workers"`
	Unreachable []string `json:"unreachable"`
}

// pollWorkers asks the worker at rest for GET /workers every 100 ms until
// cond accepts the answer, and fails the test, naming what it waited for,
// if that does not happen within stateDeadline.
func pollWorkers(t *testing.T, rest, what string, cond func(out workersList, body []byte) bool) {
	t.Helper()
	deadline := time.Now().Add(stateDeadline)
	last := ""
	for time.Now().Before(deadline) {
		code, body := mustSend(t, "GET", "http://"+rest+"/workers", "")
		last = string(body)
		var out workersList
		if code == http.StatusOK && json.Unmarshal(body, &out) == nil && cond(out, body) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET /workers never showed %s: %s", what, last)
}

// A connector with tasks.max=2 on six workers keeps exactly two of them busy:
// its connector instance runs next to one of its tasks.
func TestTwoTasksOnSixWorkersKeepTwoBusy(t *testing.T) {
	c, ws := startWorkers(t, "six", 6)
	w1 := ws[0]
	createOn(t, w1.rest, "pair", map[string]string{
		"connector.class": "Datagen", "topic": "pair", "tasks.max": "2", "records.per.second": "5",
	})
	all := []string{"w1", "w2", "w3", "w4", "w5", "w6"}
	c.placement("pair", 2, all, nil)
	pollWorkers(t, w1.rest, "the connector placed", func(out workersList, body []byte) bool {
		if len(out.Workers) != 6 {
			return false
		}
		busy, instance, tasks := 0, 0, 0
		for _, w := range out.Workers {
			if len(w.Connectors)+len(w.Tasks) > 0 {
				busy++
			}
			instance += len(w.Connectors)
			tasks += len(w.Tasks)
		}
		if instance == 1 && tasks == 2 && busy != 2 {
			t.Fatalf("%d workers busy with a 2-task connector, want 2: %s", busy, body)
		}
		return instance == 1 && tasks == 2
	})
}

// Writes sent to any worker of a cluster reach the leader: creating,
// pausing and deleting connectors through each of three workers works, and
// every worker's local view converges.
func TestWritesOnAnyWorkerReachTheLeader(t *testing.T) {
	c, workers := startWorkers(t, "forward", 3)
	for i, w := range workers {
		name := fmt.Sprintf("via-%s", w.id)
		createOn(t, w.rest, name, map[string]string{
			"connector.class": "Datagen", "topic": name, "tasks.max": "1", "records.per.second": "5",
		})
		// Pause and resume through the next worker, so writes cross.
		next := workers[(i+1)%len(workers)]
		if code, body := mustSend(t, "PUT", "http://"+next.rest+"/connectors/"+name+"/pause", ""); code != http.StatusAccepted {
			t.Fatalf("pause through %s: %d %s", next.id, code, body)
		}
	}
	for _, w := range workers {
		deadline := time.Now().Add(stateDeadline)
		for {
			_, body := mustSend(t, "GET", "http://"+w.rest+"/connectors", "")
			if strings.TrimSpace(string(body)) == `["via-w1","via-w2","via-w3"]` {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("worker %s lists %s", w.id, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, name := range []string{"via-w1", "via-w2", "via-w3"} {
		waitPaused(t, c, name)
	}
	if code, body := mustSend(t, "DELETE", "http://"+workers[2].rest+"/connectors/via-w1", ""); code != http.StatusNoContent {
		t.Fatalf("delete through w3: %d %s", code, body)
	}
	deadline := time.Now().Add(stateDeadline)
	for {
		code, _ := mustSend(t, "GET", "http://"+workers[1].rest+"/connectors/via-w1", "")
		if code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("via-w1 still known to w2 after delete: %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitPaused(t *testing.T, c *cluster, name string) {
	t.Helper()
	deadline := time.Now().Add(stateDeadline)
	last := ""
	for time.Now().Before(deadline) {
		_, body := mustSend(t, "GET", "http://"+c.any()+"/connectors/"+name+"/status", "")
		last = string(body)
		// A connector paused before its first task configs were stored
		// gets its tasks only once resumed (as one created PAUSED does).
		if strings.Contains(last, `"connector":{"state":"PAUSED"`) &&
			(strings.Contains(last, `"tasks":[{"id":0,"state":"PAUSED"`) || strings.Contains(last, `"tasks":[]`)) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not PAUSED: %s", name, last)
}
