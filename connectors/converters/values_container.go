package converters

import (
	"fmt"
	"math/big"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// Arrays and maps of Values.parseString, and the conversions that align
// their elements with the schema they have in common.

func valueOf(sv *schemaAndValue) any {
	if sv == nil {
		return nil
	}
	return sv.value
}

func schemaOf(sv *schemaAndValue) *connectors.Schema {
	if sv == nil {
		return nil
	}
	return sv.schema
}

// parseArray reads the elements after '['. With a common schema every
// element is converted to it; without one (none, mixed types, or only
// nulls) the array has no element schema (Items nil).
func (p *valueParser) parseArray() (*schemaAndValue, error) {
	t := &p.t
	result := []any{}
	var schemas []*connectors.Schema // each element's own
	var merger schemaMerger
	for t.hasNext() {
		if t.canConsume("]") {
			common := merger.schema()
			if common == nil {
				for i, v := range result {
					result[i] = detachKeys(schemas[i], v)
				}
				return &schemaAndValue{&connectors.Schema{Type: connectors.Array}, result}, nil
			}
			for i, v := range result {
				var err error
				if result[i], err = convertTo(common, v); err != nil {
					return nil, err
				}
			}
			return &schemaAndValue{&connectors.Schema{Type: connectors.Array, Items: common}, result}, nil
		}
		if t.canConsume(",") {
			return nil, dataErrorf("Unable to parse an empty array element: %s", t.s)
		}
		el, err := p.parse(true)
		if err != nil {
			return nil, err
		}
		merger.merge(el)
		result = append(result, valueOf(el))
		schemas = append(schemas, schemaOf(el))
		cur := t.mark()
		if t.canConsume("]") {
			t.rewindTo(cur)
		} else if !t.canConsume(",") {
			return nil, dataErrorf("Array elements missing ',' delimiter")
		}
	}
	if t.prev == "," {
		return nil, dataErrorf("Array is missing element after ',': %s", t.s)
	}
	return nil, dataErrorf("Array is missing terminating ']': %s", t.s)
}

// mapEntry is an entry of a map being parsed, with its key as Connect
// has it (typed) until the map's key schema is known, and the schemas the
// parser gave its key and value.
type mapEntry struct {
	key, value             any
	keySchema, valueSchema *connectors.Schema
}

// parseMap reads the entries after '{'. A later entry with an equal key
// replaces an earlier one, as in Java's LinkedHashMap.
func (p *valueParser) parseMap() (*schemaAndValue, error) {
	t := &p.t
	var entries []mapEntry
	index := map[string]int{}
	var keys, values schemaMerger
	for t.hasNext() {
		if t.canConsume("}") {
			return buildMap(entries, keys.schema(), values.schema())
		}
		if t.canConsume(",") {
			return nil, dataErrorf("Unable to parse a map entry with no key or value: %s", t.s)
		}
		key, err := p.parse(true)
		if err != nil {
			return nil, err
		}
		if key == nil || key.value == nil {
			return nil, dataErrorf("Map entry may not have a null key: %s", t.s)
		}
		if !t.canConsume(":") {
			return nil, dataErrorf("Map entry is missing ':' at %d in %s", t.pos, t.s)
		}
		value, err := p.parse(true)
		if err != nil {
			return nil, err
		}
		id := javaKeyIdentity(key.value)
		e := mapEntry{key.value, valueOf(value), key.schema, schemaOf(value)}
		if i, seen := index[id]; seen {
			entries[i].value, entries[i].valueSchema = e.value, e.valueSchema
		} else {
			index[id] = len(entries)
			entries = append(entries, e)
		}
		t.canConsume(",")
		keys.merge(key)
		values.merge(value)
	}
	if t.prev == "," {
		return nil, dataErrorf("Map is missing element after ',': %s", t.s)
	}
	return nil, dataErrorf("Map is missing terminating '}': %s", t.s)
}

// javaKeyIdentity tells map keys apart as Java's equals does for the
// values the parser makes: by type and value (the int8 1 and the int16 1
// are different keys until aligned with a common schema).
func javaKeyIdentity(k any) string {
	if t, ok := k.(time.Time); ok {
		return fmt.Sprintf("time|%d", t.UnixMilli())
	}
	return fmt.Sprintf("%T|%v", k, k)
}

// buildMap aligns the entries with the common key and value schemas, as
// Connect does, and writes the keys as Sluice's map[string]any holds them.
func buildMap(entries []mapEntry, ks, vs *connectors.Schema) (*schemaAndValue, error) {
	schema := &connectors.Schema{Type: connectors.Map, Keys: ks}
	if ks != nil {
		schema.Values = vs
	}
	out := make(map[string]any, len(entries))
	for _, e := range entries {
		k, v := e.key, e.value
		var err error
		if ks != nil {
			if k, err = convertTo(ks, k); err != nil {
				return nil, err
			}
		}
		if schema.Values != nil {
			if v, err = convertTo(schema.Values, v); err != nil {
				return nil, err
			}
		} else {
			v = detachKeys(e.valueSchema, v)
		}
		key, err := mapKeyString(ks, e.keySchema, k)
		if err != nil {
			return nil, dataErrorf("%v", err)
		}
		out[key] = v
	}
	return &schemaAndValue{schema, out}, nil
}

// mapKeyString writes a key of a map of key schema ks as map[string]any
// holds it: as JSONConverter writes keys of ks, or as ValueString writes
// it with its own schema own (not ks, which Connect lets a key not match:
// a Decimal key keeps its own scale, an array key its own elements) when
// keyIsText(ks) or when ks cannot hold it.
func mapKeyString(ks, own *connectors.Schema, k any) (string, error) {
	if !keyIsText(ks) {
		if s, err := keyCodec.keyString(ks, k); err == nil {
			return s, nil
		}
	}
	return ValueString(own, k)
}

// keyIsText reports whether the keys of a map of key schema ks are held as
// their ValueString text rather than as JSONConverter writes keys (its
// JSON text, unquoted when that is a JSON string): for a map with no
// common key schema, or keys that are arrays, maps or structs.
func keyIsText(ks *connectors.Schema) bool {
	if ks == nil {
		return true
	}
	switch ks.Type {
	case connectors.Array, connectors.Map, connectors.Struct:
		return true
	}
	return false
}

// detachKeys prepares a value parsed with schema s for a container with
// no common schema, where s is lost: the keys of the maps in it, held as
// JSONConverter writes keys of their key schema, become their ValueString
// text, which ValueString can write back without the schema.
func detachKeys(s *connectors.Schema, v any) any {
	if s == nil {
		return v
	}
	switch x := v.(type) {
	case []any:
		if s.Items == nil {
			return x // detached when parsed
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = detachKeys(s.Items, e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !keyIsText(s.Keys) {
				if typed, err := keyCodec.keyFromString(s.Keys, k); err == nil {
					if text, err := ValueString(s.Keys, typed); err == nil {
						k = text
					}
				}
			}
			out[k] = detachKeys(s.Values, e)
		}
		return out
	}
	return v
}

// keyCodec writes and reads map keys of a typed key schema the way the
// JSON converter does, so that a map parsed here converts there.
var keyCodec = NewJSONConverter()

// schemaMerger is Values.SchemaMerger: the schema common to the values it
// is given, nulls aside, or nil once two have none in common.
type schemaMerger struct {
	common       *connectors.Schema
	incompatible bool
}

func (m *schemaMerger) merge(sv *schemaAndValue) {
	if sv == nil || sv.schema == nil || m.incompatible {
		return
	}
	if m.common == nil {
		m.common = sv.schema
		return
	}
	m.common = mergeSchemas(m.common, sv.schema)
	m.incompatible = m.common == nil
}

func (m *schemaMerger) schema() *connectors.Schema { return m.common }

// numericRank orders the numeric types the merger widens to.
var numericRank = map[connectors.SchemaType]int{
	connectors.Int8: 1, connectors.Int16: 2, connectors.Int32: 3,
	connectors.Int64: 4, connectors.Float32: 5, connectors.Float64: 6,
}

// mergeSchemas is Values.mergeSchemas: of two numeric types the wider
// (a logical type's schema included: a Date with an int8 is a Date); of
// one type, the later schema (so a Date then a plain int32 is an int32);
// else none.
func mergeSchemas(prev, next *connectors.Schema) *connectors.Schema {
	if prev.Type != next.Type {
		rp, rn := numericRank[prev.Type], numericRank[next.Type]
		switch {
		case rp == 0 || rn == 0:
			return nil
		case rp > rn:
			return prev
		}
		return next
	}
	if prev.Optional != next.Optional {
		return nil // Connect's schemas would differ; the parser's are all required
	}
	if prev.Optional {
		return prev
	}
	return next
}

// convertTo is Values.convertTo without a source schema, for the schemas
// the merger picks: numbers widen (or narrow and wrap, as Java's casts),
// numbers become Dates (days), Times or Timestamps (milliseconds), and
// values already of the target's kind are kept as they are.
func convertTo(to *connectors.Schema, v any) (any, error) {
	if v == nil {
		if to.Optional {
			return nil, nil
		}
		return nil, dataErrorf("Unable to convert a null value to a schema that requires a value")
	}
	switch to.Type {
	case connectors.String:
		return ValueString(nil, v)
	case connectors.Boolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		l, err := asLong(v)
		return l != 0, err
	case connectors.Int8, connectors.Int16, connectors.Int32, connectors.Int64:
		return convertToInteger(to, v)
	case connectors.Float32:
		if f, ok := v.(float32); ok {
			return f, nil
		}
		f, err := asDouble(v)
		return float32(f), err
	case connectors.Float64:
		return asDouble(v)
	case connectors.Bytes:
		return convertToBytes(to, v)
	case connectors.Array:
		if _, ok := v.([]any); ok {
			return v, nil
		}
	case connectors.Map:
		if _, ok := v.(map[string]any); ok {
			return v, nil
		}
	case connectors.Struct:
		if _, ok := v.(*connectors.StructValue); ok {
			return v, nil
		}
	}
	return nil, unableToConvert(v, to)
}

func unableToConvert(v any, to *connectors.Schema) error {
	return dataErrorf("Unable to convert %v (%s) to %s", v, typeName(v), to.Type)
}

func convertToInteger(to *connectors.Schema, v any) (any, error) {
	if t, ok := v.(time.Time); ok && to.Name != "" {
		switch to.Name {
		case connectors.DateLogical, connectors.TimeLogical, connectors.TimestampLogical:
			return t, nil // no source schema: kept as it is
		}
	}
	l, err := asLong(v)
	if err != nil {
		return nil, err
	}
	switch {
	case to.Type == connectors.Int8:
		return int8(l), nil
	case to.Type == connectors.Int16:
		return int16(l), nil
	case to.Name == connectors.DateLogical && to.Type == connectors.Int32:
		return time.UnixMilli(int64(int32(l)) * millisPerDayL).UTC(), nil
	case to.Name == connectors.TimeLogical && to.Type == connectors.Int32:
		if ms := int32(l); ms >= 0 && ms <= millisPerDay {
			return time.UnixMilli(int64(ms)).UTC(), nil
		}
		return nil, dataErrorf("Time values must use number of milliseconds greater than 0 and less than 86400000")
	case to.Type == connectors.Int32:
		return int32(l), nil
	case to.Name == connectors.TimestampLogical:
		return time.UnixMilli(l).UTC(), nil
	}
	return l, nil
}

// convertToBytes keeps a Decimal's value (Connect's BigDecimal keeps its
// own scale), reads bytes at the schema's scale, and turns a number into
// a Decimal as BigDecimal.valueOf(double) does.
func convertToBytes(to *connectors.Schema, v any) (any, error) {
	if to.Name != connectors.DecimalLogical {
		if b, ok := v.([]byte); ok {
			return b, nil
		}
		return nil, unableToConvert(v, to)
	}
	switch x := v.(type) {
	case *big.Rat:
		return x, nil
	case []byte:
		scale, err := decimalScale(to)
		if err != nil {
			return nil, dataErrorf("%v", err)
		}
		return ratOf(fromTwosComplement(x), scale), nil
	case int8, int16, int32, int64, float32, float64:
		f, _ := asDouble(x)
		r, ok := new(big.Rat).SetString(string(appendJavaFloat(nil, f, 64)))
		if !ok {
			return nil, unableToConvert(v, to)
		}
		return r, nil
	}
	return nil, unableToConvert(v, to)
}

// asLong is Values.asLong without a source schema: a number's long value
// as Java's Number.longValue, a numeric string's, else an error.
func asLong(v any) (int64, error) {
	switch x := v.(type) {
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case float32:
		return javaLongOfDouble(float64(x)), nil
	case float64:
		return javaLongOfDouble(x), nil
	case *big.Rat:
		return javaLongOfRat(x), nil
	case string:
		if d, ok := parseJavaDecimal(x); ok && d.scale <= maxScale && d.scale >= -maxScale {
			return javaLongOfRat(d.rat()), nil
		}
	}
	return 0, dataErrorf("Unable to convert %v (%s) to a number", v, typeName(v))
}

// asDouble is Values.asDouble without a source schema.
func asDouble(v any) (float64, error) {
	switch x := v.(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	case *big.Rat:
		f, _ := x.Float64()
		return f, nil
	case string:
		if d, ok := parseJavaDecimal(x); ok {
			return d.float(64), nil
		}
	}
	l, err := asLong(v)
	return float64(l), err
}
