package transforms

import (
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// HoistField's tests: Connect's HoistFieldTest, and cases checked against
// HoistField 4.1.1.

func TestHoistField(t *testing.T) {
	magic := xfProps("field", "magic")
	hoisted := func(s *connectors.Schema) *connectors.Schema {
		return connectors.StructSchema("", xfField("magic", s))
	}
	person := connectors.StructSchema("person", xfField("name", connectors.StringSchema))
	for _, key := range []bool{true, false} {
		xfRun(t, "HoistField", []xfCase{
			{name: "schemaless", props: magic, value: int32(42), wantNoSchema: true, want: map[string]any{"magic": int32(42)}},
			{name: "schemaless null", props: magic, value: nil, wantNoSchema: true, want: map[string]any{"magic": nil}},
			{name: "with schema", props: magic, schema: connectors.Int32Schema, value: int32(42),
				wantSchema: hoisted(connectors.Int32Schema), want: xfStruct(hoisted(connectors.Int32Schema), "magic", int32(42))},
			{name: "struct", props: magic, schema: person, value: xfStruct(person, "name", "ann"),
				wantSchema: hoisted(person), want: xfStruct(hoisted(person), "magic", xfStruct(person, "name", "ann"))},
			{name: "optional null", props: magic, schema: connectors.OptionalStringSchema, value: nil,
				wantSchema: hoisted(connectors.OptionalStringSchema), want: connectors.NewStruct(hoisted(connectors.OptionalStringSchema))},
			{name: "field trimmed", props: xfProps("field", " f "), value: int32(1), want: map[string]any{"f": int32(1)}},
			{name: "required null", props: magic, schema: connectors.Int32Schema, value: nil,
				wantErr: `Invalid value: null used for required field: "magic", schema type: INT32`},
			{name: "value not of its schema", props: magic, schema: connectors.Int32Schema, value: "x",
				wantErr: `Invalid Java object for schema with type INT32: class java.lang.String for field: "magic"`},
			{name: "empty field name", props: xfProps("field", ""), schema: connectors.Int32Schema, value: int32(1),
				wantErr: "fieldName cannot be null."},
			{name: "empty field name schemaless", props: xfProps("field", ""), value: int32(1), want: map[string]any{"": int32(1)}},
		}, key)
	}
}

func TestHoistFieldCachesSchemas(t *testing.T) {
	x := xfNew(t, "HoistField$Value", xfProps("field", "f"))
	a, err := x.Apply(&connectors.Record{ValueSchema: connectors.Int8Schema, Value: int8(1)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := x.Apply(&connectors.Record{ValueSchema: connectors.Int8Schema, Value: int8(2)})
	if err != nil || a.ValueSchema != b.ValueSchema {
		t.Fatalf("%v: schema derived again", err)
	}
	// The map of a schemaless record is its own, for later transforms to change.
	m1, _ := x.Apply(&connectors.Record{Value: int8(1)})
	m2, _ := x.Apply(&connectors.Record{Value: int8(1)})
	m1.Value.(map[string]any)["k"] = "v"
	if len(m2.Value.(map[string]any)) != 1 {
		t.Fatal("maps shared between records")
	}
}
