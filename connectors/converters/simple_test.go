package converters

import (
	"bytes"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

func TestStringConverter(t *testing.T) {
	point := connectors.StructSchema("p",
		connectors.Field{Name: "x", Schema: connectors.Int32Schema},
		connectors.Field{Name: "y", Schema: connectors.StringSchema.Optionally()},
		connectors.Field{Name: "d", Schema: decimalSchema("3")},
	)
	tests := []struct {
		schema *connectors.Schema
		value  any
		want   string
	}{
		{connectors.StringSchema, "héllo", "héllo"},
		{nil, "", ""},
		{connectors.Int32Schema, int32(-42), "-42"},
		{connectors.Int64Schema, int64(math.MaxInt64), "9223372036854775807"},
		{connectors.Int8Schema, int8(7), "7"},
		{connectors.BooleanSchema, true, "true"},
		{connectors.Float64Schema, 1.0, "1.0"},
		{connectors.Float64Schema, 1e21, "1.0E21"},
		{connectors.Float32Schema, float32(0.1), "0.1"},
		{connectors.Float64Schema, math.Inf(1), "Infinity"},
		{connectors.BytesSchema, []byte("raw\xff"), "raw\xff"},
		{decimalSchema("4"), rat("1.5"), "1.5000"},
		{decimalSchema("8"), rat("0.00000001"), "1E-8"},
		{nil, rat("1/8"), "0.125"},
		{nil, rat("1/3"), "1/3"},
		{timestampSchema, time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), "Thu Jan 01 00:00:00 UTC 1970"},
		{nil, []any{int32(1), "a", nil}, "[1, a, null]"},
		{nil, map[string]any{"b": int64(2), "a": []any{}}, "{a=[], b=2}"},
		{point, &connectors.StructValue{Schema: point, Values: []any{int32(1), nil, rat("2")}}, "Struct{x=1,d=2.000}"},
	}
	c := &StringConverter{}
	if err := c.Configure(map[string]string{"converter.encoding": "utf-8"}, false); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		got, err := c.FromConnect("t", tc.schema, tc.value)
		if err != nil || string(got) != tc.want {
			t.Errorf("FromConnect(%#v) = %q, %v; want %q", tc.value, got, err, tc.want)
		}
	}
	if b, err := c.FromConnect("t", connectors.StringSchema, nil); b != nil || err != nil {
		t.Errorf("nil value gave %q, %v", b, err)
	}
	if _, err := c.FromConnect("t", nil, struct{}{}); err == nil || !strings.Contains(err.Error(), "struct {}") {
		t.Errorf("unknown type error = %v", err)
	}
	if _, err := c.FromConnect("t", decimalSchema("1"), rat("0.25")); err == nil || !strings.Contains(err.Error(), "scale 1") {
		t.Errorf("decimal beyond scale error = %v", err)
	}

	s, v, err := c.ToConnect("t", []byte("héllo"))
	if err != nil || s != connectors.OptionalStringSchema || v != "héllo" {
		t.Errorf("ToConnect = %v, %#v, %v", s, v, err)
	}
	s, v, err = c.ToConnect("t", nil)
	if err != nil || s != connectors.OptionalStringSchema || v != nil {
		t.Errorf("ToConnect(nil) = %v, %#v, %v; want Connect's OPTIONAL_STRING_SCHEMA with nil", s, v, err)
	}
	if s, v, _ := c.ToConnect("t", []byte{}); v != "" || s == nil {
		t.Errorf("empty bytes gave %#v, want the empty string", v)
	}

	for _, enc := range []string{"UTF8", "utf-8", " UTF-8 "} {
		if err := (&StringConverter{}).Configure(map[string]string{"converter.encoding": enc}, true); err != nil {
			t.Errorf("encoding %q: %v", enc, err)
		}
	}
	err = (&StringConverter{}).Configure(map[string]string{"converter.encoding": "ISO-8859-1"}, false)
	if err == nil || !strings.Contains(err.Error(), "converter.encoding") || !strings.Contains(err.Error(), "only UTF-8") {
		t.Errorf("ISO-8859-1 gave %v", err)
	}
}

func TestByteArrayConverter(t *testing.T) {
	c := &ByteArrayConverter{}
	in := []byte{0, 1, 2}
	out, err := c.FromConnect("t", connectors.BytesSchema, in)
	if err != nil || &out[0] != &in[0] {
		t.Errorf("FromConnect copied or failed: %v", err)
	}
	if out, err := c.FromConnect("t", nil, nil); out != nil || err != nil {
		t.Errorf("nil gave %v, %v", out, err)
	}
	if _, err := c.FromConnect("t", nil, "text"); err == nil || !strings.Contains(err.Error(), "string") {
		t.Errorf("string value error = %v", err)
	}
	if _, err := c.FromConnect("t", connectors.StringSchema, []byte("x")); err == nil || !strings.Contains(err.Error(), "string") {
		t.Errorf("string schema error = %v", err)
	}
	s, v, err := c.ToConnect("t", in)
	if err != nil || s != connectors.OptionalBytesSchema || !bytes.Equal(v.([]byte), in) {
		t.Errorf("ToConnect = %v, %v, %v", s, v, err)
	}
	if s, v, _ := c.ToConnect("t", nil); s != connectors.OptionalBytesSchema || v.([]byte) != nil {
		t.Errorf("ToConnect(nil) = %v, %#v", s, v)
	}
}

// TestNumberConverters checks the encodings of Kafka's IntegerSerializer
// and friends: big-endian two's complement and IEEE 754.
func TestNumberConverters(t *testing.T) {
	tests := []struct {
		class  string
		value  any
		bytes  []byte
		schema *connectors.Schema
	}{
		{"ShortConverter", int16(-2), []byte{0xff, 0xfe}, OptionalInt16Schema},
		{"IntegerConverter", int32(0x01020304), []byte{1, 2, 3, 4}, OptionalInt32Schema},
		{"IntegerConverter", int32(math.MinInt32), []byte{0x80, 0, 0, 0}, OptionalInt32Schema},
		{"LongConverter", int64(-1), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, connectors.OptionalInt64Schema},
		{"LongConverter", int64(256), []byte{0, 0, 0, 0, 0, 0, 1, 0}, connectors.OptionalInt64Schema},
		{"FloatConverter", float32(1.5), []byte{0x3f, 0xc0, 0, 0}, OptionalFloat32Schema},
		{"DoubleConverter", -2.0, []byte{0xc0, 0, 0, 0, 0, 0, 0, 0}, OptionalFloat64Schema},
		{"BooleanConverter", true, []byte{1}, OptionalBooleanSchema},
		{"BooleanConverter", false, []byte{0}, OptionalBooleanSchema},
	}
	for _, tc := range tests {
		for _, isKey := range []bool{false, true} {
			c, err := New(tc.class)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Configure(nil, isKey); err != nil {
				t.Fatal(err)
			}
			b, err := c.FromConnect("t", nil, tc.value)
			if err != nil || !bytes.Equal(b, tc.bytes) {
				t.Errorf("%s.FromConnect(%v) = %x, %v; want %x", tc.class, tc.value, b, err, tc.bytes)
			}
			s, v, err := c.ToConnect("t", tc.bytes)
			if err != nil || s != tc.schema || v != tc.value {
				t.Errorf("%s.ToConnect(%x) = %v, %#v, %v; want %#v", tc.class, tc.bytes, s, v, err, tc.value)
			}
			if b, err := c.FromConnect("t", nil, nil); b != nil || err != nil {
				t.Errorf("%s: nil gave %x, %v", tc.class, b, err)
			}
			if s, v, err := c.ToConnect("t", nil); s != tc.schema || v != nil || err != nil {
				t.Errorf("%s: ToConnect(nil) = %v, %v, %v", tc.class, s, v, err)
			}
			if _, _, err := c.ToConnect("t", append(tc.bytes, 0)); err == nil || !strings.Contains(err.Error(), "exactly") {
				t.Errorf("%s: wrong length error = %v", tc.class, err)
			}
			if _, err := c.FromConnect("t", nil, "1"); err == nil || !strings.Contains(err.Error(), "string") {
				t.Errorf("%s: string value error = %v", tc.class, err)
			}
		}
	}
	ic, _ := New("IntegerConverter")
	if _, err := ic.FromConnect("t", nil, int64(1)); err == nil || !strings.Contains(err.Error(), "want int32") {
		t.Errorf("int64 into IntegerConverter: %v", err)
	}
	bc, _ := New("BooleanConverter")
	if _, _, err := bc.ToConnect("t", []byte{2}); err == nil || !strings.Contains(err.Error(), "unexpected byte 2") {
		t.Errorf("byte 2: %v", err)
	}
	if _, err := bc.FromConnect("t", connectors.Int32Schema, true); err == nil || !strings.Contains(err.Error(), "int32") {
		t.Errorf("int32 schema: %v", err)
	}
	dc, _ := New("DoubleConverter")
	_, v, err := dc.ToConnect("t", []byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 1})
	if f, ok := v.(float64); err != nil || !ok || !math.IsNaN(f) {
		t.Errorf("NaN bits read as %v, %v", v, err)
	}
}

func TestJavaFloat(t *testing.T) {
	// Java's Double.toString / Float.toString (JDK 19+) of the same values.
	doubles := map[float64]string{
		1:                           "1.0",
		-1:                          "-1.0",
		100:                         "100.0",
		12.34:                       "12.34",
		0.001:                       "0.001",
		0.002:                       "0.002",
		0.0001:                      "1.0E-4",
		1234567:                     "1234567.0",
		9999999:                     "9999999.0",
		1e7:                         "1.0E7",
		123456789:                   "1.23456789E8",
		1e23:                        "1.0E23",
		math.MaxFloat64:             "1.7976931348623157E308",
		math.SmallestNonzeroFloat64: "4.9E-324",
		0:                           "0.0",
	}
	for f, want := range doubles {
		if got := string(appendJavaFloat(nil, f, 64)); got != want {
			t.Errorf("double %v: got %s, want %s", f, got, want)
		}
	}
	if got := string(appendJavaFloat(nil, math.Copysign(0, -1), 64)); got != "-0.0" {
		t.Errorf("-0.0: got %s", got)
	}
	a, b := 0.1, 0.2
	if got := string(appendJavaFloat(nil, a+b, 64)); got != "0.30000000000000004" {
		t.Errorf("0.1+0.2: got %s", got)
	}
	floats := map[float32]string{
		0.1:                         "0.1",
		1.1:                         "1.1",
		16777216:                    "1.6777216E7",
		math.MaxFloat32:             "3.4028235E38",
		math.SmallestNonzeroFloat32: "1.4E-45",
		12.34:                       "12.34",
	}
	for f, want := range floats {
		if got := string(appendJavaFloat(nil, float64(f), 32)); got != want {
			t.Errorf("float %v: got %s, want %s", f, got, want)
		}
	}
}

func TestJavaBigDecimal(t *testing.T) {
	// BigDecimal.toString of new BigDecimal(unscaled, scale).
	tests := []struct {
		unscaled string
		scale    int
		want     string
	}{
		{"156", 2, "1.56"},
		{"15600", 4, "1.5600"},
		{"-5", 1, "-0.5"},
		{"5", 7, "5E-7"},
		{"123", 8, "0.00000123"},
		{"123", 9, "1.23E-7"},
		{"12", -2, "1.2E+3"},
		{"0", 2, "0.00"},
		{"0", 0, "0"},
		{"-123456789", 0, "-123456789"},
	}
	for _, tc := range tests {
		n, _ := new(big.Int).SetString(tc.unscaled, 10)
		if got := string(appendJavaBigDecimal(nil, n, tc.scale)); got != tc.want {
			t.Errorf("%s scale %d: got %s, want %s", tc.unscaled, tc.scale, got, tc.want)
		}
	}
}

func TestTwosComplement(t *testing.T) {
	// BigInteger.toByteArray of the same values.
	tests := map[int64][]byte{
		0:    {0},
		1:    {1},
		127:  {0x7f},
		128:  {0, 0x80},
		156:  {0, 0x9c},
		255:  {0, 0xff},
		256:  {1, 0},
		-1:   {0xff},
		-128: {0x80},
		-129: {0xff, 0x7f},
		-156: {0xff, 0x64},
		-256: {0xff, 0},
	}
	for n, want := range tests {
		got := twosComplement(big.NewInt(n))
		if !bytes.Equal(got, want) {
			t.Errorf("%d: got %x, want %x", n, got, want)
		}
		if back := fromTwosComplement(got); back.Int64() != n {
			t.Errorf("%x read back as %v", got, back)
		}
	}
}
