//go:build debezium

package debezium

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The captured tables, as table.include.list names them, and their topics'
// names after the prefix.
var capturedTables = []string{"public.kinds", "public.full_ident", "inventory.orders", "public.odd_types", "public.dom_types"}

// schemaSQL creates the captured tables. kinds has a column of every kind
// whose mapping the comparison is about; its long_text is stored out of
// line without compression (STORAGE EXTERNAL), so that a value of a few
// kilobytes is surely TOASTed, and the table keeps the default replica
// identity, so that an update that leaves long_text alone sends no value
// for it. full_ident has REPLICA IDENTITY FULL (updates and deletes carry
// the whole old row), a blank-padded char(4) and its own out-of-line
// notes, left alone by an update too, and constant column defaults
// (which Debezium puts in the schema), two of them quoted literals that
// hold a quote or nothing; inventory.orders is in another
// schema, has a composite key and a bigserial (a computed default, for
// which Debezium's schema has the placeholder default 0). The column added
// later to kinds has a default too.
var schemaSQL = []string{
	`CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')`,
	`CREATE TABLE kinds (
		id int PRIMARY KEY,
		num numeric(12,3),
		num_var numeric,
		small smallint,
		big_int bigint,
		dbl double precision,
		flag boolean,
		code varchar(8),
		ts timestamp,
		ts_tz timestamptz,
		day date,
		at_time time,
		span interval,
		doc json,
		docb jsonb,
		uid uuid,
		ints int[],
		words text[],
		feeling mood,
		raw bytea,
		long_text text
	)`,
	`ALTER TABLE kinds ALTER COLUMN long_text SET STORAGE EXTERNAL`,
	`CREATE TABLE full_ident (id int PRIMARY KEY, name text NOT NULL, qty int DEFAULT 7, tag char(4) DEFAULT 'new', notes text,
		quip text DEFAULT 'it''s', blank varchar(4) DEFAULT '')`,
	`ALTER TABLE full_ident ALTER COLUMN notes SET STORAGE EXTERNAL`,
	`ALTER TABLE full_ident REPLICA IDENTITY FULL`,
	`CREATE SCHEMA inventory`,
	`CREATE TABLE inventory.orders (order_id int, line int, item text NOT NULL, seq bigserial, PRIMARY KEY (order_id, line))`,
	// Types whose mapping is Debezium's own: bit strings (one bit is a
	// boolean, more are io.debezium.data.Bits), point
	// (io.debezium.data.geometry.Point), the extension types ltree (and its
	// arrays) and citext, and tsvector.
	`CREATE EXTENSION ltree`,
	`CREATE EXTENSION citext`,
	`CREATE TABLE odd_types (id int PRIMARY KEY, one bit(1), bits bit(12), vbits varbit(20), vbits_any varbit, pt point,
		path ltree, paths ltree[], ci citext, doc tsvector)`,
	// Domains, which Debezium captures as their base types (a domain over
	// a domain too), with the domain's own length and scale, and hstore
	// (hstore.handling.mode=json by default: io.debezium.data.Json).
	`CREATE EXTENSION hstore`,
	`CREATE DOMAIN email AS text CHECK (VALUE LIKE '%@%')`,
	`CREATE DOMAIN price AS numeric(8,2)`,
	`CREATE DOMAIN posint AS int CHECK (VALUE > 0)`,
	`CREATE DOMAIN small_posint AS posint CHECK (VALUE < 1000)`,
	`CREATE DOMAIN stamp AS timestamptz`,
	`CREATE DOMAIN code AS varchar(5)`,
	`CREATE TABLE dom_types (id int PRIMARY KEY, mail email, cost price, n posint, tiny small_posint, at stamp, c code,
		tags email[], attrs hstore)`,
	`ALTER TABLE dom_types ALTER COLUMN attrs SET STORAGE EXTERNAL`,
}

// longText is the TOASTed value: 12000 bytes, far over the 2 KB from which
// PostgreSQL moves a value out of line.
const longText = `repeat('toast-', 2000)`

// kindsRow is an INSERT of a kinds row with every column set (but the one
// the workload adds, which takes its default).
func kindsRow(id, num, numVar, small, bigInt, dbl, flag, code, ts, tsTz, day, atTime, span, doc, docb, uid, ints, words, feeling, raw, long string) string {
	return `INSERT INTO kinds VALUES (` + strings.Join([]string{id, num, numVar, small, bigInt, dbl, flag, code, ts, tsTz, day, atTime, span, doc, docb, uid, ints, words, feeling, raw, long}, ", ") + `)`
}

// snapshotSQL are the rows there before the connectors start: their
// snapshot reads them (op r).
var snapshotSQL = []string{
	kindsRow("1", "12345.678", "3.14159265358979", "-7", "9007199254740993", "2.5", "true", "'abc'",
		"'2024-02-29 13:14:15.123456'", "'2024-02-29 13:14:15.5+02'", "'1969-07-20'", "'23:59:59.999999'",
		"'1 year 2 mons 3 days 04:05:06.789'", `'{"a": [1, 2.5, "x"]}'`, `'{"b": {"c": null}}'`,
		"'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "'{1,2,3}'", `'{"x","y z"}'`, "'happy'", `'\xdeadbeef'`, longText),
	kindsRow("2", "-0.001", "-1e-10", "32767", "-9223372036854775808", "-1.5e300", "false", "''",
		"'1900-01-01 00:00:00'", "'2000-01-01 00:00:00+00'", "'2038-01-19'", "'00:00:00'",
		"'-1 days'", `'[]'`, `'{}'`, "'00000000-0000-0000-0000-000000000000'", "'{}'", "'{NULL,\"\"}'", "'sad'", `'\x'`, "'short'"),
	// PostgreSQL's infinite timestamps and dates, which Debezium maps to
	// values of its own.
	`INSERT INTO kinds (id, ts, ts_tz, day) VALUES (6, 'infinity', '-infinity', 'infinity'), (8, '-infinity', 'infinity', '-infinity')`,
	`INSERT INTO full_ident VALUES (1, 'one', 10, 'ab', ` + longText + `)`,
	`INSERT INTO inventory.orders VALUES (1, 1, 'apple')`,
	`INSERT INTO odd_types VALUES (1, B'1', B'101000000001', B'1', B'0000', '(1.5,-2)', 'top.science.astronomy', '{a.b,c}', 'MiXeD', 'a fat cat')`,
	`INSERT INTO dom_types VALUES (1, 'a@b.c', 12.5, 7, 999, '2024-05-06 07:08:09.123456+02', 'abc', '{x@y.z,"q@r.s"}', 'a=>1, "b c"=>"d\"e", n=>NULL')`,
}

// workload is the streaming workload, one transaction per element, run
// once both connectors stream.
var workload = [][]string{
	// A transaction over three tables: inserts, one row all NULL but its
	// key, one with text beyond ASCII (and a JSON escape json keeps and
	// jsonb decodes).
	{
		kindsRow("3", "0.5", "100", "1", "2", "0.1", "true", "'xyz✓'",
			"'2024-12-31 23:59:59.999999'", "'2024-06-30 12:00:00-07:30'", "'2024-01-01'", "'12:34:56.789'",
			"'90 minutes'", `'{"k": "vé\u00e9"}'`, `'{"n": 1.50, "s": "ü"}'`, "'123e4567-e89b-12d3-a456-426614174000'", "'{-1,0,1}'", `'{"a,b","c\"d","ünï ✓ 🦀"}'`, "'ok'", `'\x00ff'`, longText),
		`INSERT INTO kinds (id) VALUES (4)`,
		kindsRow("5", "99.999", "0", "0", "0", "0", "false", "'5'",
			"'1970-01-01 00:00:00'", "'1970-01-01 00:00:00+00'", "'1970-01-01'", "'00:00:01'",
			"'0'", `'null'`, `'[1, "two"]'`, "'ffffffff-ffff-ffff-ffff-ffffffffffff'", "'{42}'", "'{}'", "'happy'", `'\x41'`, "NULL"),
		`INSERT INTO kinds (id, ts, ts_tz, day) VALUES (7, '-infinity', 'infinity', '-infinity'), (9, 'infinity', '-infinity', 'infinity')`,
		`INSERT INTO full_ident VALUES (2, 'two', 20, 'abcd', 'short'), (3, 'three', NULL, NULL, NULL)`,
		`INSERT INTO inventory.orders VALUES (1, 2, 'pear'), (2, 1, 'plum')`,
		`INSERT INTO odd_types VALUES (2, B'0', B'000000000000', B'11111111111111111111', B'1010101010101010101010101', '(0,1e-7)', 'x', '{}', 'Ünï', 'sat:1 mat:2'),
			(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		`INSERT INTO dom_types VALUES (2, 'ü@ö.de', 999999.99, 2147483647, 1, '1970-01-01 00:00:00+00', '', '{}', ''),
			(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		`UPDATE dom_types SET cost = 0.01, attrs = 'k=>v' WHERE id = 1`,
	},
	// Updates that leave the TOASTed long_text alone (rows 1 from the
	// snapshot and 3 from the stream), and one on the FULL-identity table
	// that leaves its TOASTed notes alone.
	{
		`UPDATE kinds SET num = num + 1, docb = '{"b": 2}' WHERE id = 1`,
		`UPDATE kinds SET ints = '{7,8}', feeling = 'sad' WHERE id = 3`,
		`UPDATE full_ident SET qty = qty + 1 WHERE id = 1`,
	},
	// A key changes: a delete of the old key and a create of the new one.
	{`UPDATE kinds SET id = 10 WHERE id = 2`},
	// A column is added, then used.
	{`ALTER TABLE kinds ADD COLUMN note text DEFAULT 'none'`},
	{
		kindsRow("20", "1", "1", "1", "1", "1", "true", "'n'",
			"'2020-02-02 02:02:02'", "'2020-02-02 02:02:02+00'", "'2020-02-02'", "'02:02:02'",
			"'2 hours'", `'{}'`, `'{}'`, "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'", "'{2}'", "'{two}'", "'ok'", `'\x02'`, "'twenty'"),
		`UPDATE kinds SET note = 'noted' WHERE id = 20`,
		`UPDATE kinds SET note = 'later' WHERE id = 1`,
		// The TOASTed value itself changes: the new value, out of line too.
		`UPDATE kinds SET long_text = repeat('again-', 1500) WHERE id = 1`,
	},
	// Deletes: default identity (key only) and FULL (the whole row, its
	// TOASTed notes included).
	{
		`DELETE FROM kinds WHERE id = 3`,
		`DELETE FROM full_ident WHERE id = 2`,
		`DELETE FROM full_ident WHERE id = 1`,
	},
	{`TRUNCATE inventory.orders`},
	{`INSERT INTO inventory.orders VALUES (3, 1, 'fig')`},
	// An hstore of 200 pairs, out of line (its JSON's key order is a
	// java.util.HashMap's after several resizes), then an update that
	// leaves it alone: Debezium's placeholder for an unchanged hstore.
	{`UPDATE dom_types SET attrs = (SELECT hstore(array_agg('key' || g), array_agg(repeat('v', g % 7) || g)) FROM generate_series(1, 200) g) WHERE id = 2`},
	{`UPDATE dom_types SET n = 8 WHERE id = 2`},
}

// expectedOps is what the workload makes of each captured table's topic
// (after the prefix), in order: the snapshot's reads, then the stream's
// changes, a tombstone after each delete (tombstones.on.delete's default)
// and a truncate event (skipped.operations=none).
var expectedOps = map[string][]string{
	"public.kinds": {
		`r {"id":1}`, `r {"id":2}`, `r {"id":6}`, `r {"id":8}`,
		`c {"id":3}`, `c {"id":4}`, `c {"id":5}`, `c {"id":7}`, `c {"id":9}`,
		`u {"id":1}`, `u {"id":3}`,
		`d {"id":2}`, `tombstone {"id":2}`, `c {"id":10}`,
		`c {"id":20}`, `u {"id":20}`, `u {"id":1}`, `u {"id":1}`,
		`d {"id":3}`, `tombstone {"id":3}`,
	},
	"public.full_ident": {
		`r {"id":1}`,
		`c {"id":2}`, `c {"id":3}`,
		`u {"id":1}`,
		`d {"id":2}`, `tombstone {"id":2}`, `d {"id":1}`, `tombstone {"id":1}`,
	},
	"public.odd_types": {`r {"id":1}`, `c {"id":2}`, `c {"id":3}`},
	"public.dom_types": {`r {"id":1}`, `c {"id":2}`, `c {"id":3}`, `u {"id":1}`, `u {"id":2}`, `u {"id":2}`},
	"inventory.orders": {
		`r {"line":1,"order_id":1}`,
		`c {"line":2,"order_id":1}`, `c {"line":1,"order_id":2}`,
		`t null`,
		`c {"line":1,"order_id":3}`,
	},
}

// expectedFor is expectedOps as a connector with overrides writes it:
// without tombstones when tombstones.on.delete is false, without the ops
// skipped.operations names, without reads when snapshot.mode takes no
// snapshot of the data.
func expectedFor(overrides map[string]string) map[string][]string {
	skipped := map[string]bool{
		"tombstone": overrides["tombstones.on.delete"] == "false",
		"r":         overrides["snapshot.mode"] == "no_data" || overrides["snapshot.mode"] == "never",
	}
	if ops, ok := overrides["skipped.operations"]; ok {
		for _, op := range strings.Split(ops, ",") {
			skipped[strings.TrimSpace(op)] = true
		}
	}
	out := map[string][]string{}
	for topic, ops := range expectedOps {
		out[topic] = []string{}
		for _, op := range ops {
			kind, _, _ := strings.Cut(op, " ")
			if !skipped[kind] {
				out[topic] = append(out[topic], op)
			}
		}
	}
	return out
}

// countOps counts the ops of expected whose kind ("r", "c", "tombstone",
// ...) is in kinds, or all of them when kinds is empty.
func countOps(expected map[string][]string, kinds ...string) int {
	n := 0
	for _, ops := range expected {
		for _, op := range ops {
			kind, _, _ := strings.Cut(op, " ")
			if len(kinds) == 0 || slices.Contains(kinds, kind) {
				n++
			}
		}
	}
	return n
}

// runSQL runs each group of statements in a transaction of its own.
func runSQL(t *testing.T, url string, txs [][]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(context.Background())
	for _, stmts := range txs {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, s := range stmts {
				if _, err := tx.Exec(ctx, s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("workload transaction %q: %v", stmts, err)
		}
	}
}
