package connconfig

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// Tolerance is a value of errors.tolerance: ToleranceNone or ToleranceAll.
type Tolerance string

// Runtime is what the actor runtime reads of a connector config, parsed once
// with the definitions of ConfigDef, so that the runtime and validation can
// never read a key differently. Keys a type does not have keep their zero
// value (a source has no Topics, a sink no TopicCreation).
type Runtime struct {
	Type connectors.Type

	// TasksMax is tasks.max, at least 1.
	TasksMax int
	// KeyConverter and ValueConverter are the converter classes as the
	// connector config names them; "" means the worker's. The converters
	// themselves are built by converters.Resolve, which also needs their
	// prefixed settings.
	KeyConverter, ValueConverter string

	// Tolerance is errors.tolerance.
	Tolerance Tolerance
	// RetryTimeout is errors.retry.timeout: how long a per-record stage
	// that fails with a retriable error is retried. 0 retries not at all;
	// a negative value (Connect's -1) retries forever.
	RetryTimeout time.Duration
	// RetryDelayMax is errors.retry.delay.max.ms, the longest wait between
	// two attempts.
	RetryDelayMax time.Duration
	// LogErrors and LogMessages are errors.log.enable and
	// errors.log.include.messages.
	LogErrors, LogMessages bool

	// Topics and TopicsRegex are a sink's topics and topics.regex; exactly
	// one is set.
	Topics      []string
	TopicsRegex string
	// DLQ is a sink's dead letter queue.
	DLQ DLQ

	// TopicCreation is how a source creates the topics it writes to.
	TopicCreation TopicCreation
	// Overrides are the connector's client overrides (producer.override.*
	// and the others), for the clients a connector of its type has.
	Overrides Overrides
	// ExactlyOnce is how a source's tasks deliver: in transactions when
	// the worker's exactly.once.source.support is enabled.
	ExactlyOnce ExactlyOnce
	// OffsetsTopic is a source's offsets.storage.topic: its own offsets
	// topic; "" for the worker's.
	OffsetsTopic string
}

// DLQ is the errors.deadletterqueue.* keys of a sink.
type DLQ struct {
	// Topic is errors.deadletterqueue.topic.name; "" means no dead letter
	// queue.
	Topic string
	// ReplicationFactor is errors.deadletterqueue.topic.replication.factor.
	// Unset, it is -1 (the broker's default), not Connect's 3, so that a dead
	// letter queue also works on a one-broker cluster.
	ReplicationFactor int16
	// ContextHeaders is errors.deadletterqueue.context.headers.enable.
	ContextHeaders bool
}

// TolerateAll reports whether errors.tolerance is all: a bad record is
// skipped instead of failing the task.
func (r Runtime) TolerateAll() bool { return r.Tolerance == ToleranceAll }

// RetriesForever reports whether errors.retry.timeout is -1.
func (r Runtime) RetriesForever() bool { return r.RetryTimeout < 0 }

// runtimeKeys are the keys ParseRuntime reads. Keys the runtime does not
// read (name, exactly.once.support, ...) are validation's business alone: a
// task does not fail over a key it ignores.
var runtimeKeys = []string{
	TasksMax, KeyConverter, ValueConverter,
	ErrorsRetryTimeout, ErrorsRetryDelayMaxMs, ErrorsTolerance, ErrorsLogEnable, ErrorsLogIncludeMessages,
	Topics, TopicsRegex, DLQTopicName, DLQTopicReplicationFactor, DLQContextHeadersEnable,
	TransactionBoundary, TransactionBoundaryIntervalMs, OffsetsStorageTopic,
}

// runtimeDef is ConfigDef(t) cut down to runtimeKeys.
func runtimeDef(t connectors.Type) *connectors.ConfigDef {
	all := ConfigDef(t)
	d := connectors.NewConfigDef()
	for _, name := range runtimeKeys {
		if k, ok := all.Key(name); ok {
			d.Define(k)
		}
	}
	return d
}

// ParseRuntime parses the runtime keys of config, a connector config of type
// t, with ConfigDef's types, defaults and validators, for sinks the topics
// rules of Validate, and for both the client overrides and topic creation
// keys as the worker w allows them. The error, a *connectors.ConfigError,
// names every bad key. The control plane refuses such configs before they
// are stored; a worker meets one only in a config written behind its back,
// or validated by a worker with another policy (Connect checks overrides
// against the running worker's policy too, when it makes the clients).
func ParseRuntime(w Worker, t connectors.Type, config map[string]string) (Runtime, error) {
	ce := &connectors.ConfigError{}
	c, err := runtimeDef(t).Parse(config)
	if err != nil && !errors.As(err, &ce) {
		return Runtime{}, err
	}
	overrides := parseOverrides(w, t, config, ce)
	topicCreation := parseTopicCreation(w, t, config, ce)
	if t == connectors.Sink {
		topics := &connectors.ConfigError{}
		validateSinkTopics(config, topics)
		for k, msgs := range topics.Errors {
			for _, m := range msgs {
				// A bad topics.regex is reported by both, in the same words.
				if !slices.Contains(ce.Errors[k], m) {
					ce.Add(k, m)
				}
			}
		}
	}
	if err := ce.Err(); err != nil {
		return Runtime{}, err
	}
	r := Runtime{
		Type:           t,
		TasksMax:       c.Int(TasksMax),
		KeyConverter:   strings.TrimSpace(c.String(KeyConverter)),
		ValueConverter: strings.TrimSpace(c.String(ValueConverter)),
		Tolerance:      Tolerance(strings.TrimSpace(c.String(ErrorsTolerance))),
		RetryTimeout:   c.Millis(ErrorsRetryTimeout),
		RetryDelayMax:  c.Millis(ErrorsRetryDelayMaxMs),
		LogErrors:      c.Bool(ErrorsLogEnable),
		LogMessages:    c.Bool(ErrorsLogIncludeMessages),
		Overrides:      overrides,
		TopicCreation:  topicCreation,
	}
	if t == connectors.Source {
		r.ExactlyOnce = ExactlyOnce{
			Enabled:  w.ExactlyOnceEnabled(),
			Boundary: strings.ToLower(strings.TrimSpace(c.String(TransactionBoundary))),
		}
		if c.IsSet(TransactionBoundaryIntervalMs) {
			r.ExactlyOnce.Interval = c.Millis(TransactionBoundaryIntervalMs)
		}
		r.OffsetsTopic = strings.TrimSpace(c.String(OffsetsStorageTopic))
	}
	if t == connectors.Sink {
		r.Topics = c.List(Topics)
		r.TopicsRegex = strings.TrimSpace(c.String(TopicsRegex))
		r.DLQ = DLQ{
			Topic:             strings.TrimSpace(c.String(DLQTopicName)),
			ReplicationFactor: -1,
			ContextHeaders:    c.Bool(DLQContextHeadersEnable),
		}
		if c.IsSet(DLQTopicReplicationFactor) {
			r.DLQ.ReplicationFactor = int16(c.Int(DLQTopicReplicationFactor))
		}
	}
	return r, nil
}
