package postgrescdc

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// DebeziumVersion is the Debezium release whose event format, offsets and
// keys this connector reproduces; it is what source.version says, so that
// consumers that look at it see the format they expect.
const DebeziumVersion = "3.6.1.Final"

// sourceSchema is Debezium's io.debezium.connector.postgresql.Source.
var sourceSchema = func() *connectors.Schema {
	snapshot := &connectors.Schema{Type: connectors.String, Optional: true, Name: enumName, Version: 1, Default: "false",
		Parameters: map[string]string{"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"}}
	s := connectors.StructSchema("io.debezium.connector.postgresql.Source",
		connectors.Field{Name: "version", Schema: connectors.StringSchema},
		connectors.Field{Name: "connector", Schema: connectors.StringSchema},
		connectors.Field{Name: "name", Schema: connectors.StringSchema},
		connectors.Field{Name: "ts_ms", Schema: connectors.Int64Schema},
		connectors.Field{Name: "snapshot", Schema: snapshot},
		connectors.Field{Name: "db", Schema: connectors.StringSchema},
		connectors.Field{Name: "sequence", Schema: connectors.OptionalStringSchema},
		connectors.Field{Name: "ts_us", Schema: connectors.OptionalInt64Schema},
		connectors.Field{Name: "ts_ns", Schema: connectors.OptionalInt64Schema},
		connectors.Field{Name: "schema", Schema: connectors.StringSchema},
		connectors.Field{Name: "table", Schema: connectors.StringSchema},
		connectors.Field{Name: "txId", Schema: connectors.OptionalInt64Schema},
		connectors.Field{Name: "lsn", Schema: connectors.OptionalInt64Schema},
		connectors.Field{Name: "xmin", Schema: connectors.OptionalInt64Schema},
		connectors.Field{Name: "origin", Schema: connectors.OptionalStringSchema},
		connectors.Field{Name: "origin_lsn", Schema: connectors.OptionalInt64Schema},
	)
	s.Version = 1
	return s
}()

// transactionSchema is Debezium's event.block; its value is always null
// (provide.transaction.metadata=false).
var transactionSchema = &connectors.Schema{Type: connectors.Struct, Optional: true, Name: "event.block", Version: 1,
	Fields: []connectors.Field{
		{Name: "id", Schema: connectors.StringSchema},
		{Name: "total_order", Schema: connectors.Int64Schema},
		{Name: "data_collection_order", Schema: connectors.Int64Schema},
	}}

// column is one captured column of a table.
type column struct {
	name     string
	optional bool
	conv     *converter
	schema   *connectors.Schema // conv.schema, optional when the column is
}

// table is a captured table: its columns in the order of the relation
// (or the snapshot's SELECT), and its Connect schemas.
type table struct {
	schema, name string
	topic        string
	// columns has one entry per column of the relation; nil for one
	// that is not captured (its type is unknown, or column lists
	// exclude it).
	columns []*column
	keyIdx  []int // indexes into columns of the key's columns
	keySchema,
	valueSchema,
	envelope *connectors.Schema
}

// buildSchemas makes the table's key, value and envelope schemas, named as
// Debezium names them.
func (t *table) buildSchemas(prefix string) {
	base := prefix + "." + t.schema + "." + t.name
	t.topic = base
	var fields []connectors.Field
	for _, c := range t.columns {
		if c != nil {
			fields = append(fields, connectors.Field{Name: c.name, Schema: c.schema})
		}
	}
	t.valueSchema = &connectors.Schema{Type: connectors.Struct, Optional: true, Name: base + ".Value", Fields: fields}
	t.keySchema = nil
	if len(t.keyIdx) > 0 {
		var kf []connectors.Field
		for _, i := range t.keyIdx {
			kf = append(kf, connectors.Field{Name: t.columns[i].name, Schema: t.columns[i].schema})
		}
		t.keySchema = &connectors.Schema{Type: connectors.Struct, Name: base + ".Key", Fields: kf}
	}
	t.envelope = &connectors.Schema{Type: connectors.Struct, Name: base + ".Envelope", Version: 2, Fields: []connectors.Field{
		{Name: "before", Schema: t.valueSchema},
		{Name: "after", Schema: t.valueSchema},
		{Name: "source", Schema: sourceSchema},
		{Name: "transaction", Schema: transactionSchema},
		{Name: "op", Schema: connectors.StringSchema},
		{Name: "ts_ms", Schema: connectors.OptionalInt64Schema},
		{Name: "ts_us", Schema: connectors.OptionalInt64Schema},
		{Name: "ts_ns", Schema: connectors.OptionalInt64Schema},
	}}
}

// cell is one column's value as PostgreSQL sent it.
type cell struct {
	text      string
	null      bool
	unchanged bool // an unchanged TOASTed value pgoutput did not send
	snapshot  bool // read by the snapshot, not sent by the stream
}

// row converts a tuple into the table's value struct.
func (t *table) row(cells []cell) (*connectors.StructValue, error) {
	if len(cells) != len(t.columns) {
		return nil, fmt.Errorf("table %s.%s: got %d columns, expected %d (the table changed without a relation message?)", t.schema, t.name, len(cells), len(t.columns))
	}
	v := connectors.NewStruct(t.valueSchema)
	j := 0
	for i, c := range t.columns {
		if c == nil {
			continue
		}
		cl := cells[i]
		switch {
		case cl.unchanged:
			v.Values[j] = c.conv.placeholder
		case cl.null:
			if !c.optional {
				// Debezium's JdbcValueConverters: the default, else the
				// type's zero.
				if v.Values[j] = c.schema.Default; v.Values[j] == nil {
					v.Values[j] = fallback(c.schema)
				}
			}
		default:
			parse := c.conv.parse
			if cl.snapshot && c.conv.parseSnapshot != nil {
				parse = c.conv.parseSnapshot
			}
			val, err := parse(cl.text)
			if err != nil {
				return nil, fmt.Errorf("column %q of %s.%s: %w", c.name, t.schema, t.name, err)
			}
			if sv, ok := val.(*connectors.StructValue); ok {
				// A struct-valued type (VariableScaleDecimal) is built
				// with the converter's schema; the column's is its
				// optional (or defaulted) copy, and a converter checks
				// a struct against the schema it is written with.
				sv.Schema = c.schema
			}
			v.Values[j] = val
		}
		j++
	}
	return v, nil
}

// key returns the record key of a row value, or nil for a table without
// a key.
func (t *table) key(row *connectors.StructValue) *connectors.StructValue {
	if t.keySchema == nil || row == nil {
		return nil
	}
	k := connectors.NewStruct(t.keySchema)
	for i, f := range t.keySchema.Fields {
		k.Values[i] = row.Get(f.Name)
	}
	return k
}

// position is where an event sits in the change stream: what its source
// block and its offset say.
type position struct {
	commitTime time.Time // the transaction's commit (now, in a snapshot)
	txID       int64
	lsn        uint64 // the change's LSN (the snapshot's in a snapshot)
	procLSN    uint64 // lsn_proc: processed up to here (a heartbeat's WAL end)
	// messageType is Debezium's name of the last message decoded
	// (INSERT, UPDATE, DELETE, TRUNCATE, COMMIT); empty in a snapshot.
	messageType string
	// lastCommit is the end LSN of the commit of the last transaction
	// before this one (0: none since the slot was created; always 0 in a
	// snapshot).
	lastCommit uint64
	snapshot   string // source.snapshot: "" when streaming
	lastSnap   bool
}

// sourceValue is the event's source block.
func (p position) sourceValue(prefix, db string, t *table) *connectors.StructValue {
	s := connectors.NewStruct(sourceSchema)
	us := p.commitTime.UnixMicro()
	s.Values[0] = DebeziumVersion
	s.Values[1] = "postgresql"
	s.Values[2] = prefix
	s.Values[3] = p.commitTime.UnixMilli()
	if p.snapshot != "" {
		s.Values[4] = p.snapshot // when streaming it is null: its default, "false"
	}
	s.Values[5] = db
	commit := "null"
	if p.lastCommit != 0 {
		commit = strconv.Quote(strconv.FormatUint(p.lastCommit, 10))
	}
	s.Values[6] = "[" + commit + "," + strconv.Quote(strconv.FormatUint(p.lsn, 10)) + "]"
	s.Values[7] = us
	s.Values[8] = p.commitTime.UnixNano()
	s.Values[9] = t.schema
	s.Values[10] = t.name
	s.Values[11] = p.txID
	s.Values[12] = int64(p.lsn)
	return s
}

// offset is the event's source offset, in Debezium's shape.
func (p position) offset() map[string]any {
	o := map[string]any{
		"ts_usec": p.commitTime.UnixMicro(),
		"txId":    p.txID,
		"lsn":     int64(p.lsn),
	}
	if p.snapshot != "" {
		o["snapshot"] = "INITIAL"
		o["last_snapshot_record"] = p.lastSnap
		o["snapshot_completed"] = p.lastSnap
	} else {
		o["lsn_proc"] = int64(p.procLSN)
		if p.lastCommit != 0 {
			o["lsn_commit"] = int64(p.lastCommit)
		}
		if p.messageType != "" {
			o["messageType"] = p.messageType
		}
	}
	return o
}

// event builds a change event record: op is c, u, d or r.
func (t *table) event(partition map[string]any, prefix, db, op string, before, after *connectors.StructValue, p position, now time.Time) *connectors.SourceRecord {
	return t.eventAt(partition, op, before, after, p.sourceValue(prefix, db, t), p.offset(), now)
}

// eventAt builds a change event record with its source block and source
// offset given: the snapshot sets them once it knows where in the
// snapshot the record is (nil until then).
func (t *table) eventAt(partition map[string]any, op string, before, after, source *connectors.StructValue, offset map[string]any, now time.Time) *connectors.SourceRecord {
	v := connectors.NewStruct(t.envelope)
	// A nil *StructValue in an interface is not a null: set only rows
	// there are.
	if before != nil {
		v.Values[0] = before
	}
	if after != nil {
		v.Values[1] = after
	}
	if source != nil {
		v.Values[2] = source
	}
	v.Values[4] = op
	v.Values[5] = now.UnixMilli()
	v.Values[6] = now.UnixMicro()
	v.Values[7] = now.UnixNano()
	keyRow := after
	if keyRow == nil {
		keyRow = before
	}
	rec := &connectors.SourceRecord{
		Partition: partition, Offset: offset, Topic: t.topic,
		ValueSchema: t.envelope, Value: v,
	}
	if k := t.key(keyRow); k != nil {
		rec.KeySchema, rec.Key = t.keySchema, k
	}
	return rec
}

// tombstone follows a delete event: the same key, a null value, and the
// delete's headers (a key change's __debezium.newkey), as Debezium's.
func tombstone(del *connectors.SourceRecord) *connectors.SourceRecord {
	return &connectors.SourceRecord{
		Partition: del.Partition, Offset: del.Offset, Topic: del.Topic,
		KeySchema: del.KeySchema, Key: del.Key, Headers: append([]connectors.Header(nil), del.Headers...),
	}
}

// truncateEvent is Debezium's op=t event: no before, no after.
func (t *table) truncateEvent(partition map[string]any, prefix, db string, p position, now time.Time) *connectors.SourceRecord {
	r := t.event(partition, prefix, db, "t", nil, nil, p, now)
	r.KeySchema, r.Key = nil, nil
	return r
}
