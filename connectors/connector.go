package connectors

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"
)

// Type says in which direction a connector moves data.
type Type string

const (
	Source Type = "source"
	Sink   Type = "sink"
)

// Connector splits a job into task configurations. The runtime calls Start once
// per incarnation, TaskConfigs whenever it needs the current split (after Start,
// and after the connector asked for a reconfiguration), and Stop before it
// discards the instance. A Connector never moves data itself.
type Connector interface {
	// Config describes every key the connector accepts. It drives validation
	// (before anything is written) and the validate endpoint. It must not
	// depend on Start having been called.
	Config() *ConfigDef
	// Start receives the connector's whole config, already validated against
	// Config. It should return promptly; ctx carries a deadline.
	Start(ctx context.Context, cc ConnectorContext, config map[string]string) error
	// TaskConfigs returns at most maxTasks task configurations.
	TaskConfigs(ctx context.Context, maxTasks int) ([]map[string]string, error)
	// Stop releases what Start acquired.
	Stop() error
}

// SourceConnector is a Connector whose tasks read from an external system.
type SourceConnector interface {
	Connector
	NewTask() SourceTask
}

// SinkConnector is a Connector whose tasks write to an external system.
type SinkConnector interface {
	Connector
	NewTask() SinkTask
}

// ConfigValidator is implemented by connectors that check relations between
// keys that ConfigDef alone cannot express (for example "query and
// table.whitelist are exclusive"). It returns the errors per key name.
type ConfigValidator interface {
	ValidateConfig(config map[string]string) map[string][]string
}

// OffsetChange is one partition's offset an operator sets through the
// offsets API (PATCH or DELETE /connectors/{c}/offsets). A source
// connector's partition and offset are its own maps; a sink connector's are
// {"kafka_topic","kafka_partition"} and {"kafka_offset"}. A nil Offset
// removes the partition's offset. Numbers may arrive as json.Number.
type OffsetChange struct {
	Partition map[string]any
	Offset    map[string]any
}

// OffsetsAlterer is implemented by connectors that check the offsets an
// operator sets, or keep offsets outside Kafka too (Connect's
// alterOffsets). The runtime calls AlterOffsets before it writes anything;
// an error refuses the request with the error's message. It returns true
// when the connector has taken care of everything it keeps itself, so the
// runtime need not warn that external offsets may need altering by hand.
// A reset passes every current partition with a nil Offset.
type OffsetsAlterer interface {
	AlterOffsets(config map[string]string, changes []OffsetChange) (bool, error)
}

// ConnectorContext is the runtime as a Connector sees it.
type ConnectorContext interface {
	// Name is the connector's name.
	Name() string
	// RequestTaskReconfiguration asks the runtime to call TaskConfigs again,
	// for example because the set of tables to copy changed.
	RequestTaskReconfiguration()
	// RaiseError fails the connector; its supervisor restarts it.
	RaiseError(err error)
	// Logger is where the connector logs: its lines carry the worker and
	// connector fields, as Connect's connector.context prefixes them.
	Logger() *zerolog.Logger
}

// SourceTask copies data from an external system into Kafka.
//
// The runtime calls Open once, then Poll in a loop on a goroutine of its own,
// then Close. Poll and Commit are never called concurrently with each other.
type SourceTask interface {
	// Open starts the task with its task config. tc.Offset returns the last
	// committed offset of a source partition, so a restarted or moved task
	// resumes where its predecessor stopped.
	Open(ctx context.Context, tc SourceTaskContext, config map[string]string) error
	// Poll returns the next batch of records, or none when nothing is ready.
	// It must return by ctx's deadline; waiting for data is its job, but
	// never past the deadline. The records are the runtime's from then on,
	// unless the task lends them (RecordLender).
	Poll(ctx context.Context) ([]*SourceRecord, error)
	// Commit is called after the offsets of every record acknowledged by
	// Kafka so far have been durably stored. Sources that must delete or
	// acknowledge data upstream do it here. Most sources do nothing.
	Commit(ctx context.Context) error
	// Close releases the task's resources. It is called once, also after
	// Open or Poll failed.
	Close() error
}

// TaskID names one task of a connector: the unit of work the runtime
// assigns to a worker, reports status for and restarts. Its JSON is Kafka
// Connect's ({"connector": "...", "task": 0}).
type TaskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

// SourceTaskContext is the runtime as a SourceTask sees it.
type SourceTaskContext interface {
	ConnectorName() string
	TaskID() int
	// Offset returns the committed offset of a source partition, or nil when
	// none was committed.
	Offset(partition map[string]any) (map[string]any, error)
	// Logger is where the task logs: its lines carry the worker,
	// connector and task fields, as Connect's connector.context prefixes
	// them.
	Logger() *zerolog.Logger
	// TransactionContext is how the task defines its transactions; nil
	// unless the worker runs it exactly once with
	// transaction.boundary=connector, as in Connect.
	TransactionContext() TransactionContext
}

// SinkTask copies data from Kafka into an external system.
type SinkTask interface {
	// Open starts the task with its task config.
	Open(ctx context.Context, tc SinkTaskContext, config map[string]string) error
	// Write delivers a batch. When it returns nil, the records are durably
	// written and their offsets may be committed (invariant 1), unless the
	// task implements PreCommitter.
	Write(ctx context.Context, records []*SinkRecord) error
	// Close releases the task's resources.
	Close() error
}

// TopicPartition names one partition of a Kafka topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// PartitionAware is implemented by sink tasks that keep per-partition state.
// The runtime calls Assigned before the first Write of a partition's records
// and Revoked after the last, once its offsets are committed.
type PartitionAware interface {
	Assigned(ctx context.Context, partitions []TopicPartition) error
	Revoked(ctx context.Context, partitions []TopicPartition) error
}

// PreCommitter is implemented by sink tasks that buffer: Write may return
// before data is durable. Before committing consumer offsets the runtime calls
// PreCommit with the next offset to consume per partition for everything
// written so far; the task flushes what it must and returns the offsets that
// are now safe to commit (a subset, or lower values). Only those are committed.
type PreCommitter interface {
	PreCommit(ctx context.Context, offsets map[TopicPartition]int64) (map[TopicPartition]int64, error)
}

// RecordBorrower is implemented by sink tasks that only borrow a batch:
// once Write returns, the task holds no reference to any of its records or
// to anything in them (keys, values, their strings, byte slices, structs,
// maps and lists, headers), having copied what it keeps. When
// BorrowsRecords reports true (the runtime asks once, after Open), the
// runtime fills the next batch's records in place of this one's, and the
// strings of a record's key and value may share the bytes fetched from
// Kafka instead of being copies: both save work per record, and a task
// that kept a reference would see it change or pin a whole fetch in
// memory. Connect's API has no such promise: a task that buffers records
// until PreCommit (an object-store or JDBC-style sink) must not implement
// it, or must report false.
type RecordBorrower interface {
	BorrowsRecords() bool
}

// DeadlineKeeper is implemented by source tasks whose Poll returns by its
// context's deadline on its own: a timer of the task's, not the context's
// expiry, ends a wait that finds nothing. When KeepsPollDeadline reports true
// (the runtime asks once, after Open), the runtime gives Poll a context that
// carries the deadline but is not cancelled at it, only when the task stops.
// Such a Poll costs no timer of the runtime's and, when it waits out its whole
// time, no goroutine that Go starts to cancel an expired context: 500 idle
// tasks made 500 such goroutines a second, and the dead goroutines' stacks were
// a third of an idle worker's stack memory (ADR 0017). Contexts derived from
// Poll's do not expire at its deadline either, so a task that implements this
// must not rely on them to end its wait.
type DeadlineKeeper interface {
	KeepsPollDeadline() bool
}

// KeptDeadline is the context the runtime gives a DeadlineKeeper's Poll:
// ctx, which ends only when the task stops, with deadline as its Deadline
// and no timer behind it. A test that polls a task as the runtime does
// uses it too (connectors/conformance does).
func KeptDeadline(ctx context.Context, deadline time.Time) context.Context {
	return &keptDeadline{Context: ctx, at: deadline}
}

// IdleReturner is implemented by source tasks whose Poll returns no records at
// once, rather than waiting, when it expects none before its context's
// deadline (a task may still wait for something due sooner). When
// ReturnsWhenIdle reports true (the runtime asks once, after Open), a Poll
// that returns no records is followed by a nap until that Poll's deadline, as
// if the task had waited it out, and the runtime holds no goroutine for the
// task meanwhile: an idle task costs no stack (ADR 0027). Records that become
// available during the nap are polled at its end, at most a poll timeout
// (1 s) later, as Connect's FileStreamSource waits a second when it finds
// nothing. A stop ends the nap at once.
type IdleReturner interface {
	ReturnsWhenIdle() bool
}

// RecordLender is implemented by source tasks that lend the records a Poll
// returns rather than hand them over for good: when LendsRecords reports
// true (the runtime asks once, after Open), the runtime is done with a
// Poll's records before it calls Poll again (or Close), and the task may
// then write over them, so that it makes its records once and not at every
// Poll (ADR 0030). What the task may write over: the slice Poll returned,
// the SourceRecord structs, their []Header slices, and the StructValues and
// []any slices it made for their keys, values and headers (strings boxed
// in place there included). What it must leave as it handed it over, as
// any task must: the bytes of a []byte key, value or header (a converter
// may give them to the producer as they are, in flight until Kafka
// acknowledges them), maps (the runtime keeps a record's source partition
// and offset maps until the offset is committed), and schemas. A lending
// task that asks for a transaction boundary (TransactionContext) asks it on
// a record of the batch it is about to return: a request on any other
// record is forgotten when the batch has been sent, since that record may
// be written over. Connect's API has no such promise: its tasks hand their
// records over, and Connect gives them back to commitRecord after Kafka's
// acknowledgement.
type RecordLender interface {
	LendsRecords() bool
}

type keptDeadline struct {
	context.Context
	at time.Time
}

func (c *keptDeadline) Deadline() (time.Time, bool) { return c.at, true }

// SinkTaskContext is the runtime as a SinkTask sees it.
type SinkTaskContext interface {
	ConnectorName() string
	TaskID() int
	// Logger is where the task logs: its lines carry the worker,
	// connector and task fields, as Connect's connector.context prefixes
	// them.
	Logger() *zerolog.Logger
}

// retriableError marks an error as transient. As in Kafka Connect, a failed
// Poll or Write is retried with backoff until it succeeds or the task stops,
// whatever the errors.* keys say; a failed conversion is retried until
// errors.retry.timeout (default 0: no retry) has passed, and then
// errors.tolerance decides whether the task fails or skips the record.
type retriableError struct{ err error }

func (e retriableError) Error() string { return e.err.Error() }
func (e retriableError) Unwrap() error { return e.err }

// Retriable wraps err so that the runtime retries the call that failed with
// it (see retriableError for how long).
func Retriable(err error) error {
	if err == nil {
		return nil
	}
	return retriableError{err}
}

// IsRetriable reports whether err, or an error it wraps, was marked Retriable.
func IsRetriable(err error) bool {
	var r retriableError
	return errors.As(err, &r)
}
