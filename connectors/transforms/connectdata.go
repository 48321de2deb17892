package transforms

// Helpers that mirror Connect's data classes (Struct.put's validation,
// Struct.get's defaults, ConnectSchema.equals, SchemaUtil.copySchemaBasics,
// SchemaBuilder.field's checks) and its config parsing, for the transforms
// that build new structs and schemas: InsertField, MaskField, ReplaceField
// and TimestampConverter. Connect fails a record on the same conditions, so
// porting the checks keeps our errors where Connect's are.

import (
	"bytes"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// checkValue is ConnectSchema.validateValue: Struct.put runs it on every
// value it stores, so a transform that builds a struct fails where
// Connect's does (a null in a required field, a value of the wrong type).
// at says where v is, for messages only; it is built into a string only
// when a message needs it (this runs for every field of every record).
func checkValue(s *connectors.Schema, v any, at location) error {
	if v == nil {
		if !s.Optional {
			return fmt.Errorf("Invalid value: null used for required %s, schema type: %s", at, typeName(s.Type))
		}
		return nil
	}
	if !goTypeFits(s, v) {
		msg := "Invalid Java object for schema"
		if s.Name != "" {
			msg += " \"" + s.Name + "\""
		}
		return fmt.Errorf("%s with type %s: %s for %s", msg, typeName(s.Type), javaClass(v), at)
	}
	switch s.Type {
	case connectors.Struct:
		sv := v.(*connectors.StructValue)
		if !schemasEqual(sv.Schema, s) {
			return fmt.Errorf("Struct schemas do not match.")
		}
		return validateStruct(sv)
	case connectors.Array:
		if s.Items == nil {
			return fmt.Errorf("No schema defined for element of array %s", at)
		}
		for _, e := range v.([]any) {
			if err := checkValue(s.Items, e, at.in("element of array ")); err != nil {
				return err
			}
		}
	case connectors.Map:
		if s.Keys == nil {
			return fmt.Errorf("No schema defined for key of map %s", at)
		}
		if s.Values == nil {
			return fmt.Errorf("No schema defined for value of map %s", at)
		}
		// Keys are strings in Go whatever the key schema: only values
		// can be checked.
		for _, e := range v.(map[string]any) {
			if err := checkValue(s.Values, e, at.in("value of map ")); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateStruct is Struct.validate: a null is fine in an optional field
// or one with a default.
func validateStruct(sv *connectors.StructValue) error {
	for i, f := range sv.Schema.Fields {
		var v any
		if i < len(sv.Values) {
			v = sv.Values[i]
		}
		if v == nil && (f.Schema.Optional || f.Schema.Default != nil) {
			continue
		}
		if err := checkValue(f.Schema, v, fieldLocation(f.Name)); err != nil {
			return err
		}
	}
	return nil
}

func fieldLocation(name string) location { return location{field: name} }

// location is where a value is: a struct field (field: "name"), or the
// whole value when field is "", within array elements or map values.
type location struct {
	field, within string
}

func (l location) in(what string) location { return location{field: l.field, within: what + l.within} }

func (l location) String() string {
	if l.field == "" {
		return l.within + "value"
	}
	return l.within + "field: \"" + l.field + "\""
}

// goTypeFits reports whether v is the Go value of s's type (Connect's
// expected classes of a schema).
func goTypeFits(s *connectors.Schema, v any) bool {
	switch s.Name {
	case connectors.DecimalLogical:
		_, ok := v.(*big.Rat)
		return ok
	case connectors.DateLogical, connectors.TimeLogical, connectors.TimestampLogical:
		_, ok := v.(time.Time)
		return ok
	}
	// Otherwise the value's own schema type must be s's (schemaTypeOf).
	t, ok := schemaTypeOf(v)
	return ok && t == s.Type
}

// putField stores v in field i of out after checkValue, as Struct.put.
func putField(out *connectors.StructValue, i int, v any) error {
	f := out.Schema.Fields[i]
	if err := checkValue(f.Schema, v, fieldLocation(f.Name)); err != nil {
		return err
	}
	out.Values[i] = v
	return nil
}

// copyField is putField(out, i, fieldValue(in, j, withDefault)): field j
// of in copied into field i of out, as InsertField and ReplaceField copy
// the fields they keep. A non-null value moving between fields of the very
// same schema skips Struct.put's check: Connect checked it when it was put
// into in, a struct of that schema, and checking it again per record and
// per transform is most of these transforms' cost. Nulls are still checked
// (a Connect Struct may hold null in a required field until validated, and
// put refuses it), and so is every value whose field schema changed.
func copyField(out *connectors.StructValue, i int, in *connectors.StructValue, j int, withDefault bool) error {
	if x := in.Values[j]; x != nil && out.Schema.Fields[i].Schema == in.Schema.Fields[j].Schema {
		out.Values[i] = x
		return nil
	}
	return putField(out, i, fieldValue(in, j, withDefault))
}

// fieldValue reads field i of v: with withDefault, a null gives the field's
// default, as Struct.get; without, the stored value, as getWithoutDefault
// (replace.null.with.default=false).
func fieldValue(v *connectors.StructValue, i int, withDefault bool) any {
	x := v.Values[i]
	if x == nil && withDefault {
		return v.Schema.Fields[i].Schema.Default
	}
	return x
}

// structBuilder builds a struct schema as SchemaBuilder.struct() does,
// refusing the field names SchemaBuilder.field refuses.
type structBuilder struct {
	s     *connectors.Schema
	names map[string]bool
}

// newStructBuilder starts a struct schema with base's name, version, doc
// and parameters (SchemaUtil.copySchemaBasics); like Connect's, it is
// required and has no default unless the caller says so.
func newStructBuilder(base *connectors.Schema) *structBuilder {
	s := &connectors.Schema{Type: connectors.Struct, Name: base.Name, Version: base.Version, Doc: base.Doc}
	if base.Parameters != nil {
		s.Parameters = make(map[string]string, len(base.Parameters))
		for k, v := range base.Parameters {
			s.Parameters[k] = v
		}
	}
	return &structBuilder{s: s, names: map[string]bool{}}
}

func (b *structBuilder) field(name string, fs *connectors.Schema) error {
	if name == "" {
		return fmt.Errorf("fieldName cannot be null.")
	}
	if b.names[name] {
		return fmt.Errorf("Cannot create field because of field name duplication %s", name)
	}
	b.names[name] = true
	b.s.Fields = append(b.s.Fields, connectors.Field{Name: name, Schema: fs})
	return nil
}

// schemasEqual is ConnectSchema.equals: schemas are equal when every
// attribute is, defaults compared by value.
func schemasEqual(a, b *connectors.Schema) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	if a.Type != b.Type || a.Optional != b.Optional || a.Name != b.Name || a.Version != b.Version || a.Doc != b.Doc {
		return false
	}
	if len(a.Parameters) != len(b.Parameters) || len(a.Fields) != len(b.Fields) {
		return false
	}
	for k, v := range a.Parameters {
		if w, ok := b.Parameters[k]; !ok || w != v {
			return false
		}
	}
	for i := range a.Fields {
		if a.Fields[i].Name != b.Fields[i].Name || !schemasEqual(a.Fields[i].Schema, b.Fields[i].Schema) {
			return false
		}
	}
	return schemasEqual(a.Items, b.Items) && schemasEqual(a.Keys, b.Keys) &&
		schemasEqual(a.Values, b.Values) && valuesEqual(a.Default, b.Default)
}

// valuesEqual compares Connect values as Objects.deepEquals does.
func valuesEqual(a, b any) bool {
	switch x := a.(type) {
	case *big.Rat:
		y, ok := b.(*big.Rat)
		return ok && (x == y || x != nil && y != nil && x.Cmp(y) == 0)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case *connectors.StructValue:
		y, ok := b.(*connectors.StructValue)
		if !ok || (x == nil) != (y == nil) {
			return false
		}
		if x == y {
			return true
		}
		if !schemasEqual(x.Schema, y.Schema) || len(x.Values) != len(y.Values) {
			return false
		}
		for i := range x.Values {
			if !valuesEqual(x.Values[i], y.Values[i]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !valuesEqual(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// schemaCache holds the schemas a transform derived, per input schema, as
// Connect's LRUCache(16): a stream of records of one
// schema derives it once and shares the result. An input schema is found
// by pointer first, then by ConnectSchema.equals, so a converter that
// builds a new *Schema per record still hits.
type schemaCache struct {
	entries []schemaCacheEntry // most recently used last
}

type schemaCacheEntry struct{ in, out *connectors.Schema }

const schemaCacheSize = 16

// get and put need no lock: a transform is used from one goroutine
// (connectors.Transform).
func (c *schemaCache) get(in *connectors.Schema) *connectors.Schema {
	for i := len(c.entries) - 1; i >= 0; i-- {
		if c.entries[i].in == in {
			return c.touch(i)
		}
	}
	for i := len(c.entries) - 1; i >= 0; i-- {
		if schemasEqual(c.entries[i].in, in) {
			return c.touch(i)
		}
	}
	return nil
}

func (c *schemaCache) touch(i int) *connectors.Schema {
	e := c.entries[i]
	// Move it last, in place: a stream of one schema hits the last entry
	// and moves nothing.
	copy(c.entries[i:], c.entries[i+1:])
	c.entries[len(c.entries)-1] = e
	return e.out
}

func (c *schemaCache) put(in, out *connectors.Schema) {
	if len(c.entries) >= schemaCacheSize {
		c.entries = append(c.entries[:0:0], c.entries[1:]...)
	}
	c.entries = append(c.entries, schemaCacheEntry{in, out})
}

// Config values as Connect's ConfigDef parses them: strings are trimmed
// (String.trim: every char up to ' '), lists split on commas with the
// whitespace around them, keeping empty elements.

func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// configString is a STRING key's value and whether it was set (Connect's
// null default when not).
func configString(props map[string]string, key string) (string, bool) {
	v, ok := props[key]
	if !ok {
		return "", false
	}
	return javaTrim(v), true
}

// javaList splits a LIST value as ConfigDef.parseType does.
func javaList(v string) []string {
	t := javaTrim(v)
	if t == "" {
		return nil
	}
	parts := strings.Split(t, ",")
	for i, p := range parts {
		parts[i] = strings.Trim(p, " \t\n\x0b\f\r")
	}
	return parts
}

// javaListString prints a list as Java's List.toString, for messages.
func javaListString(l []string) string { return "[" + strings.Join(l, ", ") + "]" }

// configBool is a BOOLEAN key's value, def when not set; the key's
// validator (validBool) has refused anything else.
func configBool(props map[string]string, key string, def bool) bool {
	v, ok := props[key]
	if !ok {
		return def
	}
	return strings.EqualFold(javaTrim(v), "true")
}

// validBool refuses what Connect's BOOLEAN parsing refuses, the empty
// string included.
func validBool(v string) error {
	switch strings.ToLower(javaTrim(v)) {
	case "true", "false":
		return nil
	}
	return fmt.Errorf("Expected value to be either true or false")
}

// keyError is a configure error Connect attributes to a key
// (ConfigException(name, value, message)).
func keyError(key, value, msg string) error {
	ce := &connectors.ConfigError{}
	ce.Add(key, fmt.Sprintf("Invalid value %s for configuration %s: %s", value, key, msg))
	return ce
}

// replaceNullDoc is the doc Connect gives replace.null.with.default.
const replaceNullDoc = "Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used."

// replaceNullKey defines replace.null.with.default as Connect's transforms do.
func replaceNullKey() connectors.ConfigKey {
	return connectors.ConfigKey{Name: "replace.null.with.default", Type: connectors.TypeBoolean, Default: "true",
		Importance: connectors.Medium, Doc: replaceNullDoc, Validate: validBool}
}
