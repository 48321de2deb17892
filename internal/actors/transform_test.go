package actors

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/testutil"
)

// seqOf is the sequence number of a test record's value "T:S".
func seqOf(v any) int64 {
	s, _ := v.(string)
	n, _ := strconv.ParseInt(s[strings.IndexByte(s, ':')+1:], 10, 64)
	return n
}

// seqTransform drops (or, with fail, fails on) the test records whose
// sequence number is n modulo its "every" key (every 0: exactly n); route
// sets the topic when its "topic" key is set.
type seqTransform struct {
	every, n int64
	fail     bool
	topic    string
}

func (t *seqTransform) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: "every", Type: connectors.TypeLong, Default: "0"}).
		Define(connectors.ConfigKey{Name: "n", Type: connectors.TypeLong, Default: "-1"}).
		Define(connectors.ConfigKey{Name: "topic"})
}

func (t *seqTransform) Configure(c map[string]string) error {
	t.every, _ = strconv.ParseInt(c["every"], 10, 64)
	if v, ok := c["n"]; ok {
		t.n, _ = strconv.ParseInt(v, 10, 64)
	} else {
		t.n = -1
	}
	t.topic = c["topic"]
	return nil
}

func (t *seqTransform) Apply(r *connectors.Record) (*connectors.Record, error) {
	s := seqOf(r.Value)
	hit := t.n >= 0 && ((t.every > 0 && s%t.every == t.n) || (t.every == 0 && s == t.n))
	switch {
	case hit && t.fail:
		return nil, fmt.Errorf("test transform refuses seq %d", s)
	case hit:
		return nil, nil
	}
	out := *r
	if t.topic != "" {
		out.Topic = t.topic
	}
	return &out, nil
}

func (t *seqTransform) Close() error { return nil }

func registerTestTransforms(reg *connectors.Registry) {
	for _, p := range []connectors.TransformPlugin{
		{Class: "test.Drop", New: func() connectors.Transform { return &seqTransform{} }},
		{Class: "test.Fail", New: func() connectors.Transform { return &seqTransform{fail: true} }},
	} {
		if err := reg.RegisterTransform(p); err != nil {
			panic(err)
		}
	}
}

// committedSeq is the source offset committed for task 0 of connector
// name, -1 when none.
func (e *env) committedSeq(name string) int64 {
	off, err := e.offsets.Offset(name, map[string]any{"task": int64(0)})
	if err != nil || off == nil {
		return -1
	}
	return off["seq"].(int64)
}

// Source transforms run after Poll and before the converters, in order: a
// record a transform drops is not produced, but its offset commits (here
// the very last record is dropped, and its offset is still committed);
// the rest reach the topic the chain routes them to.
func TestSourceTransformsRouteAndDrop(t *testing.T) {
	e := newEnv(t)
	hooksFor("src-t").records = 100
	routed := e.topic("src-t-routed")
	e.create("src-t", withConv(map[string]string{"name": "src-t", "connector.class": "test.TestSource", "topic": e.topic("src-t-out"),
		"transforms":           "drop,route",
		"transforms.drop.type": "test.Drop", "transforms.drop.every": "10", "transforms.drop.n": "9",
		"transforms.route.type": "test.Drop", "transforms.route.topic": routed}))
	recs := e.readTopic(routed, 90)
	if len(recs) != 90 {
		t.Fatalf("routed topic has %d records, want 90", len(recs))
	}
	for _, r := range recs {
		if s := seqOf(string(r.Value)); s%10 == 9 {
			t.Fatalf("record %d reached Kafka although the chain dropped it", s)
		}
	}
	testutil.Eventually(t, 20*time.Second, "the dropped last record's offset committed", func() error {
		if got := e.committedSeq("src-t"); got != 99 {
			return fmt.Errorf("committed seq %d, want 99", got)
		}
		return nil
	})
}

// A transform that fails follows errors.tolerance: with none the task
// fails, naming the transform, and the record's offset is not committed
// (invariant 1); with all the record is skipped and everything else flows.
func TestSourceTransformFailureFollowsTolerance(t *testing.T) {
	e := newEnv(t)
	for _, tolerance := range []string{"none", "all"} {
		name := "src-fail-" + tolerance
		hooksFor(name).records = 50
		e.create(name, withConv(map[string]string{"name": name, "connector.class": "test.TestSource", "topic": e.topic(name),
			"errors.tolerance": tolerance, "transforms": "f", "transforms.f.type": "test.Fail", "transforms.f.n": "7"}))
	}
	testutil.Eventually(t, 20*time.Second, "tolerance none: FAILED naming the transform", func() error {
		st := e.taskState("src-fail-none", 0)
		if st.State == state.StateFailed && strings.Contains(st.Trace, "test.Fail") && strings.Contains(st.Trace, "seq 7") {
			return nil
		}
		return fmt.Errorf("%+v", st)
	})
	if got := e.committedSeq("src-fail-none"); got >= 7 {
		t.Fatalf("offset %d committed past the record that failed", got)
	}
	recs := e.readTopic(e.topic("src-fail-all"), 49)
	if len(recs) != 49 {
		t.Fatalf("tolerance all: %d records, want 49", len(recs))
	}
	testutil.Eventually(t, 20*time.Second, "tolerance all: offsets committed to the end", func() error {
		if got := e.committedSeq("src-fail-all"); got != 49 {
			return fmt.Errorf("committed seq %d", got)
		}
		return nil
	})
}

// Sink transforms run after the converters and before Write: a dropped
// record is not written but its offset commits; a failing one goes to the
// dead letter queue with stage TRANSFORMATION and the transform's class.
func TestSinkTransformsDropAndDeadLetter(t *testing.T) {
	e := newEnv(t)
	hooksFor("feed-t").records = 40
	in := e.topic("sink-t-in")
	e.create("feed-t", withConv(map[string]string{"name": "feed-t", "connector.class": "test.TestSource", "topic": in}))
	if got := len(e.readTopic(in, 40)); got != 40 {
		t.Fatalf("feed produced %d", got)
	}
	dlq := e.topic("sink-t-dlq")
	e.create("sink-t", withConv(map[string]string{"name": "sink-t", "connector.class": "test.TestSink", "topics": in,
		"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.context.headers.enable": "true",
		"transforms":           "drop,fail",
		"transforms.drop.type": "test.Drop", "transforms.drop.every": "10", "transforms.drop.n": "0",
		"transforms.fail.type": "test.Fail", "transforms.fail.n": "13"}))
	h := hooksFor("sink-t")
	testutil.Eventually(t, 20*time.Second, "35 records written and the offsets committed", func() error {
		offs, err := e.adm.FetchOffsets(context.Background(), "connect-sink-t")
		if err != nil {
			return err
		}
		committed := int64(0)
		for _, ps := range offs {
			for _, o := range ps {
				committed += o.At
			}
		}
		h.mu.Lock()
		written := len(h.written)
		h.mu.Unlock()
		if written != 35 || committed != 40 {
			return fmt.Errorf("written %d, committed %d", written, committed)
		}
		return nil
	})
	h.mu.Lock()
	for _, s := range h.written {
		if s%10 == 0 || s == 13 {
			h.mu.Unlock()
			t.Fatalf("record %d written although the chain dropped or refused it", s)
		}
	}
	h.mu.Unlock()
	recs := e.readTopic(dlq, 1)
	if len(recs) != 1 || seqOf(strings.Trim(string(recs[0].Value), `"`)) != 13 {
		t.Fatalf("DLQ records %v, want the record with seq 13", recs)
	}
	headers := map[string]string{}
	for _, hd := range recs[0].Headers {
		headers[hd.Key] = string(hd.Value)
	}
	if headers["__connect.errors.stage"] != "TRANSFORMATION" || headers["__connect.errors.class.name"] != "test.Fail" ||
		!strings.Contains(headers["__connect.errors.exception.message"], "seq 13") {
		t.Fatalf("DLQ headers %v", headers)
	}
}
