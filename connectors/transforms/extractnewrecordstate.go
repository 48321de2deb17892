package transforms

import (
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// ExtractNewRecordState is Debezium's io.debezium.transforms.ExtractNewRecordState
// (3.6): it turns a Debezium change event into the row it describes, the
// "after" struct, so that sinks that expect plain rows (the JDBC sink's
// upsert) consume Debezium topics. Deletes, tombstones and truncates are
// handled as delete.tombstone.handling.mode says; add.fields and
// add.headers copy envelope fields (op, source.ts_ms, ...) to the row or
// to headers. Records that are not change events (heartbeats) pass
// unchanged.
var _ = addTransform(connectors.TransformPlugin{
	Class:   "io.debezium.transforms.ExtractNewRecordState",
	Version: "3.6.1.Final",
	New:     func() connectors.Transform { return &extractNewRecordState{} },
})

const (
	enrsDeleteTombstoneMode = "delete.tombstone.handling.mode"
	enrsDropTombstones      = "drop.tombstones"
	enrsDeleteMode          = "delete.handling.mode"
	enrsRouteByField        = "route.by.field"
	enrsAddFieldsPrefix     = "add.fields.prefix"
	enrsAddFields           = "add.fields"
	enrsAddHeadersPrefix    = "add.headers.prefix"
	enrsAddHeaders          = "add.headers"
	enrsDropFieldsHeader    = "drop.fields.header.name"
	enrsDropFieldsFromKey   = "drop.fields.from.key"
	enrsDropFieldsCompat    = "drop.fields.keep.schema.compatible"

	// enrsDeletedField marks rewritten records: "true" on deletes,
	// "false" on the others.
	enrsDeletedField = "__deleted"
)

// deleteHandling is what becomes of a delete event.
type deleteHandling int

const (
	deleteDrop        deleteHandling = iota // dropped
	deleteNullValue                         // the row's schema with a null value
	deleteRewrite                           // the "before" row, __deleted=true
	deleteToTombstone                       // a tombstone: no value schema, no value
)

type extractNewRecordState struct {
	deletes        deleteHandling
	keepTombstones bool
	rewrite        bool
	routeByField   string
	replaceNull    bool
	fields         []fieldReference
	headers        []fieldReference
	cache          map[enrsCacheKey]*connectors.Schema
}

type enrsCacheKey struct {
	schema *connectors.Schema
	what   string // "deleted=true", "deleted=false", or the op for add.fields
}

func (t *extractNewRecordState) Config() *connectors.ConfigDef {
	modes := []string{"drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone"}
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: enrsDeleteTombstoneMode, Default: "tombstone", Validate: caseInsensitive(modes...), Recommended: modes,
			Doc: "What becomes of deletes and tombstones: drop (both dropped), tombstone (a delete becomes a record with a null value; tombstones dropped), " +
				"rewrite (a delete becomes its before row with __deleted=true, other rows get __deleted=false; tombstones dropped), " +
				"rewrite-with-tombstone (rewrite, tombstones kept), delete-to-tombstone (a delete becomes a tombstone; tombstones dropped)."}).
		Define(connectors.ConfigKey{Name: enrsDropTombstones, Type: connectors.TypeBoolean,
			Doc: "Debezium 2.x's key, honoured as 2.x did: drop tombstones (default true). Use delete.tombstone.handling.mode instead."}).
		Define(connectors.ConfigKey{Name: enrsDeleteMode, Validate: caseInsensitive("drop", "rewrite", "none"),
			Doc: "Debezium 2.x's key, honoured as 2.x did: drop (2.x's default), rewrite or none (a delete becomes a record with a null value). Use delete.tombstone.handling.mode instead."}).
		Define(connectors.ConfigKey{Name: enrsRouteByField, Importance: connectors.Low,
			Doc: "A row field whose value replaces the record's topic."}).
		Define(connectors.ConfigKey{Name: enrsAddFieldsPrefix, Default: "__", Importance: connectors.Low, Doc: "Prefix of the added fields."}).
		Define(connectors.ConfigKey{Name: enrsAddFields, Type: connectors.TypeList, Importance: connectors.Low,
			Doc: "Envelope fields to add to the row: op, ts_ms, source fields (version, ts_ms, lsn, ... or source.ts_ms), transaction fields; field:name renames."}).
		Define(connectors.ConfigKey{Name: enrsAddHeadersPrefix, Default: "__", Importance: connectors.Low, Doc: "Prefix of the added headers."}).
		Define(connectors.ConfigKey{Name: enrsAddHeaders, Type: connectors.TypeList, Importance: connectors.Low,
			Doc: "Envelope fields to add as headers, named as add.fields names them."}).
		Define(connectors.ConfigKey{Name: replaceNullConfig, Type: connectors.TypeBoolean, Default: "true", Importance: connectors.Low,
			Doc: "When rewriting a row (__deleted), a null field with a default reads as its default."}).
		Define(connectors.ConfigKey{Name: enrsDropFieldsHeader, Importance: connectors.Low,
			Validate: func(v string) error {
				if strings.TrimSpace(v) != "" {
					return fmt.Errorf("dropping fields named by a header is not supported by Sluice")
				}
				return nil
			},
			Doc: "Not supported: must be empty."}).
		Define(connectors.ConfigKey{Name: enrsDropFieldsFromKey, Type: connectors.TypeBoolean, Default: "false", Importance: connectors.Low,
			Doc: "Applies only with drop.fields.header.name, which is not supported: no effect, as in Debezium without it."}).
		Define(connectors.ConfigKey{Name: enrsDropFieldsCompat, Type: connectors.TypeBoolean, Default: "true", Importance: connectors.Low,
			Doc: "Applies only with drop.fields.header.name, which is not supported: no effect, as in Debezium without it."})
}

// caseInsensitive is Debezium's enum parsing: any case, trimmed.
func caseInsensitive(allowed ...string) func(string) error {
	check := connectors.OneOf(allowed...)
	return func(v string) error { return check(strings.ToLower(v)) }
}

func (t *extractNewRecordState) Configure(props map[string]string) error {
	cfg, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	legacy := cfg.IsSet(enrsDropTombstones) || cfg.IsSet(enrsDeleteMode)
	if legacy && cfg.IsSet(enrsDeleteTombstoneMode) {
		return fmt.Errorf("%s cannot be combined with Debezium 2.x's %s and %s: use %s alone", enrsDeleteTombstoneMode, enrsDropTombstones, enrsDeleteMode, enrsDeleteTombstoneMode)
	}
	if legacy {
		t.keepTombstones = cfg.IsSet(enrsDropTombstones) && !cfg.Bool(enrsDropTombstones)
		switch strings.ToLower(strings.TrimSpace(cfg.String(enrsDeleteMode))) {
		case "rewrite":
			t.deletes, t.rewrite = deleteRewrite, true
		case "none":
			t.deletes = deleteNullValue
		default: // drop, 2.x's default
			t.deletes = deleteDrop
		}
	} else {
		switch strings.ToLower(strings.TrimSpace(cfg.String(enrsDeleteTombstoneMode))) {
		case "drop":
			t.deletes = deleteDrop
		case "tombstone":
			t.deletes = deleteNullValue
		case "rewrite":
			t.deletes, t.rewrite = deleteRewrite, true
		case "rewrite-with-tombstone":
			t.deletes, t.rewrite, t.keepTombstones = deleteRewrite, true, true
		case "delete-to-tombstone":
			t.deletes = deleteToTombstone
		}
	}
	t.routeByField = strings.TrimSpace(cfg.String(enrsRouteByField))
	t.replaceNull = cfg.Bool(replaceNullConfig)
	if t.fields, err = parseFieldReferences(cfg.String(enrsAddFieldsPrefix), cfg.List(enrsAddFields)); err != nil {
		return fmt.Errorf("%s: %w", enrsAddFields, err)
	}
	if t.headers, err = parseFieldReferences(cfg.String(enrsAddHeadersPrefix), cfg.List(enrsAddHeaders)); err != nil {
		return fmt.Errorf("%s: %w", enrsAddHeaders, err)
	}
	t.cache = map[enrsCacheKey]*connectors.Schema{}
	return nil
}

func (t *extractNewRecordState) Close() error { return nil }

func (t *extractNewRecordState) Apply(r *connectors.Record) (*connectors.Record, error) {
	env, isEnvelope := r.Value.(*connectors.StructValue)
	isEnvelope = isEnvelope && env != nil && r.ValueSchema != nil && strings.HasSuffix(r.ValueSchema.Name, ".Envelope")
	tombstone := r.Value == nil
	if (isEnvelope || tombstone) && len(t.headers) > 0 {
		r = withHeaders(r, t.makeHeaders(r.Headers, env, tombstone))
	}
	if tombstone {
		if t.keepTombstones {
			return r, nil
		}
		return nil, nil
	}
	if !isEnvelope {
		return r, nil
	}
	afterIdx, afterSchema := r.ValueSchema.Field("after")
	beforeIdx, beforeSchema := r.ValueSchema.Field("before")
	if afterIdx < 0 || beforeIdx < 0 {
		return nil, fmt.Errorf("ExtractNewRecordState: change event schema %q has no before/after field", r.ValueSchema.Name)
	}
	after, before := nilIfNoStruct(structGet(env, afterIdx)), nilIfNoStruct(structGet(env, beforeIdx))
	if after == nil && before == nil {
		return nil, nil // a truncate: dropped, as Debezium drops it
	}
	out := *r
	if after == nil {
		switch t.deletes {
		case deleteDrop:
			return nil, nil
		case deleteNullValue:
			out.ValueSchema, out.Value = afterSchema, nil
		case deleteToTombstone:
			out.ValueSchema, out.Value = nil, nil
		case deleteRewrite:
			row, ok := before.(*connectors.StructValue)
			if !ok {
				return nil, fmt.Errorf("ExtractNewRecordState: the delete's before is not a struct")
			}
			s, v, err := t.withDeleted(beforeSchema, row, "true")
			if err != nil {
				return nil, err
			}
			out.ValueSchema, out.Value = s, v
		}
		if t.routeByField != "" {
			if row, ok := before.(*connectors.StructValue); ok {
				t.route(&out, row)
			}
		}
		if out.Value != nil {
			return t.addFields(&out, env)
		}
		return &out, nil
	}
	row, ok := after.(*connectors.StructValue)
	if !ok {
		return nil, fmt.Errorf("ExtractNewRecordState: the event's after is not a struct")
	}
	out.ValueSchema, out.Value = afterSchema, row
	if t.rewrite {
		s, v, err := t.withDeleted(afterSchema, row, "false")
		if err != nil {
			return nil, err
		}
		out.ValueSchema, out.Value = s, v
	}
	if t.routeByField != "" {
		t.route(&out, out.Value.(*connectors.StructValue))
	}
	return t.addFields(&out, env)
}

// nilIfNoStruct turns a nil *StructValue held in an interface into a plain
// nil, which is how a null row must read.
func nilIfNoStruct(v any) any {
	if sv, ok := v.(*connectors.StructValue); ok && sv == nil {
		return nil
	}
	return v
}

// route sets the topic to the row's route.by.field, when it is a non-blank
// string.
func (t *extractNewRecordState) route(r *connectors.Record, row *connectors.StructValue) {
	if topic, ok := row.Get(t.routeByField).(string); ok && strings.TrimSpace(topic) != "" {
		r.Topic = topic
	}
}

// withDeleted is Debezium's InsertField of __deleted (an optional string).
func (t *extractNewRecordState) withDeleted(s *connectors.Schema, row *connectors.StructValue, deleted string) (*connectors.Schema, *connectors.StructValue, error) {
	key := enrsCacheKey{s, "deleted=" + deleted}
	out := t.cache[key]
	if out == nil {
		// As InsertField's copySchemaBasics: required, whatever s is.
		out = copySchemaBasics(s, connectors.Struct)
		out.Fields = append(make([]connectors.Field, 0, len(s.Fields)+1), s.Fields...)
		if err := addField(out, enrsDeletedField, connectors.OptionalStringSchema); err != nil {
			return nil, nil, err
		}
		t.cache[key] = out
	}
	v := connectors.NewStruct(out)
	for i := range s.Fields {
		if t.replaceNull {
			v.Values[i] = structGet(row, i)
		} else {
			v.Values[i] = row.Values[i]
		}
	}
	v.Values[len(s.Fields)] = deleted
	return out, v, nil
}

// addFields appends the add.fields found in the event to the row.
func (t *extractNewRecordState) addFields(r *connectors.Record, env *connectors.StructValue) (*connectors.Record, error) {
	if len(t.fields) == 0 {
		return r, nil
	}
	row, ok := r.Value.(*connectors.StructValue)
	if !ok {
		return nil, fmt.Errorf("ExtractNewRecordState: only a struct row can take add.fields")
	}
	op, _ := env.Get("op").(string)
	key := enrsCacheKey{row.Schema, "op=" + op}
	s := t.cache[key]
	if s == nil {
		// As Debezium's copySchemaBasics: required, whatever the row's is.
		s = copySchemaBasics(row.Schema, connectors.Struct)
		s.Fields = append(make([]connectors.Field, 0, len(row.Schema.Fields)+len(t.fields)), row.Schema.Fields...)
		for _, f := range t.fields {
			if fs := f.schema(env.Schema); fs != nil {
				if err := addField(s, f.newField, fs); err != nil {
					return nil, fmt.Errorf("ExtractNewRecordState %s: %w", enrsAddFields, err)
				}
			}
		}
		t.cache[key] = s
	}
	v := connectors.NewStruct(s)
	copy(v.Values, row.Values)
	j := len(row.Schema.Fields)
	for _, f := range t.fields {
		if f.schema(env.Schema) != nil {
			v.Values[j] = f.value(env)
			j++
		}
	}
	r.ValueSchema, r.Value = s, v
	return r, nil
}

// makeHeaders returns hs with add.headers appended: for a tombstone only
// the op, as "d", as Debezium does.
func (t *extractNewRecordState) makeHeaders(hs []connectors.Header, env *connectors.StructValue, tombstone bool) []connectors.Header {
	out := copyHeaders(hs, len(t.headers))
	for _, f := range t.headers {
		if tombstone {
			if f.field == "op" {
				out = append(out, connectors.Header{Key: f.newField, Schema: connectors.StringSchema, Value: "d"})
			}
			continue
		}
		if fs := f.schema(env.Schema); fs != nil {
			out = append(out, connectors.Header{Key: f.newField, Schema: fs, Value: f.value(env)})
		}
	}
	return out
}

// fieldReference is one entry of add.fields or add.headers: a field of
// the envelope ("op") or of one of its structs ("source.ts_ms"), and the
// name it gets.
type fieldReference struct {
	parent   string // "source", "transaction", or "" for the envelope's own
	field    string
	newField string
}

func parseFieldReferences(prefix string, entries []string) ([]fieldReference, error) {
	var out []fieldReference
	for _, e := range entries {
		parts := strings.Split(e, ":")
		if len(parts) > 2 {
			return nil, fmt.Errorf("unexpected field name %q", e)
		}
		splits := strings.Split(parts[0], ".")
		f := fieldReference{field: splits[0]}
		if len(splits) > 1 {
			f.parent, f.field = splits[0], splits[1]
		} else {
			f.parent = parentOf(f.field)
		}
		switch {
		case len(parts) == 2:
			f.newField = prefix + parts[1]
		case len(splits) == 1:
			f.newField = prefix + f.field
		default:
			f.newField = prefix + f.parent + "_" + f.field
		}
		out = append(out, f)
	}
	return out, nil
}

// parentOf is Debezium's determineStruct: where an unqualified field lives.
func parentOf(field string) string {
	switch field {
	case "id", "total_order", "data_collection_order":
		return "transaction"
	case "op", "ts_ms", "ts_us", "ts_ns":
		return ""
	case "updateDescription":
		return "updateDescription"
	}
	return "source"
}

// schema is the added field's schema (an optional copy of the original's
// basics), or nil when the event has no such field.
func (f fieldReference) schema(envSchema *connectors.Schema) *connectors.Schema {
	parent := envSchema
	if f.parent != "" {
		_, parent = envSchema.Field(f.parent)
	}
	var fs *connectors.Schema
	if parent != nil {
		_, fs = parent.Field(f.field)
	}
	if fs == nil {
		// A field another transform added to the envelope itself.
		if _, fs = envSchema.Field(f.field); fs == nil {
			return nil
		}
	}
	// SchemaUtil.copySchemaBasics(schema).optional(): a struct's fields
	// are not copied, an array's or map's element schemas are.
	out := copySchemaBasicsOf(fs)
	if fs.Type == connectors.Map {
		out.Keys, out.Values = fs.Keys, fs.Values
	}
	out.Optional = true
	return out
}

func (f fieldReference) value(env *connectors.StructValue) any {
	parent := env
	if f.parent != "" {
		p, _ := env.Get(f.parent).(*connectors.StructValue)
		if p == nil {
			return nil // no transaction block, for one
		}
		parent = p
	}
	if i, _ := parent.Schema.Field(f.field); i >= 0 {
		return parent.Values[i]
	}
	return env.Get(f.field)
}
