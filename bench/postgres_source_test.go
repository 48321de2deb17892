package bench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/connectors/postgres"
	"github.com/sluice-io/sluice/internal/actors"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// pgBenchTable creates the benchmark's table: an id, a text, a decimal, a
// timestamp and an int, a typical narrow business row.
func pgBenchTable(tb testing.TB, s *pgtest.Server, rows int) {
	tb.Helper()
	s.Exec(tb, `CREATE TABLE orders (id bigserial PRIMARY KEY, customer text NOT NULL, amount numeric(10,2) NOT NULL,
		created timestamptz NOT NULL DEFAULT '2024-01-01', qty int NOT NULL)`)
	s.Exec(tb, `INSERT INTO orders (customer, amount, qty)
		SELECT 'customer-' || (g % 1000), (g % 100000) / 100.0, g % 50 FROM generate_series(1, $1::int) g`, rows)
	s.Exec(tb, "VACUUM ANALYZE orders")
}

// runPgRaw is the limit: a plain pgx program reading the table with the
// connector's queries (incrementing mode: WHERE id > $1 ORDER BY id LIMIT
// batch) and decoding every value, on one connection.
func runPgRaw(ctx context.Context, url string, rows, batch int) (time.Duration, error) {
	start := time.Now()
	if err := readPgRows(ctx, url, rows, batch, func([]any) error { return nil }); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// readPgRows reads the table as runPgRaw does, the connector's
// incrementing-mode query one batch at a time, and hands each row's decoded
// values to row; it fails unless it read rows rows.
func readPgRows(ctx context.Context, url string, rows, batch int, row func(v []any) error) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	sql := `SELECT "id", "customer", "amount", "created", "qty" FROM "public"."orders" WHERE "id" > $1::bigint ORDER BY "id" ASC LIMIT ` + strconv.Itoa(batch)
	var last int64
	n := 0
	for {
		r, err := conn.Query(ctx, sql, last)
		if err != nil {
			return err
		}
		got := 0
		for r.Next() {
			v, err := r.Values()
			if err == nil {
				err = row(v)
			}
			if err != nil {
				r.Close()
				return err
			}
			last = v[0].(int64)
			got++
		}
		if err := r.Err(); err != nil {
			return err
		}
		n += got
		if got < batch {
			break
		}
	}
	if n != rows {
		return fmt.Errorf("raw reader read %d rows, want %d", n, rows)
	}
	return nil
}

// pgRawSchemaPrefix is the start of every record the JDBC source writes
// for the orders table with JsonConverter and schemas.enable (its schema
// envelope), so that runPgRawProduce writes records of Sluice's size.
const pgRawSchemaPrefix = `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},` +
	`{"type":"string","optional":false,"field":"customer"},{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",` +
	`"version":1,"parameters":{"scale":"2"},"field":"amount"},{"type":"int64","optional":false,` +
	`"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"created"},{"type":"int32","optional":false,"field":"qty"}],` +
	`"optional":false,"name":"orders"},"payload":`

// appendPgRawValue appends the JSON of one orders row (pgx's Values) as
// JsonConverter with schemas writes the JDBC source's record of it.
func appendPgRawValue(b []byte, v []any, unscaled *big.Int) ([]byte, error) {
	amount, ok := v[2].(pgtype.Numeric)
	if !ok || amount.Exp < -2 {
		return nil, fmt.Errorf("amount %v is not a numeric(10,2)", v[2])
	}
	unscaled.Set(amount.Int)
	for range amount.Exp + 2 { // numeric(10,2): scale 2
		unscaled.Mul(unscaled, big.NewInt(10))
	}
	b = append(b, pgRawSchemaPrefix...)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, v[0].(int64), 10)
	b = append(b, `,"customer":`...)
	b = strconv.AppendQuote(b, v[1].(string))
	b = append(b, `,"amount":"`...)
	b = base64.StdEncoding.AppendEncode(b, converters.BigIntegerBytes(unscaled))
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, v[3].(time.Time).UnixMilli(), 10)
	b = append(b, `,"qty":`...)
	b = strconv.AppendInt(b, int64(v[4].(int32)), 10)
	return append(b, "}}"...), nil
}

// runPgRawProduce is runPgRaw that also produces every row to topic, as a
// minimal Go program would: the row's JSON (the same envelope and fields as
// Sluice's records, written by hand) through one franz-go client with the
// worker's producer options, until every record is acknowledged. Its rate
// over runPgRaw's is what writing the rows to Kafka (the producer and the
// in-process broker, on the same two cores) costs without Sluice: the bound
// of Sluice's ratio-vs-raw.
func runPgRawProduce(ctx context.Context, e *env, url, topic string, rows, batch int) (time.Duration, error) {
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), actors.ProducerOpts()...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var (
		acks     sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	onAck := func(_ *kgo.Record, err error) {
		if err != nil {
			errMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
		}
		acks.Done()
	}
	start := time.Now()
	var unscaled big.Int // reused: BigIntegerBytes copies it out
	err = readPgRows(ctx, url, rows, batch, func(v []any) error {
		b, err := appendPgRawValue(make([]byte, 0, len(pgRawSchemaPrefix)+128), v, &unscaled)
		if err != nil {
			return err
		}
		acks.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: -1, Value: b}, onAck)
		return nil
	})
	if err != nil {
		return 0, err
	}
	acks.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return time.Since(start), nil
}

// runPgTask is the connector alone: the JDBC source's task, opened as the
// runtime opens it and polled in a loop until it returned every row as a
// Connect record (a struct of the row's values, with its offset), with no
// runtime, converter or Kafka behind it. Its time against runPgRaw's is
// the connector's own cost; Sluice's against its is the runtime's.
func runPgTask(ctx context.Context, tb testing.TB, pg *pgtest.Server, rows, batch int) (time.Duration, error) {
	cfg := map[string]string{
		"connector.class":          postgres.SourceClass,
		"tasks.max":                "1",
		"connection.url":           pg.JDBCURL(),
		"mode":                     "incrementing",
		"incrementing.column.name": "id",
		"topic.prefix":             "task-",
		"batch.max.rows":           strconv.Itoa(batch),
	}
	start := time.Now()
	c := &postgres.JdbcSourceConnector{}
	if err := c.Start(ctx, conformance.NewConnectorContext(tb, "pg-task"), cfg); err != nil {
		return 0, err
	}
	defer c.Stop()
	tcs, err := c.TaskConfigs(ctx, 1)
	if err != nil {
		return 0, err
	}
	task := &postgres.SourceTask{}
	defer task.Close()
	if err := task.Open(ctx, conformance.NewSourceContext(tb, "pg-task", 0), tcs[0]); err != nil {
		return 0, err
	}
	n := 0
	for n < rows {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		recs, err := task.Poll(pctx)
		cancel()
		if err != nil {
			return 0, err
		}
		for _, r := range recs {
			if _, ok := r.Value.(*connectors.StructValue); !ok || r.SourceOffset()[postgres.OffsetIncrementing] != int64(n+1) {
				return 0, fmt.Errorf("record %d: %T value, offset %v", n, r.Value, r.Offset)
			}
			n++
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	return time.Since(start), nil
}

// runPgSluice creates the JDBC source and waits until Kafka acknowledged
// every row's record (acked) and the last row's offset is committed (the
// returned sluiceTimes, timed from the connector's creation).
func runPgSluice(ctx context.Context, e *env, pg *pgtest.Server, name string, rows, batch int) (sluiceTimes, error) {
	var t sluiceTimes
	prefix := name + "-"
	cfg := map[string]string{
		"name":                     name,
		"connector.class":          postgres.SourceClass,
		"tasks.max":                "1",
		"connection.url":           pg.JDBCURL(),
		"mode":                     "incrementing",
		"incrementing.column.name": "id",
		"topic.prefix":             prefix,
		"batch.max.rows":           strconv.Itoa(batch),
		"key.converter":            "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":          "org.apache.kafka.connect.json.JsonConverter",
	}
	topic := prefix + "orders"
	if err := e.createTopic(ctx, topic, 1); err != nil {
		return t, err
	}
	start := time.Now()
	if err := e.createConnector(ctx, name, cfg); err != nil {
		return t, err
	}
	t, err := e.waitSluice(ctx, name, topic, int64(rows), start, func() (bool, error) {
		for _, po := range e.offsets.Offsets(name) {
			if pgOffsetInt(po.Offset[postgres.OffsetIncrementing]) == int64(rows) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return t, err
	}
	if err := e.deleteConnector(ctx, name); err != nil {
		return t, err
	}
	return t, e.deleteTopic(ctx, topic)
}

func pgOffsetInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case json.Number:
		n, _ := x.Int64()
		return n
	}
	return -1
}

// BenchmarkPostgresSource measures rows/s of the JDBC source, table to
// Kafka through the runtime, against a plain pgx reader running the same
// SELECTs on the same database in the same process, alternating which goes
// first.
func BenchmarkPostgresSource(b *testing.B) {
	pg := pgtest.Start(b)
	rows, batch := *flagPgRows, *flagPgBatch
	pgBenchTable(b, pg, rows)
	e := newEnv(b)
	ctx := context.Background()
	var rawTotal, produceTotal, taskTotal, sluiceTotal, ackedTotal time.Duration
	// CPU of this process per side: a shared machine's load moves the
	// wall clock far more than it moves these.
	var rawCPU, produceCPU, taskCPU, sluiceCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var raw, produce, task time.Duration
		var sl sluiceTimes
		var err error
		timed := func(cpu *time.Duration, run func() error) func() error {
			return func() error {
				c0 := processCPU()
				err := run()
				*cpu += processCPU() - c0
				return err
			}
		}
		steps := []func() error{
			timed(&rawCPU, func() error { raw, err = runPgRaw(ctx, pg.URL(), rows, batch); return err }),
			timed(&produceCPU, func() error {
				topic := fmt.Sprintf("pg-produce-%d", i)
				if err := e.createTopic(ctx, topic, 1); err != nil {
					return err
				}
				if produce, err = runPgRawProduce(ctx, e, pg.URL(), topic, rows, batch); err != nil {
					return err
				}
				return e.deleteTopic(ctx, topic)
			}),
			timed(&taskCPU, func() error { task, err = runPgTask(ctx, b, pg, rows, batch); return err }),
			timed(&sluiceCPU, func() error { sl, err = runPgSluice(ctx, e, pg, fmt.Sprintf("pg-%d", i), rows, batch); return err }),
		}
		if i%2 == 1 {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			runtime.GC()
			if err := step(); err != nil {
				b.Fatal(err)
			}
		}
		b.Logf("run %d: raw pgx %.0f rows/s, raw pgx + produce %.0f rows/s, task alone %.0f rows/s, sluice acked %.0f rows/s, committed %.0f rows/s", i,
			float64(rows)/raw.Seconds(), float64(rows)/produce.Seconds(), float64(rows)/task.Seconds(),
			float64(rows)/sl.acked.Seconds(), float64(rows)/sl.committed.Seconds())
		rawTotal += raw
		produceTotal += produce
		taskTotal += task
		sluiceTotal += sl.committed
		ackedTotal += sl.acked
	}
	b.StopTimer()
	rawRate := float64(rows*b.N) / rawTotal.Seconds()
	taskRate := float64(rows*b.N) / taskTotal.Seconds()
	sluiceRate := float64(rows*b.N) / sluiceTotal.Seconds()
	b.ReportMetric(rawRate, "raw-rows/s")
	b.ReportMetric(taskRate, "task-rows/s")
	produceRate := float64(rows*b.N) / produceTotal.Seconds()
	b.ReportMetric(produceRate, "rawproduce-rows/s")
	b.ReportMetric(produceRate/rawRate, "rawproduce-ratio-vs-raw")
	b.ReportMetric(sluiceRate, "sluice-rows/s")
	ackedRate := float64(rows*b.N) / ackedTotal.Seconds()
	b.ReportMetric(ackedRate, "sluice-acked-rows/s")
	b.ReportMetric(taskRate/rawRate, "task-ratio-vs-raw")
	b.ReportMetric(sluiceRate/rawRate, "ratio-vs-raw")
	b.ReportMetric(ackedRate/rawRate, "acked-ratio-vs-raw")
	perRow := func(cpu time.Duration) float64 { return float64(cpu.Microseconds()) / float64(rows*b.N) }
	b.ReportMetric(perRow(rawCPU), "raw-cpu-us/row")
	b.ReportMetric(perRow(produceCPU), "rawproduce-cpu-us/row")
	b.ReportMetric(perRow(taskCPU), "task-cpu-us/row")
	b.ReportMetric(perRow(sluiceCPU), "sluice-cpu-us/row")
}

// TestPostgresSourceBenchSmoke runs the benchmark's code with a small table,
// so that `go test ./bench/` keeps it working.
func TestPostgresSourceBenchSmoke(t *testing.T) {
	pg := pgtest.Start(t)
	const rows, batch = 3000, 500
	pgBenchTable(t, pg, rows)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := runPgRaw(ctx, pg.URL(), rows, batch); err != nil {
		t.Fatal(err)
	}
	if err := e.createTopic(ctx, "pg-smoke-produce", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := runPgRawProduce(ctx, e, pg.URL(), "pg-smoke-produce", rows, batch); err != nil {
		t.Fatal(err)
	}
	if n, err := e.endOffsets(ctx, "pg-smoke-produce"); err != nil || n != rows {
		t.Fatalf("raw producer's topic holds %d records (%v), want %d", n, err, rows)
	}
	if _, err := runPgTask(ctx, t, pg, rows, batch); err != nil {
		t.Fatal(err)
	}
	checkPgRawValue(ctx, t, pg)
	if _, err := runPgSluice(ctx, e, pg, "pg-smoke", rows, batch); err != nil {
		t.Fatal(err)
	}
}

// checkPgRawValue: the raw producer writes the bytes Sluice writes, so that
// the two sides' records weigh the same (rows with a whole, a one-decimal
// and a two-decimal amount).
func checkPgRawValue(ctx context.Context, t *testing.T, pg *pgtest.Server) {
	cfg := map[string]string{
		"connector.class":          postgres.SourceClass,
		"tasks.max":                "1",
		"connection.url":           pg.JDBCURL(),
		"mode":                     "incrementing",
		"incrementing.column.name": "id",
		"topic.prefix":             "check-",
		"batch.max.rows":           "200",
	}
	c := &postgres.JdbcSourceConnector{}
	if err := c.Start(ctx, conformance.NewConnectorContext(t, "pg-check"), cfg); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	tcs, err := c.TaskConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	task := &postgres.SourceTask{}
	defer task.Close()
	if err := task.Open(ctx, conformance.NewSourceContext(t, "pg-check", 0), tcs[0]); err != nil {
		t.Fatal(err)
	}
	var recs []*connectors.SourceRecord
	for len(recs) < 200 && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		got, err := task.Poll(pctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, got...)
	}
	conv := converters.NewJSONConverter()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, id := range []int64{1, 10, 100} {
		want, err := conv.FromConnect("check-orders", recs[id-1].ValueSchema, recs[id-1].Value)
		if err != nil {
			t.Fatal(err)
		}
		r, err := conn.Query(ctx, `SELECT "id", "customer", "amount", "created", "qty" FROM "public"."orders" WHERE "id" = $1`, id)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Next() {
			t.Fatalf("row %d: %v", id, r.Err())
		}
		v, err := r.Values()
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendPgRawValue(nil, v, new(big.Int))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("row %d: the raw producer writes\n%s\nSluice writes\n%s", id, got, want)
		}
	}
}
