package actors

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/testutil"
)

// bufferSource is a test source whose records are "0:<seq>" with key "0":
// 4 to 6 bytes up to seq 999, 7 bytes from seq 1000. Under
// producer.override.buffer.memory=6 the first thousand fit and the rest are
// larger than the whole buffer.
func bufferSource(e *env, name string, extra map[string]string) {
	hooksFor(name).mu.Lock()
	hooksFor(name).records = 2000
	hooksFor(name).mu.Unlock()
	cfg := withConv(map[string]string{"name": name, "connector.class": "test.TestSource", "topic": e.topic(name + "-out"),
		"producer.override.buffer.memory": "6"})
	for k, v := range extra {
		cfg[k] = v
	}
	e.create(name, cfg)
}

// seqsOf returns the sequence numbers of "0:<seq>" values.
func seqsOf(t *testing.T, values []string) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	for _, v := range values {
		n, err := strconv.Atoi(strings.TrimPrefix(v, "0:"))
		if err != nil {
			t.Fatalf("value %q", v)
		}
		out[n] = true
	}
	return out
}

// producer.override.buffer.memory bounds what a task holds unacknowledged,
// and, as in Connect, a record larger than the whole buffer fails: the
// task fails naming the key, its offset is never committed (invariant 1),
// and the records before it are all in Kafka, none after it.
func TestBufferMemoryRecordTooLargeFailsTask(t *testing.T) {
	e := newEnv(t)
	bufferSource(e, "bufmem", nil)
	testutil.Eventually(t, 30*time.Second, "FAILED naming buffer.memory", func() error {
		if st := e.taskState("bufmem", 0); st.State != state.StateFailed || !strings.Contains(st.Trace, "buffer.memory") {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	off, err := e.offsets.Offset("bufmem", map[string]any{"task": 0})
	if err != nil {
		t.Fatal(err)
	}
	if off != nil && off["seq"].(int64) >= 1000 {
		t.Fatalf("offset %v committed past the record that failed (seq 1000)", off)
	}
	// The failed task restarts from its last committed offset and fails
	// again at seq 1000, so the topic has duplicates: read until every
	// record within buffer.memory is there, then look for one past it.
	testutil.Eventually(t, 30*time.Second, "seq 0-999 in the topic, nothing after", func() error {
		var values []string
		for _, r := range e.readRecords(e.topic("bufmem-out"), 1000, 500*time.Millisecond) {
			values = append(values, string(r.Value))
		}
		seqs := seqsOf(t, values)
		for i := range 1000 {
			if !seqs[i] {
				return fmt.Errorf("seq %d (within buffer.memory) is missing", i)
			}
		}
		if len(seqs) != 1000 {
			t.Fatalf("%d distinct records in the topic, want the 1000 within buffer.memory", len(seqs))
		}
		return nil
	})
}

// With errors.tolerance=all the records larger than buffer.memory are
// skipped as Connect skips a record its producer refuses (KIP-779): the
// task keeps running and their offsets commit.
func TestBufferMemoryRecordTooLargeSkippedWithTolerance(t *testing.T) {
	e := newEnv(t)
	bufferSource(e, "bufmemall", map[string]string{"errors.tolerance": "all", "errors.log.enable": "true"})
	skippedAndRunning(t, e, "bufmemall", 1999)
	var values []string
	for _, r := range e.readRecords(e.topic("bufmemall-out"), 1000, 500*time.Millisecond) {
		values = append(values, string(r.Value))
	}
	if seqs := seqsOf(t, values); len(seqs) != 1000 || len(values) != 1000 {
		t.Fatalf("%d records (%d distinct) in the topic, want seq 0-999 once each", len(values), len(seqs))
	}
}

// A record Kafka's client refuses (here larger than
// producer.override.max.request.size) is skipped under errors.tolerance=all
// and its offset commits, as Connect's WorkerSourceTask does; without
// tolerance it fails the task (TestUnconvertibleSourceRecordIsNotCommitted
// is the same rule for conversion).
func TestRefusedRecordSkippedWithTolerance(t *testing.T) {
	e := newEnv(t)
	hooksFor("refused").mu.Lock()
	hooksFor("refused").records = 50
	hooksFor("refused").mu.Unlock()
	pad := strings.Repeat("x", 600)
	e.create("refused", withConv(map[string]string{"name": "refused", "connector.class": "test.TestSource", "topic": e.topic("refused-out"),
		"producer.override.max.request.size": "512", "errors.tolerance": "all",
		"transforms": "pad", "transforms.pad.type": "org.apache.kafka.connect.transforms.InsertHeader",
		"transforms.pad.header": "pad", "transforms.pad.value.literal": pad}))
	skippedAndRunning(t, e, "refused", 49)
	if got := e.readRecords(e.topic("refused-out"), 0, 500*time.Millisecond); len(got) != 0 {
		t.Fatalf("%d records in the topic, want none (each larger than max.request.size)", len(got))
	}
}

// skippedAndRunning waits until task 0 of connector name committed the
// offset of its last record, seq last, past the records it skipped, and
// checks that it still runs.
func skippedAndRunning(t *testing.T, e *env, name string, last int64) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, "every offset committed", func() error {
		off, err := e.offsets.Offset(name, map[string]any{"task": 0})
		if err != nil || off == nil || off["seq"].(int64) != last {
			return fmt.Errorf("offset %v (err %v), want seq %d", off, err, last)
		}
		return nil
	})
	if st := e.taskState(name, 0); st.State != state.StateRunning {
		t.Fatalf("task %+v, want RUNNING", st)
	}
}
