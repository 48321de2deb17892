package conformance

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// The suite is tested against small in-memory connectors: a correct one must
// pass, and each deliberately broken one must fail with the right message.

var memDef = connectors.NewConfigDef().
	Define(connectors.ConfigKey{Name: "topic", Required: true, Doc: "topic", Validate: connectors.NonEmpty}).
	Define(connectors.ConfigKey{Name: "batch.size", Type: connectors.TypeInt, Default: "10", Doc: "records per poll", Validate: connectors.AtLeast(1)}).
	Define(connectors.ConfigKey{Name: "limit", Type: connectors.TypeLong, Default: "0", Doc: "records upstream"}).
	Define(connectors.ConfigKey{Name: "store", Doc: "sink store name"}).
	Define(connectors.ConfigKey{Name: "bug", Doc: "the defect to simulate"})

type memConnector struct {
	cfg  map[string]string
	sink bool
}

func (c *memConnector) Config() *connectors.ConfigDef { return memDef }
func (c *memConnector) Start(_ context.Context, _ connectors.ConnectorContext, cfg map[string]string) error {
	c.cfg = maps.Clone(cfg)
	return nil
}
func (c *memConnector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	return []map[string]string{maps.Clone(c.cfg)}, nil
}
func (c *memConnector) Stop() error                    { return nil }
func (c *memConnector) NewTask() connectors.SourceTask { return &memSource{} }

type memSinkConnector struct{ memConnector }

func (c *memSinkConnector) NewTask() connectors.SinkTask { return &memSink{} }

type memSource struct {
	cfg        *connectors.Config
	next       int64
	bug        string
	stop       chan struct{}
	batch      int
	topic      string
	opened     bool
	closedOnce bool
	// lent is the last Poll's records when the task lends them (bug
	// "lend", or "lendearly", which writes over them too soon).
	lent []*connectors.SourceRecord
}

// LendsRecords: with bug "lend" the task writes over a Poll's records at
// its next Poll, as connectors.RecordLender allows; with "lendearly" also
// at Commit, before the next Poll, which it does not.
func (s *memSource) LendsRecords() bool { return s.bug == "lend" || s.bug == "lendearly" }

// scribble writes over the records of the last Poll.
func (s *memSource) scribble() {
	for _, r := range s.lent {
		*r = connectors.SourceRecord{Partition: r.Partition, Topic: "scribbled", ValueSchema: connectors.Int64Schema, Value: int64(-1)}
	}
}

func (s *memSource) Open(_ context.Context, tc connectors.SourceTaskContext, config map[string]string) error {
	cfg, err := memDef.Parse(config)
	if err != nil {
		return err
	}
	s.cfg, s.bug, s.batch, s.topic = cfg, cfg.String("bug"), cfg.Int("batch.size"), cfg.String("topic")
	off, err := tc.Offset(map[string]any{"p": "mem"})
	if err != nil {
		return err
	}
	if off != nil {
		s.next = int64(off["n"].(float64)) + 1
		if s.bug == "resume" {
			s.next--
		}
	}
	s.stop = make(chan struct{})
	if s.bug == "leak" {
		go func() { select {} }()
	} else {
		go func() { <-s.stop }()
	}
	s.opened = true
	return nil
}

func (s *memSource) Poll(ctx context.Context) ([]*connectors.SourceRecord, error) {
	limit := s.cfg.Long("limit")
	batch := s.batch
	if s.bug == "batch" {
		batch++
	}
	var out []*connectors.SourceRecord
	lends := s.LendsRecords()
	if lends {
		s.scribble()
		out = s.lent[:0]
	}
	for len(out) < batch && s.next < limit {
		var r *connectors.SourceRecord
		if lends && len(out) < cap(out) {
			r = out[:len(out)+1][len(out)] // written over, from the last Poll
		}
		if r == nil {
			r = &connectors.SourceRecord{}
		}
		*r = connectors.SourceRecord{
			Partition: map[string]any{"p": "mem"},
			Topic:     s.topic, ValueSchema: connectors.Int64Schema, Value: s.next,
		}
		// Odd offsets as integers, even ones as maps: the suite takes both
		// forms, but not both at once.
		if s.next%2 == 1 {
			r.OffsetKey, r.OffsetInt = "n", s.next
		}
		if s.next%2 == 0 || s.bug == "twooffsets" {
			r.Offset = map[string]any{"n": s.next}
		}
		out = append(out, r)
		s.next++
		if s.bug == "gap" && s.next == 3 {
			s.next++
		}
	}
	if lends {
		s.lent = out
	}
	if len(out) == 0 {
		switch s.bug {
		case "deadline":
			time.Sleep(time.Until(deadlineOf(ctx)) + 2*deadlineSlack)
		case "keeper":
			<-ctx.Done() // says it keeps its deadline, but waits for ctx
		default:
			// It keeps its deadline (KeepsPollDeadline): its own timer.
			tm := time.NewTimer(time.Until(deadlineOf(ctx)))
			defer tm.Stop()
			select {
			case <-ctx.Done():
			case <-tm.C:
			}
		}
	}
	return out, nil
}

func (s *memSource) KeepsPollDeadline() bool { return true }

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

func (s *memSource) Commit(context.Context) error {
	if s.bug == "lendearly" {
		s.scribble()
	}
	return nil
}
func (s *memSource) Close() error {
	if s.opened && !s.closedOnce {
		s.closedOnce = true
		close(s.stop)
	}
	return nil
}

var memStores sync.Map // store name -> *memStore

type memStore struct {
	mu      sync.Mutex
	durable []int
}

type memSink struct {
	store    *memStore
	bug      string
	buffered []int
}

func (s *memSink) Open(_ context.Context, _ connectors.SinkTaskContext, config map[string]string) error {
	cfg, err := memDef.Parse(config)
	if err != nil {
		return err
	}
	st, _ := memStores.LoadOrStore(cfg.String("store"), &memStore{})
	s.store, s.bug = st.(*memStore), cfg.String("bug")
	return nil
}

func (s *memSink) Write(_ context.Context, recs []*connectors.SinkRecord) error {
	for i, r := range recs {
		if s.bug == "lose" && i == 0 {
			continue
		}
		n, _ := strconv.Atoi(r.Value.(string))
		s.buffered = append(s.buffered, n)
	}
	return nil
}

func (s *memSink) flush() {
	s.store.mu.Lock()
	s.store.durable = append(s.store.durable, s.buffered...)
	s.store.mu.Unlock()
	s.buffered = nil
}

func (s *memSink) PreCommit(_ context.Context, offsets map[connectors.TopicPartition]int64) (map[connectors.TopicPartition]int64, error) {
	switch s.bug {
	case "nodurable":
		return offsets, nil
	case "lose":
		// Committing nothing is allowed; it hides the loss until read-back.
		s.flush()
		return nil, nil
	}
	s.flush()
	return offsets, nil
}

func (s *memSink) Close() error {
	if s.store != nil {
		s.flush()
	}
	return nil
}

func memSourceHarness(bug string) SourceHarness {
	return SourceHarness{
		Plugin: connectors.Plugin{Class: "test.MemSourceConnector", Type: connectors.Source, Version: "0",
			New: func() connectors.Connector { return &memConnector{} }},
		Config: func(t *testing.T) map[string]string {
			return map[string]string{"topic": "mem", "bug": bug}
		},
		Produce: func(t *testing.T, cfg map[string]string, n int) {
			l, _ := strconv.Atoi(cfg["limit"])
			cfg["limit"] = strconv.Itoa(l + n)
		},
		Identity: func(r *connectors.SourceRecord) (string, int64, error) {
			return "mem", r.Value.(int64), nil
		},
		BatchSizeKey: "batch.size",
		Timeout:      2 * time.Second,
	}
}

func memSinkHarness(bug string) SinkHarness {
	return SinkHarness{
		Plugin: connectors.Plugin{Class: "test.MemSinkConnector", Type: connectors.Sink, Version: "0",
			New: func() connectors.Connector { return &memSinkConnector{} }},
		Config: func(t *testing.T) map[string]string {
			// A store per test, gone with it: go test -count=2 runs
			// tests of the same name again.
			t.Cleanup(func() { memStores.Delete(t.Name()) })
			return map[string]string{"topic": "mem", "bug": bug, "store": t.Name()}
		},
		Record: func(i int) *connectors.SinkRecord {
			return &connectors.SinkRecord{ValueSchema: connectors.StringSchema, Value: strconv.Itoa(i)}
		},
		ReadBack: func(t *testing.T, cfg map[string]string) []int {
			st, ok := memStores.Load(cfg["store"])
			if !ok {
				return nil
			}
			s := st.(*memStore)
			s.mu.Lock()
			defer s.mu.Unlock()
			return append([]int(nil), s.durable...)
		},
	}
}

func TestSuitePassesCorrectConnectors(t *testing.T) {
	t.Run("source", func(t *testing.T) { RunSource(t, memSourceHarness("")) })
	t.Run("source lending its records", func(t *testing.T) { RunSource(t, memSourceHarness("lend")) })
	t.Run("sink", func(t *testing.T) { RunSink(t, memSinkHarness("")) })
}

// TestSuiteCatchesBrokenConnectors runs the suite on each broken connector in
// a child process (a failing suite fails its *testing.T, which this test
// cannot catch in-process) and checks that it failed for the right reason.
func TestSuiteCatchesBrokenConnectors(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child test processes")
	}
	for bug, c := range map[string]struct{ subtest, want string }{
		"source/resume":     {"resume_at_offset", "duplicate or out of order"},
		"source/gap":        {"happy_path", "ordinals received: [mem] 0-2 4-"},
		"source/batch":      {"batching", "with batch.size=3"},
		"source/deadline":   {"batching", "deadline returned"},
		"source/keeper":     {"batching", "reports KeepsPollDeadline"},
		"source/leak":       {"clean_close", "goroutine leak"},
		"source/twooffsets": {"happy_path", "both Offset and OffsetKey are set"},
		"source/lendearly":  {"batching", "changed before the task was polled again"},
		"sink/nodurable":    {"happy_path", "not durably written (invariant 1)"},
		"sink/lose":         {"partial_failure", "was lost"},
	} {
		t.Run(bug, func(t *testing.T) {
			// The children mostly wait on deadlines: run them side by side.
			t.Parallel()
			want := c.want
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenConnector$/^"+c.subtest+"$", "-test.v")
			cmd.Env = append(os.Environ(), "CONFORMANCE_BROKEN="+bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a connector with bug %s:\n%s", bug, out)
			}
			if !strings.Contains(string(out), want) {
				t.Fatalf("the suite failed without %q:\n%s", want, out)
			}
		})
	}
}

func TestBrokenConnector(t *testing.T) {
	bug := os.Getenv("CONFORMANCE_BROKEN")
	if bug == "" {
		// Only a child process of TestSuiteCatchesBrokenConnectors runs a
		// broken connector (Go's helper-process idiom); in a normal run
		// there is nothing to do, and a skip would read as a missed suite.
		return
	}
	kind, name, _ := strings.Cut(bug, "/")
	switch kind {
	case "source":
		RunSource(t, memSourceHarness(name))
	case "sink":
		RunSink(t, memSinkHarness(name))
	default:
		panic(fmt.Sprintf("unknown bug %q", bug))
	}
}
