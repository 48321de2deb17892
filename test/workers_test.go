package test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/proctest"
)

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
	deadline := time.Now().Add(stateDeadline)
	last := ""
	for time.Now().Before(deadline) {
		code, body := mustSend(t, "GET", "http://"+w3.rest+"/workers", "")
		last = string(body)
		var out struct {
			Workers []struct {
				WorkerID string `json:"worker_id"`
				Leader   bool   `json:"leader"`
				Tasks    []struct {
					Connector string `json:"connector"`
					Task      int    `json:"task"`
				} `json:"tasks"`
			} `json:"workers"`
			Unreachable []string `json:"unreachable"`
		}
		if code == http.StatusOK && json.Unmarshal(body, &out) == nil && len(out.Workers) == 3 && len(out.Unreachable) == 0 {
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
			if ok {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET /workers never showed 3 workers, 1 leader and 12 tasks once each: %s", last)
}
