// Package test holds tests that run the real sluice binary as child
// processes on loopback ports, kill them and start them again: what a user
// of `sluice dev` and `sluice worker` sees, end to end.
package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/proctest"
)

// roundTripLines is the size of the file of issue 2's "Done when".
const roundTripLines = 100_000

// TestFileRoundTrip copies a 100,000-line file through Kafka with the
// FileStream connectors and requires the output to be byte for byte the
// input, also after a graceful stop (which must not write anything more).
func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	want := writeLines(t, in, roundTripLines)
	d := startDev(t, filepath.Join(dir, "data"))

	createConnector(t, d, "file-source", fileSource(in, "lines"))
	// The sink by its short name, as the README does: both spellings work.
	sink := fileSink(out, "lines")
	sink["connector.class"] = "FileStreamSink"
	createConnector(t, d, "file-sink", sink)
	waitRunning(t, d, "file-source")
	waitRunning(t, d, "file-sink")

	waitFor(t, d.Proc.FailIfExited, stateDeadline, 100*time.Millisecond, "output as long as the input", func() (bool, string) {
		n := len(readFile(t, out))
		return n >= len(want), fmt.Sprintf("%d of %d bytes", n, len(want))
	})
	requireSameBytes(t, readFile(t, out), want)

	if code := d.Terminate(); code != 0 {
		t.Fatalf("sluice dev exited %d on SIGTERM, want 0", code)
	}
	// Shutdown flushes; it must not replay anything into the output.
	requireSameBytes(t, readFile(t, out), want)
}

func requireSameBytes(t *testing.T, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	line := bytes.Count(want[:i], []byte{'\n'}) + 1
	t.Fatalf("output differs from input at byte %d (line %d): output has %d bytes (%d lines), input %d bytes (%d lines); output there: %q",
		i, line, len(got), countLines(got), len(want), countLines(want), snippet(got, i))
}

func snippet(b []byte, at int) string {
	end := min(at+60, len(b))
	return string(b[at:end])
}

// TestFileRoundTripSurvivesKill9 kills `sluice dev` with SIGKILL while the
// FileStream copy is under way, starts it again on the same data directory,
// and requires the copy to finish with no line lost and nothing invented.
// Duplicates are allowed (lines read or written since the last offset flush
// are delivered again) and are logged.
func TestFileRoundTripSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	want := writeLines(t, in, roundTripLines)
	wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")

	// The copy takes well under a second on an idle machine, so the kill
	// must land right after the first output appears. If the whole copy
	// still beat it, the attempt proves nothing about resuming: try again
	// from scratch rather than pass or fail on timing.
	const attempts = 3
	var (
		d      *dev
		out    string
		atKill int
	)
	for attempt := 1; ; attempt++ {
		adir := filepath.Join(dir, fmt.Sprintf("attempt-%d", attempt))
		if err := os.Mkdir(adir, 0o755); err != nil {
			t.Fatal(err)
		}
		out = filepath.Join(adir, "out.txt")
		// A 100 ms flush interval makes the sink write (and commit) in
		// several steps instead of one write at the first 1 s commit, so
		// that there is a moment with some lines out but not all.
		d = startDev(t, filepath.Join(adir, "data"), "--offset-flush-interval-ms", "100")
		// The sink first, and running, so that it consumes while the
		// source produces rather than finding every record already there.
		createConnector(t, d, "file-sink", fileSink(out, "lines"))
		waitRunning(t, d, "file-sink")
		createConnector(t, d, "file-source", fileSource(in, "lines"))

		waitFor(t, d.Proc.FailIfExited, stateDeadline, 2*time.Millisecond, "first output line", func() (bool, string) {
			fi, err := os.Stat(out)
			return err == nil && fi.Size() > 0, "output empty"
		})
		d.Kill9()
		atKill = countLines(readFile(t, out))
		t.Logf("attempt %d: SIGKILL with %d of %d lines in the output", attempt, atKill, roundTripLines)
		if atKill < roundTripLines {
			break
		}
		if attempt == attempts {
			t.Fatalf("in %d attempts the copy always finished before SIGKILL landed; cannot test resuming", attempts)
		}
	}

	d.restart()
	// The connectors come back from the config topic, not from the test.
	waitRunning(t, d, "file-source")
	waitRunning(t, d, "file-sink")

	wantSet := make(map[string]bool, len(wantLines))
	for _, l := range wantLines {
		wantSet[l] = true
	}
	start := time.Now()
	waitFor(t, d.Proc.FailIfExited, 90*time.Second, 250*time.Millisecond, "every input line in the output", func() (bool, string) {
		seen := make(map[string]bool, len(wantLines))
		lines, _ := repairTornWrite(strings.Split(string(readFile(t, out)), "\n"), wantSet)
		for _, l := range lines {
			if wantSet[l] {
				seen[l] = true
			}
		}
		return len(seen) == len(wantSet), fmt.Sprintf("%d of %d distinct input lines present", len(seen), len(wantSet))
	})
	t.Logf("copy finished %v after the restart", time.Since(start).Round(time.Millisecond))

	got := readFile(t, out)
	if len(got) > 0 && got[len(got)-1] != '\n' {
		t.Errorf("output ends in a partial line: %q", snippet(got, max(0, len(got)-40)))
	}
	gotLines, torn := repairTornWrite(strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"), wantSet)
	if torn != "" {
		t.Logf("SIGKILL cut a write short: %q, then the restarted sink's first line, on one line", snippet([]byte(torn), 0))
	}
	var foreign []string
	for i, l := range gotLines {
		if !wantSet[l] {
			foreign = append(foreign, fmt.Sprintf("line %d: %q", i+1, l))
		}
	}
	if len(foreign) > 0 {
		t.Errorf("%d output lines are not input lines (torn or corrupted writes), first: %s", len(foreign), strings.Join(foreign[:min(5, len(foreign))], "; "))
	}

	// One source task, one partition: the first occurrence of each line
	// must come in input order; replays only add later copies.
	firstSeen := make(map[string]bool, len(wantLines))
	next := 0
	for _, l := range gotLines {
		if !wantSet[l] || firstSeen[l] {
			continue
		}
		firstSeen[l] = true
		if l != wantLines[next] {
			t.Errorf("out of order: first new line after %d in-order lines is %q, want %q", next, l, wantLines[next])
			break
		}
		next++
	}

	dups := len(gotLines) - roundTripLines
	t.Logf("%d lines at the kill, %d output lines in the end: %d duplicates (the window since the last offset flush)", atKill, len(gotLines), dups)
	if dups >= roundTripLines {
		t.Errorf("%d duplicates for %d input lines: more than a flush window was replayed", dups, roundTripLines)
	}

	if code := d.Terminate(); code != 0 {
		t.Errorf("sluice dev exited %d on SIGTERM after the restart, want 0", code)
	}
}

// repairTornWrite finds, in a FileStreamSink's output, the one line that a
// write cut short by SIGKILL may leave: Linux stops a write(2) to a regular
// file between pages for a fatal signal, so the file can end in the start
// of a line (Connect's FileStreamSink too), and the restarted sink appends
// its first line to it. Only the first line of that exact shape, a proper
// prefix of an input line followed by a whole input line, is taken apart;
// lines returns the whole line in its place and torn the cut-short start.
// Any other line that is not an input line stays as it is, for the caller
// to report.
func repairTornWrite(lines []string, want map[string]bool) (_ []string, torn string) {
	for i, l := range lines {
		if want[l] {
			continue
		}
		for cut := 1; cut < len(l); cut++ {
			if !want[l[cut:]] || !prefixOfAny(l[:cut], want) {
				continue
			}
			repaired := append([]string(nil), lines...)
			repaired[i] = l[cut:]
			return repaired, l[:cut]
		}
	}
	return lines, ""
}

func prefixOfAny(p string, want map[string]bool) bool {
	for w := range want {
		if len(w) > len(p) && strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

// restError is Kafka Connect's error body.
type restError struct {
	ErrorCode *int    `json:"error_code"`
	Message   *string `json:"message"`
}

// requireError checks a response is Connect's {"error_code","message"} with
// the given status, and returns the message.
func requireError(t *testing.T, what string, code int, body []byte, wantCode int) string {
	t.Helper()
	if code != wantCode {
		t.Fatalf("%s: status %d, want %d: %s", what, code, wantCode, body)
	}
	var e restError
	if err := json.Unmarshal(body, &e); err != nil || e.ErrorCode == nil || e.Message == nil {
		t.Fatalf(`%s: body is not {"error_code","message"}: %s`, what, body)
	}
	if *e.ErrorCode != wantCode {
		t.Fatalf("%s: error_code %d, want %d: %s", what, *e.ErrorCode, wantCode, body)
	}
	if strings.TrimSpace(*e.Message) == "" {
		t.Fatalf("%s: empty message: %s", what, body)
	}
	return *e.Message
}

// TestBadInputOverREST sends the real binary what users get wrong and
// requires Kafka Connect's status codes and error body, a useful message,
// and a worker that keeps serving.
func TestBadInputOverREST(t *testing.T) {
	dir := t.TempDir()
	d := startDev(t, filepath.Join(dir, "data"))

	t.Run("malformed JSON is a 400", func(t *testing.T) {
		code, body := mustSend(t, "POST", d.url("/connectors"), `{"name": "broken", "config": {"connector.class": `)
		requireError(t, "malformed JSON", code, body, http.StatusBadRequest)
	})

	t.Run("unknown connector.class is a 400 listing the known classes", func(t *testing.T) {
		cfg := fileSource(filepath.Join(dir, "x.txt"), "x")
		cfg["connector.class"] = "com.example.NoSuchConnector"
		code, body := mustSend(t, "POST", d.url("/connectors"), connectorJSON(t, "no-such", cfg))
		msg := requireError(t, "unknown class", code, body, http.StatusBadRequest)
		for _, want := range []string{"com.example.NoSuchConnector", "FileStreamSourceConnector"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message does not mention %q: %s", want, msg)
			}
		}
		if c, b := mustSend(t, "GET", d.url("/connectors/no-such"), ""); c != http.StatusNotFound {
			t.Errorf("a refused connector was stored anyway: GET answers %d %s", c, b)
		}
	})

	// Kafka Connect's FileStreamSource waits for a file that does not exist
	// yet; so must Sluice's, RUNNING meanwhile rather than FAILED.
	later, laterOut := filepath.Join(dir, "later.txt"), filepath.Join(dir, "later-out.txt")
	t.Run("a source file that does not exist yet is waited for", func(t *testing.T) {
		createConnector(t, d, "later-sink", fileSink(laterOut, "later"))
		createConnector(t, d, "later-source", fileSource(later, "later"))
		waitRunning(t, d, "later-sink")
		waitRunning(t, d, "later-source")
		// Still running a while later: the missing file is not a
		// failure that merely has not been reported yet.
		time.Sleep(2 * time.Second)
		code, body := mustSend(t, "GET", d.url("/connectors/later-source/status"), "")
		var st proctest.Status
		if code != http.StatusOK || json.Unmarshal(body, &st) != nil || !st.Running() {
			t.Fatalf("source waiting for its file is not RUNNING: %d %s", code, body)
		}

		content := "first\nsecond\nthird\n"
		// Write then rename, so the source never sees half the content.
		tmp := later + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, later); err != nil {
			t.Fatal(err)
		}
		waitFor(t, d.Proc.FailIfExited, stateDeadline, 100*time.Millisecond, "the new file's lines in the sink output", func() (bool, string) {
			got := string(readFile(t, laterOut))
			return got == content, fmt.Sprintf("output so far %q", got)
		})
	})

	t.Run("creating an existing connector is a 409", func(t *testing.T) {
		code, body := mustSend(t, "POST", d.url("/connectors"), connectorJSON(t, "later-source", fileSource(later, "later")))
		requireError(t, "duplicate create", code, body, http.StatusConflict)
	})

	t.Run("an unknown connector is a 404", func(t *testing.T) {
		for _, req := range []struct{ method, path string }{
			{"GET", "/connectors/nope"},
			{"GET", "/connectors/nope/status"},
			{"GET", "/connectors/nope/config"},
			{"PUT", "/connectors/nope/pause"},
			{"DELETE", "/connectors/nope"},
		} {
			code, body := mustSend(t, req.method, d.url(req.path), "")
			requireError(t, req.method+" "+req.path, code, body, http.StatusNotFound)
		}
	})

	// None of the above may have hurt the worker.
	d.FailIfExited()
	if code, body := mustSend(t, "GET", d.url("/health"), ""); code != http.StatusOK {
		t.Fatalf("GET /health after bad input: %d %s", code, body)
	}
	waitRunning(t, d, "later-source")
}

// TestWorkerWaitsForUnreachableBroker starts a worker before its broker: it
// must stay up, answer GET /health with 503 and log that it retries, become
// healthy once the broker appears, and exit 0 on SIGTERM.
func TestWorkerWaitsForUnreachableBroker(t *testing.T) {
	kafkaAddr, restAddr := proctest.FreeAddr(t), proctest.FreeAddr(t)
	w := startProc(t, "sluice-worker", nil,
		"worker", "--cluster", "c", "--bootstrap", kafkaAddr, "--rest-addr", restAddr)

	// Two retries logged prove a retry loop, not one attempt before dying.
	waitFor(t, w.FailIfExited, stateDeadline, 100*time.Millisecond, "two logged retries", func() (bool, string) {
		n := strings.Count(w.StderrText(), "Kafka is unreachable; retrying")
		return n >= 2, fmt.Sprintf("%d retries logged", n)
	})
	if !strings.Contains(w.StderrText(), kafkaAddr) {
		t.Errorf("the retry log does not name the bootstrap address %s:\n%s", kafkaAddr, proctest.Tail(w.Stderr, 10))
	}
	w.FailIfExited()
	code, body := mustSend(t, "GET", "http://"+restAddr+"/health", "")
	if code != http.StatusServiceUnavailable {
		t.Fatalf("GET /health while Kafka is unreachable: %d %s, want 503", code, body)
	}
	// Requests that need Kafka get a 503 too, not a hang or a 500.
	if code, body := mustSend(t, "GET", "http://"+restAddr+"/connectors", ""); code != http.StatusServiceUnavailable {
		t.Errorf("GET /connectors while Kafka is unreachable: %d %s, want 503", code, body)
	}

	b := startProc(t, "sluice-broker", nil, "broker", "--addr", kafkaAddr, "--data-dir", t.TempDir())
	// The worker's backoff caps at 10 s; the deadline leaves room for that.
	waitHealthy(t, w, restAddr)
	if code, body := mustSend(t, "GET", "http://"+restAddr+"/connectors", ""); code != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("GET /connectors once healthy: %d %s, want 200 []", code, body)
	}

	if code := w.Terminate(); code != 0 {
		t.Errorf("worker exited %d on SIGTERM, want 0", code)
	}
	b.FailIfExited()
	if code := b.Terminate(); code != 0 {
		t.Errorf("broker exited %d on SIGTERM, want 0", code)
	}
}

// TestRepairTornWrite: the kill test's tolerance of a torn write takes apart
// exactly one line of the torn shape and nothing else.
func TestRepairTornWrite(t *testing.T) {
	want := map[string]bool{"line 000001 of x": true, "line 000002 of x": true}
	lines, torn := repairTornWrite([]string{"line 000001 of x", "line 00line 000001 of x", "line 000002 of x"}, want)
	if torn != "line 00" || strings.Join(lines, "|") != "line 000001 of x|line 000001 of x|line 000002 of x" {
		t.Fatalf("torn %q, lines %q", torn, lines)
	}
	for _, bad := range [][]string{
		{"garbage line 000001 of x"},         // a start that begins no input line
		{"line 000001 of xtra"},              // no whole line after the cut
		{"line 000001 of xline 000001 of x"}, // a whole line is not a torn start
	} {
		if _, torn := repairTornWrite(bad, want); torn != "" {
			t.Errorf("%q taken apart as a torn write (%q)", bad, torn)
		}
	}
}
