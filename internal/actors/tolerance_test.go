package actors

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/testutil"
)

// produceMixed writes 100 records to topic: JSON strings "0:<seq>", except
// every tenth, which is not JSON at all.
func produceMixed(t *testing.T, e *env, topic string) (good int) {
	t.Helper()
	if _, err := e.adm.CreateTopic(context.Background(), 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 0; i < 100; i++ {
		v := fmt.Sprintf(`"0:%d"`, i)
		if i%10 == 5 {
			v = fmt.Sprintf("not json %d", i)
		} else {
			good++
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte(v)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return good
}

func jsonSink(name, topic string, extra map[string]string) map[string]string {
	c := map[string]string{
		"name": name, "connector.class": "test.TestSink", "topics": topic,
		"key.converter":                  "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
	}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// Invariant 7, errors.tolerance=none: a record the converter cannot read
// fails the task, with a trace naming where the record is; nothing after it
// is skipped silently.
func TestBadRecordFailsTaskWithoutTolerance(t *testing.T) {
	e := newEnv(t)
	produceMixed(t, e, e.topic("mixed-none"))
	e.create("strict", jsonSink("strict", e.topic("mixed-none"), nil))
	testutil.Eventually(t, 20*time.Second, "FAILED naming the bad record", func() error {
		st := e.taskState("strict", 0)
		if st.State == state.StateFailed && strings.Contains(st.Trace, e.topic("mixed-none")+"-0@5") {
			return nil
		}
		return fmt.Errorf("%+v", st)
	})
	h := hooksFor("strict")
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.written {
		if s > 5 {
			t.Fatalf("record seq %d written past the bad record at offset 5", s)
		}
	}
}

// Invariant 7, errors.tolerance=all with a dead letter queue: bad records go
// to the DLQ with Connect's context headers, good ones are written, and the
// consumer offsets move past both.
func TestBadRecordsGoToDeadLetterQueue(t *testing.T) {
	e := newEnv(t)
	good := produceMixed(t, e, e.topic("mixed-all"))
	e.create("lenient", jsonSink("lenient", e.topic("mixed-all"), map[string]string{
		"errors.tolerance":                              "all",
		"errors.log.enable":                             "true",
		"errors.deadletterqueue.topic.name":             e.topic("lenient-dlq"),
		"errors.deadletterqueue.context.headers.enable": "true",
	}))
	h := hooksFor("lenient")
	testutil.Eventually(t, 20*time.Second, "every good record written", func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.written) < good {
			return fmt.Errorf("%d of %d written", len(h.written), good)
		}
		return nil
	})
	dlq := e.readTopic(e.topic("lenient-dlq"), 10)
	if len(dlq) != 10 {
		t.Fatalf("DLQ has %d records, want 10", len(dlq))
	}
	for _, r := range dlq {
		if !strings.HasPrefix(string(r.Value), "not json") {
			t.Fatalf("DLQ record %q is not one of the bad ones", r.Value)
		}
		headers := map[string]string{}
		for _, hd := range r.Headers {
			headers[hd.Key] = string(hd.Value)
		}
		if headers["__connect.errors.topic"] != e.topic("mixed-all") || headers["__connect.errors.offset"] == "" || headers["__connect.errors.exception.message"] == "" {
			t.Fatalf("DLQ headers %v", headers)
		}
	}
	testutil.Eventually(t, 20*time.Second, "offsets committed past the bad records", func() error {
		offs, err := e.adm.FetchOffsets(context.Background(), "connect-lenient")
		if err != nil {
			return err
		}
		if o, ok := offs.Lookup(e.topic("mixed-all"), 0); !ok || o.At != 100 {
			return fmt.Errorf("committed %+v", o)
		}
		return nil
	})
	if st := e.taskState("lenient", 0); st.State != state.StateRunning {
		t.Fatalf("lenient task %+v", st)
	}
}

// Invariant 1 and 7, sources: a record that cannot be converted under
// errors.tolerance=none fails the task, and its offset is never committed,
// so the restarted task reads it again instead of losing it.
func TestUnconvertibleSourceRecordIsNotCommitted(t *testing.T) {
	e := newEnv(t)
	// The test source emits string values; ByteArrayConverter takes only bytes.
	e.create("badconv", map[string]string{"name": "badconv", "connector.class": "test.TestSource", "topic": e.topic("badconv-out"),
		"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"})
	testutil.Eventually(t, 20*time.Second, "FAILED naming the conversion", func() error {
		if st := e.taskState("badconv", 0); st.State != state.StateFailed || !strings.Contains(st.Trace, "convert value") {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // several flush intervals and restarts
	if off, err := e.offsets.Offset("badconv", map[string]any{"task": 0}); err != nil || off != nil {
		t.Fatalf("offset %v committed for records never produced (err %v)", off, err)
	}
}
