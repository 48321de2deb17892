package connectors

import "time"

// Record is a record as single message transforms and predicates see it,
// for sources and sinks alike: Kafka Connect's ConnectRecord. A source's
// records become Records after Poll and before the converters; a sink's
// after the converters and before Write.
type Record struct {
	Topic string
	// KafkaPartition is the record's partition; nil when not set (a
	// source record the producer partitions).
	KafkaPartition *int32
	KeySchema      *Schema
	Key            any
	ValueSchema    *Schema
	Value          any
	// Timestamp is the record's timestamp; the zero time when it has none.
	Timestamp time.Time
	// Headers are the record's headers, in order; a key may repeat.
	Headers []Header
	// SinkOffset is a sink record's Kafka offset (Connect's
	// SinkRecord.kafkaOffset); nil for a source record. Transforms that
	// only apply to sink records (InsertField's offset.field) refuse a
	// record without it, as Connect's do.
	SinkOffset *int64
}

// Transform is a single message transform: Kafka Connect's
// Transformation. The runtime makes one per task and alias, calls
// Configure once with the transform's own keys (transforms.<alias>.<key>,
// prefix stripped, validated against Config), then Apply for every record
// the transform's predicate lets through, on one goroutine, and Close once.
//
// Apply returns the transformed record, or nil to drop it (the runtime
// still commits its offset). It may set r's fields and return r, but it
// must not modify what r's fields point to (schemas, struct values, maps,
// slices, the headers' array): those may be shared with other records and
// with the connector. An error fails the record as errors.tolerance says
// (stage TRANSFORMATION); wrap it with Retriable for a transient failure.
type Transform interface {
	Config() *ConfigDef
	Configure(config map[string]string) error
	Apply(r *Record) (*Record, error)
	Close() error
}

// Predicate decides, record by record, whether a transform applies
// (transforms.<alias>.predicate, with .negate): Kafka Connect's Predicate.
// Its life is a Transform's: Configure once, Test from one goroutine,
// Close once. Test must not modify r.
type Predicate interface {
	Config() *ConfigDef
	Configure(config map[string]string) error
	Test(r *Record) bool
	Close() error
}

// TransformPlugin describes a transform the runtime can instantiate, by
// its Kafka Connect class name (org.apache.kafka.connect.transforms.Cast$Value)
// or a further name: the simple name after the last dot (Cast$Value) is
// always one.
type TransformPlugin struct {
	Class   string
	Aliases []string
	Version string
	New     func() Transform
}

// PredicatePlugin describes a predicate, named as a TransformPlugin is.
type PredicatePlugin struct {
	Class   string
	Aliases []string
	Version string
	New     func() Predicate
}
