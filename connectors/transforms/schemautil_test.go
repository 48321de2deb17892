package transforms

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/transform"
)

// Helpers for the tests of Cast, Flatten, ExtractField, HoistField,
// ValueToKey and SetSchemaMetadata (prefixed xf so as not to collide with
// other transforms' test helpers).

// xfNew makes and configures the transform of this package with the given
// simple class name (Cast$Value, ValueToKey).
func xfNew(t *testing.T, class string, props map[string]string) connectors.Transform {
	t.Helper()
	x, err := xfConfigure(class, props)
	if err != nil {
		t.Fatalf("%s: configure %v: %v", class, props, err)
	}
	return x
}

// xfConfigure validates props against the transform's ConfigDef, as the
// runtime does, then configures it.
func xfConfigure(class string, props map[string]string) (connectors.Transform, error) {
	for _, p := range transformPlugins {
		if p.Class == pkg+class {
			x := p.New()
			for _, v := range x.Config().Validate(props) {
				if len(v.Errors) > 0 {
					return nil, errors.New(strings.Join(v.Errors, "; "))
				}
			}
			return x, x.Configure(props)
		}
	}
	panic("no transform " + class)
}

// xfCase is one record through a $Key or $Value transform: the part's
// schema and value in, and what should come out.
type xfCase struct {
	name   string
	props  map[string]string
	schema *connectors.Schema
	value  any
	// want is the part's value out; wantSchema its schema, checked when
	// set (or nil when wantNoSchema).
	want         any
	wantSchema   *connectors.Schema
	wantNoSchema bool
	// wantErr is the exact error message.
	wantErr string
	// check replaces the comparison of want.
	check func(t *testing.T, s *connectors.Schema, v any)
}

// xfRun runs cases through name$Value (name$Key when key), checking also
// that the record's other part is untouched and that the input was not
// modified.
func xfRun(t *testing.T, name string, cases []xfCase, key bool) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			class, p := name+"$Value", part(valuePart{})
			if key {
				class, p = name+"$Key", keyPart{}
			}
			x := xfNew(t, class, c.props)
			other := &connectors.Schema{Type: connectors.String}
			r := &connectors.Record{Topic: "topic", Timestamp: time.UnixMilli(7)}
			r = p.with(r, c.schema, c.value)
			if key {
				r.ValueSchema, r.Value = other, "other"
			} else {
				r.KeySchema, r.Key = other, "other"
			}
			inSchema, inValue := xfCloneSchema(c.schema), xfClone(c.value)
			out, err := x.Apply(r)
			if !reflect.DeepEqual(c.schema, inSchema) || !xfSame(c.value, inValue) {
				t.Fatalf("Apply modified its input: %#v", c.value)
			}
			if c.wantErr != "" || err != nil {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if out.Topic != "topic" || !out.Timestamp.Equal(time.UnixMilli(7)) {
				t.Fatalf("record's other fields changed: %+v", out)
			}
			if key && (out.ValueSchema != other || out.Value != "other") || !key && (out.KeySchema != other || out.Key != "other") {
				t.Fatalf("the other part changed: %+v", out)
			}
			s, v := p.schema(out), p.value(out)
			if c.wantNoSchema && s != nil {
				t.Fatalf("schema %+v, want none", s)
			}
			if c.wantSchema != nil && !reflect.DeepEqual(s, c.wantSchema) {
				t.Fatalf("schema\n%s\nwant\n%s", xfShowSchema(s), xfShowSchema(c.wantSchema))
			}
			if c.check != nil {
				c.check(t, s, v)
				return
			}
			if !reflect.DeepEqual(v, c.want) {
				t.Fatalf("value %#v (%T), want %#v (%T)", v, v, c.want, c.want)
			}
		})
	}
}

// xfSame is reflect.DeepEqual, but for a NaN, which is itself.
func xfSame(a, b any) bool {
	if f, ok := a.(float64); ok && math.IsNaN(f) {
		g, ok := b.(float64)
		return ok && math.IsNaN(g)
	}
	return reflect.DeepEqual(a, b)
}

func xfProps(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// xfStruct builds a struct value of s from name, value pairs.
func xfStruct(s *connectors.Schema, kv ...any) *connectors.StructValue {
	v := connectors.NewStruct(s)
	for i := 0; i < len(kv); i += 2 {
		v.MustSet(kv[i].(string), kv[i+1])
	}
	return v
}

func xfField(name string, s *connectors.Schema) connectors.Field {
	return connectors.Field{Name: name, Schema: s}
}

func xfDecimal(scale string) *connectors.Schema {
	return &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Parameters: map[string]string{"scale": scale}}
}

var (
	xfDateSchema      = &connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical}
	xfTimeSchema      = &connectors.Schema{Type: connectors.Int32, Name: connectors.TimeLogical}
	xfTimestampSchema = &connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical}
)

func xfRat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

// xfClone deep-copies a Connect value (struct values keep their schema).
func xfClone(v any) any {
	switch x := v.(type) {
	case *connectors.StructValue:
		if x == nil {
			return x
		}
		c := &connectors.StructValue{Schema: x.Schema, Values: make([]any, len(x.Values))}
		for i, e := range x.Values {
			c.Values[i] = xfClone(e)
		}
		return c
	case map[string]any:
		if x == nil {
			return x
		}
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = xfClone(e)
		}
		return c
	case []any:
		if x == nil {
			return x
		}
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = xfClone(e)
		}
		return c
	case []byte:
		if x == nil {
			return x
		}
		return append([]byte{}, x...)
	}
	return v
}

func xfCloneSchema(s *connectors.Schema) *connectors.Schema {
	if s == nil {
		return nil
	}
	c := *s
	c.Default = xfClone(s.Default)
	c.Fields = nil
	for _, f := range s.Fields {
		c.Fields = append(c.Fields, connectors.Field{Name: f.Name, Schema: xfCloneSchema(f.Schema)})
	}
	c.Items, c.Keys, c.Values = xfCloneSchema(s.Items), xfCloneSchema(s.Keys), xfCloneSchema(s.Values)
	if s.Parameters != nil {
		c.Parameters = map[string]string{}
		for k, v := range s.Parameters {
			c.Parameters[k] = v
		}
	}
	return &c
}

func xfShowSchema(s *connectors.Schema) string {
	if s == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString(string(s.Type))
	if s.Optional {
		b.WriteString(" optional")
	}
	if s.Name != "" {
		b.WriteString(" name=" + s.Name)
	}
	if s.Default != nil {
		b.WriteString(" default=")
		b.WriteString(strings.TrimSpace(reflect.ValueOf(s.Default).String()))
	}
	if len(s.Fields) > 0 {
		b.WriteString(" {")
		for _, f := range s.Fields {
			b.WriteString(f.Name + ": " + xfShowSchema(f.Schema) + "; ")
		}
		b.WriteString("}")
	}
	return b.String()
}

func TestValidateValue(t *testing.T) {
	inner := connectors.StructSchema("inner", xfField("x", connectors.Int32Schema))
	innerTwin := connectors.StructSchema("inner", xfField("x", connectors.Int32Schema))
	other := connectors.StructSchema("other", xfField("x", connectors.Int32Schema))
	cases := []struct {
		name    string
		s       *connectors.Schema
		v       any
		wantErr string
	}{
		{"int32", connectors.Int32Schema, int32(1), ""},
		{"wrong Go type", connectors.Int32Schema, int64(1), `Invalid Java object for schema with type INT32: class java.lang.Long for value`},
		{"null required", connectors.StringSchema, nil, "Invalid value: null used for required value, schema type: STRING"},
		{"null optional", connectors.OptionalStringSchema, nil, ""},
		{"decimal", xfDecimal("2"), xfRat("1.25"), ""},
		{"decimal as bytes", xfDecimal("2"), []byte{1}, `Invalid Java object for schema "org.apache.kafka.connect.data.Decimal" with type BYTES: class [B for value`},
		{"timestamp", xfTimestampSchema, time.UnixMilli(5), ""},
		{"timestamp as millis", xfTimestampSchema, int64(5), `Invalid Java object for schema "org.apache.kafka.connect.data.Timestamp" with type INT64: class java.lang.Long for value`},
		{"struct of an equal schema", inner, xfStruct(innerTwin, "x", int32(1)), ""},
		{"struct of another schema", inner, xfStruct(other, "x", int32(1)), "Struct schemas do not match."},
		{"struct missing a required field", inner, connectors.NewStruct(inner), `Invalid value: null used for required field: "x", schema type: INT32`},
		{"array element", &connectors.Schema{Type: connectors.Array, Items: connectors.Int8Schema}, []any{int8(1), "x"},
			`Invalid Java object for schema with type INT8: class java.lang.String for element of array value`},
		{"array without items", &connectors.Schema{Type: connectors.Array}, []any{}, "No schema defined for element of array value"},
		{"map value", &connectors.Schema{Type: connectors.Map, Keys: connectors.Int32Schema, Values: connectors.StringSchema},
			map[string]any{"1": "a"}, ""},
		{"map bad value", &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.StringSchema},
			map[string]any{"1": nil}, "Invalid value: null used for required value of map value, schema type: STRING"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkValue(c.s, c.v, location{})
			if got := errString(err); got != c.wantErr {
				t.Fatalf("got %q, want %q", got, c.wantErr)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestSetDefaultKeepsCause(t *testing.T) {
	s := &connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical}
	err := setDefault(s, int32(1))
	if err == nil || err.Error() != "Invalid default value" || errors.Unwrap(err) == nil {
		t.Fatalf("got %v", err)
	}
	if s.Default != nil {
		t.Fatal("default set despite the error")
	}
}

func TestAddField(t *testing.T) {
	s := &connectors.Schema{Type: connectors.Struct}
	if err := addField(s, "a", connectors.Int8Schema); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, want string }{
		{"", "fieldName cannot be null."},
		{"a", "Cannot create field because of field name duplication a"},
	} {
		if err := addField(s, c.name, connectors.Int8Schema); errString(err) != c.want {
			t.Errorf("addField(%q): %v, want %q", c.name, err, c.want)
		}
	}
	if err := addField(connectors.Int8Schema.Optionally(), "b", connectors.Int8Schema); errString(err) != "Cannot create fields on type INT8" {
		t.Errorf("non-struct: %v", err)
	}
}

func TestSchemasEqual(t *testing.T) {
	a := connectors.StructSchema("s", xfField("d", &connectors.Schema{Type: connectors.Bytes, Default: []byte{1}}))
	b := connectors.StructSchema("s", xfField("d", &connectors.Schema{Type: connectors.Bytes, Default: []byte{1}}))
	c := connectors.StructSchema("s", xfField("d", &connectors.Schema{Type: connectors.Bytes, Default: []byte{2}}))
	if !schemasEqual(a, b) || schemasEqual(a, c) {
		t.Fatal("defaults are compared by content")
	}
	p1 := &connectors.Schema{Type: connectors.Int8, Parameters: map[string]string{}}
	if !schemasEqual(p1, connectors.Int8Schema) {
		t.Fatal("empty and nil parameters differ")
	}
	if schemasEqual(connectors.Int8Schema, connectors.Int8Schema.Optionally()) {
		t.Fatal("optionality ignored")
	}
}

func TestValuesEqual(t *testing.T) {
	s := connectors.StructSchema("", xfField("a", connectors.Int8Schema))
	equal := [][2]any{
		{nil, nil}, {int8(1), int8(1)}, {[]byte{1}, []byte{1}}, {big.NewRat(1, 2), big.NewRat(2, 4)},
		{time.UnixMilli(5), time.UnixMilli(5).In(time.FixedZone("x", 60))},
		{xfStruct(s, "a", int8(1)), xfStruct(connectors.StructSchema("", xfField("a", connectors.Int8Schema)), "a", int8(1))},
		{[]any{[]byte{1}}, []any{[]byte{1}}}, {map[string]any{"a": []byte{1}}, map[string]any{"a": []byte{1}}},
	}
	differ := [][2]any{
		{nil, int8(0)}, {int8(1), int16(1)}, {[]byte{1}, []byte{2}}, {big.NewRat(1, 2), "0.5"}, {time.UnixMilli(5), time.UnixMilli(6)},
		{xfStruct(s, "a", int8(1)), xfStruct(s, "a", int8(2))}, {[]any{int8(1)}, []any{int8(1), int8(2)}},
		{map[string]any{"a": int8(1)}, map[string]any{"b": int8(1)}}, {[]any{int8(1)}, []any{int8(2)}},
	}
	for _, p := range equal {
		if !valuesEqual(p[0], p[1]) {
			t.Errorf("%#v != %#v", p[0], p[1])
		}
	}
	for _, p := range differ {
		if valuesEqual(p[0], p[1]) {
			t.Errorf("%#v == %#v", p[0], p[1])
		}
	}
}

func TestConnectList(t *testing.T) {
	for in, want := range map[string][]string{
		"":            nil,
		"  ":          nil,
		"a":           {"a"},
		" a , b ":     {"a", "b"},
		"a,,b":        {"a", "", "b"},
		"a,":          {"a", ""},
		"a\t,\x0bb":   {"a", "b"},
		"a , b c , d": {"a", "b c", "d"},
	} {
		if got := javaList(in); !reflect.DeepEqual(got, want) {
			t.Errorf("javaList(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestChainOfPortedTransforms builds a connector's chain of these
// transforms from its config, as the runtime does, by the names a
// connector config uses, and runs a record through it.
func TestChainOfPortedTransforms(t *testing.T) {
	reg := connectors.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	chain, err := transform.Build(reg, map[string]string{
		"transforms":                  "hoist,flat,cast,key,extract,meta",
		"transforms.hoist.type":       "org.apache.kafka.connect.transforms.HoistField$Value",
		"transforms.hoist.field":      "outer",
		"transforms.flat.type":        "Flatten$Value",
		"transforms.flat.delimiter":   "_",
		"transforms.cast.type":        "org.apache.kafka.connect.transforms.Cast$Value",
		"transforms.cast.spec":        "outer_id:string",
		"transforms.key.type":         "ValueToKey",
		"transforms.key.fields":       "outer_id",
		"transforms.extract.type":     "ExtractField$Key",
		"transforms.extract.field":    "outer_id",
		"transforms.meta.type":        "SetSchemaMetadata$Value",
		"transforms.meta.schema.name": "flat",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Close()
	in := connectors.StructSchema("in", xfField("id", connectors.Int64Schema), xfField("name", connectors.StringSchema))
	out, err := chain.Apply(&connectors.Record{ValueSchema: in, Value: xfStruct(in, "id", int64(7), "name", "n")})
	if err != nil {
		t.Fatal(err)
	}
	v := out.Value.(*connectors.StructValue)
	if out.Key != "7" || out.KeySchema.Type != connectors.String || out.ValueSchema.Name != "flat" ||
		v.Get("outer_id") != "7" || v.Get("outer_name") != "n" || v.Schema != out.ValueSchema {
		t.Fatalf("%+v %+v", out, v)
	}

	_, err = transform.Build(reg, map[string]string{
		"transforms": "c", "transforms.c.type": "Cast$Key", "transforms.c.spec": "a:bytes",
	})
	var ce *connectors.ConfigError
	if !errors.As(err, &ce) || len(ce.Errors["transforms.c.spec"]) != 1 {
		t.Fatalf("bad spec: %v", err)
	}
}
