package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// withExactlyOnce runs the worker's source tasks in transactions.
func withExactlyOnce(o *Options) {
	o.Worker.ExactlyOnce = connconfig.ExactlyOnceEnabled
	o.GroupID = "eos-test"
}

func datagenConfig(name, topic string, records int, extra ...string) map[string]string {
	cfg := map[string]string{
		"name": name, "connector.class": datagen.Class, "topic": topic, "tasks.max": "2",
		"max.records": fmt.Sprint(records), "batch.size": "100",
		"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
		"value.converter": "org.apache.kafka.connect.json.JsonConverter",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	return cfg
}

// readCommitted reads topic from the start as a read_committed consumer
// until it has want records or stays quiet for a while.
func (e *env) readCommitted(topic string, want int) []*kgo.Record {
	e.t.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	// Whatever else is there (a duplicate) shows up within a second.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, r) })
	return out
}

// exactlyOnce checks that recs hold every (task, seq) below n once.
func exactlyOnce(t *testing.T, recs []*kgo.Record, tasks int, n int64) {
	t.Helper()
	seen := map[[2]int64]int{}
	for _, r := range recs {
		task, seq, err := datagen.ParseValue(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		seen[[2]int64{int64(task), seq}]++
	}
	for task := range int64(tasks) {
		for seq := range n {
			if c := seen[[2]int64{task, seq}]; c != 1 {
				t.Fatalf("task %d seq %d seen %d times by a read_committed consumer", task, seq, c)
			}
		}
	}
	if len(recs) != tasks*int(n) {
		t.Fatalf("%d records, want %d", len(recs), tasks*int(n))
	}
}

func TestExactlyOnceSourceCommitsRecordsWithTheirOffsets(t *testing.T) {
	for _, boundary := range []string{"poll", "interval", "connector"} {
		t.Run(boundary, func(t *testing.T) {
			e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, withExactlyOnce)
			name := "eos-" + boundary
			cfg := datagenConfig(name, e.topic(name), 1000, "transaction.boundary", boundary,
				"transaction.boundary.interval.ms", "50", "transaction.size", "70")
			e.create(name, cfg)
			e.waitTaskState(name, 0, state.StateRunning)
			exactlyOnce(t, e.readCommitted(e.topic(name), 2000), 2, 1000)
			for task := range 2 {
				testutil.Eventually(t, 10*time.Second, "the last offset committed", func() error {
					off, err := e.offsets.Offset(name, map[string]any{"task": task})
					if err != nil || off == nil || off["seq"] != int64(999) {
						return fmt.Errorf("offset %v, err %v", off, err)
					}
					return nil
				})
			}
		})
	}
}
