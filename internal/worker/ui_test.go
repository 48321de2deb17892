package worker

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluice-io/sluice/internal/ui"
)

// The dashboard is on by default and serves the cluster view once the
// worker joined; DisableUI answers both its paths 404, as unknown paths.
func TestWorkerServesTheDashboardUnlessDisabled(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	on := startWorker(t, broker.ListenAddrs()[0])
	// No broker for this one: it never starts its actor cluster, which
	// two workers of one process would start racing on protoactor's
	// global logger; its routes exist from the start.
	off := startWorkerWith(t, Config{Cluster: "wt-off", Bootstrap: []string{"127.0.0.1:1"}, RESTAddr: "127.0.0.1:0",
		DisableUI: true, Log: zerolog.Nop()})

	base := "http://" + on.RESTAddr()
	if code, body := get(t, base+"/ui"); code != http.StatusOK || !strings.Contains(body, "/ui/assets/app.js") {
		t.Fatalf("GET /ui: %d %.200s", code, body)
	}
	var v ui.View
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get(t, base+"/ui/state")
		if code == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatalf("GET /ui/state: %v: %s", err, body)
			}
			if len(v.Workers) == 1 && v.Workers[0].Alive {
				break
			}
		} else if code != http.StatusServiceUnavailable {
			t.Fatalf("GET /ui/state: %d %s, want 200 or 503 while starting", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /ui/state never showed the worker alive: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v.Workers[0].ID != on.ID() || !v.Workers[0].Leader || v.Worker != on.ID() {
		t.Fatalf("view %+v, want this worker alone, leading", v)
	}

	for _, path := range []string{"/ui", "/ui/state", "/ui/assets/app.js"} {
		if code, _ := get(t, "http://"+off.RESTAddr()+path); code != http.StatusNotFound {
			t.Fatalf("GET %s with the dashboard off: %d, want 404", path, code)
		}
	}
}
