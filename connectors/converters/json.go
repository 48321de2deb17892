package converters

import (
	"encoding/base64"
	"fmt"
	"math/big"
	"math/bits"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sluice-io/sluice/connectors"
)

// JSONConverter mirrors org.apache.kafka.connect.json.JsonConverter.
//
// With schemas.enable=true (the default) a value is written as Connect's
// envelope {"schema":<schema>,"payload":<value>} and read back with its
// schema; with false it is plain JSON, and ToConnect returns a nil schema
// with map[string]any, []any, string, bool, nil, int64 (integer literals)
// and float64 (every other number).
//
// Output is byte-identical to Connect's (Jackson's) for the same data, with
// three unavoidable exceptions, all about Go maps having no order: map
// entries and schema parameters are written with keys sorted (Connect
// follows Java's hash order; a Decimal's "scale" parameter still comes
// first, as in Connect), and a value's map is map[string]any, so a map whose
// key schema is not string has its keys rendered as strings: the key's JSON
// text, without the quotes when it is a JSON string (an int32 key 5 is "5",
// a bytes key is its base64). FromConnect parses such keys back with the key
// schema and writes Connect's array of [key, value] pairs.
//
// Go values per schema type are those of connectors.Schema; logical types:
// Timestamp, Date and Time are time.Time (UTC on read), Decimal is *big.Rat
// (written at the schema's scale, either as base64 of the big-endian
// two's-complement unscaled value or, with decimal.format=NUMERIC, as a
// JSON number). A Schema's Version 0 means it has none.
type JSONConverter struct {
	schemasEnabled bool
	numericDecimal bool
	replaceNull    bool

	fromCache *boundedCache[*connectors.Schema, []byte]
	toCache   *boundedCache[string, *connectors.Schema]
	// plans are how structs of a schema are written (structPlan), by
	// schema; lastPlan is the one used last, which most connectors use
	// for every value.
	plans    *boundedCache[*connectors.Schema, *structPlan]
	lastPlan atomic.Pointer[structPlan]
	// lastHead is the envelope head ToConnect read last (its bytes up to
	// the payload's value) with its schema: a topic's records usually all
	// carry the same one (envelopeInOrder).
	lastHead atomic.Pointer[rawSchema]
	// lastFrom is the schema FromConnect rendered last, with its bytes.
	lastFrom atomic.Pointer[rawSchema]

	// sizeHint is the length of the last output too large for a scratch
	// buffer, so that the next such buffer is allocated once at about its
	// size.
	sizeHint atomic.Int64
}

// scratchBuffers are the buffers FromConnect writes into before it copies
// the output into one of the output's own length: one allocation per
// record, sized exactly, with no capacity to guess. A sync.Pool rather
// than a buffer per converter: its fast path is per P without an atomic
// exchange (an atomic.Pointer Swap and Store per record cost as much as
// the copy, as their fences wait for the record's bytes to be written),
// and converters share the buffers, so an idle task's converter holds
// none.
var scratchBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxScratch is the largest scratch buffer kept for another record; a
// value larger than it is written into a buffer of its own, which becomes
// the output, as a copy of it would cost as much again.
const maxScratch = 16 << 10

// NewJSONConverter returns a JSONConverter with Connect's defaults; Configure
// may change them.
func NewJSONConverter() *JSONConverter {
	c := &JSONConverter{schemasEnabled: true, replaceNull: true}
	c.setCacheSize(1000)
	return c
}

func (c *JSONConverter) setCacheSize(n int) {
	c.fromCache = newBoundedCache[*connectors.Schema, []byte](n)
	c.toCache = newBoundedCache[string, *connectors.Schema](n)
	c.plans = newBoundedCache[*connectors.Schema, *structPlan](n)
	c.lastPlan.Store(nil)
	c.lastHead.Store(nil)
	c.lastFrom.Store(nil)
}

// structPlan is what writing a struct of one schema repeats for every
// value unless it is worked out once: its fields' names as JSON object
// keys, `"name":`, with the comma before each from the second on.
type structPlan struct {
	schema *connectors.Schema
	keys   []string
	// kinds are how each field's values are written when they have the
	// Go type of their schema (fieldKind).
	kinds []fieldKind
}

// fieldKind is the schema of a struct field whose value appendStruct
// writes itself rather than through appendValue: a primitive type with no
// name (a name may make it a logical type) and no default (a default
// changes how null is written, though null is not the Go type anyway). A
// value of another Go type, nil included, goes through appendValue, which
// writes it or reports it as appendValue always has.
type fieldKind uint8

const (
	viaAppendValue fieldKind = iota
	plainInt8
	plainInt16
	plainInt32
	plainInt64
	plainFloat32
	plainFloat64
	plainBoolean
	plainString
)

func fieldKindOf(s *connectors.Schema) fieldKind {
	if s == nil || s.Name != "" || s.Default != nil {
		return viaAppendValue
	}
	switch s.Type {
	case connectors.Int8:
		return plainInt8
	case connectors.Int16:
		return plainInt16
	case connectors.Int32:
		return plainInt32
	case connectors.Int64:
		return plainInt64
	case connectors.Float32:
		return plainFloat32
	case connectors.Float64:
		return plainFloat64
	case connectors.Boolean:
		return plainBoolean
	case connectors.String:
		return plainString
	}
	return viaAppendValue
}

// planFor returns the plan of struct schema s: the last one used, else the
// cached one, else a new one.
func (c *JSONConverter) planFor(s *connectors.Schema) *structPlan {
	if p := c.lastPlan.Load(); p != nil && p.schema == s {
		return p
	}
	p, ok := c.plans.get(s)
	if !ok {
		p = &structPlan{schema: s, keys: make([]string, len(s.Fields)), kinds: make([]fieldKind, len(s.Fields))}
		var b []byte
		for i, f := range s.Fields {
			p.kinds[i] = fieldKindOf(f.Schema)
			b = b[:0]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f.Name)
			p.keys[i] = string(append(b, ':'))
		}
		c.plans.put(s, p)
	}
	c.lastPlan.Store(p)
	return p
}

// Configure accepts Connect's keys: schemas.enable (default true),
// decimal.format (BASE64 or NUMERIC, any case), schemas.cache.size (default
// 1000; 0 or less disables the caches) and replace.null.with.default
// (default true). Other keys are ignored, as Connect ignores them. Configure
// must not run concurrently with conversions.
func (c *JSONConverter) Configure(props map[string]string, isKey bool) error {
	ce := &connectors.ConfigError{}
	c.schemasEnabled = parseBool(ce, props, "schemas.enable", true)
	c.replaceNull = parseBool(ce, props, "replace.null.with.default", true)
	c.numericDecimal = parseDecimalFormat(ce, props)
	size := 1000
	if v, ok := props["schemas.cache.size"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			ce.Add("schemas.cache.size", fmt.Sprintf("Invalid value %q for configuration schemas.cache.size: Not a number of type INT", v))
		}
		size = n
	}
	if err := ce.Err(); err != nil {
		return err
	}
	c.setCacheSize(size)
	return nil
}

// FromConnect writes value as JSON. A nil schema with a nil value is a
// tombstone (nil bytes); a nil value with a schema is written as its
// default or null, inside the envelope when schemas are enabled, as Connect
// does.
func (c *JSONConverter) FromConnect(topic string, schema *connectors.Schema, value any) ([]byte, error) {
	if schema == nil && value == nil {
		return nil, nil
	}
	scratch := scratchBuffers.Get().(*[]byte)
	b := *scratch
	if b == nil {
		b = make([]byte, 0, c.sizeHint.Load()+64)
	}
	b, err := c.appendRecord(b[:0], schema, value)
	if err != nil {
		return nil, dataErr("JsonConverter", err)
	}
	if cap(b) <= maxScratch {
		// The output's own buffer is cut to its length (the allocator's
		// size class at most): its bytes live until Kafka acknowledges
		// the record, in a window buffer.memory bounds by their length,
		// so spare capacity would be memory the operator did not allow.
		out := make([]byte, len(b))
		copy(out, b)
		*scratch = b[:0]
		scratchBuffers.Put(scratch)
		return out, nil
	}
	// The buffer is too large to keep: it becomes the output, and the
	// pool gets the empty pointer back.
	*scratch = nil
	scratchBuffers.Put(scratch)
	if n := int64(len(b)); n != c.sizeHint.Load() {
		// Stored only when it changed: values of one size are the rule.
		c.sizeHint.Store(n)
	}
	if spare := cap(b) - len(b); spare > 64 && spare > len(b)/8 {
		// The value outgrew the hint (append doubled the buffer) or is
		// far smaller than it: as above, the bytes held until the ack
		// must not be twice those buffer.memory counts.
		b = append(make([]byte, 0, len(b)), b...)
	}
	return b, nil
}

// appendRecord writes value, in Connect's envelope when schemas are
// enabled.
func (c *JSONConverter) appendRecord(b []byte, schema *connectors.Schema, value any) ([]byte, error) {
	if c.schemasEnabled {
		b = append(b, `{"schema":`...)
		if schema == nil {
			b = append(b, "null"...)
		} else {
			sj, err := c.schemaJSON(schema)
			if err != nil {
				return nil, err
			}
			b = append(b, sj...)
		}
		b = append(b, `,"payload":`...)
	}
	b, err := c.appendValue(b, schema, value)
	if err != nil {
		return nil, err
	}
	if c.schemasEnabled {
		b = append(b, '}')
	}
	return b, nil
}

// schemaJSON renders s as Connect's JSON schema, cached by pointer.
// The schema rendered last is checked first, without the cache's lock: a
// task's records usually all share one schema.
func (c *JSONConverter) schemaJSON(s *connectors.Schema) ([]byte, error) {
	if last := c.lastFrom.Load(); last != nil && last.schema == s {
		return last.raw, nil
	}
	b, ok := c.fromCache.get(s)
	if !ok {
		var err error
		if b, err = c.appendSchema(nil, s); err != nil {
			return nil, err
		}
		c.fromCache.put(s, b)
	}
	if c.fromCache.max > 0 {
		// Without a cache (schemas.cache.size=0) every schema is rendered.
		c.lastFrom.Store(&rawSchema{raw: b, schema: s})
	}
	return b, nil
}

func jsonTypeName(t connectors.SchemaType) (string, bool) {
	switch t {
	case connectors.Int8, connectors.Int16, connectors.Int32, connectors.Int64,
		connectors.Boolean, connectors.String, connectors.Bytes,
		connectors.Array, connectors.Map, connectors.Struct:
		return string(t), true
	case connectors.Float32:
		return "float", true
	case connectors.Float64:
		return "double", true
	}
	return "", false
}

// appendSchema writes s with Connect's key order: type, then items / keys,
// values / fields, then optional, name, version, doc, parameters, default.
// A struct field is its schema with "field" added last.
func (c *JSONConverter) appendSchema(b []byte, s *connectors.Schema) ([]byte, error) {
	if s == nil {
		return nil, errorf("schema is nil")
	}
	tn, ok := jsonTypeName(s.Type)
	if !ok {
		return nil, errorf("unknown schema type %q", s.Type)
	}
	b = append(b, `{"type":"`...)
	b = append(b, tn...)
	b = append(b, '"')
	var err error
	switch s.Type {
	case connectors.Array:
		// An array whose elements have no one schema (Values.parseString of
		// a mixed literal) has "items": null, as Connect writes it.
		b = append(b, `,"items":`...)
		if s.Items == nil {
			b = append(b, "null"...)
		} else if b, err = c.appendSchema(b, s.Items); err != nil {
			return nil, inField(err, "items")
		}
	case connectors.Map:
		if s.Keys == nil || s.Values == nil {
			return nil, errorf("map schema needs both keys and values schemas")
		}
		b = append(b, `,"keys":`...)
		if b, err = c.appendSchema(b, s.Keys); err != nil {
			return nil, inField(err, "keys")
		}
		b = append(b, `,"values":`...)
		if b, err = c.appendSchema(b, s.Values); err != nil {
			return nil, inField(err, "values")
		}
	case connectors.Struct:
		b = append(b, `,"fields":[`...)
		for i, f := range s.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = c.appendSchema(b, f.Schema); err != nil {
				return nil, inField(err, f.Name)
			}
			b = append(b[:len(b)-1], `,"field":`...)
			b = appendJSONString(b, f.Name)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"optional":`...)
	b = strconv.AppendBool(b, s.Optional)
	if s.Name != "" {
		b = append(b, `,"name":`...)
		b = appendJSONString(b, s.Name)
	}
	if s.Version != 0 {
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, int64(s.Version), 10)
	}
	if s.Doc != "" {
		b = append(b, `,"doc":`...)
		b = appendJSONString(b, s.Doc)
	}
	if s.Parameters != nil {
		keys := make([]string, 0, len(s.Parameters))
		for k := range s.Parameters {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			// Connect's Decimal.builder sets scale before any other parameter.
			if (keys[i] == "scale") != (keys[j] == "scale") {
				return keys[i] == "scale"
			}
			return keys[i] < keys[j]
		})
		b = append(b, `,"parameters":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, s.Parameters[k])
		}
		b = append(b, '}')
	}
	if s.Default != nil {
		b = append(b, `,"default":`...)
		if b, err = c.appendValue(b, s, s.Default); err != nil {
			return nil, inField(err, "default")
		}
	}
	return append(b, '}'), nil
}

func mismatch(s *connectors.Schema, v any) error {
	want := goType(s.Type)
	switch s.Type {
	case connectors.Bytes:
		want = "[]byte"
	case connectors.Array:
		want = "[]any"
	case connectors.Map:
		want = "map[string]any"
	case connectors.Struct:
		want = "*connectors.StructValue"
	}
	return errorf("expected %s (%s schema), got %s", want, s.Type, typeName(v))
}

// isNil reports a typed nil pointer, which stands for a missing value.
func isNil(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case *connectors.StructValue:
		return v == nil
	case *big.Rat:
		return v == nil
	}
	return false
}

func (c *JSONConverter) appendNull(b []byte, s *connectors.Schema) ([]byte, error) {
	switch {
	case s == nil:
		return append(b, "null"...), nil
	case s.Default != nil && c.replaceNull:
		return c.appendValue(b, s, s.Default)
	case s.Optional:
		return append(b, "null"...), nil
	}
	return nil, errorf("null value for a required %s with no default", s.Type)
}

func (c *JSONConverter) appendValue(b []byte, s *connectors.Schema, v any) ([]byte, error) {
	if isNil(v) {
		return c.appendNull(b, s)
	}
	if s == nil {
		return c.appendSchemaless(b, v)
	}
	if s.Name != "" {
		if b, done, err := c.appendLogical(b, s, v); done {
			return b, err
		}
	}
	switch s.Type {
	case connectors.Int8:
		if x, ok := v.(int8); ok {
			return strconv.AppendInt(b, int64(x), 10), nil
		}
	case connectors.Int16:
		if x, ok := v.(int16); ok {
			return strconv.AppendInt(b, int64(x), 10), nil
		}
	case connectors.Int32:
		if x, ok := v.(int32); ok {
			return strconv.AppendInt(b, int64(x), 10), nil
		}
	case connectors.Int64:
		if x, ok := v.(int64); ok {
			return strconv.AppendInt(b, x, 10), nil
		}
	case connectors.Float32:
		if x, ok := v.(float32); ok {
			return appendJSONFloat(b, float64(x), 32), nil
		}
	case connectors.Float64:
		if x, ok := v.(float64); ok {
			return appendJSONFloat(b, x, 64), nil
		}
	case connectors.Boolean:
		if x, ok := v.(bool); ok {
			return strconv.AppendBool(b, x), nil
		}
	case connectors.String:
		if x, ok := v.(string); ok {
			return appendJSONString(b, x), nil
		}
	case connectors.Bytes:
		if x, ok := v.([]byte); ok {
			return appendBase64(b, x), nil
		}
	case connectors.Array:
		if x, ok := v.([]any); ok {
			return c.appendArray(b, s.Items, x) // nil Items: schemaless elements
		}
	case connectors.Map:
		if x, ok := v.(map[string]any); ok {
			return c.appendMap(b, s, x)
		}
	case connectors.Struct:
		if x, ok := v.(*connectors.StructValue); ok {
			if x.Schema == nil {
				return nil, errorf("struct value has no schema")
			}
			if x.Schema != s && !reflect.DeepEqual(x.Schema, s) {
				return nil, errorf("struct value's schema %q differs from the schema it is written with %q", x.Schema.Name, s.Name)
			}
			return c.appendStruct(b, s, x)
		}
	default:
		return nil, errorf("unknown schema type %q", s.Type)
	}
	return nil, mismatch(s, v)
}

// appendLogical writes a value of a logical type. As Connect's JsonConverter
// it picks the logical type by the schema's name alone: a string schema
// named Timestamp (Cast of a whole Timestamp to string keeps the name)
// fails here as it fails there. done is false when s names no logical type.
func (c *JSONConverter) appendLogical(b []byte, s *connectors.Schema, v any) (_ []byte, done bool, _ error) {
	switch s.Name {
	case connectors.DecimalLogical:
		r, ok := v.(*big.Rat)
		if !ok {
			return nil, true, errorf("expected *big.Rat (Decimal), got %s", typeName(v))
		}
		scale, err := decimalScale(s)
		if err != nil {
			return nil, true, err
		}
		if !c.numericDecimal {
			if u, ok := unscaledInt64(r, scale); ok {
				// A database decimal of a few digits: its bytes straight
				// from the int64, no big.Int for the value or its bytes.
				var buf [8]byte
				return appendBase64(b, appendTwosComplementInt64(buf[:0], u)), true, nil
			}
		}
		u, err := unscaledOf(r, scale)
		if err != nil {
			return nil, true, err
		}
		if c.numericDecimal {
			return appendJavaBigDecimal(b, u, scale), true, nil
		}
		return appendBase64(b, twosComplement(u)), true, nil
	case connectors.TimestampLogical:
		t, ok := v.(time.Time)
		if !ok {
			return nil, true, errorf("expected time.Time (Timestamp), got %s", typeName(v))
		}
		return strconv.AppendInt(b, t.UnixMilli(), 10), true, nil
	case connectors.DateLogical:
		t, ok := v.(time.Time)
		if !ok {
			return nil, true, errorf("expected time.Time (Date), got %s", typeName(v))
		}
		d, err := dateDays(t)
		if err != nil {
			return nil, true, err
		}
		return strconv.AppendInt(b, int64(d), 10), true, nil
	case connectors.TimeLogical:
		t, ok := v.(time.Time)
		if !ok {
			return nil, true, errorf("expected time.Time (Time), got %s", typeName(v))
		}
		ms, err := timeMillis(t)
		if err != nil {
			return nil, true, err
		}
		return strconv.AppendInt(b, int64(ms), 10), true, nil
	}
	return b, false, nil
}

func (c *JSONConverter) appendArray(b []byte, items *connectors.Schema, x []any) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, e := range x {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = c.appendValue(b, items, e); err != nil {
			return nil, inElem(err, index(i))
		}
	}
	return append(b, ']'), nil
}

func (c *JSONConverter) appendStruct(b []byte, s *connectors.Schema, x *connectors.StructValue) ([]byte, error) {
	if len(x.Values) != len(s.Fields) {
		return nil, errorf("struct has %d values for %d fields", len(x.Values), len(s.Fields))
	}
	plan := c.planFor(s)
	keys, kinds := plan.keys, plan.kinds[:len(plan.keys)]
	b = append(b, '{')
	var err error
	for i, v := range x.Values[:len(keys)] {
		b = append(b, keys[i]...)
		// A field of a plain primitive schema holding its Go type is
		// written here: appendValue's checks (nil, a logical type's name,
		// the schema type's string compared case by case) cost more than
		// the writing.
		switch kinds[i] {
		case plainString:
			if x, ok := v.(string); ok {
				b = appendJSONString(b, x)
				continue
			}
		case plainInt32:
			if x, ok := v.(int32); ok {
				b = strconv.AppendInt(b, int64(x), 10)
				continue
			}
		case plainInt64:
			if x, ok := v.(int64); ok {
				b = strconv.AppendInt(b, x, 10)
				continue
			}
		case plainInt8:
			if x, ok := v.(int8); ok {
				b = strconv.AppendInt(b, int64(x), 10)
				continue
			}
		case plainInt16:
			if x, ok := v.(int16); ok {
				b = strconv.AppendInt(b, int64(x), 10)
				continue
			}
		case plainFloat32:
			if x, ok := v.(float32); ok {
				b = appendJSONFloat(b, float64(x), 32)
				continue
			}
		case plainFloat64:
			if x, ok := v.(float64); ok {
				b = appendJSONFloat(b, x, 64)
				continue
			}
		case plainBoolean:
			if x, ok := v.(bool); ok {
				b = strconv.AppendBool(b, x)
				continue
			}
		}
		if b, err = c.appendValue(b, s.Fields[i].Schema, v); err != nil {
			return nil, inField(err, s.Fields[i].Name)
		}
	}
	return append(b, '}'), nil
}

func (c *JSONConverter) appendMap(b []byte, s *connectors.Schema, m map[string]any) ([]byte, error) {
	if s.Keys == nil || s.Values == nil {
		return nil, errorf("map schema needs both keys and values schemas")
	}
	var err error
	if s.Keys.Type == connectors.String {
		b = append(b, '{')
		for i, k := range sortedKeys(m) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			if b, err = c.appendValue(b, s.Values, m[k]); err != nil {
				return nil, inElem(err, mapKey(k))
			}
		}
		return append(b, '}'), nil
	}
	b = append(b, '[')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		kv, err := c.keyFromString(s.Keys, k)
		if err != nil {
			return nil, inElem(err, mapKey(k))
		}
		b = append(b, '[')
		if b, err = c.appendValue(b, s.Keys, kv); err != nil {
			return nil, inElem(err, mapKey(k))
		}
		b = append(b, ',')
		if b, err = c.appendValue(b, s.Values, m[k]); err != nil {
			return nil, inElem(err, mapKey(k))
		}
		b = append(b, ']')
	}
	return append(b, ']'), nil
}

// appendSchemaless writes a value that has no schema, inferring its Connect
// type from its Go type as Connect does from its Java class.
func (c *JSONConverter) appendSchemaless(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case bool:
		return strconv.AppendBool(b, x), nil
	case int8:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case float32:
		return appendJSONFloat(b, float64(x), 32), nil
	case float64:
		return appendJSONFloat(b, x, 64), nil
	case string:
		return appendJSONString(b, x), nil
	case []byte:
		return appendBase64(b, x), nil
	case []any:
		return c.appendArray(b, nil, x)
	case map[string]any:
		b = append(b, '{')
		var err error
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			if b, err = c.appendValue(b, nil, x[k]); err != nil {
				return nil, inElem(err, mapKey(k))
			}
		}
		return append(b, '}'), nil
	case *connectors.StructValue:
		if x.Schema == nil {
			return nil, errorf("struct value has no schema")
		}
		return c.appendStruct(b, x.Schema, x)
	case time.Time, *big.Rat:
		return nil, errorf("a %s needs a schema (Timestamp, Date, Time or Decimal)", typeName(v))
	}
	return nil, errorf("Go type %s has no Connect schema type", typeName(v))
}

// keyString renders a map key of a non-string key schema as the map[string]any
// key: its JSON text, unquoted when that is a JSON string.
func (c *JSONConverter) keyString(ks *connectors.Schema, kv any) (string, error) {
	b, err := c.appendValue(nil, ks, kv)
	if err != nil {
		return "", err
	}
	if len(b) > 0 && b[0] == '"' {
		d := decoder{c: c, data: b}
		raw, err := d.str()
		if err != nil {
			return "", err
		}
		return string(raw), nil
	}
	return string(b), nil
}

// keyFromString is keyString's inverse.
func (c *JSONConverter) keyFromString(ks *connectors.Schema, k string) (any, error) {
	v, err := c.parseKey(ks, k)
	if err != nil {
		return nil, errorf("map key %q is not a valid %s: %v", k, ks.Type, err)
	}
	return v, nil
}

func (c *JSONConverter) parseKey(ks *connectors.Schema, k string) (any, error) {
	switch {
	case ks.Type == connectors.String:
		return k, nil
	case ks.Type == connectors.Bytes:
		// Bytes and BASE64 decimals render as base64 strings; a NUMERIC
		// decimal renders as a number and is parsed as JSON below.
		if ks.Name != connectors.DecimalLogical || !c.numericDecimal {
			return c.valueFromJSON(ks, appendJSONString(nil, k))
		}
	case ks.Type == connectors.Float32 || ks.Type == connectors.Float64:
		if k == "NaN" || k == "Infinity" || k == "-Infinity" {
			return c.valueFromJSON(ks, appendJSONString(nil, k))
		}
	}
	return c.valueFromJSON(ks, []byte(k))
}

// valueFromJSON parses a whole JSON document as a value of schema s.
func (c *JSONConverter) valueFromJSON(s *connectors.Schema, data []byte) (any, error) {
	d := decoder{c: c, data: data}
	v, err := d.value(s)
	if err != nil {
		return nil, err
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return v, nil
}

// appendJSONFloat writes a float as Jackson does: Java's toString digits,
// and non-finite values as the strings "NaN", "Infinity", "-Infinity"
// (Jackson's default QUOTE_NON_NUMERIC_NUMBERS), since JSON has no literal
// for them.
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	if f-f != 0 {
		b = append(b, '"')
		b = appendJavaFloat(b, f, bits)
		return append(b, '"')
	}
	return appendJavaFloat(b, f, bits)
}

func appendBase64(b []byte, x []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, x)
	return append(b, '"')
}

const hexUpper = "0123456789ABCDEF"

// jsonSafe marks the ASCII bytes written as they are inside a JSON string.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for i := 0x20; i < utf8.RuneSelf; i++ {
		t[i] = i != '"' && i != '\\'
	}
	return t
}()

// jsonPlainPrefix returns how many leading bytes of s are written as they
// are inside a JSON string, looking at whole words of eight bytes only: it
// stops exactly at the first byte that needs a look of its own (a control
// character, '"', '\\' or a byte of a multi-byte or invalid UTF-8
// sequence) when that byte is in one of them, and otherwise returns the
// length of the words, leaving the last len(s)%8 bytes to the caller.
// Eight bytes are tested together in a uint64 with the "has a byte less
// than n" and "has a zero byte" tricks; a borrow can only mark bytes above
// a byte that really matches, so the lowest marked byte (the first in
// memory) is exact, and it is where the prefix ends: the byte that ends a
// string, its closing quote, is found in the word without a loop over the
// bytes before it.
func jsonPlainPrefix[T string | []byte](s T) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		// One bounds check for the word, not one per byte; the compiler
		// makes the eight loads one.
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		control := x - 0x20*ones
		quote := x ^ '"'*ones
		backslash := x ^ '\\'*ones
		if m := (control | (quote-ones)&^quote | (backslash-ones)&^backslash | x) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	return i
}

// appendJSONString quotes s as Jackson does: ", \ and control characters
// escaped (\b \t \n \f \r short, the others as \u00XX with upper-case hex),
// everything else, including <, >, &, U+2028 and U+2029, written as is. This
// equals encoding/json's output with SetEscapeHTML(false) except for those
// two line separators and the case of the hex digits, which encoding/json
// escapes and lower-cases; Connect's bytes are the ones to match, since key
// bytes pick the partition. Invalid UTF-8 is replaced by U+FFFD, which is
// what a Java string decoded from those bytes would hold.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none of them needs a look of its own:
		// most strings are plain ASCII, and a table lookup per byte was
		// the converter's largest cost.
		i += jsonPlainPrefix(s[i:])
		if tail := len(s) - i; tail > 0 && tail < 8 && len(s) >= 8 && jsonPlainPrefix(s[len(s)-8:]) == 8 {
			// The last few bytes, tested in the word that ends the string
			// (overlapping bytes already passed), instead of one by one.
			i = len(s)
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\t':
				b = append(b, '\\', 't')
			case '\n':
				b = append(b, '\\', 'n')
			case '\f':
				b = append(b, '\\', 'f')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hexUpper[c>>4], hexUpper[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// parseDecimalFormat reads decimal.format (BASE64 or NUMERIC, any case;
// default BASE64) as JsonConverter and JsonSchemaConverter take it, and
// reports NUMERIC.
func parseDecimalFormat(ce *connectors.ConfigError, props map[string]string) bool {
	v, ok := props["decimal.format"]
	if !ok {
		return false
	}
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "BASE64":
		return false
	case "NUMERIC":
		return true
	}
	ce.Add("decimal.format", fmt.Sprintf("Invalid value %q for configuration decimal.format: String must be one of (case insensitive): BASE64, NUMERIC", v))
	return false
}

// boundedCache is a map that stops growing at max entries by evicting an
// arbitrary one, which is enough for schemas: a converter sees a handful, and
// a miss costs one rendering, not correctness.
type boundedCache[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

// newBoundedCache makes an empty cache; its map is made by the first put,
// so that a converter that never sees a record (an idle task's) holds none.
func newBoundedCache[K comparable, V any](max int) *boundedCache[K, V] {
	return &boundedCache[K, V]{max: max}
}

func (c *boundedCache[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

func (c *boundedCache[K, V]) put(k K, v V) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[K]V)
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = v
}

func (c *boundedCache[K, V]) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
