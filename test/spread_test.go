package test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

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
	deadline := time.Now().Add(stateDeadline)
	last := ""
	for time.Now().Before(deadline) {
		code, body := mustSend(t, "GET", "http://"+w1.rest+"/workers", "")
		last = string(body)
		var out struct {
			Workers []struct {
				WorkerID   string   `json:"worker_id"`
				Connectors []string `json:"connectors"`
				Tasks      []struct {
					Connector string `json:"connector"`
				} `json:"tasks"`
			} `json:"workers"`
		}
		if code == http.StatusOK && json.Unmarshal(body, &out) == nil && len(out.Workers) == 6 {
			busy, instance, tasks := 0, 0, 0
			for _, w := range out.Workers {
				if len(w.Connectors)+len(w.Tasks) > 0 {
					busy++
				}
				instance += len(w.Connectors)
				tasks += len(w.Tasks)
			}
			if instance == 1 && tasks == 2 {
				if busy != 2 {
					t.Fatalf("%d workers busy with a 2-task connector, want 2: %s", busy, body)
				}
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET /workers never showed the connector placed: %s", last)
}
