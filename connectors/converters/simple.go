package converters

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// Optional primitive schemas the converters report from ToConnect, like
// Connect's Schema.OPTIONAL_*_SCHEMA. Shared: never modify them.
var (
	OptionalInt16Schema   = &connectors.Schema{Type: connectors.Int16, Optional: true}
	OptionalInt32Schema   = &connectors.Schema{Type: connectors.Int32, Optional: true}
	OptionalFloat32Schema = &connectors.Schema{Type: connectors.Float32, Optional: true}
	OptionalFloat64Schema = &connectors.Schema{Type: connectors.Float64, Optional: true}
	OptionalBooleanSchema = &connectors.Schema{Type: connectors.Boolean, Optional: true}
)

// StringConverter mirrors org.apache.kafka.connect.storage.StringConverter.
// FromConnect renders any value as Java's toString would (see javaString);
// ToConnect gives an optional string schema and the bytes as a string.
//
// Only UTF-8 is supported for converter.encoding. Bytes that are not valid
// UTF-8 are kept as they are in the Go string, so that they survive a round
// trip; Connect's decoder would replace them with U+FFFD.
type StringConverter struct{}

func (c *StringConverter) Configure(props map[string]string, isKey bool) error {
	if enc, ok := props["converter.encoding"]; ok {
		switch strings.ToUpper(strings.TrimSpace(enc)) {
		case "UTF-8", "UTF8", "UNICODE-1-1-UTF-8":
		default:
			ce := &connectors.ConfigError{}
			ce.Add("converter.encoding", fmt.Sprintf("unsupported encoding %q: only UTF-8 is supported", enc))
			return ce
		}
	}
	return nil
}

func (c *StringConverter) FromConnect(topic string, schema *connectors.Schema, value any) ([]byte, error) {
	switch v := value.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	}
	b, err := appendJavaString(nil, schema, value)
	if err != nil {
		return nil, dataErr("StringConverter", err)
	}
	return b, nil
}

func (c *StringConverter) ToConnect(topic string, data []byte) (*connectors.Schema, any, error) {
	if data == nil {
		return connectors.OptionalStringSchema, nil, nil
	}
	return connectors.OptionalStringSchema, string(data), nil
}

// ByteArrayConverter mirrors org.apache.kafka.connect.converters.ByteArrayConverter:
// a []byte passes through unchanged, without a copy, in both directions.
type ByteArrayConverter struct{}

func (c *ByteArrayConverter) Configure(props map[string]string, isKey bool) error { return nil }

func (c *ByteArrayConverter) FromConnect(topic string, schema *connectors.Schema, value any) ([]byte, error) {
	if schema != nil && schema.Type != connectors.Bytes {
		return nil, &DataError{Converter: "ByteArrayConverter", Msg: fmt.Sprintf("invalid schema type %s: only bytes is supported", schema.Type)}
	}
	switch v := value.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	}
	return nil, &DataError{Converter: "ByteArrayConverter", Msg: fmt.Sprintf("not compatible with values of type %s: want []byte", typeName(value))}
}

func (c *ByteArrayConverter) ToConnect(topic string, data []byte) (*connectors.Schema, any, error) {
	return connectors.OptionalBytesSchema, data, nil
}

// NumberConverter mirrors Connect's IntegerConverter, LongConverter,
// ShortConverter, FloatConverter and DoubleConverter: the big-endian
// encodings of Kafka's IntegerSerializer etc. Like Connect's, it ignores the
// schema on FromConnect and accepts only the Go type of its kind.
type NumberConverter struct {
	kind connectors.SchemaType
}

func (c *NumberConverter) name() string {
	switch c.kind {
	case connectors.Int16:
		return "ShortConverter"
	case connectors.Int32:
		return "IntegerConverter"
	case connectors.Int64:
		return "LongConverter"
	case connectors.Float32:
		return "FloatConverter"
	}
	return "DoubleConverter"
}

func (c *NumberConverter) Configure(props map[string]string, isKey bool) error { return nil }

func (c *NumberConverter) FromConnect(topic string, schema *connectors.Schema, value any) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	switch v := value.(type) {
	case int16:
		if c.kind == connectors.Int16 {
			return binary.BigEndian.AppendUint16(make([]byte, 0, 2), uint16(v)), nil
		}
	case int32:
		if c.kind == connectors.Int32 {
			return binary.BigEndian.AppendUint32(make([]byte, 0, 4), uint32(v)), nil
		}
	case int64:
		if c.kind == connectors.Int64 {
			return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(v)), nil
		}
	case float32:
		if c.kind == connectors.Float32 {
			return binary.BigEndian.AppendUint32(make([]byte, 0, 4), math.Float32bits(v)), nil
		}
	case float64:
		if c.kind == connectors.Float64 {
			return binary.BigEndian.AppendUint64(make([]byte, 0, 8), math.Float64bits(v)), nil
		}
	}
	return nil, &DataError{Converter: c.name(), Msg: fmt.Sprintf("cannot serialize a %s: want %s", typeName(value), goType(c.kind))}
}

func (c *NumberConverter) ToConnect(topic string, data []byte) (*connectors.Schema, any, error) {
	var schema *connectors.Schema
	size := 0
	switch c.kind {
	case connectors.Int16:
		schema, size = OptionalInt16Schema, 2
	case connectors.Int32:
		schema, size = OptionalInt32Schema, 4
	case connectors.Int64:
		schema, size = connectors.OptionalInt64Schema, 8
	case connectors.Float32:
		schema, size = OptionalFloat32Schema, 4
	default:
		schema, size = OptionalFloat64Schema, 8
	}
	if data == nil {
		return schema, nil, nil
	}
	if len(data) != size {
		return nil, nil, &DataError{Converter: c.name(), Msg: fmt.Sprintf("cannot deserialize %d bytes: a %s takes exactly %d", len(data), c.kind, size)}
	}
	switch c.kind {
	case connectors.Int16:
		return schema, int16(binary.BigEndian.Uint16(data)), nil
	case connectors.Int32:
		return schema, int32(binary.BigEndian.Uint32(data)), nil
	case connectors.Int64:
		return schema, int64(binary.BigEndian.Uint64(data)), nil
	case connectors.Float32:
		return schema, math.Float32frombits(binary.BigEndian.Uint32(data)), nil
	}
	return schema, math.Float64frombits(binary.BigEndian.Uint64(data)), nil
}

func goType(t connectors.SchemaType) string {
	switch t {
	case connectors.Float32:
		return "float32"
	case connectors.Float64:
		return "float64"
	case connectors.Boolean:
		return "bool"
	}
	return string(t)
}

// BooleanConverter mirrors org.apache.kafka.connect.converters.BooleanConverter:
// one byte, 1 for true and 0 for false.
type BooleanConverter struct{}

func (c *BooleanConverter) Configure(props map[string]string, isKey bool) error { return nil }

func (c *BooleanConverter) FromConnect(topic string, schema *connectors.Schema, value any) ([]byte, error) {
	if schema != nil && schema.Type != connectors.Boolean {
		return nil, &DataError{Converter: "BooleanConverter", Msg: fmt.Sprintf("invalid schema type %s: only boolean is supported", schema.Type)}
	}
	switch v := value.(type) {
	case nil:
		return nil, nil
	case bool:
		if v {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	}
	return nil, &DataError{Converter: "BooleanConverter", Msg: fmt.Sprintf("not compatible with values of type %s: want bool", typeName(value))}
}

func (c *BooleanConverter) ToConnect(topic string, data []byte) (*connectors.Schema, any, error) {
	if data == nil {
		return OptionalBooleanSchema, nil, nil
	}
	if len(data) != 1 {
		return nil, nil, &DataError{Converter: "BooleanConverter", Msg: fmt.Sprintf("cannot deserialize %d bytes: a boolean takes exactly 1", len(data))}
	}
	switch data[0] {
	case 0:
		return OptionalBooleanSchema, false, nil
	case 1:
		return OptionalBooleanSchema, true, nil
	}
	return nil, nil, &DataError{Converter: "BooleanConverter", Msg: fmt.Sprintf("unexpected byte %d: a boolean is 0 or 1", data[0])}
}
