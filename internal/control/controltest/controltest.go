// Package controltest builds a Controller over the real config and status
// logs on an embedded broker, with test plugins, for the tests of the
// control plane and of the APIs in front of it.
package controltest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/state"
)

// Classes of the test plugins and converters.
const (
	SourceClass     = "com.example.TestSourceConnector"
	SinkClass       = "com.example.TestSinkConnector"
	PanicClass      = "com.example.PanickyConnector"
	JSONConverter   = "org.apache.kafka.connect.json.JsonConverter"
	StringConverter = "org.apache.kafka.connect.storage.StringConverter"
)

// testConnector is a plugin with a config of its own and, for the source,
// a cross-key rule.
type testConnector struct{ def *connectors.ConfigDef }

func (c *testConnector) Config() *connectors.ConfigDef { return c.def }
func (c *testConnector) Start(context.Context, connectors.ConnectorContext, map[string]string) error {
	return nil
}
func (c *testConnector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	out := make([]map[string]string, maxTasks)
	for i := range out {
		out[i] = map[string]string{"task": fmt.Sprint(i)}
	}
	return out, nil
}
func (c *testConnector) Stop() error { return nil }

type sourceConnector struct{ testConnector }

func (sourceConnector) ValidateConfig(cfg map[string]string) map[string][]string {
	if cfg["mode"] == "query" && cfg["query"] == "" {
		return map[string][]string{"query": {"query is required when mode is query"}}
	}
	return nil
}

type panicky struct{ testConnector }

func (panicky) Config() *connectors.ConfigDef { panic("config is broken") }

// Registry holds the test plugins: a source with its own keys and a
// cross-key rule (mode=query needs query), a sink needing file, and a
// source whose Config panics.
func Registry() *connectors.Registry {
	r := connectors.NewRegistry()
	r.MustRegister(connectors.Plugin{
		Class: SourceClass, Type: connectors.Source, Version: "1.2.3",
		New: func() connectors.Connector {
			return &sourceConnector{testConnector{connectors.NewConfigDef().
				Define(connectors.ConfigKey{Name: "topic", Required: true, Importance: connectors.High, Doc: "Topic to write to.", Group: "Source"}).
				Define(connectors.ConfigKey{Name: "batch.size", Type: connectors.TypeInt, Default: "100", Doc: "Records per poll.", Group: "Source", Validate: connectors.AtLeast(1)}).
				Define(connectors.ConfigKey{Name: "mode", Default: "bulk", Doc: "How to read.", Validate: connectors.OneOf("bulk", "query"), Recommended: []string{"bulk", "query"}}).
				Define(connectors.ConfigKey{Name: "query", Doc: "The query."}).
				Define(connectors.ConfigKey{Name: "password", Type: connectors.TypePassword, Doc: "Secret."})}}
		},
	})
	r.MustRegister(connectors.Plugin{
		Class: SinkClass, Type: connectors.Sink, Version: "0.1",
		New: func() connectors.Connector {
			return &testConnector{connectors.NewConfigDef().
				Define(connectors.ConfigKey{Name: "file", Required: true, Doc: "File to write.", Group: "Sink"})}
		},
	})
	r.MustRegister(connectors.Plugin{
		Class: PanicClass, Type: connectors.Source,
		New: func() connectors.Connector { return &panicky{} },
	})
	if err := r.RegisterTransform(connectors.TransformPlugin{Class: TransformClass, Version: "9.9",
		New: func() connectors.Transform { return &rename{} }}); err != nil {
		panic(err)
	}
	if err := r.RegisterPredicate(connectors.PredicatePlugin{Class: PredicateClass,
		New: func() connectors.Predicate { return &always{} }}); err != nil {
		panic(err)
	}
	return r
}

// The test transform and predicate.
const (
	TransformClass = "com.example.Rename"
	PredicateClass = "com.example.Always"
)

// rename sets the topic to its required "topic" key.
type rename struct{ topic string }

func (t *rename) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().Define(connectors.ConfigKey{Name: "topic", Required: true, Doc: "The new topic."})
}
func (t *rename) Configure(c map[string]string) error { t.topic = c["topic"]; return nil }
func (t *rename) Apply(r *connectors.Record) (*connectors.Record, error) {
	out := *r
	out.Topic = t.topic
	return &out, nil
}
func (t *rename) Close() error { return nil }

// always matches every record.
type always struct{}

func (always) Config() *connectors.ConfigDef     { return connectors.NewConfigDef() }
func (always) Configure(map[string]string) error { return nil }
func (always) Test(*connectors.Record) bool      { return true }
func (always) Close() error                      { return nil }

// CheckConverters accepts only the JSON and string converters.
func CheckConverters(cfg map[string]string) *connectors.ConfigError {
	ce := &connectors.ConfigError{}
	for _, k := range []string{"key.converter", "value.converter"} {
		if v, ok := cfg[k]; ok && v != JSONConverter && v != StringConverter {
			ce.Add(k, fmt.Sprintf("unknown converter class %q", v))
		}
	}
	if ce.Err() == nil {
		return nil
	}
	return ce
}

// Call is one write that reached the config store.
type Call struct {
	Op, Name string
	Target   state.TargetState
}

// RecordingStore is the real config log, with the writes that reached it
// recorded, and optionally failing.
type RecordingStore struct {
	*state.ConfigLog
	mu    sync.Mutex
	calls []Call
	fail  error
}

func (s *RecordingStore) record(c Call) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	return s.fail
}

// Write records each write of the batch, then writes it.
func (s *RecordingStore) Write(ctx context.Context, b *state.Batch) error {
	for _, op := range b.Ops() {
		if err := s.record(Call{Op: op.Kind, Name: op.Name, Target: op.Target}); err != nil {
			return err
		}
	}
	return s.ConfigLog.Write(ctx, b)
}

func (s *RecordingStore) DeleteConnector(ctx context.Context, name string) error {
	if err := s.record(Call{Op: "delete", Name: name}); err != nil {
		return err
	}
	return s.ConfigLog.DeleteConnector(ctx, name)
}

// Calls returns the writes so far.
func (s *RecordingStore) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// SetFail makes every later write fail with err (nil: succeed).
func (s *RecordingStore) SetFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Env is a Controller over real state logs on an embedded broker.
type Env struct {
	C        *control.Controller
	Configs  *RecordingStore
	Statuses *state.StatusLog
	Ready    *ReadyFlag
}

// ReadyFlag is the worker's readiness as the Controller sees it.
type ReadyFlag struct {
	mu sync.Mutex
	v  bool
}

func (f *ReadyFlag) Set(v bool) { f.mu.Lock(); f.v = v; f.mu.Unlock() }
func (f *ReadyFlag) Get() bool  { f.mu.Lock(); defer f.mu.Unlock(); return f.v }

// NewEnv starts an embedded broker and the real config and status logs on
// it; each of with may change the Controller's options before it is made.
func NewEnv(t testing.TB, with ...func(*control.Options)) *Env {
	t.Helper()
	_, opts := kafkatest.NewCluster(t, kfake.SeedTopics(1, "test-configs"), kfake.SeedTopics(5, "test-status"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := state.NewConfigLog(opts, "test-configs", zerolog.Nop())
	kafkatest.StartStore(t, ctx, cl, err)
	sl, err := state.NewStatusLog(opts, "test-status", zerolog.Nop())
	kafkatest.StartStore(t, ctx, sl, err)
	e := &Env{Configs: &RecordingStore{ConfigLog: cl}, Statuses: sl, Ready: &ReadyFlag{v: true}}
	o := control.Options{
		Configs: e.Configs, Statuses: sl, Plugins: Registry(),
		Converters:      []string{StringConverter, JSONConverter},
		CheckConverters: CheckConverters,
		WorkerID:        "w1:8083", KafkaClusterID: "kc-1", Version: "0.9.0", Commit: "abc123",
		Ready:        e.Ready.Get,
		WriteTimeout: 10 * time.Second,
	}
	for _, f := range with {
		f(&o)
	}
	e.C, err = control.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// SourceConfig is a valid config of the test source, with kv added.
func SourceConfig(kv ...string) map[string]string {
	m := map[string]string{"connector.class": SourceClass, "topic": "out"}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// SinkConfig is a valid config of the test sink, with kv added.
func SinkConfig(kv ...string) map[string]string {
	m := map[string]string{"connector.class": "TestSink", "topics": "in", "file": "/tmp/out"}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
