package transforms

import (
	"fmt"
	"math/big"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// part is the part of a record a $Key or $Value transform works on.
type part interface {
	schema(r *connectors.Record) *connectors.Schema
	value(r *connectors.Record) any
	// with replaces this part of r and returns r: the record a transform
	// is given is its own to change (connectors.Transform), which spares a
	// copy per transform and record; what r's fields point to is never
	// changed.
	with(r *connectors.Record, s *connectors.Schema, v any) *connectors.Record
}

type keyPart struct{}

func (keyPart) schema(r *connectors.Record) *connectors.Schema { return r.KeySchema }
func (keyPart) value(r *connectors.Record) any                 { return r.Key }
func (keyPart) with(r *connectors.Record, s *connectors.Schema, v any) *connectors.Record {
	r.KeySchema, r.Key = s, v
	return r
}

type valuePart struct{}

func (valuePart) schema(r *connectors.Record) *connectors.Schema { return r.ValueSchema }
func (valuePart) value(r *connectors.Record) any                 { return r.Value }
func (valuePart) with(r *connectors.Record, s *connectors.Schema, v any) *connectors.Record {
	r.ValueSchema, r.Value = s, v
	return r
}

// Errors as Connect's Requirements words them.

func requireMap(v any, purpose string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("Only Map objects supported in absence of schema for [%s], found: %s", purpose, className(v))
	}
	return m, nil
}

func requireStruct(v any, purpose string) (*connectors.StructValue, error) {
	s, ok := v.(*connectors.StructValue)
	if !ok {
		return nil, fmt.Errorf("Only Struct objects supported for [%s], found: %s", purpose, className(v))
	}
	return s, nil
}

func requireSchema(s *connectors.Schema, purpose string) error {
	if s == nil {
		return fmt.Errorf("Schema required for [%s]", purpose)
	}
	return nil
}

func requireSinkRecord(r *connectors.Record, purpose string) error {
	if r.SinkOffset == nil {
		return fmt.Errorf("Only SinkRecord supported for [%s], found: org.apache.kafka.connect.source.SourceRecord", purpose)
	}
	return nil
}

// className names a Go value by the Java class Connect would see, for
// error messages.
func className(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "java.lang.String"
	case int8:
		return "java.lang.Byte"
	case int16:
		return "java.lang.Short"
	case int32:
		return "java.lang.Integer"
	case int64:
		return "java.lang.Long"
	case float32:
		return "java.lang.Float"
	case float64:
		return "java.lang.Double"
	case bool:
		return "java.lang.Boolean"
	case []byte:
		return "[B"
	case []any:
		return "java.util.ArrayList"
	case map[string]any:
		return "java.util.HashMap"
	case *connectors.StructValue:
		return "org.apache.kafka.connect.data.Struct"
	case *big.Rat:
		return "java.math.BigDecimal"
	case time.Time:
		return "java.util.Date"
	}
	return fmt.Sprintf("%T", v)
}
