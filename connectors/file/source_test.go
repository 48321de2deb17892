package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/internal/testutil"
)

// logContext is a source task context whose log the test can read.
type logContext struct {
	*conformance.SourceContext
	buf *testutil.LogBuffer
	log zerolog.Logger
}

func newLogContext(t *testing.T) *logContext {
	b := &testutil.LogBuffer{}
	return &logContext{SourceContext: conformance.NewSourceContext(t, "fs", 0), buf: b, log: zerolog.New(b)}
}

func (c *logContext) Logger() *zerolog.Logger { return &c.log }

func poll(t *testing.T, task connectors.SourceTask, wait time.Duration) []*connectors.SourceRecord {
	t.Helper()
	return conformance.Poll(t, task, wait)
}

func values(recs []*connectors.SourceRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Value.(string)
	}
	return out
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func openSource(t *testing.T, tc connectors.SourceTaskContext, cfg map[string]string) *SourceTask {
	t.Helper()
	task := &SourceTask{}
	if err := task.Open(context.Background(), tc, cfg); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { task.Close() })
	return task
}

func TestSourceWaitsForMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "later.txt")
	tc := newLogContext(t)
	task := openSource(t, tc, map[string]string{"file": path, "topic": "t"})
	for range 3 {
		if recs := poll(t, task, 300*time.Millisecond); len(recs) != 0 {
			t.Fatalf("got %d records before the file exists", len(recs))
		}
	}
	if n := strings.Count(tc.buf.String(), "does not exist yet"); n != 1 {
		t.Errorf("logged the missing file %d times, want once: %s", n, tc.buf.String())
	}
	if !strings.Contains(tc.buf.String(), `"level":"warn"`) || !strings.Contains(tc.buf.String(), path) {
		t.Errorf("missing-file log is not a warning naming the path: %s", tc.buf.String())
	}
	appendFile(t, path, "one\ntwo\n")
	var got []string
	for deadline := time.Now().Add(5 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		got = append(got, values(poll(t, task, 300*time.Millisecond))...)
	}
	if strings.Join(got, ",") != "one,two" {
		t.Fatalf("got %q after the file appeared", got)
	}
}

func TestSourceUnreadablePath(t *testing.T) {
	t.Run("directory at open", func(t *testing.T) {
		dir := t.TempDir()
		task := &SourceTask{}
		err := task.Open(context.Background(), newLogContext(t), map[string]string{"file": dir, "topic": "t"})
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Fatalf("Open of a directory: %v, want an error naming %s", err, dir)
		}
		if err := task.Close(); err != nil {
			t.Errorf("Close after failed Open: %v", err)
		}
	})
	t.Run("directory appears while waiting", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "x")
		task := openSource(t, newLogContext(t), map[string]string{"file": path, "topic": "t"})
		poll(t, task, 50*time.Millisecond)
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		// The next look, a second after the last, finds the directory:
		// at the end of a Poll that waits, or at the start of the Poll
		// after the runtime's nap for a task that returns when idle.
		var err error
		for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = task.Poll(ctx)
			<-ctx.Done() // a Poll that returned at once: the runtime's nap
			cancel()
		}
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("Polls once the path is a directory: %v, want an error naming %s", err, path)
		}
	})
	t.Run("unreadable path", func(t *testing.T) {
		// Mode 000 stops everyone but root; as root (CI runs as root) a path
		// through a regular file is the unreadable case.
		dir := t.TempDir()
		path, want := filepath.Join(dir, "secret"), "permission denied"
		if os.Geteuid() == 0 {
			path, want = filepath.Join(dir, "secret", "inner"), "not a directory"
		}
		if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("x\n"), 0o000); err != nil {
			t.Fatal(err)
		}
		task := &SourceTask{}
		err := task.Open(context.Background(), newLogContext(t), map[string]string{"file": path, "topic": "t"})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open of an unreadable path: %v, want an error naming %s and %q", err, path, want)
		}
		task.Close()
	})
}

func TestSourceLineEndings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "a\nb\r\nc\rd\r")
	task := openSource(t, newLogContext(t), map[string]string{"file": path, "topic": "t"})
	var recs []*connectors.SourceRecord
	collect := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(3 * time.Second); len(recs) < want && time.Now().Before(deadline); {
			recs = append(recs, poll(t, task, 200*time.Millisecond)...)
		}
		// Nothing beyond what is complete.
		recs = append(recs, poll(t, task, 100*time.Millisecond)...)
		if len(recs) != want {
			t.Fatalf("got %d lines %q, want %d", len(recs), values(recs), want)
		}
	}
	// d's \r is the last byte: it may be the start of \r\n, so d waits.
	collect(3)
	// The next byte decides: not \n, so d ended at \r; "e" is unterminated.
	appendFile(t, path, "e")
	collect(4)
	appendFile(t, path, "\r")
	collect(4)
	// \r\n split across two reads is one line end, not an empty line.
	appendFile(t, path, "\nf\n\n")
	collect(7)
	want := []string{"a", "b", "c", "d", "e", "f", ""}
	wantPos := []int64{2, 5, 7, 9, 12, 14, 15}
	for i, r := range recs {
		if r.Value != want[i] || r.SourceOffset()[PositionField] != wantPos[i] {
			t.Errorf("line %d: %q at position %v, want %q at %d", i, r.Value, r.SourceOffset()[PositionField], want[i], wantPos[i])
		}
		if r.Partition[FilenameField] != path || r.Topic != "t" || r.ValueSchema != connectors.StringSchema || r.Key != nil {
			t.Errorf("line %d: bad record %+v", i, r)
		}
	}
}

func TestSourceResumesAtCommittedPosition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "first\nsecond\nthird\n")
	tc := newLogContext(t)
	// 6 is the position after "first\n"; the store gives it back as float64.
	if err := tc.Commit(&connectors.SourceRecord{Partition: map[string]any{"filename": path}, Offset: map[string]any{"position": 6}}); err != nil {
		t.Fatal(err)
	}
	task := openSource(t, tc, map[string]string{"file": path, "topic": "t"})
	got := values(poll(t, task, 500*time.Millisecond))
	if strings.Join(got, ",") != "second,third" {
		t.Fatalf("resumed with %q", got)
	}

	bad := newLogContext(t)
	if err := bad.Commit(&connectors.SourceRecord{Partition: map[string]any{"filename": path}, Offset: map[string]any{"position": "six"}}); err != nil {
		t.Fatal(err)
	}
	task2 := &SourceTask{}
	if err := task2.Open(context.Background(), bad, map[string]string{"file": path, "topic": "t"}); err == nil || !strings.Contains(err.Error(), "incorrect type") {
		t.Fatalf("Open with a string position: %v", err)
	}
	task2.Close()
}

func TestSourceBatchSizeAndLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	// Lines longer than one read, so that the buffer has to grow.
	long := strings.Repeat("y", 3*readSize+17)
	var b strings.Builder
	for range 5 {
		b.WriteString(long + "\n")
	}
	appendFile(t, path, b.String())
	task := openSource(t, newLogContext(t), map[string]string{"file": path, "topic": "t", "batch.size": "2"})
	var sizes []int
	n := 0
	for deadline := time.Now().Add(3 * time.Second); n < 5 && time.Now().Before(deadline); {
		recs := poll(t, task, 200*time.Millisecond)
		for _, r := range recs {
			if r.Value != long {
				t.Fatalf("line of %d bytes, want %d", len(r.Value.(string)), len(long))
			}
		}
		sizes = append(sizes, len(recs))
		n += len(recs)
	}
	if n != 5 {
		t.Fatalf("got %d lines, want 5 (batches %v)", n, sizes)
	}
	for _, s := range sizes {
		if s > 2 {
			t.Fatalf("a batch of %d with batch.size=2: %v", s, sizes)
		}
	}
}

func TestSourceStdin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	task := &SourceTask{stdin: r}
	if err := task.Open(context.Background(), newLogContext(t), map[string]string{"topic": "t"}); err != nil {
		t.Fatal(err)
	}
	// A read blocked on stdin must not hold Poll past its deadline.
	if recs := poll(t, task, 200*time.Millisecond); len(recs) != 0 {
		t.Fatalf("got %q from an empty stdin", values(recs))
	}
	if _, err := w.WriteString("hello\nworld\npartial"); err != nil {
		t.Fatal(err)
	}
	var got []*connectors.SourceRecord
	for deadline := time.Now().Add(3 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		got = append(got, poll(t, task, 200*time.Millisecond)...)
	}
	if strings.Join(values(got), ",") != "hello,world" {
		t.Fatalf("got %q from stdin", values(got))
	}
	if p, ok := got[0].Partition[FilenameField]; !ok || p != nil {
		t.Errorf("stdin partition %v, want filename null as in Connect", got[0].Partition)
	}
	if err := task.Close(); err != nil {
		t.Fatal(err)
	}
	w.Close()
}

func TestSourceConfig(t *testing.T) {
	def := SourceConfigDef()
	for _, tc := range []struct {
		cfg map[string]string
		key string
	}{
		{map[string]string{"file": "x"}, TopicKey},
		{map[string]string{"topic": "a,b"}, TopicKey},
		{map[string]string{"topic": "a", "batch.size": "0"}, BatchSizeKey},
		{map[string]string{"topic": "a", "batch.size": "many"}, BatchSizeKey},
	} {
		_, err := def.Parse(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("Parse(%v) = %v, want an error naming %s", tc.cfg, err, tc.key)
		}
	}
	cfg, err := def.Parse(map[string]string{"topic": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Int(BatchSizeKey) != 2000 || cfg.String(FileKey) != "" {
		t.Errorf("defaults: batch.size %d, file %q", cfg.Int(BatchSizeKey), cfg.String(FileKey))
	}
	c := &SourceConnector{}
	if err := c.Start(context.Background(), nil, map[string]string{"topic": "a", "file": "f"}); err != nil {
		t.Fatal(err)
	}
	tcs, err := c.TaskConfigs(context.Background(), 4)
	if err != nil || len(tcs) != 1 || tcs[0]["file"] != "f" {
		t.Errorf("TaskConfigs(4) = %v, %v; want exactly one task", tcs, err)
	}
}

// An idle task backs off to Connect's one look a second, drops its read
// buffer, and still reads what is appended afterwards from the right
// position, following it closely again.
func TestSourceIdleBacksOffAndReleasesItsBuffer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "a\npartial")
	task := openSource(t, newLogContext(t), map[string]string{"file": path, "topic": "t"})
	if got := values(poll(t, task, 200*time.Millisecond)); strings.Join(got, ",") != "a" {
		t.Fatalf("first poll: %q, want [a]", got)
	}
	// 50+100+200+400+800 ms of waits reach the cap; the pending "partial"
	// keeps the buffer.
	poll(t, task, 2500*time.Millisecond)
	if task.tailWait != maxTailInterval {
		t.Fatalf("after 2.5 s idle the wait is %v, want %v", task.tailWait, maxTailInterval)
	}
	if task.buf == nil {
		t.Fatal("the buffer was released while it held a partial line")
	}
	appendFile(t, path, " line\n")
	var got []string
	for deadline := time.Now().Add(3 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		got = values(poll(t, task, 200*time.Millisecond))
	}
	if strings.Join(got, ",") != "partial line" {
		t.Fatalf("after the append: %q, want [partial line]", got)
	}
	if task.tailWait != tailInterval {
		t.Fatalf("after data the wait is %v, want %v again", task.tailWait, tailInterval)
	}
	// Nothing pending now: idle past the cap releases the buffer.
	poll(t, task, 3500*time.Millisecond)
	if task.buf != nil || !task.released {
		t.Fatalf("idle with nothing pending: buffer of %d bytes kept (released %v)", len(task.buf), task.released)
	}
	appendFile(t, path, "b\nc\n")
	var recs []*connectors.SourceRecord
	for deadline := time.Now().Add(3 * time.Second); len(recs) < 2 && time.Now().Before(deadline); {
		recs = append(recs, poll(t, task, 200*time.Millisecond)...)
	}
	if strings.Join(values(recs), ",") != "b,c" {
		t.Fatalf("after the release: %q, want [b c]", values(recs))
	}
	// Positions continue from before the release: "a\npartial line\n" is
	// 15 bytes, "b\nc\n" 4 more.
	if p := recs[1].SourceOffset()[PositionField]; p != int64(19) {
		t.Fatalf("position after c: %v, want 19", p)
	}
}

// A task whose file holds nothing past its position, empty or read up to the
// committed offset, takes no read buffer before the first line arrives: a
// worker starting hundreds of idle tasks would otherwise allocate 128 KiB
// each (issue 13's idle memory). The line that arrives is read as before.
func TestSourceAllocatesNoBufferBeforeTheFirstLine(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	appendFile(t, empty, "")
	read := filepath.Join(dir, "read.txt")
	appendFile(t, read, "first\n")
	readCtx := newLogContext(t)
	if err := readCtx.Commit(&connectors.SourceRecord{Partition: map[string]any{"filename": read}, Offset: map[string]any{"position": 6}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		tc         *logContext
		wantPos    int64
	}{{"empty file", empty, newLogContext(t), 2}, {"file read to its committed position", read, readCtx, 8}} {
		task := openSource(t, c.tc, map[string]string{"file": c.path, "topic": "t"})
		if recs := poll(t, task, 300*time.Millisecond); len(recs) != 0 {
			t.Fatalf("%s: %d records before any was written", c.name, len(recs))
		}
		if task.buf != nil {
			t.Fatalf("%s: a read buffer of %d bytes before the first line", c.name, len(task.buf))
		}
		appendFile(t, c.path, "a\n")
		var recs []*connectors.SourceRecord
		for deadline := time.Now().Add(3 * time.Second); len(recs) == 0 && time.Now().Before(deadline); {
			recs = poll(t, task, 200*time.Millisecond)
		}
		if strings.Join(values(recs), ",") != "a" {
			t.Fatalf("%s: after the append %q, want [a]", c.name, values(recs))
		}
		if p := recs[0].SourceOffset()[PositionField]; p != c.wantPos {
			t.Fatalf("%s: position after a: %v, want %d", c.name, p, c.wantPos)
		}
	}
}

// pollAsRuntime makes one Poll of wait as the runtime does (with a
// deadline the task keeps itself) and returns its records, how long the Poll
// itself took, and how far away the task's next look was when it returned.
// Then, for a task that returned at once, it naps until the deadline.
func pollAsRuntime(t *testing.T, task *SourceTask, wait time.Duration) ([]*connectors.SourceRecord, time.Duration, time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(wait)
	recs, err := task.Poll(connectors.KeptDeadline(context.Background(), deadline))
	took, next := time.Since(start), time.Until(task.nextLook)
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	if len(recs) == 0 {
		time.Sleep(time.Until(deadline))
	}
	return recs, took, next
}

// Once idle, a task whose Polls of a second follow one another, as the
// runtime calls them, wakes up once per Poll. A task that waits in Poll looks
// on the wake-up that ends it, and its next look is then a whole wait away
// (looking a second after the look before, wherever that fell, would wake
// it once more inside each Poll). A task that returns when idle
// (ReturnsWhenIdle) looks when the runtime's nap ends, at the start of a
// Poll, and returns without waiting.
func TestSourceIdleLooksOnTheWakeUpThatEndsAPoll(t *testing.T) {
	for _, returns := range []bool{false, true} {
		t.Run(fmt.Sprintf("returns when idle %v", returns), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.txt")
			appendFile(t, path, "")
			task := openSource(t, newLogContext(t), map[string]string{"file": path, "topic": "t"})
			if got := task.ReturnsWhenIdle(); got != true {
				t.Fatalf("ReturnsWhenIdle of a regular file: %v", got)
			}
			task.returnsWhenIdle = returns
			// The back-off's 50+100+200+400+800 ms end inside the
			// second Poll, out of step with the Polls.
			pollAsRuntime(t, task, time.Second)
			pollAsRuntime(t, task, time.Second)
			looks := 0
			for i := range 3 {
				before := task.nextLook
				recs, took, next := pollAsRuntime(t, task, time.Second)
				if len(recs) != 0 {
					t.Fatalf("poll %d: %d records from an empty file", i, len(recs))
				}
				if !task.nextLook.Equal(before) {
					looks++
					// The next look is due a whole wait later: on the
					// wake-up that ends the next Poll, or that starts
					// the one after it.
					if next < 900*time.Millisecond {
						t.Fatalf("poll %d: next look in %v: it would wake the task inside the next Poll", i, next)
					}
				}
				if returns && took > 500*time.Millisecond {
					t.Fatalf("poll %d took %v of its second: a task that returns when idle waited", i, took)
				}
			}
			if looks < 2 {
				t.Fatalf("%d looks in 3 idle Polls of a second, want 2 or 3", looks)
			}
			appendFile(t, path, "a\n")
			var got []string
			for i := 0; i < 2 && len(got) == 0; i++ {
				recs, _, _ := pollAsRuntime(t, task, time.Second)
				got = values(recs)
			}
			if strings.Join(got, ",") != "a" {
				t.Fatalf("a line appended to an idle file: %q within two Polls of a second, want [a]", got)
			}
		})
	}
}

// Polls much shorter than the wait (a short offset.flush.interval.ms) make
// an idle task look no more than twice per wait: a look moves by at most
// half its wait.
func TestSourceIdleLooksAtMostTwicePerWaitWithShortPolls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "")
	task := openSource(t, newLogContext(t), map[string]string{"file": path, "topic": "t"})
	poll(t, task, 2*time.Second) // backed off to the one-second wait
	looks := 0
	last := task.nextLook
	for start := time.Now(); time.Since(start) < 3*time.Second; {
		poll(t, task, 100*time.Millisecond)
		if !task.nextLook.Equal(last) {
			looks++
			last = task.nextLook
		}
	}
	if looks < 3 || looks > 7 {
		t.Fatalf("%d looks in 3 s of 100 ms Polls, want 3 to 7 (every 0.5 to 1 s)", looks)
	}
}

// An idle stream drops its read buffer too, and looks without taking one
// back until a chunk arrives, which is then read at once.
func TestSourceIdleStdinReleasesItsBuffer(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	task := &SourceTask{stdin: r}
	if err := task.Open(context.Background(), newLogContext(t), map[string]string{"topic": "t"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { task.Close() })
	if _, err := w.WriteString("a\n"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for deadline := time.Now().Add(3 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		got = values(poll(t, task, 200*time.Millisecond))
	}
	if strings.Join(got, ",") != "a" {
		t.Fatalf("got %q, want [a]", got)
	}
	poll(t, task, 2500*time.Millisecond)
	if task.buf != nil {
		t.Fatalf("idle stdin kept a buffer of %d bytes", len(task.buf))
	}
	// Looks at an idle stream must not take a buffer back.
	poll(t, task, 1200*time.Millisecond)
	if task.buf != nil {
		t.Fatalf("a look at an idle stdin allocated a buffer of %d bytes", len(task.buf))
	}
	if _, err := w.WriteString("b\n"); err != nil {
		t.Fatal(err)
	}
	// The chunk wakes the task within this one Poll: it does not wait out
	// the idle second, which would end the Poll empty.
	if got := values(poll(t, task, 500*time.Millisecond)); strings.Join(got, ",") != "b" {
		t.Fatalf("got %q after the write, want [b]", got)
	}
}

// A task whose file does not exist yet tries to open it once a second, as
// Connect's, across Polls that end at their deadline, and reads it soon
// after it appears.
func TestSourceLooksForAMissingFileOnceASecond(t *testing.T) {
	path := filepath.Join(t.TempDir(), "later.txt")
	task := openSource(t, newLogContext(t), map[string]string{"file": path, "topic": "t"})
	poll(t, task, 100*time.Millisecond)
	if next := time.Until(task.nextLook); next < 500*time.Millisecond || next > missingInterval {
		t.Fatalf("next attempt to open in %v, want about %v", next, missingInterval)
	}
	appendFile(t, path, "x\n")
	var got []string
	for deadline := time.Now().Add(3 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		got = values(poll(t, task, 200*time.Millisecond))
	}
	if strings.Join(got, ",") != "x" {
		t.Fatalf("got %q once the file appeared, want [x]", got)
	}
}

// An idle task's look at its file (once a second, for every idle
// connector) allocates nothing: one fstat, no FileInfo.
func TestSourceIdleLookAllocatesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "a\n")
	task := openSource(t, newLogContext(t), map[string]string{"file": path, "topic": "t"})
	if got := values(poll(t, task, 200*time.Millisecond)); strings.Join(got, ",") != "a" {
		t.Fatalf("got %q, want [a]", got)
	}
	task.releaseIdle()
	if !task.released {
		t.Fatal("the buffer was not released with nothing pending")
	}
	allocs := testing.AllocsPerRun(100, func() {
		if n, err := task.fill(); n != 0 || err != nil {
			t.Fatalf("fill at the end of the file: %d, %v", n, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("a look at an idle file allocated %.1f times, want 0", allocs)
	}
}

// A poll of many lines allocates only the strings its lines are cut from,
// one per read of up to readSize bytes, nothing per line: records and the
// headers of their values (strbox) are the last poll's, written over
// (LendsRecords), and lines are substrings of the bytes read.
func TestSourcePollAllocatesPerReadNotPerLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	const lines, polls = 2000, 5
	line := strings.Repeat("v", 60) + "\n"
	appendFile(t, path, strings.Repeat(line, lines*(polls+2))) // AllocsPerRun polls once more to warm up
	task := openSource(t, newLogContext(t), map[string]string{"file": path, "topic": "t", "batch.size": strconv.Itoa(lines)})
	if got := poll(t, task, time.Second); len(got) != lines {
		t.Fatalf("the first poll returned %d records, want %d", len(got), lines)
	}
	allocs := testing.AllocsPerRun(polls, func() {
		got, err := task.Poll(context.Background())
		if err != nil || len(got) != lines {
			t.Fatalf("poll: %d records, %v; want %d", len(got), err, lines)
		}
		if v, ok := got[lines-1].Value.(string); !ok || v+"\n" != line {
			t.Fatalf("last value %#v", got[lines-1].Value)
		}
	})
	reads := (lines*len(line)+readSize-1)/readSize + 1 // and one for a line cut by a read
	t.Logf("a poll of %d lines allocated %.0f times", lines, allocs)
	if allocs > float64(reads) {
		t.Fatalf("a poll of %d lines allocated %.0f times, want at most %d (a string per read)", lines, allocs, reads)
	}
}

// TestSourceRecordsWrittenOverAtTheNextPoll: a Poll writes over the records
// of the last (LendsRecords), in slabs of sizes that differ from the batch
// size; each Poll's records, read before the next Poll, hold their lines and
// offsets, and no two of them are one record.
func TestSourceRecordsWrittenOverAtTheNextPoll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	var b strings.Builder
	const lines = 3000
	for i := range lines {
		fmt.Fprintf(&b, "line-%d\n", i)
	}
	appendFile(t, path, b.String())
	task := openSource(t, newLogContext(t), map[string]string{"file": path, "topic": "t", "batch.size": "700"})
	if !task.LendsRecords() {
		t.Fatal("the task does not lend its records")
	}
	seen, end := 0, int64(0)
	var first *connectors.SourceRecord
	for deadline := time.Now().Add(5 * time.Second); seen < lines && time.Now().Before(deadline); {
		recs, err := task.Poll(connectors.KeptDeadline(context.Background(), time.Now().Add(200*time.Millisecond)))
		if err != nil {
			t.Fatal(err)
		}
		distinct := map[*connectors.SourceRecord]bool{}
		for _, r := range recs {
			end += int64(len(fmt.Sprintf("line-%d\n", seen)))
			if r.Value != fmt.Sprintf("line-%d", seen) || r.SourceOffset()[PositionField] != end {
				t.Fatalf("record %d reads %q at %v, want line-%d at %d", seen, r.Value, r.SourceOffset()[PositionField], seen, end)
			}
			if distinct[r] {
				t.Fatalf("record %d is an earlier record of the same poll", seen)
			}
			distinct[r] = true
			seen++
		}
		if len(recs) > 0 {
			if first == nil {
				first = recs[0]
			} else if recs[0] != first {
				t.Fatal("a poll made its records anew instead of writing over the last poll's")
			}
		}
	}
	if seen != lines {
		t.Fatalf("got %d lines, want %d", seen, lines)
	}
}
