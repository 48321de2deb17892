package state

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/testutil"
)

func flushAndRead(t *testing.T, writer *StatusLog, readers ...*StatusLog) {
	t.Helper()
	if err := writer.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	for _, r := range append(readers, writer) {
		if err := r.t.WaitForEnd(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
}

func statusRecord(key string, st Status) *kgo.Record {
	v, _ := json.Marshal(st)
	return &kgo.Record{Topic: statusTopic, Key: []byte(key), Value: v}
}

func TestStatusLogPutIsVisibleAtOnceAndToOthers(t *testing.T) {
	opts := newCluster(t)
	a, b := twoStatusLogs(t, opts)

	run := Status{State: StateRunning, WorkerID: "w1:8083", Generation: 3}
	a.PutConnector("my-conn", run)
	a.PutTask(connectors.TaskID{Connector: "my-conn", Task: 0}, run)
	failed := Status{State: StateFailed, Trace: "boom\n\tat x", WorkerID: "w1:8083", Generation: 3}
	a.PutTask(connectors.TaskID{Connector: "my-conn", Task: 1}, failed)
	a.PutTask(connectors.TaskID{Connector: "my-conn-2", Task: 0}, run)

	// Visible to the writer before anything was read back.
	if st, ok := a.Connector("my-conn"); !ok || st != run {
		t.Fatalf("own connector status: %+v %v", st, ok)
	}
	wantTasks := map[int]Status{0: run, 1: failed}
	if got := a.Tasks("my-conn"); !reflect.DeepEqual(got, wantTasks) {
		t.Fatalf("own task statuses: %+v", got)
	}

	flushAndRead(t, a, b)
	if st, ok := b.Connector("my-conn"); !ok || st != run {
		t.Fatalf("other worker: connector status %+v %v", st, ok)
	}
	if got := b.Tasks("my-conn"); !reflect.DeepEqual(got, wantTasks) {
		t.Fatalf("other worker: task statuses %+v", got)
	}
	// "my-conn-2-0" is task 0 of my-conn-2, not task 2-0 of my-conn.
	if got := b.Tasks("my-conn-2"); !reflect.DeepEqual(got, map[int]Status{0: run}) {
		t.Fatalf("connector with a dash: %+v", got)
	}
	if len(a.overlay) != 0 {
		t.Fatalf("writes read back but still held locally: %v", a.overlay)
	}
}

func TestStatusLogGenerationRule(t *testing.T) {
	opts := newCluster(t)
	a, b := twoStatusLogs(t, opts)
	raw := kafkatest.NewClient(t, opts)
	id := connectors.TaskID{Connector: "c", Task: 0}

	newer := Status{State: StateRunning, WorkerID: "w2", Generation: 5}
	b.PutTask(id, newer)
	flushAndRead(t, b, a)

	// A worker still in an older generation is stale: its Put is neither
	// shown nor written.
	stale := Status{State: StateUnassigned, WorkerID: "w1", Generation: 4}
	a.PutTask(id, stale)
	if got := a.Tasks("c")[0]; got != newer {
		t.Fatalf("stale put replaced the local view: %+v", got)
	}
	// Even written straight to the topic (by a worker that had not read
	// the newer status yet), it does not replace the newer one.
	kafkatest.Produce(t, raw, statusRecord("status-task-c-0", stale))
	flushAndRead(t, a, a, b)
	if got := b.Tasks("c")[0]; got != newer {
		t.Fatalf("older generation from another worker replaced the status: %+v", got)
	}
	if got := a.Tasks("c")[0]; got != newer {
		t.Fatalf("writer's view: %+v", got)
	}

	// The same worker may report with any generation (it is the one
	// running the task).
	same := Status{State: StateFailed, Trace: "t", WorkerID: "w2", Generation: 1}
	kafkatest.Produce(t, raw, statusRecord("status-task-c-0", same))
	flushAndRead(t, a, a, b)
	if got := a.Tasks("c")[0]; got != same {
		t.Fatalf("same worker, lower generation: %+v", got)
	}

	// Another worker with the same generation (a hand-over inside a
	// rebalance) replaces it.
	handover := Status{State: StateRunning, WorkerID: "w3", Generation: 1}
	a.PutTask(id, handover)
	if got := a.Tasks("c")[0]; got != handover {
		t.Fatalf("equal generation from another worker, local: %+v", got)
	}
	flushAndRead(t, a, b)
	if got := b.Tasks("c")[0]; got != handover {
		t.Fatalf("equal generation from another worker, read: %+v", got)
	}
}

func TestStatusLogDeleteConnector(t *testing.T) {
	opts := newCluster(t)
	a, b := twoStatusLogs(t, opts)
	run := Status{State: StateRunning, WorkerID: "w1", Generation: 1}
	a.PutConnector("gone", run)
	a.PutConnector("kept", run)
	for n := range 3 {
		a.PutTask(connectors.TaskID{Connector: "gone", Task: n}, run)
		a.PutTask(connectors.TaskID{Connector: "kept", Task: n}, run)
	}
	flushAndRead(t, a, b)

	a.DeleteConnector("gone", 3)
	if _, ok := a.Connector("gone"); ok || len(a.Tasks("gone")) != 0 {
		t.Fatal("deleted statuses still visible to the writer")
	}
	flushAndRead(t, a, b)
	for _, s := range []*StatusLog{a, b, startStatusLog(t, opts, zerolog.Nop())} {
		if _, ok := s.Connector("gone"); ok || len(s.Tasks("gone")) != 0 {
			t.Fatalf("deleted statuses still visible: %+v", s.Tasks("gone"))
		}
		if _, ok := s.Connector("kept"); !ok || len(s.Tasks("kept")) != 3 {
			t.Fatalf("other connector's statuses lost: %+v", s.Tasks("kept"))
		}
	}
}

func TestStatusLogSkipsUnparseableRecords(t *testing.T) {
	opts := newCluster(t)
	raw := kafkatest.NewClient(t, opts)
	kafkatest.Produce(t, raw,
		&kgo.Record{Topic: statusTopic, Key: []byte("status-connector-x"), Value: []byte(`{"state":"RUNNING","trace":null,"worker_id":"w","generation":2}`)},
		&kgo.Record{Topic: statusTopic, Key: []byte("status-connector-y"), Value: []byte(`garbage`)},
		&kgo.Record{Topic: statusTopic, Key: []byte("status-task-x-zero"), Value: []byte(`{"state":"RUNNING"}`)},
		&kgo.Record{Topic: statusTopic, Key: []byte("status-task-x-1"), Value: []byte(`{"worker_id":"w"}`)},
		&kgo.Record{Topic: statusTopic, Key: []byte("status-topic-t:connector-x"), Value: []byte(`{"topic":{}}`)},
	)
	var logs testutil.LogBuffer
	s := startStatusLog(t, opts, zerolog.New(&logs))
	if st, ok := s.Connector("x"); !ok || st != (Status{State: StateRunning, WorkerID: "w", Generation: 2}) {
		t.Fatalf("Connect-written status: %+v %v", st, ok)
	}
	if _, ok := s.Connector("y"); ok || len(s.Tasks("x")) != 0 {
		t.Fatal("unparseable statuses were applied")
	}
	out := logs.String()
	for _, want := range []string{`"key":"status-connector-y"`, `"key":"status-task-x-zero"`, `"key":"status-task-x-1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "status-topic-") {
		t.Errorf("topic tracking record reported:\n%s", out)
	}
}

func TestStatusLogPutNeverBlocksAndFlushReportsFailures(t *testing.T) {
	s, err := NewStatusLog([]kgo.Opt{kgo.SeedBrokers(testutil.ClosedAddr(t))}, statusTopic, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	start := time.Now()
	for n := range statusMaxBuffered + 100 {
		s.PutTask(connectors.TaskID{Connector: "c", Task: n}, Status{State: StateRunning, WorkerID: "w", Generation: 1})
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("%d puts without a broker took %v", statusMaxBuffered+100, took)
	}
	if got := s.Tasks("c")[7]; got.State != StateRunning {
		t.Fatalf("a put is not visible locally while unsent: %+v", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.Flush(ctx); err == nil {
		t.Fatal("Flush with a broker that is not there returned nil")
	}
	// Puts beyond the producer's buffer failed at once and were dropped
	// from the local view rather than shown as if written.
	if got := len(s.Tasks("c")); got != statusMaxBuffered {
		t.Fatalf("%d statuses visible, want the %d that fit the buffer", got, statusMaxBuffered)
	}

	sctx, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	if err := s.Start(sctx); err == nil || !strings.Contains(err.Error(), "status topic") {
		t.Fatalf("Start against a closed port: %v", err)
	}
}

func TestStatusLogFlush(t *testing.T) {
	opts := newCluster(t)
	a := startStatusLog(t, opts, zerolog.Nop())
	for n := range 200 {
		a.PutTask(connectors.TaskID{Connector: "c", Task: n}, Status{State: StateRunning, WorkerID: "w", Generation: 1})
	}
	if err := a.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// After Flush every write is in the topic: a reader that starts now
	// sees all of them.
	b := startStatusLog(t, opts, zerolog.Nop())
	if got := len(b.Tasks("c")); got != 200 {
		t.Fatalf("after Flush a new reader sees %d statuses, want 200", got)
	}
	if v := fmt.Sprint(b.Tasks("c")[199]); !strings.Contains(v, "RUNNING") {
		t.Fatalf("status 199: %s", v)
	}
}

// A Put is shown until the tailer has read it back, even if the tailer
// meanwhile applies older records of the same key.
func TestStatusLogOwnPutWinsOverLaggingTailer(t *testing.T) {
	opts := newCluster(t)
	s := startStatusLog(t, opts, zerolog.Nop())
	earlier := statusRecord("status-task-c-0", Status{State: StateUnassigned, WorkerID: "w", Generation: 2})
	kafkatest.Produce(t, kafkatest.NewClient(t, opts), earlier)
	if err := s.t.WaitForEnd(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.t.Client().PauseFetchTopics(statusTopic)
	id := connectors.TaskID{Connector: "c", Task: 0}
	running := Status{State: StateRunning, WorkerID: "w", Generation: 2}
	s.PutTask(id, running)
	if err := s.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// The earlier status of the same worker, read again late (as a
	// tailer behind the write would read it).
	s.apply(earlier)
	if got := s.Tasks("c")[0]; got != running {
		t.Fatalf("lagging tailer replaced this worker's own put: %+v", got)
	}
	s.t.Client().ResumeFetchTopics(statusTopic)
	if err := s.t.WaitForEnd(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	held := len(s.overlay)
	s.mu.Unlock()
	if held != 0 || s.Tasks("c")[0] != running {
		t.Fatalf("after read back: overlay %d, status %+v", held, s.Tasks("c")[0])
	}
}

// Lines about a connector's or a task's status carry the connector and
// task fields, as the lines of the connector and task themselves do.
func TestStatusLogLinesCarryTheConnectorAndTask(t *testing.T) {
	var out testutil.LogBuffer
	s, err := NewStatusLog([]kgo.Opt{kgo.SeedBrokers(testutil.ClosedAddr(t))}, statusTopic, zerolog.New(&out).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A status of an older generation from another worker is not written,
	// and the line saying so names what it is about.
	s.PutTask(connectors.TaskID{Connector: "orders", Task: 2}, Status{State: StateRunning, WorkerID: "w2", Generation: 5})
	s.PutTask(connectors.TaskID{Connector: "orders", Task: 2}, Status{State: StateFailed, WorkerID: "w1", Generation: 3})
	s.PutConnector("orders", Status{State: StateRunning, WorkerID: "w2", Generation: 5})
	s.PutConnector("orders", Status{State: StateFailed, WorkerID: "w1", Generation: 3})
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if m["message"] == "not writing a status older than the current one" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("want a line for the task and one for the connector, got %v", lines)
	}
	if task := lines[0]; task["connector"] != "orders" || task["task"] != 2.0 || task["status_worker"] != "w1" {
		t.Errorf("the task's line: %v", task)
	}
	if conn := lines[1]; conn["connector"] != "orders" || conn["task"] != nil {
		t.Errorf("the connector's line: %v", conn)
	}
}
