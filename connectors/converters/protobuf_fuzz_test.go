package converters

import (
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// FuzzProtobufToConnect feeds arbitrary frames to
// ProtobufConverter.ToConnect: never a panic, every error a *DataError,
// and what it accepts it can write back.
func FuzzProtobufToConnect(f *testing.F) {
	reg := newCountingRegistry(f)
	c := protoConv(f, reg, nil)
	schema := `syntax = "proto3";
package fz;
import "google/protobuf/timestamp.proto";
import "confluent/type/decimal.proto";
import "google/type/date.proto";
import "google/type/timeofday.proto";
import "confluent/meta.proto";
message M {
  enum E { A = 0; B = 1; }
  int32 small = 1 [(confluent.field_meta) = {params: [{key: "connect.type", value: "int8"}]}];
  repeated string s = 2;
  map<int64, bytes> m = 3;
  E e = 4;
  oneof u { string a = 5; N n = 6; }
  google.protobuf.Timestamp ts = 7;
  confluent.type.Decimal d = 8 [(confluent.field_meta) = {params: [{key: "scale", value: "2"}]}];
  google.type.Date date = 9;
  google.type.TimeOfDay time = 10;
  repeated NEntry kv = 11;
  message N { sint64 z = 1; fixed32 f = 2; }
  message NEntry { string key = 1; N value = 2; }
}`
	id, _, err := reg.RegisterSchema("fz-value", sr.Schema{Schema: schema, Type: sr.TypeProtobuf})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(appendFrameHeader(nil, id), 0, 0x08, 0x7f, 0x12, 0x01, 'x', 0x1a, 0x04, 0x08, 0x01, 0x12, 0x00, 0x20, 0x01, 0x32, 0x02, 0x08, 0x03))
	f.Add(append(appendFrameHeader(nil, id), 0, 0x42, 0x06, 0x0a, 0x01, 0x64, 0x18, 0x02, 0x00, 0x4a, 0x06, 0x08, 0xe8, 0x0f, 0x10, 0x0d, 0x18, 0x01))
	f.Add(append(appendFrameHeader(nil, id), 2, 2, 0))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzReadBack(t, c, "fz", data) })
}
