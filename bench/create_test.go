package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/proctest"
)

var flagCreates = flag.Int("bench.creates", 10, "connectors created (and deleted) per run of the create benchmark")

// crTasks is the create benchmark's tasks.max: two tasks per worker of the
// three, so that every worker starts tasks.
const crTasks = 6

// crSample is one POST /connectors, sent to one worker, timed until that
// worker's status shows every task RUNNING.
type crSample struct {
	via       string // worker the POST went to
	leader    bool   // whether that worker led the group
	created   time.Duration
	running   time.Duration
	rebalance int // generation after minus generation before
}

// runCreates creates and deletes n Datagen connectors of crTasks idle tasks
// on a three-worker cluster, alternating between a follower and the leader
// as the worker that takes the POST. Each sample ends when the status read
// from that worker shows all tasks RUNNING.
func runCreates(tb testing.TB, n int) []crSample {
	tb.Helper()
	c := startFoCluster(tb, "bench-create")
	var out []crSample
	for i := 0; i < n; i++ {
		leader, gen := c.leaderOf()
		via := c.workers[0]
		for _, w := range c.workers {
			if (w.id == leader) == (i%2 == 1) {
				via = w
				break
			}
		}
		name := fmt.Sprintf("create-%d", i)
		body, _ := json.Marshal(map[string]any{"name": name, "config": map[string]string{
			"connector.class": "Datagen", "topic": "create-bench", "tasks.max": fmt.Sprint(crTasks),
			"records.per.second": "1", "value.converter.schemas.enable": "false",
		}})
		start := time.Now()
		code, resp, err := proctest.Send(foHTTP, "POST", "http://"+via.rest+"/connectors", string(body))
		if err != nil || code != http.StatusCreated {
			tb.Fatalf("POST /connectors via %s: %d %s %v", via.id, code, resp, err)
		}
		created := time.Since(start)
		deadline := time.Now().Add(foStateDeadline)
		last := ""
		for {
			code, st, err := foGet("http://" + via.rest + "/connectors/" + name + "/status")
			if err == nil && code == http.StatusOK {
				last = string(st)
				if strings.Count(last, `"RUNNING"`) == crTasks+1 { // the connector and every task
					break
				}
			}
			if time.Now().After(deadline) {
				tb.Fatalf("%s not RUNNING within %v; last status %s", name, foStateDeadline, last)
			}
			time.Sleep(5 * time.Millisecond)
		}
		s := crSample{via: via.id, leader: via.id == leader, created: created, running: time.Since(start)}
		_, genAfter := c.leaderOf()
		s.rebalance = int(genAfter - gen)
		out = append(out, s)
		if code, resp, err := proctest.Send(foHTTP, "DELETE", "http://"+via.rest+"/connectors/"+name, ""); err != nil || code != http.StatusNoContent {
			tb.Fatalf("DELETE %s: %d %s %v", name, code, resp, err)
		}
		time.Sleep(time.Second) // let the deletion's rebalance settle
	}
	return out
}

// leaderOf asks GET /workers which worker leads and at which generation.
func (c *foCluster) leaderOf() (string, int32) {
	c.tb.Helper()
	deadline := time.Now().Add(foStateDeadline)
	for time.Now().Before(deadline) {
		code, body, err := foGet("http://" + c.workers[0].rest + "/workers")
		if err == nil && code == http.StatusOK {
			var ws struct {
				Workers []struct {
					ID         string `json:"worker_id"`
					Leader     bool   `json:"leader"`
					Generation int32  `json:"generation"`
				} `json:"workers"`
			}
			if json.Unmarshal(body, &ws) == nil {
				for _, w := range ws.Workers {
					if w.Leader {
						return w.ID, w.Generation
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.tb.Fatalf("no leader known within %v", foStateDeadline)
	return "", 0
}

func createTable(samples []crSample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| # | via | leader | 201 after | all RUNNING after | generations |\n| ---: | --- | --- | ---: | ---: | ---: |\n")
	var run []time.Duration
	for i, s := range samples {
		fmt.Fprintf(&b, "| %d | %s | %v | %.0f ms | %.0f ms | %d |\n", i, s.via, s.leader, foMs(s.created), foMs(s.running), s.rebalance)
		run = append(run, s.running)
	}
	fmt.Fprintf(&b, "| **median** | | | | **%.0f ms** | |\n| **max** | | | | **%.0f ms** | |\n", foMs(foMedian(run)), foMs(foMax(run)))
	return b.String()
}

// BenchmarkCreateToRunning measures POST /connectors -> every task RUNNING
// on a three-worker cluster of real processes, through the leader and
// through a follower.
func BenchmarkCreateToRunning(b *testing.B) {
	var all []crSample
	for i := 0; i < b.N; i++ {
		all = append(all, runCreates(b, *flagCreates)...)
	}
	var run []time.Duration
	for _, s := range all {
		run = append(run, s.running)
	}
	b.ReportMetric(foMs(foMedian(run)), "running-median-ms")
	b.ReportMetric(foMs(foMax(run)), "running-max-ms")
	foReports = append(foReports, "BenchmarkCreateToRunning\n"+createTable(all))
}

// TestCreateToRunningSmoke goes through the benchmark's code once.
func TestCreateToRunningSmoke(t *testing.T) {
	s := runCreates(t, 2)
	t.Log("\n" + createTable(s))
}
