package actors

import (
	"fmt"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/transform"
)

// The stages of a record's way through a task, as Kafka Connect's error
// reporting names them (the __connect.errors.stage header of a dead letter
// queue record).
const (
	stageKeyConverter    = "KEY_CONVERTER"
	stageValueConverter  = "VALUE_CONVERTER"
	stageHeaderConverter = "HEADER_CONVERTER"
	stageTransformation  = "TRANSFORMATION"
	stageKafkaProduce    = "KAFKA_PRODUCE"
)

// stageError is a record's failure in one stage, with the class that
// failed (a converter's or a transform's).
type stageError struct {
	stage string
	class string
	err   error
}

func (e *stageError) Error() string { return e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

// stageOf is where err happened: its stage and class, or the value
// converter's when it does not say.
func stageOf(err error, valueClass string) (stage, class string) {
	if se, ok := err.(*stageError); ok {
		return se.stage, se.class
	}
	return stageValueConverter, valueClass
}

// transformSource runs a source record through the chain, in scratch (a
// Record the pipeline reuses: the chain keeps none), and returns the
// transformed record, written into out (also reused: the pipeline is done
// with it once the record is converted), nil when a transform dropped it. The source
// partition and offset stay the polled record's: they say what the task
// has read, whatever became of it. rec itself is left as polled, so that
// a retry starts from it again.
func transformSource(chain *transform.Chain, scratch *connectors.Record, out *connectors.SourceRecord, rec *connectors.SourceRecord) (*connectors.SourceRecord, error) {
	*scratch = connectors.Record{
		Topic: rec.Topic, KafkaPartition: rec.KafkaPartition,
		KeySchema: rec.KeySchema, Key: rec.Key, ValueSchema: rec.ValueSchema, Value: rec.Value,
		Timestamp: rec.Timestamp, Headers: rec.Headers,
	}
	r, err := chain.Apply(scratch)
	if err != nil {
		return nil, transformErr(err)
	}
	if r == nil {
		return nil, nil
	}
	*out = connectors.SourceRecord{
		Partition: rec.Partition, Offset: rec.Offset, OffsetKey: rec.OffsetKey, OffsetInt: rec.OffsetInt,
		Topic: r.Topic, KafkaPartition: r.KafkaPartition,
		KeySchema: r.KeySchema, Key: r.Key, ValueSchema: r.ValueSchema, Value: r.Value,
		Headers: r.Headers, Timestamp: r.Timestamp,
	}
	return out, nil
}

// transformSink runs a consumed record through the chain; nil when a
// transform dropped it. Partition and offset stay the consumed record's:
// they are what the sink commits.
func transformSink(chain *transform.Chain, sr *connectors.SinkRecord) (*connectors.SinkRecord, error) {
	offset := sr.Offset
	partition := sr.Partition
	out, err := chain.Apply(&connectors.Record{
		Topic: sr.Topic, KafkaPartition: &partition,
		KeySchema: sr.KeySchema, Key: sr.Key, ValueSchema: sr.ValueSchema, Value: sr.Value,
		Timestamp: sr.Timestamp, Headers: sr.Headers, SinkOffset: &offset,
	})
	if err != nil {
		return nil, transformErr(err)
	}
	if out == nil {
		return nil, nil
	}
	res := &connectors.SinkRecord{
		Topic: out.Topic, Partition: sr.Partition, Offset: sr.Offset, Timestamp: out.Timestamp,
		KeySchema: out.KeySchema, Key: out.Key, ValueSchema: out.ValueSchema, Value: out.Value,
		Headers: out.Headers,
	}
	if out.KafkaPartition != nil {
		res.Partition = *out.KafkaPartition
	}
	return res, nil
}

func transformErr(err error) error {
	class := ""
	if te, ok := err.(*transform.Error); ok {
		class = te.Class
	}
	return &stageError{stage: stageTransformation, class: class, err: fmt.Errorf("transformation: %w", err)}
}
