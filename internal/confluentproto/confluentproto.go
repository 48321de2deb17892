// Package confluentproto holds the .proto files that a Protobuf schema in
// a Confluent Schema Registry may import without a schema reference: both
// Sluice's registry (internal/schemaregistry) and its ProtobufConverter
// (connectors/converters) compile schemas against them, so they share one
// copy.
package confluentproto

import (
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// MetaImport is the file that defines confluent.Meta, the options
// Confluent's Connect converter puts on fields and messages.
const MetaImport = "confluent/meta.proto"

// File returns the text of a well-known file by its import path.
func File(path string) (string, bool) {
	f, ok := files[path]
	return f, ok
}

// Open opens a well-known file by its import path, as protocompile's
// SourceResolver asks; an unknown path is fs.ErrNotExist.
func Open(path string) (io.ReadCloser, error) {
	f, ok := files[path]
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	return io.NopCloser(strings.NewReader(f)), nil
}

// files are the files Confluent's serializers (Java and Python) import
// without a reference: Confluent's own meta and decimal types and the
// google.type ones its Connect converter uses. The google/protobuf/* files
// come with protocompile.WithStandardImports. These definitions are written
// for Sluice from the documented field names and numbers.
var files = map[string]string{
	MetaImport: `syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
`,
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
`,
	"google/type/date.proto": `syntax = "proto3";
package google.type;
message Date {
  int32 year = 1;
  int32 month = 2;
  int32 day = 3;
}
`,
	"google/type/timeofday.proto": `syntax = "proto3";
package google.type;
message TimeOfDay {
  int32 hours = 1;
  int32 minutes = 2;
  int32 seconds = 3;
  int32 nanos = 4;
}
`,
}
