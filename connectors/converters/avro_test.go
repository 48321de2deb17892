package converters

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

var avroPoint = connectors.StructSchema("com.acme.Point",
	connectors.Field{Name: "x", Schema: connectors.Int32Schema},
	connectors.Field{Name: "label", Schema: connectors.OptionalStringSchema},
)

func avroPointValue(x int32) *connectors.StructValue {
	return connectors.NewStruct(avroPoint).MustSet("x", x).MustSet("label", "p")
}

func avroConv(t testing.TB, reg *countingRegistry, isKey bool, extra map[string]string) *AvroConverter {
	t.Helper()
	return registryConv(t, "AvroConverter", reg, isKey, extra).(*AvroConverter)
}

// TestAvroByteLayout checks frames against the layout Confluent documents
// (magic byte 0, 4-byte big-endian schema id, Avro binary encoding) on
// values whose Avro bytes are worked out by hand from the Avro spec.
func TestAvroByteLayout(t *testing.T) {
	reg := newCountingRegistry(t)
	c := avroConv(t, reg, false, nil)
	cases := []struct {
		topic  string
		schema *connectors.Schema
		value  any
		body   []byte
	}{
		// zig-zag varint: 1 -> 02, -1 -> 01, 64 -> 80 01.
		{"i", connectors.Int32Schema, int32(-1), []byte{0x01}},
		{"l", connectors.Int64Schema, int64(64), []byte{0x80, 0x01}},
		// string: length 3 -> 06, then the UTF-8 bytes.
		{"s", connectors.StringSchema, "abc", []byte{0x06, 'a', 'b', 'c'}},
		// record: fields in order; the optional label is the union
		// ["null","string"], branch 1 -> 02.
		{"p", avroPoint, avroPointValue(1), []byte{0x02, 0x02, 0x02, 'p'}},
		// union branch 0 (null) -> 00.
		{"p", avroPoint, connectors.NewStruct(avroPoint).MustSet("x", int32(1)), []byte{0x02, 0x00}},
		// array of 2 ints in one block without a byte-size header, as
		// Java's BinaryEncoder writes it: count 2 -> 04, items, end 00.
		{"a", &connectors.Schema{Type: connectors.Array, Items: connectors.Int32Schema}, []any{int32(1), int32(2)}, []byte{0x04, 0x02, 0x04, 0x00}},
		// Decimal 1.00 at scale 2: unscaled 100 = 0x64 -> bytes length 1.
		{"d", decimalSchema("2"), rat("1"), []byte{0x02, 0x64}},
		// Date 1970-01-03 is day 2 -> 04.
		{"date", dateSchema, time.Date(1970, 1, 3, 0, 0, 0, 0, time.UTC), []byte{0x04}},
		// float 1.0 little-endian IEEE 754.
		{"f", connectors.Float32Schema, float32(1), []byte{0, 0, 0x80, 0x3f}},
	}
	for _, tc := range cases {
		b, err := c.FromConnect(tc.topic, tc.schema, tc.value)
		if err != nil {
			t.Errorf("%s: %v", tc.topic, err)
			continue
		}
		if len(b) < 5 || b[0] != 0 {
			t.Errorf("%s: % x is not framed", tc.topic, b)
			continue
		}
		id := int(b[1])<<24 | int(b[2])<<16 | int(b[3])<<8 | int(b[4])
		ss, ok := reg.GetSchema(tc.topic+"-value", 1)
		if !ok || ss.ID != id {
			t.Errorf("%s: frame id %d, registry has %+v (%v)", tc.topic, id, ss, ok)
		}
		if !bytes.Equal(b[5:], tc.body) {
			t.Errorf("%s: body % x, want % x", tc.topic, b[5:], tc.body)
		}
	}
}

// TestAvroSchemaMapping checks the Avro schema registered for Connect
// schemas against what Confluent's AvroData produces for them.
func TestAvroSchemaMapping(t *testing.T) {
	reg := newCountingRegistry(t)
	c := avroConv(t, reg, false, nil)
	cases := []struct {
		schema *connectors.Schema
		value  any
		want   string
	}{
		{connectors.Int8Schema, int8(1), `{"type":"int","connect.type":"int8"}`},
		{connectors.OptionalStringSchema, "x", `["null","string"]`},
		{&connectors.Schema{Type: connectors.String, Optional: true, Default: "d"}, "x", `[{"type":"string","connect.default":"d"},"null"]`},
		{decimalSchema("2"), rat("1"), `{"type":"bytes","scale":2,"precision":64,"connect.version":1,"connect.parameters":{"scale":"2"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}`},
		{timestampSchema, time.UnixMilli(5), `{"type":"long","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Timestamp","logicalType":"timestamp-millis"}`},
		{avroPoint, avroPointValue(1), `{"type":"record","name":"Point","namespace":"com.acme","fields":[{"name":"x","type":"int"},{"name":"label","type":["null","string"],"default":null}],"connect.name":"com.acme.Point"}`},
		{connectors.StructSchema("", connectors.Field{Name: "a", Schema: connectors.StructSchema("", connectors.Field{Name: "b", Schema: connectors.BooleanSchema})}),
			nil, `{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro","fields":[{"name":"a","type":{"type":"record","name":"ConnectDefault2","namespace":"io.confluent.connect.avro","fields":[{"name":"b","type":"boolean"}]}}]}`},
		{&connectors.Schema{Type: connectors.Map, Keys: connectors.Int32Schema, Values: connectors.StringSchema}, map[string]any{"1": "a"},
			`{"type":"array","items":{"type":"record","name":"MapEntry","namespace":"io.confluent.connect.avro","fields":[{"name":"key","type":"int"},{"name":"value","type":"string"}]}}`},
	}
	for i, tc := range cases {
		topic := fmt.Sprintf("m%d", i)
		value := tc.value
		if value == nil {
			inner := tc.schema.Fields[0].Schema
			value = connectors.NewStruct(tc.schema).MustSet("a", connectors.NewStruct(inner).MustSet("b", true))
		}
		if _, err := c.FromConnect(topic, tc.schema, value); err != nil {
			t.Errorf("%d: %v", i, err)
			continue
		}
		ss, ok := reg.GetSchema(topic+"-value", 1)
		if !ok {
			t.Errorf("%d: nothing registered", i)
			continue
		}
		if !jsonSame(ss.Schema.Schema, tc.want) {
			t.Errorf("%d: registered\n%s\nwant\n%s", i, ss.Schema.Schema, tc.want)
		}
	}
}

// jsonSame compares JSON texts as values.
func jsonSame(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func TestAvroRoundTrip(t *testing.T) {
	reg := newCountingRegistry(t)
	nested := connectors.StructSchema("com.acme.Inner", connectors.Field{Name: "flag", Schema: connectors.BooleanSchema})
	withDefaults := &connectors.Schema{Type: connectors.Struct, Name: "com.acme.Defaults", Version: 3, Doc: "a doc", Fields: []connectors.Field{
		{Name: "n", Schema: &connectors.Schema{Type: connectors.Int32, Default: int32(7)}},
		{Name: "s", Schema: &connectors.Schema{Type: connectors.String, Optional: true, Default: "dflt"}},
		{Name: "b", Schema: &connectors.Schema{Type: connectors.Bytes, Default: []byte{0, 200}}},
		{Name: "d", Schema: &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1, Parameters: map[string]string{"scale": "1"}, Default: rat("-2.5")}},
	}}
	everything := connectors.StructSchema("com.acme.Everything", append(primitiveFields(),
		connectors.Field{Name: "opt", Schema: connectors.OptionalInt64Schema},
		connectors.Field{Name: "optts", Schema: timestampSchema.Optionally()},
		connectors.Field{Name: "arr", Schema: &connectors.Schema{Type: connectors.Array, Items: connectors.OptionalStringSchema}},
		connectors.Field{Name: "map", Schema: &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.Int64Schema}},
		connectors.Field{Name: "intmap", Schema: &connectors.Schema{Type: connectors.Map, Keys: connectors.Int32Schema, Values: connectors.OptionalStringSchema}},
		connectors.Field{Name: "inner", Schema: nested},
		connectors.Field{Name: "optinner", Schema: nested.Optionally()},
		connectors.Field{Name: "inners", Schema: &connectors.Schema{Type: connectors.Array, Items: nested}},
		connectors.Field{Name: "params", Schema: &connectors.Schema{Type: connectors.String, Doc: "d", Parameters: map[string]string{"k": "v"}}},
	)...)
	// Avro carries infinities, unlike JSON.
	everythingValue := setPrimitiveFields(connectors.NewStruct(everything)).MustSet("f64", math.Inf(-1)).
		MustSet("arr", []any{"a", nil}).
		MustSet("map", map[string]any{"a": int64(1)}).
		MustSet("intmap", map[string]any{"-5": "x", "10": nil}).
		MustSet("inner", connectors.NewStruct(nested).MustSet("flag", true)).
		MustSet("inners", []any{connectors.NewStruct(nested).MustSet("flag", false)}).
		MustSet("params", "p")
	cases := []struct {
		schema *connectors.Schema
		value  any
	}{
		{connectors.Int8Schema, int8(-3)},
		{connectors.Int16Schema, int16(300)},
		{connectors.Int32Schema, int32(math.MaxInt32)},
		{connectors.Int64Schema, int64(math.MinInt64)},
		{connectors.Float32Schema, float32(-0.5)},
		{connectors.Float64Schema, math.SmallestNonzeroFloat64},
		{connectors.BooleanSchema, false},
		{connectors.StringSchema, ""},
		{connectors.BytesSchema, []byte{}},
		{decimalSchema("2"), rat("-123456789012345678901234567890.12")},
		{dateSchema, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{timeSchema, time.Date(1970, 1, 1, 12, 0, 0, 1e6, time.UTC)},
		{timestampSchema, time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)},
		{&connectors.Schema{Type: connectors.Array, Items: connectors.Int64Schema}, []any{int64(1), int64(-1)}},
		{&connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.BooleanSchema}, map[string]any{"t": true}},
		{&connectors.Schema{Type: connectors.Map, Keys: connectors.BytesSchema, Values: connectors.BooleanSchema}, map[string]any{"AAE=": true}},
		{withDefaults, connectors.NewStruct(withDefaults).MustSet("n", int32(1)).MustSet("s", "given").MustSet("b", []byte("x")).MustSet("d", rat("0.5"))},
		{everything, everythingValue},
	}
	for i, tc := range cases {
		for _, isKey := range []bool{false, true} {
			c := avroConv(t, reg, isKey, nil)
			topic := fmt.Sprintf("rt%d", i)
			b, err := c.FromConnect(topic, tc.schema, tc.value)
			if err != nil {
				t.Errorf("%d: FromConnect: %v", i, err)
				continue
			}
			s, v, err := c.ToConnect(topic, b)
			if err != nil {
				t.Errorf("%d: ToConnect: %v", i, err)
				continue
			}
			// The Connect schema read back takes the subject's version
			// (1: the first schema of its subject) unless it has its own,
			// as Confluent's AvroConverter does.
			want := *tc.schema
			if want.Version == 0 {
				want.Version = 1
			}
			if !schemaEqual(s, &want) {
				t.Errorf("%d: schema read back as\n%s\nwant\n%s", i, dumpSchema(s), dumpSchema(&want))
			}
			if !connectEqual(v, tc.value) && !connectEqual(restruct(v, tc.schema), tc.value) {
				t.Errorf("%d: value read back as %#v, want %#v", i, v, tc.value)
			}
			// Written back, the payload is the same; the schema now
			// carries connect.version, so its id may differ (as with
			// Confluent's converter).
			again, err := c.FromConnect(topic, s, v)
			if err != nil || !bytes.Equal(again[5:], b[5:]) {
				t.Errorf("%d: rewrite gave % x, %v; want % x", i, again, err, b)
			}
		}
	}
}

// restruct re-homes a struct read back onto the original schema, so that
// values compare equal when only the schema's version differs.
func restruct(v any, s *connectors.Schema) any {
	if sv, ok := v.(*connectors.StructValue); ok {
		return &connectors.StructValue{Schema: s, Values: sv.Values}
	}
	return v
}

func dumpSchema(s *connectors.Schema) string {
	b, _ := NewJSONConverter().appendSchema(nil, s)
	return string(b)
}

// TestAvroRegistryCalledOncePerSchema counts the registry's requests: one
// registration for many records written, one fetch of the id and one
// version lookup for many records read.
func TestAvroRegistryCalledOncePerSchema(t *testing.T) {
	reg := newCountingRegistry(t)
	w := avroConv(t, reg, false, nil)
	r := avroConv(t, reg, false, nil)
	var frames [][]byte
	for i := range 500 {
		b, err := w.FromConnect("counted", avroPoint, avroPointValue(int32(i)))
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, b)
	}
	if n := reg.total("POST /subjects/counted-value/versions"); n != 1 {
		t.Errorf("500 records registered the schema %d times, want 1", n)
	}
	for i, b := range frames {
		_, v, err := r.ToConnect("counted", b)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.(*connectors.StructValue).Get("x"); got != int32(i) {
			t.Fatalf("record %d read back x=%v", i, got)
		}
	}
	if n := reg.total("GET /schemas/ids/"); n != 1 {
		t.Errorf("500 records fetched the schema by id %d times, want 1", n)
	}
	if n := reg.total("POST /subjects/counted-value"); n != 2 { // the registration and one version lookup
		t.Errorf("registry saw %d POSTs to the subject, want 2 (register, version lookup)", n)
	}
}

func TestAvroErrors(t *testing.T) {
	reg := newCountingRegistry(t)
	c := avroConv(t, reg, false, nil)

	// An id the registry does not know: the message names the id.
	_, _, err := c.ToConnect("t", []byte{0, 0, 0, 0x30, 0x39, 0})
	if err == nil || !strings.Contains(err.Error(), "12345") || connectors.IsRetriable(err) {
		t.Errorf("unknown id: %v (retriable=%v)", err, connectors.IsRetriable(err))
	}
	if _, _, err := c.ToConnect("t", []byte{1, 0, 0, 0, 1}); err == nil || !strings.Contains(err.Error(), "magic byte") {
		t.Errorf("bad magic byte: %v", err)
	}

	// The registry refuses an incompatible schema with 409, naming the
	// subject: the converter's error names it too and is not retried.
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/subjects/incompat-value/versions") {
			w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error_code":409,"message":"Schema being registered is incompatible with an earlier schema for subject \"incompat-value\""}`)
			return true
		}
		return false
	})
	_, err = c.FromConnect("incompat", avroPoint, avroPointValue(1))
	if err == nil || !strings.Contains(err.Error(), `"incompat-value"`) || !strings.Contains(err.Error(), "409") || connectors.IsRetriable(err) {
		t.Errorf("incompatible schema: %v", err)
	}
	reg.ClearInterceptors()

	// auto.register.schemas=false and the schema is not registered.
	lookup := avroConv(t, reg, false, map[string]string{"auto.register.schemas": "false"})
	if _, err := lookup.FromConnect("unregistered", avroPoint, avroPointValue(1)); err == nil || !strings.Contains(err.Error(), "unregistered-value") {
		t.Errorf("lookup of an unregistered schema: %v", err)
	}

	// A registry that answers 5xx or not at all gives a retriable error,
	// which the runtime retries with backoff before errors.tolerance.
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	if _, err := c.FromConnect("down", avroPoint, avroPointValue(1)); err == nil || !connectors.IsRetriable(err) || !strings.Contains(err.Error(), "down-value") {
		t.Errorf("503: %v (retriable=%v)", err, connectors.IsRetriable(err))
	}
	reg.ClearInterceptors()
	dead := &AvroConverter{}
	if err := dead.Configure(map[string]string{"schema.registry.url": "http://127.0.0.1:1"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := dead.FromConnect("gone", avroPoint, avroPointValue(1)); err == nil || !connectors.IsRetriable(err) || !strings.Contains(err.Error(), "gone-value") {
		t.Errorf("unreachable: %v (retriable=%v)", err, connectors.IsRetriable(err))
	}

	// Several URLs: the first is down, the second answers.
	failover := &AvroConverter{}
	if err := failover.Configure(map[string]string{"schema.registry.url": "http://127.0.0.1:1," + reg.URL()}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := failover.FromConnect("failover", avroPoint, avroPointValue(1)); err != nil {
		t.Errorf("fail over to the second URL: %v", err)
	}

	// Values that do not fit their schema name the field.
	bad := connectors.NewStruct(avroPoint).MustSet("x", "not an int")
	if _, err := c.FromConnect("t", avroPoint, bad); err == nil || !strings.Contains(err.Error(), "x") {
		t.Errorf("mistyped field: %v", err)
	}
	if _, err := c.FromConnect("t", decimalSchema("1"), rat("0.25")); err == nil || !strings.Contains(err.Error(), "scale") {
		t.Errorf("decimal finer than its scale: %v", err)
	}
	if _, err := c.FromConnect("t", nil, "schemaless"); err == nil {
		t.Errorf("schemaless value accepted")
	}
	if _, err := c.FromConnect("t", connectors.StringSchema, nil); err == nil {
		t.Errorf("null for a required schema accepted")
	}
	if b, err := c.FromConnect("t", connectors.OptionalStringSchema, nil); b != nil || err != nil {
		t.Errorf("null optional: % x, %v", b, err)
	}
	if s, v, err := c.ToConnect("t", nil); s != nil || v != nil || err != nil {
		t.Errorf("tombstone read as %v %v %v", s, v, err)
	}
}

// TestAvroReadsForeignSchemas reads data written with Avro schemas Sluice
// did not write: plain records without connect.* properties, enums,
// fixed, and general unions, as AvroData maps them.
func TestAvroReadsForeignSchemas(t *testing.T) {
	reg := newCountingRegistry(t)
	c := avroConv(t, reg, false, nil)
	schema := `{"type":"record","name":"Rec","namespace":"ns","fields":[
		{"name":"color","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
		{"name":"hash","type":{"type":"fixed","name":"Hash","size":2}},
		{"name":"either","type":["int","string"]},
		{"name":"dflt","type":"long","default":42}]}`
	id, _, err := reg.RegisterSchema("foreign-value", srSchemaAvro(schema))
	if err != nil {
		t.Fatal(err)
	}
	// color=GREEN (index 1 -> 02), hash=0xABCD, either=string "z"
	// (branch 1 -> 02, len 1 -> 02, 'z'), dflt=5 (0a).
	payload := []byte{0x02, 0xab, 0xcd, 0x02, 0x02, 'z', 0x0a}
	s, v, err := c.ToConnect("foreign", append(appendFrameHeader(nil, id), payload...))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "ns.Rec" || s.Version != 1 || len(s.Fields) != 4 {
		t.Fatalf("schema %s", dumpSchema(s))
	}
	sv := v.(*connectors.StructValue)
	if sv.Get("color") != "GREEN" || !bytes.Equal(sv.Get("hash").([]byte), []byte{0xab, 0xcd}) || sv.Get("dflt") != int64(5) {
		t.Errorf("value %#v", sv.Values)
	}
	if p := s.Fields[0].Schema.Parameters; p[avroEnumParam] != "ns.Color" || p[avroEnumParam+".RED"] != "RED" {
		t.Errorf("enum parameters %v", p)
	}
	if s.Fields[1].Schema.Parameters[connectFixedSize] != "2" || s.Fields[1].Schema.Name != "ns.Hash" {
		t.Errorf("fixed schema %s", dumpSchema(s.Fields[1].Schema))
	}
	either := s.Fields[2].Schema
	if either.Name != avroUnionName || len(either.Fields) != 2 || either.Fields[0].Name != "int" || either.Fields[1].Name != "string" {
		t.Errorf("union schema %s", dumpSchema(either))
	}
	if u := sv.Get("either").(*connectors.StructValue); u.Get("string") != "z" || u.Get("int") != nil {
		t.Errorf("union value %#v", u.Values)
	}
	if s.Fields[3].Schema.Default != int64(42) {
		t.Errorf("default %v", s.Fields[3].Schema.Default)
	}
	// Written back, the union struct is the same union and the fixed the
	// same fixed; the enum becomes a string, as with Confluent's converter
	// without enhanced.avro.schema.support.
	again, err := c.FromConnect("foreign-copy", s, v)
	if want := append([]byte{0x0a, 'G', 'R', 'E', 'E', 'N'}, payload[1:]...); err != nil || !bytes.Equal(again[5:], want) {
		t.Errorf("rewrite: % x, %v; want % x", again, err, payload)
	}
}

func TestAvroUseLatestVersion(t *testing.T) {
	reg := newCountingRegistry(t)
	// The latest version has an extra field with a default: the record's
	// own schema can be read by it, so it is used to write.
	latest := `{"type":"record","name":"Point","namespace":"com.acme","fields":[{"name":"x","type":"int"},{"name":"label","type":["null","string"],"default":null},{"name":"extra","type":"long","default":9}]}`
	id, _, err := reg.RegisterSchema("latest-value", srSchemaAvro(latest))
	if err != nil {
		t.Fatal(err)
	}
	c := avroConv(t, reg, false, map[string]string{"use.latest.version": "true", "auto.register.schemas": "false"})
	b, err := c.FromConnect("latest", avroPoint, avroPointValue(3))
	if err != nil {
		t.Fatal(err)
	}
	if got := int(b[4]); got != id {
		t.Errorf("frame id %d, want the latest's %d", got, id)
	}
	// x=3 (06), label "p" (02 02 'p'), extra defaulted to 9 (12).
	if want := []byte{0x06, 0x02, 0x02, 'p', 0x12}; !bytes.Equal(b[5:], want) {
		t.Errorf("body % x, want % x", b[5:], want)
	}
	// A latest version that cannot read the record's schema is refused.
	if _, _, err := reg.RegisterSchema("strict-value", srSchemaAvro(`{"type":"record","name":"Point","namespace":"com.acme","fields":[{"name":"y","type":"int"}]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FromConnect("strict", avroPoint, avroPointValue(3)); err == nil || !strings.Contains(err.Error(), "strict-value") {
		t.Errorf("incompatible latest: %v", err)
	}
}

func TestAvroConfigKeys(t *testing.T) {
	reg := newCountingRegistry(t)
	odd := connectors.StructSchema("has-dash.Rec", connectors.Field{Name: "1st field", Schema: connectors.Int32Schema})
	v := connectors.NewStruct(odd).MustSet("1st field", int32(1))
	if _, err := avroConv(t, reg, false, nil).FromConnect("odd", odd, v); err == nil {
		t.Errorf("invalid Avro names accepted without scrub.invalid.names")
	}
	c := avroConv(t, reg, false, map[string]string{"scrub.invalid.names": "true"})
	if _, err := c.FromConnect("odd", odd, v); err != nil {
		t.Fatal(err)
	}
	ss, _ := reg.GetSchema("odd-value", 1)
	if !strings.Contains(ss.Schema.Schema, `"x1st_field"`) || !strings.Contains(ss.Schema.Schema, `"has_dash"`) {
		t.Errorf("scrubbed schema %s", ss.Schema.Schema)
	}
	plain := avroConv(t, reg, false, map[string]string{"connect.meta.data": "false"})
	if _, err := plain.FromConnect("plain", decimalSchema("2"), rat("1")); err != nil {
		t.Fatal(err)
	}
	ss, _ = reg.GetSchema("plain-value", 1)
	if strings.Contains(ss.Schema.Schema, "connect.") {
		t.Errorf("connect.meta.data=false still wrote %s", ss.Schema.Schema)
	}
	keyed := avroConv(t, reg, true, map[string]string{"key.subject.name.strategy": recordNameStrategy})
	if _, err := keyed.FromConnect("any-topic", avroPoint, avroPointValue(1)); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.GetSchema("com.acme.Point", 1); !ok {
		t.Errorf("RecordNameStrategy did not register under the record name")
	}
}

// TestAvroStructFormSameBytes: the struct form (avro_struct.go) and the map
// form write the same bytes for every shape the struct form covers, and a
// schema it does not cover falls back to the map form.
func TestAvroStructFormSameBytes(t *testing.T) {
	reg := newCountingRegistry(t)
	c := avroConv(t, reg, false, nil)
	inner := connectors.StructSchema("In", connectors.Field{Name: "b", Schema: connectors.BooleanSchema})
	withDefault := &connectors.Schema{Type: connectors.Int64, Optional: true, Default: int64(9)}
	s := connectors.StructSchema("com.acme.Flat",
		connectors.Field{Name: "i8", Schema: connectors.Int8Schema},
		connectors.Field{Name: "i16", Schema: connectors.Int16Schema.Optionally()},
		connectors.Field{Name: "i64", Schema: withDefault},
		connectors.Field{Name: "f32", Schema: connectors.Float32Schema},
		connectors.Field{Name: "bytes", Schema: connectors.OptionalBytesSchema},
		connectors.Field{Name: "dec", Schema: decimalSchema("2")},
		connectors.Field{Name: "date", Schema: dateSchema.Optionally()},
		connectors.Field{Name: "time", Schema: timeSchema},
		connectors.Field{Name: "ts", Schema: timestampSchema},
		connectors.Field{Name: "in", Schema: inner},
		connectors.Field{Name: "optin", Schema: inner.Optionally()},
	)
	values := []*connectors.StructValue{
		connectors.NewStruct(s).MustSet("i8", int8(-1)).MustSet("i16", int16(2)).MustSet("i64", int64(3)).MustSet("f32", float32(0.5)).
			MustSet("bytes", []byte{1}).MustSet("dec", rat("-3.25")).MustSet("date", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)).
			MustSet("time", time.UnixMilli(5).UTC()).MustSet("ts", time.UnixMilli(-5).UTC()).
			MustSet("in", connectors.NewStruct(inner).MustSet("b", true)).MustSet("optin", connectors.NewStruct(inner).MustSet("b", false)),
		connectors.NewStruct(s).MustSet("i8", int8(0)).MustSet("f32", float32(0)).MustSet("dec", rat("0")).
			MustSet("time", time.UnixMilli(0).UTC()).MustSet("ts", time.UnixMilli(0).UTC()).MustSet("in", connectors.NewStruct(inner).MustSet("b", false)),
	}
	w, err := c.writerFor(s)
	if err != nil || w.form == nil {
		t.Fatalf("no struct form for %s: %v", dumpSchema(s), err)
	}
	for i, v := range values {
		fast, err := w.form.value(s, v, false)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := c.toNative(s, w.schema, v)
		if err != nil {
			t.Fatal(err)
		}
		a, errA := encodeAvroFrame(w.schema, 1, fast)
		b, errB := encodeAvroFrame(w.schema, 1, slow)
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("value %d: struct form % x (%v), map form % x (%v)", i, a, errA, b, errB)
		}
	}
	if f := newStructForm(connectors.StructSchema("A", connectors.Field{Name: "arr", Schema: &connectors.Schema{Type: connectors.Array, Items: connectors.Int32Schema}}), false); f != nil {
		t.Errorf("a struct with an array has a struct form")
	}
	if _, err := w.form.value(s, connectors.NewStruct(s), false); err == nil || !strings.Contains(err.Error(), "i8") {
		t.Errorf("a missing required field: %v", err)
	}
}
