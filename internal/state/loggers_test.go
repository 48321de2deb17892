package state

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// levelRecorder is a handler of cluster-wide log levels that tests read
// while the tailer goroutine calls it.
type levelRecorder struct {
	mu  sync.Mutex
	got []LoggerLevel
}

func (l *levelRecorder) handle(lv LoggerLevel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, lv)
}

func (l *levelRecorder) levels() []LoggerLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]LoggerLevel(nil), l.got...)
}

// waitLevels waits until rec holds n levels and returns them.
func waitLevels(t *testing.T, rec *levelRecorder, n int) []LoggerLevel {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := rec.levels()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startWithLevels(t *testing.T, opts []kgo.Opt, log zerolog.Logger) (*ConfigLog, *levelRecorder) {
	t.Helper()
	c, err := NewConfigLog(opts, configTopic, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	rec := &levelRecorder{}
	c.OnLoggerLevel(rec.handle)
	if err := c.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func TestConfigLogLoggerLevels(t *testing.T) {
	opts := newCluster(t)
	ctx := testCtx(t)
	var logs testutil.LogBuffer
	a, recA := startWithLevels(t, opts, zerolog.New(&logs))

	if err := a.PutLoggerLevel(ctx, "sluice.actors", "DEBUG"); err != nil {
		t.Fatal(err)
	}
	// The writer has applied it by the time the write returns.
	if got := recA.levels(); !reflect.DeepEqual(got, []LoggerLevel{{"sluice.actors", "DEBUG"}}) {
		t.Fatalf("writer got %v right after the write", got)
	}
	if got := rawValues(t, opts)["logger-cluster-sluice.actors"]; got != `{"level":"DEBUG"}` {
		t.Fatalf("record value %s, want Connect's {\"level\":\"DEBUG\"}", got)
	}

	// A worker started later does not apply levels set before it (as
	// Connect), but applies later ones, as every worker does, in order.
	b, recB := startWithLevels(t, opts, zerolog.Nop())
	if err := b.PutLoggerLevel(ctx, "root", "warn"); err != nil {
		t.Fatal(err)
	}
	if err := a.PutLoggerLevel(ctx, "sluice.actors", "INFO"); err != nil {
		t.Fatal(err)
	}
	if err := b.ReadToEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := recB.levels(), []LoggerLevel{{"root", "warn"}, {"sluice.actors", "INFO"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("later worker got %v, want %v", got, want)
	}
	want := []LoggerLevel{{"sluice.actors", "DEBUG"}, {"root", "warn"}, {"sluice.actors", "INFO"}}
	if got := waitLevels(t, recA, 3); !reflect.DeepEqual(got, want) {
		t.Fatalf("first worker got %v, want %v", got, want)
	}
	if len(a.Snapshot().Connectors) != 0 {
		t.Fatal("log levels showed up as connectors")
	}
	if strings.Contains(logs.String(), "skipping") {
		t.Fatalf("valid log level records were warned about:\n%s", logs.String())
	}
	if err := a.PutLoggerLevel(ctx, "", "INFO"); err == nil {
		t.Fatal("a level without a namespace was written")
	}
}

// Bad records are skipped with a warning naming them; later ones still
// arrive.
func TestConfigLogBadLoggerLevels(t *testing.T) {
	opts := newCluster(t)
	var logs testutil.LogBuffer
	c, rec := startWithLevels(t, opts, zerolog.New(&logs))
	cl := kafkatest.NewClient(t, opts)
	key := []byte("logger-cluster-x")
	kafkatest.Produce(t, cl,
		&kgo.Record{Topic: configTopic, Key: key},
		&kgo.Record{Topic: configTopic, Key: key, Value: []byte(`{"level":5}`)},
		&kgo.Record{Topic: configTopic, Key: key, Value: []byte(`{"lvl":"DEBUG"}`)},
		&kgo.Record{Topic: configTopic, Key: key, Value: []byte(`not json`)},
		&kgo.Record{Topic: configTopic, Key: key, Value: []byte(`{"level":"TRACE"}`)},
	)
	if err := c.ReadToEnd(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := rec.levels(); !reflect.DeepEqual(got, []LoggerLevel{{"x", "TRACE"}}) {
		t.Fatalf("got %v, want only the valid record", got)
	}
	if n := strings.Count(logs.String(), `"key":"logger-cluster-x"`); n != 4 {
		t.Fatalf("%d warnings naming the key, want 4:\n%s", n, logs.String())
	}
}
