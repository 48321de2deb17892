package actors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/builtin"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// env is one worker's runtime on an embedded broker, with the real state
// stores, driven from the config topic like internal/worker does.
type env struct {
	t        *testing.T
	k        *storetest.Env
	broker   *kfake.Cluster // nil on a real broker
	kopts    []kgo.Opt
	client   *kgo.Client
	adm      *kadm.Client
	configs  *state.ConfigLog
	statuses *state.StatusLog
	offsets  *offsets.SourceStore
	rt       *Runtime
	cancel   context.CancelFunc
}

// newEnv runs on the broker storetest.Start gives: kfake, or the real
// broker SLUICE_TEST_BOOTSTRAP names.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false)
}

// newFakeEnv always runs on kfake, for tests that inject broker failures
// with e.broker.ControlKey.
func newFakeEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, storetest.StartFake(t, "t", ProducerOpts()...), false)
}

// newEnvOn builds the runtime on k's stores; with trackTopics the status
// log records the topics tasks use, as a worker with
// topic.tracking.enable=true runs. Each of with may change the runtime's
// options before it starts.
func newEnvOn(t *testing.T, k *storetest.Env, trackTopics bool, with ...func(*Options)) *env {
	t.Helper()
	e := &env{t: t, k: k, broker: k.Broker, kopts: k.Opts, client: k.Client, adm: k.Admin,
		configs: k.Configs, statuses: k.Statuses, offsets: k.Offsets}
	// The test plugins' hooks are found by connector name, and tests reuse
	// names: each test starts from none (go test -count=2 would otherwise
	// see the first run's records in the second's).
	t.Cleanup(func() {
		hooksMu.Lock()
		clear(allHook)
		hooksMu.Unlock()
	})
	reg := builtin.Registry()
	for _, p := range testPlugins() {
		reg.MustRegister(p)
	}
	registerTestTransforms(reg)
	opts := Options{
		WorkerID: "w1", Registry: reg,
		Offsets: e.offsets, Status: e.statuses, TaskConfigs: e.configs,
		KafkaOpts: e.kopts, Producer: k.Producer, Admin: e.adm,
		Backoff:             Backoff{Initial: 50 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: 0.1, ResetAfter: 10 * time.Second},
		OffsetFlushInterval: 100 * time.Millisecond,
		Log:                 k.Log,
	}
	if trackTopics {
		opts.Topics = e.statuses
	}
	for _, f := range with {
		f(&opts)
	}
	var err error
	if e.rt, err = NewRuntime(opts); err != nil {
		t.Fatal(err)
	}
	// The statuses stopping tasks wrote are flushed, but a failed flush is
	// not the test's business.
	e.cancel = k.Drive(t, func(ctx context.Context) { e.rt.FollowAlone(ctx, e.configs, 1) }, e.rt.Stop, 20*time.Second, false)
	return e
}

// topic names a data topic of this test, unique on a shared real broker.
func (e *env) topic(name string) string { return e.k.Topic(name) }

func (e *env) create(name string, config map[string]string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.configs.PutConnectorConfig(ctx, name, config); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) setTarget(name string, s state.TargetState) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.configs.PutTargetState(ctx, name, s); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) taskState(name string, task int) state.Status {
	return e.statuses.Tasks(name)[task]
}

func (e *env) waitTaskState(name string, task int, want state.State) {
	e.t.Helper()
	testutil.Eventually(e.t, 20*time.Second, fmt.Sprintf("%s task %d %s", name, task, want), func() error {
		if st := e.taskState(name, task); st.State != want {
			return fmt.Errorf("state %q (trace %q)", st.State, st.Trace)
		}
		return nil
	})
}

// readTopic reads every record of topic from the start.
func (e *env) readTopic(topic string, want int) []*kgo.Record {
	e.t.Helper()
	return e.readRecords(topic, want, 0)
}

// readRecords reads topic from the start until it has want records (or 20
// s passed), then for settle more; opts are the consumer's.
func (e *env) readRecords(topic string, want int, settle time.Duration, opts ...kgo.Opt) []*kgo.Record {
	e.t.Helper()
	cl, err := kgo.NewClient(append(append(append([]kgo.Opt{}, e.kopts...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond)), opts...)...)
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
		out = append(out, fs.Records()...)
	}
	if settle > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), settle)
		defer cancel()
		out = append(out, cl.PollFetches(ctx).Records()...)
	}
	return out
}

// --- test plugins: a source and a sink whose misbehaviour tests control.

// hooks are per-connector switches the test plugins read, by connector name.
type hooks struct {
	mu sync.Mutex
	// source
	records    int64 // records per task then idle; 0 = endless
	panics     int   // Poll panics this many times (across restarts), at seq panicAt
	panicAt    int64
	blockPoll  chan struct{} // when set, Poll blocks until closed, ignoring ctx
	opened     int
	closed     int
	openErrors int        // Open fails this many times
	idlePolls  []pollSpan // the Polls made once records were all sent
	// keeps makes the task a connectors.DeadlineKeeper: an idle Poll
	// waits on a timer of its own for its deadline.
	keeps bool
	// returns makes the task a connectors.IdleReturner: an idle Poll
	// returns at once, and the runtime naps until its deadline.
	returns bool
	pollGap time.Duration // each Poll after the first waits this long before its records
	topic   string        // when set, the records' topic instead of the task config's
	polls   int           // Polls made
	inPoll  bool          // a Poll is running
	commits int           // Commits made
	// commitInPoll counts Commits made while a Poll of the same
	// connector ran: the runtime promises none (connectors.SourceTask).
	commitInPoll int
	// When holdOpen is set, the first Open, once it read its offset,
	// closes heldOpen and waits until holdOpen is closed.
	holdOpen, heldOpen chan struct{}
	// sink
	written   []int64 // seq of each value written, in order
	batches   []int   // size of each batch Write got
	writeFail int     // Write fails (non-retriable) this many times
	retriable int     // Write fails (retriable) this many times
}

var (
	hooksMu sync.Mutex
	allHook = map[string]*hooks{}
)

func hooksFor(name string) *hooks {
	hooksMu.Lock()
	defer hooksMu.Unlock()
	h := allHook[name]
	if h == nil {
		h = &hooks{}
		allHook[name] = h
	}
	return h
}

// pollSpan is one Poll of the test source: when it began, the deadline
// its context had, and when it ended; cancelled says that its context
// ended it (for a task that keeps its deadline, only a stop does).
type pollSpan struct {
	start, deadline, end time.Time
	cancelled            bool
}

func testPlugins() []connectors.Plugin {
	return []connectors.Plugin{
		{Class: "test.TestSource", Type: connectors.Source, Version: "1", New: func() connectors.Connector { return &testSource{} }},
		{Class: "test.TestSink", Type: connectors.Sink, Version: "1", New: func() connectors.Connector { return &testSink{} }},
		{Class: "test.LendingSource", Type: connectors.Source, Version: "1", New: func() connectors.Connector { return &lendingSource{} }},
	}
}

type testConnector struct{ config map[string]string }

func (c *testConnector) Config() *connectors.ConfigDef { return connectors.NewConfigDef() }
func (c *testConnector) Start(_ context.Context, _ connectors.ConnectorContext, cfg map[string]string) error {
	c.config = cfg
	return nil
}
func (c *testConnector) TaskConfigs(_ context.Context, max int) ([]map[string]string, error) {
	n, _ := strconv.Atoi(c.config["tasks.max"])
	if n < 1 {
		n = 1
	}
	if n > max {
		n = max
	}
	out := make([]map[string]string, n)
	for i := range out {
		out[i] = map[string]string{"name": c.config["name"], "topic": c.config["topic"], "task": strconv.Itoa(i)}
		if b, ok := c.config["borrows"]; ok {
			out[i]["borrows"] = b
		}
	}
	return out, nil
}
func (c *testConnector) Stop() error { return nil }

type testSource struct{ testConnector }

func (c *testSource) NewTask() connectors.SourceTask { return &testSourceTask{} }

type testSourceTask struct {
	h     *hooks
	topic string
	task  int
	part  map[string]any
	next  int64
}

func (s *testSourceTask) Open(_ context.Context, tc connectors.SourceTaskContext, cfg map[string]string) error {
	s.h = hooksFor(tc.ConnectorName())
	s.h.mu.Lock()
	s.h.opened++
	fail := s.h.openErrors > 0
	if fail {
		s.h.openErrors--
	}
	s.h.mu.Unlock()
	if fail {
		return errors.New("open refused by the test")
	}
	s.topic, s.task = cfg["topic"], tc.TaskID()
	s.part = map[string]any{"task": s.task}
	off, err := tc.Offset(s.part)
	if err != nil {
		return err
	}
	if off != nil {
		s.next = off["seq"].(int64) + 1
	}
	s.h.mu.Lock()
	hold, held := s.h.holdOpen, s.h.heldOpen
	first := s.h.opened == 1
	s.h.mu.Unlock()
	if hold != nil && first {
		close(held)
		<-hold
	}
	return nil
}

func (s *testSourceTask) Poll(ctx context.Context) ([]*connectors.SourceRecord, error) {
	s.h.mu.Lock()
	block, records, gap := s.h.blockPoll, s.h.records, s.h.pollGap
	topic := s.topic
	if s.h.topic != "" {
		topic = s.h.topic
	}
	doPanic := s.h.panics > 0 && s.next >= s.h.panicAt
	if doPanic {
		s.h.panics--
	}
	s.h.polls++
	s.h.inPoll = true
	s.h.mu.Unlock()
	defer func() {
		s.h.mu.Lock()
		s.h.inPoll = false
		s.h.mu.Unlock()
	}()
	if block != nil {
		<-block // deliberately ignores ctx: a misbehaving connector
	}
	if doPanic {
		panic(fmt.Sprintf("test panic at seq %d", s.next))
	}
	if records > 0 && s.next >= records {
		span := pollSpan{start: time.Now()}
		span.deadline, _ = ctx.Deadline()
		s.h.mu.Lock()
		returns := s.h.returns
		s.h.mu.Unlock()
		if returns {
			// Nothing: back at once, the runtime naps.
		} else if s.keepsDeadline() {
			tm := time.NewTimer(time.Until(span.deadline))
			select {
			case <-ctx.Done():
			case <-tm.C:
			}
			tm.Stop()
		} else {
			<-ctx.Done()
		}
		span.end, span.cancelled = time.Now(), ctx.Err() != nil
		s.h.mu.Lock()
		s.h.idlePolls = append(s.h.idlePolls, span)
		s.h.mu.Unlock()
		return nil, nil
	}
	if gap > 0 && s.next > 0 {
		select {
		case <-time.After(gap):
		case <-ctx.Done():
			return nil, nil
		}
	}
	var out []*connectors.SourceRecord
	for i := 0; i < 100 && (records == 0 || s.next < records); i++ {
		out = append(out, &connectors.SourceRecord{
			Partition: s.part, Offset: map[string]any{"seq": s.next}, Topic: topic,
			Key: fmt.Sprintf("%d", s.task), KeySchema: connectors.StringSchema,
			Value: fmt.Sprintf("%d:%d", s.task, s.next), ValueSchema: connectors.StringSchema,
		})
		s.next++
	}
	return out, nil
}

func (s *testSourceTask) KeepsPollDeadline() bool { return s.keepsDeadline() }

func (s *testSourceTask) ReturnsWhenIdle() bool {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.h.returns
}

func (s *testSourceTask) keepsDeadline() bool {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.h.keeps
}

func (s *testSourceTask) Commit(context.Context) error {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.h.commits++
	if s.h.inPoll {
		s.h.commitInPoll++
	}
	return nil
}
func (s *testSourceTask) Close() error {
	if s.h != nil {
		s.h.mu.Lock()
		s.h.closed++
		s.h.mu.Unlock()
	}
	return nil
}

type testSink struct{ testConnector }

func (c *testSink) NewTask() connectors.SinkTask { return &testSinkTask{} }

// testSinkTask records the seq of each value it writes. With "borrows"
// in its config it only borrows its batches (connectors.RecordBorrower):
// it keeps nothing of them but the seqs it parsed.
type testSinkTask struct {
	h       *hooks
	borrows bool
}

func (s *testSinkTask) Open(_ context.Context, tc connectors.SinkTaskContext, cfg map[string]string) error {
	s.h = hooksFor(tc.ConnectorName())
	s.borrows = cfg["borrows"] == "true"
	s.h.mu.Lock()
	s.h.opened++
	s.h.mu.Unlock()
	return nil
}

func (s *testSinkTask) BorrowsRecords() bool { return s.borrows }

func (s *testSinkTask) Write(_ context.Context, recs []*connectors.SinkRecord) error {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if s.h.retriable > 0 {
		s.h.retriable--
		return connectors.Retriable(errors.New("test: try again"))
	}
	if s.h.writeFail > 0 {
		s.h.writeFail--
		return errors.New("test: write refused")
	}
	s.h.batches = append(s.h.batches, len(recs))
	for _, r := range recs {
		v, _ := r.Value.(string)
		var task int
		var seq int64
		if _, err := fmt.Sscanf(v, "%d:%d", &task, &seq); err != nil {
			return fmt.Errorf("test sink: bad value %q", v)
		}
		// A value "task:seq:padding" carries padding that follows from
		// its seq (paddedValue): a value read from memory that another
		// record's bytes overwrote would not.
		if _, pad, ok := strings.Cut(strings.TrimPrefix(v, fmt.Sprintf("%d:%d", task, seq)), ":"); ok && pad != padFor(seq) {
			return fmt.Errorf("test sink: value %q does not hold its own padding", v)
		}
		s.h.written = append(s.h.written, seq)
	}
	return nil
}

func (s *testSinkTask) Close() error { return nil }

var stringConv = map[string]string{
	"key.converter":   "org.apache.kafka.connect.storage.StringConverter",
	"value.converter": "org.apache.kafka.connect.storage.StringConverter",
}

func withConv(m map[string]string) map[string]string {
	for k, v := range stringConv {
		m[k] = v
	}
	return m
}
