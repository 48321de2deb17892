package transforms

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sluice-io/sluice/connectors"
)

// Cast's conversions of one value, with Java's semantics: Connect's Cast
// relies on Number.intValue() and friends, the parse methods of the boxed
// types and their toString, and so must this port, or a value would cast
// to a different number or string than under Connect.

// errNumberFormat stands for Java's NumberFormatException, which Cast
// turns into its "out of range" error.
var errNumberFormat = errors.New("number format")

const millisPerDay = 24 * 60 * 60 * 1000

// castValue is Cast.castValueToType: v (of schema s, or schemaless when s
// is nil) cast to target. A null stays null.
func castValue(s *connectors.Schema, v any, target connectors.SchemaType) (any, error) {
	if v == nil {
		return nil, nil
	}
	var inferred connectors.SchemaType
	if s == nil {
		t, ok := schemaTypeOf(v)
		if !ok {
			return nil, fmt.Errorf("Cast transformation was passed a value of type %s which is not supported by Connect's data API", javaClass(v))
		}
		inferred = t
	} else {
		inferred = s.Type
	}
	if !hasType(castInputTypes, inferred) {
		return nil, fmt.Errorf("Cast transformation does not support casting from %s; supported types are %s",
			typeName(inferred), typeList(castInputTypes))
	}
	orig := v
	if s != nil && s.Name != "" && target != connectors.String {
		var err error
		if v, err = encodeLogical(s, v); err != nil {
			return nil, err
		}
	}
	out, err := castTo(v, target, s)
	if errors.Is(err, errNumberFormat) {
		return nil, fmt.Errorf("Value (%s) was out of range for requested data type", castToString(orig, s))
	}
	return out, err
}

func castTo(v any, target connectors.SchemaType, s *connectors.Schema) (any, error) {
	if target == connectors.String {
		return castToString(v, s), nil
	}
	if target == connectors.Boolean {
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			// Boolean.parseBoolean: "true" in any case, anything else false.
			return strings.EqualFold(x, "true"), nil
		}
		n, ok := toJavaNumber(v)
		if !ok {
			return nil, unexpectedCastType(v)
		}
		return n.long() != 0, nil
	}
	switch x := v.(type) {
	case bool:
		return castBool(x, target), nil
	case string:
		return parseJavaNumber(x, target)
	}
	n, ok := toJavaNumber(v)
	if !ok {
		return nil, unexpectedCastType(v)
	}
	switch target {
	case connectors.Int8:
		return int8(n.int()), nil
	case connectors.Int16:
		return int16(n.int()), nil
	case connectors.Int32:
		return n.int(), nil
	case connectors.Int64:
		return n.long(), nil
	case connectors.Float32:
		return n.float(), nil
	case connectors.Float64:
		return n.double(), nil
	}
	return nil, fmt.Errorf("%s is not supported in the Cast transformation.", typeName(target))
}

func unexpectedCastType(v any) error {
	return fmt.Errorf("Unexpected type in Cast transformation: %s", javaClass(v))
}

func castBool(b bool, target connectors.SchemaType) any {
	var i int64
	if b {
		i = 1
	}
	switch target {
	case connectors.Int8:
		return int8(i)
	case connectors.Int16:
		return int16(i)
	case connectors.Int32:
		return int32(i)
	case connectors.Int64:
		return i
	case connectors.Float32:
		return float32(i)
	}
	return float64(i)
}

// encodeLogical is Cast.encodeLogicalType: a Date, Time or Timestamp as
// the number Connect stores for it (days, millis of the day, millis since
// the epoch), with the logical types' own checks. Other names, Decimal
// included, leave the value as it is.
func encodeLogical(s *connectors.Schema, v any) (any, error) {
	var kind string
	switch s.Name {
	case connectors.DateLogical:
		kind = "Date"
	case connectors.TimeLogical:
		kind = "Time"
	case connectors.TimestampLogical:
		kind = "Timestamp"
	default:
		return v, nil
	}
	t, ok := v.(time.Time)
	if !ok {
		return nil, fmt.Errorf("%s cannot be cast to class java.util.Date", javaClass(v))
	}
	ms := t.UnixMilli()
	switch kind {
	case "Date":
		u := t.UTC()
		if u.Hour() != 0 || u.Minute() != 0 || u.Second() != 0 || u.Nanosecond()/1e6 != 0 {
			return nil, fmt.Errorf("Kafka Connect Date type should not have any time fields set to non-zero values.")
		}
		return int32(ms / millisPerDay), nil
	case "Time":
		if ms < 0 || ms > millisPerDay {
			return nil, fmt.Errorf("Kafka Connect Time type should not have any date fields set to non-zero values.")
		}
		return int32(ms), nil
	}
	return ms, nil
}

// javaNumber is a value Java sees as a java.lang.Number, with Number's
// conversions: integers wrap to the narrower width, floats saturate (NaN
// is 0), decimals truncate then keep the low-order bits.
type javaNumber struct {
	i     int64
	f     float64
	r     *big.Rat
	isInt bool
}

func toJavaNumber(v any) (javaNumber, bool) {
	switch x := v.(type) {
	case int8:
		return javaNumber{i: int64(x), isInt: true}, true
	case int16:
		return javaNumber{i: int64(x), isInt: true}, true
	case int32:
		return javaNumber{i: int64(x), isInt: true}, true
	case int64:
		return javaNumber{i: x, isInt: true}, true
	case float32:
		return javaNumber{f: float64(x)}, true
	case float64:
		return javaNumber{f: x}, true
	case *big.Rat:
		if x != nil {
			return javaNumber{r: x}, true
		}
	}
	return javaNumber{}, false
}

// long is Number.longValue().
func (n javaNumber) long() int64 {
	switch {
	case n.isInt:
		return n.i
	case n.r != nil:
		return decimalLongValue(n.r)
	}
	switch {
	case math.IsNaN(n.f):
		return 0
	case n.f >= math.MaxInt64:
		return math.MaxInt64
	case n.f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(n.f)
}

// int is Number.intValue(); byteValue and shortValue narrow it further.
func (n javaNumber) int() int32 {
	if n.isInt || n.r != nil {
		return int32(n.long())
	}
	switch {
	case math.IsNaN(n.f):
		return 0
	case n.f >= math.MaxInt32:
		return math.MaxInt32
	case n.f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(n.f)
}

// float is Number.floatValue(): the nearest float32.
func (n javaNumber) float() float32 {
	switch {
	case n.isInt:
		return float32(n.i)
	case n.r != nil:
		f, _ := n.r.Float32()
		return f
	}
	return float32(n.f)
}

// double is Number.doubleValue(): the nearest float64.
func (n javaNumber) double() float64 {
	switch {
	case n.isInt:
		return float64(n.i)
	case n.r != nil:
		f, _ := n.r.Float64()
		return f
	}
	return n.f
}

// decimalLongValue is BigDecimal.longValue(): the integer part's
// low-order 64 bits, two's complement.
func decimalLongValue(r *big.Rat) int64 {
	q := new(big.Int).Quo(r.Num(), r.Denom())
	mask := new(big.Int).SetUint64(math.MaxUint64)
	return int64(q.And(q, mask).Uint64())
}

// castToString is Cast.castToString: Java's toString of the value, dates
// as Connect's Values.dateFormatFor formats them, bytes in base64. s gives
// a Decimal's scale.
func castToString(v any, s *connectors.Schema) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float32:
		return javaFloatString(float64(x), 32)
	case float64:
		return javaFloatString(x, 64)
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case time.Time:
		return javaDateString(x)
	case *big.Rat:
		scale, ok := decimalScale(s)
		return javaDecimalString(x, scale, ok)
	}
	return fmt.Sprint(v)
}

// javaDateString is Values.dateFormatFor(d).format(d), in UTC: a time of
// day for instants before the epoch's second day, a date at a midnight,
// a timestamp otherwise.
func javaDateString(t time.Time) string {
	ms := t.UnixMilli()
	u := t.UTC()
	switch {
	case ms < millisPerDay:
		return u.Format("15:04:05.000Z")
	case ms%millisPerDay == 0:
		return javaYear(u.Year()) + u.Format("-01-02")
	}
	return javaYear(u.Year()) + u.Format("-01-02T15:04:05.000Z")
}

// javaYear is SimpleDateFormat's yyyy: at least four digits.
func javaYear(y int) string {
	return fmt.Sprintf("%04d", y)
}

// javaFloatString is Java's Float.toString (bits 32) or Double.toString
// (bits 64) as of JDK 19: the shortest decimal that reads back as the
// value, plain from 10^-3 up to 10^7, else in computerized scientific
// notation (1.0E10), always with a digit after the point.
func javaFloatString(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	digits, x := javaFloatDigits(f, bits)
	if f >= 1e-3 && f < 1e7 {
		return sign + plainDecimal(digits, x)
	}
	frac := digits[1:]
	if frac == "" {
		frac = "0"
	}
	return sign + digits[:1] + "." + frac + "E" + strconv.Itoa(x)
}

// javaFloatDigits is the decimal Java picks for f > 0: its significant
// digits (no trailing zeros) and the exponent of the first. It is the
// shortest that reads back as f, except that where one digit would do,
// Java takes the two-digit decimal closest to f if it reads back as f
// (4.9E-324, not 5E-324).
func javaFloatDigits(f float64, bits int) (string, int) {
	digits, x := splitFloatE(strconv.FormatFloat(f, 'e', -1, bits))
	if len(digits) == 1 {
		two := strconv.FormatFloat(f, 'e', 1, bits)
		if back, err := strconv.ParseFloat(two, bits); err == nil && back == f {
			digits, x = splitFloatE(two)
		}
	}
	return digits, x
}

// splitFloatE splits Go's d.ddde±x into its digits, trailing zeros
// dropped, and x.
func splitFloatE(e string) (string, int) {
	at := strings.IndexByte(e, 'e')
	mant := e[:at]
	x, _ := strconv.Atoi(e[at+1:])
	digits := mant[:1]
	if len(mant) > 2 {
		digits += mant[2:]
	}
	if t := strings.TrimRight(digits, "0"); t != "" {
		digits = t
	} else {
		digits = "0"
	}
	return digits, x
}

// plainDecimal writes digits d1d2d3... (the first of exponent x) without an
// exponent, with at least one digit after the point.
func plainDecimal(digits string, x int) string {
	if x < 0 {
		return "0." + zeroDigits(-x-1) + digits
	}
	if x+1 >= len(digits) {
		return digits + zeroDigits(x+1-len(digits)) + ".0"
	}
	return digits[:x+1] + "." + digits[x+1:]
}

func zeroDigits(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return string(b)
}

// decimalScale is the scale of a Decimal schema; false when s is not one
// or has no valid scale.
func decimalScale(s *connectors.Schema) (int, bool) {
	if s == nil || s.Name != connectors.DecimalLogical {
		return 0, false
	}
	n, err := strconv.Atoi(s.Parameters["scale"])
	return n, err == nil
}

// javaDecimalString is BigDecimal.toString of r at the scale of its
// Decimal schema (with no scale, the smallest scale, at least 0, that
// holds r exactly): plain unless the scale is negative or the value is
// under 10^-6, then scientific (1E-7, 1.2E+3). A value that needs more
// digits than the scale allows keeps them all, as a BigDecimal of a
// larger scale would; one with no finite decimal form is rounded half up
// at the scale.
func javaDecimalString(r *big.Rat, scale int, hasScale bool) string {
	unscaled, sc := unscaledAt(r, scale, hasScale)
	neg := unscaled.Sign() < 0
	coeff := new(big.Int).Abs(unscaled).String()
	adjusted := -sc + len(coeff) - 1
	var out string
	switch {
	case sc >= 0 && adjusted >= -6:
		switch {
		case sc == 0:
			out = coeff
		case len(coeff) > sc:
			out = coeff[:len(coeff)-sc] + "." + coeff[len(coeff)-sc:]
		default:
			out = "0." + zeroDigits(sc-len(coeff)) + coeff
		}
	default:
		out = coeff[:1]
		if len(coeff) > 1 {
			out += "." + coeff[1:]
		}
		out += "E"
		if adjusted > 0 {
			out += "+"
		}
		out += strconv.Itoa(adjusted)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// unscaledAt is r's unscaled value at scale, or at the smallest larger
// scale that holds it exactly, with the scale used.
func unscaledAt(r *big.Rat, scale int, hasScale bool) (*big.Int, int) {
	// r has a finite decimal form iff its denominator is 2^a·5^b, and then
	// needs max(a, b) digits after the point.
	d := new(big.Int).Set(r.Denom())
	twos, fives := 0, 0
	for d.Bit(0) == 0 {
		d.Rsh(d, 1)
		twos++
	}
	five, m := big.NewInt(5), new(big.Int)
	for {
		q, rem := new(big.Int).QuoRem(d, five, m)
		if rem.Sign() != 0 {
			break
		}
		d = q
		fives++
	}
	need := max(twos, fives)
	if !hasScale {
		scale = 0
	}
	n := new(big.Rat).Mul(r, pow10Rat(scale))
	if n.IsInt() {
		return new(big.Int).Set(n.Num()), scale
	}
	if d.Cmp(big.NewInt(1)) == 0 {
		n = new(big.Rat).Mul(r, pow10Rat(need))
		return new(big.Int).Set(n.Num()), need
	}
	// Round half up (away from zero).
	q, rem := new(big.Int).QuoRem(n.Num(), n.Denom(), new(big.Int))
	if rem.Abs(rem).Lsh(rem, 1).Cmp(n.Denom()) >= 0 {
		q.Add(q, big.NewInt(int64(n.Num().Sign())))
	}
	return q, scale
}

// pow10Rat is 10^n, n of either sign.
func pow10Rat(n int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(intAbs(n))), nil)
	if n < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

func intAbs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// parseJavaNumber is Byte.parseByte, Short.parseShort, Integer.parseInt,
// Long.parseLong, Float.parseFloat or Double.parseDouble of s, by target;
// errNumberFormat where Java throws NumberFormatException.
func parseJavaNumber(s string, target connectors.SchemaType) (any, error) {
	switch target {
	case connectors.Float32, connectors.Float64:
		bits := 64
		if target == connectors.Float32 {
			bits = 32
		}
		f, err := parseJavaFloat(s, bits)
		if err != nil {
			return nil, err
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	}
	bits := map[connectors.SchemaType]int{connectors.Int8: 8, connectors.Int16: 16, connectors.Int32: 32, connectors.Int64: 64}[target]
	if bits == 0 {
		return nil, fmt.Errorf("%s is not supported in the Cast transformation.", typeName(target))
	}
	n, err := parseJavaInt(s, bits)
	if err != nil {
		return nil, err
	}
	switch bits {
	case 8:
		return int8(n), nil
	case 16:
		return int16(n), nil
	case 32:
		return int32(n), nil
	}
	return n, nil
}

// parseJavaInt is Java's decimal integer parsing: an optional sign, then
// digits, which may be any of Unicode's decimal digits of the Basic
// Multilingual Plane (Character.digit), within the range of the width.
// Unlike Go's it allows no underscores and no base prefix.
func parseJavaInt(s string, bits int) (int64, error) {
	rs := []rune(s)
	if len(rs) == 0 {
		return 0, errNumberFormat
	}
	neg, i := false, 0
	if rs[0] == '-' || rs[0] == '+' {
		neg, i = rs[0] == '-', 1
		if len(rs) == 1 {
			return 0, errNumberFormat
		}
	}
	limit := new(big.Int).Lsh(big.NewInt(1), uint(bits-1)) // 2^(bits-1)
	n := new(big.Int)
	for ; i < len(rs); i++ {
		d, ok := javaDigit(rs[i])
		if !ok {
			return 0, errNumberFormat
		}
		n.Mul(n, big.NewInt(10)).Add(n, big.NewInt(int64(d)))
		if n.Cmp(limit) > 0 {
			return 0, errNumberFormat
		}
	}
	if neg {
		n.Neg(n)
	} else if n.Cmp(limit) == 0 {
		return 0, errNumberFormat
	}
	return n.Int64(), nil
}

// javaDigit is Character.digit(ch, 10) for a char: the value of a decimal
// digit (Unicode category Nd) of the Basic Multilingual Plane. Unicode
// lays each script's digits out as a run of ten from zero.
func javaDigit(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r > 0xFFFF || !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	for _, rg := range unicode.Nd.R16 {
		if uint16(r) >= rg.Lo && uint16(r) <= rg.Hi {
			return int(uint16(r)-rg.Lo) % 10, true
		}
	}
	return 0, false
}

// javaFloatSyntax is the grammar of Double.valueOf once the string is
// trimmed: NaN, Infinity, a decimal or a hexadecimal floating-point
// literal, each with an optional sign and the decimal forms with an
// optional type suffix.
var javaFloatSyntax = regexp.MustCompile(`^[+-]?(?:NaN|Infinity|` +
	`(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|` +
	`0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)$`)

// parseJavaFloat is Double.parseDouble (bits 64) or Float.parseFloat
// (bits 32): Java's syntax (no "inf", no underscores, an optional f or d
// suffix, surrounding control characters and spaces ignored), rounded to
// the width, overflowing to an infinity rather than failing.
func parseJavaFloat(s string, bits int) (float64, error) {
	t := javaTrim(s)
	if !javaFloatSyntax.MatchString(t) {
		return 0, errNumberFormat
	}
	// A valid literal ending in f or d ends with its type suffix (a hex
	// literal ends with its decimal exponent).
	if strings.ContainsRune("fFdD", rune(t[len(t)-1])) {
		t = t[:len(t)-1]
	}
	t = strings.Replace(t, "Infinity", "Inf", 1)
	f, err := strconv.ParseFloat(t, bits)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, errNumberFormat
	}
	return f, nil
}
