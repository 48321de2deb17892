package converters

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// appendJavaFloat renders f as Java's Double.toString (bits 64) or
// Float.toString (bits 32) do, which is what Jackson writes for Connect's
// float64 and float32 values: the shortest digits that identify f, in plain
// notation with at least one fractional digit when 1e-3 <= |f| < 1e7, else
// as d.dddE<exp>. Non-finite values give NaN, Infinity, -Infinity.
func appendJavaFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	var tmp [40]byte
	s := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits) // [-]d[.ddd]e±xx
	if s[1] == 'e' || s[2] == 'e' {
		// Java (JDK 19+) picks, when one digit would do, the closest
		// decimal of up to two digits: 4.9E-324, not 5.0E-324.
		s = strconv.AppendFloat(tmp[:0], f, 'e', 1, bits)
	}
	if s[0] == '-' {
		b = append(b, '-')
		s = s[1:]
	}
	e := 0
	for i := len(s) - 1; ; i-- {
		if s[i] == 'e' {
			exp := s[i+2:]
			for _, c := range exp {
				e = e*10 + int(c-'0')
			}
			if s[i+1] == '-' {
				e = -e
			}
			s = s[:i]
			break
		}
	}
	var digBuf [24]byte
	digits := append(digBuf[:0], s[0])
	if len(s) > 2 {
		digits = append(digits, s[2:]...)
	}
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if e >= -3 && e < 7 {
		if e < 0 {
			b = append(b, "0."...)
			for i := -1; i > e; i-- {
				b = append(b, '0')
			}
			return append(b, digits...)
		}
		for i := 0; i <= e; i++ {
			if i < len(digits) {
				b = append(b, digits[i])
			} else {
				b = append(b, '0')
			}
		}
		b = append(b, '.')
		if len(digits) > e+1 {
			return append(b, digits[e+1:]...)
		}
		return append(b, '0')
	}
	b = append(b, digits[0], '.')
	if len(digits) > 1 {
		b = append(b, digits[1:]...)
	} else {
		b = append(b, '0')
	}
	b = append(b, 'E')
	return strconv.AppendInt(b, int64(e), 10)
}

// appendJavaBigDecimal renders unscaled * 10^-scale as Java's
// BigDecimal.toString does, which is also what Jackson writes for a
// BigDecimal: plain notation unless the scale is negative or the number is
// smaller than 1e-6, then scientific with an explicit exponent sign.
func appendJavaBigDecimal(b []byte, unscaled *big.Int, scale int) []byte {
	coeff := unscaled.Text(10)
	if coeff[0] == '-' {
		b = append(b, '-')
		coeff = coeff[1:]
	}
	adjusted := -scale + len(coeff) - 1
	switch {
	case scale == 0:
		return append(b, coeff...)
	case scale > 0 && adjusted >= -6:
		if len(coeff) > scale {
			b = append(b, coeff[:len(coeff)-scale]...)
			b = append(b, '.')
			return append(b, coeff[len(coeff)-scale:]...)
		}
		b = append(b, "0."...)
		for i := len(coeff); i < scale; i++ {
			b = append(b, '0')
		}
		return append(b, coeff...)
	}
	b = append(b, coeff[0])
	if len(coeff) > 1 {
		b = append(b, '.')
		b = append(b, coeff[1:]...)
	}
	b = append(b, 'E')
	if adjusted >= 0 {
		b = append(b, '+')
	}
	return strconv.AppendInt(b, int64(adjusted), 10)
}

// decimalScale reads the "scale" parameter of a Decimal schema.
func decimalScale(s *connectors.Schema) (int, error) {
	v, ok := s.Parameters["scale"]
	if !ok {
		return 0, errorf("invalid Decimal schema: scale parameter not found")
	}
	scale, err := strconv.Atoi(v)
	if err != nil {
		return 0, errorf("invalid Decimal schema: scale parameter %q is not an integer", v)
	}
	if scale > maxScale || scale < -maxScale {
		return 0, errorf("invalid Decimal schema: scale %d is beyond ±%d", scale, maxScale)
	}
	return scale, nil
}

// maxScale bounds the powers of ten a decimal costs: a hostile scale of 1e9
// would take gigabytes. PostgreSQL's numeric, among the widest, stops at
// 16383.
const maxScale = 1 << 14

var bigTen = big.NewInt(10)

func pow10(n int) *big.Int {
	return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil)
}

// pow10Int64 holds 10^0 .. 10^18, every power of ten an int64 holds.
var pow10Int64 = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// unscaledOf returns r * 10^scale, which must be an integer.
func unscaledOf(r *big.Rat, scale int) (*big.Int, error) {
	if u, ok := unscaledInt64(r, scale); ok {
		return big.NewInt(u), nil
	}
	return unscaledBig(r, scale)
}

// unscaledInt64 is unscaledOf for the common decimal (a database numeric
// with a few digits), in int64 arithmetic: the general path's power and
// division on big.Int cost more than the rest of a record's JSON. ok is
// false when the operands or the result leave int64, and for a value the
// scale cannot hold exactly, so that the general path decides and words
// the error.
func unscaledInt64(r *big.Rat, scale int) (u int64, ok bool) {
	if scale < 0 || scale >= len(pow10Int64) || !r.Num().IsInt64() || !r.Denom().IsInt64() {
		return 0, false
	}
	num, den, p := r.Num().Int64(), r.Denom().Int64(), pow10Int64[scale]
	// r is in lowest terms, so num * p / den is an integer exactly when
	// den divides p.
	if p%den != 0 {
		return 0, false
	}
	f := p / den
	if num > math.MaxInt64/f || num < math.MinInt64/f {
		return 0, false
	}
	return num * f, true
}

// unscaledBig is unscaledOf for any size.
func unscaledBig(r *big.Rat, scale int) (*big.Int, error) {
	num := new(big.Int).Set(r.Num())
	den := new(big.Int).Set(r.Denom())
	if scale >= 0 {
		num.Mul(num, pow10(scale))
	} else {
		den.Mul(den, pow10(-scale))
	}
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Sign() != 0 {
		// Connect refuses these too ("BigDecimal has mismatching scale
		// value for given Decimal schema"); rounding would lose data.
		return nil, &pathErr{msg: "decimal " + r.RatString() + " does not fit the schema's scale " + strconv.Itoa(scale), scale: true}
	}
	return q, nil
}

// ratOf returns unscaled * 10^-scale.
func ratOf(unscaled *big.Int, scale int) *big.Rat {
	if scale >= 0 {
		return new(big.Rat).SetFrac(unscaled, pow10(scale))
	}
	return new(big.Rat).SetInt(new(big.Int).Mul(unscaled, pow10(-scale)))
}

// BigIntegerBytes is Java's BigInteger.toByteArray, the encoding of an
// unscaled value in Connect's Decimal and in Debezium's
// VariableScaleDecimal, for connectors that build such values.
func BigIntegerBytes(n *big.Int) []byte { return twosComplement(n) }

// twosComplement is Java's BigInteger.toByteArray: the shortest big-endian
// two's-complement encoding, at least one byte.
func twosComplement(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// Same length rule as Java: bitLength excludes the sign bit, and for a
	// negative n it is the bit length of -n-1.
	m := new(big.Int).Neg(n)
	m.Sub(m, big.NewInt(1))
	size := m.BitLen()/8 + 1
	v := new(big.Int).Lsh(big.NewInt(1), uint(size*8))
	v.Add(v, n)
	b := v.Bytes()
	for len(b) < size {
		b = append([]byte{0}, b...)
	}
	return b
}

// appendTwosComplementInt64 is twosComplement for an int64, appended to
// dst: the shortest big-endian two's complement that keeps the sign bit
// (1 to 8 bytes).
func appendTwosComplementInt64(dst []byte, u int64) []byte {
	x := uint64(u)
	if u < 0 {
		x = ^x // the bit length Java counts for a negative value is that of -u-1
	}
	n := bits.Len64(x)/8 + 1
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(uint64(u)>>(8*i)))
	}
	return dst
}

func fromTwosComplement(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return n
}

// minimalScale is the smallest scale at which r is exact, if r has a finite
// decimal expansion.
func minimalScale(r *big.Rat) (int, bool) {
	d := new(big.Int).Set(r.Denom())
	twos, fives := 0, 0
	two, five := big.NewInt(2), big.NewInt(5)
	m := new(big.Int)
	for {
		q, rem := new(big.Int).QuoRem(d, two, m)
		if rem.Sign() != 0 {
			break
		}
		d, twos = q, twos+1
	}
	for {
		q, rem := new(big.Int).QuoRem(d, five, m)
		if rem.Sign() != 0 {
			break
		}
		d, fives = q, fives+1
	}
	if d.Cmp(big.NewInt(1)) != 0 {
		return 0, false
	}
	return max(twos, fives), true
}

const millisPerDay = 24 * 60 * 60 * 1000

func isLogical(s *connectors.Schema, name string, base connectors.SchemaType) bool {
	return s.Name == name && s.Type == base
}

// dateDays is Connect's Date.fromLogical: whole days since the epoch, UTC.
func dateDays(t time.Time) (int32, error) {
	ms := t.UnixMilli()
	if ms%millisPerDay != 0 {
		return 0, errorf("a Date must have no time of day in UTC, got %s", t.UTC().Format(time.RFC3339Nano))
	}
	days := ms / millisPerDay
	if days < math.MinInt32 || days > math.MaxInt32 {
		return 0, errorf("Date %s is out of range of int32 days", t.UTC().Format(time.RFC3339))
	}
	return int32(days), nil
}

// timeMillis is Connect's Time.fromLogical: milliseconds since midnight of
// 1970-01-01 UTC, which the time must fall on.
func timeMillis(t time.Time) (int32, error) {
	ms := t.UnixMilli()
	if ms < 0 || ms > millisPerDay {
		return 0, errorf("a Time must fall on 1970-01-01 UTC, got %s", t.UTC().Format(time.RFC3339Nano))
	}
	return int32(ms), nil
}

// appendJavaString renders v as Java's toString would for the Connect value
// it stands for: numbers as Integer/Double.toString, a Decimal as
// BigDecimal.toString at the schema's scale, a struct as Connect's
// Struct.toString ("Struct{a=1,b=x}", null fields left out), arrays and maps
// as Java's collections ("[1, 2]", "{k=v, k2=v2}" with keys sorted, where Java
// would follow hash order), a time as java.util.Date.toString in UTC. A []byte
// is written as is: Java would print its identity hash, which helps nobody.
func appendJavaString(b []byte, s *connectors.Schema, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return append(b, v...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int8:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case float32:
		return appendJavaFloat(b, float64(v), 32), nil
	case float64:
		return appendJavaFloat(b, v, 64), nil
	case []byte:
		return append(b, v...), nil
	case *big.Rat:
		if v == nil {
			return append(b, "null"...), nil
		}
		scale, exact := minimalScale(v)
		if s != nil && isLogical(s, connectors.DecimalLogical, connectors.Bytes) {
			var err error
			if scale, err = decimalScale(s); err != nil {
				return nil, err
			}
			exact = true
		}
		if !exact {
			return append(b, v.RatString()...), nil
		}
		u, err := unscaledOf(v, scale)
		if err != nil {
			return nil, err
		}
		return appendJavaBigDecimal(b, u, scale), nil
	case time.Time:
		return v.UTC().AppendFormat(b, "Mon Jan 02 15:04:05 UTC 2006"), nil
	case []any:
		var items *connectors.Schema
		if s != nil {
			items = s.Items
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ", "...)
			}
			var err error
			if b, err = appendJavaString(b, items, e); err != nil {
				return nil, inElem(err, index(i))
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		var vals *connectors.Schema
		if s != nil {
			vals = s.Values
		}
		b = append(b, '{')
		for i, k := range sortedKeys(v) {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, k...)
			b = append(b, '=')
			var err error
			if b, err = appendJavaString(b, vals, v[k]); err != nil {
				return nil, inElem(err, mapKey(k))
			}
		}
		return append(b, '}'), nil
	case *connectors.StructValue:
		if v == nil || v.Schema == nil {
			return append(b, "null"...), nil
		}
		if len(v.Values) != len(v.Schema.Fields) {
			return nil, errorf("struct has %d values for %d fields", len(v.Values), len(v.Schema.Fields))
		}
		b = append(b, "Struct{"...)
		first := true
		for i, f := range v.Schema.Fields {
			if v.Values[i] == nil {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, f.Name...)
			b = append(b, '=')
			var err error
			if b, err = appendJavaString(b, f.Schema, v.Values[i]); err != nil {
				return nil, inField(err, f.Name)
			}
		}
		return append(b, '}'), nil
	}
	return nil, errorf("cannot render a value of Go type %s", typeName(v))
}
