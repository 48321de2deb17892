package transforms

import (
	"fmt"

	"github.com/sluice-io/sluice/connectors"
)

// ValueToKey is Connect's ValueToKey: the key becomes a struct (with a
// value schema) or map (without) of some of the value's fields. Without a
// schema a missing field is null in the key; with one it is an error. A
// null value is refused, as in Connect.
var _ = addTransform(connectors.TransformPlugin{
	Class: pkg + "ValueToKey",
	New:   func() connectors.Transform { return &valueToKey{} },
})

const (
	valueToKeyFieldsConfig = "fields"
	valueToKeyPurpose      = "copying fields from value to key"
)

type valueToKey struct {
	fields      []string
	replaceNull bool
	cache       schemaCache
}

func (t *valueToKey) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{
			Name: valueToKeyFieldsConfig, Type: connectors.TypeList, Required: true, Importance: connectors.High,
			Doc: "Field names on the record value to extract as the record key.",
			// Connect's NonEmptyListValidator.
			Validate: func(v string) error {
				if len(javaList(v)) == 0 {
					return fmt.Errorf("Empty list")
				}
				return nil
			},
		}).
		Define(replaceNullKey())
}

func (t *valueToKey) Configure(props map[string]string) error {
	cfg, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.fields = javaList(cfg.String(valueToKeyFieldsConfig))
	t.replaceNull = cfg.Bool(replaceNullConfig)
	t.cache = schemaCache{}
	return nil
}

func (t *valueToKey) Close() error { return nil }

func (t *valueToKey) Apply(r *connectors.Record) (*connectors.Record, error) {
	if r.ValueSchema == nil {
		m, err := requireMap(r.Value, valueToKeyPurpose)
		if err != nil {
			return nil, err
		}
		key := make(map[string]any, len(t.fields))
		for _, f := range t.fields {
			key[f] = m[f]
		}
		out := *r
		out.KeySchema, out.Key = nil, key
		return &out, nil
	}
	sv, err := requireStruct(r.Value, valueToKeyPurpose)
	if err != nil {
		return nil, err
	}
	keySchema, err := t.keySchemaFor(sv.Schema)
	if err != nil {
		return nil, err
	}
	key := connectors.NewStruct(keySchema)
	for i, f := range t.fields {
		var v any
		if t.replaceNull {
			j, _ := sv.Schema.Field(f)
			v = structGet(sv, j)
		} else if v, err = structGetWithoutDefault(sv, f); err != nil {
			return nil, err
		}
		if err := structPut(key, i, v); err != nil {
			return nil, err
		}
	}
	out := *r
	out.KeySchema, out.Key = keySchema, key
	// As Connect, the value's schema becomes the struct's own.
	out.ValueSchema, out.Value = sv.Schema, sv
	return &out, nil
}

// keySchemaFor is the key schema for values of schema s: a struct of the
// chosen fields with their schemas, cached per value schema.
func (t *valueToKey) keySchemaFor(s *connectors.Schema) (*connectors.Schema, error) {
	if k := t.cache.get(s); k != nil {
		return k, nil
	}
	k := &connectors.Schema{Type: connectors.Struct}
	for _, f := range t.fields {
		_, fs := s.Field(f)
		if fs == nil {
			return nil, fmt.Errorf("Field does not exist: %s", f)
		}
		if err := addField(k, f, fs); err != nil {
			return nil, err
		}
	}
	t.cache.put(s, k)
	return k, nil
}
