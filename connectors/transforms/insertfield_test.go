package transforms

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// allInsertions is the config of Connect's InsertFieldTest.
func allInsertions() map[string]string {
	return map[string]string{
		"topic.field":     "topic_field!",
		"partition.field": "partition_field",
		"timestamp.field": "timestamp_field?",
		"static.field":    "instance_id",
		"static.value":    "my-instance-id",
	}
}

func TestInsertFieldConfig(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"nothing to insert", map[string]string{}, "No field insertion configured"},
		{"only static value", map[string]string{"static.value": "v"}, "No field insertion configured"},
		{"static field without value", map[string]string{"static.field": "s"},
			"transforms.x.static.value: Invalid value null for configuration static.value: No value specified for static field: s"},
		{"bad boolean", map[string]string{"topic.field": "t", "replace.null.with.default": ""}, "replace.null.with.default"},
		{"ok", map[string]string{"offset.field": "o"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := chainOf("InsertField$Value", c.props)
			wantErr(t, err, c.want)
		})
	}
}

func TestInsertFieldWithSchema(t *testing.T) {
	c := configured(t, "InsertField$Value", allInsertions())
	simple := &connectors.Schema{Type: connectors.Struct, Name: "name", Version: 1, Doc: "doc",
		Fields: []connectors.Field{{Name: "magic", Schema: connectors.OptionalInt64Schema}}}
	in := connectors.NewStruct(simple).MustSet("magic", int64(42))
	r := sourceRecord(simple, in)
	r.Timestamp = time.UnixMilli(789)
	out, err := applyOne(c, r)
	wantErr(t, err, "")
	s := out.ValueSchema
	if s.Name != "name" || s.Version != 1 || s.Doc != "doc" || s.Optional {
		t.Fatalf("schema basics not copied: %+v", s)
	}
	wantFields := []connectors.Field{
		{Name: "magic", Schema: connectors.OptionalInt64Schema},
		{Name: "topic_field", Schema: connectors.StringSchema},
		{Name: "partition_field", Schema: optionalInt32Schema},
		{Name: "timestamp_field", Schema: optionalTimestampSchema},
		{Name: "instance_id", Schema: connectors.OptionalStringSchema},
	}
	if !schemasEqual(s, &connectors.Schema{Type: connectors.Struct, Name: "name", Version: 1, Doc: "doc", Fields: wantFields}) {
		t.Fatalf("schema %+v", s.Fields)
	}
	v := out.Value.(*connectors.StructValue)
	want := []any{int64(42), "test", int32(0), time.UnixMilli(789).UTC(), "my-instance-id"}
	if !valuesEqual(v.Values, want) {
		t.Fatalf("values %v, want %v", v.Values, want)
	}
	// The record is the transform's to change; the struct it pointed to
	// is not.
	if in.Values[0] != int64(42) || len(in.Values) != 1 || in.Schema != simple {
		t.Fatal("the input struct was modified")
	}
	// The derived schema is cached: a second record of the schema (an equal
	// copy here) gets the same one.
	copySchema := *simple
	out2, err := applyOne(c, &connectors.Record{Topic: "test", KafkaPartition: i32p(1), ValueSchema: &copySchema, Value: connectors.NewStruct(&copySchema)})
	wantErr(t, err, "")
	if out2.ValueSchema != s {
		t.Fatal("the derived schema was not reused")
	}
	// No timestamp: the optional field stays null.
	if got := out2.Value.(*connectors.StructValue).Get("timestamp_field"); got != nil {
		t.Fatalf("timestamp_field = %v, want null", got)
	}
}

func TestInsertFieldSchemaless(t *testing.T) {
	c := configured(t, "InsertField$Value", allInsertions())
	in := map[string]any{"magic": int64(42)}
	r := sourceRecord(nil, in)
	r.Timestamp = time.UnixMilli(123)
	out, err := applyOne(c, r)
	wantErr(t, err, "")
	want := map[string]any{"magic": int64(42), "topic_field": "test", "partition_field": int32(0),
		"timestamp_field": int64(123), "instance_id": "my-instance-id"}
	if !reflect.DeepEqual(out.Value, want) {
		t.Fatalf("value %v, want %v", out.Value, want)
	}
	if len(in) != 1 {
		t.Fatal("the input map was modified")
	}
	// Without a partition or timestamp those fields are not inserted.
	out, err = applyOne(c, &connectors.Record{Topic: "t", Value: map[string]any{}})
	wantErr(t, err, "")
	if m := out.Value.(map[string]any); len(m) != 2 || m["topic_field"] != "t" {
		t.Fatalf("value %v", m)
	}
}

func TestInsertFieldTombstonesAndNullKeys(t *testing.T) {
	c := configured(t, "InsertField$Value", allInsertions())
	simple := connectors.StructSchema("name", connectors.Field{Name: "magic", Schema: connectors.OptionalInt64Schema})
	for _, r := range []*connectors.Record{sourceRecord(nil, nil), sourceRecord(simple, nil)} {
		out, err := applyOne(c, r)
		wantErr(t, err, "")
		if out.Value != nil || out.ValueSchema != r.ValueSchema {
			t.Fatalf("tombstone changed: %+v", out)
		}
	}
	k := configured(t, "InsertField$Key", allInsertions())
	r := &connectors.Record{Topic: "test", KafkaPartition: i32p(0), Key: map[string]any{"magic": int64(42)}}
	out, err := applyOne(k, r)
	wantErr(t, err, "")
	want := map[string]any{"magic": int64(42), "topic_field": "test", "partition_field": int32(0), "instance_id": "my-instance-id"}
	if !reflect.DeepEqual(out.Key, want) || out.Value != nil {
		t.Fatalf("key %v value %v", out.Key, out.Value)
	}
	r = &connectors.Record{Topic: "test", Value: map[string]any{"magic": int64(42)}}
	if out, _ := applyOne(k, r); out != r {
		t.Fatal("a null key must leave the record as it is")
	}
}

func TestInsertFieldErrors(t *testing.T) {
	simple := connectors.StructSchema("s", connectors.Field{Name: "topic", Schema: connectors.StringSchema})
	withDefault := connectors.StructSchema("s", connectors.Field{Name: "a", Schema: &connectors.Schema{Type: connectors.Int32, Default: int32(7)}})
	cases := []struct {
		name  string
		props map[string]string
		r     *connectors.Record
		want  string
	}{
		{"not a struct", map[string]string{"topic.field": "t"}, sourceRecord(connectors.Int32Schema, int32(42)),
			"Only Struct objects supported for [field insertion], found: java.lang.Integer"},
		{"not a map", map[string]string{"topic.field": "t"}, sourceRecord(nil, "x"),
			"Only Map objects supported in absence of schema for [field insertion], found: java.lang.String"},
		{"offset of a source record", map[string]string{"offset.field": "o"}, sourceRecord(nil, map[string]any{}),
			"Only SinkRecord supported for [field insertion], found: org.apache.kafka.connect.source.SourceRecord"},
		{"field exists", map[string]string{"topic.field": "topic"}, sourceRecord(simple, connectors.NewStruct(simple).MustSet("topic", "x")),
			"Cannot create field because of field name duplication topic"},
		{"empty field name", map[string]string{"topic.field": " "}, sourceRecord(simple, connectors.NewStruct(simple).MustSet("topic", "x")),
			"fieldName cannot be null."},
		{"null in a required field", map[string]string{"topic.field": "t"}, sourceRecord(simple, connectors.NewStruct(simple)),
			`Invalid value: null used for required field: "topic", schema type: STRING`},
		{"null with default, replacing", map[string]string{"topic.field": "t"}, sourceRecord(withDefault, connectors.NewStruct(withDefault)), ""},
		{"null with default, not replacing", map[string]string{"topic.field": "t", "replace.null.with.default": "false"},
			sourceRecord(withDefault, connectors.NewStruct(withDefault)), `null used for required field: "a"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := applyOne(configured(t, "InsertField$Value", c.props), c.r)
			wantErr(t, err, c.want)
		})
	}
}

func TestInsertFieldOffsetAndTrimming(t *testing.T) {
	c := configured(t, "InsertField$Value", map[string]string{"offset.field": "  off! ", "static.field": "s", "static.value": "  v  "})
	s := connectors.StructSchema("s")
	r := &connectors.Record{Topic: "t", ValueSchema: s, Value: connectors.NewStruct(s), SinkOffset: i64p(99)}
	out, err := applyOne(c, r)
	wantErr(t, err, "")
	f := out.ValueSchema.Fields
	if len(f) != 2 || f[0].Name != "off" || f[0].Schema.Optional || f[0].Schema.Type != connectors.Int64 {
		t.Fatalf("fields %+v", f)
	}
	v := out.Value.(*connectors.StructValue)
	if v.Get("off") != int64(99) || v.Get("s") != "v" {
		t.Fatalf("values %v", v.Values)
	}
}

// Connect's testUnsetOptionalField: an optional field with a default and a
// null value is copied as the default, or as null with
// replace.null.with.default=false.
func TestInsertFieldReplaceNullWithDefault(t *testing.T) {
	magic := &connectors.Schema{Type: connectors.Int64, Optional: true, Default: int64(42)}
	s := &connectors.Schema{Type: connectors.Struct, Name: "name", Version: 1, Doc: "doc", Fields: []connectors.Field{{Name: "magic_with_default", Schema: magic}}}
	for _, c := range []struct {
		replace string
		want    any
	}{{"false", nil}, {"true", int64(42)}} {
		props := allInsertions()
		props["replace.null.with.default"] = c.replace
		out, err := applyOne(configured(t, "InsertField$Value", props), sourceRecord(s, connectors.NewStruct(s)))
		wantErr(t, err, "")
		if got := out.Value.(*connectors.StructValue).Values[0]; got != c.want {
			t.Errorf("replace=%s: %v, want %v", c.replace, got, c.want)
		}
		if out.ValueSchema.Fields[0].Schema != magic {
			t.Error("the field's schema must be kept")
		}
	}
}
