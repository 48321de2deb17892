// Package datagen holds Datagen, a source that generates numbered records
// for tests and benchmarks. Each task counts its own sequence from 0 and
// stores it as its source offset, so a restarted or moved task continues
// where its predecessor's committed offsets end.
package datagen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
)

const (
	Class   = "io.sluice.connect.datagen.DatagenConnector"
	Version = "1.0.0"

	TopicKey            = "topic"
	MaxRecordsKey       = "max.records"
	RecordsPerSecondKey = "records.per.second"
	ValueSizeKey        = "value.size"
	BatchSizeKey        = "batch.size"
	// TransactionSizeKey is how many records make one transaction when
	// the connector defines the boundaries (transaction.boundary=connector).
	TransactionSizeKey = "transaction.size"
	// TaskIDKey is set by the connector in each task config.
	TaskIDKey = "task.id"

	TaskField = "task"
	SeqField  = "seq"
	PadField  = "pad"

	ValueSchemaName = "io.sluice.connect.datagen.Value"

	// defaultPollWait bounds a Poll whose ctx has no deadline.
	defaultPollWait = time.Second
)

// ValueSchema is the schema of every record value. It is shared: never
// modify it.
var ValueSchema = connectors.StructSchema(ValueSchemaName,
	connectors.Field{Name: TaskField, Schema: connectors.Int32Schema},
	connectors.Field{Name: SeqField, Schema: connectors.Int64Schema},
	connectors.Field{Name: PadField, Schema: connectors.StringSchema},
)

// Plugin describes Datagen.
func Plugin() connectors.Plugin {
	return connectors.Plugin{
		Class:   Class,
		Type:    connectors.Source,
		Version: Version,
		New:     func() connectors.Connector { return &Connector{} },
	}
}

// ConfigDef returns the keys Datagen accepts. tasks.max is the runtime's.
func ConfigDef() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{
			Name: TopicKey, Type: connectors.TypeString, Required: true, Importance: connectors.High,
			Doc: "The topic to write generated records to", Validate: connectors.NonEmpty,
		}).
		Define(connectors.ConfigKey{
			Name: MaxRecordsKey, Type: connectors.TypeLong, Default: "-1", Importance: connectors.Medium,
			Doc:      "Records each task generates before it goes idle; -1 generates forever",
			Validate: connectors.AtLeast(-1),
		}).
		Define(connectors.ConfigKey{
			Name: RecordsPerSecondKey, Type: connectors.TypeDouble, Default: "0", Importance: connectors.Medium,
			Doc:      "Records per second each task generates, fractions allowed; 0 generates as fast as possible",
			Validate: connectors.AtLeast(0),
		}).
		Define(connectors.ConfigKey{
			Name: ValueSizeKey, Type: connectors.TypeInt, Default: "0", Importance: connectors.Low,
			Doc:      "Bytes of padding in each value's pad field",
			Validate: connectors.AtLeast(0),
		}).
		Define(connectors.ConfigKey{
			Name: BatchSizeKey, Type: connectors.TypeInt, Default: "1000", Importance: connectors.Low,
			Doc:      "The maximum number of records one poll returns",
			Validate: connectors.AtLeast(1),
		}).
		Define(connectors.ConfigKey{
			Name: TransactionSizeKey, Type: connectors.TypeInt, Default: "100", Importance: connectors.Low,
			Doc: "Records per transaction when the worker runs the connector exactly once with " +
				"transaction.boundary=connector: each task commits after every this many records",
			Validate: connectors.AtLeast(1),
		})
}

// ExactlyOnceSupport is true: a task resumes right after the seq of its
// last committed offset, so records and offsets committed together are
// neither lost nor repeated.
func (c *Connector) ExactlyOnceSupport(map[string]string) bool { return true }

// CanDefineTransactionBoundaries is true: with transaction.boundary=connector
// each task commits every transaction.size records.
func (c *Connector) CanDefineTransactionBoundaries(map[string]string) bool { return true }

// Connector is DatagenConnector.
type Connector struct {
	config map[string]string
}

func (c *Connector) Config() *connectors.ConfigDef { return ConfigDef() }

func (c *Connector) Start(_ context.Context, _ connectors.ConnectorContext, config map[string]string) error {
	if _, err := ConfigDef().Parse(config); err != nil {
		return err
	}
	c.config = maps.Clone(config)
	return nil
}

// TaskConfigs returns exactly maxTasks configs: tasks share no data, so
// every task the user asked for has work.
func (c *Connector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	if maxTasks < 1 {
		return nil, fmt.Errorf("tasks.max must be at least 1, got %d", maxTasks)
	}
	if c.config == nil {
		return nil, errors.New("datagen: TaskConfigs before Start")
	}
	out := make([]map[string]string, maxTasks)
	for i := range out {
		tc := maps.Clone(c.config)
		tc[TaskIDKey] = strconv.Itoa(i)
		out[i] = tc
	}
	return out, nil
}

func (c *Connector) Stop() error { return nil }

func (c *Connector) NewTask() connectors.SourceTask { return &Task{} }

// Task generates one task's records.
type Task struct {
	log       zerolog.Logger
	topic     string
	batchSize int
	// lent is the memory of the last Poll's records, written over at
	// the next (LendsRecords).
	lent lentRecords
	max  int64 // records in total; -1 for no end
	next int64 // seq of the next record

	// Shared by every record of the task, built once.
	keySchema *connectors.Schema
	key       any
	taskVal   any
	padVal    any
	partition map[string]any

	// txn is where the task ends its transactions when it defines them
	// (nil otherwise); txnSize records make one.
	txn     connectors.TransactionContext
	txnSize int64

	rate   float64 // records per second; 0 for no limit
	burst  float64
	tokens float64
	last   time.Time
	closed bool
}

func (t *Task) Open(_ context.Context, tc connectors.SourceTaskContext, config map[string]string) error {
	cfg, err := ConfigDef().Parse(config)
	if err != nil {
		return err
	}
	task := tc.TaskID()
	if v, ok := config[TaskIDKey]; ok {
		if task, err = strconv.Atoi(strings.TrimSpace(v)); err != nil || task < 0 {
			return fmt.Errorf("datagen: invalid %s %q", TaskIDKey, v)
		}
	}
	if l := tc.Logger(); l != nil {
		t.log = l.With().Int("datagen_task", task).Logger()
	} else {
		t.log = zerolog.Nop()
	}
	t.topic = cfg.String(TopicKey)
	t.batchSize = cfg.Int(BatchSizeKey)
	t.max = cfg.Long(MaxRecordsKey)
	t.txn = tc.TransactionContext()
	t.txnSize = int64(cfg.Int(TransactionSizeKey))
	t.rate = cfg.Double(RecordsPerSecondKey)
	// A tenth of a second of records at most in one burst keeps the output
	// smooth; at least one so that slow rates still emit.
	t.burst = math.Max(1, t.rate/10)
	t.tokens = 1
	t.last = time.Now()

	t.keySchema = connectors.StringSchema
	t.key = fmt.Sprintf("%s-%d", tc.ConnectorName(), task)
	t.taskVal = int32(task)
	t.padVal = strings.Repeat("x", cfg.Int(ValueSizeKey))
	t.partition = map[string]any{TaskField: task}

	off, err := tc.Offset(t.partition)
	if err != nil {
		return fmt.Errorf("datagen: reading the committed offset of task %d: %w", task, err)
	}
	if off != nil {
		seq, err := toInt64(off[SeqField])
		if err != nil {
			return fmt.Errorf("datagen: committed offset of task %d: %w", task, err)
		}
		t.next = seq + 1
		t.log.Debug().Int64("seq", t.next).Msg("resuming after the committed offset")
	}
	return nil
}

func toInt64(v any) (int64, error) {
	switch n := v.(type) {
	case int64:
		return n, nil
	case int:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > math.MaxInt64 {
			return 0, fmt.Errorf("seq %v is not an integer", n)
		}
		return int64(n), nil
	case json.Number:
		return n.Int64()
	default:
		return 0, fmt.Errorf("seq has the incorrect type %T", v)
	}
}

func (t *Task) Poll(ctx context.Context) ([]*connectors.SourceRecord, error) {
	if t.closed {
		return nil, errors.New("datagen: poll after close")
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultPollWait)
	}
	for {
		n := int64(t.batchSize)
		if t.max >= 0 {
			n = min(n, t.max-t.next)
		}
		if n <= 0 {
			// Done: idle until the deadline instead of spinning the
			// caller, and holding no records.
			t.lent = lentRecords{}
			sleepUntil(ctx, deadline)
			return nil, nil
		}
		if t.rate <= 0 {
			return t.generate(int(n)), nil
		}
		now := time.Now()
		t.tokens = math.Min(t.burst, t.tokens+now.Sub(t.last).Seconds()*t.rate)
		t.last = now
		if t.tokens >= 1 {
			n = min(n, int64(t.tokens))
			t.tokens -= float64(n)
			return t.generate(int(n)), nil
		}
		wait := time.Duration((1 - t.tokens) / t.rate * float64(time.Second))
		if now.Add(wait).After(deadline) {
			sleepUntil(ctx, deadline)
			return nil, nil
		}
		if !sleepUntil(ctx, now.Add(wait)) {
			return nil, nil
		}
	}
}

// sleepUntil reports whether it slept to t without ctx ending first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// generate builds n records without allocating, once the task has
// generated a batch as large: records, struct values and their field
// slices are those of the last Poll, which the runtime is done with
// (LendsRecords). The offset is given as an integer (OffsetKey), so that no
// map is built per record.
func (t *Task) generate(n int) []*connectors.SourceRecord {
	out, recs, vals, fields := t.lent.take(n)
	for i := range n {
		var seq any = t.next
		off := t.next
		t.next++
		f := fields[fieldsPerValue*i : fieldsPerValue*(i+1) : fieldsPerValue*(i+1)]
		f[0], f[1], f[2] = t.taskVal, seq, t.padVal
		vals[i] = connectors.StructValue{Schema: ValueSchema, Values: f}
		recs[i] = connectors.SourceRecord{
			Partition:   t.partition,
			OffsetKey:   SeqField,
			OffsetInt:   off,
			Topic:       t.topic,
			KeySchema:   t.keySchema,
			Key:         t.key,
			ValueSchema: ValueSchema,
			Value:       &vals[i],
		}
		out[i] = &recs[i]
		if t.txn != nil && (t.next%t.txnSize == 0 || t.next == t.max) {
			// A transaction ends after every transaction.size-th
			// record, and after the last one.
			t.txn.CommitTransactionAfter(out[i])
		}
	}
	return out
}

// lentRecords is a task's records, lent to the runtime from one Poll to the
// next: one slab each of pointers, records, struct values and their fields.
type lentRecords struct {
	out    []*connectors.SourceRecord
	recs   []connectors.SourceRecord
	vals   []connectors.StructValue
	fields []any
}

// take returns room for n records, made again only when the last slabs are
// smaller; every record, value and field of it is written by generate.
func (l *lentRecords) take(n int) ([]*connectors.SourceRecord, []connectors.SourceRecord, []connectors.StructValue, []any) {
	if len(l.out) < n {
		*l = lentRecords{
			out:    make([]*connectors.SourceRecord, n),
			recs:   make([]connectors.SourceRecord, n),
			vals:   make([]connectors.StructValue, n),
			fields: make([]any, fieldsPerValue*n),
		}
	}
	return l.out[:n:n], l.recs[:n], l.vals[:n], l.fields[:fieldsPerValue*n]
}

// fieldsPerValue is the number of fields of ValueSchema.
const fieldsPerValue = 3

// LendsRecords says that a Poll's records are written over at the next Poll
// (connectors.RecordLender): a task generating as fast as it can makes its
// records once, not at every Poll.
func (t *Task) LendsRecords() bool { return true }

func (t *Task) Commit(context.Context) error { return nil }

func (t *Task) Close() error {
	t.closed = true
	return nil
}

// ParseValue reads task and seq from a Datagen value serialised as JSON,
// either plain ({"task":..,"seq":..}) or in Connect's schema envelope
// ({"schema":..,"payload":{...}}).
func ParseValue(b []byte) (task int, seq int64, err error) {
	type fields struct {
		Task *int   `json:"task"`
		Seq  *int64 `json:"seq"`
	}
	var v struct {
		fields
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, 0, fmt.Errorf("datagen value: %w", err)
	}
	f := v.fields
	if f.Task == nil && f.Seq == nil && len(v.Payload) > 0 {
		if err := json.Unmarshal(v.Payload, &f); err != nil {
			return 0, 0, fmt.Errorf("datagen value payload: %w", err)
		}
	}
	if f.Task == nil || f.Seq == nil {
		return 0, 0, fmt.Errorf("datagen value %.100q lacks task or seq", b)
	}
	return *f.Task, *f.Seq, nil
}
