package postgres_test

import (
	"strconv"
	"strings"
	"testing"

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
