package transforms

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

func TestReplaceFieldConfig(t *testing.T) {
	cases := []struct {
		renames, want string
	}{
		{"abc:xyz,foo:bar", ""},
		{"", ""},
		{":a", ""},   // renames the empty name
		{"a:b:", ""}, // Java's split drops the trailing empty part
		{"a:", "Invalid rename mapping: a:"},
		{"a", "Invalid rename mapping: a"},
		{"a:b:c", "Invalid rename mapping: a:b:c"},
		{"a:b,,c:d", "Invalid rename mapping: "},
		{":", "Invalid rename mapping: :"},
	}
	for _, c := range cases {
		t.Run(c.renames, func(t *testing.T) {
			_, err := chainOf("ReplaceField$Value", map[string]string{"renames": c.renames})
			wantErr(t, err, c.want)
			if c.want != "" {
				wantErr(t, err, "transforms.x.renames")
			}
		})
	}
}

func replaceFieldSchema() *connectors.Schema {
	return connectors.StructSchema("",
		connectors.Field{Name: "dont", Schema: connectors.StringSchema},
		connectors.Field{Name: "abc", Schema: connectors.Int32Schema},
		connectors.Field{Name: "foo", Schema: connectors.BooleanSchema},
		connectors.Field{Name: "etc", Schema: connectors.StringSchema})
}

func TestReplaceFieldTombstones(t *testing.T) {
	c := configured(t, "ReplaceField$Value", map[string]string{"include": "abc,foo", "renames": "abc:xyz,foo:bar"})
	s := replaceFieldSchema()
	for _, r := range []*connectors.Record{sourceRecord(nil, nil), sourceRecord(s, nil)} {
		out, err := applyOne(c, r)
		wantErr(t, err, "")
		if out.Value != nil || out.ValueSchema != r.ValueSchema {
			t.Fatalf("tombstone changed: %+v", out)
		}
	}
}

func TestReplaceFieldSchemaless(t *testing.T) {
	in := map[string]any{"dont": "whatever", "abc": int32(42), "foo": true, "etc": "etc"}
	cases := []struct {
		props map[string]string
		want  map[string]any
	}{
		{map[string]string{"exclude": "dont", "renames": "abc:xyz,foo:bar"},
			map[string]any{"xyz": int32(42), "bar": true, "etc": "etc"}},
		{map[string]string{"include": "abc,foo,missing"}, map[string]any{"abc": int32(42), "foo": true}},
		{map[string]string{"include": "abc,foo", "exclude": "foo"}, map[string]any{"abc": int32(42)}},
		{map[string]string{"renames": "missing:x"}, in},
		// Two names renamed to one: deterministic here (sorted order).
		{map[string]string{"renames": "abc:foo"}, map[string]any{"dont": "whatever", "foo": true, "etc": "etc"}},
	}
	for _, c := range cases {
		out, err := applyOne(configured(t, "ReplaceField$Value", c.props), sourceRecord(nil, in))
		wantErr(t, err, "")
		if !reflect.DeepEqual(out.Value, c.want) {
			t.Errorf("%v: %v, want %v", c.props, out.Value, c.want)
		}
	}
	if len(in) != 4 || in["abc"] != int32(42) {
		t.Fatal("the input map was modified")
	}
}

func TestReplaceFieldWithSchema(t *testing.T) {
	c := configured(t, "ReplaceField$Value", map[string]string{"include": "abc,foo", "renames": "abc:xyz,foo:bar"})
	s := replaceFieldSchema()
	s.Name, s.Version, s.Doc, s.Parameters = "n", 3, "d", map[string]string{"p": "v"}
	in := connectors.NewStruct(s).MustSet("dont", "whatever").MustSet("abc", int32(42)).MustSet("foo", true).MustSet("etc", "etc")
	out, err := applyOne(c, sourceRecord(s, in))
	wantErr(t, err, "")
	want := &connectors.Schema{Type: connectors.Struct, Name: "n", Version: 3, Doc: "d", Parameters: map[string]string{"p": "v"},
		Fields: []connectors.Field{{Name: "xyz", Schema: connectors.Int32Schema}, {Name: "bar", Schema: connectors.BooleanSchema}}}
	if !schemasEqual(out.ValueSchema, want) {
		t.Fatalf("schema %+v", out.ValueSchema)
	}
	if v := out.Value.(*connectors.StructValue); !valuesEqual(v.Values, []any{int32(42), true}) {
		t.Fatalf("values %v", v.Values)
	}
	out2, _ := applyOne(c, sourceRecord(s, in))
	if out2.ValueSchema != out.ValueSchema {
		t.Fatal("the derived schema was not reused")
	}
}

func TestReplaceFieldErrors(t *testing.T) {
	s := replaceFieldSchema()
	full := connectors.NewStruct(s).MustSet("dont", "a").MustSet("abc", int32(1)).MustSet("foo", true).MustSet("etc", "b")
	cases := []struct {
		name  string
		props map[string]string
		r     *connectors.Record
		want  string
	}{
		{"rename onto a kept field", map[string]string{"renames": "abc:foo"}, sourceRecord(s, full),
			"Cannot create field because of field name duplication foo"},
		{"not a struct", map[string]string{}, sourceRecord(connectors.StringSchema, "x"),
			"Only Struct objects supported for [field replacement], found: java.lang.String"},
		{"not a map", map[string]string{}, sourceRecord(nil, []any{}),
			"Only Map objects supported in absence of schema for [field replacement], found: java.util.ArrayList"},
		{"null in a required field", map[string]string{"include": "abc"}, sourceRecord(s, connectors.NewStruct(s)),
			`Invalid value: null used for required field: "abc", schema type: INT32`},
		{"excluded nulls do not matter", map[string]string{"include": "abc"}, sourceRecord(s, connectors.NewStruct(s).MustSet("abc", int32(1))), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := applyOne(configured(t, "ReplaceField$Value", c.props), c.r)
			wantErr(t, err, c.want)
		})
	}
}

// Connect's testReplaceNullWithDefaultConfigOn{Value,Key}.
func TestReplaceFieldReplaceNullWithDefault(t *testing.T) {
	s := connectors.StructSchema("", connectors.Field{Name: "abc", Schema: &connectors.Schema{Type: connectors.Int32, Optional: true, Default: int32(42)}})
	for _, class := range []string{"ReplaceField$Value", "ReplaceField$Key"} {
		for _, c := range []struct {
			replace string
			want    any
		}{{"false", nil}, {"true", int32(42)}} {
			x := configured(t, class, map[string]string{"include": "abc", "renames": "abc:optional_with_default", "replace.null.with.default": c.replace})
			r := &connectors.Record{Topic: "test", KeySchema: s, Key: connectors.NewStruct(s), ValueSchema: s, Value: connectors.NewStruct(s)}
			out, err := applyOne(x, r)
			wantErr(t, err, "")
			v := out.Value.(*connectors.StructValue)
			if class == "ReplaceField$Key" {
				v = out.Key.(*connectors.StructValue)
				if out.Value != r.Value {
					t.Fatal("the key transform must keep the value")
				}
			}
			if len(v.Schema.Fields) != 1 || v.Get("optional_with_default") != c.want {
				t.Errorf("%s replace=%s: %v, want %v", class, c.replace, v.Values, c.want)
			}
		}
	}
}

// whitelist and blacklist, removed in Kafka 4.0 and ignored by Connect
// 4.1, are refused by name rather than ignored.
func TestReplaceFieldRefusesRemovedKeys(t *testing.T) {
	for _, key := range []string{"whitelist", "blacklist"} {
		x := &replaceField{part: valuePart{}}
		err := x.Configure(map[string]string{key: "a"})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want a refusal naming it", key, err)
		}
	}
}
