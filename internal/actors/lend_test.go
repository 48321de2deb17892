package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/strbox"
	"github.com/sluice-io/sluice/internal/testutil"
)

// The lending source (connectors.RecordLender) writes over the records of
// its last Poll at the start of each Poll: first with garbage (another
// topic, key, value, header and offset), then with its next records. A
// runtime that read a record after the next Poll began would produce some
// garbage, or a record twice and another never, or commit a wrong offset;
// under -race it would also be a data race.

// lendPlan is what a lending source's tasks do, by connector name.
type lendPlan struct {
	records int64 // then idle
	sizes   []int // batch sizes, in turn
	// staleAsk makes an exactly-once task also ask for a commit after a
	// record of its memory it does not return in the batch.
	staleAsk bool
}

var (
	lendPlansMu sync.Mutex
	lendPlans   = map[string]*lendPlan{}
)

func planLending(t *testing.T, name string, p *lendPlan) {
	lendPlansMu.Lock()
	defer lendPlansMu.Unlock()
	lendPlans[name] = p
	t.Cleanup(func() {
		lendPlansMu.Lock()
		defer lendPlansMu.Unlock()
		delete(lendPlans, name)
	})
}

type lendingSource struct{ testConnector }

func (c *lendingSource) NewTask() connectors.SourceTask                        { return &lendingTask{} }
func (c *lendingSource) CanDefineTransactionBoundaries(map[string]string) bool { return true }

var lendValueSchema = connectors.StructSchema("test.Lent",
	connectors.Field{Name: "seq", Schema: connectors.Int64Schema},
	connectors.Field{Name: "text", Schema: connectors.StringSchema},
)

type lendingTask struct {
	plan  *lendPlan
	topic string
	part  map[string]any
	next  int64
	polls int
	txn   connectors.TransactionContext

	// The task's memory, lent from one Poll to the next.
	out    []*connectors.SourceRecord
	recs   []connectors.SourceRecord
	vals   []connectors.StructValue
	fields []any
	hdrs   []connectors.Header
	// hvals holds the header values, boxed in place (strbox) as
	// FileStreamSource boxes its lines: an interface value that points
	// into the task's memory, which changes when the task writes over it.
	hvals []string
	last  int // records of the last Poll
}

func (s *lendingTask) Open(_ context.Context, tc connectors.SourceTaskContext, cfg map[string]string) error {
	lendPlansMu.Lock()
	s.plan = lendPlans[tc.ConnectorName()]
	lendPlansMu.Unlock()
	if s.plan == nil {
		return fmt.Errorf("no lending plan for %s", tc.ConnectorName())
	}
	s.topic, s.part = cfg["topic"], map[string]any{"task": tc.TaskID()}
	s.txn = tc.TransactionContext()
	off, err := tc.Offset(s.part)
	if err != nil {
		return err
	}
	if off != nil {
		s.next = off["seq"].(int64) + 1
	}
	return nil
}

func (s *lendingTask) LendsRecords() bool { return true }

func (s *lendingTask) Poll(ctx context.Context) ([]*connectors.SourceRecord, error) {
	// The runtime is done with the last Poll's records: garbage first.
	for i := range s.last {
		s.fields[2*i], s.fields[2*i+1] = int64(-1), "scribbled"
		s.hvals[i] = "scribbled"
		s.recs[i] = connectors.SourceRecord{
			Partition: s.part, OffsetKey: "seq", OffsetInt: -1, Topic: "scribbled",
			KeySchema: connectors.StringSchema, Key: "scribbled",
			ValueSchema: lendValueSchema, Value: &s.vals[i], Headers: s.hdrs[i : i+1 : i+1],
		}
	}
	s.last = 0
	n := int(min(int64(s.plan.sizes[s.polls%len(s.plan.sizes)]), s.plan.records-s.next))
	if n <= 0 {
		<-ctx.Done()
		return nil, nil
	}
	s.polls++
	if len(s.recs) < n {
		s.out, s.recs, s.vals = make([]*connectors.SourceRecord, n), make([]connectors.SourceRecord, n), make([]connectors.StructValue, n)
		s.fields, s.hdrs, s.hvals = make([]any, 2*n), make([]connectors.Header, n), make([]string, n)
	}
	for i := range n {
		seq := s.next
		s.next++
		f := s.fields[2*i : 2*i+2 : 2*i+2]
		f[0], f[1] = seq, "text-"+strconv.FormatInt(seq, 10)
		s.vals[i] = connectors.StructValue{Schema: lendValueSchema, Values: f}
		// Header values repeat in runs of 10, as keys do: the runtime's
		// header memo shares one converted copy among equal ones.
		s.hvals[i] = "h" + strconv.FormatInt(seq/10, 10)
		s.hdrs[i] = connectors.Header{Key: "run", Schema: connectors.StringSchema, Value: strbox.Of(&s.hvals[i])}
		s.recs[i] = connectors.SourceRecord{
			Partition: s.part, OffsetKey: "seq", OffsetInt: seq, Topic: s.topic,
			// Keys repeat in runs of 10: the runtime's key memo keeps one.
			KeySchema: connectors.StringSchema, Key: "k" + strconv.FormatInt(seq/10, 10),
			ValueSchema: lendValueSchema, Value: &s.vals[i], Headers: s.hdrs[i : i+1 : i+1],
		}
		s.out[i] = &s.recs[i]
	}
	s.last = n
	if s.txn != nil {
		s.txn.CommitTransactionAfter(s.out[n-1])
		if s.plan.staleAsk && n < len(s.recs) {
			// A record of the task's memory that this batch does not
			// hold; the next batch may.
			s.txn.CommitTransactionAfter(&s.recs[n])
		}
	}
	return s.out[:n:n], nil
}

func (s *lendingTask) Commit(context.Context) error { return nil }
func (s *lendingTask) Close() error                 { return nil }

// checkLentRecords checks that recs hold seq 0..n-1 once each, in order
// within each partition, each with its own key, value and header and
// nothing of the garbage.
func checkLentRecords(t *testing.T, recs []*kgo.Record, n int64, extra map[string]any) {
	t.Helper()
	if int64(len(recs)) != n {
		t.Fatalf("%d records in the topic, want %d", len(recs), n)
	}
	seen := make([]bool, n)
	last := map[int32]int64{}
	for _, r := range recs {
		var got map[string]any
		if err := json.Unmarshal(r.Value, &got); err != nil {
			t.Fatalf("value %q: %v", r.Value, err)
		}
		f, _ := got["seq"].(float64)
		seq := int64(f)
		if seq < 0 || seq >= n || seen[seq] {
			t.Fatalf("value %s: a seq out of range or seen before", r.Value)
		}
		seen[seq] = true
		if prev, ok := last[r.Partition]; ok && seq < prev {
			t.Fatalf("partition %d: seq %d after %d", r.Partition, seq, prev)
		}
		last[r.Partition] = seq
		want := map[string]any{"seq": float64(seq), "text": fmt.Sprintf("text-%d", seq)}
		for k, v := range extra {
			want[k] = v
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("value %s, want %v", r.Value, want)
		}
		if k := fmt.Sprintf("k%d", seq/10); string(r.Key) != k {
			t.Fatalf("seq %d: key %q, want %q", seq, r.Key, k)
		}
		if h := fmt.Sprintf("h%d", seq/10); len(r.Headers) != 1 || r.Headers[0].Key != "run" || string(r.Headers[0].Value) != h {
			t.Fatalf("seq %d: headers %v, want run=%s", seq, r.Headers, h)
		}
	}
}

func TestLentRecordsArriveAsPolledThoughWrittenOver(t *testing.T) {
	for _, c := range []struct {
		name  string
		extra map[string]string
		want  map[string]any
	}{
		{"plain", nil, nil},
		{"transformed", map[string]string{
			"transforms": "origin", "transforms.origin.type": "org.apache.kafka.connect.transforms.InsertField$Value",
			"transforms.origin.static.field": "origin", "transforms.origin.static.value": "lent",
		}, map[string]any{"origin": "lent"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			const n = 20000
			name := "lend-" + c.name
			planLending(t, name, &lendPlan{records: n, sizes: []int{250, 17, 400, 1}})
			cfg := map[string]string{
				"name": name, "connector.class": "test.LendingSource", "topic": e.topic(name), "tasks.max": "1",
				"key.converter":                  "org.apache.kafka.connect.storage.StringConverter",
				"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
				"value.converter.schemas.enable": "false",
			}
			for k, v := range c.extra {
				cfg[k] = v
			}
			e.create(name, cfg)
			recs := e.readRecords(e.topic(name), n, 500*time.Millisecond)
			checkLentRecords(t, recs, n, c.want)
			testutil.Eventually(t, 10*time.Second, "the last offset committed", func() error {
				off, err := e.offsets.Offset(name, map[string]any{"task": 0})
				if err != nil || off == nil || off["seq"] != int64(n-1) {
					return fmt.Errorf("offset %v, err %v", off, err)
				}
				return nil
			})
			if st := e.taskState(name, 0); st.State != state.StateRunning {
				t.Fatalf("task %s: %s", st.State, st.Trace)
			}
		})
	}
}

// A lending task's transaction boundary asked on a record that its batch
// does not hold is forgotten once the batch is sent: the record is written
// over at the next Poll, and the request would otherwise end a transaction
// at whatever record took its place. The task asks a commit after each
// batch's last record, and after a record past the end of each 100-record
// batch, which the next 200-record batch fills: 20 batches, 20 commits (29
// when the pipeline kept the stale requests: tried).
func TestLendingTaskStaleBoundaryRequestsAreForgotten(t *testing.T) {
	e := newEnvOn(t, storetest.StartFake(t, "t", ProducerOpts()...), false, withExactlyOnce)
	var mu sync.Mutex
	commits := 0
	e.broker.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		e.broker.KeepControl()
		if req.(*kmsg.EndTxnRequest).Commit {
			mu.Lock()
			commits++
			mu.Unlock()
		}
		return nil, nil, false
	})
	const n = 3000
	name := "lend-eos"
	planLending(t, name, &lendPlan{records: n, sizes: []int{100, 200}, staleAsk: true})
	e.create(name, map[string]string{
		"name": name, "connector.class": "test.LendingSource", "topic": e.topic(name), "tasks.max": "1",
		"transaction.boundary": "connector",
		"key.converter":        "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":      "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
	})
	got := e.readCommitted(e.topic(name), n)
	if len(got) != n {
		t.Fatalf("%d records visible to read_committed, want %d", len(got), n)
	}
	testutil.Eventually(t, 10*time.Second, "the last offset committed", func() error {
		off, err := e.offsets.Offset(name, map[string]any{"task": 0})
		if err != nil || off == nil || off["seq"] != int64(n-1) {
			return fmt.Errorf("offset %v, err %v", off, err)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if commits != 20 {
		t.Fatalf("%d transactions committed, want 20: one per batch", commits)
	}
}
