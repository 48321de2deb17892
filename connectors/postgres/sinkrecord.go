package postgres

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// sinkColSource says where a column's value comes from in a record.
type sinkColSource uint8

const (
	sinkFromTopic      sinkColSource = iota // the record's topic (pk.mode kafka)
	sinkFromPartition                       // its partition
	sinkFromOffset                          // its offset
	sinkFromKey                             // the whole primitive key (pk.mode record_key)
	sinkFromKeyField                        // a field of a struct or map key
	sinkFromValueField                      // a field of a struct or map value
)

// sinkColumn is one column a record writes.
type sinkColumn struct {
	name string
	// schema is the Connect schema of the value, nil for schemaless
	// values (then the table must already have the column).
	schema *connectors.Schema
	src    sinkColSource
	// idx is the field's index in a struct key or value, -1 for a map,
	// whose value is looked up by name.
	idx int
}

// sinkLayout is the column set one kind of record writes to one table: the
// primary key columns first, then the others. Records of one layout are
// written by one statement; a layout is found once per schema and reused.
type sinkLayout struct {
	cols   []sinkColumn
	npk    int
	delete bool // a tombstone: delete the row with this key
	// id names the layout within its table: the column names and whether it
	// deletes. Equal ids mean the same statement.
	id string
}

func (l *sinkLayout) pk() []sinkColumn    { return l.cols[:l.npk] }
func (l *sinkLayout) nonPK() []sinkColumn { return l.cols[l.npk:] }

// sinkRecordError is a record the sink cannot write whatever the database
// says: it names the record, so the user can find it.
func sinkRecordError(r *connectors.SinkRecord, format string, args ...any) error {
	return fmt.Errorf("record %s-%d@%d: %s", r.Topic, r.Partition, r.Offset, fmt.Sprintf(format, args...))
}

// sinkLayoutCacheKey identifies the layout of records whose columns follow from
// their schemas alone: converters reuse one schema pointer for equal
// schemas, so finding a layout is one map lookup per record.
type sinkLayoutCacheKey struct {
	key, value *connectors.Schema
	tombstone  bool
}

// cacheKey returns r's layout cache key, or false when r's columns depend on
// its data (a map's key set).
func (c *sinkConfig) cacheKey(r *connectors.SinkRecord) (sinkLayoutCacheKey, bool) {
	var k sinkLayoutCacheKey
	switch v := r.Value.(type) {
	case nil:
		k.tombstone = true
	case *connectors.StructValue:
		if v == nil || v.Schema == nil {
			return k, false
		}
		k.value = v.Schema
	default:
		return k, false
	}
	if c.pkMode == PKModeRecordKey {
		switch key := r.Key.(type) {
		case nil, map[string]any:
			return k, false
		case *connectors.StructValue:
			if key == nil || key.Schema == nil {
				return k, false
			}
			k.key = key.Schema
		default:
			// A primitive key: its column's schema is the key schema.
			k.key = r.KeySchema
		}
	}
	return k, true
}

// fields lists the field names and schemas of a struct or map, and the
// index of each in a struct (-1 for a map). A map's names are sorted, so
// equal key sets give equal layouts.
type sinkFieldList struct {
	names   []string
	schemas []*connectors.Schema
	idx     []int
}

func sinkFieldsOf(v any, s *connectors.Schema) (sinkFieldList, bool) {
	var fl sinkFieldList
	switch x := v.(type) {
	case *connectors.StructValue:
		if x == nil || x.Schema == nil {
			return fl, false
		}
		for i, f := range x.Schema.Fields {
			fl.names = append(fl.names, f.Name)
			fl.schemas = append(fl.schemas, f.Schema)
			fl.idx = append(fl.idx, i)
		}
		return fl, true
	case map[string]any:
		var vs *connectors.Schema
		if s != nil && s.Type == connectors.Map {
			vs = s.Values
		}
		for name := range x {
			fl.names = append(fl.names, name)
		}
		slices.Sort(fl.names)
		for range fl.names {
			fl.schemas = append(fl.schemas, vs)
			fl.idx = append(fl.idx, -1)
		}
		return fl, true
	}
	return fl, false
}

func (fl sinkFieldList) find(name string) int { return slices.Index(fl.names, name) }

// buildLayout works out the columns a record writes, by pk.mode, as
// Confluent's FieldsMetadata does: key columns first, then the value's
// fields that are not key columns (and are whitelisted).
func (c *sinkConfig) buildLayout(r *connectors.SinkRecord) (*sinkLayout, error) {
	l := &sinkLayout{}
	pkNames := map[string]bool{}
	addPK := func(col sinkColumn) {
		l.cols = append(l.cols, col)
		pkNames[col.name] = true
	}
	if r.Value == nil {
		if !c.deleteEnabled {
			return nil, sinkRecordError(r, "null value (a tombstone) with delete.enabled=false: the sink needs a struct or map value; set delete.enabled=true (with pk.mode record_key) to delete rows")
		}
		l.delete = true
	}
	var value sinkFieldList
	if !l.delete {
		var ok bool
		if value, ok = sinkFieldsOf(r.Value, r.ValueSchema); !ok {
			return nil, sinkRecordError(r, "value of type %T is not a struct or a map: the sink writes fields as columns", r.Value)
		}
	}

	switch c.pkMode {
	case PKModeKafka:
		addPK(sinkColumn{name: c.pkFields[0], schema: connectors.StringSchema, src: sinkFromTopic})
		addPK(sinkColumn{name: c.pkFields[1], schema: connectors.Int32Schema, src: sinkFromPartition})
		addPK(sinkColumn{name: c.pkFields[2], schema: connectors.Int64Schema, src: sinkFromOffset})
	case PKModeRecordKey:
		if r.Key == nil {
			return nil, sinkRecordError(r, "pk.mode record_key needs a record key, and the record has none")
		}
		if key, ok := sinkFieldsOf(r.Key, r.KeySchema); ok {
			names := c.pkFields
			if len(names) == 0 {
				names = key.names
			}
			for _, n := range names {
				i := key.find(n)
				if i < 0 {
					return nil, sinkRecordError(r, "pk.fields names %q, which the record key lacks (key fields: %s)", n, strings.Join(key.names, ", "))
				}
				addPK(sinkColumn{name: n, schema: key.schemas[i], src: sinkFromKeyField, idx: key.idx[i]})
			}
			if len(names) == 0 {
				return nil, sinkRecordError(r, "pk.mode record_key: the record key has no fields")
			}
		} else {
			if len(c.pkFields) != 1 {
				return nil, sinkRecordError(r, "pk.mode record_key with a primitive key (%T) needs exactly one pk.fields name, the column to write the key to; pk.fields has %d", r.Key, len(c.pkFields))
			}
			addPK(sinkColumn{name: c.pkFields[0], schema: r.KeySchema, src: sinkFromKey})
		}
	case PKModeRecordValue:
		if l.delete {
			return nil, sinkRecordError(r, "null value with pk.mode record_value: there is no key to delete by")
		}
		names := c.pkFields
		if len(names) == 0 {
			names = value.names
		}
		for _, n := range names {
			i := value.find(n)
			if i < 0 {
				return nil, sinkRecordError(r, "pk.fields names %q, which the record value lacks (value fields: %s)", n, strings.Join(value.names, ", "))
			}
			addPK(sinkColumn{name: n, schema: value.schemas[i], src: sinkFromValueField, idx: value.idx[i]})
		}
	}
	l.npk = len(l.cols)
	for i, n := range value.names {
		if pkNames[n] || (c.whitelist != nil && !c.whitelist[n]) {
			continue
		}
		l.cols = append(l.cols, sinkColumn{name: n, schema: value.schemas[i], src: sinkFromValueField, idx: value.idx[i]})
	}
	if len(l.cols) == 0 {
		return nil, sinkRecordError(r, "no column to write: the value has no fields (after fields.whitelist) and pk.mode is %s", c.pkMode)
	}
	for _, col := range l.pk() {
		if col.schema != nil && col.schema.Type == connectors.Struct {
			return nil, sinkRecordError(r, "primary key column %q would hold a struct", col.name)
		}
	}
	var id strings.Builder
	if l.delete {
		id.WriteString("delete:")
	}
	for i, col := range l.cols {
		if i > 0 {
			id.WriteByte(0)
		}
		id.WriteString(col.name)
	}
	l.id = id.String()
	return l, nil
}

// sinkValueOf extracts column col's value from r.
func sinkValueOf(r *connectors.SinkRecord, col *sinkColumn) any {
	switch col.src {
	case sinkFromTopic:
		return r.Topic
	case sinkFromPartition:
		return r.Partition
	case sinkFromOffset:
		return r.Offset
	case sinkFromKey:
		return r.Key
	case sinkFromKeyField:
		return sinkFieldValue(r.Key, col)
	default:
		return sinkFieldValue(r.Value, col)
	}
}

func sinkFieldValue(v any, col *sinkColumn) any {
	switch x := v.(type) {
	case *connectors.StructValue:
		if col.idx >= 0 && col.idx < len(x.Values) {
			if fv := x.Values[col.idx]; fv != nil {
				return fv
			}
			// An unset field takes its schema's default, as Connect's
			// Struct.get does.
			if col.schema != nil {
				return col.schema.Default
			}
		}
		return nil
	case map[string]any:
		return x[col.name]
	}
	return nil
}
