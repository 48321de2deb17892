package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// SourceHarness tells the suite how to drive one source connector.
type SourceHarness struct {
	Plugin connectors.Plugin
	// Config returns a fresh valid connector config whose upstream holds no
	// records yet. Test data belongs under t.TempDir().
	Config func(t *testing.T) map[string]string
	// Produce makes n more records available upstream of cfg. The suite
	// calls it before it starts the connector on cfg, so it may change cfg
	// (a generator raises its record limit), and, when Live is set, also
	// while a task reads.
	Produce func(t *testing.T, cfg map[string]string, n int)
	// Live says that records produced while a task runs reach that task.
	Live bool
	// Identity names a record's source partition and its ordinal there: 0
	// for the first record ever produced in the partition, one more for
	// each next one. The suite checks gaps, duplicates and order with it.
	Identity func(r *connectors.SourceRecord) (partition string, ordinal int64, err error)
	// BatchSizeKey is the config key that bounds the records of one Poll;
	// empty skips that check.
	BatchSizeKey string
	// BrokenTaskConfig returns a task config that Open must reject. When
	// nil, the suite drops the first required key of the valid config.
	BrokenTaskConfig func(t *testing.T, valid map[string]string) map[string]string
	// Timeout bounds each wait for expected records; 10 s when zero.
	Timeout time.Duration
}

// RunSource runs the source conformance suite as subtests of t.
func RunSource(t *testing.T, h SourceHarness) {
	if h.Config == nil || h.Produce == nil || h.Identity == nil {
		t.Fatal("SourceHarness needs Config, Produce and Identity")
	}
	if h.Timeout <= 0 {
		h.Timeout = defaultTimeout
	}
	s := &sourceSuite{h: h}
	t.Run("plugin", func(t *testing.T) { checkPlugin(t, h.Plugin, connectors.Source) })
	t.Run("config", func(t *testing.T) { checkConfigDef(t, h.Plugin.New(), h.Config(t)) })
	t.Run("task configs", func(t *testing.T) { checkTaskConfigs(t, h.Plugin, h.Config(t)) })
	t.Run("happy path", s.happyPath)
	t.Run("resume at offset", s.resume)
	t.Run("batching", s.batching)
	t.Run("clean close", s.cleanClose)
}

type sourceSuite struct{ h SourceHarness }

// run is one open task with what it returned so far.
type sourceRun struct {
	s    *sourceSuite
	t    *testing.T
	task connectors.SourceTask
	tc   *SourceContext
	recs []*connectors.SourceRecord
	// maxBatch is the largest batch one Poll returned.
	maxBatch int
	// lent is the last Poll's records as a lending task returned them
	// (connectors.RecordLender), and lentCopy their copies: the task must
	// leave them as they are until it is polled again or closed.
	lent, lentCopy []*connectors.SourceRecord
}

func (s *sourceSuite) open(t *testing.T, cfg map[string]string, tc *SourceContext) *sourceRun {
	t.Helper()
	taskCfg := startConnector(t, s.h.Plugin, cfg)
	task := s.h.Plugin.New().(connectors.SourceConnector).NewTask()
	if task == nil {
		t.Fatal("NewTask returned nil")
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
	defer cancel()
	if err := task.Open(ctx, tc, taskCfg); err != nil {
		task.Close()
		t.Fatalf("Open: %v", err)
	}
	return &sourceRun{s: s, t: t, task: task, tc: tc}
}

func (r *sourceRun) poll(wait time.Duration) []*connectors.SourceRecord {
	r.t.Helper()
	r.checkLent()
	batch := pollTask(r.t, r.task, wait)
	for _, rec := range batch {
		if err := checkSourceRecord(rec); err != nil {
			r.t.Fatalf("bad record %+v: %v", rec, err)
		}
	}
	r.lent, r.lentCopy = nil, nil
	if lendsRecords(r.task) {
		// What the suite keeps is copies: the task writes over its
		// records at the next Poll.
		r.lent, batch = batch, cloneRecords(batch)
		r.lentCopy = cloneRecords(batch)
	}
	r.maxBatch = max(r.maxBatch, len(batch))
	r.recs = append(r.recs, batch...)
	return batch
}

// pollFor polls until n more records arrived or the harness's timeout.
func (r *sourceRun) pollFor(n int) []*connectors.SourceRecord {
	r.t.Helper()
	from := len(r.recs)
	deadline := time.Now().Add(r.s.h.Timeout)
	for len(r.recs)-from < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("got %d of %d expected records within %v; ordinals received: %s",
				len(r.recs)-from, n, r.s.h.Timeout, r.s.summarize(r.recs))
		}
		r.poll(pollWait)
	}
	return r.recs[from:]
}

// expectQuiet polls twice and fails when anything arrives: everything
// produced was already delivered, so more would be a duplicate.
func (r *sourceRun) expectQuiet() {
	r.t.Helper()
	for range 2 {
		if b := r.poll(quietWait); len(b) > 0 {
			r.t.Errorf("Poll returned %d records after all produced ones were delivered; first: %s", len(b), r.describe(b[0]))
		}
	}
}

func (r *sourceRun) commit(recs []*connectors.SourceRecord) {
	r.t.Helper()
	if err := r.tc.Commit(recs...); err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.s.h.Timeout)
	defer cancel()
	if err := r.task.Commit(ctx); err != nil {
		r.t.Errorf("Commit: %v", err)
	}
	r.checkLent()
}

// checkLent fails the test when a lending task changed a record of its last
// Poll before it was polled again or closed (in a Commit, say): the runtime
// may read them until then (connectors.RecordLender).
func (r *sourceRun) checkLent() {
	r.t.Helper()
	for i, rec := range r.lent {
		if !reflect.DeepEqual(rec, r.lentCopy[i]) {
			r.t.Fatalf("record %d of the last Poll changed before the task was polled again or closed (a RecordLender may "+
				"write over its records only from its next Poll on): returned %+v, now %+v", i, r.lentCopy[i], rec)
		}
	}
}

func (r *sourceRun) close() {
	r.t.Helper()
	r.checkLent()
	if err := r.task.Close(); err != nil {
		r.t.Errorf("Close: %v", err)
	}
}

func (r *sourceRun) describe(rec *connectors.SourceRecord) string {
	p, o, err := r.s.h.Identity(rec)
	if err != nil {
		return fmt.Sprintf("(no identity: %v) %+v", err, rec)
	}
	return fmt.Sprintf("partition %s ordinal %d", p, o)
}

// summarize lists the ordinals of recs per partition as ranges, so that a
// gap or a duplicate shows at a glance.
func (s *sourceSuite) summarize(recs []*connectors.SourceRecord) string {
	var b strings.Builder
	var part string
	var first, last int64
	flush := func() {
		if part == "" {
			return
		}
		if first == last {
			fmt.Fprintf(&b, "%d ", first)
		} else {
			fmt.Fprintf(&b, "%d-%d ", first, last)
		}
	}
	for _, rec := range recs {
		p, o, err := s.h.Identity(rec)
		if err != nil {
			flush()
			part = ""
			fmt.Fprintf(&b, "(bad identity: %v) ", err)
			continue
		}
		if p == part && o == last+1 {
			last = o
			continue
		}
		flush()
		if p != part {
			fmt.Fprintf(&b, "[%s] ", p)
		}
		part, first, last = p, o, o
	}
	flush()
	return strings.TrimSpace(b.String())
}

func checkSourceRecord(r *connectors.SourceRecord) error {
	if r == nil {
		return fmt.Errorf("nil record")
	}
	if r.Topic == "" {
		return fmt.Errorf("no topic")
	}
	if r.Partition == nil || !r.HasOffset() {
		return fmt.Errorf("source partition and offset are required")
	}
	if r.Offset != nil && r.OffsetKey != "" {
		return fmt.Errorf("both Offset and OffsetKey are set: give the offset one way")
	}
	if _, err := json.Marshal(r.Partition); err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	if _, err := json.Marshal(r.SourceOffset()); err != nil {
		return fmt.Errorf("offset: %w", err)
	}
	if r.Value == nil && r.ValueSchema != nil && !r.ValueSchema.Optional {
		return fmt.Errorf("nil value for a required %s schema", r.ValueSchema.Type)
	}
	if sv, ok := r.Value.(*connectors.StructValue); ok {
		if err := sv.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// checkSequence checks that recs hold, per partition, consecutive ordinals
// starting at next[partition] (0 when absent), and returns the next expected
// ordinal per partition.
func (s *sourceSuite) checkSequence(t *testing.T, recs []*connectors.SourceRecord, next map[string]int64) map[string]int64 {
	t.Helper()
	next = maps.Clone(next)
	if next == nil {
		next = map[string]int64{}
	}
	for i, rec := range recs {
		p, o, err := s.h.Identity(rec)
		if err != nil {
			t.Fatalf("record %d: identity: %v", i, err)
		}
		want := next[p]
		switch {
		case o < want:
			t.Fatalf("record %d: partition %s ordinal %d again (duplicate or out of order; expected %d)", i, p, o, want)
		case o > want:
			t.Fatalf("record %d: partition %s ordinal %d, expected %d: records lost", i, p, o, want)
		}
		next[p] = o + 1
	}
	return next
}

func (s *sourceSuite) happyPath(t *testing.T) {
	cfg := s.h.Config(t)
	s.h.Produce(t, cfg, 25)
	tc := NewSourceContext(t, "conformance", 0)
	r := s.open(t, cfg, tc)
	defer r.close()
	want := 25
	if s.h.Live {
		// Some records arrive while the task already reads.
		r.pollFor(10)
		s.h.Produce(t, cfg, 25)
		want += 25
	}
	r.pollFor(want - len(r.recs))
	r.expectQuiet()
	next := s.checkSequence(t, r.recs, nil)
	total := int64(0)
	for _, n := range next {
		total += n
	}
	if total != int64(want) {
		t.Errorf("got %d records, want %d", total, want)
	}
	r.commit(r.recs)
}

func (s *sourceSuite) resume(t *testing.T) {
	cfg := s.h.Config(t)
	s.h.Produce(t, cfg, 20)
	tc := NewSourceContext(t, "conformance", 0)

	a := s.open(t, cfg, tc)
	a.pollFor(20)
	a.expectQuiet()
	s.checkSequence(t, a.recs, nil)
	// Kafka acknowledged only the first 7; the task dies before the rest.
	const committed = 7
	a.commit(a.recs[:committed])
	a.close()
	next := s.checkSequence(t, a.recs[:committed], nil)

	b := s.open(t, cfg, tc)
	b.pollFor(20 - committed)
	b.expectQuiet()
	// Redelivery starts right after the committed offset of each
	// partition: nothing before it again, nothing after it skipped.
	next = s.checkSequence(t, b.recs, next)
	b.commit(b.recs)
	b.close()

	// Everything is committed: a new task has nothing to redeliver, and
	// then reads only what is new.
	c := s.open(t, cfg, tc)
	c.expectQuiet()
	if !s.h.Live {
		c.close()
		s.h.Produce(t, cfg, 5)
		c = s.open(t, cfg, tc)
	} else {
		s.h.Produce(t, cfg, 5)
	}
	c.pollFor(5)
	c.expectQuiet()
	s.checkSequence(t, c.recs, next)
	c.close()
}

func (s *sourceSuite) batching(t *testing.T) {
	cfg := s.h.Config(t)
	const batch = 3
	if s.h.BatchSizeKey != "" {
		cfg[s.h.BatchSizeKey] = strconv.Itoa(batch)
	}
	s.h.Produce(t, cfg, 10)
	r := s.open(t, cfg, NewSourceContext(t, "conformance", 0))
	defer r.close()
	r.pollFor(10)
	if s.h.BatchSizeKey != "" && r.maxBatch > batch {
		t.Errorf("a Poll returned %d records with %s=%d", r.maxBatch, s.h.BatchSizeKey, batch)
	}
	s.checkSequence(t, r.recs, nil)
	// Committed right after a Poll with records, as the runtime may
	// commit between two Polls: a task that lends its records leaves
	// them alone in Commit too.
	r.commit(r.recs)

	// With nothing upstream, Poll waits for data but not past its deadline.
	for _, wait := range []time.Duration{50 * time.Millisecond, 400 * time.Millisecond} {
		start := time.Now()
		if b := r.poll(wait); len(b) > 0 {
			t.Errorf("Poll returned %d records with nothing upstream", len(b))
		}
		t.Logf("Poll with a %v deadline and no data returned after %v", wait, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	r.checkLent()
	if _, err := r.task.Poll(ctx); err != nil {
		t.Errorf("Poll with a cancelled ctx: %v", err)
	}
	if took := time.Since(start); took > deadlineSlack {
		t.Errorf("Poll with a cancelled ctx returned after %v", took)
	}
}

func (s *sourceSuite) cleanClose(t *testing.T) {
	t.Run("without poll", func(t *testing.T) {
		cfg := s.h.Config(t)
		s.h.Produce(t, cfg, 3)
		r := s.open(t, cfg, NewSourceContext(t, "conformance", 0))
		r.close()
	})
	t.Run("after failed open", func(t *testing.T) {
		cfg := s.h.Config(t)
		valid := startConnector(t, s.h.Plugin, cfg)
		bad := brokenConfig(t, s.h.Plugin.New().Config(), valid, s.h.BrokenTaskConfig)
		task := s.h.Plugin.New().(connectors.SourceConnector).NewTask()
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		err := task.Open(ctx, NewSourceContext(t, "conformance", 0), bad)
		if err == nil {
			t.Errorf("Open of broken config %v succeeded", bad)
		} else {
			t.Logf("Open of broken config: %v", err)
		}
		if err := task.Close(); err != nil {
			t.Errorf("Close after failed Open: %v", err)
		}
	})
	t.Run("no goroutine leak", func(t *testing.T) {
		cfg := s.h.Config(t)
		s.h.Produce(t, cfg, 5)
		check := goroutineBaseline(t)
		r := s.open(t, cfg, NewSourceContext(t, "conformance", 0))
		r.pollFor(5)
		r.poll(50 * time.Millisecond)
		r.close()
		check()
	})
}
