package transforms

import (
	"math/big"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// Flatten's tests: Connect's FlattenTest, and cases checked against
// Flatten 4.1.1.

func xfSupportedTypes() (*connectors.Schema, *connectors.StructValue) {
	s := connectors.StructSchema("",
		xfField("int8", connectors.Int8Schema), xfField("int16", connectors.Int16Schema),
		xfField("int32", connectors.Int32Schema), xfField("int64", connectors.Int64Schema),
		xfField("float32", connectors.Float32Schema), xfField("float64", connectors.Float64Schema),
		xfField("boolean", connectors.BooleanSchema), xfField("string", connectors.StringSchema),
		xfField("bytes", connectors.BytesSchema))
	return s, xfStruct(s, "int8", int8(8), "int16", int16(16), "int32", int32(32), "int64", int64(64),
		"float32", float32(32), "float64", 64.0, "boolean", true, "string", "stringy", "bytes", []byte("bytes"))
}

func TestFlattenWithSchema(t *testing.T) {
	types, typesValue := xfSupportedTypes()
	one := connectors.StructSchema("", xfField("B", types))
	two := connectors.StructSchema("", xfField("A", one))
	var flatFields []connectors.Field
	for _, f := range types.Fields {
		flatFields = append(flatFields, xfField("A.B."+f.Name, &connectors.Schema{Type: f.Schema.Type}))
	}
	flat := connectors.StructSchema("", flatFields...)
	want := connectors.NewStruct(flat)
	copy(want.Values, typesValue.Values)

	optInner := connectors.StructSchema("", xfField("opt_int32", connectors.Int32Schema.Optionally()))
	optOuter := connectors.StructSchema("", xfField("B", optInner))
	optInnerStruct := connectors.StructSchema("", xfField("opt_int32", connectors.Int32Schema.Optionally())).Optionally()
	optOuter2 := connectors.StructSchema("", xfField("B", optInnerStruct))
	flatOpt := connectors.StructSchema("", xfField("B.opt_int32", connectors.Int32Schema.Optionally()))

	nullFields := connectors.StructSchema("", xfField("firstNull", connectors.OptionalStringSchema),
		xfField("firstNonNull", connectors.OptionalStringSchema), xfField("secondNull", connectors.OptionalStringSchema))
	nullValue := xfStruct(nullFields, "firstNonNull", "nonNull")

	// testArrayWithSchema: arrays, of structs too, are left as they are.
	lfg := connectors.StructSchema("", xfField("lfg", connectors.StringSchema))
	baz := connectors.StructSchema("", xfField("baz", lfg))
	arr := connectors.StructSchema("", xfField("foo", &connectors.Schema{Type: connectors.Array, Items: baz, Doc: "durk"}))
	arrValue := xfStruct(arr, "foo", []any{xfStruct(baz, "baz", xfStruct(lfg, "lfg", "lfg"))})

	// Metadata of the top level and of leaves is kept.
	meta := &connectors.Schema{Type: connectors.Struct, Name: "top", Version: 2, Doc: "d", Parameters: map[string]string{"p": "v"}, Optional: true,
		Fields: []connectors.Field{xfField("dec", xfDecimal("2")), xfField("ts", xfTimestampSchema.Optionally())}}
	flatMeta := &connectors.Schema{Type: connectors.Struct, Name: "top", Version: 2, Doc: "d", Parameters: map[string]string{"p": "v"},
		Fields: []connectors.Field{xfField("dec", xfDecimal("2").Optionally()), xfField("ts", xfTimestampSchema.Optionally())}}

	xfRun(t, "Flatten", []xfCase{
		{name: "nested struct", schema: two, value: xfStruct(two, "A", xfStruct(one, "B", typesValue)), wantSchema: flat, want: want},
		{name: "optional field", schema: optOuter, value: xfStruct(optOuter, "B", connectors.NewStruct(optInner)),
			wantSchema: flatOpt, want: connectors.NewStruct(flatOpt)},
		{name: "optional nested struct", schema: optOuter2, value: connectors.NewStruct(optOuter2),
			wantSchema: flatOpt, want: connectors.NewStruct(flatOpt)},
		{name: "null fields", schema: nullFields, value: nullValue, wantSchema: nullFields, want: nullValue},
		{name: "array", schema: arr, value: arrValue, wantSchema: arr, want: xfStruct(arr, "foo", arrValue.Get("foo"))},
		{name: "metadata", schema: meta, value: xfStruct(meta, "dec", big.NewRat(1, 4), "ts", time.UnixMilli(3)), wantSchema: flatMeta,
			want: xfStruct(flatMeta, "dec", big.NewRat(1, 4), "ts", time.UnixMilli(3))},
		{name: "delimiter", props: xfProps("delimiter", "#"), schema: optOuter, value: xfStruct(optOuter, "B", connectors.NewStruct(optInner)),
			wantSchema: connectors.StructSchema("", xfField("B#opt_int32", connectors.Int32Schema.Optionally())),
			check:      func(*testing.T, *connectors.Schema, any) {}},
		{name: "top level struct required", schema: connectors.Int32Schema, value: int32(42),
			wantErr: "Only Struct objects supported for [flattening], found: java.lang.Integer"},
	}, false)
}

// TestFlattenOptionalAndDefaults: a field under an optional struct is
// optional, and takes its default from the closest struct on its path
// with one (testOptionalAndDefaultValuesNested).
func TestFlattenOptionalAndDefaults(t *testing.T) {
	child := &connectors.Schema{Type: connectors.Struct, Optional: true, Fields: []connectors.Field{
		xfField("req_field", connectors.StringSchema),
		xfField("opt_field", &connectors.Schema{Type: connectors.String, Optional: true, Default: "child_default"}),
	}}
	childDefault := xfStruct(child, "req_field", "req_default")
	child.Default = childDefault
	flat := connectors.StructSchema("",
		xfField("req_field", &connectors.Schema{Type: connectors.String, Optional: true, Default: "req_default"}),
		xfField("opt_field", &connectors.Schema{Type: connectors.String, Optional: true, Default: "child_default"}))

	// Nested: the parent's default reaches the grandchildren.
	grand := connectors.StructSchema("", xfField("g", connectors.Int32Schema))
	parent := connectors.StructSchema("", xfField("c", grand))
	parent.Default = xfStruct(parent, "c", xfStruct(grand, "g", int32(7)))
	parent.Optional = true
	top := connectors.StructSchema("", xfField("p", parent), xfField("r", connectors.Int8Schema))
	flatTop := connectors.StructSchema("",
		xfField("p.c.g", &connectors.Schema{Type: connectors.Int32, Optional: true, Default: int32(7)}),
		xfField("r", connectors.Int8Schema))

	inner := connectors.StructSchema("", xfField("r", connectors.Int32Schema))
	outer := connectors.StructSchema("", xfField("n", inner))
	xfRun(t, "Flatten", []xfCase{
		// The null optional field reads as its own default; the required
		// one stays null, the schema giving it the parent's.
		{name: "defaults from the parent", schema: child, value: connectors.NewStruct(child), wantSchema: flat,
			want: xfStruct(flat, "opt_field", "child_default")},
		{name: "defaults from the grandparent", schema: top, value: xfStruct(top, "r", int8(1)), wantSchema: flatTop,
			want: xfStruct(flatTop, "r", int8(1))},
		{name: "null field reads as its default", schema: connectors.StructSchema("", xfField("d", &connectors.Schema{Type: connectors.Int8, Optional: true, Default: int8(3)})),
			value: connectors.NewStruct(connectors.StructSchema("", xfField("d", &connectors.Schema{Type: connectors.Int8, Optional: true, Default: int8(3)}))),
			check: func(t *testing.T, _ *connectors.Schema, v any) {
				if got := v.(*connectors.StructValue).Values[0]; got != int8(3) {
					t.Fatalf("got %#v", got)
				}
			}},
		{name: "required field of a present struct", schema: outer, value: xfStruct(outer, "n", connectors.NewStruct(inner)),
			wantErr: `Invalid value: null used for required field: "n.r", schema type: INT32`},
	}, false)
}

func TestFlattenRefuses(t *testing.T) {
	dup := connectors.StructSchema("", xfField("a.b", connectors.Int32Schema),
		xfField("a", connectors.StructSchema("", xfField("b", connectors.Int32Schema))))
	withMap := connectors.StructSchema("", xfField("m", &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.StringSchema}))
	s := connectors.StructSchema("", xfField("x", connectors.Int32Schema))
	xfRun(t, "Flatten", []xfCase{
		{name: "duplicate names", schema: dup, value: connectors.NewStruct(dup),
			wantErr: "Cannot create field because of field name duplication a.b"},
		{name: "map in a struct", schema: withMap, value: xfStruct(withMap, "m", map[string]any{}),
			wantErr: "Flatten transformation does not support MAP for record with schemas (for field m)."},
		{name: "struct in a map", value: map[string]any{"s": xfStruct(s, "x", int32(1))},
			wantErr: "Flatten transformation does not support class org.apache.kafka.connect.data.Struct for record without schemas (for field s)."},
		{name: "date in a map", value: map[string]any{"s": time.UnixMilli(0)},
			wantErr: "Flatten transformation was passed a value of type class java.util.Date which is not supported by Connect's data API"},
		{name: "top level map required", value: int32(42),
			wantErr: "Only Map objects supported in absence of schema for [flattening], found: java.lang.Integer"},
		{name: "struct value with a non-struct schema", schema: connectors.Int32Schema, value: xfStruct(s, "x", int32(1)),
			wantErr: "Cannot list fields on non-struct type"},
	}, false)
}

func TestFlattenSchemaless(t *testing.T) {
	_, typesValue := xfSupportedTypes()
	types := map[string]any{}
	for i, f := range typesValue.Schema.Fields {
		types[f.Name] = typesValue.Values[i]
	}
	want := map[string]any{}
	for k, v := range types {
		want["A#B#"+k] = v
	}
	array := map[string]any{"foo": []any{"bar", map[string]any{"baz": map[string]any{"lfg": "lfg"}}}}
	nulls := map[string]any{"firstNull": nil, "firstNonNull": "nonNull", "secondNull": nil, "secondNonNull": "alsoNonNull", "thirdNonNull": nil}
	xfRun(t, "Flatten", []xfCase{
		{name: "nested map with delimiter", props: xfProps("delimiter", "#"), value: map[string]any{"A": map[string]any{"B": types}},
			wantNoSchema: true, want: want},
		{name: "optional field", value: map[string]any{"B": map[string]any{"opt_int32": nil}}, want: map[string]any{"B.opt_int32": nil}},
		{name: "array", value: array, want: array},
		{name: "null fields", value: nulls, want: nulls},
		{name: "delimiter trimmed", props: xfProps("delimiter", " _ "), value: map[string]any{"a": map[string]any{"b": int32(1)}},
			want: map[string]any{"a_b": int32(1)}},
		{name: "empty nested map vanishes", value: map[string]any{"a": map[string]any{}, "b": int32(1)}, want: map[string]any{"b": int32(1)}},
		// Two entries flattening to one name: the later in sorted order wins.
		{name: "colliding names", value: map[string]any{"a.b": int32(1), "a": map[string]any{"b": int32(2)}}, want: map[string]any{"a.b": int32(1)}},
	}, false)
	xfRun(t, "Flatten", []xfCase{{name: "key", value: map[string]any{"A": map[string]any{"B": int32(12)}}, want: map[string]any{"A.B": int32(12)}}}, true)
}

// TestFlattenTombstones: a null passes through as it is, schema and all.
func TestFlattenTombstones(t *testing.T) {
	s := &connectors.Schema{Type: connectors.Struct, Name: "name", Version: 1, Doc: "doc", Optional: true,
		Fields: []connectors.Field{xfField("magic", connectors.OptionalInt64Schema)}}
	for _, schema := range []*connectors.Schema{nil, s} {
		r := &connectors.Record{ValueSchema: schema}
		out, err := xfNew(t, "Flatten$Value", nil).Apply(r)
		if err != nil || out != r {
			t.Fatalf("schema %v: %v %+v", schema, err, out)
		}
	}
}

func TestFlattenCachesSchemas(t *testing.T) {
	in := connectors.StructSchema("", xfField("x", connectors.Int32Schema))
	s := connectors.StructSchema("", xfField("n", in))
	x := xfNew(t, "Flatten$Value", nil)
	a, err := x.Apply(&connectors.Record{ValueSchema: s, Value: xfStruct(s, "n", xfStruct(in, "x", int32(1)))})
	if err != nil {
		t.Fatal(err)
	}
	b, err := x.Apply(&connectors.Record{ValueSchema: s, Value: xfStruct(s, "n", xfStruct(in, "x", int32(2)))})
	if err != nil || a.ValueSchema != b.ValueSchema || b.Value.(*connectors.StructValue).Values[0] != int32(2) {
		t.Fatalf("%v %v", err, b)
	}
}
