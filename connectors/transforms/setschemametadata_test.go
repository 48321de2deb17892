package transforms

import (
	"errors"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// SetSchemaMetadata's tests: Connect's SetSchemaMetadataTest, and cases
// checked against SetSchemaMetadata 4.1.1.

func TestSetSchemaMetadata(t *testing.T) {
	empty := connectors.StructSchema("")
	s := connectors.StructSchema("my.orig.SchemaDefn", xfField("f1", connectors.StringSchema), xfField("f2", connectors.Int32Schema))
	s.Doc, s.Version = "doc", 3
	nullable := connectors.StructSchema("my.orig.SchemaDefn",
		xfField("f1", &connectors.Schema{Type: connectors.String, Optional: true, Default: "default"}), xfField("f2", connectors.Int32Schema))
	named := func(s *connectors.Schema, name string, version int) *connectors.Schema {
		c := *s
		c.Name, c.Version = name, version
		return &c
	}
	// matching checks that the struct is on the record's schema, whose
	// fields are the old schema's.
	matching := func(old *connectors.Schema, f1 any) func(*testing.T, *connectors.Schema, any) {
		return func(t *testing.T, got *connectors.Schema, v any) {
			sv := v.(*connectors.StructValue)
			if sv.Schema != got {
				t.Fatal("the struct is not on the record's schema")
			}
			for i := range old.Fields {
				if got.Fields[i].Schema != old.Fields[i].Schema {
					t.Fatalf("field %d's schema changed", i)
				}
			}
			if sv.Values[0] != f1 {
				t.Fatalf("f1 = %#v, want %#v", sv.Values[0], f1)
			}
		}
	}
	fooAnd42 := xfProps("schema.name", "foo", "schema.version", "42")
	xfRun(t, "SetSchemaMetadata", []xfCase{
		{name: "name", props: xfProps("schema.name", "foo"), schema: empty, value: nil, wantSchema: named(empty, "foo", 0), want: nil},
		{name: "version", props: xfProps("schema.version", "42"), schema: empty, value: nil, wantSchema: named(empty, "", 42), want: nil},
		{name: "name and version", props: fooAnd42, schema: empty, value: nil, wantSchema: named(empty, "foo", 42), want: nil},
		{name: "name trimmed", props: xfProps("schema.name", " foo "), schema: s, value: xfStruct(s, "f1", "v", "f2", int32(1)),
			wantSchema: named(s, "foo", 3), check: matching(s, "v")},
		{name: "struct", props: fooAnd42, schema: s, value: xfStruct(s, "f1", "value1", "f2", int32(1)),
			wantSchema: named(s, "foo", 42), check: matching(s, "value1")},
		{name: "null field, default", props: fooAnd42, schema: nullable, value: xfStruct(nullable, "f2", int32(1)),
			check: matching(nullable, "default")},
		{name: "null field, no default", props: xfProps("schema.name", "foo", "schema.version", "42", "replace.null.with.default", "false"),
			schema: nullable, value: xfStruct(nullable, "f2", int32(1)), check: matching(nullable, nil)},
		{name: "required field unset", props: fooAnd42, schema: s, value: xfStruct(s, "f1", "x"),
			wantErr: `Invalid value: null used for required field: "f2", schema type: INT32`},
		{name: "schema required", props: fooAnd42, value: int32(42), wantErr: "Schema required for [updating schema metadata]"},
		// Connect 4.1 lists the fields of every schema it renames, which
		// fails for any schema but a struct's.
		{name: "int32", props: fooAnd42, schema: connectors.Int32Schema, value: int32(5), wantErr: "Cannot list fields on non-struct type"},
		{name: "decimal", props: fooAnd42, schema: xfDecimal("2"), value: xfRat("1.25"), wantErr: "Cannot list fields on non-struct type"},
		{name: "array", props: fooAnd42, schema: &connectors.Schema{Type: connectors.Array, Items: connectors.Int32Schema}, value: []any{int32(1)},
			wantErr: "Cannot list fields on non-struct type"},
	}, false)
	xfRun(t, "SetSchemaMetadata", []xfCase{{name: "key", props: fooAnd42, schema: s, value: xfStruct(s, "f1", "k", "f2", int32(1)),
		wantSchema: named(s, "foo", 42), check: matching(s, "k")}}, true)
}

// TestSetSchemaMetadataNull: a null without a schema passes through.
func TestSetSchemaMetadataNull(t *testing.T) {
	r := &connectors.Record{}
	for _, class := range []string{"SetSchemaMetadata$Key", "SetSchemaMetadata$Value"} {
		out, err := xfNew(t, class, xfProps("schema.name", "foo")).Apply(r)
		if err != nil || out != r {
			t.Fatalf("%s: %v %+v", class, err, out)
		}
	}
}

func TestSetSchemaMetadataConfig(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{nil, "Neither schema name nor version configured"},
		{xfProps("schema.version", ""), `Invalid value "" for configuration schema.version: Not a number of type INT`},
		{xfProps("schema.version", "x"), `Invalid value "x" for configuration schema.version: not a 32-bit integer`},
		{xfProps("schema.version", " 7 "), ""},
		{xfProps("schema.name", ""), ""},
	} {
		if _, err := xfConfigure("SetSchemaMetadata$Value", c.props); errString(err) != c.want {
			t.Errorf("%v: %v, want %q", c.props, err, c.want)
		}
	}
	x := &setSchemaMetadata{part: valuePart{}}
	if err := x.Configure(xfProps("schema.version", "x")); err == nil {
		t.Error("Configure alone accepted a bad version")
	} else {
		var ce *connectors.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%T: %v", err, err)
		}
	}
}
