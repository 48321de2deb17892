package conformance

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// SinkHarness tells the suite how to drive one sink connector.
type SinkHarness struct {
	Plugin connectors.Plugin
	// Config returns a fresh valid connector config whose destination holds
	// nothing yet. Test data belongs under t.TempDir().
	Config func(t *testing.T) map[string]string
	// Record returns the content (key, value, schemas, headers) of the
	// suite's i-th record; the suite sets topic, partition and offset.
	Record func(i int) *connectors.SinkRecord
	// ReadBack returns the numbers i of the records durably written to
	// cfg's destination so far, in the order they were written. It must
	// see only what survives a crash (what is on disk, committed in a
	// database), not what a task still buffers.
	ReadBack func(t *testing.T, cfg map[string]string) []int
	// BrokenTaskConfig returns a task config that Open must reject. When
	// nil, the suite drops the first required key of the valid config.
	BrokenTaskConfig func(t *testing.T, valid map[string]string) map[string]string
	// Timeout bounds each call into the task; 10 s when zero.
	Timeout time.Duration
}

// sinkTopic is the topic of the suite's records; record i lives in
// partition i%2 at offset i/2, so that per-partition order is checked too.
const sinkTopic = "conformance"

func (h SinkHarness) records(from, to int) []*connectors.SinkRecord {
	out := make([]*connectors.SinkRecord, 0, to-from)
	for i := from; i < to; i++ {
		r := h.Record(i)
		r.Topic = sinkTopic
		r.Partition = int32(i % 2)
		r.Offset = int64(i / 2)
		if r.Timestamp.IsZero() {
			r.Timestamp = time.Date(2024, 1, 1, 0, 0, i, 0, time.UTC)
		}
		out = append(out, r)
	}
	return out
}

func recordIndex(r *connectors.SinkRecord) int { return int(r.Offset)*2 + int(r.Partition) }

var sinkPartitions = []connectors.TopicPartition{{Topic: sinkTopic, Partition: 0}, {Topic: sinkTopic, Partition: 1}}

// RunSink runs the sink conformance suite as subtests of t.
func RunSink(t *testing.T, h SinkHarness) {
	if h.Config == nil || h.Record == nil || h.ReadBack == nil {
		t.Fatal("SinkHarness needs Config, Record and ReadBack")
	}
	if h.Timeout <= 0 {
		h.Timeout = defaultTimeout
	}
	s := &sinkSuite{h: h}
	t.Run("plugin", func(t *testing.T) { checkPlugin(t, h.Plugin, connectors.Sink) })
	t.Run("config", func(t *testing.T) { checkConfigDef(t, h.Plugin.New(), h.Config(t)) })
	t.Run("task configs", func(t *testing.T) { checkTaskConfigs(t, h.Plugin, h.Config(t)) })
	t.Run("happy path", s.happyPath)
	t.Run("partial failure", s.partialFailure)
	t.Run("clean close", s.cleanClose)
}

type sinkSuite struct{ h SinkHarness }

type sinkRun struct {
	s    *sinkSuite
	t    *testing.T
	cfg  map[string]string
	task connectors.SinkTask
	// written lists every record handed to Write, next the offset after the
	// last of each partition, committed what the runtime may commit.
	written   []*connectors.SinkRecord
	next      map[connectors.TopicPartition]int64
	committed map[connectors.TopicPartition]int64
}

func (s *sinkSuite) open(t *testing.T, cfg map[string]string, committed map[connectors.TopicPartition]int64) *sinkRun {
	t.Helper()
	taskCfg := startConnector(t, s.h.Plugin, cfg)
	task := s.h.Plugin.New().(connectors.SinkConnector).NewTask()
	if task == nil {
		t.Fatal("NewTask returned nil")
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
	defer cancel()
	if err := task.Open(ctx, NewSinkContext(t, "conformance", 0), taskCfg); err != nil {
		task.Close()
		t.Fatalf("Open: %v", err)
	}
	if pa, ok := task.(connectors.PartitionAware); ok {
		if err := pa.Assigned(ctx, sinkPartitions); err != nil {
			t.Fatalf("Assigned: %v", err)
		}
	}
	if committed == nil {
		committed = map[connectors.TopicPartition]int64{}
	}
	return &sinkRun{s: s, t: t, cfg: cfg, task: task, next: maps.Clone(committed), committed: maps.Clone(committed)}
}

func (r *sinkRun) write(recs []*connectors.SinkRecord) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), r.s.h.Timeout)
	defer cancel()
	if err := r.task.Write(ctx, recs); err != nil {
		r.t.Fatalf("Write of %d records: %v", len(recs), err)
	}
	for _, rec := range recs {
		r.written = append(r.written, rec)
		r.next[rec.TopicPartition()] = max(r.next[rec.TopicPartition()], rec.Offset+1)
	}
}

// commit does what the runtime does before it commits consumer offsets, and
// checks that every offset it would commit covers durable data (invariant 1).
func (r *sinkRun) commit() {
	r.t.Helper()
	pc, ok := r.task.(connectors.PreCommitter)
	if !ok {
		// Without PreCommit, a successful Write means durable.
		r.committed = maps.Clone(r.next)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), r.s.h.Timeout)
		defer cancel()
		got, err := pc.PreCommit(ctx, maps.Clone(r.next))
		if err != nil {
			r.t.Fatalf("PreCommit: %v", err)
		}
		for tp, off := range got {
			given, ok := r.next[tp]
			if !ok || off > given {
				r.t.Errorf("PreCommit returned offset %d for %v, beyond the %d it was given", off, tp, given)
				continue
			}
			if off < r.committed[tp] {
				r.t.Errorf("PreCommit moved %v back from %d to %d", tp, r.committed[tp], off)
				continue
			}
			r.committed[tp] = off
		}
	}
	durable := map[int]bool{}
	for _, i := range r.s.h.ReadBack(r.t, r.cfg) {
		durable[i] = true
	}
	for _, rec := range r.written {
		if rec.Offset < r.committed[rec.TopicPartition()] && !durable[recordIndex(rec)] {
			r.t.Fatalf("offset %d of %v may be committed but record %d is not durably written (invariant 1)",
				r.committed[rec.TopicPartition()], rec.TopicPartition(), recordIndex(rec))
		}
	}
}

func (r *sinkRun) close() {
	r.t.Helper()
	if pa, ok := r.task.(connectors.PartitionAware); ok {
		ctx, cancel := context.WithTimeout(context.Background(), r.s.h.Timeout)
		err := pa.Revoked(ctx, sinkPartitions)
		cancel()
		if err != nil {
			r.t.Errorf("Revoked: %v", err)
		}
	}
	if err := r.task.Close(); err != nil {
		r.t.Errorf("Close: %v", err)
	}
}

// checkReadBack checks that got holds every record below n, nothing else,
// each at most maxCopies times, with first appearances in offset order per
// partition.
func checkReadBack(t *testing.T, got []int, n, maxCopies int) {
	t.Helper()
	count := map[int]int{}
	last := map[int]int{0: -1, 1: -1}
	for _, i := range got {
		if i < 0 || i >= n {
			t.Fatalf("read back record %d, which was never written", i)
		}
		count[i]++
		if count[i] > maxCopies {
			t.Fatalf("record %d read back %d times, at most %d expected", i, count[i], maxCopies)
		}
		if count[i] == 1 {
			if p := i % 2; i < last[p] {
				t.Fatalf("record %d (partition %d) written after record %d: out of order", i, p, last[p])
			} else {
				last[p] = i
			}
		}
	}
	for i := range n {
		if count[i] == 0 {
			t.Fatalf("record %d was lost (read back %d records)", i, len(got))
		}
	}
}

func (s *sinkSuite) happyPath(t *testing.T) {
	cfg := s.h.Config(t)
	r := s.open(t, cfg, nil)
	r.write(s.h.records(0, 10))
	r.commit()
	r.write(nil)
	r.write(s.h.records(10, 20))
	r.write(s.h.records(20, 30))
	r.commit()
	r.close()
	checkReadBack(t, s.h.ReadBack(t, cfg), 30, 1)
}

func (s *sinkSuite) partialFailure(t *testing.T) {
	cfg := s.h.Config(t)
	a := s.open(t, cfg, nil)
	a.write(s.h.records(0, 10))
	a.commit()
	a.write(s.h.records(10, 20))
	// The worker dies here, before committing: a's buffers are lost, and
	// it is never told. It is closed only when the test ends, after the
	// read-back, so whatever it still buffers cannot hide a loss.
	t.Cleanup(func() { a.task.Close() })

	// The new task gets everything after the committed offsets again,
	// twice, as when its first commit attempt fails too.
	b := s.open(t, cfg, a.committed)
	var redo []*connectors.SinkRecord
	for _, rec := range s.h.records(0, 20) {
		if rec.Offset >= a.committed[rec.TopicPartition()] {
			redo = append(redo, rec)
		}
	}
	if len(redo) < 10 {
		t.Fatalf("committed offsets %v cover records that were never committed", a.committed)
	}
	b.write(redo)
	b.write(redo)
	b.commit()
	b.close()
	checkReadBack(t, s.h.ReadBack(t, cfg), 20, 3)
}

func (s *sinkSuite) cleanClose(t *testing.T) {
	t.Run("without write", func(t *testing.T) {
		r := s.open(t, s.h.Config(t), nil)
		r.close()
	})
	t.Run("after failed open", func(t *testing.T) {
		cfg := s.h.Config(t)
		valid := startConnector(t, s.h.Plugin, cfg)
		bad := brokenConfig(t, s.h.Plugin.New().Config(), valid, s.h.BrokenTaskConfig)
		task := s.h.Plugin.New().(connectors.SinkConnector).NewTask()
		ctx, cancel := context.WithTimeout(context.Background(), s.h.Timeout)
		defer cancel()
		err := task.Open(ctx, NewSinkContext(t, "conformance", 0), bad)
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
		check := goroutineBaseline(t)
		r := s.open(t, cfg, nil)
		r.write(s.h.records(0, 5))
		r.commit()
		r.close()
		check()
		checkReadBack(t, s.h.ReadBack(t, cfg), 5, 1)
	})
}
