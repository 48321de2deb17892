package transforms

import (
	"fmt"
	"strings"
	"unicode/utf16"

	"github.com/sluice-io/sluice/connectors"
)

// ExtractField is Connect's ExtractField$Key and ExtractField$Value: the
// key or value becomes one of its fields, from a struct (its schema
// becoming the field's) or a map. With field.syntax.version V2 (KIP-821)
// the field is a dotted path into nested structs or maps, a step with dots
// written in backticks. A null passes through; with a schema, a field the
// schema lacks is an error even then.
var _ = addKeyValue("ExtractField", func(p part) connectors.Transform { return &extractField{part: p} })

const (
	extractFieldConfig    = "field"
	extractFieldPurpose   = "field extraction"
	fieldSyntaxConfig     = "field.syntax.version"
	fieldSyntaxDefault    = "V1"
	nestedAccessPurpose   = "nested field access"
	fieldSyntaxVersionDoc = "Defines the version of the syntax to access fields. " +
		"If set to `V1`, then the field paths are limited to access the elements at the root level of the struct or map. " +
		"If set to `V2`, the syntax will support accessing nested elements. " +
		"To access nested elements, dotted notation is used. " +
		"If dots are already included in the field name, " +
		"then backtick pairs can be used to wrap field names containing dots. " +
		"E.g. to access the subfield `baz` from a field named \"foo.bar\" in a struct/map " +
		"the following format can be used to access its elements: \"`foo.bar`.baz\"."
)

type extractField struct {
	part        part
	path        fieldPath
	original    string
	replaceNull bool
}

func (e *extractField) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{
			Name: extractFieldConfig, Type: connectors.TypeString, Required: true, Importance: connectors.Medium,
			Doc: "Field name to extract.",
		}).
		Define(replaceNullKey()).
		Define(fieldSyntaxKey())
}

// fieldSyntaxKey is FieldSyntaxVersion.appendConfigTo's key.
func fieldSyntaxKey() connectors.ConfigKey {
	return connectors.ConfigKey{
		Name: fieldSyntaxConfig, Type: connectors.TypeString, Default: fieldSyntaxDefault, Importance: connectors.High,
		Doc: fieldSyntaxVersionDoc, Recommended: []string{"V1", "V2"},
		Validate: func(v string) error {
			switch strings.ToUpper(javaTrim(v)) {
			case "V1", "V2":
				return nil
			}
			return fmt.Errorf("String must be one of (case insensitive): V1, V2")
		},
	}
}

func (e *extractField) Configure(props map[string]string) error {
	cfg, err := e.Config().Parse(props)
	if err != nil {
		return err
	}
	e.original = javaTrim(cfg.String(extractFieldConfig))
	v2 := strings.ToUpper(javaTrim(cfg.String(fieldSyntaxConfig))) == "V2"
	if e.path, err = newFieldPath(e.original, v2); err != nil {
		return err
	}
	e.replaceNull = cfg.Bool(replaceNullConfig)
	return nil
}

func (e *extractField) Close() error { return nil }

func (e *extractField) Apply(r *connectors.Record) (*connectors.Record, error) {
	s, v := e.part.schema(r), e.part.value(r)
	if s == nil {
		if v == nil {
			return e.part.with(r, nil, nil), nil
		}
		m, err := requireMap(v, extractFieldPurpose)
		if err != nil {
			return nil, err
		}
		out, err := e.path.valueFromMap(m)
		if err != nil {
			return nil, err
		}
		return e.part.with(r, nil, out), nil
	}
	var sv *connectors.StructValue
	if v != nil {
		var err error
		if sv, err = requireStruct(v, extractFieldPurpose); err != nil {
			return nil, err
		}
	}
	fs, err := e.path.fieldFrom(s)
	if err != nil {
		return nil, err
	}
	if fs == nil {
		return nil, fmt.Errorf("Unknown field: %s", e.original)
	}
	var out any
	if sv != nil {
		if out, err = e.path.valueFromStruct(sv, e.replaceNull); err != nil {
			return nil, err
		}
	}
	return e.part.with(r, fs, out), nil
}

// fieldPath is Connect's SingleFieldPath (KIP-821): the steps from the
// root of a struct or map to one field. Under V1 the path is one step,
// dots and all; under V2 dots separate steps.
type fieldPath struct {
	steps []string
}

// newFieldPath parses path as V2 when v2, else as V1.
func newFieldPath(path string, v2 bool) (fieldPath, error) {
	if !v2 {
		return fieldPath{steps: []string{path}}, nil
	}
	steps, err := parseFieldPathV2(path)
	return fieldPath{steps: steps}, err
}

// parseFieldPathV2 is SingleFieldPath.buildFieldPathV2: steps separated by
// dots; a step starting with a backtick runs to the next backtick that
// ends the path or is followed by a dot, and a backslash before such a
// backtick makes it part of the step. Backticks elsewhere are kept as
// they are; an empty path has no steps.
func parseFieldPathV2(path string) ([]string, error) {
	var steps []string
	idx := 0
	for idx < len(path) {
		if path[idx] != '`' {
			if dot := strings.IndexByte(path[idx:], '.'); dot >= 0 {
				steps = append(steps, path[idx:idx+dot])
				idx += dot + 1
			} else {
				steps = append(steps, path[idx:])
				idx = len(path)
			}
			continue
		}
		step, next, err := backtickStep(path, idx)
		if err != nil {
			return nil, err
		}
		steps = append(steps, step)
		idx = next
	}
	if strings.HasSuffix(path, ".") {
		steps = append(steps, "")
	}
	return steps, nil
}

// backtickStep reads the step whose opening backtick is at open, and
// returns it with the index after it (and after its dot).
func backtickStep(path string, open int) (string, int, error) {
	var field strings.Builder
	idx := open + 1
	start := idx
	for {
		i := strings.IndexByte(path[idx:], '`')
		if i < 0 {
			return "", 0, incompleteBacktick(path, open)
		}
		idx += i
		escaped := path[idx-1] == '\\'
		if idx >= len(path)-1 {
			if escaped {
				return "", 0, incompleteBacktick(path, open)
			}
			field.WriteString(path[start:idx])
			return field.String(), idx + 1, nil
		}
		if path[idx+1] != '.' {
			idx++
			continue
		}
		if escaped {
			field.WriteString(path[start : idx-1])
			field.WriteByte('`')
			idx++
			start = idx
			continue
		}
		field.WriteString(path[start:idx])
		return field.String(), idx + 2, nil
	}
}

// incompleteBacktick is Connect's error for a backtick never closed; the
// position counts UTF-16 units, as Java's string indices do.
func incompleteBacktick(path string, open int) error {
	pos := len(utf16.Encode([]rune(path[:open])))
	return fmt.Errorf("Incomplete backtick pair in path: [%s], consider adding a backslash before backtick at position %d to escape it", path, pos)
}

// parents is every step but the last: Java's subList(0, size-1), which
// fails on a path with no steps (V2's empty path).
func (p fieldPath) parents() ([]string, error) {
	if len(p.steps) == 0 {
		return nil, fmt.Errorf("fromIndex(0) > toIndex(-1)")
	}
	return p.steps[:len(p.steps)-1], nil
}

func (p fieldPath) last() string { return p.steps[len(p.steps)-1] }

// fieldFrom is SingleFieldPath.fieldFrom: the schema of the field at p
// in s, nil when a step is missing. A step into a schema that is not a
// struct is Connect's error.
func (p fieldPath) fieldFrom(s *connectors.Schema) (*connectors.Schema, error) {
	if _, err := p.parents(); err != nil {
		return nil, err
	}
	cur := s
	for _, step := range p.steps {
		if cur.Type != connectors.Struct {
			return nil, fmt.Errorf("Cannot look up fields on non-struct type")
		}
		if _, cur = cur.Field(step); cur == nil {
			return nil, nil
		}
	}
	return cur, nil
}

// valueFromStruct is SingleFieldPath.valueFrom(Struct, withDefault): the
// value at p, nil when a step is missing or null. Structs on the way read
// null fields as their defaults; the last field does when withDefault.
func (p fieldPath) valueFromStruct(sv *connectors.StructValue, withDefault bool) (any, error) {
	parents, err := p.parents()
	if err != nil {
		return nil, err
	}
	cur := sv
	for _, step := range parents {
		i, _ := cur.Schema.Field(step)
		if i < 0 {
			return nil, nil
		}
		sub := structGet(cur, i)
		if sub == nil {
			return nil, nil
		}
		if cur, err = requireStruct(sub, nestedAccessPurpose); err != nil {
			return nil, err
		}
	}
	i, _ := cur.Schema.Field(p.last())
	if i < 0 {
		return nil, nil
	}
	if withDefault {
		return structGet(cur, i), nil
	}
	return cur.Values[i], nil
}

// valueFromMap is SingleFieldPath.valueFrom(Map): the value at p, nil when
// a step is missing or null; a step into a value that is not a map is
// Connect's error.
func (p fieldPath) valueFromMap(m map[string]any) (any, error) {
	parents, err := p.parents()
	if err != nil {
		return nil, err
	}
	cur := m
	for _, step := range parents {
		sub := cur[step]
		if sub == nil {
			return nil, nil
		}
		if cur, err = requireMap(sub, nestedAccessPurpose); err != nil {
			return nil, err
		}
	}
	return cur[p.last()], nil
}
