package transforms

import (
	"github.com/sluice-io/sluice/connectors"
)

// HoistField is Connect's HoistField$Key and HoistField$Value: the key or
// value is wrapped as the one field of a new struct (with a schema: the
// field has the old schema) or map (without). A null is wrapped too; with
// a schema it must then be optional, as Connect's Struct requires.
var _ = addKeyValue("HoistField", func(p part) connectors.Transform { return &hoistField{part: p} })

const hoistFieldConfig = "field"

type hoistField struct {
	part  part
	field string
	cache schemaCache
}

func (h *hoistField) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().Define(connectors.ConfigKey{
		Name: hoistFieldConfig, Type: connectors.TypeString, Required: true, Importance: connectors.Medium,
		Doc: "Field name for the single field that will be created in the resulting Struct or Map.",
	})
}

func (h *hoistField) Configure(props map[string]string) error {
	cfg, err := h.Config().Parse(props)
	if err != nil {
		return err
	}
	h.field = javaTrim(cfg.String(hoistFieldConfig))
	h.cache = schemaCache{}
	return nil
}

func (h *hoistField) Close() error { return nil }

func (h *hoistField) Apply(r *connectors.Record) (*connectors.Record, error) {
	s, v := h.part.schema(r), h.part.value(r)
	if s == nil {
		return h.part.with(r, nil, map[string]any{h.field: v}), nil
	}
	updated := h.cache.get(s)
	if updated == nil {
		updated = &connectors.Schema{Type: connectors.Struct}
		// An empty field name is refused here, when a schema is first
		// seen, as Connect's SchemaBuilder refuses it.
		if err := addField(updated, h.field, s); err != nil {
			return nil, err
		}
		h.cache.put(s, updated)
	}
	out := connectors.NewStruct(updated)
	if err := structPut(out, 0, v); err != nil {
		return nil, err
	}
	return h.part.with(r, updated, out), nil
}
