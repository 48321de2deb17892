package transforms

import (
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// Cast is Connect's Cast$Key and Cast$Value: it casts fields of a struct
// or map, or the whole key or value, to a primitive type. Casting from a
// logical type (Date, Time, Timestamp) to a number casts its encoded
// value (days, millis); to a string it formats it as Connect's Values
// does. A Decimal casts as Java's BigDecimal does (truncating, wrapping
// to the integer width). Bytes cast only to a base64 string.
var _ = addKeyValue("Cast", func(p part) connectors.Transform { return &cast{part: p} })

const (
	castSpecConfig = "spec"
	castPurpose    = "cast types"
)

// castInputTypes and castOutputTypes are Connect's
// SUPPORTED_CAST_INPUT_TYPES and SUPPORTED_CAST_OUTPUT_TYPES, in the order
// their EnumSets print.
var (
	castOutputTypes = []connectors.SchemaType{
		connectors.Int8, connectors.Int16, connectors.Int32, connectors.Int64,
		connectors.Float32, connectors.Float64, connectors.Boolean, connectors.String,
	}
	castInputTypes = append(append([]connectors.SchemaType(nil), castOutputTypes...), connectors.Bytes)
)

// allSchemaTypes are Connect's Schema.Type constants, which a spec may
// name (in any case) even where Cast then refuses them.
var allSchemaTypes = append(append([]connectors.SchemaType(nil), castInputTypes...),
	connectors.Array, connectors.Map, connectors.Struct)

type cast struct {
	part part
	// casts maps field names to their target type; whole is the type of a
	// whole-value cast ("" when the spec casts fields).
	casts       map[string]connectors.SchemaType
	whole       connectors.SchemaType
	replaceNull bool
	cache       schemaCache
}

func (c *cast) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{
			Name: castSpecConfig, Type: connectors.TypeList, Required: true, Importance: connectors.High,
			Doc: "List of fields and the type to cast them to of the form field1:type,field2:type to cast fields of " +
				"Maps or Structs. A single type to cast the entire value. Valid types are int8, int16, int32, " +
				"int64, float32, float64, boolean, and string. Note that binary fields can only be cast to string.",
			Validate: func(v string) error {
				l := javaList(v)
				if len(l) == 0 {
					return fmt.Errorf("Must specify at least one field to cast.")
				}
				_, _, err := parseCastSpec(l)
				return err
			},
		}).
		Define(replaceNullKey())
}

func (c *cast) Configure(props map[string]string) error {
	cfg, err := c.Config().Parse(props)
	if err != nil {
		return err
	}
	c.casts, c.whole, err = parseCastSpec(javaList(cfg.String(castSpecConfig)))
	if err != nil {
		return err
	}
	c.replaceNull = cfg.Bool(replaceNullConfig)
	c.cache = schemaCache{}
	return nil
}

func (c *cast) Close() error { return nil }

// parseCastSpec is Cast.parseFieldTypes: field:type pairs, or a single
// type for the whole value, which must then be the only entry. Its
// messages are Connect's, including the one naming ReplaceField's
// "renames" key for a pair with two colons.
func parseCastSpec(mappings []string) (map[string]connectors.SchemaType, connectors.SchemaType, error) {
	casts := map[string]connectors.SchemaType{}
	var whole connectors.SchemaType
	for _, m := range mappings {
		parts := javaSplitColon(m)
		switch {
		case len(parts) > 2:
			return nil, "", fmt.Errorf("Invalid value %s for configuration renames: Invalid rename mapping: %s", javaListString(mappings), m)
		case len(parts) == 0:
			// Java's split drops trailing empty strings: "::" has no parts,
			// and Cast then reads parts[1].
			return nil, "", fmt.Errorf("Index 1 out of bounds for length 0")
		}
		name := parts[0]
		if len(parts) == 2 {
			name = parts[1]
		}
		t, err := castOutputType(javaTrim(name))
		if err != nil {
			return nil, "", err
		}
		if len(parts) == 1 {
			whole = t
		} else {
			casts[javaTrim(parts[0])] = t
		}
	}
	if whole != "" && len(mappings) > 1 {
		return nil, "", fmt.Errorf("Cast transformations that specify a type to cast the entire value to " +
			"may only specify a single cast in their spec")
	}
	return casts, whole, nil
}

// castOutputType reads a type name of a spec as Schema.Type.valueOf of its
// upper case, and checks Cast can cast to it.
func castOutputType(name string) (connectors.SchemaType, error) {
	upper := strings.ToUpper(name)
	for _, t := range allSchemaTypes {
		if typeName(t) == upper {
			if !hasType(castOutputTypes, t) {
				return "", fmt.Errorf("Cast transformation does not support casting to %s; supported types are %s",
					typeName(t), typeList(castOutputTypes))
			}
			return t, nil
		}
	}
	// Cast passes its message and the valueOf exception to ConfigException's
	// (name, value) constructor, so Connect's message reads so.
	return "", fmt.Errorf("Invalid value java.lang.IllegalArgumentException: No enum constant "+
		"org.apache.kafka.connect.data.Schema.Type.%s for configuration Invalid type found in casting spec: %s", upper, name)
}

// javaSplitColon is Java's s.split(":"): trailing empty strings removed,
// except that a string without a colon is its only part.
func javaSplitColon(s string) []string {
	parts := strings.Split(s, ":")
	if len(parts) == 1 {
		return parts
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

func hasType(ts []connectors.SchemaType, t connectors.SchemaType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// typeList prints types as Java prints an EnumSet: [INT8, INT16].
func typeList(ts []connectors.SchemaType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = typeName(t)
	}
	return javaListString(names)
}

func (c *cast) Apply(r *connectors.Record) (*connectors.Record, error) {
	v := c.part.value(r)
	if v == nil {
		return r, nil
	}
	s := c.part.schema(r)
	if s == nil {
		return c.applySchemaless(r, v)
	}
	return c.applyWithSchema(r, s, v)
}

func (c *cast) applySchemaless(r *connectors.Record, v any) (*connectors.Record, error) {
	if c.whole != "" {
		out, err := castValue(nil, v, c.whole)
		if err != nil {
			return nil, err
		}
		return c.part.with(r, nil, out), nil
	}
	m, err := requireMap(v, castPurpose)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(m)+len(c.casts))
	for k, x := range m {
		out[k] = x
	}
	// As in Connect, a field of the spec the map lacks is added as null.
	for f, t := range c.casts {
		if out[f], err = castValue(nil, m[f], t); err != nil {
			return nil, err
		}
	}
	return c.part.with(r, nil, out), nil
}

func (c *cast) applyWithSchema(r *connectors.Record, s *connectors.Schema, v any) (*connectors.Record, error) {
	updated, err := c.schemaFor(s)
	if err != nil {
		return nil, err
	}
	if c.whole != "" {
		out, err := castValue(s, v, c.whole)
		if err != nil {
			return nil, err
		}
		return c.part.with(r, updated, out), nil
	}
	sv, err := requireStruct(v, castPurpose)
	if err != nil {
		return nil, err
	}
	out := connectors.NewStruct(updated)
	for i, f := range sv.Schema.Fields {
		val := structGet(sv, i)
		if !c.replaceNull {
			val = sv.Values[i]
		}
		if t, ok := c.casts[f.Name]; ok {
			if val, err = castValue(f.Schema, val, t); err != nil {
				return nil, err
			}
		}
		j, _ := updated.Field(f.Name)
		if j < 0 {
			return nil, fmt.Errorf("field cannot be null.")
		}
		if err := structPut(out, j, val); err != nil {
			return nil, err
		}
	}
	return c.part.with(r, updated, out), nil
}

// schemaFor is Cast.getOrBuildSchema: the schema of s's values once cast,
// cached per input schema. A whole-value cast keeps s's name, version, doc
// and parameters (a Decimal cast to string keeps the Decimal name, as in
// Connect); a field cast gives cast fields a plain schema of the target
// type, keeping their optionality and casting their defaults.
func (c *cast) schemaFor(s *connectors.Schema) (*connectors.Schema, error) {
	if u := c.cache.get(s); u != nil {
		return u, nil
	}
	var u *connectors.Schema
	if c.whole != "" {
		u = copySchemaBasics(s, c.whole)
	} else {
		if s.Type != connectors.Struct {
			return nil, fmt.Errorf("Cannot list fields on non-struct type")
		}
		u = copySchemaBasics(s, connectors.Struct)
		for _, f := range s.Fields {
			fs := f.Schema
			if t, ok := c.casts[f.Name]; ok {
				fs = &connectors.Schema{Type: t, Optional: f.Schema.Optional}
				if f.Schema.Default != nil {
					d, err := castValue(f.Schema, f.Schema.Default, t)
					if err != nil {
						return nil, err
					}
					if err := setDefault(fs, d); err != nil {
						return nil, err
					}
				}
			}
			if err := addField(u, f.Name, fs); err != nil {
				return nil, err
			}
		}
	}
	u.Optional = s.Optional
	if s.Default != nil {
		d, err := castValue(s, s.Default, u.Type)
		if err != nil {
			return nil, err
		}
		if err := setDefault(u, d); err != nil {
			return nil, err
		}
	}
	c.cache.put(s, u)
	return u, nil
}
