package transforms

import (
	"reflect"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// ExtractField's tests: Connect's ExtractFieldTest, FieldPathNotationTest,
// SingleFieldPathTest and FieldSyntaxVersionTest, and cases checked
// against ExtractField 4.1.1.

var xfV2 = []string{"field.syntax.version", "V2"}

func xfExtract(field string, more ...string) map[string]string {
	return xfProps(append([]string{"field", field}, more...)...)
}

func TestExtractFieldSchemaless(t *testing.T) {
	nested := map[string]any{"magic": map[string]any{"foo": int32(42), "baz": nil}}
	xfRun(t, "ExtractField", []xfCase{
		{name: "field", props: xfExtract("magic"), value: map[string]any{"magic": int32(42)}, wantNoSchema: true, want: int32(42)},
		{name: "nested path", props: xfExtract("magic.foo", xfV2...), value: nested, want: int32(42)},
		{name: "null", props: xfExtract("magic"), value: nil, wantNoSchema: true, want: nil},
		{name: "missing field", props: xfExtract("nonexistent"), value: map[string]any{"magic": int32(42)}, want: nil},
		{name: "missing nested field", props: xfExtract("magic.nonexistent", xfV2...), value: nested, want: nil},
		{name: "missing parent", props: xfExtract("un.known", xfV2...), value: nested, want: nil},
		{name: "through a null", props: xfExtract("magic.baz.inner", xfV2...), value: nested, want: nil},
		{name: "V1 takes dots literally", props: xfExtract("magic.foo"), value: map[string]any{"magic.foo": "dotted"}, want: "dotted"},
		{name: "backticks", props: xfExtract("`a.b`.c", xfV2...), value: map[string]any{"a.b": map[string]any{"c": "x"}}, want: "x"},
		{name: "field trimmed", props: xfExtract(" magic "), value: map[string]any{"magic": int32(42)}, want: int32(42)},
		{name: "version in lower case", props: xfExtract("magic.foo", "field.syntax.version", "v2"), value: nested, want: int32(42)},
		{name: "a struct is whole", props: xfExtract("s"), value: map[string]any{"s": []any{int8(1)}}, want: []any{int8(1)}},
		{name: "through a non-map", props: xfExtract("a.b", xfV2...), value: map[string]any{"a": int32(5)},
			wantErr: "Only Map objects supported in absence of schema for [nested field access], found: java.lang.Integer"},
		{name: "non-map", props: xfExtract("a"), value: int32(5),
			wantErr: "Only Map objects supported in absence of schema for [field extraction], found: java.lang.Integer"},
		{name: "empty V2 path", props: xfExtract("", xfV2...), value: map[string]any{"a": int32(1)},
			wantErr: "fromIndex(0) > toIndex(-1)"},
	}, true)
}

func TestExtractFieldWithSchema(t *testing.T) {
	s := connectors.StructSchema("", xfField("magic", connectors.Int32Schema))
	foo := connectors.StructSchema("", xfField("foo", connectors.Int32Schema))
	nested := connectors.StructSchema("", xfField("magic", foo))
	optional := connectors.StructSchema("", xfField("magic", connectors.Int32Schema)).Optionally()
	baz := connectors.StructSchema("", xfField("inner", connectors.StringSchema)).Optionally()
	bar := connectors.StructSchema("", xfField("bar", connectors.Int32Schema), xfField("baz", baz))
	deep := connectors.StructSchema("", xfField("foo", bar))
	deepValue := xfStruct(deep, "foo", xfStruct(bar, "bar", int32(42)))
	// A parent struct that is null reads as its default on the way down.
	defInner := connectors.StructSchema("", xfField("x", connectors.Int32Schema))
	defParent := &connectors.Schema{Type: connectors.Struct, Optional: true, Fields: []connectors.Field{xfField("x", connectors.Int32Schema)}}
	defParent.Default = xfStruct(defInner, "x", int32(9))
	withDef := connectors.StructSchema("", xfField("p", defParent))

	xfRun(t, "ExtractField", []xfCase{
		{name: "field", props: xfExtract("magic"), schema: s, value: xfStruct(s, "magic", int32(42)), wantSchema: connectors.Int32Schema, want: int32(42)},
		{name: "nested path", props: xfExtract("magic.foo", xfV2...), schema: nested, value: xfStruct(nested, "magic", xfStruct(foo, "foo", int32(42))),
			wantSchema: connectors.Int32Schema, want: int32(42)},
		{name: "null", props: xfExtract("magic"), schema: optional, value: nil, wantSchema: connectors.Int32Schema, want: nil},
		{name: "nested struct", props: xfExtract("foo", xfV2...), schema: deep, value: deepValue, wantSchema: bar, want: deepValue.Get("foo")},
		{name: "deep", props: xfExtract("foo.bar", xfV2...), schema: deep, value: deepValue, want: int32(42)},
		{name: "through a null struct", props: xfExtract("foo.baz.inner", xfV2...), schema: deep, value: deepValue,
			wantSchema: connectors.StringSchema, want: nil},
		{name: "through a default", props: xfExtract("p.x", xfV2...), schema: withDef, value: connectors.NewStruct(withDef), want: int32(9)},
		{name: "missing field", props: xfExtract("nonexistent"), schema: s, value: xfStruct(s, "magic", int32(42)),
			wantErr: "Unknown field: nonexistent"},
		{name: "missing nested field", props: xfExtract("magic.nonexistent", xfV2...), schema: nested,
			value: xfStruct(nested, "magic", xfStruct(foo, "foo", int32(42))), wantErr: "Unknown field: magic.nonexistent"},
		{name: "missing parent", props: xfExtract("un.known", xfV2...), schema: deep, value: deepValue, wantErr: "Unknown field: un.known"},
		// The schema is checked even for a null.
		{name: "missing field of a tombstone", props: xfExtract("z"), schema: optional, value: nil, wantErr: "Unknown field: z"},
		{name: "through a non-struct schema", props: xfExtract("magic.b", xfV2...), schema: s, value: xfStruct(s, "magic", int32(1)),
			wantErr: "Cannot look up fields on non-struct type"},
		{name: "non-struct schema, null value", props: xfExtract("a"), schema: connectors.OptionalStringSchema, value: nil,
			wantErr: "Cannot look up fields on non-struct type"},
		{name: "non-struct value", props: xfExtract("a"), schema: connectors.StringSchema, value: "x",
			wantErr: "Only Struct objects supported for [field extraction], found: java.lang.String"},
		{name: "empty V2 path", props: xfExtract("", xfV2...), schema: s, value: nil, wantErr: "fromIndex(0) > toIndex(-1)"},
	}, true)
}

// TestExtractFieldReplaceNull: a null field with a default extracts as
// the default unless replace.null.with.default is false (for the last
// step only).
func TestExtractFieldReplaceNull(t *testing.T) {
	s := connectors.StructSchema("", xfField("optional_with_default", &connectors.Schema{Type: connectors.Int32, Optional: true, Default: int32(42)}))
	for _, key := range []bool{false, true} {
		xfRun(t, "ExtractField", []xfCase{
			{name: "default", props: xfExtract("optional_with_default"), schema: s, value: connectors.NewStruct(s), want: int32(42)},
			{name: "no default", props: xfExtract("optional_with_default", "replace.null.with.default", "false"), schema: s,
				value: connectors.NewStruct(s), want: nil},
		}, key)
	}
}

func TestExtractFieldConfig(t *testing.T) {
	for _, c := range []struct {
		props   map[string]string
		wantErr string
	}{
		{xfExtract("a", "field.syntax.version", "v3"), `Invalid value "v3" for configuration field.syntax.version: String must be one of (case insensitive): V1, V2`},
		{xfExtract("a", "field.syntax.version", "V 1"), `Invalid value "V 1" for configuration field.syntax.version: String must be one of (case insensitive): V1, V2`},
		{xfExtract("a", "field.syntax.version", " v1 "), ""},
		{xfExtract("foo.`bar.baz", xfV2...), "Incomplete backtick pair in path: [foo.`bar.baz], consider adding a backslash before backtick at position 4 to escape it"},
		{xfExtract("é.`a.b", xfV2...), "Incomplete backtick pair in path: [é.`a.b], consider adding a backslash before backtick at position 2 to escape it"},
		{xfExtract("foo.`bar.baz"), ""},
		{nil, `Missing required configuration "field" which has no default value.`},
		{xfExtract("a", "replace.null.with.default", "maybe"), `Invalid value "maybe" for configuration replace.null.with.default: expected true or false`},
	} {
		_, err := xfConfigure("ExtractField$Value", c.props)
		if errString(err) != c.wantErr {
			t.Errorf("%v: %q, want %q", c.props, errString(err), c.wantErr)
		}
	}
	def := (&extractField{}).Config()
	if k, ok := def.Key("field.syntax.version"); !ok || k.Default != "V1" || k.Importance != connectors.High {
		t.Errorf("field.syntax.version: %+v", k)
	}
}

// TestFieldPathV2 is FieldPathNotationTest.
func TestFieldPathV2(t *testing.T) {
	for path, want := range map[string][]string{
		"..":                    {"", "", ""},
		"foo..":                 {"foo", "", ""},
		".bar.":                 {"", "bar", ""},
		"..baz":                 {"", "", "baz"},
		"":                      nil,
		"foobarbaz":             {"foobarbaz"},
		"foo.bar.baz":           {"foo", "bar", "baz"},
		"foo`bar`baz":           {"foo`bar`baz"},
		"`foo.bar.baz`":         {"foo.bar.baz"},
		"foo.`bar.baz`":         {"foo", "bar.baz"},
		"`foo.bar`.baz":         {"foo.bar", "baz"},
		"foo.`bar`.baz":         {"foo", "bar", "baz"},
		"foo.``bar.baz`":        {"foo", "`bar.baz"},
		"foo.`bar.baz``":        {"foo", "bar.baz`"},
		"foo.`ba`r.baz`":        {"foo", "ba`r.baz"},
		"foo.ba`r.baz":          {"foo", "ba`r", "baz"},
		"foo.``bar``.baz":       {"foo", "`bar`", "baz"},
		"``foo.bar.baz``":       {"`foo.bar.baz`"},
		"foo.`bar\\`.baz`":      {"foo", "bar`.baz"},
		"foo.`bar.`baz`":        {"foo", "bar.`baz"},
		"foo.`bar\\`.`baz`":     {"foo", "bar`.`baz"},
		"foo.`bar\\\\`.\\`baz`": {"foo", "bar\\`.\\`baz"},
		"``":                    {""},
		"`a`.":                  {"a", ""},
		"é`a.b":                 {"é`a", "b"},
		"ü.`ö.ä`":               {"ü", "ö.ä"},
	} {
		got, err := parseFieldPathV2(path)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %q %v, want %q", path, got, err, want)
		}
	}
	for path, pos := range map[string]string{
		"`foo.bar.baz":    "0",
		"foo.`bar.baz":    "4",
		"foo.bar.`baz":    "8",
		"foo.bar.`baz\\`": "8",
	} {
		_, err := parseFieldPathV2(path)
		want := "Incomplete backtick pair in path: [" + path + "], consider adding a backslash before backtick at position " + pos + " to escape it"
		if errString(err) != want {
			t.Errorf("%q: %v", path, err)
		}
	}
	for _, path := range []string{"foo.bar.baz", "foo`bar`", "foo.`bar.baz`"} {
		if p, _ := newFieldPath(path, false); !reflect.DeepEqual(p.steps, []string{path}) {
			t.Errorf("V1 %q: %q", path, p.steps)
		}
	}
}

// TestFieldPathLookups is SingleFieldPathTest.
func TestFieldPathLookups(t *testing.T) {
	v2 := func(p string) fieldPath { fp, _ := newFieldPath(p, true); return fp }
	bar := connectors.StructSchema("", xfField("bar", connectors.Int32Schema))
	s := connectors.StructSchema("", xfField("foo", bar))
	for path, want := range map[string]*connectors.Schema{"foo.bar": connectors.Int32Schema, "foo": bar, "un.known": nil, "foo.unknown": nil, "unknown": nil} {
		if got, err := v2(path).fieldFrom(s); err != nil || got != want {
			t.Errorf("fieldFrom %q: %v %v", path, got, err)
		}
	}
	m := map[string]any{"foo": map[string]any{"bar": int32(42), "baz": nil}}
	for path, want := range map[string]any{"foo.bar": int32(42), "foo.baz": nil, "un.known": nil, "foo.unknown": nil, "unknown": nil, "foo.baz.inner": nil} {
		if got, err := v2(path).valueFromMap(m); err != nil || got != want {
			t.Errorf("valueFromMap %q: %v %v", path, got, err)
		}
	}
}
