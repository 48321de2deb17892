package transforms

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// MaskField$Key and MaskField$Value: Connect's MaskField, which replaces
// the named fields of a struct or map with their type's "null" value (0,
// false, "", the epoch, an empty array or map), or with replacement,
// converted to the field's type (numbers and strings only).
var _ = addKeyValue("MaskField", func(p part) connectors.Transform { return &maskField{part: p} })

const (
	maskFields      = "fields"
	maskReplacement = "replacement"
	maskPurpose     = "mask fields"
)

func maskFieldConfig() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: maskFields, Type: connectors.TypeList, Required: true, Importance: connectors.High,
			Doc: "Names of fields to mask.", Validate: func(v string) error {
				if len(javaList(v)) == 0 {
					return fmt.Errorf("Empty list")
				}
				return nil
			}}).
		Define(connectors.ConfigKey{Name: maskReplacement, Type: connectors.TypeString, Importance: connectors.Low,
			Doc: "Custom value replacement, that will be applied to all 'fields' values (numeric or non-empty string values only).",
			Validate: func(v string) error {
				if javaTrim(v) == "" {
					return fmt.Errorf("String must be non-empty")
				}
				return nil
			}}).
		Define(replaceNullKey())
}

type maskField struct {
	part
	fields                 []string // in the configured order, without repeats
	masked                 map[string]bool
	replacement            *string // nil: mask with the type's null value
	replaceNullWithDefault bool
}

func (t *maskField) Config() *connectors.ConfigDef { return maskFieldConfig() }

func (t *maskField) Configure(props map[string]string) error {
	t.masked = map[string]bool{}
	t.fields = nil
	for _, f := range javaList(props[maskFields]) {
		if !t.masked[f] {
			t.masked[f] = true
			t.fields = append(t.fields, f)
		}
	}
	t.replacement = nil
	if v, ok := configString(props, maskReplacement); ok {
		t.replacement = &v
	}
	t.replaceNullWithDefault = configBool(props, "replace.null.with.default", true)
	return nil
}

// Apply masks a map or a struct. Unlike most transforms MaskField has no
// pass for a null value: a tombstone fails, as in Connect.
func (t *maskField) Apply(r *connectors.Record) (*connectors.Record, error) {
	if t.schema(r) == nil {
		return t.applySchemaless(r)
	}
	return t.applyWithSchema(r)
}

func (t *maskField) applySchemaless(r *connectors.Record) (*connectors.Record, error) {
	m, err := requireMap(t.value(r), maskPurpose)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(m)+len(t.fields))
	for k, v := range m {
		out[k] = v
	}
	// A configured field the map lacks is added as null, as in Connect.
	for _, f := range t.fields {
		mv, err := t.mask(m[f])
		if err != nil {
			return nil, err
		}
		out[f] = mv
	}
	return t.with(r, nil, out), nil
}

func (t *maskField) applyWithSchema(r *connectors.Record) (*connectors.Record, error) {
	v, err := requireStruct(t.value(r), maskPurpose)
	if err != nil {
		return nil, err
	}
	out := connectors.NewStruct(v.Schema)
	for i, f := range v.Schema.Fields {
		x := fieldValue(v, i, t.replaceNullWithDefault)
		if t.masked[f.Name] {
			if x, err = t.mask(x); err != nil {
				return nil, err
			}
		}
		if err := putField(out, i, x); err != nil {
			return nil, err
		}
	}
	return t.with(r, v.Schema, out), nil
}

func (t *maskField) mask(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if t.replacement == nil {
		return maskWithNull(v)
	}
	return maskWithReplacement(v, *t.replacement)
}

// maskWithNull is the "null" value of v's type.
func maskWithNull(v any) (any, error) {
	switch v.(type) {
	case bool:
		return false, nil
	case int8:
		return int8(0), nil
	case int16:
		return int16(0), nil
	case int32:
		return int32(0), nil
	case int64:
		return int64(0), nil
	case int:
		return 0, nil
	case float32:
		return float32(0), nil
	case float64:
		return float64(0), nil
	case *big.Int:
		return new(big.Int), nil
	case *big.Rat:
		return new(big.Rat), nil
	case time.Time:
		return time.UnixMilli(0).UTC(), nil
	case string:
		return "", nil
	case []any:
		return []any{}, nil
	case map[string]any:
		return map[string]any{}, nil
	}
	return nil, fmt.Errorf("Cannot mask value of type: %s", javaClass(v))
}

// maskWithReplacement converts replacement to v's type as Connect does:
// integers through Values.convertTo* (BigDecimal's syntax, truncated, then
// narrowed as a Java cast), floats through BigDecimal.doubleValue,
// decimals and big integers through their constructors.
func maskWithReplacement(v any, replacement string) (any, error) {
	switch v.(type) {
	case string:
		return replacement, nil
	case int8, int16, int32, int64, int, float32, float64:
		d, ok := parseJavaBigDecimal(replacement)
		if !ok {
			return nil, fmt.Errorf("Unable to convert %s (class java.lang.String) to a number", replacement)
		}
		return d.convert(v), nil
	case *big.Rat:
		d, ok := parseJavaBigDecimal(replacement)
		if !ok || d.huge {
			return nil, fmt.Errorf("Unable to convert %s (class java.lang.String) to number", replacement)
		}
		return d.rat(), nil
	case *big.Int:
		n, ok := parseJavaBigInteger(replacement)
		if !ok {
			return nil, fmt.Errorf("Unable to convert %s (class java.lang.String) to number", replacement)
		}
		return n, nil
	}
	return nil, fmt.Errorf("Cannot mask value of type %s with custom replacement.", javaClass(v))
}

// javaBigDecimal is a number in Java's BigDecimal syntax: unscaled × 10^-scale.
// huge marks an exponent too large to expand (|exp| > maxDecimalExponent);
// Java would still hold it, and converts it to 0 (long) or ±Inf/±0
// (double), which convert does too.
type javaBigDecimal struct {
	unscaled *big.Int
	scale    int
	huge     bool
}

const maxDecimalExponent = 10000

// parseJavaBigDecimal parses new BigDecimal(s): an optional sign, digits
// with an optional point (at least one digit), an optional exponent.
func parseJavaBigDecimal(s string) (javaBigDecimal, bool) {
	mant, exp, hasExp := s, "", false
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp, hasExp = s[:i], s[i+1:], true
	}
	neg := false
	if mant != "" && (mant[0] == '+' || mant[0] == '-') {
		neg = mant[0] == '-'
		mant = mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || !allDigits(digits) {
		return javaBigDecimal{}, false
	}
	e := 0
	if hasExp {
		n, ok := parseJavaExponent(exp)
		if !ok {
			return javaBigDecimal{}, false
		}
		e = n
	}
	u, _ := new(big.Int).SetString(digits, 10)
	if neg {
		u.Neg(u)
	}
	d := javaBigDecimal{unscaled: u, scale: len(frac) - e}
	if e > maxDecimalExponent || e < -maxDecimalExponent {
		d.huge = true
	}
	return d, true
}

// parseJavaExponent parses an exponent's optional sign and digits,
// refusing one beyond int, as BigDecimal does.
func parseJavaExponent(s string) (int, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" || !allDigits(s) {
		return 0, false
	}
	n := int64(0)
	for _, c := range s {
		n = n*10 + int64(c-'0')
		if n > math.MaxInt32+1 {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	if n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (d javaBigDecimal) rat() *big.Rat {
	r := new(big.Rat).SetInt(d.unscaled)
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(d.scale))), nil)
	if d.scale > 0 {
		return r.Quo(r, new(big.Rat).SetInt(p))
	}
	return r.Mul(r, new(big.Rat).SetInt(p))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// longValue is BigDecimal.longValue: the integer part's low 64 bits.
func (d javaBigDecimal) longValue() int64 {
	if d.huge {
		return 0 // a multiple of 2^64, or below 1 in magnitude
	}
	r := d.rat()
	q := new(big.Int).Quo(r.Num(), r.Denom()) // truncates toward zero
	// big.Int's And works in two's complement, so this is q mod 2^64.
	return int64(new(big.Int).And(q, low64Mask).Uint64())
}

var low64Mask = new(big.Int).SetUint64(math.MaxUint64)

// doubleValue is BigDecimal.doubleValue, correctly rounded.
func (d javaBigDecimal) doubleValue() float64 {
	if d.huge {
		neg := d.unscaled.Sign() < 0
		switch {
		case d.unscaled.Sign() == 0:
			return 0
		case d.scale < 0:
			return math.Copysign(math.Inf(1), boolSign(neg))
		default:
			return math.Copysign(0, boolSign(neg))
		}
	}
	f, _ := d.rat().Float64()
	return f
}

func boolSign(neg bool) float64 {
	if neg {
		return -1
	}
	return 1
}

// convert narrows d to v's type as Values.convertTo* does.
func (d javaBigDecimal) convert(v any) any {
	switch v.(type) {
	case int8:
		return int8(d.longValue())
	case int16:
		return int16(d.longValue())
	case int32:
		return int32(d.longValue())
	case int:
		return int(d.longValue())
	case float32:
		return float32(d.doubleValue())
	case float64:
		return d.doubleValue()
	}
	return d.longValue()
}

// parseJavaBigInteger parses new BigInteger(s): an optional sign and
// decimal digits.
func parseJavaBigInteger(s string) (*big.Int, bool) {
	t := s
	if t != "" && (t[0] == '+' || t[0] == '-') {
		t = t[1:]
	}
	if t == "" || !allDigits(t) {
		return nil, false
	}
	n, ok := new(big.Int).SetString(s, 10)
	return n, ok
}

func (t *maskField) Close() error { return nil }
