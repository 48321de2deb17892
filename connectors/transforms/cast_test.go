package transforms

import (
	"math"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// Cast's tests: Connect's CastTest, and cases checked against Cast 4.1.1.

const xfDay = 24 * 60 * 60 * 1000

// xfPointThree is 0.1+0.2 in float64 arithmetic (a constant expression
// would be exact).
var xfPointOne, xfPointTwo = 0.1, 0.2
var xfPointThree = xfPointOne + xfPointTwo

func TestCastConfig(t *testing.T) {
	cases := []struct{ spec, wantErr string }{
		{"", `Missing required configuration "spec" which has no default value.`},
		{"  ", "Must specify at least one field to cast."},
		{"foo:faketype", "Invalid value java.lang.IllegalArgumentException: No enum constant org.apache.kafka.connect.data.Schema.Type.FAKETYPE for configuration Invalid type found in casting spec: faketype"},
		{"foo:array", "Cast transformation does not support casting to ARRAY; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"},
		{"array", "Cast transformation does not support casting to ARRAY; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"},
		{"foo:bytes", "Cast transformation does not support casting to BYTES; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"},
		{"foo:int8:extra", "Invalid value [foo:int8:extra] for configuration renames: Invalid rename mapping: foo:int8:extra"},
		{"foo:int8,int32", "Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec"},
		{"int8,int16", "Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec"},
		{"::", "Index 1 out of bounds for length 0"},
		{"a:int8,,b:int8", "Invalid value java.lang.IllegalArgumentException: No enum constant org.apache.kafka.connect.data.Schema.Type. for configuration Invalid type found in casting spec: "},
		{"foo:", "Invalid value java.lang.IllegalArgumentException: No enum constant org.apache.kafka.connect.data.Schema.Type.FOO for configuration Invalid type found in casting spec: foo"},
		{" a : INT8 , b:Float64 ", ""},
		{"Boolean", ""},
		{":int8", ""},
	}
	for _, c := range cases {
		props := xfProps("spec", c.spec)
		if c.spec == "" {
			props = nil
		}
		_, err := xfConfigure("Cast$Value", props)
		got := errString(err)
		if c.spec == "" {
			if err == nil {
				t.Errorf("no spec: no error")
			}
			continue
		}
		if got != c.wantErr && !(c.wantErr != "" && got == "Invalid value \""+c.spec+"\" for configuration spec: "+c.wantErr) {
			t.Errorf("spec %q: %q, want %q", c.spec, got, c.wantErr)
		}
		// Configure alone (without the ConfigDef's validation) refuses it too.
		x := &cast{part: valuePart{}}
		if err := x.Configure(props); (err != nil) != (c.wantErr != "") {
			t.Errorf("spec %q: Configure: %v", c.spec, err)
		}
	}
}

func TestCastParsedSpec(t *testing.T) {
	casts, whole, err := parseCastSpec(javaList(" a : INT8 , b:Float64 ,:string"))
	want := map[string]connectors.SchemaType{"a": connectors.Int8, "b": connectors.Float64, "": connectors.String}
	if err != nil || whole != "" || !reflect.DeepEqual(casts, want) {
		t.Fatalf("got %v %q %v", casts, whole, err)
	}
	_, whole, _ = parseCastSpec([]string{" Boolean "})
	if whole != connectors.Boolean {
		t.Fatalf("whole %q", whole)
	}
}

// TestCastNulls: a null key or value passes through as it is, with or
// without a schema.
func TestCastNulls(t *testing.T) {
	for _, key := range []bool{false, true} {
		for _, s := range []*connectors.Schema{nil, connectors.StringSchema} {
			r := &connectors.Record{KeySchema: connectors.StringSchema, Key: "k", ValueSchema: connectors.StringSchema, Value: "v"}
			class := "Cast$Value"
			if key {
				class = "Cast$Key"
				r.KeySchema, r.Key = s, nil
			} else {
				r.ValueSchema, r.Value = s, nil
			}
			out, err := xfNew(t, class, xfProps("spec", "foo:int64")).Apply(r)
			if err != nil || out != r {
				t.Fatalf("%s schema %v: %v %+v", class, s, err, out)
			}
		}
	}
}

func TestCastWholeValue(t *testing.T) {
	i32 := connectors.Int32Schema
	whole := func(typ string, s *connectors.Schema, v any, want any, wantType connectors.SchemaType) xfCase {
		c := xfCase{name: typ + " from " + string(wantType), props: xfProps("spec", typ), schema: s, value: v, want: want}
		if s == nil {
			c.name, c.wantNoSchema = typ+" schemaless", true
		} else {
			c.wantSchema = &connectors.Schema{Type: wantType}
		}
		return c
	}
	cases := []xfCase{
		whole("int8", i32, int32(42), int8(42), connectors.Int8),
		whole("int16", i32, int32(42), int16(42), connectors.Int16),
		whole("int32", i32, int32(42), int32(42), connectors.Int32),
		whole("int64", i32, int32(42), int64(42), connectors.Int64),
		whole("float32", i32, int32(42), float32(42), connectors.Float32),
		whole("float64", i32, int32(42), float64(42), connectors.Float64),
		whole("boolean", i32, int32(42), true, connectors.Boolean),
		whole("boolean", i32, int32(0), false, connectors.Boolean),
		whole("string", i32, int32(42), "42", connectors.String),
		whole("int8", nil, int32(42), int8(42), ""),
		whole("int16", nil, int32(42), int16(42), ""),
		whole("int32", nil, int32(42), int32(42), ""),
		whole("int64", nil, int32(42), int64(42), ""),
		whole("float32", nil, int32(42), float32(42), ""),
		whole("float64", nil, int32(42), float64(42), ""),
		whole("boolean", nil, int32(42), true, ""),
		whole("string", nil, int32(42), "42", ""),
		{name: "schemaless unsupported type", props: xfProps("spec", "int8"), value: []any{"foo"},
			wantErr: "Cast transformation does not support casting from ARRAY; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]"},
		{name: "schemaless decimal has no Connect type", props: xfProps("spec", "int8"), value: big.NewRat(1, 1),
			wantErr: "Cast transformation was passed a value of type class java.math.BigDecimal which is not supported by Connect's data API"},
		{name: "schemaless Go int has no Connect type", props: xfProps("spec", "int8"), value: 1,
			wantErr: "Cast transformation was passed a value of type class int which is not supported by Connect's data API"},
		// The default is cast with the value (castWholeRecordDefaultValue).
		{name: "default cast", props: xfProps("spec", "int32"),
			schema: &connectors.Schema{Type: connectors.Float32, Default: float32(-42.125)}, value: float32(42.125),
			want: int32(42), wantSchema: &connectors.Schema{Type: connectors.Int32, Default: int32(-42)}},
		{name: "optional default kept", props: xfProps("spec", "int32"),
			schema: &connectors.Schema{Type: connectors.String, Optional: true, Default: "7", Doc: "d", Version: 3}, value: "8",
			want: int32(8), wantSchema: &connectors.Schema{Type: connectors.Int32, Optional: true, Default: int32(7), Doc: "d", Version: 3}},
		// A whole-value cast keeps the schema's name and parameters, as
		// Connect's copySchemaBasics does, logical names included.
		{name: "decimal to string keeps the Decimal name", props: xfProps("spec", "string"), schema: xfDecimal("0"), value: big.NewRat(42, 1),
			want: "42", wantSchema: &connectors.Schema{Type: connectors.String, Name: connectors.DecimalLogical, Parameters: map[string]string{"scale": "0"}}},
		{name: "timestamp to int64 keeps the Timestamp name", props: xfProps("spec", "int64"), schema: xfTimestampSchema, value: time.UnixMilli(5),
			want: int64(5), wantSchema: &connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical}},
		{name: "timestamp to string", props: xfProps("spec", "string"), schema: xfTimestampSchema, value: time.UnixMilli(xfDay + 1),
			want: "1970-01-02T00:00:00.001Z"},
		// ... so a logical type's default no longer validates (Connect's
		// SchemaBuilderException).
		{name: "date with a default to int32", props: xfProps("spec", "int32"),
			schema: &connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical, Default: time.UnixMilli(0).UTC()}, value: time.UnixMilli(0).UTC(),
			wantErr: "Invalid default value"},
		{name: "struct", props: xfProps("spec", "int8"),
			schema: connectors.StructSchema("", xfField("n", connectors.Int32Schema)), value: xfStruct(connectors.StructSchema("", xfField("n", connectors.Int32Schema)), "n", int32(1)),
			wantErr: "Cast transformation does not support casting from STRUCT; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]"},
	}
	xfRun(t, "Cast", cases, false)
	xfRun(t, "Cast", []xfCase{whole("int8", i32, int32(42), int8(42), connectors.Int8), whole("int8", nil, int32(42), int8(42), "")}, true)
}

// TestCastNumbers: numbers cast as Java's Number conversions do.
func TestCastNumbers(t *testing.T) {
	one := func(spec string, s *connectors.Schema, v, want any) xfCase {
		return xfCase{name: spec + " of " + xfShowSchema(s), props: xfProps("spec", spec), schema: s, value: v, want: want}
	}
	f64, f32, i64 := connectors.Float64Schema, connectors.Float32Schema, connectors.Int64Schema
	cases := []xfCase{
		one("int32", f64, math.NaN(), int32(0)),
		one("int32", f64, 1e20, int32(math.MaxInt32)),
		one("int32", f64, -1e20, int32(math.MinInt32)),
		one("int16", f64, 1e20, int16(-1)), // saturates to int, then wraps
		one("int8", f64, -1.9, int8(-1)),
		one("int64", f32, float32(3e9), int64(3000000000)),
		one("int64", f64, 1e30, int64(math.MaxInt64)),
		one("int64", f64, math.Inf(-1), int64(math.MinInt64)),
		one("int8", i64, int64(300), int8(44)),
		one("int32", i64, int64(1)<<32+5, int32(5)),
		one("float32", i64, int64(math.MaxInt64), float32(9.223372e18)),
		one("boolean", f64, 0.5, false),
		one("boolean", f64, -1.0, true),
		one("float64", f32, float32(1.1), float64(float32(1.1))),
		one("int8", connectors.BooleanSchema, true, int8(1)),
		one("int16", connectors.BooleanSchema, true, int16(1)),
		one("int32", connectors.BooleanSchema, false, int32(0)),
		one("int64", connectors.BooleanSchema, true, int64(1)),
		one("float32", connectors.BooleanSchema, true, float32(1)),
		one("float64", connectors.BooleanSchema, false, 0.0),
		// Decimals truncate, then keep the low-order bits.
		one("int32", xfDecimal("0"), big.NewRat(1<<31, 1), int32(math.MinInt32)),
		one("int64", xfDecimal("0"), new(big.Rat).SetInt(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 64), big.NewInt(5))), int64(5)),
		one("int8", xfDecimal("1"), xfRat("-1.5"), int8(-1)),
		one("int8", xfDecimal("1"), xfRat("300.7"), int8(44)),
		one("boolean", xfDecimal("1"), xfRat("0.5"), false),
		one("boolean", xfDecimal("0"), new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), 64)), false),
		one("float32", xfDecimal("1"), xfRat("0.1"), float32(0.1)),
		one("float64", xfDecimal("3"), xfRat("-2.125"), -2.125),
		{name: "bytes to int32", props: xfProps("spec", "int32"), schema: connectors.BytesSchema, value: []byte{1},
			wantErr: "Unexpected type in Cast transformation: class [B"},
	}
	xfRun(t, "Cast", cases, false)
}

// TestCastParse: strings cast to numbers as Java parses them.
func TestCastParse(t *testing.T) {
	str := connectors.StringSchema
	parse := func(spec, in string, want any) xfCase {
		c := xfCase{name: spec + " " + in, props: xfProps("spec", spec), schema: str, value: in, want: want}
		if want == nil {
			c.wantErr = "Value (" + in + ") was out of range for requested data type"
		}
		return c
	}
	cases := []xfCase{
		parse("int32", "42", int32(42)),
		parse("int32", "+5", int32(5)),
		parse("int32", "-0", int32(0)),
		parse("int32", "١٢", int32(12)), // Arabic-Indic digits: Character.digit
		parse("int8", "١٢", int8(12)),
		parse("int32", " 5", nil),
		parse("int32", "", nil),
		parse("int32", "-", nil),
		parse("int32", "abc", nil),
		parse("int32", "1_000", nil),
		parse("int32", "0x10", nil),
		parse("int8", "127", int8(127)),
		parse("int8", "-128", int8(-128)),
		parse("int8", "128", nil),
		parse("int16", "-32769", nil),
		parse("int32", "2147483648", nil),
		parse("int64", "-9223372036854775808", int64(math.MinInt64)),
		parse("int64", "9223372036854775808", nil),
		parse("float64", "1.5f", 1.5),
		parse("float64", "0x1p3", 8.0),
		parse("float32", "0x1.8p1d", float32(3)),
		parse("float64", "Infinity", math.Inf(1)),
		parse("float64", "-Infinity", math.Inf(-1)),
		parse("float64", "inf", nil),
		parse("float64", "1e400", math.Inf(1)),
		parse("float32", "3.4028236e38", float32(math.Inf(1))),
		parse("float64", "3.4028236e38", 3.4028236e38),
		parse("float64", " 2.5 ", 2.5),
		parse("float64", ".5", 0.5),
		parse("float64", "5.", 5.0),
		parse("float64", "1e", nil),
		parse("float64", "0x1p", nil),
		parse("float64", "1_0", nil),
		parse("boolean", "TRUE", true),
		parse("boolean", "yes", false),
		parse("boolean", " true", false),
		{name: "NaN", props: xfProps("spec", "float64"), schema: str, value: "NaN", check: func(t *testing.T, _ *connectors.Schema, v any) {
			if f, ok := v.(float64); !ok || !math.IsNaN(f) {
				t.Fatalf("got %#v", v)
			}
		}},
	}
	xfRun(t, "Cast", cases, false)
}

// TestCastToString: values print as Java's toString prints them.
func TestCastToString(t *testing.T) {
	str := func(s *connectors.Schema, v any, want string) xfCase {
		return xfCase{name: want, props: xfProps("spec", "string"), schema: s, value: v, want: want}
	}
	f64, f32 := connectors.Float64Schema, connectors.Float32Schema
	cases := []xfCase{
		str(f64, 1e7, "1.0E7"),
		str(f64, 1234567.0, "1234567.0"),
		str(f64, 0.001, "0.001"),
		str(f64, 0.0001, "1.0E-4"),
		str(f64, 100.0, "100.0"),
		str(f64, math.Copysign(0, -1), "-0.0"),
		str(f64, 1e-300, "1.0E-300"),
		str(f64, 123456789012.0, "1.23456789012E11"),
		str(f64, 9999999.0, "9999999.0"),
		str(f64, 1e21, "1.0E21"),
		str(f64, xfPointThree, "0.30000000000000004"),
		str(f64, 5e-324, "4.9E-324"),
		str(f64, 2e-3, "0.002"),
		str(f64, 0.5, "0.5"),
		str(f64, 1e-3, "0.001"),
		str(f64, 9.9e-4, "9.9E-4"),
		str(f64, -2.5, "-2.5"),
		str(f64, math.Inf(-1), "-Infinity"),
		str(f64, math.NaN(), "NaN"),
		str(f32, float32(0.1), "0.1"),
		str(f32, float32(1.1), "1.1"),
		str(f32, float32(1e7), "1.0E7"),
		str(f32, float32(3.4028235e38), "3.4028235E38"),
		str(f32, float32(1.4e-45), "1.4E-45"),
		str(f32, float32(0.001), "0.001"),
		str(f32, float32(9.999999e-4), "9.999999E-4"),
		str(connectors.BooleanSchema, true, "true"),
		str(connectors.Int64Schema, int64(-9), "-9"),
		str(connectors.BytesSchema, []byte{0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10}, "/ty6mHZUMhA="),
		str(xfDecimal("2"), xfRat("1.25"), "1.25"),
		str(xfDecimal("10"), xfRat("1e-10"), "1E-10"),
		str(xfDecimal("7"), xfRat("1e-7"), "1E-7"),
		str(xfDecimal("6"), xfRat("1e-6"), "0.000001"),
		str(xfDecimal("-2"), xfRat("1200"), "1.2E+3"),
		str(xfDecimal("-2"), xfRat("1250"), "1250"),
		str(xfDecimal("1"), xfRat("1.25"), "1.25"),
		str(xfDecimal("1"), big.NewRat(1, 3), "0.3"),
		str(xfDecimal("0"), big.NewRat(-5, 2), "-2.5"),
		str(xfDecimal("2"), new(big.Rat), "0.00"),
		str(xfDecimal("1"), xfRat("-0.5"), "-0.5"),
		str(xfDecimal("3"), xfRat("12345678901234567890.123"), "12345678901234567890.123"),
		str(xfDecimal("0"), xfRat("1982"), "1982"),
		// Dates format as Values.dateFormatFor: a time of day before the
		// second day of the epoch (the epoch's date included), a date at
		// midnight, a timestamp otherwise.
		str(xfDateSchema, time.UnixMilli(0).UTC(), "00:00:00.000Z"),
		str(xfDateSchema, time.UnixMilli(xfDay), "1970-01-02"),
		str(xfDateSchema, time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC), "2024-03-05"),
		str(xfTimeSchema, time.UnixMilli(3600000), "01:00:00.000Z"),
		str(xfTimestampSchema, time.UnixMilli(-xfDay*400+5), "00:00:00.005Z"),
		str(xfTimestampSchema, time.UnixMilli(253402300800000+1), "10000-01-01T00:00:00.001Z"),
		str(xfTimestampSchema, time.Date(2024, 3, 5, 13, 4, 5, 6e6, time.FixedZone("x", 3600)), "2024-03-05T12:04:05.006Z"),
	}
	xfRun(t, "Cast", cases, false)
}

// TestCastLogical: logical types cast to numbers through their encoding
// (castLogicalToPrimitive), with their checks.
func TestCastLogical(t *testing.T) {
	s := connectors.StructSchema("",
		xfField("date_to_int32", xfDateSchema),
		xfField("timestamp_to_int64", xfTimestampSchema),
		xfField("time_to_int64", xfTimeSchema),
		xfField("decimal_to_int32", xfDecimal("0")),
		xfField("timestamp_to_float64", xfTimestampSchema),
		xfField("null_timestamp_to_int32", xfTimestampSchema.Optionally()),
	)
	v := xfStruct(s, "date_to_int32", time.UnixMilli(xfDay).UTC(), "timestamp_to_int64", time.UnixMilli(0),
		"time_to_int64", time.UnixMilli(1), "decimal_to_int32", big.NewRat(math.MaxInt32+1, 1),
		"timestamp_to_float64", time.UnixMilli(math.MaxInt64))
	spec := "date_to_int32:int32,timestamp_to_int64:int64,time_to_int64:int64,decimal_to_int32:int32,timestamp_to_float64:float64,null_timestamp_to_int32:int32"
	wantSchema := connectors.StructSchema("",
		xfField("date_to_int32", connectors.Int32Schema),
		xfField("timestamp_to_int64", connectors.Int64Schema),
		xfField("time_to_int64", connectors.Int64Schema),
		xfField("decimal_to_int32", connectors.Int32Schema),
		xfField("timestamp_to_float64", connectors.Float64Schema),
		xfField("null_timestamp_to_int32", connectors.Int32Schema.Optionally()),
	)
	one := func(name string, fs *connectors.Schema, v any, spec string, want any, wantErr string) xfCase {
		s := connectors.StructSchema("", xfField("f", fs))
		return xfCase{name: name, props: xfProps("spec", "f:"+spec), schema: s, value: xfStruct(s, "f", v), wantErr: wantErr,
			check: func(t *testing.T, _ *connectors.Schema, got any) {
				if g := got.(*connectors.StructValue).Get("f"); g != want {
					t.Fatalf("got %#v, want %#v", g, want)
				}
			}}
	}
	cases := []xfCase{
		{name: "to primitives", props: xfProps("spec", spec), schema: s, value: v, wantSchema: wantSchema,
			want: xfStruct(wantSchema, "date_to_int32", int32(1), "timestamp_to_int64", int64(0), "time_to_int64", int64(1),
				"decimal_to_int32", int32(math.MinInt32), "timestamp_to_float64", 9.223372036854776e18)},
		one("date with a time", xfDateSchema, time.UnixMilli(5), "int32", nil, "Kafka Connect Date type should not have any time fields set to non-zero values."),
		one("time past a day", xfTimeSchema, time.UnixMilli(xfDay+1), "int32", nil, "Kafka Connect Time type should not have any date fields set to non-zero values."),
		one("time of a whole day", xfTimeSchema, time.UnixMilli(xfDay), "int32", int32(xfDay), ""),
		one("negative date", xfDateSchema, time.UnixMilli(-xfDay), "int64", int64(-1), ""),
		one("timestamp to boolean", xfTimestampSchema, time.UnixMilli(0), "boolean", false, ""),
		one("millis as a timestamp", xfTimestampSchema, int64(5), "int64", nil, "class java.lang.Long cannot be cast to class java.util.Date"),
	}
	xfRun(t, "Cast", cases, false)
}

// TestCastFields is castFieldsWithSchema and castFieldsSchemaless, with
// optional fields, defaults, a nested struct left alone and the fields the
// spec names but the value lacks.
func TestCastFields(t *testing.T) {
	nested := connectors.StructSchema("n", xfField("x", connectors.Int32Schema))
	s := connectors.StructSchema("rec",
		xfField("int8", connectors.Int8Schema),
		xfField("int16", connectors.Int16Schema.Optionally()),
		xfField("int32", &connectors.Schema{Type: connectors.Int32, Default: int32(2)}),
		xfField("int64", connectors.Int64Schema),
		xfField("float32", connectors.Float32Schema),
		xfField("float64", &connectors.Schema{Type: connectors.Float64, Default: -1.125}),
		xfField("boolean", connectors.BooleanSchema),
		xfField("string", connectors.StringSchema),
		xfField("bigdecimal", xfDecimal("0")),
		xfField("date", xfDateSchema),
		xfField("optional", connectors.Float32Schema.Optionally()),
		xfField("timestamp", xfTimestampSchema),
		xfField("bytes", connectors.BytesSchema),
		xfField("nested", nested),
	)
	v := xfStruct(s, "int8", int8(8), "int16", int16(16), "int32", int32(32), "int64", int64(64), "float32", float32(32),
		"float64", -64.0, "boolean", true, "string", "42", "bigdecimal", big.NewRat(42, 1), "date", time.UnixMilli(xfDay).UTC(),
		"timestamp", time.UnixMilli(0), "bytes", []byte{0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10}, "nested", xfStruct(nested, "x", int32(1)))
	spec := "int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,boolean:int8,string:int32,bigdecimal:string,date:string,optional:int32,bytes:string,missing:int8"
	ws := connectors.StructSchema("rec",
		xfField("int8", connectors.Int16Schema),
		xfField("int16", connectors.Int32Schema.Optionally()),
		xfField("int32", &connectors.Schema{Type: connectors.Int64, Default: int64(2)}),
		xfField("int64", connectors.BooleanSchema),
		xfField("float32", connectors.Float64Schema),
		xfField("float64", &connectors.Schema{Type: connectors.Boolean, Default: true}),
		xfField("boolean", connectors.Int8Schema),
		xfField("string", connectors.Int32Schema),
		xfField("bigdecimal", connectors.StringSchema),
		xfField("date", connectors.StringSchema),
		xfField("optional", connectors.Int32Schema.Optionally()),
		xfField("timestamp", xfTimestampSchema),
		xfField("bytes", connectors.StringSchema),
		xfField("nested", nested),
	)
	want := xfStruct(ws, "int8", int16(8), "int16", int32(16), "int32", int64(32), "int64", true, "float32", 32.0,
		"float64", true, "boolean", int8(1), "string", int32(42), "bigdecimal", "42", "date", "1970-01-02",
		"timestamp", time.UnixMilli(0), "bytes", "/ty6mHZUMhA=", "nested", v.Get("nested"))
	m := map[string]any{"int8": int8(8), "int16": int16(16), "int32": int32(32), "int64": int64(64), "float32": float32(32),
		"float64": -64.0, "boolean": true, "string": "42", "other": "x"}
	wantM := map[string]any{"int8": int16(8), "int16": int32(16), "int32": int64(32), "int64": true, "float32": 32.0,
		"float64": true, "boolean": int8(1), "string": int32(42), "other": "x", "bigdecimal": nil, "date": nil,
		"optional": nil, "bytes": nil, "missing": nil}
	xfRun(t, "Cast", []xfCase{
		{name: "with schema", props: xfProps("spec", spec), schema: s, value: v, wantSchema: ws, want: want},
		{name: "schemaless", props: xfProps("spec", spec), value: m, wantNoSchema: true, want: wantM},
		{name: "key with schema", props: xfProps("spec", "int8:int64"), schema: s, value: v,
			check: func(t *testing.T, s *connectors.Schema, v any) {
				if got := v.(*connectors.StructValue).Get("int8"); got != int64(8) {
					t.Fatalf("got %#v", got)
				}
			}},
	}, false)
	xfRun(t, "Cast", []xfCase{{name: "key schemaless", props: xfProps("spec", "a:string"), value: map[string]any{"a": int32(1)},
		want: map[string]any{"a": "1"}}}, true)
}

// TestCastNullFields: replace.null.with.default decides whether a null
// field with a default is cast from its default or stays null, and a
// null that its new schema does not allow is Connect's error.
func TestCastNullFields(t *testing.T) {
	opt := connectors.StructSchema("", xfField("magic", &connectors.Schema{Type: connectors.Int32, Optional: true, Default: int32(10)}))
	req := connectors.StructSchema("", xfField("a", &connectors.Schema{Type: connectors.Int32, Default: int32(5)}))
	unset := connectors.StructSchema("", xfField("a", connectors.Int32Schema), xfField("b", connectors.StringSchema))
	inner := connectors.StructSchema("", xfField("x", connectors.Int32Schema)).Optionally()
	outer := connectors.StructSchema("", xfField("n", inner))
	magic := func(want any) func(*testing.T, *connectors.Schema, any) {
		return func(t *testing.T, s *connectors.Schema, v any) {
			if _, fs := s.Field("magic"); fs.Type != connectors.String || fs.Default != "10" {
				t.Fatalf("schema %s", xfShowSchema(fs))
			}
			if got := v.(*connectors.StructValue).Get("magic"); got != want {
				t.Fatalf("got %#v, want %#v", got, want)
			}
		}
	}
	withDefault := xfProps("spec", "magic:string")
	withoutDefault := xfProps("spec", "magic:string", "replace.null.with.default", "false")
	xfRun(t, "Cast", []xfCase{
		{name: "optional, default replaces null", props: withDefault, schema: opt, value: connectors.NewStruct(opt), check: magic("10")},
		{name: "optional, null kept", props: withoutDefault, schema: opt, value: connectors.NewStruct(opt), check: magic(nil)},
		{name: "required, default replaces null", props: xfProps("spec", "a:string"), schema: req, value: connectors.NewStruct(req),
			check: func(t *testing.T, _ *connectors.Schema, v any) {
				if got := v.(*connectors.StructValue).Get("a"); got != "5" {
					t.Fatalf("got %#v", got)
				}
			}},
		{name: "required, null kept", props: xfProps("spec", "a:string", "replace.null.with.default", "false"), schema: req, value: connectors.NewStruct(req),
			wantErr: `Invalid value: null used for required field: "a", schema type: STRING`},
		{name: "required field unset", props: xfProps("spec", "a:string"), schema: unset, value: xfStruct(unset, "a", int32(1)),
			wantErr: `Invalid value: null used for required field: "b", schema type: STRING`},
		{name: "struct field", props: xfProps("spec", "n:int8"), schema: outer, value: xfStruct(outer, "n", xfStruct(inner, "x", int32(1))),
			wantErr: "Cast transformation does not support casting from STRUCT; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]"},
		{name: "null struct field", props: xfProps("spec", "n:int8"), schema: outer, value: connectors.NewStruct(outer),
			want: connectors.NewStruct(connectors.StructSchema("", xfField("n", connectors.Int8Schema.Optionally())))},
		{name: "field spec on a non-struct schema", props: xfProps("spec", "a:int8"), schema: connectors.Int32Schema, value: int32(5),
			wantErr: "Cannot list fields on non-struct type"},
		{name: "field spec on a non-struct value", props: xfProps("spec", "a:int8"), schema: req, value: int32(5),
			wantErr: "Only Struct objects supported for [cast types], found: java.lang.Integer"},
		{name: "schemaless non-map", props: xfProps("spec", "a:int8"), value: "x",
			wantErr: "Only Map objects supported in absence of schema for [cast types], found: java.lang.String"},
	}, false)
}

// TestCastStructDefault: a struct schema with a default cannot have its
// fields cast, for Connect casts the default as a whole.
func TestCastStructDefault(t *testing.T) {
	s := connectors.StructSchema("", xfField("a", connectors.Int32Schema))
	s.Default = xfStruct(connectors.StructSchema("", xfField("a", connectors.Int32Schema)), "a", int32(1))
	xfRun(t, "Cast", []xfCase{{name: "struct default", props: xfProps("spec", "a:int8"), schema: s, value: xfStruct(s, "a", int32(2)),
		wantErr: "Cast transformation does not support casting from STRUCT; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]"}}, false)
}

// TestCastCachesSchemas: records of one schema get one derived schema.
func TestCastCachesSchemas(t *testing.T) {
	s := connectors.StructSchema("", xfField("a", connectors.Int32Schema))
	x := xfNew(t, "Cast$Value", xfProps("spec", "a:int64"))
	var seen *connectors.Schema
	for i := 0; i < 3; i++ {
		out, err := x.Apply(&connectors.Record{ValueSchema: s, Value: xfStruct(s, "a", int32(i))})
		if err != nil {
			t.Fatal(err)
		}
		if seen != nil && out.ValueSchema != seen {
			t.Fatal("schema derived again")
		}
		seen = out.ValueSchema
		if out.Value.(*connectors.StructValue).Schema != seen {
			t.Fatal("value's schema is not the record's")
		}
	}
}

func TestJavaDigit(t *testing.T) {
	for r, want := range map[rune]int{'0': 0, '9': 9, '٣': 3, '९': 9, '０': 0, '９': 9} {
		if d, ok := javaDigit(r); !ok || d != want {
			t.Errorf("javaDigit(%q) = %d %v", r, d, ok)
		}
	}
	for _, r := range []rune{'a', '½', 0x1D7CE} { // letter, fraction, beyond the BMP
		if _, ok := javaDigit(r); ok {
			t.Errorf("javaDigit(%q) accepted", r)
		}
	}
}
