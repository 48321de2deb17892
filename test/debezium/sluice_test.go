//go:build debezium

package debezium

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/pgtest"
	"github.com/sluice-io/sluice/internal/proctest"
)

// sluiceBin is the real binary, built once by TestMain from this module:
// the test runs Sluice's connector as a user would, in a `sluice worker`.
var sluiceBin string

func TestMain(m *testing.M) { os.Exit(proctest.Main(m, "sluice-cdcdiff-bin-", &sluiceBin)) }

// jsonConverter is Connect's JSON converter, which both workers use for
// keys and values, with its schema envelope, so that the topics hold the
// value schemas the test compares.
const jsonConverter = "org.apache.kafka.connect.json.JsonConverter"

// startSluice runs a `sluice worker` of a cluster of its own against the
// broker, creates each side's connector there with cdcConfig (the same
// Debezium keys Debezium runs with), and waits until their tasks run. The
// worker is killed when the test ends.
func startSluice(t *testing.T, bootstrap string, sides []*side, pg *pgtest.Server) {
	t.Helper()
	rest, bind := proctest.FreeAddr(t), proctest.FreeAddr(t)
	start := time.Now()
	p := proctest.Start(t, sluiceBin, "sluice-worker", proctest.Options{ExitDeadline: 45 * time.Second, LogTailOnFailure: true},
		"worker", "--cluster", kafkatest.Unique("cdcdiff"), "--bootstrap", bootstrap,
		"--rest-addr", rest, "--bind", bind, "--worker-id", "w1",
		"--prop", "key.converter="+jsonConverter, "--prop", "key.converter.schemas.enable=true",
		"--prop", "value.converter="+jsonConverter, "--prop", "value.converter.schemas.enable=true")
	if err := proctest.WaitHealthy(httpClient, rest, runningDeadline, 100*time.Millisecond, p.FailIfExited); err != nil {
		t.Fatalf("sluice worker: %v", err)
	}
	for _, s := range sides {
		body := mustJSON(t, map[string]any{"name": s.name, "config": cdcConfig(pg, s)})
		code, answer, err := proctest.Send(httpClient, "POST", "http://"+rest+"/connectors", body)
		if err != nil {
			t.Fatalf("POST /connectors: %v", err)
		}
		if code != http.StatusCreated {
			t.Fatalf("POST /connectors %s: %d %s", s.name, code, answer)
		}
	}
	for _, s := range sides {
		// A failed task is a finding like a wrong event: the test goes on
		// and compares what the topics hold.
		s.failure = func() string {
			p.FailIfExited()
			return taskFailure(p.StderrText(), s.name)
		}
		if failure := waitConnectRunning(t, "http://"+rest+"/connectors/"+s.name+"/status", p.FailIfExited); failure != "" {
			t.Errorf("Sluice's connector %s: %s", s.name, failure)
		}
	}
	t.Logf("Sluice's tasks run in a sluice worker (%v after start)", time.Since(start).Round(time.Millisecond))
}

// taskFailure is the error of the first "task failed" line of connector's
// in a worker's JSON log, or "". The worker restarts a failed task after a
// backoff, so its status may be RUNNING again by the time anyone looks:
// the log keeps every failure.
func taskFailure(log, connector string) string {
	for _, line := range strings.Split(log, "\n") {
		var entry struct {
			Message   string `json:"message"`
			Connector string `json:"connector"`
			Error     string `json:"error"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Message == "task failed" && entry.Connector == connector {
			return entry.Error
		}
	}
	return ""
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
