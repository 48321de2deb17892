package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/connectors/postgres"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// Generous: two shared cores, and other engineers' tests on them.
const sinkTimeout = 60 * time.Second

// sinkConfig is a minimal valid config for the database of s.
func sinkConfig(s *pgtest.Server, kv ...string) map[string]string {
	cfg := map[string]string{
		"connector.class": postgres.SinkClass,
		"topics":          "t",
		"connection.url":  s.JDBCURL(),
	}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	return cfg
}

// openSink opens a task on cfg as the runtime would, closed when t ends.
func openSink(t *testing.T, cfg map[string]string) *postgres.SinkTask {
	t.Helper()
	c := &postgres.JdbcSinkConnector{}
	if errs := c.ValidateConfig(cfg); len(errs) > 0 {
		t.Fatalf("ValidateConfig: %v", errs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	if err := c.Start(ctx, conformance.NewConnectorContext(t, "pg-sink"), cfg); err != nil {
		t.Fatalf("Start: %v", err)
	}
	tcs, err := c.TaskConfigs(ctx, 1)
	if err != nil || len(tcs) != 1 {
		t.Fatalf("TaskConfigs: %v, %v", tcs, err)
	}
	task := c.NewTask().(*postgres.SinkTask)
	if err := task.Open(ctx, conformance.NewSinkContext(t, "pg-sink", 0), tcs[0]); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := task.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return task
}

func write(task *postgres.SinkTask, recs ...*connectors.SinkRecord) error {
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	return task.Write(ctx, recs)
}

func mustWrite(t *testing.T, task *postgres.SinkTask, recs ...*connectors.SinkRecord) {
	t.Helper()
	if err := write(task, recs...); err != nil {
		t.Fatalf("Write of %d records: %v", len(recs), err)
	}
}

// query returns every row of sql with each column as text ("NULL" for
// null), so tests compare what PostgreSQL stored, spelled as it spells it.
func query(t testing.TB, conn *pgx.Conn, sql string, args ...any) [][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		row := make([]string, len(vals))
		raw := rows.RawValues()
		for i := range vals {
			if raw[i] == nil {
				row[i] = "NULL"
			} else {
				row[i] = fmt.Sprint(vals[i])
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// textRows is query with every column cast to text by PostgreSQL itself.
func textRows(t testing.TB, conn *pgx.Conn, table, order string, cols ...string) string {
	t.Helper()
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = "coalesce(" + pgx.Identifier{c}.Sanitize() + "::text, 'NULL')"
	}
	rows := query(t, conn, "SELECT "+strings.Join(sel, ", ")+" FROM "+pgx.Identifier{table}.Sanitize()+" ORDER BY "+order)
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(strings.Join(r, "|"))
		b.WriteByte('\n')
	}
	return b.String()
}

func wantRows(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("table holds\n%s\nwant\n%s", got, want)
	}
}

var personSchema = connectors.StructSchema("person",
	connectors.Field{Name: "id", Schema: connectors.Int64Schema},
	connectors.Field{Name: "name", Schema: connectors.StringSchema},
	connectors.Field{Name: "age", Schema: connectors.Int32Schema.Optionally()},
)

func person(id int64, name string, age any) *connectors.StructValue {
	return connectors.NewStruct(personSchema).MustSet("id", id).MustSet("name", name).MustSet("age", age)
}

var offsetSeq int64

// rec is a record of topic t with a struct value; key may be nil.
func rec(key any, keySchema *connectors.Schema, value *connectors.StructValue) *connectors.SinkRecord {
	offsetSeq++
	r := &connectors.SinkRecord{Topic: "t", Partition: 0, Offset: offsetSeq, Key: key, KeySchema: keySchema}
	if value != nil {
		r.Value, r.ValueSchema = value, value.Schema
	}
	return r
}

func TestSinkConformance(t *testing.T) {
	valueSchema := connectors.StructSchema("conf",
		connectors.Field{Name: "i", Schema: connectors.Int32Schema},
		connectors.Field{Name: "label", Schema: connectors.StringSchema},
	)
	readBack := func(t *testing.T, cfg map[string]string) []int {
		conn := connect(t, cfg["connection.url"])
		if query(t, conn, "SELECT to_regclass('conformance') IS NULL")[0][0] == "true" {
			return nil
		}
		var out []int
		for _, row := range query(t, conn, "SELECT i, label FROM conformance ORDER BY i") {
			i, _ := strconv.Atoi(row[0])
			if row[1] != "record-"+row[0] {
				t.Fatalf("row %v: label does not match", row)
			}
			out = append(out, i)
		}
		return out
	}
	record := func(i int) *connectors.SinkRecord {
		v := connectors.NewStruct(valueSchema).MustSet("i", int32(i)).MustSet("label", fmt.Sprintf("record-%d", i))
		return &connectors.SinkRecord{ValueSchema: valueSchema, Value: v}
	}
	for _, mode := range []struct{ name, insert, pk, fields string }{
		{"upsert", "upsert", "record_value", "i"},
		{"insert", "insert", "none", ""},
	} {
		t.Run(mode.name, func(t *testing.T) {
			conformance.RunSink(t, conformance.SinkHarness{
				Plugin: postgres.SinkPlugin(),
				Config: func(t *testing.T) map[string]string {
					s := pgtest.Start(t)
					cfg := map[string]string{
						"connection.url":    s.JDBCURL(),
						"insert.mode":       mode.insert,
						"pk.mode":           mode.pk,
						"auto.create":       "true",
						"table.name.format": "conformance",
					}
					if mode.fields != "" {
						cfg["pk.fields"] = mode.fields
					}
					return cfg
				},
				Record:   record,
				ReadBack: readBack,
				BrokenTaskConfig: func(t *testing.T, valid map[string]string) map[string]string {
					valid["insert.mode"] = "merge"
					return valid
				},
				Timeout: sinkTimeout,
			})
		})
	}
}

// connect opens a connection with the sink's own URL handling, closed when
// t ends.
func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	conn, err := postgres.Connect(ctx, postgres.ConnSettings{URL: url})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestSinkInsertModeNoKey(t *testing.T) {
	s := pgtest.Start(t)
	task := openSink(t, sinkConfig(s, "auto.create", "true", "table.name.format", "people"))
	mustWrite(t, task, rec(nil, nil, person(1, "ann", int32(30))), rec(nil, nil, person(2, "bob", nil)))
	// insert mode without a key writes what it gets, a repeat included.
	mustWrite(t, task, rec(nil, nil, person(1, "ann", int32(30))))
	conn := s.Conn(t)
	wantRows(t, textRows(t, conn, "people", "id, name", "id", "name", "age"), "1|ann|30\n1|ann|30\n2|bob|NULL\n")
	if n := query(t, conn, `SELECT count(*) FROM pg_constraint WHERE conrelid = 'people'::regclass AND contype = 'p'`)[0][0]; n != "0" {
		t.Fatalf("pk.mode none created a primary key")
	}
	nulls := query(t, conn, `SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = 'people'::regclass AND attnum > 0 ORDER BY attnum`)
	if fmt.Sprint(nulls) != "[[id true] [name true] [age false]]" {
		t.Fatalf("NOT NULL follows optional: got %v", nulls)
	}
}

func TestSinkInsertModeDuplicateKeyFails(t *testing.T) {
	s := pgtest.Start(t)
	task := openSink(t, sinkConfig(s, "auto.create", "true", "pk.mode", "record_value", "pk.fields", "id"))
	mustWrite(t, task, rec(nil, nil, person(1, "ann", nil)))
	err := write(task, rec(nil, nil, person(1, "ann again", nil)))
	if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("insert of an existing key: %v, want a permanent duplicate key error", err)
	}
}

func TestSinkUpsertRecordValue(t *testing.T) {
	s := pgtest.Start(t)
	task := openSink(t, sinkConfig(s, "auto.create", "true", "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id"))
	mustWrite(t, task,
		rec(nil, nil, person(1, "ann", int32(30))),
		rec(nil, nil, person(2, "bob", nil)),
		// Twice in one batch: the later record wins.
		rec(nil, nil, person(1, "ann b", int32(31))),
	)
	mustWrite(t, task, rec(nil, nil, person(2, "bob b", int32(40))), rec(nil, nil, person(3, "cy", nil)))
	conn := s.Conn(t)
	wantRows(t, textRows(t, conn, "t", "id", "id", "name", "age"), "1|ann b|31\n2|bob b|40\n3|cy|NULL\n")
	pk := query(t, conn, `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = 't'::regclass AND i.indisprimary`)
	if fmt.Sprint(pk) != "[[id]]" {
		t.Fatalf("primary key %v, want [id]", pk)
	}
}

// TestSinkUpsertRedelivery is the guarantee the runtime's retries rely on:
// a batch written again (after a failure the task cannot see past, such as
// a lost COMMIT answer) leaves the table as if it was written once.
func TestSinkUpsertRedelivery(t *testing.T) {
	s := pgtest.Start(t)
	task := openSink(t, sinkConfig(s, "auto.create", "true", "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id"))
	var batch []*connectors.SinkRecord
	for i := range 50 {
		batch = append(batch, rec(nil, nil, person(int64(i%20), fmt.Sprintf("v%d", i), int32(i))))
	}
	mustWrite(t, task, batch...)
	conn := s.Conn(t)
	once := textRows(t, conn, "t", "id", "id", "name", "age")
	for range 2 {
		mustWrite(t, task, batch...)
	}
	// And once more from a new task, as after a restart.
	mustWrite(t, openSink(t, sinkConfig(s, "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id")), batch...)
	wantRows(t, textRows(t, conn, "t", "id", "id", "name", "age"), once)
	if n := len(strings.Split(strings.TrimSpace(once), "\n")); n != 20 {
		t.Fatalf("%d rows, want 20", n)
	}
	if !strings.HasPrefix(once, "0|v40|40\n") {
		t.Fatalf("the last record of a key must win: %q", once)
	}
}

func TestSinkRecordKeyPrimitive(t *testing.T) {
	s := pgtest.Start(t)
	task := openSink(t, sinkConfig(s, "auto.create", "true", "insert.mode", "upsert", "pk.mode", "record_key", "pk.fields", "key"))
	mustWrite(t, task,
		rec("k1", connectors.StringSchema, person(1, "ann", nil)),
		rec("k2", connectors.StringSchema, person(2, "bob", nil)),
	)
	mustWrite(t, task, rec("k1", connectors.StringSchema, person(10, "ann b", nil)))
	wantRows(t, textRows(t, s.Conn(t), "t", "key", "key", "id", "name"), "k1|10|ann b\nk2|2|bob\n")

	// A primitive key needs exactly one column name.
	for _, fields := range []string{"", "a,b"} {
		cfg := sinkConfig(s, "auto.create", "true", "pk.mode", "record_key", "table.name.format", "other")
		if fields != "" {
			cfg["pk.fields"] = fields
		}
		err := write(openSink(t, cfg), rec(int64(7), connectors.Int64Schema, person(1, "x", nil)))
		if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), "exactly one pk.fields") {
			t.Fatalf("pk.fields %q with a primitive key: %v", fields, err)
		}
	}
}

func TestSinkRecordKeyStructAndDelete(t *testing.T) {
	s := pgtest.Start(t)
	keySchema := connectors.StructSchema("key",
		connectors.Field{Name: "region", Schema: connectors.StringSchema},
		connectors.Field{Name: "id", Schema: connectors.Int64Schema},
	)
	key := func(region string, id int64) *connectors.StructValue {
		return connectors.NewStruct(keySchema).MustSet("region", region).MustSet("id", id)
	}
	task := openSink(t, sinkConfig(s, "auto.create", "true", "insert.mode", "upsert", "pk.mode", "record_key", "delete.enabled", "true"))
	// The key's id wins over the value's field of the same name.
	mustWrite(t, task,
		rec(key("eu", 1), keySchema, person(100, "ann", nil)),
		rec(key("us", 1), keySchema, person(100, "bob", nil)),
		rec(key("eu", 2), keySchema, person(100, "cy", nil)),
	)
	conn := s.Conn(t)
	wantRows(t, textRows(t, conn, "t", "region, id", "region", "id", "name"), "eu|1|ann\neu|2|cy\nus|1|bob\n")
	// Tombstones delete by key, in record order with the writes around
	// them; one of a key that is not there deletes nothing.
	mustWrite(t, task,
		rec(key("eu", 1), keySchema, nil),
		rec(key("eu", 2), keySchema, nil),
		rec(key("eu", 2), keySchema, person(0, "cy again", nil)),
		rec(key("zz", 9), keySchema, nil),
	)
	wantRows(t, textRows(t, conn, "t", "region, id", "region", "id", "name"), "eu|2|cy again\nus|1|bob\n")

	// Deletes only, on a table that does not exist: nothing to do.
	other := sinkConfig(s, "insert.mode", "upsert", "pk.mode", "record_key", "delete.enabled", "true", "table.name.format", "absent")
	mustWrite(t, openSink(t, other), rec(key("eu", 1), keySchema, nil))

	// Without delete.enabled a tombstone fails the task, as with Confluent.
	noDelete := openSink(t, sinkConfig(s, "insert.mode", "upsert", "pk.mode", "record_key"))
	err := write(noDelete, rec(key("us", 1), keySchema, nil))
	if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), "delete.enabled") {
		t.Fatalf("tombstone without delete.enabled: %v", err)
	}
	wantRows(t, textRows(t, conn, "t", "region, id", "region", "id", "name"), "eu|2|cy again\nus|1|bob\n")
}

func TestSinkPKModeKafka(t *testing.T) {
	s := pgtest.Start(t)
	task := openSink(t, sinkConfig(s, "auto.create", "true", "insert.mode", "upsert", "pk.mode", "kafka"))
	r1 := &connectors.SinkRecord{Topic: "t", Partition: 3, Offset: 41, Value: person(1, "ann", nil), ValueSchema: personSchema}
	r2 := &connectors.SinkRecord{Topic: "t", Partition: 3, Offset: 42, Value: person(1, "ann", nil), ValueSchema: personSchema}
	mustWrite(t, task, r1, r2)
	mustWrite(t, task, r1) // redelivered: same coordinates, same row
	wantRows(t, textRows(t, s.Conn(t), "t", "__connect_offset", "__connect_topic", "__connect_partition", "__connect_offset", "id", "name"),
		"t|3|41|1|ann\nt|3|42|1|ann\n")

	custom := openSink(t, sinkConfig(s, "auto.create", "true", "pk.mode", "kafka", "pk.fields", "tp,pt,off", "table.name.format", "k2"))
	mustWrite(t, custom, r1)
	wantRows(t, textRows(t, s.Conn(t), "k2", "off", "tp", "pt", "off", "name"), "t|3|41|ann\n")
}

func TestSinkUpdateMode(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, `CREATE TABLE t (id bigint PRIMARY KEY, name text NOT NULL, age integer)`)
	s.Exec(t, `INSERT INTO t VALUES (1, 'ann', 30), (2, 'bob', 40)`)
	task := openSink(t, sinkConfig(s, "insert.mode", "update", "pk.mode", "record_value", "pk.fields", "id"))
	// The row of id 3 does not exist: update mode leaves it so.
	mustWrite(t, task, rec(nil, nil, person(2, "bob b", nil)), rec(nil, nil, person(3, "cy", int32(1))))
	wantRows(t, textRows(t, s.Conn(t), "t", "id", "id", "name", "age"), "1|ann|30\n2|bob b|NULL\n")
}

func TestSinkUpdateModeKafkaKeyAndWhitelist(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, `CREATE TABLE t (id bigint PRIMARY KEY, name text, age integer)`)
	s.Exec(t, `INSERT INTO t VALUES (1, 'ann', 30)`)
	// fields.whitelist leaves age alone.
	task := openSink(t, sinkConfig(s, "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id", "fields.whitelist", "name"))
	mustWrite(t, task, rec(nil, nil, person(1, "ann b", int32(99))), rec(nil, nil, person(2, "bob", int32(99))))
	wantRows(t, textRows(t, s.Conn(t), "t", "id", "id", "name", "age"), "1|ann b|30\n2|bob|NULL\n")
}

func TestSinkAutoCreateTypes(t *testing.T) {
	s := pgtest.Start(t)
	dec := &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Parameters: map[string]string{"scale": "2"}}
	ts := &connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical}
	date := &connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical}
	tm := &connectors.Schema{Type: connectors.Int32, Name: connectors.TimeLogical}
	schema := connectors.StructSchema("all",
		connectors.Field{Name: "id", Schema: connectors.Int32Schema},
		connectors.Field{Name: "i8", Schema: connectors.Int8Schema},
		connectors.Field{Name: "i16", Schema: connectors.Int16Schema},
		connectors.Field{Name: "i64", Schema: connectors.Int64Schema},
		connectors.Field{Name: "f32", Schema: connectors.Float32Schema},
		connectors.Field{Name: "f64", Schema: connectors.Float64Schema},
		connectors.Field{Name: "b", Schema: connectors.BooleanSchema},
		connectors.Field{Name: "s", Schema: connectors.StringSchema},
		connectors.Field{Name: "raw", Schema: connectors.BytesSchema},
		connectors.Field{Name: "price", Schema: dec},
		connectors.Field{Name: "at", Schema: ts},
		connectors.Field{Name: "day", Schema: date},
		connectors.Field{Name: "tod", Schema: tm},
		connectors.Field{Name: "opt", Schema: connectors.OptionalStringSchema},
	)
	v := connectors.NewStruct(schema).
		MustSet("id", int32(1)).MustSet("i8", int8(-8)).MustSet("i16", int16(1600)).MustSet("i64", int64(1)<<40).
		MustSet("f32", float32(1.5)).MustSet("f64", 3.25).MustSet("b", true).MustSet("s", "it's \"quoted\", ünïcode").
		MustSet("raw", []byte{0, 1, 0xfe}).MustSet("price", big.NewRat(12345, 100)).
		MustSet("at", time.Date(2024, 2, 29, 13, 14, 15, 678e6, time.UTC)).
		MustSet("day", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)).
		MustSet("tod", time.UnixMilli((13*3600+14*60+15)*1000+5).UTC())
	task := openSink(t, sinkConfig(s, "auto.create", "true", "pk.mode", "record_value", "pk.fields", "id"))
	mustWrite(t, task, &connectors.SinkRecord{Topic: "t", Value: v, ValueSchema: schema})
	conn := s.Conn(t)
	types := query(t, conn, `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 't' ORDER BY ordinal_position`)
	want := "[[id integer] [i8 smallint] [i16 smallint] [i64 bigint] [f32 real] [f64 double precision] [b boolean] [s text] [raw bytea] " +
		"[price numeric] [at timestamp without time zone] [day date] [tod time without time zone] [opt text]]"
	if fmt.Sprint(types) != want {
		t.Fatalf("column types\n%v\nwant\n%s", types, want)
	}
	names := []string{"id", "i8", "i16", "i64", "f32", "f64", "b", "s", "raw", "price", "at", "day", "tod", "opt"}
	wantRows(t, textRows(t, conn, "t", "id", names...),
		`1|-8|1600|1099511627776|1.5|3.25|true|it's "quoted", ünïcode|\x0001fe|123.45|2024-02-29 13:14:15.678|2024-02-29|13:14:15.005|NULL`+"\n")

	// db.timezone: a Timestamp lands as the wall time of that zone in a
	// column without a time zone.
	ny := openSink(t, sinkConfig(s, "auto.create", "true", "table.name.format", "ny", "db.timezone", "America/New_York"))
	mustWrite(t, ny, &connectors.SinkRecord{Topic: "t", Value: v, ValueSchema: schema})
	wantRows(t, textRows(t, conn, "ny", "id", "at"), "2024-02-29 08:14:15.678\n")
}

// TestSinkExistingColumnTypes writes into a table made by hand, whose
// column types differ from what auto.create would pick: values are cast to
// each column's type, and the column's own limits apply.
func TestSinkExistingColumnTypes(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, `CREATE TABLE t (id integer PRIMARY KEY, name varchar(5), age numeric(5,1), at timestamptz)`)
	schema := connectors.StructSchema("v",
		connectors.Field{Name: "id", Schema: connectors.Int64Schema},
		connectors.Field{Name: "name", Schema: connectors.StringSchema},
		connectors.Field{Name: "age", Schema: connectors.Float64Schema},
		connectors.Field{Name: "at", Schema: &connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical}},
	)
	val := func(id int64, name string) *connectors.SinkRecord {
		v := connectors.NewStruct(schema).MustSet("id", id).MustSet("name", name).MustSet("age", 12.25).
			MustSet("at", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
		return &connectors.SinkRecord{Topic: "t", Value: v, ValueSchema: schema}
	}
	task := openSink(t, sinkConfig(s, "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id", "db.timezone", "Asia/Tokyo"))
	mustWrite(t, task, val(1, "ann"))
	conn := s.Conn(t)
	if got := query(t, conn, `SELECT id, name, age::text, at = '2024-01-02 03:04:05+00' FROM t`); fmt.Sprint(got) != "[[1 ann 12.3 true]]" {
		t.Fatalf("row %v", got)
	}
	// varchar(5) is a limit, not a truncation.
	err := write(task, val(2, "too long"))
	if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("a value over varchar(5): %v", err)
	}
}

func TestSinkAutoEvolve(t *testing.T) {
	s := pgtest.Start(t)
	cfg := sinkConfig(s, "auto.create", "true", "auto.evolve", "true", "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id")
	task := openSink(t, cfg)
	mustWrite(t, task, rec(nil, nil, person(1, "ann", int32(30))))
	v2 := connectors.StructSchema("person",
		connectors.Field{Name: "id", Schema: connectors.Int64Schema},
		connectors.Field{Name: "name", Schema: connectors.StringSchema},
		connectors.Field{Name: "email", Schema: connectors.OptionalStringSchema},
		connectors.Field{Name: "score", Schema: connectors.Float64Schema},
	)
	r2 := connectors.NewStruct(v2).MustSet("id", int64(2)).MustSet("name", "bob").MustSet("email", "b@x").MustSet("score", 1.5)
	// Old and new schema in one batch.
	mustWrite(t, task, rec(nil, nil, person(3, "cy", nil)), &connectors.SinkRecord{Topic: "t", Value: r2, ValueSchema: v2})
	conn := s.Conn(t)
	wantRows(t, textRows(t, conn, "t", "id", "id", "name", "age", "email", "score"), "1|ann|30|NULL|NULL\n2|bob|NULL|b@x|1.5\n3|cy|NULL|NULL|NULL\n")
	// Added columns are nullable, even for a required field: older rows
	// have no value.
	if got := query(t, conn, `SELECT attname, attnotnull, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = 't'::regclass AND attname IN ('email', 'score') ORDER BY attname`); fmt.Sprint(got) != "[[email false text] [score false double precision]]" {
		t.Fatalf("added columns %v", got)
	}
}

func TestSinkMissingTableOrColumn(t *testing.T) {
	s := pgtest.Start(t)
	task := openSink(t, sinkConfig(s, "pk.mode", "record_value", "pk.fields", "id", "table.name.format", "app.${topic}_rows"))
	err := write(task, rec(nil, nil, person(1, "ann", nil)))
	if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), "table app.t_rows does not exist and auto.create is false") {
		t.Fatalf("missing table: %v", err)
	}
	s.Exec(t, `CREATE SCHEMA app`)
	s.Exec(t, `CREATE TABLE app.t_rows (id bigint PRIMARY KEY, name text)`)
	err = write(task, rec(nil, nil, person(1, "ann", nil)))
	if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), `table app.t_rows has no column "age" and auto.evolve is false`) {
		t.Fatalf("missing column: %v", err)
	}
	// The task keeps no stale view of the table: once the column is
	// there, the same records go through.
	s.Exec(t, `ALTER TABLE app.t_rows ADD COLUMN age integer`)
	mustWrite(t, task, rec(nil, nil, person(1, "ann", nil)))
	if got := query(t, s.Conn(t), `SELECT id, name FROM app.t_rows`); fmt.Sprint(got) != "[[1 ann]]" {
		t.Fatalf("rows %v", got)
	}
}

func TestSinkUnmappableType(t *testing.T) {
	s := pgtest.Start(t)
	schema := connectors.StructSchema("v",
		connectors.Field{Name: "id", Schema: connectors.Int64Schema},
		connectors.Field{Name: "tags", Schema: &connectors.Schema{Type: connectors.Array, Items: connectors.StringSchema}},
	)
	v := connectors.NewStruct(schema).MustSet("id", int64(1)).MustSet("tags", []any{"a"})
	task := openSink(t, sinkConfig(s, "auto.create", "true"))
	err := write(task, &connectors.SinkRecord{Topic: "t", Value: v, ValueSchema: schema})
	if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), `table t, column "tags": no PostgreSQL column type for Connect type array`) {
		t.Fatalf("array field: %v", err)
	}
}

// TestSinkSchemaless writes JsonConverter's schemaless values (maps) into
// tables that exist; a json column takes a nested object.
func TestSinkSchemaless(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, `CREATE TABLE t (id bigint PRIMARY KEY, name text, score double precision, ok boolean, extra jsonb)`)
	task := openSink(t, sinkConfig(s, "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id"))
	m := func(kv ...any) *connectors.SinkRecord {
		v := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			v[kv[i].(string)] = kv[i+1]
		}
		return &connectors.SinkRecord{Topic: "t", Value: v}
	}
	mustWrite(t, task,
		m("id", int64(1), "name", "ann", "score", 1.25, "ok", true),
		m("id", int64(2), "name", nil, "extra", map[string]any{"a": []any{int64(1), "x"}}),
		m("id", int64(1), "name", "ann b"),
	)
	wantRows(t, textRows(t, s.Conn(t), "t", "id", "id", "name", "score", "ok", "extra"),
		"1|ann b|1.25|true|NULL\n2|NULL|NULL|NULL|{\"a\": [1, \"x\"]}\n")

	// A key the table lacks cannot be added without a schema.
	evolve := openSink(t, sinkConfig(s, "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id", "auto.evolve", "true"))
	err := write(evolve, m("id", int64(3), "color", "red"))
	if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), `table t has no column "color"`) {
		t.Fatalf("schemaless record with a new field: %v", err)
	}
	// Nor can a table be created.
	create := openSink(t, sinkConfig(s, "auto.create", "true", "table.name.format", "fresh"))
	err = write(create, m("id", int64(3)))
	if err == nil || !strings.Contains(err.Error(), "table fresh does not exist, and auto.create cannot create it from records without a schema") {
		t.Fatalf("schemaless record, missing table: %v", err)
	}
}

// TestSinkDatabaseRestart takes the database away in the middle of a
// stream: writes fail with retriable errors (the runtime retries them with
// backoff), and once the database is back the same batches go through with
// nothing lost and nothing written twice.
func TestSinkDatabaseRestart(t *testing.T) {
	s := pgtest.StartPrivate(t)
	// Two connection attempts 100 ms apart per Write (Confluent's
	// default is 3, 10 s apart), so that the test is quick and still sees
	// the attempts fail.
	task := openSink(t, sinkConfig(s, "auto.create", "true", "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id",
		"connection.attempts", "2", "connection.backoff.ms", "100"))
	batch := func(from int) []*connectors.SinkRecord {
		var out []*connectors.SinkRecord
		for i := from; i < from+100; i++ {
			out = append(out, rec(nil, nil, person(int64(i), fmt.Sprintf("n%d", i), int32(i))))
		}
		return out
	}
	mustWrite(t, task, batch(0)...)

	s.Stop()
	var failures int
	for from := 100; from < 300; from += 100 {
		err := write(task, batch(from)...)
		if err == nil {
			t.Fatalf("write with the database stopped succeeded")
		}
		if !connectors.IsRetriable(err) {
			t.Fatalf("write with the database stopped: %v is not retriable", err)
		}
		failures++
		t.Logf("database down: %v", err)
	}
	s.Start()
	// As the runtime's retry loop: the failed batches again, in order,
	// one of them twice.
	for _, from := range []int{100, 200, 200, 300} {
		deadline := time.Now().Add(sinkTimeout)
		for {
			err := write(task, batch(from)...)
			if err == nil {
				break
			}
			if !connectors.IsRetriable(err) || time.Now().After(deadline) {
				t.Fatalf("write after the database came back: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	got := query(t, s.Conn(t), `SELECT count(*), count(DISTINCT id), min(id), max(id), sum(age) FROM t`)
	if want := fmt.Sprint([][]string{{"400", "400", "0", "399", strconv.Itoa(399 * 400 / 2)}}); fmt.Sprint(got) != want {
		t.Fatalf("after the restart: %v, want %v", got, want)
	}
	if failures == 0 {
		t.Fatal("no write failed while the database was down")
	}
}

func TestSinkValidateConfig(t *testing.T) {
	s := pgtest.Start(t)
	c := &postgres.JdbcSinkConnector{}
	for _, tc := range []struct {
		name string
		kv   []string
		key  string // the key the error must be on; "" for none
		msg  string
	}{
		{"valid", []string{"insert.mode", "upsert", "pk.mode", "record_value"}, "", ""},
		{"upsert without key", []string{"insert.mode", "upsert"}, "pk.mode", "upsert needs"},
		{"update without key", []string{"insert.mode", "update", "pk.mode", "none"}, "pk.mode", "update needs"},
		{"bad insert mode", []string{"insert.mode", "merge"}, "insert.mode", "must be one of"},
		{"bad pk mode", []string{"pk.mode", "key"}, "pk.mode", "must be one of"},
		{"delete needs record_key", []string{"delete.enabled", "true", "pk.mode", "record_value"}, "delete.enabled", "record_key"},
		{"kafka needs 3 fields", []string{"pk.mode", "kafka", "pk.fields", "a,b"}, "pk.fields", "exactly 3"},
		{"none takes no fields", []string{"pk.fields", "id"}, "pk.fields", "must be empty"},
		{"bad time zone", []string{"db.timezone", "Mars/Olympus"}, "db.timezone", "unknown time zone"},
		{"bad batch size", []string{"batch.size", "0"}, "batch.size", "at least 1"},
		{"wrong password", []string{"connection.url", strings.Replace(s.URL(), "postgres://", "postgres://nosuchrole:pw@", 1)}, "", "cannot connect"},
		{"nothing listening", []string{"connection.url", "jdbc:postgresql://127.0.0.1:1/db"}, "connection.url", "cannot connect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := c.ValidateConfig(sinkConfig(s, tc.kv...))
			if tc.msg == "" {
				if len(errs) > 0 {
					t.Fatalf("errors %v", errs)
				}
				return
			}
			var on []string
			for k, msgs := range errs {
				for _, m := range msgs {
					if strings.Contains(m, tc.msg) {
						on = append(on, k)
					}
				}
			}
			if len(on) == 0 || (tc.key != "" && !slices.Contains(on, tc.key)) {
				t.Fatalf("errors %v: want %q on %q", errs, tc.msg, tc.key)
			}
		})
	}
}

// TestSinkCanceledWrite checks that a Write stopped by its context (the
// runtime stopping the task) commits nothing and says so.
func TestSinkCanceledWrite(t *testing.T) {
	s := pgtest.Start(t)
	task := openSink(t, sinkConfig(s, "auto.create", "true", "insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "id"))
	mustWrite(t, task, rec(nil, nil, person(1, "ann", nil)))
	// Hold a lock on the table so the next write waits, then cancel it.
	conn := s.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), sinkTimeout)
	defer cancel()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE t IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer wcancel()
	err = task.Write(wctx, []*connectors.SinkRecord{rec(nil, nil, person(2, "bob", nil))})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write past its context's deadline: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wantRows(t, textRows(t, conn, "t", "id", "id", "name"), "1|ann\n")
	// The task recovers on the next Write.
	mustWrite(t, task, rec(nil, nil, person(2, "bob", nil)))
	wantRows(t, textRows(t, conn, "t", "id", "id", "name"), "1|ann\n2|bob\n")
}
