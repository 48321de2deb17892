package converters

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"

	"github.com/sluice-io/sluice/connectors"
)

// javaDecimal is a number as Java's new BigDecimal(String) reads it: the
// value is ±digits × 10^-scale. Keeping the text's digits and scale,
// rather than a *big.Rat, lets the parser decide what a number is without
// materialising 10^100000000 for "1e+100000000", as BigDecimal does not.
type javaDecimal struct {
	neg bool
	// digits are the unscaled magnitude in ASCII, without leading zeros:
	// "" is zero.
	digits string
	scale  int32
}

// parseJavaDecimal reads s as new BigDecimal(s) does: an optional sign, at
// least one digit with at most one '.', and an optional exponent (e or E,
// an optional sign, at most 10 significant digits) that ends the text.
// Digits are any Unicode decimal digit of the Basic Multilingual Plane, as
// Java's Character.isDigit on a char. The scale must fit in an int.
func parseJavaDecimal(s string) (javaDecimal, bool) {
	var d javaDecimal
	if s != "" && (s[0] == '-' || s[0] == '+') {
		d.neg = s[0] == '-'
		s = s[1:]
	}
	var scale int64
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, ok := parseJavaExponent(s[i+1:])
		if !ok {
			return d, false
		}
		s, scale = s[:i], -exp
	}
	var digits []byte
	dot, sawDigit := false, false
	for _, r := range s {
		if r == '.' && !dot {
			dot = true
			continue
		}
		v, ok := javaDigit(r)
		if !ok {
			return d, false
		}
		sawDigit = true
		if len(digits) > 0 || v != 0 {
			digits = append(digits, byte('0'+v))
		}
		if dot {
			scale++
		}
	}
	if !sawDigit || scale > math.MaxInt32 || scale < math.MinInt32 {
		return d, false
	}
	d.digits, d.scale = string(digits), int32(scale)
	return d, true
}

// parseJavaExponent reads BigDecimal's exponent: an optional sign and the
// rest of the text as digits, of which at most 10 may follow leading
// zeros, fitting in an int.
func parseJavaExponent(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var ds []int
	for _, r := range s {
		v, ok := javaDigit(r)
		if !ok {
			return 0, false
		}
		ds = append(ds, v)
	}
	for len(ds) > 10 && ds[0] == 0 {
		ds = ds[1:]
	}
	if len(ds) == 0 || len(ds) > 10 {
		return 0, false
	}
	var exp int64
	for _, v := range ds {
		exp = exp*10 + int64(v)
	}
	if neg {
		exp = -exp
	}
	return exp, exp >= math.MinInt32 && exp <= math.MaxInt32
}

// javaDigit is Java's Character.digit(c, 10) for a char: the value of a
// Unicode decimal digit (general category Nd) of the Basic Multilingual
// Plane. A supplementary digit is two chars in Java, neither a digit.
func javaDigit(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r > 0xFFFF || !unicode.IsDigit(r) {
		return 0, false
	}
	// Unicode encodes every set of decimal digits as a run of ten code
	// points from zero to nine, and adjacent sets start on a multiple of
	// ten from the first one's zero.
	start := r
	for unicode.IsDigit(start - 1) {
		start--
	}
	return int(r-start) % 10, true
}

// isJavaDigit is Character.isDigit for a char.
func isJavaDigit(r rune) bool {
	_, ok := javaDigit(r)
	return ok
}

// integral returns d as an int64 if it is a whole number within ±1e19
// that fits a long, as Values.parseAsExactDecimal (4.1) decides.
func (d javaDecimal) integral() (int64, bool) {
	n := int64(len(d.digits))
	if n == 0 {
		return 0, true
	}
	intDigits := n - int64(d.scale)
	switch {
	case intDigits <= 0: // 0 < |d| < 1
		return 0, false
	case intDigits > 20: // |d| >= 1e20
		return 0, false
	case intDigits == 20 && (d.digits[0] != '1' || strings.TrimRight(d.digits[1:], "0") != ""):
		return 0, false // 1e19 < |d| < 1e20
	}
	text := d.digits
	if d.scale > 0 {
		if strings.TrimRight(text[n-int64(d.scale):], "0") != "" {
			return 0, false
		}
		text = text[:n-int64(d.scale)]
	} else {
		text += strings.Repeat("0", int(-d.scale))
	}
	u, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, false
	}
	switch {
	case !d.neg && u <= math.MaxInt64:
		return int64(u), true
	case d.neg && u <= 1<<63:
		return -int64(u), true
	}
	return 0, false
}

// float returns d correctly rounded to bits (32 or 64), as BigDecimal's
// floatValue and doubleValue, ±Inf when it is beyond the range.
func (d javaDecimal) float(bits int) float64 {
	if d.digits == "" {
		return 0
	}
	s := d.digits + "e" + strconv.FormatInt(-int64(d.scale), 10)
	if d.neg {
		s = "-" + s
	}
	f, _ := strconv.ParseFloat(s, bits) // ±Inf with ErrRange on overflow
	return f
}

// rat returns d as a *big.Rat; its scale must be within ±maxScale.
func (d javaDecimal) rat() *big.Rat {
	u := new(big.Int)
	if d.digits != "" {
		u.SetString(d.digits, 10)
	}
	if d.neg {
		u.Neg(u)
	}
	return ratOf(u, int(d.scale))
}

// parseAsNumber is Values.ValueParser.parseAsNumber (4.1): the smallest
// integer type that holds a whole number within ±1e19, else a float32 or
// float64 for a number with a fractional part or an exponent when it is
// in range, else a Decimal at the text's scale (a whole number beyond a
// long, or a number beyond a double).
//
// Unlike Connect, a Decimal whose scale is beyond ±16384 (maxScale) is
// not a number here: "1e+100000000" is a Decimal of scale -100000000 in
// Connect, which a *big.Rat could only hold as a 100-million-digit
// integer; the parser then reads the text as Connect reads text that is
// no number.
func parseAsNumber(token string) (*schemaAndValue, bool) {
	d, ok := parseJavaDecimal(token)
	if !ok {
		return nil, false
	}
	if v, ok := d.integral(); ok {
		switch {
		case v == int64(int8(v)):
			return &schemaAndValue{connectors.Int8Schema, int8(v)}, true
		case v == int64(int16(v)):
			return &schemaAndValue{connectors.Int16Schema, int16(v)}, true
		case v == int64(int32(v)):
			return &schemaAndValue{connectors.Int32Schema, int32(v)}, true
		}
		return &schemaAndValue{connectors.Int64Schema, v}, true
	}
	if d.scale != 0 {
		if f := d.float(32); !math.IsInf(f, 0) {
			return &schemaAndValue{connectors.Float32Schema, float32(f)}, true
		}
		if f := d.float(64); !math.IsInf(f, 0) {
			return &schemaAndValue{connectors.Float64Schema, f}, true
		}
	}
	if d.scale > maxScale || d.scale < -maxScale {
		return nil, false
	}
	return &schemaAndValue{parsedDecimalSchema(int(d.scale)), d.rat()}, true
}

// parsedDecimalSchema is Connect's Decimal.schema(scale).
func parsedDecimalSchema(scale int) *connectors.Schema {
	return &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1,
		Parameters: map[string]string{"scale": strconv.Itoa(scale)}}
}

// javaLongOfRat is BigDecimal.longValue: r truncated toward zero, then
// its low 64 bits.
func javaLongOfRat(r *big.Rat) int64 {
	q := new(big.Int).Quo(r.Num(), r.Denom())
	m := new(big.Int).Lsh(big.NewInt(1), 64)
	q.Mod(q, m)
	return int64(q.Uint64())
}

// javaLongOfDouble is Java's (long) cast of a double: truncation toward
// zero, saturating, NaN as 0.
func javaLongOfDouble(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// javaIntOfDouble is Java's (int) cast of a double.
func javaIntOfDouble(f float64) int32 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}
