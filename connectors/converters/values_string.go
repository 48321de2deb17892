package converters

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// ValueString is Connect's Values.convertToString: the text ParseValue
// reads back as the same value, as far as Connect's format allows. Numbers
// as Java prints them (a Decimal at its schema's scale), booleans, strings
// as they are at the top level and quoted with \ and " escaped inside
// arrays, maps and structs, bytes in base64, arrays as [a,b], maps as
// {k:v,...}, structs as {"field":value,...} (every field, defaults
// applied), and dates, times and timestamps by their milliseconds as
// Connect's Values.dateFormatFor picks: before 1970-01-02 a time of day
// (HH:mm:ss.SSS'Z'), on a day boundary a date (yyyy-MM-dd), else a
// timestamp (yyyy-MM-dd'T'HH:mm:ss.SSS'Z'), in UTC.
//
// The schema is used where the Go value says less than Connect's Java one:
// a map's key schema types its string keys (without one, a key is written
// unquoted when it reads back as a number, boolean or temporal value, else
// quoted), and a Decimal schema gives a *big.Rat its scale. Connect writes
// a map's entries in its own order; Sluice's maps have none, so entries
// are written sorted by key.
//
// A nil value gives "null" (Connect's convertToString returns null, which
// callers such as SimpleHeaderConverter check first). Go values of no
// Connect type are an error, as in Connect.
func ValueString(schema *connectors.Schema, value any) (string, error) {
	if s, ok := value.(string); ok {
		return s, nil
	}
	b, err := appendValue(nil, schema, value, false)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// appendValue is Values.append: embedded is true inside arrays, maps and
// structs, where strings and bytes are quoted.
func appendValue(b []byte, s *connectors.Schema, v any, embedded bool) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		if !embedded {
			return append(b, x...), nil
		}
		return appendEscaped(append(b, '"'), x), nil
	case []byte:
		if x == nil {
			return append(b, "null"...), nil
		}
		if !embedded {
			return base64.StdEncoding.AppendEncode(b, x), nil
		}
		b = base64.StdEncoding.AppendEncode(append(b, '"'), x)
		return append(b, '"'), nil
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
	case float32:
		return appendJavaFloat(b, float64(x), 32), nil
	case float64:
		return appendJavaFloat(b, x, 64), nil
	case *big.Rat:
		return appendDecimal(b, s, x)
	case time.Time:
		return appendJavaDate(b, x), nil
	case []any:
		return appendArray(b, s, x)
	case map[string]any:
		return appendMap(b, s, x)
	case *connectors.StructValue:
		return appendStruct(b, x)
	}
	return nil, fmt.Errorf("Failed to serialize unexpected value type %s: %v", typeName(v), v)
}

// appendEscaped is Values.escape: \ and " get a backslash.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '"' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// appendDecimal writes r as BigDecimal.toString at the scale of its
// Decimal schema. Without one (or when r does not fit it) the scale, which
// a *big.Rat does not keep, is guessed: the smallest that holds r, or,
// for an integer beyond a double, the one that drops its trailing zeros.
func appendDecimal(b []byte, s *connectors.Schema, r *big.Rat) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	if s != nil && isLogical(s, connectors.DecimalLogical, connectors.Bytes) {
		if scale, err := decimalScale(s); err == nil {
			if u, err := unscaledOf(r, scale); err == nil {
				return appendJavaBigDecimal(b, u, scale), nil
			}
		}
	}
	if r.IsInt() && new(big.Rat).Abs(r).Cmp(maxDouble) > 0 {
		// Beyond a double, a parsed number is a Decimal at its text's
		// scale, which is negative unless the text wrote every digit:
		// 1e400 prints as 1E+400.
		u := new(big.Int).Set(r.Num())
		scale := 0
		for m := new(big.Int); ; scale-- {
			q, rem := new(big.Int).QuoRem(u, bigTen, m)
			if rem.Sign() != 0 {
				break
			}
			u = q
		}
		return appendJavaBigDecimal(b, u, scale), nil
	}
	if scale, exact := minimalScale(r); exact {
		u, _ := unscaledOf(r, scale)
		return appendJavaBigDecimal(b, u, scale), nil
	}
	return nil, fmt.Errorf("Failed to serialize decimal %s: it has no finite decimal expansion", r.RatString())
}

// maxDouble is Double.MAX_VALUE.
var maxDouble = new(big.Rat).SetFloat64(math.MaxFloat64)

func appendArray(b []byte, s *connectors.Schema, a []any) ([]byte, error) {
	if a == nil {
		return append(b, "null"...), nil
	}
	var items *connectors.Schema
	if s != nil && s.Type == connectors.Array {
		items = s.Items
	}
	b = append(b, '[')
	for i, e := range a {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendValue(b, items, e, true); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendMap(b []byte, s *connectors.Schema, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var keys, values *connectors.Schema
	if s != nil && s.Type == connectors.Map {
		keys, values = s.Keys, s.Values
	}
	b = append(b, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendMapKey(b, keys, k); err != nil {
			return nil, err
		}
		b = append(b, ':')
		if b, err = appendValue(b, values, m[k], true); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendMapKey writes a map[string]any key as the typed key Connect's map
// would hold: read with the key schema as JSONConverter writes keys; as
// it is for an array, map or struct key schema, whose keys are their text;
// without a key schema, as it is when it reads back as something other
// than a string (a number, boolean, date, array, ...), else quoted.
func appendMapKey(b []byte, ks *connectors.Schema, k string) ([]byte, error) {
	switch {
	case ks == nil && !keyReadsTyped(k), ks != nil && ks.Type == connectors.String:
		return appendEscaped(append(b, '"'), k), nil
	case keyIsText(ks):
		return append(b, k...), nil
	}
	typed, err := keyCodec.keyFromString(ks, k)
	if err != nil {
		// A key that does not fit its schema (Connect lets a parsed map
		// keep keys of another type than the schema it is given) is
		// written as a key without a schema.
		return appendMapKey(b, nil, k)
	}
	return appendValue(b, ks, typed, true)
}

// keyReadsTyped reports whether k, as an element of an array or map, reads
// back as something other than a string, and nothing more.
func keyReadsTyped(k string) bool {
	p := valueParser{t: tokenizer{s: k}}
	sv, err := p.parse(true)
	return err == nil && sv != nil && !p.t.hasNext() && sv.schema.Type != connectors.String
}

// appendStruct writes a struct as Values.append does: every field of its
// schema, quoted names, a null field as its default when it has one.
func appendStruct(b []byte, v *connectors.StructValue) ([]byte, error) {
	if v == nil || v.Schema == nil {
		return append(b, "null"...), nil
	}
	if len(v.Values) != len(v.Schema.Fields) {
		return nil, fmt.Errorf("struct has %d values for %d fields", len(v.Values), len(v.Schema.Fields))
	}
	b = append(b, '{')
	for i, f := range v.Schema.Fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEscaped(append(b, '"'), f.Name)
		b = append(b, ':')
		fv := v.Values[i]
		if fv == nil && f.Schema != nil {
			fv = f.Schema.Default
		}
		var err error
		if b, err = appendValue(b, f.Schema, fv, true); err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	return append(b, '}'), nil
}
