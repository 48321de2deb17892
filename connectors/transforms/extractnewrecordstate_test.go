package transforms

import (
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// A Debezium change event of table public.t (id int, name text), as the
// Postgres CDC connector builds it.
var (
	enrsRow = &connectors.Schema{Type: connectors.Struct, Optional: true, Name: "srv.public.t.Value", Fields: []connectors.Field{
		{Name: "id", Schema: connectors.Int32Schema},
		{Name: "name", Schema: connectors.OptionalStringSchema},
	}}
	enrsSource = &connectors.Schema{Type: connectors.Struct, Name: "io.debezium.connector.postgresql.Source", Fields: []connectors.Field{
		{Name: "ts_ms", Schema: connectors.Int64Schema},
		{Name: "table", Schema: connectors.StringSchema},
		{Name: "lsn", Schema: connectors.OptionalInt64Schema},
	}}
	enrsEnvelope = &connectors.Schema{Type: connectors.Struct, Name: "srv.public.t.Envelope", Version: 2, Fields: []connectors.Field{
		{Name: "before", Schema: enrsRow},
		{Name: "after", Schema: enrsRow},
		{Name: "source", Schema: enrsSource},
		{Name: "transaction", Schema: &connectors.Schema{Type: connectors.Struct, Optional: true, Name: "event.block",
			Fields: []connectors.Field{{Name: "id", Schema: connectors.StringSchema}}}},
		{Name: "op", Schema: connectors.StringSchema},
		{Name: "ts_ms", Schema: connectors.OptionalInt64Schema},
	}}
)

func enrsEvent(op string, before, after *connectors.StructValue) *connectors.Record {
	src := connectors.NewStruct(enrsSource)
	src.Values[0], src.Values[1], src.Values[2] = int64(1700000000000), "t", int64(42)
	env := connectors.NewStruct(enrsEnvelope)
	env.Values[2], env.Values[4], env.Values[5] = src, op, int64(1700000000001)
	if before != nil {
		env.Values[0] = before
	}
	if after != nil {
		env.Values[1] = after
	}
	key := connectors.NewStruct(&connectors.Schema{Type: connectors.Struct, Name: "srv.public.t.Key", Fields: enrsRow.Fields[:1]})
	row := after
	if row == nil {
		row = before
	}
	if row != nil {
		key.Values[0] = row.Values[0]
	}
	return &connectors.Record{Topic: "srv.public.t", KeySchema: key.Schema, Key: key, ValueSchema: enrsEnvelope, Value: env}
}

func enrsRowOf(id int32, name any) *connectors.StructValue {
	v := connectors.NewStruct(enrsRow)
	v.Values[0], v.Values[1] = id, name
	return v
}

func enrsTombstone() *connectors.Record {
	r := enrsEvent("d", enrsRowOf(1, nil), nil)
	r.ValueSchema, r.Value = nil, nil
	return r
}

func newENRS(t *testing.T, props map[string]string) *extractNewRecordState {
	t.Helper()
	x := &extractNewRecordState{}
	if err := x.Configure(props); err != nil {
		t.Fatalf("Configure(%v): %v", props, err)
	}
	return x
}

func TestExtractNewRecordStateUnwrapsCreatesAndUpdates(t *testing.T) {
	x := newENRS(t, nil)
	out, err := x.Apply(enrsEvent("u", enrsRowOf(1, "a"), enrsRowOf(1, "b")))
	if err != nil {
		t.Fatal(err)
	}
	row := out.Value.(*connectors.StructValue)
	if out.ValueSchema != enrsRow || row.Get("name") != "b" || out.Topic != "srv.public.t" {
		t.Fatalf("got %v %v", out.ValueSchema.Name, row.Values)
	}
}

func TestExtractNewRecordStateDeleteModes(t *testing.T) {
	for _, tc := range []struct {
		props           map[string]string
		deleteIs        string // "dropped", "null", "tombstone", "rewritten"
		tombstoneKept   bool
		updateHasMarker bool
	}{
		{nil, "null", false, false},
		{map[string]string{"delete.tombstone.handling.mode": "drop"}, "dropped", false, false},
		{map[string]string{"delete.tombstone.handling.mode": "rewrite"}, "rewritten", false, true},
		{map[string]string{"delete.tombstone.handling.mode": "REWRITE-with-tombstone"}, "rewritten", true, true},
		{map[string]string{"delete.tombstone.handling.mode": "delete-to-tombstone"}, "tombstone", false, false},
		// Debezium 2.x's keys, with 2.x's defaults (delete.handling.mode=drop).
		{map[string]string{"drop.tombstones": "false"}, "dropped", true, false},
		{map[string]string{"delete.handling.mode": "none"}, "null", false, false},
		{map[string]string{"delete.handling.mode": "rewrite", "drop.tombstones": "true"}, "rewritten", false, true},
	} {
		x := newENRS(t, tc.props)
		del, err := x.Apply(enrsEvent("d", enrsRowOf(7, "gone"), nil))
		if err != nil {
			t.Fatal(err)
		}
		got := "?"
		switch {
		case del == nil:
			got = "dropped"
		case del.Value == nil && del.ValueSchema == enrsRow:
			got = "null"
		case del.Value == nil && del.ValueSchema == nil:
			got = "tombstone"
		default:
			if v, ok := del.Value.(*connectors.StructValue); ok && v.Get("__deleted") == "true" && v.Get("id") == int32(7) {
				got = "rewritten"
			}
		}
		if got != tc.deleteIs {
			t.Errorf("%v: delete %s, want %s", tc.props, got, tc.deleteIs)
		}
		tomb, err := x.Apply(enrsTombstone())
		if err != nil || (tomb != nil) != tc.tombstoneKept {
			t.Errorf("%v: tombstone kept = %v (%v), want %v", tc.props, tomb != nil, err, tc.tombstoneKept)
		}
		up, _ := x.Apply(enrsEvent("c", nil, enrsRowOf(2, "x")))
		if marker := up.Value.(*connectors.StructValue).Get("__deleted"); (marker == "false") != tc.updateHasMarker {
			t.Errorf("%v: insert __deleted = %v", tc.props, marker)
		}
	}
}

func TestExtractNewRecordStateRefusesMixedDeleteKeys(t *testing.T) {
	x := &extractNewRecordState{}
	err := x.Configure(map[string]string{"delete.tombstone.handling.mode": "drop", "drop.tombstones": "false"})
	if err == nil || !strings.Contains(err.Error(), "delete.tombstone.handling.mode") {
		t.Fatalf("got %v", err)
	}
	if err := x.Configure(map[string]string{"drop.fields.header.name": "h"}); err == nil || !strings.Contains(err.Error(), "drop.fields.header.name") {
		t.Fatalf("drop.fields.header.name accepted: %v", err)
	}
}

func TestExtractNewRecordStateAddFieldsAndHeaders(t *testing.T) {
	x := newENRS(t, map[string]string{
		"add.fields":         "op,source.ts_ms,table,lsn:LSN,id",
		"add.headers":        "op,ts_ms",
		"add.headers.prefix": "dbz.",
	})
	out, err := x.Apply(enrsEvent("c", nil, enrsRowOf(3, "n")))
	if err != nil {
		t.Fatal(err)
	}
	v := out.Value.(*connectors.StructValue)
	var names []string
	for _, f := range v.Schema.Fields {
		names = append(names, f.Name)
	}
	// transaction.id is absent (no transaction block): its field is
	// still added, null, as its schema exists.
	if got := strings.Join(names, ","); got != "id,name,__op,__source_ts_ms,__table,__LSN,__id" {
		t.Fatalf("fields = %s", got)
	}
	if v.Get("__op") != "c" || v.Get("__source_ts_ms") != int64(1700000000000) || v.Get("__table") != "t" || v.Get("__LSN") != int64(42) || v.Get("__id") != nil {
		t.Fatalf("values = %v", v.Values)
	}
	if !v.Schema.Fields[3].Schema.Optional {
		t.Error("added fields must be optional")
	}
	if v.Schema.Optional || v.Schema.Name != "srv.public.t.Value" {
		t.Errorf("the row's new schema is %q optional=%v; Debezium's copySchemaBasics keeps the name, not the optionality", v.Schema.Name, v.Schema.Optional)
	}
	if len(out.Headers) != 2 || out.Headers[0].Key != "dbz.op" || out.Headers[0].Value != "c" || out.Headers[1].Value != int64(1700000000001) {
		t.Fatalf("headers = %v", out.Headers)
	}
	// A kept tombstone carries only the op header, "d".
	y := newENRS(t, map[string]string{"add.headers": "op,source.ts_ms", "delete.tombstone.handling.mode": "rewrite-with-tombstone"})
	tomb, err := y.Apply(enrsTombstone())
	if err != nil || tomb == nil || len(tomb.Headers) != 1 || tomb.Headers[0].Key != "__op" || tomb.Headers[0].Value != "d" {
		t.Fatalf("tombstone headers = %v, %v", tomb, err)
	}
}

func TestExtractNewRecordStatePassesOtherRecordsAndDropsTruncates(t *testing.T) {
	x := newENRS(t, nil)
	hb := &connectors.Record{Topic: "__debezium-heartbeat.srv", ValueSchema: &connectors.Schema{Type: connectors.Struct, Name: "io.debezium.connector.common.Heartbeat"},
		Value: connectors.NewStruct(&connectors.Schema{Type: connectors.Struct, Name: "io.debezium.connector.common.Heartbeat"})}
	if out, err := x.Apply(hb); err != nil || out != hb {
		t.Fatalf("heartbeat: %v %v", out, err)
	}
	if out, err := x.Apply(enrsEvent("t", nil, nil)); err != nil || out != nil {
		t.Fatalf("truncate: %v %v", out, err)
	}
}

func TestExtractNewRecordStateRouteByField(t *testing.T) {
	x := newENRS(t, map[string]string{"route.by.field": "name"})
	out, err := x.Apply(enrsEvent("c", nil, enrsRowOf(1, "elsewhere")))
	if err != nil || out.Topic != "elsewhere" {
		t.Fatalf("topic %v, %v", out.Topic, err)
	}
}
