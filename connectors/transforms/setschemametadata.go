package transforms

import (
	"fmt"
	"strconv"

	"github.com/sluice-io/sluice/connectors"
)

// SetSchemaMetadata is Connect's SetSchemaMetadata$Key and $Value: it sets
// the name, the version or both of the key's or value's schema, and
// rebuilds a struct value on the new schema (null fields with defaults
// reading as their defaults unless replace.null.with.default is false).
// As in Connect 4.1, only struct schemas can be renamed: for any other
// schema (Decimal and other logical types included) Connect's
// ConnectSchema.fields() fails, and so does this.
var _ = addKeyValue("SetSchemaMetadata", func(p part) connectors.Transform { return &setSchemaMetadata{part: p} })

const (
	schemaNameConfig    = "schema.name"
	schemaVersionConfig = "schema.version"
)

type setSchemaMetadata struct {
	part part
	// name and version are nil when not configured.
	name        *string
	version     *int
	replaceNull bool
}

func (t *setSchemaMetadata) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{
			Name: schemaNameConfig, Type: connectors.TypeString, Importance: connectors.High,
			Doc: "Schema name to set.",
		}).
		Define(connectors.ConfigKey{
			Name: schemaVersionConfig, Type: connectors.TypeInt, Importance: connectors.High,
			Doc: "Schema version to set.",
			// An empty version given explicitly is not a number, for
			// Connect as for this.
			Validate: func(v string) error {
				if javaTrim(v) == "" {
					return fmt.Errorf("Not a number of type INT")
				}
				return nil
			},
		}).
		Define(replaceNullKey())
}

func (t *setSchemaMetadata) Configure(props map[string]string) error {
	cfg, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.name, t.version = nil, nil
	if cfg.IsSet(schemaNameConfig) {
		n := javaTrim(cfg.String(schemaNameConfig))
		t.name = &n
	}
	if cfg.IsSet(schemaVersionConfig) {
		v, err := strconv.Atoi(javaTrim(cfg.String(schemaVersionConfig)))
		if err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", props[schemaVersionConfig], schemaVersionConfig)
		}
		t.version = &v
	}
	if t.name == nil && t.version == nil {
		return fmt.Errorf("Neither schema name nor version configured")
	}
	t.replaceNull = cfg.Bool(replaceNullConfig)
	return nil
}

func (t *setSchemaMetadata) Close() error { return nil }

func (t *setSchemaMetadata) Apply(r *connectors.Record) (*connectors.Record, error) {
	s, v := t.part.schema(r), t.part.value(r)
	if s == nil && v == nil {
		return r, nil
	}
	if err := requireSchema(s, "updating schema metadata"); err != nil {
		return nil, err
	}
	if s.Type != connectors.Struct {
		return nil, fmt.Errorf("Cannot list fields on non-struct type")
	}
	// The same schema but for its name and version; its fields (and their
	// schemas) are shared, as Connect shares its Field objects.
	updated := &connectors.Schema{
		Type: s.Type, Optional: s.Optional, Default: s.Default, Name: s.Name, Version: s.Version,
		Doc: s.Doc, Parameters: s.Parameters, Fields: s.Fields,
	}
	if t.name != nil {
		updated.Name = *t.name
	}
	if t.version != nil {
		updated.Version = *t.version
	}
	out, err := t.updateSchemaIn(v, updated)
	if err != nil {
		return nil, err
	}
	return t.part.with(r, updated, out), nil
}

// updateSchemaIn is SetSchemaMetadata.updateSchemaIn: a struct is rebuilt
// on the updated schema, whose fields are its schema's; any other value
// (null included) is returned as it is.
func (t *setSchemaMetadata) updateSchemaIn(v any, updated *connectors.Schema) (any, error) {
	sv, ok := v.(*connectors.StructValue)
	if !ok {
		return v, nil
	}
	out := connectors.NewStruct(updated)
	for i, f := range updated.Fields {
		// Struct.get(Field) with the updated schema's field: the value at
		// its index, or its default.
		var val any
		if i < len(sv.Values) {
			val = sv.Values[i]
		}
		if val == nil {
			val = f.Schema.Default
		}
		if !t.replaceNull {
			var err error
			if val, err = structGetWithoutDefault(sv, f.Name); err != nil {
				return nil, err
			}
		}
		if err := structPut(out, i, val); err != nil {
			return nil, err
		}
	}
	return out, nil
}
