package transforms

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// TimestampConverter$Key and TimestampConverter$Value: Connect's
// TimestampConverter, which converts a timestamp (the whole key or value,
// or one field of a struct or map) between a formatted string, Unix time
// (a long, in unix.precision), and Connect's Date, Time and Timestamp.
// Everything is in UTC; conversions go through milliseconds, as Java's
// java.util.Date does, so sub-millisecond precision is lost.
//
// format is a Java SimpleDateFormat pattern (simpledateformat.go). The
// week-based letters Y, w, W and F cannot be parsed here: with them a
// format is refused unless target.type is string, and then only parsing a
// string fails.
var _ = addKeyValue("TimestampConverter", func(p part) connectors.Transform { return &timestampConverter{part: p} })

const (
	tsTypeString    = "string"
	tsTypeUnix      = "unix"
	tsTypeDate      = "Date"
	tsTypeTime      = "Time"
	tsTypeTimestamp = "Timestamp"
	tsPurpose       = "converting timestamp formats"
)

var (
	dateSchema         = &connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical, Version: 1}
	optionalDateSchema = &connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical, Version: 1, Optional: true}
	timeSchema         = &connectors.Schema{Type: connectors.Int32, Name: connectors.TimeLogical, Version: 1}
	optionalTimeSchema = &connectors.Schema{Type: connectors.Int32, Name: connectors.TimeLogical, Version: 1, Optional: true}
)

// validString is ConfigDef.ValidString: one of the values, case-sensitive.
func validString(values ...string) func(string) error {
	return func(v string) error {
		for _, a := range values {
			if javaTrim(v) == a {
				return nil
			}
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(values, ", "))
	}
}

func timestampConverterConfig() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: "field", Type: connectors.TypeString, Importance: connectors.High,
			Doc: "The field containing the timestamp, or empty if the entire value is a timestamp"}).
		Define(connectors.ConfigKey{Name: "target.type", Type: connectors.TypeString, Required: true, Importance: connectors.High,
			Doc:      "The desired timestamp representation: string, unix, Date, Time, or Timestamp",
			Validate: validString(tsTypeString, tsTypeUnix, tsTypeDate, tsTypeTime, tsTypeTimestamp)}).
		Define(connectors.ConfigKey{Name: "format", Type: connectors.TypeString, Importance: connectors.Medium,
			Doc: "A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when type=string or used to parse the input if the input is a string."}).
		Define(connectors.ConfigKey{Name: "unix.precision", Type: connectors.TypeString, Default: "milliseconds", Importance: connectors.Low,
			Doc: "The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or nanoseconds. " +
				"Used to generate the output when type=unix or used to parse the input if the input is a Long." +
				"Note: This SMT will cause precision loss during conversions from, and to, values with sub-millisecond components.",
			Validate: validString("nanoseconds", "microseconds", "milliseconds", "seconds")}).
		Define(replaceNullKey())
}

type timestampConverter struct {
	part
	field, target, precision string
	format                   *javaDateFormat // nil when format is blank
	replaceNullWithDefault   bool
	cache                    schemaCache
}

func (t *timestampConverter) Config() *connectors.ConfigDef { return timestampConverterConfig() }

func (t *timestampConverter) Configure(props map[string]string) error {
	t.field, _ = configString(props, "field")
	t.target, _ = configString(props, "target.type")
	pattern, _ := configString(props, "format")
	var ok bool
	if t.precision, ok = configString(props, "unix.precision"); !ok {
		t.precision = "milliseconds"
	}
	t.replaceNullWithDefault = configBool(props, "replace.null.with.default", true)
	if t.target == tsTypeString && pattern == "" {
		return errors.New("TimestampConverter requires format option to be specified when using string timestamps")
	}
	t.format = nil
	if pattern != "" {
		f, err := compileJavaDateFormat(pattern, time.Now())
		if err != nil {
			return keyError("format", pattern, fmt.Sprintf("TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: %s (%v)", pattern, err))
		}
		if f.noParse != "" && t.target != tsTypeString {
			return keyError("format", pattern, fmt.Sprintf("the pattern letter '%s' (week-based) can only be formatted, not parsed, here; with target.type=%s the format only parses", f.noParse, t.target))
		}
		t.format = f
	}
	return nil
}

func (t *timestampConverter) Apply(r *connectors.Record) (*connectors.Record, error) {
	if t.schema(r) == nil {
		return t.applySchemaless(r)
	}
	return t.applyWithSchema(r)
}

func (t *timestampConverter) applySchemaless(r *connectors.Record) (*connectors.Record, error) {
	raw := t.value(r)
	if raw == nil || t.field == "" {
		v, err := t.convert(raw, "")
		if err != nil {
			return nil, err
		}
		return t.with(r, nil, v), nil
	}
	m, err := requireMap(raw, tsPurpose)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	if out[t.field], err = t.convert(m[t.field], ""); err != nil {
		return nil, err
	}
	return t.with(r, nil, out), nil
}

func (t *timestampConverter) applyWithSchema(r *connectors.Record) (*connectors.Record, error) {
	schema := t.schema(r)
	if t.field == "" {
		from, err := timestampTypeOf(schema)
		if err != nil {
			return nil, err
		}
		v, err := t.convert(t.value(r), from)
		if err != nil {
			return nil, err
		}
		return t.with(r, typeSchema(t.target, schema.Optional), v), nil
	}
	var value *connectors.StructValue
	if raw := t.value(r); raw != nil {
		var err error
		if value, err = requireStruct(raw, tsPurpose); err != nil {
			return nil, err
		}
	}
	updated := t.cache.get(schema)
	if updated == nil {
		var err error
		if updated, err = t.updatedSchema(schema); err != nil {
			return nil, err
		}
		t.cache.put(schema, updated)
	}
	if value == nil {
		return t.with(r, updated, nil), nil
	}
	out, err := t.convertStruct(value, updated)
	if err != nil {
		return nil, err
	}
	return t.with(r, updated, out), nil
}

// updatedSchema is the struct schema with the field's schema replaced by
// the target type's, keeping the struct's optionality and converting its
// default.
func (t *timestampConverter) updatedSchema(schema *connectors.Schema) (*connectors.Schema, error) {
	if schema.Type != connectors.Struct {
		return nil, errors.New("Cannot list fields on non-struct type")
	}
	b := newStructBuilder(schema)
	for _, f := range schema.Fields {
		fs := f.Schema
		if f.Name == t.field {
			fs = typeSchema(t.target, f.Schema.Optional)
		}
		if err := b.field(f.Name, fs); err != nil {
			return nil, err
		}
	}
	b.s.Optional = schema.Optional
	if schema.Default != nil {
		d, ok := schema.Default.(*connectors.StructValue)
		if !ok {
			return nil, fmt.Errorf("Invalid default value")
		}
		converted, err := t.convertStruct(d, b.s)
		if err != nil {
			return nil, err
		}
		b.s.Default = converted
	}
	return b.s, nil
}

// convertStruct copies value into a struct of the updated schema,
// converting the configured field.
func (t *timestampConverter) convertStruct(value *connectors.StructValue, updated *connectors.Schema) (*connectors.StructValue, error) {
	if value == nil {
		return nil, nil
	}
	out := connectors.NewStruct(updated)
	for i, f := range value.Schema.Fields {
		v := fieldValue(value, i, t.replaceNullWithDefault)
		if f.Name == t.field {
			from, err := timestampTypeOf(f.Schema)
			if err != nil {
				return nil, err
			}
			if v, err = t.convert(v, from); err != nil {
				return nil, err
			}
		}
		j, _ := updated.Field(f.Name)
		if j < 0 {
			return nil, &missingFieldError{f.Name}
		}
		if err := putField(out, j, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// typeSchema is the schema of a target type.
func typeSchema(target string, optional bool) *connectors.Schema {
	pick := func(opt, req *connectors.Schema) *connectors.Schema {
		if optional {
			return opt
		}
		return req
	}
	switch target {
	case tsTypeString:
		return pick(connectors.OptionalStringSchema, connectors.StringSchema)
	case tsTypeUnix:
		return pick(connectors.OptionalInt64Schema, connectors.Int64Schema)
	case tsTypeDate:
		return pick(optionalDateSchema, dateSchema)
	case tsTypeTime:
		return pick(optionalTimeSchema, timeSchema)
	}
	return pick(optionalTimestampSchema, timestampSchema)
}

// timestampTypeOf is the type a schema holds a timestamp as.
func timestampTypeOf(s *connectors.Schema) (string, error) {
	switch {
	case s.Name == connectors.TimestampLogical:
		return tsTypeTimestamp, nil
	case s.Name == connectors.DateLogical:
		return tsTypeDate, nil
	case s.Name == connectors.TimeLogical:
		return tsTypeTime, nil
	case s.Type == connectors.String:
		return tsTypeString, nil
	case s.Type == connectors.Int64:
		return tsTypeUnix, nil
	}
	return "", fmt.Errorf("Schema %s does not correspond to a known timestamp type format", schemaString(s))
}

// schemaString is ConnectSchema.toString.
func schemaString(s *connectors.Schema) string {
	if s.Name != "" {
		return "Schema{" + s.Name + ":" + typeName(s.Type) + "}"
	}
	return "Schema{" + typeName(s.Type) + "}"
}

// convert converts a timestamp of type from ("" to infer it from the Go
// value) to the target type, through a UTC instant.
func (t *timestampConverter) convert(v any, from string) (any, error) {
	if v == nil {
		return nil, nil
	}
	if from == "" {
		switch v.(type) {
		case time.Time:
			from = tsTypeTimestamp
		case int64:
			from = tsTypeUnix
		case string:
			from = tsTypeString
		default:
			return nil, fmt.Errorf("TimestampConverter does not support %s objects as timestamps", javaClass(v))
		}
	}
	raw, err := t.toRaw(v, from)
	if err != nil {
		return nil, err
	}
	return t.toType(raw)
}

// toRaw reads a timestamp of type from as an instant.
func (t *timestampConverter) toRaw(v any, from string) (time.Time, error) {
	switch from {
	case tsTypeString:
		s, ok := v.(string)
		if !ok {
			return time.Time{}, fmt.Errorf("Expected string timestamp to be a String, but found %s", javaClass(v))
		}
		return t.parse(s)
	case tsTypeUnix:
		n, ok := v.(int64)
		if !ok {
			return time.Time{}, fmt.Errorf("Expected Unix timestamp to be a Long, but found %s", javaClass(v))
		}
		return time.UnixMilli(unixToMillis(n, t.precision)).UTC(), nil
	}
	d, ok := v.(time.Time)
	if !ok {
		return time.Time{}, fmt.Errorf("Expected %s to be a java.util.Date, but found %s", from, javaClass(v))
	}
	return d, nil
}

func (t *timestampConverter) parse(s string) (time.Time, error) {
	if t.format == nil {
		return time.Time{}, errors.New(`Cannot invoke "java.text.SimpleDateFormat.parse(String)" because "config.format" is null`)
	}
	if t.format.noParse != "" {
		return time.Time{}, fmt.Errorf("Could not parse timestamp: value (%s): the pattern (%s) has the week-based letter '%s', which this port can format but not parse", s, t.format.pattern, t.format.noParse)
	}
	ms, ok := t.format.parse(s)
	if !ok {
		return time.Time{}, fmt.Errorf("Could not parse timestamp: value (%s) does not match pattern (%s)", s, t.format.pattern)
	}
	return time.UnixMilli(ms).UTC(), nil
}

// toType writes an instant as the target type.
func (t *timestampConverter) toType(d time.Time) (any, error) {
	ms := d.UnixMilli()
	switch t.target {
	case tsTypeString:
		return t.format.format(ms), nil
	case tsTypeUnix:
		return millisToUnix(ms, t.precision), nil
	case tsTypeDate:
		return time.UnixMilli(floorDiv(ms, millisPerDay) * millisPerDay).UTC(), nil
	case tsTypeTime:
		return time.UnixMilli(floorMod(ms, millisPerDay)).UTC(), nil
	}
	return d, nil
}

// unixToMillis is TimeUnit's toMillis: seconds saturate, smaller units
// truncate toward zero.
func unixToMillis(n int64, precision string) int64 {
	switch precision {
	case "seconds":
		return saturatingMul(n, 1000)
	case "microseconds":
		return n / 1000
	case "nanoseconds":
		return n / 1000000
	}
	return n
}

// millisToUnix is TimeUnit.MILLISECONDS' toSeconds, toMicros, toNanos.
func millisToUnix(ms int64, precision string) int64 {
	switch precision {
	case "seconds":
		return ms / 1000
	case "microseconds":
		return saturatingMul(ms, 1000)
	case "nanoseconds":
		return saturatingMul(ms, 1000000)
	}
	return ms
}

func saturatingMul(n, by int64) int64 {
	switch {
	case n > math.MaxInt64/by:
		return math.MaxInt64
	case n < math.MinInt64/by:
		return math.MinInt64
	}
	return n * by
}

func (t *timestampConverter) Close() error { return nil }
