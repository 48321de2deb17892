package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/testutil"
)

// --- retryStage alone

func stageKeys(timeout, delayMax time.Duration) connconfig.Runtime {
	return connconfig.Runtime{RetryTimeout: timeout, RetryDelayMax: delayMax}
}

var errFlaky = connectors.Retriable(errors.New("test: registry unreachable"))

func TestRetryStage(t *testing.T) {
	nop := zerolog.Nop()
	for _, tc := range []struct {
		name           string
		keys           connconfig.Runtime
		fails          int   // op fails this many times, then succeeds; -1 always
		err            error // what it fails with
		wantAttempts   int   // exactly; 0 = at least 3
		wantErr        bool
		minDur, maxDur time.Duration
	}{
		{"no timeout: a retriable error is final at once", stageKeys(0, time.Minute), -1, errFlaky, 1, true, 0, 200 * time.Millisecond},
		{"a non-retriable error is never retried", stageKeys(-time.Millisecond, time.Minute), -1, errors.New("bad"), 1, true, 0, 200 * time.Millisecond},
		{"success ends the retries", stageKeys(-time.Millisecond, 10*time.Millisecond), 2, errFlaky, 3, false, 0, time.Second},
		{"success on the first attempt", stageKeys(0, time.Minute), 0, errFlaky, 1, false, 0, 200 * time.Millisecond},
		// Retried until the timeout, and not past it: the last wait is cut
		// to what is left of the timeout.
		{"retried until the timeout", stageKeys(700*time.Millisecond, 50*time.Millisecond), -1, errFlaky, 0, true, 700 * time.Millisecond, 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A deadline, so that a retryStage that never gives up fails
			// the test rather than hanging it.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			attempts := 0
			start := time.Now()
			err := retryStage(ctx, nop, nil, "test", tc.keys, func() error {
				attempts++
				if tc.fails < 0 || attempts <= tc.fails {
					return tc.err
				}
				return nil
			})
			took := time.Since(start)
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, tc.err)) {
				t.Fatalf("err %v, want %v (wanted: %v)", err, tc.err, tc.wantErr)
			}
			if (tc.wantAttempts > 0 && attempts != tc.wantAttempts) || (tc.wantAttempts == 0 && attempts < 3) {
				t.Errorf("%d attempts, want %d (0: at least 3)", attempts, tc.wantAttempts)
			}
			if took < tc.minDur || took > tc.maxDur {
				t.Errorf("took %s, want %s..%s", took, tc.minDur, tc.maxDur)
			}
		})
	}
}

// errors.retry.timeout=-1 retries until the task stops, which ends the
// wait at once.
func TestRetryStageForeverEndsWithTheTask(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	var attempts atomic.Int32
	start := time.Now()
	err := retryStage(ctx, zerolog.Nop(), nil, "test", stageKeys(-time.Millisecond, 20*time.Millisecond), func() error {
		attempts.Add(1)
		return errFlaky
	})
	if !errors.Is(err, errFlaky) || ctx.Err() == nil {
		t.Fatalf("err %v (ctx %v): want the op's error once the task stopped", err, ctx.Err())
	}
	if took := time.Since(start); took > 700*time.Millisecond || attempts.Load() < 5 {
		t.Fatalf("%d attempts in %s: want many, ending with the task", attempts.Load(), took)
	}
}

// The wait doubles from 300 ms, as Connect's, and once past the maximum is
// a random delay below it.
func TestStageDelay(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 300 * time.Millisecond, 2: 600 * time.Millisecond, 3: 1200 * time.Millisecond} {
		if got := stageDelay(n, time.Minute); got != want {
			t.Errorf("stageDelay(%d) = %s, want %s", n, got, want)
		}
	}
	for _, n := range []int{3, 4, 70, 1 << 20} {
		if got := stageDelay(n, time.Second); got < 0 || got >= time.Second {
			t.Errorf("stageDelay(%d, 1s) = %s, want below 1s", n, got)
		}
	}
	if got := stageDelay(1, 0); got != 0 {
		t.Errorf("stageDelay(1, 0) = %s, want 0", got)
	}
}

// --- through the pipelines, with a converter that fails retriably

// flakyConverterClass names the test converter: a StringConverter whose
// conversion of one value, the connector config's test.flaky, keeps failing
// with a retriable error, as a converter whose schema registry is down.
const flakyConverterClass = "test.FlakyConverter"

type flakyConverter struct {
	converters.StringConverter
	connector string
	bad       string
	instance  int64 // one per task incarnation
}

// conversionAttempt is one conversion of the bad value.
type conversionAttempt struct {
	instance int64
	at       time.Time
}

var (
	flakyInstances atomic.Int64
	attemptsMu     sync.Mutex
	attemptsOf     = map[string][]conversionAttempt{} // by connector
)

func init() {
	resolve := newConverter
	newConverter = func(conn, worker map[string]string, isKey bool) (converters.Converter, error) {
		key := "value.converter"
		if isKey {
			key = "key.converter"
		}
		if conn[key] == flakyConverterClass {
			return &flakyConverter{connector: conn["name"], bad: conn["test.flaky"], instance: flakyInstances.Add(1)}, nil
		}
		return resolve(conn, worker, isKey)
	}
}

func (c *flakyConverter) fail(value string) error {
	if value != c.bad {
		return nil
	}
	attemptsMu.Lock()
	attemptsOf[c.connector] = append(attemptsOf[c.connector], conversionAttempt{c.instance, time.Now()})
	attemptsMu.Unlock()
	return connectors.Retriable(fmt.Errorf("test: cannot reach the registry to convert %q", value))
}

func (c *flakyConverter) ToConnect(topic string, data []byte) (*connectors.Schema, any, error) {
	if err := c.fail(string(data)); err != nil {
		return nil, nil, err
	}
	return c.StringConverter.ToConnect(topic, data)
}

func (c *flakyConverter) FromConnect(topic string, schema *connectors.Schema, value any) ([]byte, error) {
	if s, _ := value.(string); s != "" {
		if err := c.fail(s); err != nil {
			return nil, err
		}
	}
	return c.StringConverter.FromConnect(topic, schema, value)
}

// firstIncarnation returns the attempts of the first task instance that
// converted the bad value of connector: those before any restart.
func firstIncarnation(connector string) []conversionAttempt {
	attemptsMu.Lock()
	defer attemptsMu.Unlock()
	all := attemptsOf[connector]
	var out []conversionAttempt
	for _, a := range all {
		if a.instance == all[0].instance {
			out = append(out, a)
		}
	}
	return out
}

// checkAttempts checks the first incarnation's attempts at the bad value:
// exactly one without a timeout; with one, several, spread over the timeout
// and not much beyond it.
func checkAttempts(t *testing.T, connector string, timeout time.Duration) {
	t.Helper()
	as := firstIncarnation(connector)
	if len(as) == 0 {
		t.Fatalf("%s: the bad value was never converted", connector)
	}
	span := as[len(as)-1].at.Sub(as[0].at)
	if timeout == 0 {
		if len(as) != 1 {
			t.Errorf("%s: errors.retry.timeout=0, yet %d attempts over %s", connector, len(as), span)
		}
		return
	}
	if len(as) < 3 || span < timeout-50*time.Millisecond || span > timeout+time.Second {
		t.Errorf("%s: %d attempts over %s, want several over errors.retry.timeout=%s", connector, len(as), span, timeout)
	}
}

// produceWithBad writes "0:0", the bad value "0:1", "0:2" to a new topic.
func produceWithBad(t *testing.T, e *env, topic string) {
	t.Helper()
	if _, err := e.adm.CreateTopic(context.Background(), 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range []string{"0:0", "0:1", "0:2"} {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	if err := e.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func (e *env) committed(connector, topic string) int64 {
	offs, err := e.adm.FetchOffsets(context.Background(), "connect-"+connector)
	if err != nil {
		return -1
	}
	if o, ok := offs.Lookup(topic, 0); ok {
		return o.At
	}
	return -1
}

// errors.retry.timeout and errors.tolerance on a sink's conversion, as
// Connect's RetryWithToleranceOperator: a retriable failure is retried
// until the timeout (0: not at all), then the record is skipped (all) or
// the task fails (none), and nothing after it is written (invariant 7).
func TestSinkConversionRetriesWithinTimeoutThenTolerance(t *testing.T) {
	e := newEnv(t)
	const timeout = 1200 * time.Millisecond
	cases := []struct {
		name      string
		timeout   time.Duration
		tolerance string
	}{
		{"rt-all", timeout, "all"},
		{"rt-none", timeout, "none"},
		{"rt0-all", 0, "all"},
		{"rt0-none", 0, "none"},
	}
	for _, tc := range cases {
		topic := e.topic(tc.name + "-in")
		produceWithBad(t, e, topic)
		cfg := map[string]string{
			"name": tc.name, "connector.class": "test.TestSink", "topics": topic,
			"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": flakyConverterClass,
			"test.flaky": "0:1", "errors.tolerance": tc.tolerance, "errors.retry.delay.max.ms": "100",
		}
		if tc.timeout > 0 {
			cfg["errors.retry.timeout"] = fmt.Sprint(tc.timeout.Milliseconds())
		}
		e.create(tc.name, cfg)
	}
	for _, tc := range cases {
		topic := e.topic(tc.name + "-in")
		if tc.tolerance == "all" {
			// Skipped: the records around it are written, the offsets
			// move past it, and the task keeps running.
			testutil.Eventually(t, 20*time.Second, tc.name+" past the bad record", func() error {
				if c := e.committed(tc.name, topic); c != 3 {
					return fmt.Errorf("committed %d", c)
				}
				return nil
			})
			h := hooksFor(tc.name)
			h.mu.Lock()
			written := fmt.Sprint(h.written)
			h.mu.Unlock()
			if written != "[0 2]" {
				t.Errorf("%s: wrote seqs %s, want [0 2]", tc.name, written)
			}
			if st := e.taskState(tc.name, 0); st.State != state.StateRunning {
				t.Errorf("%s: task %+v, want RUNNING", tc.name, st)
			}
		} else {
			testutil.Eventually(t, 20*time.Second, tc.name+" FAILED", func() error {
				if st := e.taskState(tc.name, 0); st.State != state.StateFailed || !strings.Contains(st.Trace, "cannot reach the registry") {
					return fmt.Errorf("%+v", st)
				}
				return nil
			})
		}
		checkAttempts(t, tc.name, tc.timeout)
	}
	// Nothing at or after a bad record the task failed on is written or
	// committed.
	for _, name := range []string{"rt-none", "rt0-none"} {
		h := hooksFor(name)
		h.mu.Lock()
		n := len(h.written)
		h.mu.Unlock()
		if c := e.committed(name, e.topic(name+"-in")); n != 0 || c > 1 {
			t.Errorf("%s: %d records written, offset %d committed, past a bad record", name, n, c)
		}
	}
	// A skipped record is done with: no more attempts at it.
	before := len(firstIncarnation("rt-all"))
	time.Sleep(300 * time.Millisecond)
	if after := len(firstIncarnation("rt-all")); after != before {
		t.Errorf("rt-all: %d more attempts after the record was skipped", after-before)
	}
}

// The same on a source's conversion: skipped under all, with the offsets
// moving past it; under none the task fails and the offset stays before it
// (invariant 1).
func TestSourceConversionRetriesWithinTimeoutThenTolerance(t *testing.T) {
	e := newEnv(t)
	const timeout = 800 * time.Millisecond
	for _, tolerance := range []string{"all", "none"} {
		name := "src-rt-" + tolerance
		hooksFor(name).records = 5
		e.create(name, map[string]string{
			"name": name, "connector.class": "test.TestSource", "topic": e.topic(name + "-out"),
			"key.converter": "org.apache.kafka.connect.storage.StringConverter", "value.converter": flakyConverterClass,
			"test.flaky": "0:2", "errors.tolerance": tolerance,
			"errors.retry.timeout": fmt.Sprint(timeout.Milliseconds()), "errors.retry.delay.max.ms": "100",
		})
	}
	testutil.Eventually(t, 20*time.Second, "src-rt-all past the bad record", func() error {
		off, err := e.offsets.Offset("src-rt-all", map[string]any{"task": 0})
		if err != nil || off == nil || off["seq"] != int64(4) {
			return fmt.Errorf("offset %v (err %v)", off, err)
		}
		return nil
	})
	if got := e.readTopic(e.topic("src-rt-all-out"), 4); len(got) != 4 {
		t.Errorf("src-rt-all: %d records produced, want the 4 good ones", len(got))
	}
	e.waitTaskState("src-rt-none", 0, state.StateFailed)
	for _, name := range []string{"src-rt-all", "src-rt-none"} {
		checkAttempts(t, name, timeout)
	}
	if off, _ := e.offsets.Offset("src-rt-none", map[string]any{"task": 0}); off != nil && off["seq"].(int64) >= 2 {
		t.Errorf("src-rt-none: offset %v committed at or past the record that failed", off)
	}
}
