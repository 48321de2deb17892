package converters

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice-io/sluice/connectors"
)

func protoConv(t testing.TB, reg *countingRegistry, extra map[string]string) *ProtobufConverter {
	t.Helper()
	return registryConv(t, "ProtobufConverter", reg, false, extra).(*ProtobufConverter)
}

// TestProtobufByteLayout checks the frame against Confluent's documented
// layout: magic 0, schema id, the message-index array (a single 0 for the
// first message), then the Protobuf encoding.
func TestProtobufByteLayout(t *testing.T) {
	reg := newCountingRegistry(t)
	c := protoConv(t, reg, nil)
	b, err := c.FromConnect("pl", avroPoint, avroPointValue(1))
	if err != nil {
		t.Fatal(err)
	}
	ss, ok := reg.GetSchema("pl-value", 1)
	if !ok || ss.Type != sr.TypeProtobuf {
		t.Fatalf("registered %+v %v", ss, ok)
	}
	// field 1 varint 1 (08 01), field 2 bytes "p" (12 01 70).
	want := append(appendFrameHeader(nil, ss.ID), 0x00, 0x08, 0x01, 0x12, 0x01, 'p')
	if !bytes.Equal(b, want) {
		t.Errorf("frame % x, want % x", b, want)
	}
	wantProto := "syntax = \"proto3\";\npackage com.acme;\n\nmessage Point {\n  int32 x = 1;\n  string label = 2;\n}\n"
	if ss.Schema.Schema != wantProto {
		t.Errorf("registered\n%s\nwant\n%s", ss.Schema.Schema, wantProto)
	}
	for _, tc := range []struct {
		indexes []int
		enc     []byte
	}{
		{[]int{0}, []byte{0}},
		{[]int{1}, []byte{2, 2}},
		{[]int{0, 2}, []byte{4, 0, 4}},
	} {
		got := appendMessageIndexes(nil, tc.indexes)
		if !bytes.Equal(got, tc.enc) {
			t.Errorf("indexes %v encode as % x, want % x", tc.indexes, got, tc.enc)
		}
		back, rest, err := readMessageIndexes(append(got, 0xff))
		if err != nil || fmt.Sprint(back) != fmt.Sprint(tc.indexes) || !bytes.Equal(rest, []byte{0xff}) {
			t.Errorf("indexes % x read as %v % x %v", got, back, rest, err)
		}
	}
}

func TestProtobufRoundTrip(t *testing.T) {
	reg := newCountingRegistry(t)
	c := protoConv(t, reg, nil)
	inner := connectors.StructSchema("com.acme.Inner", connectors.Field{Name: "flag", Schema: connectors.BooleanSchema})
	everything := connectors.StructSchema("com.acme.Everything", append(primitiveFields(),
		connectors.Field{Name: "arr", Schema: &connectors.Schema{Type: connectors.Array, Items: connectors.StringSchema}},
		connectors.Field{Name: "map", Schema: &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.Int64Schema}},
		connectors.Field{Name: "intmap", Schema: &connectors.Schema{Type: connectors.Map, Keys: connectors.Int32Schema, Values: connectors.StringSchema}},
		connectors.Field{Name: "inner", Schema: inner},
		connectors.Field{Name: "absent", Schema: inner.Optionally()},
	)...)
	// Protobuf carries infinities, unlike JSON.
	value := setPrimitiveFields(connectors.NewStruct(everything)).MustSet("f64", math.Inf(1)).
		MustSet("arr", []any{"a", "b"}).
		MustSet("map", map[string]any{"a": int64(1), "b": int64(2)}).
		MustSet("intmap", map[string]any{"-5": "x", "10": "y"}).
		MustSet("inner", connectors.NewStruct(inner).MustSet("flag", true))
	b, err := c.FromConnect("prt", everything, value)
	if err != nil {
		t.Fatal(err)
	}
	s, v, err := c.ToConnect("prt", b)
	if err != nil {
		t.Fatal(err)
	}
	// ProtobufData reads every field back optional, named by the message's
	// simple name, with its tag as a parameter.
	if s.Name != "Everything" || s.Version != 1 || len(s.Fields) != len(everything.Fields) {
		t.Fatalf("schema %s", dumpSchema(s))
	}
	for i, f := range s.Fields {
		want := everything.Fields[i].Schema
		if f.Name != everything.Fields[i].Name || f.Schema.Type != want.Type || f.Schema.Name != want.Name && !(want.Type == connectors.Struct) || !f.Schema.Optional ||
			f.Schema.Parameters[protoTagParam] != fmt.Sprint(i+1) {
			t.Errorf("field %d read back as %s: %s, want %s", i, f.Name, dumpSchema(f.Schema), dumpSchema(want))
		}
	}
	if s.Fields[9].Schema.Parameters["scale"] != "3" || s.Fields[9].Schema.Parameters[connectDecPrecision] != "10" {
		t.Errorf("decimal parameters %v", s.Fields[9].Schema.Parameters)
	}
	sv := v.(*connectors.StructValue)
	for i := range everything.Fields {
		got, want := sv.Values[i], value.Values[i]
		if i == 16 { // the nested struct: compare its values
			got, want = got.(*connectors.StructValue).Values, want.(*connectors.StructValue).Values
		}
		if !connectEqual(got, want) {
			t.Errorf("field %s read back as %#v, want %#v", everything.Fields[i].Name, got, want)
		}
	}
	// Written back under the schema read, the message bytes are the same.
	again, err := c.FromConnect("prt-copy", s, v)
	if err != nil || !bytes.Equal(again[5:], b[5:]) {
		t.Errorf("rewrite % x, %v; want % x", again, err, b)
	}
}

// TestProtobufReadsForeignSchemas reads messages of a .proto written by
// hand, as Confluent's serializers register it: nested messages (message
// index beyond the first), a real map, an enum, a oneof and a reference.
func TestProtobufReadsForeignSchemas(t *testing.T) {
	reg := newCountingRegistry(t)
	c := protoConv(t, reg, nil)
	dep := `syntax = "proto3"; package shared; message Money { string currency = 1; int64 cents = 2; }`
	if _, _, err := reg.RegisterSchema("shared/money.proto", sr.Schema{Schema: dep, Type: sr.TypeProtobuf}); err != nil {
		t.Fatal(err)
	}
	main := `syntax = "proto3";
package shop;
import "shared/money.proto";
import "google/protobuf/timestamp.proto";
message Ignored { int32 a = 1; }
message Order {
  enum Status { NEW = 0; PAID = 5; }
  string id = 1;
  map<string, int32> qty = 2;
  Status status = 3;
  oneof payer { string card = 4; string iban = 5; }
  shared.Money total = 6;
  google.protobuf.Timestamp at = 7;
  repeated Line lines = 8;
  message Line { string sku = 1; }
}`
	id, _, err := reg.RegisterSchema("orders-value", sr.Schema{Schema: main, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "shared/money.proto", Subject: "shared/money.proto", Version: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	// Message index [1] (Order): count 1 (02), index 1 (02).
	payload := []byte{
		0x0a, 0x02, 'o', '1', // id
		0x12, 0x05, 0x0a, 0x01, 'a', 0x10, 0x03, // qty {"a": 3}
		0x18, 0x05, // status PAID
		0x2a, 0x02, 'D', 'E', // iban "DE"
		0x32, 0x07, 0x0a, 0x03, 'E', 'U', 'R', 0x10, 0x64, // total {EUR, 100}
		0x3a, 0x02, 0x08, 0x01, // at {seconds: 1}
		0x42, 0x03, 0x0a, 0x01, 'x', // lines [{sku: x}]
	}
	frame := append(append(appendFrameHeader(nil, id), 0x02, 0x02), payload...)
	s, v, err := c.ToConnect("orders", frame)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "Order" {
		t.Errorf("schema %s", dumpSchema(s))
	}
	sv := v.(*connectors.StructValue)
	payer := sv.Get("payer").(*connectors.StructValue)
	total := sv.Get("total").(*connectors.StructValue)
	lines := sv.Get("lines").([]any)
	if sv.Get("id") != "o1" || sv.Get("status") != "PAID" || payer.Get("iban") != "DE" || payer.Get("card") != nil ||
		total.Get("cents") != int64(100) || !connectEqual(sv.Get("at"), time.Unix(1, 0).UTC()) ||
		len(lines) != 1 || lines[0].(*connectors.StructValue).Get("sku") != "x" || !connectEqual(sv.Get("qty"), map[string]any{"a": int32(3)}) {
		t.Errorf("value %#v", sv.Values)
	}
	if _, _, err := c.ToConnect("orders", append(append(appendFrameHeader(nil, id), 0x02, 0x0a), payload...)); err == nil || !strings.Contains(err.Error(), "index") {
		t.Errorf("message index 5 of a 2-message file: %v", err)
	}
}

func TestProtobufRefusals(t *testing.T) {
	reg := newCountingRegistry(t)
	c := protoConv(t, reg, nil)
	if _, err := c.FromConnect("t", connectors.StringSchema, "x"); err == nil || !strings.Contains(err.Error(), "struct") {
		t.Errorf("string root: %v", err)
	}
	nestedArr := connectors.StructSchema("N", connectors.Field{Name: "a", Schema: &connectors.Schema{Type: connectors.Array, Items: &connectors.Schema{Type: connectors.Array, Items: connectors.Int32Schema}}})
	if _, err := c.FromConnect("t", nestedArr, connectors.NewStruct(nestedArr).MustSet("a", []any{})); err == nil || !strings.Contains(err.Error(), "nested") {
		t.Errorf("nested array: %v", err)
	}
	for _, k := range []string{"wrapper.for.nullables", "enhanced.protobuf.schema.support", "use.latest.version"} {
		err := (&ProtobufConverter{}).Configure(map[string]string{"schema.registry.url": reg.URL(), k: "true"}, false)
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=true: %v", k, err)
		}
	}
	if err := (&ProtobufConverter{}).Configure(map[string]string{"schema.registry.url": reg.URL(), "optional.for.nullables": "true", "scrub.invalid.names": "true"}, false); err != nil {
		t.Errorf("honoured keys refused: %v", err)
	}
}

func TestProtobufOptionalForNullables(t *testing.T) {
	reg := newCountingRegistry(t)
	c := protoConv(t, reg, map[string]string{"optional.for.nullables": "true"})
	b, err := c.FromConnect("opt", avroPoint, connectors.NewStruct(avroPoint).MustSet("x", int32(0)))
	if err != nil {
		t.Fatal(err)
	}
	ss, _ := reg.GetSchema("opt-value", 1)
	if !strings.Contains(ss.Schema.Schema, "optional string label = 2;") {
		t.Errorf("registered %s", ss.Schema.Schema)
	}
	s, v, err := c.ToConnect("opt", b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Fields[0].Schema.Optional || !s.Fields[1].Schema.Optional || v.(*connectors.StructValue).Get("label") != nil {
		t.Errorf("schema %s value %v", dumpSchema(s), v)
	}
}

// TestProtobufMapEntryNumbers reads a Connect-style map (a repeated
// ...Entry message with key and value fields) whose fields are not
// numbered 1 and 2.
func TestProtobufMapEntryNumbers(t *testing.T) {
	reg := newCountingRegistry(t)
	c := protoConv(t, reg, nil)
	schema := `syntax = "proto3";
message M {
  repeated KvEntry kv = 1;
  message KvEntry { string key = 3; int64 value = 4; }
}`
	id, _, err := reg.RegisterSchema("me-value", sr.Schema{Schema: schema, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	// kv [{key: "a", value: 5}]: field 1 bytes (0a 05), key field 3 (1a 01 'a'), value field 4 (20 05).
	_, v, err := c.ToConnect("me", append(appendFrameHeader(nil, id), 0, 0x0a, 0x05, 0x1a, 0x01, 'a', 0x20, 0x05))
	if err != nil {
		t.Fatal(err)
	}
	if got := v.(*connectors.StructValue).Get("kv"); !connectEqual(got, map[string]any{"a": int64(5)}) {
		t.Errorf("kv read as %#v", got)
	}
}
