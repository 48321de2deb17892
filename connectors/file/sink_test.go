package file

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
)

// TestRoundTrip100k reads a 100,000-line file with the source and writes
// the values with the sink: the copy must be byte for byte the original.
func TestRoundTrip100k(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	var b bytes.Buffer
	for i := range 100_000 {
		switch i % 7 {
		case 0:
			b.WriteString("\n") // empty lines survive too
		case 3:
			fmt.Fprintf(&b, "ünïcødé %d ✓ \t tab\n", i)
		default:
			fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("z", i%97))
		}
	}
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	src := openSource(t, conformance.NewSourceContext(t, "fs", 0), map[string]string{"file": in, "topic": "t"})
	sink := &SinkTask{}
	if err := sink.Open(context.Background(), conformance.NewSinkContext(t, "sink", 0), map[string]string{"file": out}); err != nil {
		t.Fatal(err)
	}
	n := 0
	offset := int64(0)
	for deadline := time.Now().Add(30 * time.Second); n < 100_000; {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of 100000 lines", n)
		}
		recs := poll(t, src, time.Second)
		if len(recs) > DefaultBatchSize {
			t.Fatalf("batch of %d records, batch.size is %d", len(recs), DefaultBatchSize)
		}
		batch := make([]*connectors.SinkRecord, len(recs))
		for i, r := range recs {
			batch[i] = &connectors.SinkRecord{Topic: "t", Offset: offset, ValueSchema: r.ValueSchema, Value: r.Value}
			offset++
		}
		if err := sink.Write(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		n += len(recs)
	}
	if extra := poll(t, src, 100*time.Millisecond); len(extra) != 0 {
		t.Fatalf("%d lines beyond the 100000", len(extra))
	}
	tp := connectors.TopicPartition{Topic: "t"}
	// The first PreCommit starts the fsync, the second (nothing written
	// since) waits for it and declares everything durable.
	if _, err := sink.PreCommit(context.Background(), map[connectors.TopicPartition]int64{tp: offset}); err != nil {
		t.Fatal(err)
	}
	got, err := sink.PreCommit(context.Background(), map[connectors.TopicPartition]int64{tp: offset})
	if err != nil || got[tp] != offset {
		t.Fatalf("PreCommit = %v, %v", got, err)
	}
	copied, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(copied, b.Bytes()) {
		t.Fatalf("copy differs: %d bytes, original %d", len(copied), b.Len())
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAppendValue(t *testing.T) {
	inner := connectors.StructSchema("in", connectors.Field{Name: "b", Schema: connectors.BooleanSchema})
	s := connectors.StructSchema("v",
		connectors.Field{Name: "n", Schema: connectors.Int32Schema},
		connectors.Field{Name: "s", Schema: connectors.StringSchema},
		connectors.Field{Name: "raw", Schema: connectors.BytesSchema},
		connectors.Field{Name: "in", Schema: inner},
		connectors.Field{Name: "opt", Schema: connectors.OptionalStringSchema},
	)
	sv := connectors.NewStruct(s).MustSet("n", int32(7)).MustSet("s", `q"uote`).MustSet("raw", []byte("hi")).
		MustSet("in", connectors.NewStruct(inner).MustSet("b", true))
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{"as is", "as is"},
		{[]byte{'r', 0xff}, "r\xff"},
		{int64(-42), "-42"},
		{1.5, "1.5"},
		{true, "true"},
		{sv, `{"n":7,"s":"q\"uote","raw":"aGk=","in":{"b":true},"opt":null}`},
		{map[string]any{"b": 1, "a": []any{"x", nil}}, `{"a":["x",null],"b":1}`},
	} {
		if got := string(AppendValue(nil, tc.v, nil)); got != tc.want {
			t.Errorf("AppendValue(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestSinkOpenErrorNamesPath(t *testing.T) {
	dir := t.TempDir()
	task := &SinkTask{}
	err := task.Open(context.Background(), conformance.NewSinkContext(t, "s", 0), map[string]string{"file": dir})
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open of a directory: %v", err)
	}
	if err := task.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSinkConcurrentAppends has several tasks append to one file, as tasks
// of one FileStreamSink do: lines must never be cut or interleaved.
func TestSinkConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.txt")
	const tasks, lines = 4, 1500
	// Values long enough that each task flushes several times mid-batch.
	pad := strings.Repeat("p", 1500)
	var wg sync.WaitGroup
	errs := make(chan error, tasks)
	for id := range tasks {
		wg.Go(func() {
			task := &SinkTask{}
			if err := task.Open(context.Background(), conformance.NewSinkContext(t, "s", id), map[string]string{"file": path}); err != nil {
				errs <- err
				return
			}
			defer task.Close()
			for start := 0; start < lines; start += 500 {
				batch := make([]*connectors.SinkRecord, 0, 500)
				for i := start; i < start+500; i++ {
					batch = append(batch, &connectors.SinkRecord{Value: fmt.Sprintf("task%d-%d-%s", id, i, pad)})
				}
				if err := task.Write(context.Background(), batch); err != nil {
					errs <- err
					return
				}
			}
			if _, err := task.PreCommit(context.Background(), nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	next := make([]int, tasks)
	got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(got) != tasks*lines {
		t.Fatalf("%d lines, want %d", len(got), tasks*lines)
	}
	for _, line := range got {
		head, rest, ok := strings.Cut(line, "-"+pad)
		var id, i int
		if _, err := fmt.Sscanf(head, "task%d-%d", &id, &i); !ok || rest != "" || err != nil || id < 0 || id >= tasks {
			t.Fatalf("mangled line %.80q", line)
		}
		if i != next[id] {
			t.Fatalf("task %d: line %d after %d", id, i, next[id]-1)
		}
		next[id]++
	}
}

func TestSinkStdout(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	task := &SinkTask{}
	err = task.Open(context.Background(), conformance.NewSinkContext(t, "s", 0), map[string]string{})
	os.Stdout = stdout
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Write(context.Background(), []*connectors.SinkRecord{{Value: "to"}, {Value: "stdout"}}); err != nil {
		t.Fatal(err)
	}
	tp := connectors.TopicPartition{Topic: "t"}
	if got, err := task.PreCommit(context.Background(), map[connectors.TopicPartition]int64{tp: 2}); err != nil || got[tp] != 2 {
		t.Fatalf("PreCommit on stdout = %v, %v", got, err)
	}
	if err := task.Close(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, _ := io.ReadAll(r)
	if string(b) != "to\nstdout\n" {
		t.Fatalf("stdout got %q", b)
	}
}

// A batch's lines are in the file once Write returns, before any offset
// commit: nothing waits in the task for offset.flush.interval.ms.
func TestSinkWriteReachesTheFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.txt")
	task := &SinkTask{}
	if err := task.Open(context.Background(), conformance.NewSinkContext(t, "sink", 0), map[string]string{"file": out}); err != nil {
		t.Fatal(err)
	}
	defer task.Close()
	batch := []*connectors.SinkRecord{
		{Topic: "t", Offset: 0, ValueSchema: connectors.StringSchema, Value: "one"},
		{Topic: "t", Offset: 1, ValueSchema: connectors.StringSchema, Value: "two"},
	}
	if err := task.Write(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != "one\ntwo\n" {
		t.Fatalf("file after Write: %q, %v; want both lines", got, err)
	}
}

// TestSinkPreCommitDeclaresSyncedOffsets checks that PreCommit returns only
// offsets whose lines a completed fsync covered: what was written since the
// last PreCommit waits for the next one, and a PreCommit with nothing new
// written declares everything it was given.
func TestSinkPreCommitDeclaresSyncedOffsets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	task := &SinkTask{}
	if err := task.Open(context.Background(), conformance.NewSinkContext(t, "s", 0), map[string]string{"file": path}); err != nil {
		t.Fatal(err)
	}
	defer task.Close()
	a, b := connectors.TopicPartition{Topic: "t", Partition: 0}, connectors.TopicPartition{Topic: "t", Partition: 1}
	write := func(values ...string) {
		t.Helper()
		batch := make([]*connectors.SinkRecord, len(values))
		for i, v := range values {
			batch[i] = &connectors.SinkRecord{Value: v}
		}
		if err := task.Write(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	preCommit := func(offsets map[connectors.TopicPartition]int64, want map[connectors.TopicPartition]int64) {
		t.Helper()
		got, err := task.PreCommit(context.Background(), offsets)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("PreCommit(%v) = %v, want %v", offsets, got, want)
		}
		for tp, off := range want {
			if got[tp] != off {
				t.Fatalf("PreCommit(%v) = %v, want %v", offsets, got, want)
			}
		}
	}
	write("a0", "a1", "b0")
	// Nothing synced yet: nothing is safe.
	preCommit(map[connectors.TopicPartition]int64{a: 2, b: 1}, map[connectors.TopicPartition]int64{})
	write("a2")
	// The fsync the last call started covers a0, a1 and b0.
	preCommit(map[connectors.TopicPartition]int64{a: 3, b: 1}, map[connectors.TopicPartition]int64{a: 2, b: 1})
	// Nothing written since: the fsync under way covers everything.
	preCommit(map[connectors.TopicPartition]int64{a: 3, b: 1}, map[connectors.TopicPartition]int64{a: 3, b: 1})
	// Partition a read again from offset 1 (a rebalance): its lines up to
	// offset 3 are durable already, but no offset beyond what it is given.
	write("a1")
	preCommit(map[connectors.TopicPartition]int64{a: 2}, map[connectors.TopicPartition]int64{a: 2})
	if got, err := os.ReadFile(path); err != nil || string(got) != "a0\na1\nb0\na2\na1\n" {
		t.Fatalf("file %q, %v", got, err)
	}
	// Partition b leaves the task and comes back at offset 7 (its next
	// owner committed up to there): what the task synced of it before
	// must not be returned, or the group's offset would move back to 1.
	if err := task.Revoked(context.Background(), []connectors.TopicPartition{b}); err != nil {
		t.Fatal(err)
	}
	write("b7")
	preCommit(map[connectors.TopicPartition]int64{a: 2, b: 8}, map[connectors.TopicPartition]int64{a: 2})
	preCommit(map[connectors.TopicPartition]int64{a: 2, b: 8}, map[connectors.TopicPartition]int64{a: 2, b: 8})
}

// TestSinkFailureSticks checks that after a failed write no later PreCommit
// succeeds: the lines lost with it must be redelivered (invariant 1).
func TestSinkFailureSticks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	task := &SinkTask{}
	if err := task.Open(context.Background(), conformance.NewSinkContext(t, "s", 0), map[string]string{"file": path}); err != nil {
		t.Fatal(err)
	}
	if err := task.Write(context.Background(), []*connectors.SinkRecord{{Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	// Closing the descriptor under the task makes its next write fail.
	task.f.Close()
	tp := connectors.TopicPartition{Topic: "t"}
	// The fsync runs in the background: this PreCommit may not know yet
	// that it fails, but it must declare nothing durable.
	if got, err := task.PreCommit(context.Background(), map[connectors.TopicPartition]int64{tp: 1}); err == nil && len(got) > 0 {
		t.Fatalf("PreCommit after a failed fsync returned %v", got)
	} else if err != nil && !strings.Contains(err.Error(), path) {
		t.Fatalf("PreCommit after a failed fsync: %v", err)
	}
	if err := task.Write(context.Background(), []*connectors.SinkRecord{{Value: "b"}}); err == nil {
		t.Fatal("Write after a failed write succeeded")
	}
	if got, err := task.PreCommit(context.Background(), map[connectors.TopicPartition]int64{tp: 2}); err == nil {
		t.Fatalf("PreCommit after a failed write returned %v", got)
	}
	task.Close()
}

func TestFileConnectorsCheckOffsets(t *testing.T) {
	src := &SourceConnector{}
	for _, tc := range []struct {
		ch connectors.OffsetChange
		ok bool
	}{
		{connectors.OffsetChange{Partition: map[string]any{"filename": "/x"}, Offset: map[string]any{"position": json.Number("0")}}, true},
		{connectors.OffsetChange{Partition: map[string]any{"filename": "/x"}, Offset: map[string]any{"position": int64(7)}}, true},
		{connectors.OffsetChange{Partition: map[string]any{"filename": "/x"}}, true},
		{connectors.OffsetChange{Partition: map[string]any{"filename": "/x"}, Offset: map[string]any{"position": json.Number("-1")}}, false},
		{connectors.OffsetChange{Partition: map[string]any{"filename": "/x"}, Offset: map[string]any{"pos": 1}}, false},
		{connectors.OffsetChange{Partition: map[string]any{"file": "/x"}, Offset: map[string]any{"position": 1}}, false},
		{connectors.OffsetChange{Offset: map[string]any{"position": 1}}, false},
	} {
		vouched, err := src.AlterOffsets(nil, []connectors.OffsetChange{tc.ch})
		if (err == nil) != tc.ok || vouched != tc.ok {
			t.Errorf("%+v: vouched %v, err %v; want ok=%v", tc.ch, vouched, err, tc.ok)
		}
	}
	if ok, err := (&SinkConnector{}).AlterOffsets(nil, nil); !ok || err != nil {
		t.Fatalf("sink: %v %v", ok, err)
	}
}
