package test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

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
