package transforms

import (
	"math"
	"math/big"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// maskSchema and maskValues are those of Connect's MaskFieldTest.
func maskSchema() *connectors.Schema {
	dateSchema := &connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical, Version: 1}
	timeSchema := &connectors.Schema{Type: connectors.Int32, Name: connectors.TimeLogical, Version: 1}
	decimal := &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1, Parameters: map[string]string{"scale": "0"}}
	return connectors.StructSchema("",
		connectors.Field{Name: "magic", Schema: connectors.Int32Schema},
		connectors.Field{Name: "bool", Schema: connectors.BooleanSchema},
		connectors.Field{Name: "byte", Schema: connectors.Int8Schema},
		connectors.Field{Name: "short", Schema: connectors.Int16Schema},
		connectors.Field{Name: "int", Schema: connectors.Int32Schema},
		connectors.Field{Name: "long", Schema: connectors.Int64Schema},
		connectors.Field{Name: "float", Schema: connectors.Float32Schema},
		connectors.Field{Name: "double", Schema: connectors.Float64Schema},
		connectors.Field{Name: "string", Schema: connectors.StringSchema},
		connectors.Field{Name: "date", Schema: dateSchema},
		connectors.Field{Name: "time", Schema: timeSchema},
		connectors.Field{Name: "timestamp", Schema: timestampSchema},
		connectors.Field{Name: "decimal", Schema: decimal},
		connectors.Field{Name: "array", Schema: &connectors.Schema{Type: connectors.Array, Items: connectors.Int32Schema}},
		connectors.Field{Name: "map", Schema: &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.StringSchema}},
		connectors.Field{Name: "withDefault", Schema: &connectors.Schema{Type: connectors.String, Optional: true, Default: "default"}},
		connectors.Field{Name: "bytes", Schema: connectors.OptionalBytesSchema},
	)
}

func maskStruct() *connectors.StructValue {
	now := time.Now().UTC()
	return connectors.NewStruct(maskSchema()).
		MustSet("magic", int32(42)).MustSet("bool", true).MustSet("byte", int8(42)).MustSet("short", int16(42)).
		MustSet("int", int32(42)).MustSet("long", int64(42)).MustSet("float", float32(42)).MustSet("double", float64(42)).
		MustSet("string", "hmm").MustSet("date", now).MustSet("time", now).MustSet("timestamp", now).
		MustSet("decimal", big.NewRat(42, 1)).MustSet("array", []any{int32(1), int32(2), int32(3)}).
		MustSet("map", map[string]any{"what": "what"})
}

func maskMap() map[string]any {
	return map[string]any{
		"magic": int32(42), "bool": true, "byte": int8(42), "short": int16(42), "int": int32(42), "long": int64(42),
		"float": float32(42), "double": float64(42), "string": "55.121.20.20", "date": time.Now(),
		"bigint": big.NewInt(42), "bigdec": big.NewRat(42, 1), "list": []any{int32(42)}, "map": map[string]any{"key": "value"},
	}
}

func maskWith(t *testing.T, fields []string, replacement *string) func(*connectors.Record) (*connectors.Record, error) {
	props := map[string]string{"fields": strings.Join(fields, ","), "replace.null.with.default": "false"}
	if replacement != nil {
		props["replacement"] = *replacement
	}
	c := configured(t, "MaskField$Value", props)
	return func(r *connectors.Record) (*connectors.Record, error) { return applyOne(c, r) }
}

func TestMaskFieldConfig(t *testing.T) {
	cases := []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{}, `Missing required configuration "transforms.x.fields"`},
		{map[string]string{"fields": " "}, "Empty list"},
		{map[string]string{"fields": ","}, ""}, // two empty names: not an empty list
		{map[string]string{"fields": "a", "replacement": ""}, "String must be non-empty"},
		{map[string]string{"fields": "a", "replacement": "  "}, "String must be non-empty"},
		{map[string]string{"fields": "a", "replacement": "x"}, ""},
	}
	for _, c := range cases {
		_, err := chainOf("MaskField$Value", c.props)
		wantErr(t, err, c.want)
	}
}

func TestMaskFieldSchemaless(t *testing.T) {
	in := maskMap()
	var fields []string
	for k := range in {
		if k != "magic" {
			fields = append(fields, k)
		}
	}
	sort.Strings(fields)
	out, err := maskWith(t, append(fields, "absent"), nil)(sourceRecord(nil, in))
	wantErr(t, err, "")
	want := map[string]any{
		"magic": int32(42), "bool": false, "byte": int8(0), "short": int16(0), "int": int32(0), "long": int64(0),
		"float": float32(0), "double": float64(0), "string": "", "date": time.UnixMilli(0).UTC(),
		"bigint": new(big.Int), "bigdec": new(big.Rat), "list": []any{}, "map": map[string]any{},
		"absent": nil, // a configured field the map lacks is added as null
	}
	if !reflect.DeepEqual(out.Value, want) {
		t.Fatalf("got %v\nwant %v", out.Value, want)
	}
	if in["int"] != int32(42) {
		t.Fatal("the input map was modified")
	}
}

func TestMaskFieldWithSchema(t *testing.T) {
	var fields []string
	for _, f := range maskSchema().Fields {
		if f.Name != "magic" && f.Name != "bytes" {
			fields = append(fields, f.Name)
		}
	}
	in := maskStruct()
	out, err := maskWith(t, fields, nil)(sourceRecord(in.Schema, in))
	wantErr(t, err, "")
	v := out.Value.(*connectors.StructValue)
	if out.ValueSchema != in.Schema || v.Schema != in.Schema {
		t.Fatal("MaskField keeps the schema")
	}
	epoch := time.UnixMilli(0).UTC()
	want := []any{int32(42), false, int8(0), int16(0), int32(0), int64(0), float32(0), float64(0), "",
		epoch, epoch, epoch, new(big.Rat), []any{}, map[string]any{}, nil, nil}
	if !reflect.DeepEqual(v.Values, want) {
		t.Fatalf("got %v\nwant %v", v.Values, want)
	}
	if in.Get("int") != int32(42) {
		t.Fatal("the input struct was modified")
	}
}

func TestMaskFieldReplacement(t *testing.T) {
	cases := []struct {
		field, replacement string
		want               any
	}{
		{"short", "123", int16(123)},
		{"byte", "123", int8(123)},
		{"int", "123", int32(123)},
		{"long", "123", int64(123)},
		{"float", "123.0", float32(123)},
		{"double", "123.0", float64(123)},
		{"string", "123", "123"},
		{"decimal", "123.0", big.NewRat(123, 1)},
		// Values.convertTo*: BigDecimal syntax, truncated, narrowed as a cast.
		{"int", "1.9", int32(1)},
		{"int", "-1.9", int32(-1)},
		{"byte", "300", int8(44)},
		{"int", "1e3", int32(1000)},
		{"long", "18446744073709551617", int64(1)},
		{"long", "-9223372036854775809", int64(math.MaxInt64)},
		{"long", "1e100", int64(0)},
		{"long", "1e20000", int64(0)},
		{"double", "1e400", math.Inf(1)},
		{"double", "-1e-400", math.Copysign(0, -1)},
		{"double", ".5", 0.5},
		{"double", "+5.", 5.0},
		{"float", "0.1", float32(0.1)},
		{"decimal", "-1.25E+1", big.NewRat(-25, 2)},
	}
	for _, c := range cases {
		t.Run(c.field+"="+c.replacement, func(t *testing.T) {
			in := maskStruct()
			out, err := maskWith(t, []string{c.field}, &c.replacement)(sourceRecord(in.Schema, in))
			wantErr(t, err, "")
			if got := out.Value.(*connectors.StructValue).Get(c.field); !valuesEqual(got, c.want) {
				t.Fatalf("got %#v, want %#v", got, c.want)
			}
		})
	}
	out, err := maskWith(t, []string{"bigint", "bigdec"}, ptr("123"))(sourceRecord(nil, maskMap()))
	wantErr(t, err, "")
	m := out.Value.(map[string]any)
	if m["bigint"].(*big.Int).Int64() != 123 || m["bigdec"].(*big.Rat).Cmp(big.NewRat(123, 1)) != 0 {
		t.Fatalf("got %v", m)
	}
}

func ptr(s string) *string { return &s }

func TestMaskFieldErrors(t *testing.T) {
	cases := []struct {
		name        string
		fields      []string
		replacement *string
		schemaless  bool
		want        string
	}{
		{"date with replacement", []string{"date"}, ptr("x"), true, "Cannot mask value of type class java.util.Date with custom replacement."},
		{"bool with replacement", []string{"bool"}, ptr("false"), true, "Cannot mask value of type class java.lang.Boolean with custom replacement."},
		{"list with replacement", []string{"list"}, ptr("123"), true, "Cannot mask value of type class java.util.ArrayList with custom replacement."},
		{"map with replacement", []string{"map"}, ptr("123"), true, "Cannot mask value of type class java.util.HashMap with custom replacement."},
		{"time with replacement", []string{"time"}, ptr("1"), false, "Cannot mask value of type class java.util.Date with custom replacement."},
		{"array with replacement", []string{"array"}, ptr("1"), false, "with custom replacement."},
		{"int not a number", []string{"int"}, ptr("foo"), true, "Unable to convert foo (class java.lang.String) to a number"},
		{"byte not a number", []string{"byte"}, ptr("1_0"), true, "Unable to convert 1_0 (class java.lang.String) to a number"},
		{"double not a number", []string{"double"}, ptr("NaN"), true, "to a number"},
		{"bigint not a number", []string{"bigint"}, ptr("1.5"), true, "Unable to convert 1.5 (class java.lang.String) to number"},
		{"bigdec not a number", []string{"bigdec"}, ptr("foo"), true, "Unable to convert foo (class java.lang.String) to number"},
		{"string then int", []string{"string", "int"}, ptr("foo"), true, "to a number"},
		{"bytes", []string{"bytes"}, nil, false, ""}, // null bytes: nothing to mask
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sourceRecord(nil, maskMap())
			if !c.schemaless {
				s := maskStruct()
				r = sourceRecord(s.Schema, s)
			}
			_, err := maskWith(t, c.fields, c.replacement)(r)
			wantErr(t, err, c.want)
		})
	}
	s := maskStruct()
	s.MustSet("bytes", []byte("x"))
	_, err := maskWith(t, []string{"bytes"}, nil)(sourceRecord(s.Schema, s))
	wantErr(t, err, "Cannot mask value of type: class [B")
	// No pass for tombstones: MaskField needs a map or struct.
	_, err = maskWith(t, []string{"a"}, nil)(sourceRecord(nil, nil))
	wantErr(t, err, "Only Map objects supported in absence of schema for [mask fields], found: null")
	_, err = maskWith(t, []string{"a"}, nil)(sourceRecord(s.Schema, nil))
	wantErr(t, err, "Only Struct objects supported for [mask fields], found: null")
}

// replace.null.with.default: a null optional field with a default is
// masked from its default, or stays null.
func TestMaskFieldReplaceNullWithDefault(t *testing.T) {
	s := maskStruct()
	for _, c := range []struct {
		replace string
		want    any
	}{{"true", ""}, {"false", nil}} {
		x := configured(t, "MaskField$Value", map[string]string{"fields": "withDefault", "replace.null.with.default": c.replace})
		out, err := applyOne(x, sourceRecord(s.Schema, s))
		wantErr(t, err, "")
		if got := out.Value.(*connectors.StructValue).Get("withDefault"); got != c.want {
			t.Errorf("replace=%s: %#v, want %#v", c.replace, got, c.want)
		}
	}
}
