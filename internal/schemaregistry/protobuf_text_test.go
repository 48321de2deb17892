package schemaregistry

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// descriptorOf compiles text and returns its FileDescriptorProto with
// json_name filled in, as protoc (and so Confluent's Python serializer)
// hands it over.
func descriptorOf(t *testing.T, text string) *descriptorpb.FileDescriptorProto {
	t.Helper()
	fd, err := compileProto(text, nil)
	if err != nil {
		t.Fatalf("compiling %q: %v", text, err)
	}
	fdp := protodesc.ToFileDescriptorProto(fd)
	fdp.Name = proto.String("user.proto")
	var fill func([]*descriptorpb.DescriptorProto)
	fill = func(msgs []*descriptorpb.DescriptorProto) {
		for _, m := range msgs {
			for _, f := range m.Field {
				if f.JsonName == nil {
					f.JsonName = proto.String(defaultJSONName(f.GetName()))
				}
			}
			fill(m.NestedType)
		}
	}
	fill(fdp.MessageType)
	return fdp
}

func base64Descriptor(t *testing.T, fdp *descriptorpb.FileDescriptorProto) string {
	t.Helper()
	b, err := proto.Marshal(fdp)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// TestDescriptorWrittenAsProtoText: descriptors of every construct are
// written out as .proto text that compiles back to the same descriptor.
func TestDescriptorWrittenAsProtoText(t *testing.T) {
	for i, text := range []string{
		`syntax = "proto3"; package shop.v1;
import "google/protobuf/timestamp.proto";
option java_package = "com.example.shop";
option go_package = "example.com/shop";
message Order {
  int64 id = 1;
  string customer_name = 2 [json_name = "customer"];
  repeated Item items = 3;
  map<string, int32> counts = 4;
  google.protobuf.Timestamp at = 5;
  oneof payment { string card = 6; bytes token = 7; }
  optional double discount = 8;
  Status status = 9 [deprecated = true];
  repeated int32 codes = 10 [packed = false];
  message Item { string sku = 1; map<int64, Item> children = 2; }
  enum Status { option allow_alias = true; UNKNOWN = 0; NEW = 1; FRESH = 1; reserved 5 to 9, 20; reserved "OLD"; }
  reserved 100 to 199, 300;
  reserved "legacy";
}
service Orders { rpc Get(Order) returns (stream Order); rpc Put(stream Order) returns (Order) { option deprecated = true; } }`,
		`syntax = "proto2"; package p;
message M {
  optional int32 a = 1 [default = -7];
  required string b = 2 [default = "x\"y"];
  optional bytes c = 3 [default = "\001\377"];
  optional E e = 4 [default = TWO];
  extensions 100 to max;
}
enum E { ONE = 1; TWO = 2; }
extend M { optional string note = 100; }`,
		`syntax = "proto3"; message Empty {}`,
	} {
		fdp := descriptorOf(t, text)
		printed, err := printDescriptor(fdp)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		fd, err := compileProto(printed, nil)
		if err != nil {
			t.Fatalf("case %d: printed text does not compile: %v\n%s", i, err, printed)
		}
		if !sameDescriptor(fdp, fd) {
			t.Fatalf("case %d: printed text compiles to another descriptor:\n%s\nwant %v\ngot  %v", i, printed, fdp, protodesc.ToFileDescriptorProto(fd))
		}
	}
}

// TestRegisterProtobufDescriptor registers a schema as Confluent's Python
// serializer does (base64 FileDescriptorProto), reads it back as .proto
// text and, with format=serialized, as a descriptor again.
func TestRegisterProtobufDescriptor(t *testing.T) {
	srv := newTestRegistry(t)
	text := `syntax = "proto3"; package shop; message Order { int64 id = 1; map<string, string> tags = 2; }`
	fdp := descriptorOf(t, text)
	do(t, srv, "POST", "/subjects/orders-value/versions", body(TypeProtobuf, base64Descriptor(t, fdp))).want(t, "register descriptor", 200, `{"id":1}`)
	// The same descriptor again is the same schema.
	do(t, srv, "POST", "/subjects/orders-value/versions", body(TypeProtobuf, base64Descriptor(t, fdp))).want(t, "descriptor again", 200, `{"id":1}`)
	got := do(t, srv, "GET", "/schemas/ids/1", "")
	got.want(t, "by id", 200, "")
	var answer struct {
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
	}
	if err := json.Unmarshal([]byte(got.body), &answer); err != nil || answer.SchemaType != TypeProtobuf || !strings.Contains(answer.Schema, "message Order") {
		t.Fatalf("schema by id: %s (%v), want .proto text", got.body, err)
	}
	ser := do(t, srv, "GET", "/schemas/ids/1?format=serialized", "")
	ser.want(t, "serialized", 200, "")
	if err := json.Unmarshal([]byte(ser.body), &answer); err != nil {
		t.Fatal(err)
	}
	back, ok := decodeDescriptor(answer.Schema)
	if !ok || len(back.MessageType) != 1 || back.MessageType[0].GetName() != "Order" || back.GetPackage() != "shop" {
		t.Fatalf("format=serialized answered %q, not the descriptor of shop.Order", answer.Schema)
	}
	do(t, srv, "GET", "/subjects/orders-value/versions/1?format=serialized", "").want(t, "version serialized", 200, "")
	do(t, srv, "GET", "/subjects/orders-value/versions/1?format=resolved", "").wantCode(t, "unknown format", 400, 400)

	// A custom option this binary cannot write out is refused, naming why.
	custom := descriptorOf(t, `syntax = "proto3"; message M { int32 a = 1; }`)
	custom.MessageType[0].Options = &descriptorpb.MessageOptions{}
	custom.MessageType[0].Options.ProtoReflect().SetUnknown([]byte{0x82, 0x44, 0x02, 0x0a, 0x00}) // field 1088, an empty Meta
	a := do(t, srv, "POST", "/subjects/custom/versions", body(TypeProtobuf, base64Descriptor(t, custom)))
	a.wantCode(t, "unknown custom option", 422, 42201)
	if !strings.Contains(a.body, "custom options") {
		t.Fatalf("refusal %s does not say why", a.body)
	}
	do(t, srv, "POST", "/subjects/junk/versions", body(TypeProtobuf, base64.StdEncoding.EncodeToString([]byte("not a descriptor")))).
		wantCode(t, "base64 of something else", 422, 42201)
}

// TestProtobufLayoutIsNotIdentity: texts that differ only in layout,
// comments and the order of options are one schema, as in Confluent's
// registry, which compares canonical forms.
func TestProtobufLayoutIsNotIdentity(t *testing.T) {
	srv := newTestRegistry(t)
	a := `syntax="proto3";package p;option java_package="x";option go_package="y";message M{int32 a=1;repeated string b=2;}`
	b := "// orders\nsyntax = \"proto3\";\npackage p;\noption go_package = \"y\";\noption java_package = \"x\";\n\nmessage M {\n  int32 a = 1; // the id\n  repeated string b = 2;\n}\n"
	do(t, srv, "POST", "/subjects/p/versions", body(TypeProtobuf, a)).want(t, "first layout", 200, `{"id":1}`)
	do(t, srv, "POST", "/subjects/p/versions", body(TypeProtobuf, b)).want(t, "second layout", 200, `{"id":1}`)
	do(t, srv, "POST", "/subjects/p", body(TypeProtobuf, b)).want(t, "lookup by the second layout", 200, "")
	do(t, srv, "GET", "/subjects/p/versions", "").want(t, "one version", 200, `[1]`)
}
