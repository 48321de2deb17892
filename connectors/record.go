package connectors

import "time"

// Header is a record header as Connect data, as in Kafka Connect: a key,
// and a value with its schema (see Schema for the Go value of each type).
// The worker's header.converter turns it into the bytes stored in Kafka
// (a source's headers) or reads it from them (a sink's). With
// ByteArrayConverter a header is its bytes: schema OptionalBytesSchema,
// value []byte (nil for a null header).
type Header struct {
	Key    string
	Schema *Schema
	Value  any
}

// SourceRecord is one record a SourceTask read, with where it came from.
//
// Partition and Offset are Connect's source partition and source offset: the
// runtime stores Offset under Partition in the offsets topic once Kafka has
// acknowledged the record and every earlier record of the same Partition
// (invariant 1), and hands it back through SourceTaskContext.Offset after a
// restart. Both must be JSON-serialisable maps of strings, numbers, booleans,
// and must not be modified once Poll returned them: the runtime may keep and
// compare them until the offsets are flushed (a task may reuse one Partition
// map for all records of a partition).
//
// A source whose offset is one integer (a file position, a sequence number)
// may set OffsetKey and OffsetInt instead of Offset: the record's offset is
// then {OffsetKey: OffsetInt}, a map the runtime builds only for the offsets
// it commits, not for every record (a one-entry Go map is about 300 bytes,
// more than the rest of a small record's bookkeeping). SourceOffset returns
// the offset whichever way it was given.
type SourceRecord struct {
	Partition map[string]any
	Offset    map[string]any
	// OffsetKey and OffsetInt are used when Offset is nil and OffsetKey is
	// not empty.
	OffsetKey string
	OffsetInt int64

	Topic string
	// KafkaPartition pins the record to a partition; nil lets the producer
	// choose by key.
	KafkaPartition *int32

	KeySchema   *Schema
	Key         any
	ValueSchema *Schema
	Value       any
	Headers     []Header
	// Timestamp is the record's time; the zero value means "now".
	Timestamp time.Time
}

// SourceOffset returns the record's source offset: Offset, or the map
// {OffsetKey: OffsetInt} (a new one each call) when Offset is nil and
// OffsetKey set; nil when the record has neither.
func (r *SourceRecord) SourceOffset() map[string]any {
	if r.Offset == nil && r.OffsetKey != "" {
		return map[string]any{r.OffsetKey: r.OffsetInt}
	}
	return r.Offset
}

// HasOffset says whether the record carries a source offset, in either form.
func (r *SourceRecord) HasOffset() bool { return r.Offset != nil || r.OffsetKey != "" }

// SinkRecord is one record consumed from Kafka, converted for a SinkTask.
type SinkRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time

	KeySchema   *Schema
	Key         any
	ValueSchema *Schema
	Value       any
	Headers     []Header
}

// TopicPartition returns where the record was read from.
func (r *SinkRecord) TopicPartition() TopicPartition {
	return TopicPartition{Topic: r.Topic, Partition: r.Partition}
}
