// Package chaos kills and restarts real `sluice worker` processes at seeded
// random moments while Datagen sources and a FileStream sink run, then
// proves that no record was lost, that every task ends RUNNING and that no
// task ran on two workers in one generation.
//
// It shares its process helpers with package test through
// internal/proctest, and stays a package of its own so that it can run
// alone (`just chaos`) for long CI runs.
package chaos

import (
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/proctest"
)

// sluiceBin is the real binary, built once by TestMain: the chaos run
// exercises exactly what `go build ./cmd/sluice` produces, signal handling
// included.
var sluiceBin string

func TestMain(m *testing.M) { os.Exit(proctest.Main(m, "sluice-chaos-bin-", &sluiceBin)) }

// Generous deadlines: the machine may have two shared cores and other
// suites running; slowness must not read as lost data.
const (
	startDeadline = 90 * time.Second
	exitDeadline  = 60 * time.Second
)

var httpClient = &http.Client{Timeout: 15 * time.Second}

// startProc starts one incarnation of a sluice child process; its stdout
// and stderr go to files, kept for the log checks and shown when the test
// fails. The test's own SLUICE_* variables are not passed on: they
// configure this test (seed, duration, bootstrap), not the children. The
// process is killed in t.Cleanup.
func startProc(t *testing.T, name string, args ...string) *proctest.Proc {
	t.Helper()
	return proctest.Start(t, sluiceBin, name, proctest.Options{ExitDeadline: exitDeadline}, args...)
}

// send does one HTTP request with a JSON body (if any) and returns the
// status and the body.
func send(method, url, body string) (int, []byte, error) {
	return proctest.Send(httpClient, method, url, body)
}
