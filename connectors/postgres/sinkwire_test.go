package postgres_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// TestSinkFailedStatementRollsBackWrite: a Write's statements are one
// transaction even though they travel as one pipeline. A statement that
// fails after others succeeded (another table's, in the same Write) takes
// them back, the error names it, and the task's connection goes on working.
func TestSinkFailedStatementRollsBackWrite(t *testing.T) {
	s := pgtest.Start(t)
	task := openSink(t, sinkConfig(s, "topics", "t,u", "auto.create", "true", "pk.mode", "record_value", "pk.fields", "id", "batch.size", "2"))
	mustWrite(t, task, rec(nil, nil, person(5, "eve", nil)))
	inU := func(id int64, name string) *connectors.SinkRecord {
		r := rec(nil, nil, person(id, name, nil))
		r.Topic = "u"
		return r
	}
	mustWrite(t, task, inU(9, "zed"))
	// Table u gets two statements (batch.size 2), then table t's second
	// statement hits the existing key 5.
	err := write(task, inU(1, "ann"), inU(2, "bob"), inU(3, "cy"),
		rec(nil, nil, person(6, "fay", nil)), rec(nil, nil, person(7, "gus", nil)), rec(nil, nil, person(5, "eve again", nil)))
	if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), "duplicate key") ||
		!strings.Contains(err.Error(), "insert of 1 rows into table t") {
		t.Fatalf("Write with a duplicate key in its last statement: %v", err)
	}
	conn := s.Conn(t)
	wantRows(t, textRows(t, conn, "t", "id", "id", "name"), "5|eve\n")
	wantRows(t, textRows(t, conn, "u", "id", "id", "name"), "9|zed\n")
	mustWrite(t, task, inU(1, "ann"), rec(nil, nil, person(6, "fay", nil)))
	wantRows(t, textRows(t, conn, "t", "id", "id", "name"), "5|eve\n6|fay\n")
	wantRows(t, textRows(t, conn, "u", "id", "id", "name"), "1|ann\n9|zed\n")
}

// TestSinkTextValuesExact: values travel as binary text[] parameters; every
// string arrives byte for byte, the empty string stays apart from NULL, and
// characters that mean something in array or SQL literals mean nothing.
func TestSinkTextValuesExact(t *testing.T) {
	s := pgtest.Start(t)
	schema := connectors.StructSchema("note",
		connectors.Field{Name: "id", Schema: connectors.Int64Schema},
		connectors.Field{Name: "body", Schema: connectors.StringSchema.Optionally()},
	)
	bodies := []any{"", nil, `a"b`, `\`, `{x,y}`, "NULL", "it's", "日本語 ✓", strings.Repeat("x", 70000), " padded "}
	var recs []*connectors.SinkRecord
	for i, b := range bodies {
		recs = append(recs, rec(nil, nil, connectors.NewStruct(schema).MustSet("id", int64(i)).MustSet("body", b)))
	}
	for _, mode := range []string{"insert", "upsert"} {
		task := openSink(t, sinkConfig(s, "auto.create", "true", "insert.mode", mode, "pk.mode", "record_value",
			"pk.fields", "id", "table.name.format", "notes_"+mode))
		mustWrite(t, task, recs...)
		rows := query(t, s.Conn(t), "SELECT id, body IS NULL, coalesce(body, '') FROM notes_"+mode+" ORDER BY id")
		if len(rows) != len(bodies) {
			t.Fatalf("%s: %d rows, want %d", mode, len(rows), len(bodies))
		}
		for i, b := range bodies {
			want := []string{strconv.Itoa(i), "false", ""}
			if b == nil {
				want[1] = "true"
			} else {
				want[2] = b.(string)
			}
			if strings.Join(rows[i], "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("%s: row %d is %q, want %q", mode, i, rows[i], want)
			}
		}
	}
}

// TestSinkBinaryWires: values whose Connect type is exactly their column's
// type travel in its binary form; what the table holds is what the text
// form gave: extreme integers, float specials, booleans, NULLs, and
// timestamps as wall time in db.timezone (timestamp) or as the instant
// (timestamptz), truncated to microseconds.
func TestSinkBinaryWires(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, `CREATE TABLE wires (id bigint PRIMARY KEY, i4 integer, i2 smallint, f8 double precision, b boolean,
		ts timestamp, tz timestamptz)`)
	tsSchema := &connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical, Optional: true}
	schema := connectors.StructSchema("wires",
		connectors.Field{Name: "id", Schema: connectors.Int64Schema},
		connectors.Field{Name: "i4", Schema: connectors.Int32Schema.Optionally()},
		connectors.Field{Name: "i2", Schema: connectors.Int16Schema.Optionally()},
		connectors.Field{Name: "f8", Schema: connectors.Float64Schema.Optionally()},
		connectors.Field{Name: "b", Schema: connectors.BooleanSchema.Optionally()},
		connectors.Field{Name: "ts", Schema: tsSchema},
		connectors.Field{Name: "tz", Schema: tsSchema},
	)
	at := time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)
	old := time.Date(1901, 12, 13, 20, 45, 52, 999999999, time.UTC)
	row := func(id int64, i4, i2, f8, b, ts, tz any) *connectors.SinkRecord {
		return rec(nil, nil, connectors.NewStruct(schema).MustSet("id", id).MustSet("i4", i4).MustSet("i2", i2).
			MustSet("f8", f8).MustSet("b", b).MustSet("ts", ts).MustSet("tz", tz))
	}
	task := openSink(t, sinkConfig(s, "table.name.format", "wires", "insert.mode", "upsert", "pk.mode", "record_value",
		"pk.fields", "id", "db.timezone", "America/New_York"))
	mustWrite(t, task,
		row(math.MinInt64, int32(math.MinInt32), int16(math.MinInt16), math.Inf(-1), false, at, at),
		row(0, nil, nil, nil, nil, nil, nil),
		row(math.MaxInt64, int32(math.MaxInt32), int16(math.MaxInt16), 0.1, true, old, old),
		row(7, int32(-1), int16(-1), math.NaN(), true, at, at),
		// The same key again: the later record wins.
		row(7, int32(1), int16(1), 1e300, false, old, at),
	)
	conn := s.Conn(t)
	got := textRows(t, conn, "wires", "id", "id", "i4", "i2", "f8", "b", "ts")
	want := "-9223372036854775808|-2147483648|-32768|-Infinity|false|2024-01-01 22:04:05.123456\n" +
		"0|NULL|NULL|NULL|NULL|NULL\n" +
		"7|1|1|1e+300|false|1901-12-13 15:45:52.999999\n" +
		"9223372036854775807|2147483647|32767|0.1|true|1901-12-13 15:45:52.999999\n"
	wantRows(t, got, want)
	tz := query(t, conn, "SELECT coalesce(to_char(tz AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), 'NULL') FROM wires ORDER BY id")
	if fmt.Sprint(tz) != "[[2024-01-02 03:04:05.123456] [NULL] [2024-01-02 03:04:05.123456] [1901-12-13 20:45:52.999999]]" {
		t.Fatalf("timestamptz column holds %v", tz)
	}
}

// TestSinkWireFollowsSchema: one field, one column, two schemas over time:
// an int64 travels as int8, a string as text cast to bigint. They share a
// layout (same column names) but not a statement.
func TestSinkWireFollowsSchema(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE n (id bigint PRIMARY KEY)")
	task := openSink(t, sinkConfig(s, "table.name.format", "n", "pk.mode", "record_value", "pk.fields", "id"))
	asInt := connectors.StructSchema("n", connectors.Field{Name: "id", Schema: connectors.Int64Schema})
	asString := connectors.StructSchema("n", connectors.Field{Name: "id", Schema: connectors.StringSchema})
	mustWrite(t, task,
		rec(nil, nil, connectors.NewStruct(asInt).MustSet("id", int64(1))),
		rec(nil, nil, connectors.NewStruct(asString).MustSet("id", "2")),
		rec(nil, nil, connectors.NewStruct(asInt).MustSet("id", int64(3))),
	)
	wantRows(t, textRows(t, s.Conn(t), "n", "id", "id"), "1\n2\n3\n")
}
