package transforms

import (
	"errors"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// InsertField$Key and InsertField$Value: Connect's InsertField, which adds
// the record's topic, partition, offset (sink records only), timestamp or
// a static string as fields of a struct or map.
var _ = addKeyValue("InsertField", func(p part) connectors.Transform { return &insertField{part: p} })

const (
	insertTopicField     = "topic.field"
	insertPartitionField = "partition.field"
	insertOffsetField    = "offset.field"
	insertTimestampField = "timestamp.field"
	insertStaticField    = "static.field"
	insertStaticValue    = "static.value"

	insertOptionalityDoc = "Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep it optional (the default)."
	insertPurpose        = "field insertion"
)

var (
	optionalInt32Schema     = &connectors.Schema{Type: connectors.Int32, Optional: true}
	timestampSchema         = &connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical, Version: 1}
	optionalTimestampSchema = &connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical, Version: 1, Optional: true}
)

func insertFieldConfig() *connectors.ConfigDef {
	str := func(name, doc string) connectors.ConfigKey {
		return connectors.ConfigKey{Name: name, Type: connectors.TypeString, Importance: connectors.Medium, Doc: doc}
	}
	return connectors.NewConfigDef().
		Define(str(insertTopicField, "Field name for Kafka topic. "+insertOptionalityDoc)).
		Define(str(insertPartitionField, "Field name for Kafka partition. "+insertOptionalityDoc)).
		Define(str(insertOffsetField, "Field name for Kafka offset - only applicable to sink connectors.<br/>"+insertOptionalityDoc)).
		Define(str(insertTimestampField, "Field name for record timestamp. "+insertOptionalityDoc)).
		Define(str(insertStaticField, "Field name for static data field. "+insertOptionalityDoc)).
		Define(str(insertStaticValue, "Static field value, if field name configured.")).
		Define(replaceNullKey())
}

// insertionSpec is a field to insert: its name and whether its schema is
// optional (a trailing "?" or nothing) or required (a trailing "!").
type insertionSpec struct {
	name     string
	optional bool
}

// parseInsertionSpec is InsertionSpec.parse; nil when the key is not set.
func parseInsertionSpec(props map[string]string, key string) *insertionSpec {
	v, ok := configString(props, key)
	if !ok {
		return nil
	}
	if n, found := strings.CutSuffix(v, "?"); found {
		return &insertionSpec{name: n, optional: true}
	}
	if n, found := strings.CutSuffix(v, "!"); found {
		return &insertionSpec{name: n, optional: false}
	}
	return &insertionSpec{name: v, optional: true}
}

func (s *insertionSpec) schema(optional, required *connectors.Schema) *connectors.Schema {
	if s.optional {
		return optional
	}
	return required
}

type insertField struct {
	part
	topic, partition, offset, timestamp, static *insertionSpec
	// staticValue is boxed once, at Configure: boxing the string per
	// record would allocate.
	staticValue            any
	replaceNullWithDefault bool
	cache                  schemaCache
}

func (t *insertField) Config() *connectors.ConfigDef { return insertFieldConfig() }

func (t *insertField) Configure(props map[string]string) error {
	t.topic = parseInsertionSpec(props, insertTopicField)
	t.partition = parseInsertionSpec(props, insertPartitionField)
	t.offset = parseInsertionSpec(props, insertOffsetField)
	t.timestamp = parseInsertionSpec(props, insertTimestampField)
	t.static = parseInsertionSpec(props, insertStaticField)
	static, hasStatic := configString(props, insertStaticValue)
	t.staticValue = static
	t.replaceNullWithDefault = configBool(props, "replace.null.with.default", true)
	if t.topic == nil && t.partition == nil && t.offset == nil && t.timestamp == nil && t.static == nil {
		return errors.New("No field insertion configured")
	}
	if t.static != nil && !hasStatic {
		return keyError(insertStaticValue, "null", "No value specified for static field: "+insertionSpecString(t.static))
	}
	return nil
}

// insertionSpecString is what Java prints for an InsertionSpec (its
// default Object.toString, which names no field): the message names the
// spec's field instead.
func insertionSpecString(s *insertionSpec) string { return s.name }

func (t *insertField) Apply(r *connectors.Record) (*connectors.Record, error) {
	switch {
	case t.value(r) == nil:
		return r, nil
	case t.schema(r) == nil:
		return t.applySchemaless(r)
	default:
		return t.applyWithSchema(r)
	}
}

func (t *insertField) applySchemaless(r *connectors.Record) (*connectors.Record, error) {
	m, err := requireMap(t.value(r), insertPurpose)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(m)+5)
	for k, v := range m {
		out[k] = v
	}
	if t.topic != nil {
		out[t.topic.name] = r.Topic
	}
	if t.partition != nil && r.KafkaPartition != nil {
		out[t.partition.name] = *r.KafkaPartition
	}
	if t.offset != nil {
		if err := requireSinkRecord(r, insertPurpose); err != nil {
			return nil, err
		}
		out[t.offset.name] = *r.SinkOffset
	}
	if t.timestamp != nil && !r.Timestamp.IsZero() {
		// Without a schema Connect inserts the timestamp as a Long.
		out[t.timestamp.name] = r.Timestamp.UnixMilli()
	}
	if t.static != nil {
		out[t.static.name] = t.staticValue
	}
	return t.with(r, nil, out), nil
}

func (t *insertField) applyWithSchema(r *connectors.Record) (*connectors.Record, error) {
	v, err := requireStruct(t.value(r), insertPurpose)
	if err != nil {
		return nil, err
	}
	schema := t.cache.get(v.Schema)
	if schema == nil {
		if schema, err = t.updatedSchema(v.Schema); err != nil {
			return nil, err
		}
		t.cache.put(v.Schema, schema)
	}
	out := connectors.NewStruct(schema)
	for i := range v.Schema.Fields {
		if err := copyField(out, i, v, i, t.replaceNullWithDefault); err != nil {
			return nil, err
		}
	}
	put := func(name string, x any) error {
		i, _ := schema.Field(name)
		return putField(out, i, x)
	}
	if t.topic != nil {
		if err := put(t.topic.name, r.Topic); err != nil {
			return nil, err
		}
	}
	if t.partition != nil && r.KafkaPartition != nil {
		if err := put(t.partition.name, *r.KafkaPartition); err != nil {
			return nil, err
		}
	}
	if t.offset != nil {
		if err := requireSinkRecord(r, insertPurpose); err != nil {
			return nil, err
		}
		if err := put(t.offset.name, *r.SinkOffset); err != nil {
			return nil, err
		}
	}
	if t.timestamp != nil && !r.Timestamp.IsZero() {
		if err := put(t.timestamp.name, time.UnixMilli(r.Timestamp.UnixMilli()).UTC()); err != nil {
			return nil, err
		}
	}
	if t.static != nil {
		if err := put(t.static.name, t.staticValue); err != nil {
			return nil, err
		}
	}
	return t.with(r, schema, out), nil
}

// updatedSchema is the input struct schema's basics and fields followed by
// the inserted ones; a name that is already a field fails, as in Connect.
func (t *insertField) updatedSchema(in *connectors.Schema) (*connectors.Schema, error) {
	b := newStructBuilder(in)
	for _, f := range in.Fields {
		if err := b.field(f.Name, f.Schema); err != nil {
			return nil, err
		}
	}
	add := []struct {
		spec               *insertionSpec
		optional, required *connectors.Schema
	}{
		{t.topic, connectors.OptionalStringSchema, connectors.StringSchema},
		{t.partition, optionalInt32Schema, connectors.Int32Schema},
		{t.offset, connectors.OptionalInt64Schema, connectors.Int64Schema},
		{t.timestamp, optionalTimestampSchema, timestampSchema},
		{t.static, connectors.OptionalStringSchema, connectors.StringSchema},
	}
	for _, a := range add {
		if a.spec == nil {
			continue
		}
		if err := b.field(a.spec.name, a.spec.schema(a.optional, a.required)); err != nil {
			return nil, err
		}
	}
	return b.s, nil
}

func (t *insertField) Close() error { return nil }
