package postgres_test

import (
	"context"
	"fmt"
	"maps"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/connectors/postgres"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// srcServers maps a harness config's connection.url to its server, so that
// Produce finds the database Config created.
var srcServers sync.Map

func TestSourceConformance(t *testing.T) {
	// Held for the whole suite, so that its subtests share one server
	// process instead of starting one each.
	pgtest.Start(t)
	conformance.RunSource(t, conformance.SourceHarness{
		Plugin: postgres.SourcePlugin(),
		Config: func(t *testing.T) map[string]string {
			s := pgtest.Start(t)
			s.Exec(t, "CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL)")
			srcServers.Store(s.JDBCURL(), s)
			t.Cleanup(func() { srcServers.Delete(s.JDBCURL()) })
			return map[string]string{
				"connection.url":           s.JDBCURL(),
				"mode":                     "incrementing",
				"incrementing.column.name": "id",
				"topic.prefix":             "pg-",
				"poll.interval.ms":         "50",
			}
		},
		Produce: func(t *testing.T, cfg map[string]string, n int) {
			v, ok := srcServers.Load(cfg["connection.url"])
			if !ok {
				t.Fatalf("no server for %s", cfg["connection.url"])
			}
			v.(*pgtest.Server).Exec(t, "INSERT INTO items (name) SELECT 'item-' || g FROM generate_series(1, $1::int) g", n)
		},
		Live: true,
		Identity: func(r *connectors.SourceRecord) (string, int64, error) {
			table, _ := r.Partition[postgres.PartitionTableField].(string)
			sv, ok := r.Value.(*connectors.StructValue)
			if !ok || table == "" {
				return "", 0, fmt.Errorf("record %+v has no table partition or struct value", r)
			}
			id, ok := sv.Get("id").(int64)
			if !ok {
				return "", 0, fmt.Errorf("value %v has no int64 id", sv.Values)
			}
			return table, id - 1, nil
		},
		BatchSizeKey: postgres.SourceBatchMaxRowsKey,
	})
}

// srcCtx is a ConnectorContext that counts reconfiguration requests.
type srcCtx struct {
	mu       sync.Mutex
	reconfig int
	log      zerolog.Logger
}

func (c *srcCtx) Name() string                { return "pg" }
func (c *srcCtx) RaiseError(error)            {}
func (c *srcCtx) Logger() *zerolog.Logger     { return &c.log }
func (c *srcCtx) RequestTaskReconfiguration() { c.mu.Lock(); c.reconfig++; c.mu.Unlock() }
func (c *srcCtx) reconfigurations() (n int)   { c.mu.Lock(); n = c.reconfig; c.mu.Unlock(); return }
func srcNewCtx(t *testing.T) *srcCtx          { return &srcCtx{log: *conformance.TestLogger(t)} }
func srcConfig(s *pgtest.Server, kv ...string) map[string]string {
	cfg := map[string]string{
		"connection.url": s.JDBCURL(), "mode": "incrementing", "incrementing.column.name": "id",
		"topic.prefix": "inventory-", "poll.interval.ms": "50",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(cfg, kv[i])
		} else {
			cfg[kv[i]] = kv[i+1]
		}
	}
	return cfg
}

// srcStart starts a connector and returns its task configs for maxTasks.
func srcStart(t *testing.T, cfg map[string]string, maxTasks int) (*postgres.JdbcSourceConnector, []map[string]string) {
	t.Helper()
	c := &postgres.JdbcSourceConnector{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx, srcNewCtx(t), cfg); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Stop() })
	tcs, err := c.TaskConfigs(ctx, maxTasks)
	if err != nil {
		t.Fatalf("TaskConfigs: %v", err)
	}
	return c, tcs
}

// srcTask is an open task with what it returned.
type srcTask struct {
	t    *testing.T
	task *postgres.SourceTask
	tc   *conformance.SourceContext
	recs []*connectors.SourceRecord
}

func srcOpen(t *testing.T, taskCfg map[string]string, tc *conformance.SourceContext) *srcTask {
	t.Helper()
	task := &postgres.SourceTask{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := task.Open(ctx, tc, taskCfg); err != nil {
		task.Close()
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { task.Close() })
	return &srcTask{t: t, task: task, tc: tc}
}

// pollFor polls until n records arrived, failing on any Poll error.
func (r *srcTask) pollFor(n int) []*connectors.SourceRecord {
	r.t.Helper()
	from := len(r.recs)
	deadline := time.Now().Add(30 * time.Second)
	for len(r.recs)-from < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("got %d of %d records within 30s", len(r.recs)-from, n)
		}
		r.recs = append(r.recs, conformance.Poll(r.t, r.task, 300*time.Millisecond)...)
	}
	return r.recs[from:]
}

// quiet polls for d and fails if anything arrives.
func (r *srcTask) quiet(d time.Duration) {
	r.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); {
		if b := conformance.Poll(r.t, r.task, 200*time.Millisecond); len(b) > 0 {
			r.t.Fatalf("unexpected %d records, first %v", len(b), srcValues(b[:1]))
		}
	}
}

func srcValues(recs []*connectors.SourceRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		sv := r.Value.(*connectors.StructValue)
		parts := make([]string, len(sv.Values))
		for j, f := range sv.Schema.Fields {
			parts[j] = fmt.Sprintf("%s=%v", f.Name, sv.Values[j])
		}
		out[i] = r.Topic + ":" + strings.Join(parts, ",")
	}
	return out
}

func srcField(r *connectors.SourceRecord, name string) any {
	return r.Value.(*connectors.StructValue).Get(name)
}

func TestSourceTypesAndSchema(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, `CREATE TABLE kinds (
		id serial PRIMARY KEY, s2 smallint NOT NULL, i8 bigint, f4 real, f8 double precision, b boolean,
		t text, v varchar(10), c char(3), by bytea, n numeric(10,2), nu numeric, ts timestamp, tz timestamptz,
		d date, tm time, j jsonb, u uuid, arr int[])`)
	s.Exec(t, `INSERT INTO kinds (s2, i8, f4, f8, b, t, v, c, by, n, nu, ts, tz, d, tm, j, u, arr) VALUES
		(7, 9000000000, 1.5, 2.25, true, 'text', 'vc', 'ab', '\x0102', 12345.67, 1.000000000000000000001,
		 '2024-05-06 07:08:09.123456', '2024-05-06 07:08:09.5+02', '2024-05-06', '13:14:15.25',
		 '{"a": [1, 2]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{1,2}')`)
	s.Exec(t, `INSERT INTO kinds (s2) VALUES (8)`)
	_, tcs := srcStart(t, srcConfig(s), 1)
	r := srcOpen(t, tcs[0], conformance.NewSourceContext(t, "pg", 0))
	recs := r.pollFor(2)
	rec := recs[0]
	if rec.Topic != "inventory-kinds" || rec.Key != nil {
		t.Fatalf("topic %q key %v", rec.Topic, rec.Key)
	}
	schema := rec.ValueSchema
	if schema.Type != connectors.Struct || schema.Name != "kinds" {
		t.Fatalf("schema %+v", schema)
	}
	wantTypes := map[string]string{
		"id": "int32", "s2": "int16", "i8": "int64?", "f4": "float32?", "f8": "float64?", "b": "boolean?",
		"t": "string?", "v": "string?", "c": "string?", "by": "bytes?", "n": "bytes?" + connectors.DecimalLogical,
		"nu": "string?", "ts": "int64?" + connectors.TimestampLogical, "tz": "int64?" + connectors.TimestampLogical,
		"d": "int32?" + connectors.DateLogical, "tm": "int32?" + connectors.TimeLogical, "j": "string?", "u": "string?", "arr": "string?",
	}
	for _, f := range schema.Fields {
		got := string(f.Schema.Type)
		if f.Schema.Optional {
			got += "?"
		}
		got += f.Schema.Name
		if got != wantTypes[f.Name] {
			t.Errorf("column %s: schema %s, want %s", f.Name, got, wantTypes[f.Name])
		}
	}
	if _, ns := schema.Field("n"); ns.Parameters["scale"] != "2" {
		t.Errorf("numeric(10,2) scale %v", ns.Parameters)
	}
	checks := map[string]any{
		"s2": int16(7), "i8": int64(9000000000), "f4": float32(1.5), "f8": 2.25, "b": true, "t": "text", "v": "vc", "c": "ab ",
		"nu": "1.000000000000000000001", "j": `{"a": [1, 2]}`, "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "arr": "{1,2}",
	}
	for k, want := range checks {
		if got := srcField(rec, k); got != want {
			t.Errorf("%s = %#v, want %#v", k, got, want)
		}
	}
	if got := srcField(rec, "by").([]byte); string(got) != "\x01\x02" {
		t.Errorf("bytea %v", got)
	}
	if got := srcField(rec, "n").(*big.Rat); got.Cmp(big.NewRat(1234567, 100)) != 0 {
		t.Errorf("numeric %v", got)
	}
	if got := srcField(rec, "ts").(time.Time); !got.Equal(time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)) {
		t.Errorf("timestamp %v", got)
	}
	if got := srcField(rec, "tz").(time.Time); !got.Equal(time.Date(2024, 5, 6, 5, 8, 9, 500000000, time.UTC)) {
		t.Errorf("timestamptz %v", got)
	}
	if got := srcField(rec, "d").(time.Time); !got.Equal(time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("date %v", got)
	}
	if got := srcField(rec, "tm").(time.Time); !got.Equal(time.Date(1970, 1, 1, 13, 14, 15, 250000000, time.UTC)) {
		t.Errorf("time %v", got)
	}
	// The second row is all NULLs but its required columns.
	for _, f := range schema.Fields {
		if f.Name != "id" && f.Name != "s2" && srcField(recs[1], f.Name) != nil {
			t.Errorf("second row: %s = %v, want NULL", f.Name, srcField(recs[1], f.Name))
		}
	}
	if err := recs[1].Value.(*connectors.StructValue).Validate(); err != nil {
		t.Error(err)
	}
	part := rec.Partition
	if part["protocol"] != "1" || part["table"] != s.Database()+".public.kinds" {
		t.Errorf("partition %v", part)
	}
	if rec.SourceOffset()["incrementing"] != int64(1) || recs[1].SourceOffset()["incrementing"] != int64(2) {
		t.Errorf("offsets %v %v", rec.SourceOffset(), recs[1].SourceOffset())
	}
}

func TestSourceSchemaFollowsColumnChanges(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE t (id serial PRIMARY KEY, a int)")
	s.Exec(t, "INSERT INTO t (a) VALUES (1)")
	_, tcs := srcStart(t, srcConfig(s), 1)
	r := srcOpen(t, tcs[0], conformance.NewSourceContext(t, "pg", 0))
	first := r.pollFor(1)[0]
	s.Exec(t, "ALTER TABLE t ADD COLUMN b text")
	s.Exec(t, "INSERT INTO t (a, b) VALUES (2, 'two')")
	second := r.pollFor(1)[0]
	if srcField(second, "b") != "two" || len(second.ValueSchema.Fields) != 3 || len(first.ValueSchema.Fields) != 2 {
		t.Fatalf("after ADD COLUMN: %v (schema %d fields)", srcValues([]*connectors.SourceRecord{second}), len(second.ValueSchema.Fields))
	}
	s.Exec(t, "ALTER TABLE t DROP COLUMN a")
	s.Exec(t, "INSERT INTO t (b) VALUES ('three')")
	third := r.pollFor(1)[0]
	if _, f := third.ValueSchema.Field("a"); f != nil || srcField(third, "b") != "three" {
		t.Fatalf("after DROP COLUMN: %v", srcValues([]*connectors.SourceRecord{third}))
	}
}

func TestSourceTimestampMode(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE ev (name text, at timestamp NOT NULL)")
	// Three rows share a timestamp across the batch boundary (batch 2): the
	// mode must neither lose nor split them.
	s.Exec(t, `INSERT INTO ev VALUES ('a', '2024-01-01 00:00:01'), ('b', '2024-01-01 00:00:02'),
		('c', '2024-01-01 00:00:02'), ('d', '2024-01-01 00:00:02'), ('e', '2024-01-01 00:00:03')`)
	cfg := srcConfig(s, "mode", "timestamp", "incrementing.column.name", "", "timestamp.column.name", "at", "batch.max.rows", "2")
	_, tcs := srcStart(t, cfg, 1)
	tc := conformance.NewSourceContext(t, "pg", 0)
	r := srcOpen(t, tcs[0], tc)
	got := r.pollFor(5)
	var names []string
	for _, rec := range got {
		names = append(names, srcField(rec, "name").(string))
	}
	if strings.Join(names, "") != "abcde" {
		t.Fatalf("rows %v", names)
	}
	r.quiet(300 * time.Millisecond)
	if o := got[4].Offset; o["timestamp"] != time.Date(2024, 1, 1, 0, 0, 3, 0, time.UTC).UnixMilli() || o["timestamp_nanos"] != int64(0) {
		t.Errorf("offset %v", o)
	}
	// An update moves a row's timestamp forward: it is read again.
	s.Exec(t, "UPDATE ev SET at = '2024-01-01 00:00:04.5' WHERE name = 'a'")
	again := r.pollFor(1)
	if srcField(again[0], "name") != "a" || again[0].Offset["timestamp_nanos"] != int64(500000000) {
		t.Fatalf("after update: %v %v", srcValues(again), again[0].Offset)
	}
	// A restart in the middle of the tie group (after b was committed but
	// not c and d) reads the whole group again: at least once.
	tc2 := conformance.NewSourceContext(t, "pg", 0)
	if err := tc2.Commit(got[:2]...); err != nil {
		t.Fatal(err)
	}
	r2 := srcOpen(t, tcs[0], tc2)
	names = nil
	for _, rec := range r2.pollFor(5) {
		names = append(names, srcField(rec, "name").(string))
	}
	if strings.Join(names, "") != "bcdea" {
		t.Fatalf("after a restart mid-group: %v", names)
	}
}

func TestSourceTimestampDelay(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE ev (id serial, at timestamptz NOT NULL DEFAULT now())")
	cfg := srcConfig(s, "mode", "timestamp", "incrementing.column.name", "", "timestamp.column.name", "at",
		"timestamp.delay.interval.ms", "1500")
	_, tcs := srcStart(t, cfg, 1)
	r := srcOpen(t, tcs[0], conformance.NewSourceContext(t, "pg", 0))
	s.Exec(t, "INSERT INTO ev DEFAULT VALUES")
	inserted := time.Now()
	r.pollFor(1)
	if since := time.Since(inserted); since < 1400*time.Millisecond {
		t.Fatalf("row read %v after its insert, before the 1.5 s delay", since)
	}
}

func TestSourceTimestampIncrementingMode(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE acct (id serial PRIMARY KEY, balance int, modified timestamptz NOT NULL DEFAULT '2024-01-01')")
	s.Exec(t, "INSERT INTO acct (balance) SELECT g FROM generate_series(1, 7) g") // all share one timestamp
	cfg := srcConfig(s, "mode", "timestamp+incrementing", "timestamp.column.name", "modified", "batch.max.rows", "3")
	_, tcs := srcStart(t, cfg, 1)
	tc := conformance.NewSourceContext(t, "pg", 0)
	r := srcOpen(t, tcs[0], tc)
	got := r.pollFor(7)
	for i, rec := range got {
		if srcField(rec, "id") != int32(i+1) {
			t.Fatalf("rows out of order: %v", srcValues(got))
		}
	}
	r.quiet(300 * time.Millisecond)
	o := got[6].Offset
	if o["incrementing"] != int64(7) || o["timestamp"] != time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() {
		t.Errorf("offset %v", o)
	}
	// Committed up to id 4; a new task resumes at 5, then sees an update.
	if err := tc.Commit(got[:4]...); err != nil {
		t.Fatal(err)
	}
	r.task.Close()
	r2 := srcOpen(t, tcs[0], tc)
	for i, rec := range r2.pollFor(3) {
		if srcField(rec, "id") != int32(5+i) {
			t.Fatalf("resume: %v", srcValues(r2.recs))
		}
	}
	s.Exec(t, "UPDATE acct SET balance = 100, modified = '2024-01-02' WHERE id = 2")
	upd := r2.pollFor(1)[0]
	if srcField(upd, "id") != int32(2) || srcField(upd, "balance") != int32(100) {
		t.Fatalf("update: %v", srcValues([]*connectors.SourceRecord{upd}))
	}
	r2.quiet(300 * time.Millisecond)
}

func TestSourceBulkMode(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE a (x int)")
	s.Exec(t, "CREATE TABLE b (y text)")
	s.Exec(t, "INSERT INTO a SELECT generate_series(1, 5)")
	s.Exec(t, "INSERT INTO b VALUES ('only')")
	cfg := srcConfig(s, "mode", "bulk", "incrementing.column.name", "", "batch.max.rows", "2", "poll.interval.ms", "700")
	_, tcs := srcStart(t, cfg, 1)
	r := srcOpen(t, tcs[0], conformance.NewSourceContext(t, "pg", 0))
	count := func(recs []*connectors.SourceRecord) map[string]int {
		m := map[string]int{}
		for _, rec := range recs {
			m[rec.Topic]++
			if len(rec.Offset) != 0 {
				t.Fatalf("bulk offset %v", rec.Offset)
			}
		}
		return m
	}
	first := time.Now()
	c := count(r.pollFor(6))
	if c["inventory-a"] != 5 || c["inventory-b"] != 1 {
		t.Fatalf("first pass %v", c)
	}
	// The next pass comes a poll interval later, with the table as it is then.
	s.Exec(t, "INSERT INTO a VALUES (6)")
	c = count(r.pollFor(7))
	if c["inventory-a"] != 6 || c["inventory-b"] != 1 {
		t.Fatalf("second pass %v", c)
	}
	if took := time.Since(first); took < 700*time.Millisecond {
		t.Fatalf("second pass after %v, before poll.interval.ms", took)
	}
}

func TestSourceQueryMode(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE orders (id serial PRIMARY KEY, cust int NOT NULL, total numeric(8,2))")
	s.Exec(t, "CREATE TABLE custs (id int PRIMARY KEY, name text)")
	s.Exec(t, "INSERT INTO custs VALUES (1, 'ann'), (2, 'bob')")
	s.Exec(t, "INSERT INTO orders (cust, total) VALUES (1, 10), (2, 20), (1, 30)")
	cfg := srcConfig(s, "query", "SELECT o.id, c.name, o.total FROM orders o JOIN custs c ON c.id = o.cust WHERE o.total > 15",
		"topic.prefix", "big-orders")
	_, tcs := srcStart(t, cfg, 3)
	if len(tcs) != 1 {
		t.Fatalf("query mode gave %d task configs", len(tcs))
	}
	r := srcOpen(t, tcs[0], conformance.NewSourceContext(t, "pg", 0))
	got := r.pollFor(2)
	if got[0].Topic != "big-orders" || srcField(got[0], "name") != "bob" || srcField(got[1], "name") != "ann" {
		t.Fatalf("records %v", srcValues(got))
	}
	if got[0].Partition["query"] != "query" || got[1].SourceOffset()["incrementing"] != int64(3) {
		t.Fatalf("partition %v offset %v", got[0].Partition, got[1].SourceOffset())
	}
	s.Exec(t, "INSERT INTO orders (cust, total) VALUES (2, 5), (2, 50)")
	if more := r.pollFor(1); srcField(more[0], "id") != int32(5) {
		t.Fatalf("later row %v", srcValues(more))
	}
	r.quiet(300 * time.Millisecond)
}

func TestSourceTaskSpreading(t *testing.T) {
	s := pgtest.Start(t)
	for _, n := range []string{"t1", "t2", "t3"} {
		s.Exec(t, "CREATE TABLE "+n+" (id serial PRIMARY KEY)")
	}
	tables := func(tc map[string]string) string { return tc["tables"] }
	_, tcs := srcStart(t, srcConfig(s), 5)
	if len(tcs) != 3 {
		t.Fatalf("3 tables, tasks.max 5: %d task configs", len(tcs))
	}
	for i, tc := range tcs {
		if want := fmt.Sprintf(`[["public","t%d"]]`, i+1); tables(tc) != want {
			t.Errorf("task %d tables %s, want %s", i, tables(tc), want)
		}
	}
	s.Exec(t, "CREATE TABLE t4 (id serial PRIMARY KEY)")
	s.Exec(t, "CREATE TABLE t5 (id serial PRIMARY KEY)")
	_, tcs = srcStart(t, srcConfig(s), 2)
	if len(tcs) != 2 || tables(tcs[0]) != `[["public","t1"],["public","t3"],["public","t5"]]` || tables(tcs[1]) != `[["public","t2"],["public","t4"]]` {
		t.Fatalf("5 tables, tasks.max 2: %v", tcs)
	}
	// Every task reads its own tables only, into <prefix><table>.
	for _, n := range []string{"t1", "t2", "t3", "t4", "t5"} {
		s.Exec(t, "INSERT INTO "+n+" DEFAULT VALUES")
	}
	topics := map[string]bool{}
	for i, tc := range tcs {
		r := srcOpen(t, tc, conformance.NewSourceContext(t, "pg", i))
		for _, rec := range r.pollFor(3 - i) {
			topics[rec.Topic] = true
		}
		r.quiet(200 * time.Millisecond)
	}
	if len(topics) != 5 {
		t.Fatalf("topics %v", topics)
	}
}

func TestSourceTableFilters(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE SCHEMA other")
	for _, n := range []string{"public.users", "public.orders", "public.audit_log", "other.users"} {
		s.Exec(t, "CREATE TABLE "+n+" (id serial PRIMARY KEY)")
	}
	s.Exec(t, "CREATE VIEW public.v AS SELECT 1 AS id")
	cases := []struct {
		kv   []string
		want string
	}{
		{nil, "public.audit_log public.orders public.users"},
		{[]string{"table.whitelist", "users, orders"}, "public.orders public.users"},
		{[]string{"table.whitelist", s.Database() + ".public.orders"}, "public.orders"},
		{[]string{"table.blacklist", "public.audit_log"}, "public.orders public.users"},
		{[]string{"table.include.list", "public\\.(users|orders)"}, "public.orders public.users"},
		{[]string{"table.exclude.list", "audit_.*"}, "public.orders public.users"},
		{[]string{"schema.pattern", "oth%"}, "other.users"},
		{[]string{"schema.pattern", "%"}, "other.users public.audit_log public.orders public.users"},
		{[]string{"table.types", "VIEW"}, "public.v"},
	}
	for _, c := range cases {
		_, tcs := srcStart(t, srcConfig(s, append(c.kv, "incrementing.column.name", "")...), 10)
		var got []string
		for _, tc := range tcs {
			got = append(got, strings.NewReplacer(`[["`, "", `","`, ".", `"]]`, "").Replace(tc["tables"]))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%v: tables %v, want %s", c.kv, got, c.want)
		}
	}
}

func TestSourceValidation(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE t (id serial PRIMARY KEY, at timestamp, n text NOT NULL)")
	s.Exec(t, "CREATE ROLE app LOGIN PASSWORD 'right'")
	s.Exec(t, "GRANT SELECT ON t TO app")
	c := &postgres.JdbcSourceConnector{}
	cases := []struct {
		kv      []string
		key     string
		message string
	}{
		{[]string{"table.whitelist", "t", "table.blacklist", "x"}, "table.blacklist", "Only one of"},
		{[]string{"table.include.list", "t", "table.exclude.list", "x"}, "table.include.list", "Only one of"},
		{[]string{"table.whitelist", "t", "table.include.list", "t"}, "table.whitelist", "Only one of"},
		{[]string{"query", "SELECT 1 AS id", "table.whitelist", "t"}, "table.whitelist", "cannot be combined with query"},
		{[]string{"mode", "timestamp", "incrementing.column.name", ""}, "timestamp.column.name", "needs"},
		{[]string{"table.whitelist", "missing"}, "table.whitelist", `"missing" does not exist`},
		{[]string{"incrementing.column.name", "nope"}, "incrementing.column.name", `no column "nope"`},
		{[]string{"incrementing.column.name", "n"}, "incrementing.column.name", "not an integer"},
		{[]string{"mode", "timestamp+incrementing", "timestamp.column.name", "at"}, "timestamp.column.name", "nullable"},
		{[]string{"query", "SELEC nonsense"}, "query", "does not prepare"},
		{[]string{"connection.user", "app", "connection.password", "wrong"}, "connection.password", "password authentication failed"},
		{[]string{"connection.url", strings.Replace(s.JDBCURL(), s.Database(), "no_such_db", 1)}, "connection.url", "does not exist"},
		{[]string{"table.include.list", "("}, "", ""}, // the definition's own error; nothing more
	}
	for _, tc := range cases {
		errs := c.ValidateConfig(srcConfig(s, tc.kv...))
		if tc.key == "" {
			if len(errs) != 0 {
				t.Errorf("%v: %v", tc.kv, errs)
			}
			continue
		}
		if !strings.Contains(strings.Join(errs[tc.key], " "), tc.message) {
			t.Errorf("%v: errors %v, want %q on %s", tc.kv, errs, tc.message, tc.key)
		}
	}
	if errs := c.ValidateConfig(srcConfig(s, "connection.user", "app", "connection.password", "right", "table.whitelist", "t")); len(errs) != 0 {
		t.Errorf("valid config: %v", errs)
	}
	// The identity column is found when incrementing.column.name is empty.
	if errs := c.ValidateConfig(srcConfig(s, "incrementing.column.name", "")); len(errs) != 0 {
		t.Errorf("autodetected incrementing column: %v", errs)
	}
}

func TestSourceRunTimeErrorsAreClear(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE t (id serial PRIMARY KEY)")
	s.Exec(t, "CREATE ROLE app LOGIN PASSWORD 'right'")
	_, tcs := srcStart(t, srcConfig(s), 1)
	firstErr := func(cfg map[string]string) error {
		task := &postgres.SourceTask{}
		if err := task.Open(context.Background(), conformance.NewSourceContext(t, "pg", 0), cfg); err != nil {
			return err
		}
		defer task.Close()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			_, err := task.Poll(ctx)
			cancel()
			if err != nil {
				return err
			}
		}
		t.Fatal("no error within 30s")
		return nil
	}
	cases := []struct {
		kv   []string
		want string
	}{
		{[]string{"connection.user", "app", "connection.password", "wrong"}, "password authentication failed"},
		{[]string{"connection.url", strings.Replace(s.JDBCURL(), s.Database(), "no_such_db", 1)}, "does not exist"},
		{[]string{"incrementing.column.name", "nope"}, `no column "nope"`},
	}
	for _, c := range cases {
		cfg := maps.Clone(tcs[0])
		for i := 0; i < len(c.kv); i += 2 {
			cfg[c.kv[i]] = c.kv[i+1]
		}
		err := firstErr(cfg)
		if connectors.IsRetriable(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v (retriable %v), want a permanent one with %q", c.kv, err, connectors.IsRetriable(err), c.want)
		}
	}
	// A table dropped under a running task fails it with the table's name.
	s.Exec(t, "DROP TABLE t")
	err := firstErr(tcs[0])
	if connectors.IsRetriable(err) || !strings.Contains(err.Error(), "public.t") {
		t.Errorf("dropped table: %v", err)
	}
}

func TestSourceNewTableReconfigures(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE t1 (id serial PRIMARY KEY)")
	c := &postgres.JdbcSourceConnector{}
	cc := srcNewCtx(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx, cc, srcConfig(s, "table.poll.interval.ms", "100")); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	time.Sleep(300 * time.Millisecond)
	if n := cc.reconfigurations(); n != 0 {
		t.Fatalf("%d reconfigurations with no change", n)
	}
	s.Exec(t, "CREATE TABLE t2 (id serial PRIMARY KEY)")
	waitUntil := func(what string, cond func() bool) {
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 20s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitUntil("reconfiguration after CREATE TABLE", func() bool { return cc.reconfigurations() == 1 })
	tcs, err := c.TaskConfigs(ctx, 5)
	if err != nil || len(tcs) != 2 {
		t.Fatalf("after a new table: %d configs, %v", len(tcs), err)
	}
	s.Exec(t, "DROP TABLE t1")
	waitUntil("reconfiguration after DROP TABLE", func() bool { return cc.reconfigurations() == 2 })
	if tcs, _ = c.TaskConfigs(ctx, 5); len(tcs) != 1 || tcs[0]["tables"] != `[["public","t2"]]` {
		t.Fatalf("after a dropped table: %v", tcs)
	}
	// Stop ends the monitor: no more requests afterwards.
	c.Stop()
	s.Exec(t, "CREATE TABLE t3 (id serial PRIMARY KEY)")
	time.Sleep(300 * time.Millisecond)
	if n := cc.reconfigurations(); n != 2 {
		t.Fatalf("%d reconfigurations after Stop", n)
	}
}

func TestSourceSurvivesDatabaseRestart(t *testing.T) {
	s := pgtest.StartPrivate(t)
	s.Exec(t, "CREATE TABLE t (id serial PRIMARY KEY, v int)")
	cfg := srcConfig(s, "connection.attempts", "1", "batch.max.rows", "7")
	_, tcs := srcStart(t, cfg, 1)
	tc := conformance.NewSourceContext(t, "pg", 0)
	task := &postgres.SourceTask{}
	if err := task.Open(context.Background(), tc, tcs[0]); err != nil {
		t.Fatal(err)
	}
	defer task.Close()

	var mu sync.Mutex
	seen := map[int32]int{}
	retriable := 0
	stop := make(chan struct{})
	done := make(chan error, 1)
	// The runtime's loop: poll, and after a retriable error back off and
	// poll again.
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			recs, err := task.Poll(ctx)
			cancel()
			mu.Lock()
			if err != nil {
				if !connectors.IsRetriable(err) {
					mu.Unlock()
					done <- err
					return
				}
				retriable++
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for _, r := range recs {
				seen[srcField(r, "id").(int32)]++
			}
			mu.Unlock()
		}
	}()
	insert := func(n int) { s.Exec(t, "INSERT INTO t (v) SELECT generate_series(1, $1::int)", n) }
	waitSeen := func(n int) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			mu.Lock()
			got := len(seen)
			mu.Unlock()
			if got >= n {
				return
			}
			select {
			case err := <-done:
				t.Fatalf("poll loop ended: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d rows within 60s", got, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	insert(50)
	waitSeen(50)
	s.Stop()
	time.Sleep(time.Second) // polls meet a database that is gone
	s.Start()
	insert(50)
	waitSeen(100)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if retriable == 0 {
		t.Error("no retriable error while the database was down")
	}
	for id := int32(1); id <= 100; id++ {
		if seen[id] != 1 {
			t.Errorf("row %d delivered %d times", id, seen[id])
		}
	}
	t.Logf("%d retriable errors while the database was down", retriable)
}

func TestSourcePollNeverBusyLoops(t *testing.T) {
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE t (id serial PRIMARY KEY)")
	cfg := srcConfig(s, "poll.interval.ms", "400")
	_, tcs := srcStart(t, cfg, 1)
	r := srcOpen(t, tcs[0], conformance.NewSourceContext(t, "pg", 0))
	// Count the queries the task runs while idle: one per poll interval.
	var before int64
	if err := s.Conn(t).QueryRow(context.Background(),
		"SELECT coalesce(sum(xact_commit), 0) FROM pg_stat_database WHERE datname = current_database()").Scan(&before); err != nil {
		t.Fatal(err)
	}
	r.quiet(2 * time.Second)
	var after int64
	time.Sleep(600 * time.Millisecond) // statistics are flushed at most every 500 ms
	if err := s.Conn(t).QueryRow(context.Background(),
		"SELECT coalesce(sum(xact_commit), 0) FROM pg_stat_database WHERE datname = current_database()").Scan(&after); err != nil {
		t.Fatal(err)
	}
	// 2 s at one query per 400 ms is about 5, plus the two stat queries
	// and connection setup; a busy loop would run hundreds.
	if n := after - before; n > 30 {
		t.Fatalf("%d transactions in 2 s of idle polling", n)
	}
}

func TestSourceOffsetsSurviveJSON(t *testing.T) {
	// Offsets come back from the offsets topic as json.Number and from the
	// conformance context as float64; both resume exactly.
	s := pgtest.Start(t)
	s.Exec(t, "CREATE TABLE t (id bigint PRIMARY KEY, at timestamp(6) NOT NULL)")
	s.Exec(t, "INSERT INTO t VALUES (9007199254740990, '2024-02-03 04:05:06.789012'), (9007199254740991, '2024-02-03 04:05:06.789013')")
	cfg := srcConfig(s, "mode", "timestamp+incrementing", "timestamp.column.name", "at")
	_, tcs := srcStart(t, cfg, 1)
	tc := conformance.NewSourceContext(t, "pg", 0)
	r := srcOpen(t, tcs[0], tc)
	got := r.pollFor(2)
	if err := tc.Commit(got[0]); err != nil {
		t.Fatal(err)
	}
	r.task.Close()
	r2 := srcOpen(t, tcs[0], tc)
	next := r2.pollFor(1)
	if srcField(next[0], "id") != int64(9007199254740991) {
		t.Fatalf("resumed at %v", srcValues(next))
	}
	r2.quiet(300 * time.Millisecond)
}
