package transforms

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// ReplaceField$Key and ReplaceField$Value: Connect's ReplaceField, which
// drops (exclude), keeps (include) and renames (renames) the fields of a
// struct or map.
//
// Apache Kafka 4.0 removed the deprecated whitelist and blacklist keys
// (KAFKA-17530); Connect 4.1 no longer defines them and, like any key a
// transform does not define, ignores them, so a config still using them
// keeps every field. Sluice refuses them instead, naming the key: a config
// carried over from an older Connect must not silently stop filtering
// (the differential test lists this difference).
var _ = addKeyValue("ReplaceField", func(p part) connectors.Transform { return &replaceField{part: p} })

const (
	replaceExclude = "exclude"
	replaceInclude = "include"
	replaceRenames = "renames"
	replacePurpose = "field replacement"
)

func replaceFieldConfig() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: replaceExclude, Type: connectors.TypeList, Importance: connectors.Medium,
			Doc: "Fields to exclude. This takes precedence over the fields to include."}).
		Define(connectors.ConfigKey{Name: replaceInclude, Type: connectors.TypeList, Importance: connectors.Medium,
			Doc: "Fields to include. If specified, only these fields will be used."}).
		Define(connectors.ConfigKey{Name: replaceRenames, Type: connectors.TypeList, Importance: connectors.Medium,
			Doc: "Field rename mappings.", Validate: func(v string) error {
				_, err := parseRenameMappings(javaList(v))
				return err
			}}).
		Define(replaceNullKey())
}

type replaceField struct {
	part
	exclude, include       map[string]bool
	renames, reverse       map[string]string
	replaceNullWithDefault bool
	cache                  schemaCache
	// from memoizes, for the last pair of input and derived schemas, the
	// input field each derived field reads: a stream of records of one
	// schema looks the names up once.
	from struct {
		in, out *connectors.Schema
		index   []int
		// renameOnly: out has in's fields, in order, with the same
		// schemas (at most renamed), so a struct of in holds valid values
		// of out as they stand.
		renameOnly bool
	}
}

// sources are the input fields the fields of derived schema out read, from
// in; -1 for one in lacks.
func (t *replaceField) sources(in, out *connectors.Schema) []int {
	if t.from.in == in && t.from.out == out {
		return t.from.index
	}
	index := make([]int, len(out.Fields))
	renameOnly := len(in.Fields) == len(out.Fields)
	for i, f := range out.Fields {
		index[i], _ = in.Field(t.reverseRenamed(f.Name))
		renameOnly = renameOnly && index[i] == i && in.Fields[i].Schema == f.Schema
	}
	t.from.in, t.from.out, t.from.index, t.from.renameOnly = in, out, index, renameOnly
	return index
}

// renameError is the message of Connect's LambdaValidator for a bad
// mapping; ConfigDef prefixes it with the value and key.
type renameError struct{ mapping string }

func (e renameError) Error() string { return "Invalid rename mapping: " + e.mapping }

// parseRenameMappings is ReplaceField.parseRenameMappings: each mapping is
// from:to, split as Java's String.split(":"), which drops trailing empty
// parts ("a:" is one part, so invalid; ":a" renames the empty name). The
// pairs come back in the list's order.
func parseRenameMappings(mappings []string) ([][2]string, error) {
	var out [][2]string
	for _, mapping := range mappings {
		parts := strings.Split(mapping, ":")
		if mapping != "" { // "".split(":") is [""]
			for len(parts) > 0 && parts[len(parts)-1] == "" {
				parts = parts[:len(parts)-1]
			}
		}
		if len(parts) != 2 {
			return nil, renameError{mapping}
		}
		out = append(out, [2]string{parts[0], parts[1]})
	}
	return out, nil
}

func (t *replaceField) Config() *connectors.ConfigDef { return replaceFieldConfig() }

func (t *replaceField) Configure(props map[string]string) error {
	for old, now := range map[string]string{"whitelist": "include", "blacklist": "exclude"} {
		if _, ok := props[old]; ok {
			return keyError(old, props[old], fmt.Sprintf("%s was removed in Apache Kafka 4.0 and Connect 4.1 ignores it, keeping every field; use %s", old, now))
		}
	}
	set := func(key string) map[string]bool {
		out := map[string]bool{}
		for _, f := range javaList(props[key]) {
			out[f] = true
		}
		return out
	}
	t.exclude, t.include = set(replaceExclude), set(replaceInclude)
	renames := javaList(props[replaceRenames])
	pairs, err := parseRenameMappings(renames)
	if err != nil {
		return keyError(replaceRenames, javaListString(renames), err.Error())
	}
	// Connect inverts its HashMap of renames, so when two names are
	// renamed to one, which wins depends on Java's hash order; here the
	// later mapping in the list does.
	t.renames, t.reverse = map[string]string{}, map[string]string{}
	for _, p := range pairs {
		t.renames[p[0]] = p[1]
	}
	for _, p := range pairs {
		if t.renames[p[0]] == p[1] {
			t.reverse[p[1]] = p[0]
		}
	}
	t.replaceNullWithDefault = configBool(props, "replace.null.with.default", true)
	return nil
}

func (t *replaceField) filter(name string) bool {
	return !t.exclude[name] && (len(t.include) == 0 || t.include[name])
}

func (t *replaceField) renamed(name string) string {
	if to, ok := t.renames[name]; ok {
		return to
	}
	return name
}

func (t *replaceField) reverseRenamed(name string) string {
	if from, ok := t.reverse[name]; ok {
		return from
	}
	return name
}

func (t *replaceField) Apply(r *connectors.Record) (*connectors.Record, error) {
	switch {
	case t.value(r) == nil:
		return r, nil
	case t.schema(r) == nil:
		return t.applySchemaless(r)
	default:
		return t.applyWithSchema(r)
	}
}

func (t *replaceField) applySchemaless(r *connectors.Record) (*connectors.Record, error) {
	m, err := requireMap(t.value(r), replacePurpose)
	if err != nil {
		return nil, err
	}
	// When two kept names end up as one, the later in the map's order
	// wins in Connect, an order Go maps do not have: here the later in
	// sorted order does, so the result is at least deterministic.
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]any, len(m))
	for _, k := range keys {
		if t.filter(k) {
			out[t.renamed(k)] = m[k]
		}
	}
	return t.with(r, nil, out), nil
}

func (t *replaceField) applyWithSchema(r *connectors.Record) (*connectors.Record, error) {
	v, err := requireStruct(t.value(r), replacePurpose)
	if err != nil {
		return nil, err
	}
	schema := t.cache.get(v.Schema)
	if schema == nil {
		b := newStructBuilder(v.Schema)
		for _, f := range v.Schema.Fields {
			if t.filter(f.Name) {
				if err := b.field(t.renamed(f.Name), f.Schema); err != nil {
					return nil, err
				}
			}
		}
		schema = b.s
		t.cache.put(v.Schema, schema)
	}
	src := t.sources(v.Schema, schema)
	if t.from.renameOnly && !slices.Contains(v.Values, nil) {
		// Only names change and no value is null (a null would need
		// its default or its check): the output shares the input's
		// values, which no transform changes in place (connectors.Transform).
		return t.with(r, schema, &connectors.StructValue{Schema: schema, Values: v.Values}), nil
	}
	out := connectors.NewStruct(schema)
	for i, j := range src {
		if j < 0 {
			return nil, &missingFieldError{t.reverseRenamed(schema.Fields[i].Name)}
		}
		if err := copyField(out, i, v, j, t.replaceNullWithDefault); err != nil {
			return nil, err
		}
	}
	return t.with(r, schema, out), nil
}

// missingFieldError is Struct's lookupField failure.
type missingFieldError struct{ name string }

func (e *missingFieldError) Error() string { return e.name + " is not a valid field name" }

func (t *replaceField) Close() error { return nil }
