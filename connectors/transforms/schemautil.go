package transforms

import (
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// Helpers shared by the transforms: what Connect's SchemaUtil, SchemaBuilder,
// Struct and ConnectSchema do for them, so that a transform built on these
// refuses what Connect's refuses, with Connect's words.

// replace.null.with.default (KIP-1040), which several transforms define
// alike: when true a null field with a default reads as its default.
const (
	replaceNullConfig         = "replace.null.with.default"
	replaceNullWithDefaultDoc = "Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used."
)

// copySchemaBasics is SchemaUtil.copySchemaBasics: a new schema of type t
// with src's name, version, doc and parameters (and nothing else: not its
// optionality, default, fields or element schemas).
func copySchemaBasics(src *connectors.Schema, t connectors.SchemaType) *connectors.Schema {
	s := &connectors.Schema{Type: t, Name: src.Name, Version: src.Version, Doc: src.Doc}
	if len(src.Parameters) > 0 {
		s.Parameters = make(map[string]string, len(src.Parameters))
		for k, v := range src.Parameters {
			s.Parameters[k] = v
		}
	}
	return s
}

// copySchemaBasicsOf is SchemaUtil.copySchemaBasics(source): the basics of
// src in a schema of its own type, keeping an array's element schema.
func copySchemaBasicsOf(src *connectors.Schema) *connectors.Schema {
	s := copySchemaBasics(src, src.Type)
	if src.Type == connectors.Array {
		s.Items = src.Items
	}
	return s
}

// addField is SchemaBuilder.field: it appends a field to a struct schema
// being built, refusing an empty or repeated name as Connect does.
func addField(s *connectors.Schema, name string, fs *connectors.Schema) error {
	if s.Type != connectors.Struct {
		return fmt.Errorf("Cannot create fields on type %s", typeName(s.Type))
	}
	if name == "" {
		return fmt.Errorf("fieldName cannot be null.")
	}
	if fs == nil {
		return fmt.Errorf("fieldSchema for field %s cannot be null.", name)
	}
	if i, _ := s.Field(name); i >= 0 {
		return fmt.Errorf("Cannot create field because of field name duplication %s", name)
	}
	s.Fields = append(s.Fields, connectors.Field{Name: name, Schema: fs})
	return nil
}

// setDefault is SchemaBuilder.defaultValue: the default must be a valid
// value of the schema being built (its name included: a logical type's
// default must be of the logical type's Go type).
func setDefault(s *connectors.Schema, v any) error {
	if err := checkValue(s, v, location{}); err != nil {
		return &causedError{msg: "Invalid default value", cause: err}
	}
	s.Default = v
	return nil
}

// causedError is an error with Connect's message and the exception it
// wraps as its cause (SchemaBuilderException("Invalid default value", e)).
type causedError struct {
	msg   string
	cause error
}

func (e *causedError) Error() string { return e.msg }
func (e *causedError) Unwrap() error { return e.cause }

// fieldIndex is Struct's lookupField: the index of a field by name, or
// Connect's error for a name the schema lacks.
func fieldIndex(s *connectors.Schema, name string) (int, error) {
	i, _ := s.Field(name)
	if i < 0 {
		return -1, fmt.Errorf("%s is not a valid field name", name)
	}
	return i, nil
}

// structGet is Struct.get(Field): field i's value, or the field schema's
// default when the value is null.
func structGet(v *connectors.StructValue, i int) any {
	if i < 0 || i >= len(v.Values) || i >= len(v.Schema.Fields) {
		return nil
	}
	if val := v.Values[i]; val != nil {
		return val
	}
	return v.Schema.Fields[i].Schema.Default
}

// structGetWithoutDefault is Struct.getWithoutDefault: the named field's
// value as set, null included.
func structGetWithoutDefault(v *connectors.StructValue, name string) (any, error) {
	i, err := fieldIndex(v.Schema, name)
	if err != nil {
		return nil, err
	}
	if i >= len(v.Values) {
		return nil, nil
	}
	return v.Values[i], nil
}

// structPut is Struct.put(Field, value): the value is validated against
// field i's schema before it is set.
func structPut(v *connectors.StructValue, i int, val any) error {
	f := v.Schema.Fields[i]
	if err := checkValue(f.Schema, val, fieldLocation(f.Name)); err != nil {
		return err
	}
	v.Values[i] = val
	return nil
}

// structPutName is Struct.put(String, value).
func structPutName(v *connectors.StructValue, name string, val any) error {
	i, err := fieldIndex(v.Schema, name)
	if err != nil {
		return err
	}
	return structPut(v, i, val)
}

// schemaTypeOf is ConnectSchema.schemaType(value.getClass()): the schema
// type of a schemaless value, false for a Go value Connect has no type for
// (logical types' values included, as in Connect).
func schemaTypeOf(v any) (connectors.SchemaType, bool) {
	switch v.(type) {
	case int8:
		return connectors.Int8, true
	case int16:
		return connectors.Int16, true
	case int32:
		return connectors.Int32, true
	case int64:
		return connectors.Int64, true
	case float32:
		return connectors.Float32, true
	case float64:
		return connectors.Float64, true
	case bool:
		return connectors.Boolean, true
	case string:
		return connectors.String, true
	case []byte:
		return connectors.Bytes, true
	case []any:
		return connectors.Array, true
	case map[string]any:
		return connectors.Map, true
	case *connectors.StructValue:
		return connectors.Struct, true
	}
	return "", false
}

// typeName is a schema type as Connect's Schema.Type prints: INT32.
func typeName(t connectors.SchemaType) string { return strings.ToUpper(string(t)) }

// javaClass is value.getClass() as Java prints it in a message: "class
// java.lang.Integer", "class [B" for bytes.
func javaClass(v any) string {
	if v == nil {
		return "null"
	}
	return "class " + className(v)
}
