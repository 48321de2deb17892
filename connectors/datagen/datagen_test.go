package datagen_test

import (
	"context"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/connectors/datagen"
)

func openTask(t testing.TB, tc connectors.SourceTaskContext, cfg map[string]string) *datagen.Task {
	t.Helper()
	task := &datagen.Task{}
	if err := task.Open(context.Background(), tc, cfg); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { task.Close() })
	return task
}

func poll(t testing.TB, task connectors.SourceTask, wait time.Duration) []*connectors.SourceRecord {
	t.Helper()
	return conformance.Poll(t, task, wait)
}

func seqOf(t testing.TB, r *connectors.SourceRecord) int64 {
	t.Helper()
	return r.Value.(*connectors.StructValue).Get("seq").(int64)
}

func TestSequence(t *testing.T) {
	c := &datagen.Connector{}
	cfg := map[string]string{"topic": "gen", "max.records": "10", "batch.size": "4"}
	if err := c.Start(context.Background(), conformance.NewConnectorContext(t, "dg"), cfg); err != nil {
		t.Fatal(err)
	}
	tcs, err := c.TaskConfigs(context.Background(), 3)
	if err != nil || len(tcs) != 3 {
		t.Fatalf("TaskConfigs(3) = %d configs, %v; want exactly 3", len(tcs), err)
	}
	for i, tc := range tcs {
		if tc["task.id"] != string(rune('0'+i)) || tc["topic"] != "gen" {
			t.Errorf("task config %d: %v", i, tc)
		}
	}
	task := openTask(t, conformance.NewSourceContext(t, "dg", 2), tcs[2])
	var sizes []int
	var seqs []int64
	for range 3 {
		recs := poll(t, task, time.Second)
		sizes = append(sizes, len(recs))
		for _, r := range recs {
			seqs = append(seqs, seqOf(t, r))
			if r.Key != "dg-2" || r.KeySchema != connectors.StringSchema || r.Topic != "gen" {
				t.Fatalf("record key %v topic %q", r.Key, r.Topic)
			}
			if r.Partition["task"] != 2 || r.SourceOffset()["seq"] != seqOf(t, r) {
				t.Fatalf("partition %v offset %v", r.Partition, r.SourceOffset())
			}
			v := r.Value.(*connectors.StructValue)
			if r.ValueSchema != datagen.ValueSchema || v.Schema.Name != "io.sluice.connect.datagen.Value" || v.Get("task") != int32(2) || v.Get("pad") != "" {
				t.Fatalf("value %+v", v)
			}
		}
	}
	if len(sizes) != 3 || sizes[0] != 4 || sizes[1] != 4 || sizes[2] != 2 {
		t.Errorf("batch sizes %v, want [4 4 2]", sizes)
	}
	for i, s := range seqs {
		if s != int64(i) {
			t.Fatalf("seqs %v, want 0..9", seqs)
		}
	}
	// Done: Poll idles to its deadline and never errors.
	start := time.Now()
	if recs := poll(t, task, 200*time.Millisecond); len(recs) != 0 {
		t.Fatalf("%d records past max.records", len(recs))
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("an exhausted task returned after %v instead of idling to the deadline", took)
	}
}

func TestResume(t *testing.T) {
	tc := conformance.NewSourceContext(t, "dg", 1)
	if err := tc.Commit(&connectors.SourceRecord{Partition: map[string]any{"task": 1}, Offset: map[string]any{"seq": int64(41)}}); err != nil {
		t.Fatal(err)
	}
	task := openTask(t, tc, map[string]string{"topic": "gen", "task.id": "1", "batch.size": "3"})
	recs := poll(t, task, time.Second)
	if len(recs) != 3 || seqOf(t, recs[0]) != 42 || seqOf(t, recs[2]) != 44 {
		t.Fatalf("resumed at %d (%d records), want 42", seqOf(t, recs[0]), len(recs))
	}
	// Another task's offsets are not this one's.
	other := openTask(t, tc, map[string]string{"topic": "gen", "task.id": "0", "batch.size": "1"})
	if recs := poll(t, other, time.Second); seqOf(t, recs[0]) != 0 {
		t.Fatalf("task 0 started at %d", seqOf(t, recs[0]))
	}
}

func TestRateLimit(t *testing.T) {
	task := openTask(t, conformance.NewSourceContext(t, "dg", 0), map[string]string{"topic": "gen", "records.per.second": "50"})
	n := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		n += len(poll(t, task, time.Until(end)))
	}
	if n < 20 || n > 80 {
		t.Fatalf("%d records in 1s at 50/s", n)
	}
	t.Logf("%d records in 1s at 50/s", n)

	// A fractional rate: one record at once, the next only after 2 s.
	slow := openTask(t, conformance.NewSourceContext(t, "dg", 0), map[string]string{"topic": "gen", "records.per.second": "0.5"})
	n = 0
	for end := time.Now().Add(1200 * time.Millisecond); time.Now().Before(end); {
		n += len(poll(t, slow, time.Until(end)))
	}
	if n != 1 {
		t.Fatalf("%d records in 1.2s at 0.5/s, want 1", n)
	}
}

func TestValueSize(t *testing.T) {
	task := openTask(t, conformance.NewSourceContext(t, "dg", 0), map[string]string{"topic": "gen", "value.size": "100", "batch.size": "5"})
	recs := poll(t, task, time.Second)
	if len(recs) != 5 {
		t.Fatalf("%d records", len(recs))
	}
	pad0 := recs[0].Value.(*connectors.StructValue).Get("pad").(string)
	if pad0 != strings.Repeat("x", 100) {
		t.Fatalf("pad %q", pad0)
	}
	for _, r := range recs {
		pad := r.Value.(*connectors.StructValue).Get("pad").(string)
		// The padding is built once per task, not per record.
		if unsafe.StringData(pad) != unsafe.StringData(pad0) {
			t.Fatal("pad is rebuilt per record")
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg map[string]string
		key string
	}{
		{map[string]string{}, "topic"},
		{map[string]string{"topic": "t", "max.records": "-2"}, "max.records"},
		{map[string]string{"topic": "t", "records.per.second": "-1"}, "records.per.second"},
		{map[string]string{"topic": "t", "value.size": "-1"}, "value.size"},
		{map[string]string{"topic": "t", "batch.size": "0"}, "batch.size"},
	} {
		task := &datagen.Task{}
		err := task.Open(context.Background(), conformance.NewSourceContext(t, "dg", 0), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("Open(%v) = %v, want an error naming %s", tc.cfg, err, tc.key)
		}
		task.Close()
	}
}

func TestParseValue(t *testing.T) {
	for _, tc := range []struct {
		in   string
		task int
		seq  int64
	}{
		{`{"task":3,"seq":17,"pad":"xx"}`, 3, 17},
		{`{"schema":{"type":"struct","fields":[{"field":"task","type":"int32"},{"field":"seq","type":"int64"},{"field":"pad","type":"string"}],"optional":false,"name":"io.sluice.connect.datagen.Value"},"payload":{"task":0,"seq":9007199254740993,"pad":""}}`, 0, 9007199254740993},
	} {
		task, seq, err := datagen.ParseValue([]byte(tc.in))
		if err != nil || task != tc.task || seq != tc.seq {
			t.Errorf("ParseValue(%s) = %d, %d, %v", tc.in, task, seq, err)
		}
	}
	for _, bad := range []string{`{"task":1}`, `{"schema":{},"payload":{"seq":1}}`, `not json`, `{"task":"1","seq":2}`} {
		if _, _, err := datagen.ParseValue([]byte(bad)); err == nil {
			t.Errorf("ParseValue(%s) succeeded", bad)
		}
	}
}

// BenchmarkPoll shows the allocations per record of the hot path.
func BenchmarkPoll(b *testing.B) {
	task := openTask(b, conformance.NewSourceContext(b, "dg", 0), map[string]string{"topic": "gen", "value.size": "100"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		recs, err := task.Poll(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n += len(recs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}
