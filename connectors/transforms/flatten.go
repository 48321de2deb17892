package transforms

import (
	"fmt"
	"sort"

	"github.com/sluice-io/sluice/connectors"
)

// Flatten is Connect's Flatten$Key and Flatten$Value: nested structs (with
// a schema) or maps (without) become one level, each field named by the
// names on its path joined with the delimiter. Arrays are left as they
// are; a map inside a struct is refused, as in Connect. A flattened field
// is optional when any struct on its path is, and takes its default from
// the closest struct on its path that has one.
var _ = addKeyValue("Flatten", func(p part) connectors.Transform { return &flatten{part: p} })

const (
	flattenDelimiterConfig = "delimiter"
	flattenPurpose         = "flattening"
)

type flatten struct {
	part      part
	delimiter string
	cache     schemaCache
}

func (f *flatten) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().Define(connectors.ConfigKey{
		Name: flattenDelimiterConfig, Type: connectors.TypeString, Default: ".", Importance: connectors.Medium,
		Doc: "Delimiter to insert between field names from the input record when generating field names for the " +
			"output record",
	})
}

func (f *flatten) Configure(props map[string]string) error {
	cfg, err := f.Config().Parse(props)
	if err != nil {
		return err
	}
	// Connect trims STRING values: a delimiter of spaces is empty.
	f.delimiter = javaTrim(cfg.String(flattenDelimiterConfig))
	f.cache = schemaCache{}
	return nil
}

func (f *flatten) Close() error { return nil }

func (f *flatten) Apply(r *connectors.Record) (*connectors.Record, error) {
	v := f.part.value(r)
	if v == nil {
		return r, nil
	}
	s := f.part.schema(r)
	if s == nil {
		m, err := requireMap(v, flattenPurpose)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		if err := f.flattenMap(m, "", out); err != nil {
			return nil, err
		}
		return f.part.with(r, nil, out), nil
	}
	sv, err := requireStruct(v, flattenPurpose)
	if err != nil {
		return nil, err
	}
	updated, err := f.schemaFor(s)
	if err != nil {
		return nil, err
	}
	out := connectors.NewStruct(updated)
	if err := f.flattenStruct(sv, "", out); err != nil {
		return nil, err
	}
	return f.part.with(r, updated, out), nil
}

func (f *flatten) fieldName(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + f.delimiter + name
}

// flattenMap copies m's entries into out under their flattened names,
// descending into maps. Keys are visited in sorted order, so that when
// two entries flatten to one name the same one wins every time (Connect
// visits them in its HashMap's order).
func (f *flatten) flattenMap(m map[string]any, prefix string, out map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name, v := f.fieldName(prefix, k), m[k]
		if v == nil {
			out[name] = nil
			continue
		}
		t, ok := schemaTypeOf(v)
		if !ok {
			return fmt.Errorf("Flatten transformation was passed a value of type %s which is not supported by Connect's data API", javaClass(v))
		}
		switch t {
		case connectors.Map:
			if err := f.flattenMap(v.(map[string]any), name, out); err != nil {
				return err
			}
		case connectors.Struct:
			return fmt.Errorf("Flatten transformation does not support %s for record without schemas (for field %s).", javaClass(v), name)
		default:
			out[name] = v
		}
	}
	return nil
}

// schemaFor is the flattened schema of s, cached per input schema. It
// keeps s's name, version, doc and parameters, but not its optionality or
// default, as in Connect.
func (f *flatten) schemaFor(s *connectors.Schema) (*connectors.Schema, error) {
	if u := f.cache.get(s); u != nil {
		return u, nil
	}
	if s.Type != connectors.Struct {
		return nil, fmt.Errorf("Cannot list fields on non-struct type")
	}
	u := copySchemaBasics(s, connectors.Struct)
	def, _ := s.Default.(*connectors.StructValue)
	if err := f.flattenSchema(s, "", u, s.Optional, def); err != nil {
		return nil, err
	}
	f.cache.put(s, u)
	return u, nil
}

// flattenSchema adds s's fields to out under their flattened names.
// optional is whether a struct on the path is optional; parentDefault is
// the default the closest struct on the path with one gives s.
func (f *flatten) flattenSchema(s *connectors.Schema, prefix string, out *connectors.Schema, optional bool, parentDefault *connectors.StructValue) error {
	for i, fld := range s.Fields {
		name := f.fieldName(prefix, fld.Name)
		fieldOptional := optional || fld.Schema.Optional
		var def any
		if fld.Schema.Default != nil {
			def = fld.Schema.Default
		} else if parentDefault != nil {
			def = structGet(parentDefault, i)
		}
		switch fld.Schema.Type {
		case connectors.Struct:
			d, _ := def.(*connectors.StructValue)
			if err := f.flattenSchema(fld.Schema, name, out, fieldOptional, d); err != nil {
				return err
			}
		case connectors.Map:
			return fmt.Errorf("Flatten transformation does not support MAP for record with schemas (for field %s).", name)
		default:
			fs := copySchemaBasicsOf(fld.Schema)
			fs.Optional = fieldOptional
			if def != nil {
				if err := setDefault(fs, def); err != nil {
					return err
				}
			}
			if err := addField(out, name, fs); err != nil {
				return err
			}
		}
	}
	return nil
}

// flattenStruct puts sv's values into out under their flattened names,
// null fields reading as their defaults. A null nested struct leaves its
// fields null (the flattened schema gives them its default).
func (f *flatten) flattenStruct(sv *connectors.StructValue, prefix string, out *connectors.StructValue) error {
	for i, fld := range sv.Schema.Fields {
		name := f.fieldName(prefix, fld.Name)
		switch fld.Schema.Type {
		case connectors.Struct:
			nested := sv.Values[i]
			if nested == nil {
				continue
			}
			n, ok := nested.(*connectors.StructValue)
			if !ok {
				return fmt.Errorf("%s cannot be cast to class org.apache.kafka.connect.data.Struct", javaClass(nested))
			}
			if err := f.flattenStruct(n, name, out); err != nil {
				return err
			}
		case connectors.Map:
			return fmt.Errorf("Flatten transformation does not support MAP for record with schemas (for field %s).", name)
		default:
			if err := structPutName(out, name, structGet(sv, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
