package connectors

import "fmt"

// SchemaType is one of Connect's schema types.
type SchemaType string

const (
	Int8    SchemaType = "int8"
	Int16   SchemaType = "int16"
	Int32   SchemaType = "int32"
	Int64   SchemaType = "int64"
	Float32 SchemaType = "float32"
	Float64 SchemaType = "float64"
	Boolean SchemaType = "boolean"
	String  SchemaType = "string"
	Bytes   SchemaType = "bytes"
	Array   SchemaType = "array"
	Map     SchemaType = "map"
	Struct  SchemaType = "struct"
)

// Names of Connect's logical types. A logical type is a primitive schema with
// one of these names; its Go value is given beside it.
const (
	TimestampLogical = "org.apache.kafka.connect.data.Timestamp" // int64 millis; time.Time
	DateLogical      = "org.apache.kafka.connect.data.Date"      // int32 days; time.Time
	TimeLogical      = "org.apache.kafka.connect.data.Time"      // int32 millis of day; time.Time
	DecimalLogical   = "org.apache.kafka.connect.data.Decimal"   // bytes, parameter "scale"; *big.Rat
)

// Schema is a Connect schema. The Go value of each type:
//
//	int8..int64  int8, int16, int32, int64
//	float32/64   float32, float64
//	boolean      bool
//	string       string
//	bytes        []byte
//	array        []any
//	map          map[string]any (keys are rendered as strings)
//	struct       *StructValue
//
// A nil value is allowed only for an Optional schema. Logical types use the Go
// values listed beside their names.
type Schema struct {
	Type       SchemaType
	Optional   bool
	Default    any
	Name       string
	Version    int
	Doc        string
	Parameters map[string]string

	Fields []Field // struct
	Items  *Schema // array elements
	Keys   *Schema // map keys
	Values *Schema // map values
}

// Field is one field of a struct schema.
type Field struct {
	Name   string
	Schema *Schema
}

// Field returns the index and schema of the named field, or -1 and nil.
func (s *Schema) Field(name string) (int, *Schema) {
	for i, f := range s.Fields {
		if f.Name == name {
			return i, f.Schema
		}
	}
	return -1, nil
}

// Optionally returns a copy of s marked optional.
func (s Schema) Optionally() *Schema {
	s.Optional = true
	return &s
}

// Primitive schemas, shared: never modify them; use Optionally for a copy.
var (
	Int8Schema    = &Schema{Type: Int8}
	Int16Schema   = &Schema{Type: Int16}
	Int32Schema   = &Schema{Type: Int32}
	Int64Schema   = &Schema{Type: Int64}
	Float32Schema = &Schema{Type: Float32}
	Float64Schema = &Schema{Type: Float64}
	BooleanSchema = &Schema{Type: Boolean}
	StringSchema  = &Schema{Type: String}
	BytesSchema   = &Schema{Type: Bytes}

	OptionalStringSchema = &Schema{Type: String, Optional: true}
	OptionalInt64Schema  = &Schema{Type: Int64, Optional: true}
	OptionalBytesSchema  = &Schema{Type: Bytes, Optional: true}
)

// StructSchema builds a struct schema from fields given in order.
func StructSchema(name string, fields ...Field) *Schema {
	return &Schema{Type: Struct, Name: name, Fields: fields}
}

// StructValue is the value of a struct schema: values in field order.
type StructValue struct {
	Schema *Schema
	Values []any
}

// NewStruct returns an empty struct of schema s.
//
// A struct of up to 16 fields is one allocation, the StructValue and its
// values side by side, not two: transforms that rebuild a struct per
// record (InsertField, ReplaceField, Cast, ...) spend most of their time
// allocating. Values' capacity is its length, so an append copies it out.
func NewStruct(s *Schema) *StructValue {
	n := len(s.Fields)
	switch {
	case n <= 4:
		b := new(struct {
			v StructValue
			a [4]any
		})
		b.v = StructValue{Schema: s, Values: b.a[:n:n]}
		return &b.v
	case n <= 8:
		b := new(struct {
			v StructValue
			a [8]any
		})
		b.v = StructValue{Schema: s, Values: b.a[:n:n]}
		return &b.v
	case n <= 16:
		b := new(struct {
			v StructValue
			a [16]any
		})
		b.v = StructValue{Schema: s, Values: b.a[:n:n]}
		return &b.v
	}
	return &StructValue{Schema: s, Values: make([]any, n)}
}

// Set assigns a field by name. Setting a field the schema lacks is an error.
func (v *StructValue) Set(name string, value any) error {
	i, _ := v.Schema.Field(name)
	if i < 0 {
		return fmt.Errorf("struct %q has no field %q", v.Schema.Name, name)
	}
	v.Values[i] = value
	return nil
}

// MustSet is Set for fields known to exist; it returns v for chaining.
func (v *StructValue) MustSet(name string, value any) *StructValue {
	if err := v.Set(name, value); err != nil {
		panic(err)
	}
	return v
}

// Get returns a field's value by name, or nil when the schema lacks it.
func (v *StructValue) Get(name string) any {
	i, _ := v.Schema.Field(name)
	if i < 0 {
		return nil
	}
	return v.Values[i]
}

// Validate checks that every required field is set.
func (v *StructValue) Validate() error {
	for i, f := range v.Schema.Fields {
		if v.Values[i] == nil && !f.Schema.Optional && f.Schema.Default == nil {
			return fmt.Errorf("struct %q: required field %q is missing", v.Schema.Name, f.Name)
		}
	}
	return nil
}
