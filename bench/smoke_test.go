package bench

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors/datagen"
)

// TestBenchSmoke runs the benchmarks' code paths once with tiny sizes, so
// that `go test ./...` keeps them working, and checks what the throughput
// comparison rests on: both sides wrote every record exactly once, with the
// same bytes, and Sluice committed every task's last offset.
func TestBenchSmoke(t *testing.T) {
	e := newEnv(t)
	raw := newRawProducer(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const k = 8
	r, err := runIdle(ctx, e, "idle-smoke", k, 600*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Every task has its pipeline goroutine and its stack; a few
	// goroutines of the broker or clients coming and going cannot hide
	// that at k = 8. The live heap is only logged: at k = 8 it is within
	// what the embedded broker and the clients give back at moments of
	// their own (about 3 MiB, seen as -190 KB per task in 1 of 4 runs),
	// which the benchmark's 100 and 1,000 tasks outweigh.
	if r.goroutines < 0.5 || r.stack <= 0 {
		t.Fatalf("idle tasks measured as free: %+v", r)
	}
	t.Log("\n" + idleTable([]idleResult{r}))
	if n := e.runningTasks("idle-smoke"); n != 0 {
		t.Fatalf("%d idle tasks still running after the connector's deletion", n)
	}

	s := throughputSpec{tasks: 3, perTask: 200, valueSize: 16}
	var rows []pairResult
	for run, rawFirst := range []bool{true, false} {
		r, err := runPair(ctx, e, raw, run, s, rawFirst, func(rawTopic, sluiceTopic, connector string) error {
			return checkSameRecords(ctx, e, rawTopic, sluiceTopic, connector, s)
		})
		if err != nil {
			t.Fatal(err)
		}
		if r.raw <= 0 || r.sluice.acked <= 0 || r.sluice.committed < r.sluice.acked {
			t.Fatalf("run %d: implausible times %+v", run, r)
		}
		rows = append(rows, r)
	}
	table := throughputTable(s, rows)
	if !strings.Contains(table, "all") {
		t.Fatalf("throughput table lacks its totals:\n%s", table)
	}
	t.Log("\n" + table)
}

// checkSameRecords reads both topics and checks that each holds every
// (task, seq) exactly once, keyed and valued exactly as appendRawValue and
// rawKey build them: the raw producer writes the bytes Sluice writes.
func checkSameRecords(ctx context.Context, e *env, rawTopic, sluiceTopic, connector string, s throughputSpec) error {
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...),
		kgo.ConsumeTopics(rawTopic, sluiceTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pad := strings.Repeat("x", s.valueSize)
	seen := map[string]map[[2]int64]bool{rawTopic: {}, sluiceTopic: {}}
	want := int(s.total())
	for len(seen[rawTopic]) < want || len(seen[sluiceTopic]) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("reading back: %d raw and %d sluice records of %d: %w",
				len(seen[rawTopic]), len(seen[sluiceTopic]), want, ctx.Err())
		}
		if err := fs.Err(); err != nil {
			return err
		}
		for _, rec := range fs.Records() {
			task, seq, err := datagen.ParseValue(rec.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", rec.Topic, err)
			}
			if task < 0 || task >= s.tasks || seq < 0 || seq >= s.perTask {
				return fmt.Errorf("%s: record task %d seq %d outside the run", rec.Topic, task, seq)
			}
			if k := rawKey(connector, task); !bytes.Equal(rec.Key, k) {
				return fmt.Errorf("%s: key %q, want %q", rec.Topic, rec.Key, k)
			}
			if v := appendRawValue(nil, task, seq, pad); !bytes.Equal(rec.Value, v) {
				return fmt.Errorf("%s: value %q, want %q", rec.Topic, rec.Value, v)
			}
			id := [2]int64{int64(task), seq}
			if seen[rec.Topic][id] {
				return fmt.Errorf("%s: task %d seq %d written twice", rec.Topic, task, seq)
			}
			seen[rec.Topic][id] = true
		}
	}
	for _, topic := range []string{rawTopic, sluiceTopic} {
		n, err := e.endOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if n != s.total() {
			return fmt.Errorf("%s holds %d records, want %d", topic, n, s.total())
		}
	}
	return nil
}
