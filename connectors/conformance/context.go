package conformance

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
)

// TestLogger returns a logger that writes to t's log until t ends and drops
// what comes later, so a goroutine logging after its test cannot panic.
func TestLogger(t testing.TB) *zerolog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	l := zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: true, TimeFormat: "15:04:05.000"}).With().Timestamp().Logger()
	return &l
}

type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Helper()
		w.t.Log(string(p))
	}
	return len(p), nil
}

// ConnectorContext is an in-memory connectors.ConnectorContext.
type ConnectorContext struct {
	name string
	log  *zerolog.Logger

	mu           sync.Mutex
	reconfigured int
	errs         []error
}

// NewConnectorContext returns a context for the connector name.
func NewConnectorContext(t testing.TB, name string) *ConnectorContext {
	return &ConnectorContext{name: name, log: withFields(TestLogger(t), name, -1)}
}

// withFields gives a context's logger the fields the runtime's carries:
// connector, and task for a task's (task < 0 is the connector itself), so
// a connector's lines read the same in its tests as in a worker's log.
func withFields(l *zerolog.Logger, connector string, task int) *zerolog.Logger {
	c := l.With().Str("connector", connector)
	if task >= 0 {
		c = c.Int("task", task)
	}
	out := c.Logger()
	return &out
}

func (c *ConnectorContext) Name() string            { return c.name }
func (c *ConnectorContext) Logger() *zerolog.Logger { return c.log }

func (c *ConnectorContext) RequestTaskReconfiguration() {
	c.mu.Lock()
	c.reconfigured++
	c.mu.Unlock()
}

func (c *ConnectorContext) RaiseError(err error) {
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

// Errors returns what the connector raised.
func (c *ConnectorContext) Errors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.errs...)
}

// SourceContext is an in-memory connectors.SourceTaskContext with an offset
// store. Offsets go through JSON on the way in and out, as they do through
// the offsets topic, so numbers come back as float64: a task must cope.
type SourceContext struct {
	name string
	id   int
	log  *zerolog.Logger

	mu      sync.Mutex
	offsets map[string][]byte
}

// NewSourceContext returns a context for task id of connector name, with no
// committed offsets.
func NewSourceContext(t testing.TB, name string, id int) *SourceContext {
	return &SourceContext{name: name, id: id, log: withFields(TestLogger(t), name, id), offsets: map[string][]byte{}}
}

func (c *SourceContext) ConnectorName() string   { return c.name }
func (c *SourceContext) TaskID() int             { return c.id }
func (c *SourceContext) Logger() *zerolog.Logger { return c.log }

// TransactionContext is nil: the conformance harness runs tasks at least
// once, as a worker without exactly-once support does.
func (c *SourceContext) TransactionContext() connectors.TransactionContext { return nil }

func partitionKey(partition map[string]any) (string, error) {
	// encoding/json sorts map keys: equal partitions give equal keys.
	b, err := json.Marshal(partition)
	if err != nil {
		return "", fmt.Errorf("source partition %v is not JSON-serialisable: %w", partition, err)
	}
	return string(b), nil
}

// Offset returns the last offset committed for partition, or nil.
func (c *SourceContext) Offset(partition map[string]any) (map[string]any, error) {
	key, err := partitionKey(partition)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	b, ok := c.offsets[key]
	c.mu.Unlock()
	if !ok {
		return nil, nil
	}
	var off map[string]any
	if err := json.Unmarshal(b, &off); err != nil {
		return nil, err
	}
	return off, nil
}

// Commit stores the offsets of records, in order, as the runtime does once
// Kafka acknowledged them: the last record of each partition wins.
func (c *SourceContext) Commit(records ...*connectors.SourceRecord) error {
	for _, r := range records {
		key, err := partitionKey(r.Partition)
		if err != nil {
			return err
		}
		off := r.SourceOffset()
		b, err := json.Marshal(off)
		if err != nil {
			return fmt.Errorf("source offset %v is not JSON-serialisable: %w", off, err)
		}
		c.mu.Lock()
		c.offsets[key] = b
		c.mu.Unlock()
	}
	return nil
}

// Committed returns a copy of the stored offsets as JSON, by partition key.
func (c *SourceContext) Committed() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(c.offsets))
	for k, v := range c.offsets {
		out[k] = string(v)
	}
	return out
}

// SinkContext is an in-memory connectors.SinkTaskContext.
type SinkContext struct {
	name string
	id   int
	log  *zerolog.Logger
}

// NewSinkContext returns a context for task id of connector name.
func NewSinkContext(t testing.TB, name string, id int) *SinkContext {
	return &SinkContext{name: name, id: id, log: withFields(TestLogger(t), name, id)}
}

func (c *SinkContext) ConnectorName() string   { return c.name }
func (c *SinkContext) TaskID() int             { return c.id }
func (c *SinkContext) Logger() *zerolog.Logger { return c.log }

var (
	_ connectors.ConnectorContext  = (*ConnectorContext)(nil)
	_ connectors.SourceTaskContext = (*SourceContext)(nil)
	_ connectors.SinkTaskContext   = (*SinkContext)(nil)
)
