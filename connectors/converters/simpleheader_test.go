package converters

import (
	"bytes"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// TestValueString covers what ValueString writes for Go values the parser
// does not make itself: structs, bytes, typed map keys, every temporal
// form, and the values it refuses.
func TestValueString(t *testing.T) {
	point := connectors.StructSchema("point",
		connectors.Field{Name: "x", Schema: connectors.Int32Schema},
		connectors.Field{Name: "label", Schema: &connectors.Schema{Type: connectors.String, Optional: true, Default: "none"}},
		connectors.Field{Name: "note", Schema: connectors.OptionalStringSchema})
	int8Map := &connectors.Schema{Type: connectors.Map, Keys: connectors.Int8Schema, Values: connectors.StringSchema}
	dateKeys := &connectors.Schema{Type: connectors.Map, Keys: parsedDateSchema, Values: connectors.Int8Schema}
	day := time.Date(2019, 8, 23, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		schema *connectors.Schema
		value  any
		want   string
	}{
		{"nil", nil, nil, "null"},
		{"string as is", connectors.StringSchema, `a "b" \c`, `a "b" \c`},
		{"embedded string escaped", nil, []any{`three"blind\"mice`}, `["three\"blind\\\"mice"]`},
		{"bytes in base64", connectors.BytesSchema, []byte{0, 1, 0xff}, "AAH/"},
		{"embedded bytes quoted", nil, []any{[]byte("hi")}, `["aGk="]`},
		{"nil bytes", nil, []any{[]byte(nil)}, "[null]"},
		{"float32 as Java", nil, float32(0.1), "0.1"},
		{"float64 as Java", nil, 1e21, "1.0E21"},
		{"decimal at schema scale", parsedDecimalSchema(3), big.NewRat(3, 2), "1.500"},
		{"decimal without schema", nil, big.NewRat(3, 2), "1.5"},
		{"huge decimal without schema", nil, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(400), nil)), "1E+400"},
		{"struct with default and null", point, connectors.NewStruct(point).MustSet("x", int32(3)), `{"x":3,"label":"none","note":null}`},
		{"typed keys", int8Map, map[string]any{"2": "b", "1": "a"}, `{1:"a",2:"b"}`},
		{"date keys from their days", dateKeys, map[string]any{"18131": int8(1)}, `{2019-08-23:1}`},
		{"untyped keys", &connectors.Schema{Type: connectors.Map}, map[string]any{"1": 1.5, "a": true, "2019-08-23": nil}, `{1:1.5,2019-08-23:null,"a":true}`},
		{"key not fitting its schema", int8Map, map[string]any{"x": "y"}, `{"x":"y"}`},
		{"epoch as a time", parsedDateSchema, time.UnixMilli(0).UTC(), "00:00:00.000Z"},
		{"before 1970 as a time of day", parsedDateSchema, time.UnixMilli(-1).UTC(), "23:59:59.999Z"},
		{"day boundary as a date", parsedTimestampSchema, day, "2019-08-23"},
		{"timestamp", parsedTimestampSchema, day.Add(14*time.Hour + 346*time.Millisecond), "2019-08-23T14:00:00.346Z"},
		{"year beyond 9999", nil, time.Date(12345, 1, 2, 0, 0, 0, 0, time.UTC), "12345-01-02"},
		{"nested", nil, []any{map[string]any{"k": []any{int16(1), nil}}}, `[{"k":[1,null]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ValueString(tt.schema, tt.value)
			if err != nil || got != tt.want {
				t.Errorf("ValueString = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	for _, v := range []any{7, uint8(1), struct{}{}, []any{int(1)}, map[string]any{"a": []string{"x"}}} {
		if got, err := ValueString(nil, v); err == nil {
			t.Errorf("ValueString(%T) = %q, want an error: Connect refuses values of no Connect type", v, got)
		}
	}
}

// TestTokenizer ports ValuesTest's parser cases: delimiters are tokens of
// their own unless escaped, and backslashes stay.
func TestTokenizer(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"  ", []string{"  "}},
		{"simple \n\t\bstring", []string{"simple \n\t\bstring"}},
		{`si\mple`, []string{`si\mple`}},
		{`si\\mple`, []string{`si\\mple`}},
		{`si\"mple`, []string{`si\"mple`}},
		{`si\{mple`, []string{`si\{mple`}},
		{`si\:mple`, []string{`si\:mple`}},
		{`si\,mple`, []string{`si\,mple`}},
		{"a{b", []string{"a", "{", "b"}},
		{"a]b", []string{"a", "]", "b"}},
		{`a"b`, []string{"a", `"`, "b"}},
		{":b", []string{":", "b"}},
		{",", []string{","}},
		{`"simple" string`, []string{`"`, "simple", `"`, " string"}},
		{"a { b c } d", []string{"a ", "{", " b c ", "}", " d"}},
	}
	for _, tt := range tests {
		tok := tokenizer{s: tt.in}
		var got []string
		for tok.hasNext() {
			got = append(got, tok.nextToken())
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("tokens of %q = %q, want %q", tt.in, got, tt.want)
		}
	}
	tok := tokenizer{s: "a:b:c:d:e:f:g:h"}
	if got, ok := tok.nextN(5); !ok || got != "a:b:c" {
		t.Errorf("nextN(5) = %q, %v; want a:b:c", got, ok)
	}
	for _, want := range []string{":", "d", ":"} {
		if got := tok.nextToken(); got != want {
			t.Errorf("next = %q, want %q", got, want)
		}
	}
	if got, ok := tok.nextN(8); ok {
		t.Errorf("nextN(8) with 7 left = %q, want none", got)
	}
	if got := tok.nextToken(); got != "e" {
		t.Errorf("next after a failed nextN = %q, want e", got)
	}
}

// TestParseValueDepth: Connect's parser recurses until the JVM's stack
// overflows, which SimpleHeaderConverter turns into a bytes header; Sluice
// stops at maxValueDepth and does the same.
func TestParseValueDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + "1" + strings.Repeat("]", n) }
	if s, _, err := ParseValue(nest(maxValueDepth)); err != nil || s.Type != connectors.Array {
		t.Fatalf("ParseValue(%d levels) = %v, %v; want an array", maxValueDepth, s, err)
	}
	deep := nest(maxValueDepth + 1)
	if _, _, err := ParseValue(deep); !errors.Is(err, errTooDeep) {
		t.Fatalf("ParseValue(%d levels) error = %v, want errTooDeep", maxValueDepth+1, err)
	}
	s, v, err := (&SimpleHeaderConverter{}).ToConnectHeader("t", "h", []byte(deep))
	if err != nil || s != connectors.BytesSchema || !bytes.Equal(v.([]byte), []byte(deep)) {
		t.Errorf("ToConnectHeader(too deep) = %v, %T, %v; want the bytes as they are", s, v, err)
	}
	// Unclosed nesting fails level by level without re-reading the rest.
	start := time.Now()
	if s, _, err := ParseValue(strings.Repeat("[1,", maxValueDepth-1)); err != nil || s.Type != connectors.String {
		t.Errorf("unclosed arrays = %v, %v; want a string", s, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("unclosed arrays took %v", d)
	}
}

// TestSimpleHeaderConverterRoundTrip ports SimpleHeaderConverterTest: a
// value written and read back is the same value with the same schema.
func TestSimpleHeaderConverterRoundTrip(t *testing.T) {
	stringMap := &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.StringSchema}
	shortMap := &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.Int16Schema}
	intMap := &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.Int32Schema}
	intList := &connectors.Schema{Type: connectors.Array, Items: connectors.Int32Schema}
	stringList := &connectors.Schema{Type: connectors.Array, Items: connectors.StringSchema}
	tests := []struct {
		name   string
		schema *connectors.Schema
		value  any
	}{
		{"simple string", connectors.StringSchema, "simple"},
		{"empty string", connectors.StringSchema, ""},
		{"quotes and backslashes", connectors.StringSchema, `three"blind\"mice`},
		{"delimiters", connectors.StringSchema, `string with delimiters: <>?,./\=+-!@#$%^&*(){}[]|;':`},
		{"string map", stringMap, map[string]any{"foo": "123", "bar": "baz"}},
		{"short map", shortMap, map[string]any{"foo": int16(12345), "bar": int16(0), "baz": int16(-4321)}},
		{"int map", intMap, map[string]any{"foo": int32(1234567890), "bar": int32(0), "baz": int32(-987654321)}},
		{"string list", stringList, []any{"foo", "bar"}},
		{"int list", intList, []any{int32(1234567890), int32(-987654321)}},
		{"boolean", connectors.BooleanSchema, true},
		{"float64", connectors.Float64Schema, 1.5e300},
		{"date", parsedDateSchema, time.Date(2019, 8, 23, 0, 0, 0, 0, time.UTC)},
		{"timestamp", parsedTimestampSchema, time.Date(2019, 8, 23, 14, 34, 54, 346e6, time.UTC)},
	}
	c := &SimpleHeaderConverter{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := c.FromConnectHeader("topic", "header", tt.schema, tt.value)
			if err != nil || b == nil {
				t.Fatalf("FromConnectHeader = %q, %v", b, err)
			}
			s, v, err := c.ToConnectHeader("topic", "header", b)
			if err != nil {
				t.Fatalf("ToConnectHeader(%q): %v", b, err)
			}
			if got, want := describe(s, v), describe(tt.schema, tt.value); got != want {
				t.Errorf("%q reads back as %s, want %s", b, got, want)
			}
			b2, err := c.FromConnectHeader("topic", "header", s, v)
			if err != nil || !bytes.Equal(b, b2) {
				t.Errorf("written again as %q, %v; want %q", b2, err, b)
			}
		})
	}
}

// TestSimpleHeaderConverter covers what the round trip does not: nulls,
// values whose schema is inferred anew, and bytes that are not UTF-8.
func TestSimpleHeaderConverter(t *testing.T) {
	c := &SimpleHeaderConverter{}
	if err := c.Configure(map[string]string{"anything": "x"}); err != nil {
		t.Errorf("Configure: %v; it takes no settings and ignores them", err)
	}
	for _, v := range []any{nil, []byte(nil), map[string]any(nil), []any(nil), (*connectors.StructValue)(nil)} {
		if b, err := c.FromConnectHeader("t", "h", connectors.OptionalStringSchema, v); b != nil || err != nil {
			t.Errorf("FromConnectHeader(%#v) = %q, %v; want a null header", v, b, err)
		}
	}
	if s, v, err := c.ToConnectHeader("t", "h", nil); s != nil || v != nil || err != nil {
		t.Errorf("ToConnectHeader(nil) = %v, %v, %v; want null", s, v, err)
	}
	reads := []struct{ in, want string }{
		// SimpleHeaderConverterTest: mixed values lose their common schema.
		{`{"foo":"bar","baz":3456}`, `map<string,nil> {k"baz"=i16:3456,k"foo"=s"bar"}`},
		{`["foo",13344]`, `array<nil> [s"foo",i16:13344]`},
		{`{}`, `map<nil,nil> {}`},
		{`[]`, `array<nil> []`},
		{`null`, `NULL`},
		{`42`, `int8 i8:42`},
		{"", `string s""`},
		// Bytes written by ByteArrayConverter-minded producers.
		{"\xff\xfe\x00abc", `string s"\xff\xfe\x00abc"`},
	}
	for _, r := range reads {
		s, v, err := c.ToConnectHeader("t", "h", []byte(r.in))
		if got := describe(s, v); err != nil || got != r.want {
			t.Errorf("ToConnectHeader(%q) = %s, %v; want %s", r.in, got, err, r.want)
		}
	}
	// Bytes that are not UTF-8 are kept, so they are written back as they
	// came (Connect would turn them into U+FFFD).
	raw := []byte("\x00\x9f\xffbinary\xc3")
	s, v, _ := c.ToConnectHeader("t", "h", raw)
	if b, err := c.FromConnectHeader("t", "h", s, v); err != nil || !bytes.Equal(b, raw) {
		t.Errorf("raw bytes came back as %q, %v; want %q", b, err, raw)
	}
	// A bytes header is written as base64, as Connect writes a byte[].
	if b, _ := c.FromConnectHeader("t", "h", connectors.BytesSchema, []byte("hi")); string(b) != "aGk=" {
		t.Errorf("bytes header written as %q, want aGk=", b)
	}
	var de *DataError
	if _, err := c.FromConnectHeader("t", "h", nil, uint(1)); !errors.As(err, &de) {
		t.Errorf("FromConnectHeader(uint) error = %v, want a *DataError", err)
	}
}

// TestResolveHeaderSimple: SimpleHeaderConverter is the default header
// converter and answers to its class, simple name and alias, from the
// connector or the worker; it is no key or value converter.
func TestResolveHeaderSimple(t *testing.T) {
	isSimple := func(h HeaderConverter) bool { _, ok := h.(*SimpleHeaderConverter); return ok }
	cases := []struct {
		connector, worker map[string]string
		simple            bool
	}{
		{nil, nil, true},
		{map[string]string{"header.converter": SimpleHeaderConverterClass}, nil, true},
		{map[string]string{"header.converter": " SimpleHeaderConverter "}, nil, true},
		{nil, map[string]string{"header.converter": "SimpleHeader", "header.converter.x": "y"}, true},
		{map[string]string{"header.converter": "StringConverter"}, map[string]string{"header.converter": "SimpleHeader"}, false},
		{map[string]string{"header.converter": "SimpleHeader"}, map[string]string{"header.converter": "StringConverter"}, true},
		{nil, map[string]string{"header.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}, false},
	}
	for _, c := range cases {
		h, err := ResolveHeader(c.connector, c.worker)
		if err != nil || isSimple(h) != c.simple {
			t.Errorf("ResolveHeader(%v, %v) = %T, %v; want SimpleHeaderConverter: %v", c.connector, c.worker, h, err, c.simple)
		}
	}
	if _, err := New("SimpleHeaderConverter"); err == nil || !strings.Contains(err.Error(), "header converter only") {
		t.Errorf("New(SimpleHeaderConverter) error = %v, want it refused as a key or value converter", err)
	}
	if _, err := Resolve(map[string]string{"value.converter": SimpleHeaderConverterClass}, nil, false); err == nil {
		t.Error("value.converter=SimpleHeaderConverter accepted")
	}
	hc := HeaderClasses()
	if hc[len(hc)-1] != SimpleHeaderConverterClass || len(hc) != len(Classes())-len(recordOnly)+1 {
		t.Errorf("HeaderClasses() = %v, want Classes() but the registry converters, and SimpleHeaderConverter", hc)
	}
	for _, c := range Classes() {
		if c == SimpleHeaderConverterClass {
			t.Error("Classes() lists SimpleHeaderConverter, which is no key or value converter")
		}
	}
}
