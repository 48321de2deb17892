package transforms

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// The instants of Connect's TimestampConverterTest.
var (
	tsEpoch          = time.UnixMilli(0).UTC()
	tsTime           = time.UnixMilli(1234).UTC()
	tsDate           = time.UnixMilli(86400000).UTC()
	tsDatePlusTime   = time.UnixMilli(86401234).UTC()
	tsDatePlusTimeMs = int64(86401234)
)

const (
	tsFormat = "yyyy MM dd HH mm ss SSS z"
	tsString = "1970 01 02 00 00 01 234 UTC"
)

func tsConverter(t *testing.T, props map[string]string) func(*connectors.Record) (*connectors.Record, error) {
	c := configured(t, "TimestampConverter$Value", props)
	return func(r *connectors.Record) (*connectors.Record, error) { return applyOne(c, r) }
}

func TestTimestampConverterConfig(t *testing.T) {
	cases := []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{}, `Missing required configuration "transforms.x.target.type"`},
		{map[string]string{"target.type": "invalid"}, "String must be one of: string, unix, Date, Time, Timestamp"},
		{map[string]string{"target.type": "unix", "unix.precision": "invalid"}, "String must be one of: nanoseconds, microseconds, milliseconds, seconds"},
		{map[string]string{"target.type": "unix", "unix.precision": "seconds"}, ""},
		{map[string]string{"target.type": "string"}, "TimestampConverter requires format option to be specified when using string timestamps"},
		{map[string]string{"target.type": "string", "format": "  "}, "requires format option"},
		{map[string]string{"target.type": "string", "format": "bad-format"}, "transforms.x.format: Invalid value bad-format for configuration format: TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: bad-format (Illegal pattern character 'b')"},
		{map[string]string{"target.type": "Timestamp", "format": "'unterminated"}, "Unterminated quote"},
		{map[string]string{"target.type": "Timestamp", "format": "XXXX"}, "invalid ISO 8601 format: length=4"},
		{map[string]string{"target.type": "Timestamp", "format": "YYYY-ww"}, "week-based"},
		{map[string]string{"target.type": "string", "format": "YYYY-ww"}, ""},
		{map[string]string{"target.type": "date"}, "String must be one of"},
	}
	for _, c := range cases {
		_, err := chainOf("TimestampConverter$Value", c.props)
		wantErr(t, err, c.want)
	}
}

func TestTimestampConverterSchemaless(t *testing.T) {
	cases := []struct {
		name  string
		props map[string]string
		in    any
		want  any
	}{
		{"identity", map[string]string{"target.type": "Timestamp"}, tsDatePlusTime, tsDatePlusTime},
		{"timestamp to Date", map[string]string{"target.type": "Date"}, tsDatePlusTime, tsDate},
		{"timestamp to Time", map[string]string{"target.type": "Time"}, tsDatePlusTime, tsTime},
		{"timestamp to unix", map[string]string{"target.type": "unix"}, tsDatePlusTime, tsDatePlusTimeMs},
		{"timestamp to string", map[string]string{"target.type": "string", "format": tsFormat}, tsDatePlusTime, tsString},
		{"Date to timestamp", map[string]string{"target.type": "Timestamp"}, tsDate, tsDate},
		{"Time to timestamp", map[string]string{"target.type": "Timestamp"}, tsTime, tsTime},
		{"unix to timestamp", map[string]string{"target.type": "Timestamp"}, tsDatePlusTimeMs, tsDatePlusTime},
		{"string to timestamp", map[string]string{"target.type": "Timestamp", "format": tsFormat}, tsString, tsDatePlusTime},
		{"string to unix micros", map[string]string{"target.type": "unix", "unix.precision": "microseconds", "format": tsFormat}, tsString, int64(86401234000)},
		{"string to unix nanos", map[string]string{"target.type": "unix", "unix.precision": "nanoseconds", "format": tsFormat}, tsString, int64(86401234000000)},
		{"string to unix seconds", map[string]string{"target.type": "unix", "unix.precision": "seconds", "format": tsFormat}, tsString, int64(86401)},
		{"null", map[string]string{"target.type": "string", "format": tsFormat}, nil, nil},
		{"null with field", map[string]string{"target.type": "Date", "field": "ts"}, nil, nil},
		{"field", map[string]string{"target.type": "Date", "field": "ts"}, map[string]any{"ts": tsDatePlusTime, "x": 1}, map[string]any{"ts": tsDate, "x": 1}},
		{"absent field is added as null", map[string]string{"target.type": "Date", "field": "ts"}, map[string]any{}, map[string]any{"ts": nil}},
		// Before the epoch: Date and Time round toward the past, seconds
		// truncate toward zero as TimeUnit does.
		{"negative to Date", map[string]string{"target.type": "Date"}, time.UnixMilli(-1).UTC(), time.UnixMilli(-86400000).UTC()},
		{"negative to Time", map[string]string{"target.type": "Time"}, time.UnixMilli(-1).UTC(), time.UnixMilli(86399999).UTC()},
		{"negative to seconds", map[string]string{"target.type": "unix", "unix.precision": "seconds"}, time.UnixMilli(-1500).UTC(), int64(-1)},
		{"negative micros", map[string]string{"target.type": "unix", "unix.precision": "microseconds"}, int64(-1999), int64(-1000)},
		{"saturating seconds", map[string]string{"target.type": "unix", "unix.precision": "seconds"}, int64(1 << 62), int64(math.MaxInt64 / 1000)},
		{"string to string", map[string]string{"target.type": "string", "format": "yyyy-MM-dd"}, "2020-13-01", "2021-01-01"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := tsConverter(t, c.props)(sourceRecord(nil, c.in))
			wantErr(t, err, "")
			if out.ValueSchema != nil || !valuesEqual(out.Value, c.want) {
				t.Fatalf("got %v (%T), want %v", out.Value, out.Value, c.want)
			}
		})
	}
	k := configured(t, "TimestampConverter$Key", map[string]string{"target.type": "Timestamp"})
	out, err := applyOne(k, &connectors.Record{Topic: "topic", Key: tsDatePlusTime})
	wantErr(t, err, "")
	if out.Key != tsDatePlusTime || out.KeySchema != nil {
		t.Fatalf("key %v", out.Key)
	}
}

func TestTimestampConverterWithSchema(t *testing.T) {
	cases := []struct {
		name       string
		props      map[string]string
		schema     *connectors.Schema
		in         any
		wantSchema *connectors.Schema
		want       any
	}{
		{"identity", map[string]string{"target.type": "Timestamp"}, timestampSchema, tsDatePlusTime, timestampSchema, tsDatePlusTime},
		{"timestamp to Date", map[string]string{"target.type": "Date"}, timestampSchema, tsDatePlusTime, dateSchema, tsDate},
		{"timestamp to Time", map[string]string{"target.type": "Time"}, timestampSchema, tsDatePlusTime, timeSchema, tsTime},
		{"timestamp to unix", map[string]string{"target.type": "unix"}, timestampSchema, tsDatePlusTime, connectors.Int64Schema, tsDatePlusTimeMs},
		{"timestamp to string", map[string]string{"target.type": "string", "format": tsFormat}, timestampSchema, tsDatePlusTime, connectors.StringSchema, tsString},
		{"Date to timestamp", map[string]string{"target.type": "Timestamp"}, dateSchema, tsDate, timestampSchema, tsDate},
		{"Time to timestamp", map[string]string{"target.type": "Timestamp"}, timeSchema, tsTime, timestampSchema, tsTime},
		{"unix to timestamp", map[string]string{"target.type": "Timestamp"}, connectors.Int64Schema, tsDatePlusTimeMs, timestampSchema, tsDatePlusTime},
		{"string to timestamp", map[string]string{"target.type": "Timestamp", "format": tsFormat}, connectors.StringSchema, tsString, timestampSchema, tsDatePlusTime},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := tsConverter(t, c.props)(sourceRecord(c.schema, c.in))
			wantErr(t, err, "")
			if !schemasEqual(out.ValueSchema, c.wantSchema) || !valuesEqual(out.Value, c.want) {
				t.Fatalf("got %v %+v, want %v %+v", out.Value, out.ValueSchema, c.want, c.wantSchema)
			}
		})
	}
}

// Connect's testWithSchemaNull{Value,Field}Conversion: a null converts to
// null with the target's optional schema, whatever the source type.
func TestTimestampConverterNulls(t *testing.T) {
	sources := []*connectors.Schema{connectors.OptionalInt64Schema, optionalTimeSchema, optionalDateSchema, connectors.OptionalStringSchema, optionalTimestampSchema}
	for _, target := range []string{"Timestamp", "unix", "Time", "Date", "string"} {
		props := map[string]string{"target.type": target, "format": tsFormat}
		want := typeSchema(target, true)
		for _, src := range sources {
			out, err := tsConverter(t, props)(sourceRecord(src, nil))
			wantErr(t, err, "")
			if out.Value != nil || !schemasEqual(out.ValueSchema, want) {
				t.Fatalf("%s from %+v: %v %+v", target, src, out.Value, out.ValueSchema)
			}
			props["field"] = "ts"
			s := connectors.StructSchema("", connectors.Field{Name: "ts", Schema: src}, connectors.Field{Name: "other", Schema: connectors.StringSchema})
			wantStruct := connectors.StructSchema("", connectors.Field{Name: "ts", Schema: want}, connectors.Field{Name: "other", Schema: connectors.StringSchema})
			out, err = tsConverter(t, props)(sourceRecord(s, connectors.NewStruct(s).MustSet("other", "test")))
			wantErr(t, err, "")
			if !schemasEqual(out.ValueSchema, wantStruct) || out.Value.(*connectors.StructValue).Get("ts") != nil {
				t.Fatalf("field %s from %+v: %+v", target, src, out.ValueSchema)
			}
			optional := *s
			optional.Optional = true
			wantOptional := *wantStruct
			wantOptional.Optional = true
			out, err = tsConverter(t, props)(sourceRecord(&optional, nil))
			wantErr(t, err, "")
			if !schemasEqual(out.ValueSchema, &wantOptional) || out.Value != nil {
				t.Fatalf("null struct %s from %+v: %+v", target, src, out.ValueSchema)
			}
			delete(props, "field")
		}
	}
}

func TestTimestampConverterFields(t *testing.T) {
	s := connectors.StructSchema("", connectors.Field{Name: "ts", Schema: connectors.Int64Schema}, connectors.Field{Name: "other", Schema: connectors.StringSchema})
	want := connectors.StructSchema("", connectors.Field{Name: "ts", Schema: timestampSchema}, connectors.Field{Name: "other", Schema: connectors.StringSchema})
	for _, c := range []struct {
		precision string
		in        int64
		want      time.Time
	}{
		{"milliseconds", tsDatePlusTimeMs, tsDatePlusTime},
		{"microseconds", tsDatePlusTimeMs*1000 + 123, tsDatePlusTime},
		{"nanoseconds", tsDatePlusTimeMs*1000000 + 123456, tsDatePlusTime},
		{"seconds", 86401, time.UnixMilli(86401000).UTC()},
	} {
		conv := tsConverter(t, map[string]string{"target.type": "Timestamp", "field": "ts", "unix.precision": c.precision})
		in := connectors.NewStruct(s).MustSet("ts", c.in).MustSet("other", "test")
		out, err := conv(sourceRecord(s, in))
		wantErr(t, err, "")
		v := out.Value.(*connectors.StructValue)
		if !schemasEqual(out.ValueSchema, want) || !valuesEqual(v.Values, []any{c.want, "test"}) {
			t.Fatalf("%s: %v %+v", c.precision, v.Values, out.ValueSchema)
		}
		if in.Get("ts") != c.in {
			t.Fatal("the input struct was modified")
		}
		out2, _ := conv(sourceRecord(s, in))
		if out2.ValueSchema != out.ValueSchema {
			t.Fatal("the derived schema was not reused")
		}
	}
}

// Connect's testWithSchemaNullFieldWithDefaultConversion and its
// replace.null.with.default counterpart; the struct's default converts too.
func TestTimestampConverterDefaults(t *testing.T) {
	tsField := &connectors.Schema{Type: connectors.Int64, Optional: true, Default: int64(0)}
	s := connectors.StructSchema("", connectors.Field{Name: "ts", Schema: tsField}, connectors.Field{Name: "other", Schema: connectors.StringSchema})
	for _, c := range []struct {
		replace string
		want    any
	}{{"false", nil}, {"true", tsEpoch}} {
		conv := tsConverter(t, map[string]string{"target.type": "Timestamp", "field": "ts", "replace.null.with.default": c.replace})
		out, err := conv(sourceRecord(s, connectors.NewStruct(s).MustSet("other", "test")))
		wantErr(t, err, "")
		if got := out.Value.(*connectors.StructValue).Get("ts"); !valuesEqual(got, c.want) {
			t.Errorf("replace=%s: %v, want %v", c.replace, got, c.want)
		}
		if f := out.ValueSchema.Fields[0].Schema; !schemasEqual(f, optionalTimestampSchema) {
			t.Errorf("field schema %+v", f)
		}
	}
	withDefault := *s
	withDefault.Optional = true
	withDefault.Default = connectors.NewStruct(s).MustSet("ts", int64(5)).MustSet("other", "d")
	out, err := tsConverter(t, map[string]string{"target.type": "Timestamp", "field": "ts"})(sourceRecord(&withDefault, nil))
	wantErr(t, err, "")
	d := out.ValueSchema.Default.(*connectors.StructValue)
	if !out.ValueSchema.Optional || d.Schema != out.ValueSchema || !valuesEqual(d.Values, []any{time.UnixMilli(5).UTC(), "d"}) {
		t.Fatalf("default %v", d.Values)
	}
}

func TestTimestampConverterErrors(t *testing.T) {
	s := connectors.StructSchema("", connectors.Field{Name: "ts", Schema: connectors.Int32Schema})
	req := connectors.StructSchema("", connectors.Field{Name: "ts", Schema: &connectors.Schema{Type: connectors.Int64, Default: int64(1)}})
	cases := []struct {
		name  string
		props map[string]string
		r     *connectors.Record
		want  string
	}{
		{"not a timestamp schema", map[string]string{"target.type": "unix"}, sourceRecord(connectors.Int32Schema, int32(1)),
			"Schema Schema{INT32} does not correspond to a known timestamp type format"},
		{"not a timestamp schema, null", map[string]string{"target.type": "unix"}, sourceRecord(connectors.OptionalBytesSchema, nil),
			"Schema Schema{BYTES} does not correspond"},
		{"not a timestamp field", map[string]string{"target.type": "unix", "field": "ts"}, sourceRecord(s, connectors.NewStruct(s)),
			"does not correspond to a known timestamp type format"},
		{"unsupported value", map[string]string{"target.type": "unix"}, sourceRecord(nil, int32(5)),
			"TimestampConverter does not support class java.lang.Integer objects as timestamps"},
		{"unparseable", map[string]string{"target.type": "unix", "format": "yyyy-MM-dd"}, sourceRecord(nil, "nope"),
			"Could not parse timestamp: value (nope) does not match pattern (yyyy-MM-dd)"},
		{"string without format", map[string]string{"target.type": "unix"}, sourceRecord(nil, "2020"), "config.format"},
		{"long schema with an int", map[string]string{"target.type": "Date"}, sourceRecord(connectors.Int64Schema, int32(5)),
			"Expected Unix timestamp to be a Long, but found class java.lang.Integer"},
		{"string schema with a long", map[string]string{"target.type": "Date", "format": "yyyy"}, sourceRecord(connectors.StringSchema, int64(5)),
			"Expected string timestamp to be a String, but found class java.lang.Long"},
		{"Date schema with a long", map[string]string{"target.type": "unix"}, sourceRecord(dateSchema, int64(5)),
			"Expected Date to be a java.util.Date, but found class java.lang.Long"},
		{"not a map", map[string]string{"target.type": "unix", "field": "ts"}, sourceRecord(nil, "x"),
			"Only Map objects supported in absence of schema for [converting timestamp formats], found: java.lang.String"},
		{"not a struct", map[string]string{"target.type": "unix", "field": "ts"}, sourceRecord(connectors.Int64Schema, int64(1)),
			"Only Struct objects supported for [converting timestamp formats], found: java.lang.Long"},
		{"field on a non-struct schema", map[string]string{"target.type": "unix", "field": "ts"}, sourceRecord(connectors.OptionalInt64Schema, nil),
			"Cannot list fields on non-struct type"},
		{"null kept in a field made required", map[string]string{"target.type": "unix", "field": "ts", "replace.null.with.default": "false"},
			sourceRecord(req, connectors.NewStruct(req)), `Invalid value: null used for required field: "ts", schema type: INT64`},
		{"week letters cannot be parsed", map[string]string{"target.type": "string", "format": "YYYY ww"}, sourceRecord(nil, "2020 01"), "week-based"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tsConverter(t, c.props)(c.r)
			wantErr(t, err, c.want)
		})
	}
	out, err := tsConverter(t, map[string]string{"target.type": "string", "format": "YYYY ww"})(sourceRecord(nil, tsDate))
	wantErr(t, err, "")
	if !reflect.DeepEqual(out.Value, "1970 01") {
		t.Fatalf("week format %v", out.Value)
	}
}
