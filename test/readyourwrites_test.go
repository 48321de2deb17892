package test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/proctest"
)

// Every write answers only once its effect is visible to the next request
// on any worker: each pair below sends the write to one worker and the next
// request, at once and without retrying, to the other, in both directions
// (so once through the leader and once through a follower).
func TestWritesAreVisibleAtOnceOnEveryWorker(t *testing.T) {
	c := startCluster(t, "ryw")
	w1 := c.add("w1")
	w2 := c.add("w2", w1.bind)
	dir := t.TempDir()
	for _, pair := range [][2]*workerProc{{w1, w2}, {w2, w1}} {
		via, next := pair[0], pair[1]
		at := func(w *workerProc, method, path, body string) (int, string) {
			code, b := mustSend(t, method, "http://"+w.rest+path, body)
			return code, string(b)
		}
		name := "ryw-" + via.id
		file := filepath.Join(dir, name+".txt")
		writeLines(t, file, 10)
		config := connectorJSON(t, name, fileSource(file, c.topic(name)))

		// Create, then status and info elsewhere.
		if code, body := at(via, "POST", "/connectors", config); code != http.StatusCreated {
			t.Fatalf("create via %s: %d %s", via.id, code, body)
		}
		if code, body := at(next, "GET", "/connectors/"+name+"/status", ""); code != http.StatusOK {
			t.Fatalf("status on %s right after the create via %s: %d %s", next.id, via.id, code, body)
		}
		if code, body := at(next, "GET", "/connectors/"+name, ""); code != http.StatusOK || !strings.Contains(body, `"tasks":[{"connector"`) {
			t.Fatalf("info on %s right after the create via %s: %d %s (want its task configs too)", next.id, via.id, code, body)
		}

		// Stop, then alter and reset the offsets elsewhere (KIP-875's
		// workflow).
		if code, body := at(via, "PUT", "/connectors/"+name+"/stop", ""); code != http.StatusNoContent {
			t.Fatalf("stop via %s: %d %s", via.id, code, body)
		}
		offsets := `{"offsets":[{"partition":{"filename":"` + file + `"},"offset":{"position":0}}]}`
		if code, body := at(next, "PATCH", "/connectors/"+name+"/offsets", offsets); code != http.StatusOK {
			t.Fatalf("alter offsets on %s right after the stop via %s: %d %s", next.id, via.id, code, body)
		}
		if code, body := at(next, "DELETE", "/connectors/"+name+"/offsets", ""); code != http.StatusOK {
			t.Fatalf("reset offsets on %s right after the alter: %d %s", next.id, code, body)
		}
		if code, body := at(via, "GET", "/connectors/"+name+"/status", ""); code != http.StatusOK || !strings.Contains(body, `"tasks":[]`) {
			t.Fatalf("status on %s after the stop: %d %s (want no tasks)", via.id, code, body)
		}

		// Delete, then create again elsewhere; the new one runs.
		if code, body := at(via, "DELETE", "/connectors/"+name, ""); code != http.StatusNoContent {
			t.Fatalf("delete via %s: %d %s", via.id, code, body)
		}
		if code, body := at(next, "GET", "/connectors/"+name, ""); code != http.StatusNotFound {
			t.Fatalf("info on %s right after the delete via %s: %d %s, want 404", next.id, via.id, code, body)
		}
		if code, body := at(next, "POST", "/connectors", config); code != http.StatusCreated {
			t.Fatalf("create again on %s right after the delete via %s: %d %s", next.id, via.id, code, body)
		}
		waitTasksRunning(t, next.rest, name, 1)
		if code, body := at(next, "DELETE", "/connectors/"+name, ""); code != http.StatusNoContent {
			t.Fatalf("delete on %s: %d %s", next.id, code, body)
		}
	}
}

// A write sent as soon as a starting worker answers GET / waits until the
// worker has joined its group, instead of failing with 409 or 503 (as in
// Connect, whose herder queues it).
func TestWriteWhileTheWorkerStartsWaits(t *testing.T) {
	c := startCluster(t, "early")
	rest, bind := proctest.FreeAddr(t), proctest.FreeAddr(t)
	p := startProc(t, "worker-early", nil, "worker", "--cluster", c.name, "--bootstrap", c.bootstrap,
		"--rest-addr", rest, "--worker-id", "early", "--bind", bind, "--session-timeout", "6s")
	deadline := time.Now().Add(startDeadline)
	for {
		p.FailIfExited()
		if code, _, err := send("GET", "http://"+rest+"/", ""); err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET / never answered on %s", rest)
		}
		time.Sleep(5 * time.Millisecond)
	}
	health, _, _ := send("GET", "http://"+rest+"/health", "")
	name := "early"
	code, body := mustSend(t, "POST", "http://"+rest+"/connectors", connectorJSON(t, name, map[string]string{
		"connector.class": "Datagen", "topic": c.topic(name), "tasks.max": "2", "records.per.second": "1",
	}))
	if code != http.StatusCreated {
		t.Fatalf("create while starting (GET /health answered %d): %d %s, want 201", health, code, body)
	}
	t.Logf("GET /health answered %d when the create was sent", health)
	waitTasksRunning(t, rest, name, 2)
}

// waitTasksRunning polls connector name's status on the worker at rest
// until it and n tasks are RUNNING.
func waitTasksRunning(t *testing.T, rest, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(stateDeadline)
	last := ""
	for time.Now().Before(deadline) {
		_, body := mustSend(t, "GET", "http://"+rest+"/connectors/"+name+"/status", "")
		last = string(body)
		if strings.Count(last, `"state":"RUNNING"`) == n+1 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not RUNNING with %d tasks: %s", name, n, last)
}
