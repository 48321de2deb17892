package transforms

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// Helpers of the header transforms and the predicates: Connect's ConfigDef
// parsing of their keys, and its ConnectHeaders and Struct checks.

// Validators with Connect's words (ConfigDef's and the transforms').

func validateNonEmptyList(v string) error {
	if len(javaList(v)) == 0 {
		return fmt.Errorf("Empty list")
	}
	return nil
}

func validateNonEmptyString(v string) error {
	if javaTrim(v) == "" {
		return fmt.Errorf("String must be non-empty")
	}
	return nil
}

func validateStringIn(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if javaTrim(v) == a {
				return nil
			}
		}
		return fmt.Errorf("String must be one of: %s", strings.Join(allowed, ", "))
	}
}

// isJavaNull reports whether v is Java's null: nil, or a nil pointer,
// slice or map (a tombstone read by ByteArrayConverter is a nil []byte).
func isJavaNull(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// withHeaders returns a copy of r with hs as its headers.
func withHeaders(r *connectors.Record, hs []connectors.Header) *connectors.Record {
	c := *r
	c.Headers = hs
	return &c
}

// copyHeaders returns a new slice of hs with room for n more.
func copyHeaders(hs []connectors.Header, n int) []connectors.Header {
	return append(make([]connectors.Header, 0, len(hs)+n), hs...)
}

// checkHeaderValue is ConnectHeaders.checkSchemaMatches: a header's value
// must be null for an optional schema only, and of the Go type of its
// schema's type (a Date, Time or Timestamp a time.Time, a Decimal a
// *big.Rat).
func checkHeaderValue(s *connectors.Schema, v any) error {
	if s == nil {
		return nil
	}
	if isJavaNull(v) {
		if !s.Optional {
			return fmt.Errorf("A null value requires an optional schema but was %s", connectSchemaString(s))
		}
		return nil
	}
	if !goTypeFits(s, v) {
		return fmt.Errorf("The value %v is not compatible with the schema %s", v, connectSchemaString(s))
	}
	return nil
}

// checkFieldValue is what Connect's Struct.put checks of a value
// (ConnectSchema.validateValue): null only in an optional field, and a Go
// value of the field schema's type, elements and map values included. A
// struct value is not checked against its field's schema: Connect compares
// them for equality, which a Go schema has no method for.
func checkFieldValue(name string, s *connectors.Schema, v any) error {
	location := fmt.Sprintf("field: %q", name)
	return checkConnectValue(s, v, location)
}

func checkConnectValue(s *connectors.Schema, v any, location string) error {
	if isJavaNull(v) {
		if !s.Optional {
			return fmt.Errorf("Invalid value: null used for required %s, schema type: %s", location, strings.ToUpper(string(s.Type)))
		}
		return nil
	}
	if !goTypeFits(s, v) {
		name := ""
		if s.Name != "" {
			name = fmt.Sprintf(" %q", s.Name)
		}
		return fmt.Errorf("Invalid Java object for schema%s with type %s: %T for %s", name, strings.ToUpper(string(s.Type)), v, location)
	}
	switch x := v.(type) {
	case []any:
		if s.Items == nil {
			return fmt.Errorf("No schema defined for element of array %s", location)
		}
		for _, e := range x {
			if err := checkConnectValue(s.Items, e, "element of array "+location); err != nil {
				return err
			}
		}
	case map[string]any:
		if s.Keys == nil || s.Values == nil {
			return fmt.Errorf("No schema defined for key or value of map %s", location)
		}
		for _, e := range x {
			if err := checkConnectValue(s.Values, e, "value of map "+location); err != nil {
				return err
			}
		}
	}
	return nil
}

// connectSchemaString is ConnectSchema.toString: Schema{TYPE}, or
// Schema{name:TYPE} for a named schema.
func connectSchemaString(s *connectors.Schema) string {
	if s.Name != "" {
		return fmt.Sprintf("Schema{%s:%s}", s.Name, strings.ToUpper(string(s.Type)))
	}
	return fmt.Sprintf("Schema{%s}", strings.ToUpper(string(s.Type)))
}
