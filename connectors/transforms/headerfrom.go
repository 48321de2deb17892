package transforms

import (
	"fmt"
	"maps"

	"github.com/sluice-io/sluice/connectors"
)

// HeaderFrom$Key and HeaderFrom$Value (org.apache.kafka.connect.transforms.HeaderFrom)
// move or copy fields of the record's key or value into headers: fields[i]
// becomes the header headers[i], with the field's schema (none for a
// schemaless map). move also removes the fields, building a new schema
// (the old one's name, version, doc and parameters, required, without
// them); copy keeps the key or value as it is. replace.null.with.default
// (default true) puts a null field's default in its header and in the
// moved struct, as Connect's Struct.get does; false keeps the null.
var _ = addKeyValue("HeaderFrom", func(p part) connectors.Transform { return &headerFrom{part: p} })

const (
	headerFromFields    = "fields"
	headerFromHeaders   = "headers"
	headerFromOperation = "operation"
	headerFromReplace   = "replace.null.with.default"
	headerFromMove      = "move"
	headerFromCopy      = "copy"
)

type headerFrom struct {
	part        part
	fields      []string
	headers     []string
	operation   string // move or copy
	replaceNull bool
	// movedSchemas caches the schemas move makes, per input schema.
	movedSchemas map[*connectors.Schema]*connectors.Schema
}

// movedSchemasCap is how many schemas HeaderFrom caches, as Connect's.
const movedSchemasCap = 16

func (t *headerFrom) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: headerFromFields, Type: connectors.TypeList, Required: true, Importance: connectors.High,
			Doc: "Field names in the record whose values are to be copied or moved to headers.", Validate: validateNonEmptyList}).
		Define(connectors.ConfigKey{Name: headerFromHeaders, Type: connectors.TypeList, Required: true, Importance: connectors.High,
			Doc: "Header names, in the same order as the field names listed in the fields configuration property.", Validate: validateNonEmptyList}).
		Define(connectors.ConfigKey{Name: headerFromOperation, Type: connectors.TypeString, Required: true, Importance: connectors.High,
			Doc:      "Either move if the fields are to be moved to the headers (removed from the key/value), or copy if the fields are to be copied to the headers (retained in the key/value).",
			Validate: validateStringIn(headerFromMove, headerFromCopy), Recommended: []string{headerFromMove, headerFromCopy}}).
		Define(connectors.ConfigKey{Name: headerFromReplace, Type: connectors.TypeBoolean, Default: "true", Importance: connectors.Medium,
			Doc:      "Whether to replace fields that have a default value and that are null to the default value. When set to true, the default value is used, otherwise null is used.",
			Validate: validBool})
}

func (t *headerFrom) Configure(props map[string]string) error {
	t.fields = javaList(props[headerFromFields])
	t.headers = javaList(props[headerFromHeaders])
	if len(t.fields) != len(t.headers) {
		ce := &connectors.ConfigError{}
		ce.Add(headerFromHeaders, fmt.Sprintf("'%s' config must have the same number of elements as '%s' config.", headerFromFields, headerFromHeaders))
		return ce
	}
	t.operation = javaTrim(props[headerFromOperation])
	t.replaceNull = configBool(props, headerFromReplace, true)
	t.movedSchemas = map[*connectors.Schema]*connectors.Schema{}
	return nil
}

func (t *headerFrom) move() bool { return t.operation == headerFromMove }

// purpose names the operation in Connect's requirement errors.
func (t *headerFrom) purpose() string { return "header " + t.operation }

func (t *headerFrom) Apply(r *connectors.Record) (*connectors.Record, error) {
	if s := t.part.schema(r); s != nil {
		return t.applyWithSchema(r, s)
	}
	return t.applySchemaless(r)
}

func (t *headerFrom) applySchemaless(r *connectors.Record) (*connectors.Record, error) {
	value, err := requireMap(t.part.value(r), t.purpose())
	if err != nil {
		return nil, err
	}
	updated := make(map[string]any, len(value))
	for k, v := range value {
		updated[k] = v
	}
	headers := copyHeaders(r.Headers, len(t.fields))
	for i, f := range t.fields {
		if t.move() {
			delete(updated, f)
		}
		headers = append(headers, connectors.Header{Key: t.headers[i], Value: value[f]})
	}
	return withHeaders(t.part.with(r, nil, updated), headers), nil
}

func (t *headerFrom) applyWithSchema(r *connectors.Record, schema *connectors.Schema) (*connectors.Record, error) {
	v := t.part.value(r)
	if isJavaNull(v) {
		v = nil // a nil *StructValue is Connect's null
	}
	value, err := requireStruct(v, t.purpose())
	if err != nil {
		return nil, err
	}
	updatedSchema, updated := schema, value
	if t.move() {
		updatedSchema = t.movedSchema(schema)
		updated = connectors.NewStruct(updatedSchema)
		for i, f := range updatedSchema.Fields {
			fv, err := t.fieldValue(value, f.Name)
			if err != nil {
				return nil, err
			}
			if err := checkFieldValue(f.Name, f.Schema, fv); err != nil {
				return nil, err
			}
			updated.Values[i] = fv
		}
	}
	headers := copyHeaders(r.Headers, len(t.fields))
	for i, f := range t.fields {
		var fv any
		if j, _ := value.Schema.Field(f); j >= 0 {
			fv, _ = t.fieldValue(value, f)
		}
		_, fs := schema.Field(f)
		if fs == nil {
			// Connect fails here with a NullPointerException.
			return nil, fmt.Errorf("Cannot %s field %q to a header: the %s's schema has no such field", t.operation, f, t.partName())
		}
		if err := checkHeaderValue(fs, fv); err != nil {
			return nil, err
		}
		headers = append(headers, connectors.Header{Key: t.headers[i], Schema: fs, Value: fv})
	}
	return withHeaders(t.part.with(r, updatedSchema, updated), headers), nil
}

func (t *headerFrom) partName() string {
	if _, ok := t.part.(keyPart); ok {
		return "key"
	}
	return "value"
}

// fieldValue is Connect's Struct.get(name) (its default in place of a
// null, when replace.null.with.default) or getWithoutDefault(name).
func (t *headerFrom) fieldValue(s *connectors.StructValue, name string) (any, error) {
	i, fs := s.Schema.Field(name)
	if i < 0 {
		return nil, fmt.Errorf("%s is not a valid field name", name)
	}
	if i >= len(s.Values) {
		return nil, fmt.Errorf("struct has %d values for %d fields", len(s.Values), len(s.Schema.Fields))
	}
	v := s.Values[i]
	if t.replaceNull && isJavaNull(v) && fs.Default != nil {
		return fs.Default, nil
	}
	return v, nil
}

// movedSchema is schema without the moved fields, cached per schema as
// Connect caches it.
func (t *headerFrom) movedSchema(schema *connectors.Schema) *connectors.Schema {
	if s, ok := t.movedSchemas[schema]; ok {
		return s
	}
	moved := &connectors.Schema{Type: connectors.Struct, Name: schema.Name, Version: schema.Version,
		Doc: schema.Doc, Parameters: maps.Clone(schema.Parameters)}
	drop := map[string]bool{}
	for _, f := range t.fields {
		drop[f] = true
	}
	for _, f := range schema.Fields {
		if !drop[f.Name] {
			moved.Fields = append(moved.Fields, f)
		}
	}
	if len(t.movedSchemas) >= movedSchemasCap {
		clear(t.movedSchemas)
	}
	t.movedSchemas[schema] = moved
	return moved
}

func (t *headerFrom) Close() error { return nil }
