package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors/postgres"
	"github.com/sluice-io/sluice/internal/actors"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// pgSinkBatch is the raw writer's rows per transaction: the most a sink
// task's Write gets (the runtime's consumer max.poll.records, 500).
const pgSinkBatch = 500

// pgSinkSpec is what one run writes.
type pgSinkSpec struct {
	rows      int
	tasks     int
	valueSize int
	mode      string // insert or upsert
}

// pgSinkRow is row i of a run: an id, a customer name, an amount, a time
// and a padded note, a typical narrow business row.
type pgSinkRow struct {
	id       int64
	customer string
	amount   float64
	at       time.Time
	note     string
}

func pgSinkRowOf(i int, pad string) pgSinkRow {
	return pgSinkRow{
		id:       int64(i),
		customer: "customer-" + strconv.Itoa(i%1000),
		amount:   float64(i%100000) / 4,
		at:       time.UnixMilli(1700000000000 + int64(i)*1000).UTC(),
		note:     pad,
	}
}

// pgSinkSchema is the Connect schema of the rows, as JsonConverter with
// schemas.enable=true writes it in every record's envelope.
const pgSinkSchema = `{"type":"struct","name":"bench_row","optional":false,"fields":[` +
	`{"field":"id","type":"int64","optional":false},` +
	`{"field":"customer","type":"string","optional":false},` +
	`{"field":"amount","type":"double","optional":false},` +
	`{"field":"at","type":"int64","name":"org.apache.kafka.connect.data.Timestamp","version":1,"optional":false},` +
	`{"field":"note","type":"string","optional":true}]}`

func appendPgSinkValue(dst []byte, r pgSinkRow) []byte {
	dst = append(dst, `{"schema":`...)
	dst = append(dst, pgSinkSchema...)
	dst = append(dst, `,"payload":{"id":`...)
	dst = strconv.AppendInt(dst, r.id, 10)
	dst = append(dst, `,"customer":"`...)
	dst = append(dst, r.customer...)
	dst = append(dst, `","amount":`...)
	dst = strconv.AppendFloat(dst, r.amount, 'g', -1, 64)
	dst = append(dst, `,"at":`...)
	dst = strconv.AppendInt(dst, r.at.UnixMilli(), 10)
	dst = append(dst, `,"note":"`...)
	dst = append(dst, r.note...)
	return append(dst, `"}}`...)
}

// fillPgSinkTopic writes the run's records to a new topic, one partition
// per task, keyed by id; it is not timed.
func fillPgSinkTopic(ctx context.Context, e *env, topic string, s pgSinkSpec) error {
	if err := e.createTopic(ctx, topic, int32(s.tasks)); err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), actors.ProducerOpts()...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pad := strings.Repeat("n", s.valueSize)
	recs := make([]*kgo.Record, 0, s.rows)
	for i := range s.rows {
		recs = append(recs, &kgo.Record{
			Topic: topic, Partition: -1,
			Key:   strconv.AppendInt(nil, int64(i), 10),
			Value: appendPgSinkValue(nil, pgSinkRowOf(i, pad)),
		})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("fill topic %s: %w", topic, err)
	}
	return nil
}

// pgSinkTableDDL is the table both sides write, as the sink's auto.create
// makes it with pk.mode record_value on id.
func pgSinkTableDDL(table string) string {
	return "CREATE TABLE " + pgx.Identifier{table}.Sanitize() + ` (id bigint NOT NULL, customer text NOT NULL,
		amount double precision NOT NULL, at timestamp NOT NULL, note text, PRIMARY KEY (id))`
}

// runPgSinkRaw is the limit: a plain pgx program writing the same rows
// into the same kind of table, one goroutine and connection per task, each
// row an INSERT (INSERT ... ON CONFLICT DO UPDATE in upsert mode) queued in
// a pgx.Batch, pgSinkBatch rows per transaction, as a Go developer would
// write it. It does not read Kafka: it measures what PostgreSQL and pgx
// allow, and the sink's ratio to it is the cost of everything else
// (consuming, converting, the runtime, building statements).
func runPgSinkRaw(ctx context.Context, url, table string, s pgSinkSpec) (time.Duration, time.Duration, error) {
	pad := strings.Repeat("n", s.valueSize)
	sql := "INSERT INTO " + pgx.Identifier{table}.Sanitize() + " (id, customer, amount, at, note) VALUES ($1, $2, $3, $4, $5)"
	if s.mode == "upsert" {
		sql += " ON CONFLICT (id) DO UPDATE SET customer = EXCLUDED.customer, amount = EXCLUDED.amount, at = EXCLUDED.at, note = EXCLUDED.note"
	}
	conns := make([]*pgx.Conn, s.tasks)
	for w := range conns {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return 0, 0, err
		}
		defer conn.Close(context.Background())
		conns[w] = conn
	}
	// Connections are opened before the clock starts: the raw side is the
	// limit, and the sink's own start-up is part of what a user waits for.
	errs := make(chan error, s.tasks)
	start := time.Now()
	for w, conn := range conns {
		go func() {
			var b pgx.Batch
			flush := func() error {
				if b.Len() == 0 {
					return nil
				}
				err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return tx.SendBatch(ctx, &b).Close() })
				b = pgx.Batch{}
				return err
			}
			// Worker w writes the rows the sink's task would get from
			// partition w, roughly: every tasks-th row.
			for i := w; i < s.rows; i += s.tasks {
				r := pgSinkRowOf(i, pad)
				b.Queue(sql, r.id, r.customer, r.amount, r.at, r.note)
				if b.Len() == pgSinkBatch {
					if err := flush(); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- flush()
		}()
	}
	var first error
	for range conns {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	took := time.Since(start)
	pids := make([]uint32, len(conns))
	for i, conn := range conns {
		pids[i] = conn.PgConn().PID()
	}
	return took, pgBackendsCPU(pids), first
}

// pgBackendsCPU is the CPU time the server processes pids used so far (user
// and system, from /proc: the server runs on this machine), 0 for one it
// cannot read. It measures the database's share of a run, which the load
// of a shared machine disturbs far less than the wall clock.
func pgBackendsCPU(pids []uint32) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command, which is in parentheses and may hold
		// spaces: state is the first, utime the 12th, stime the 13th.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(utime+stime) * time.Second / pgClockTicks
	}
	return total
}

// pgClockTicks is Linux's USER_HZ, the unit of /proc's CPU times.
const pgClockTicks = 100

// pgSinkTimes are the ends of a sink run: first when the table first held a
// row, done when it held every row.
type pgSinkTimes = firstDone

// runPgSinkSluice creates a JDBC sink connector on the pre-filled topic and
// waits until the table holds every row. The clock starts before the
// connector config is written, so it includes what a user waits for:
// config round trip, task start, joining the consumer group.
func runPgSinkSluice(ctx context.Context, e *env, conn *pgx.Conn, url, name, topic, table string, s pgSinkSpec) (pgSinkTimes, time.Duration, error) {
	var t pgSinkTimes
	cfg := map[string]string{
		"name":                           name,
		"connector.class":                postgres.SinkClass,
		"tasks.max":                      strconv.Itoa(s.tasks),
		"topics":                         topic,
		"connection.url":                 url,
		"insert.mode":                    s.mode,
		"pk.mode":                        "record_value",
		"pk.fields":                      "id",
		"table.name.format":              table,
		"key.converter":                  "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "true",
	}
	var serverStart time.Time
	if err := conn.QueryRow(ctx, "SELECT now()").Scan(&serverStart); err != nil {
		return t, 0, err
	}
	start := time.Now()
	if err := e.createConnector(ctx, name, cfg); err != nil {
		return t, 0, err
	}
	count := "SELECT count(*) FROM " + pgx.Identifier{table}.Sanitize()
	// Polled every 20 ms: fine against runs of seconds; a count(*) of a
	// table of this size costs the database little.
	err := e.pollRun(ctx, name, 20*time.Millisecond, func() (bool, error) {
		var n int
		if err := conn.QueryRow(ctx, count).Scan(&n); err != nil {
			return false, err
		}
		if n > s.rows {
			return false, fmt.Errorf("table %s holds %d rows, more than the %d records", table, n, s.rows)
		}
		if n > 0 && t.first == 0 {
			t.first = time.Since(start)
		}
		if n == s.rows {
			t.done = time.Since(start)
		}
		return n == s.rows, nil
	})
	if err != nil {
		return t, 0, err
	}
	// The sink tasks' connections, still open: those of this database
	// opened since the run started, but the one asking.
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()
		AND pid <> pg_backend_pid() AND backend_start >= $1`, serverStart)
	if err != nil {
		return t, 0, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[uint32])
	return t, pgBackendsCPU(pids), err
}

type pgSinkPair = runTimes[pgSinkTimes]

// pgSinkServerCPU adds up the database server's CPU time spent on each
// side's writes.
type pgSinkServerCPU struct{ raw, sluice time.Duration }

// runPgSinkPair fills a topic, then runs the raw writer and the sink one
// after the other into tables of their own, rawFirst choosing the order.
func runPgSinkPair(ctx context.Context, e *env, pg *pgtest.Server, conn *pgx.Conn, run int, s pgSinkSpec, rawFirst bool, cpu *pgSinkServerCPU) (pgSinkPair, error) {
	var r pgSinkPair
	name := fmt.Sprintf("pgsink-%d", run)
	topic, rawTable, sinkTable := name, name+"-raw", name+"-sluice"
	if err := fillPgSinkTopic(ctx, e, topic, s); err != nil {
		return r, err
	}
	for _, table := range []string{rawTable, sinkTable} {
		if _, err := conn.Exec(ctx, pgSinkTableDDL(table)); err != nil {
			return r, err
		}
	}
	doRaw := func() (err error) {
		runtime.GC()
		var server time.Duration
		r.raw, server, err = runPgSinkRaw(ctx, pg.URL(), rawTable, s)
		cpu.raw += server
		return err
	}
	doSluice := func() (err error) {
		runtime.GC()
		var server time.Duration
		if r.sluice, server, err = runPgSinkSluice(ctx, e, conn, pg.JDBCURL(), name, topic, sinkTable, s); err != nil {
			return err
		}
		cpu.sluice += server
		return e.deleteConnector(ctx, name)
	}
	if err := inOrder(rawFirst, nil, doRaw, doSluice); err != nil {
		return r, err
	}
	// Both tables hold the same rows, the sink's as many as the topic.
	var diff int
	q := fmt.Sprintf(`SELECT count(*) FROM (SELECT * FROM %[1]s EXCEPT ALL SELECT * FROM %[2]s
		UNION ALL (SELECT * FROM %[2]s EXCEPT ALL SELECT * FROM %[1]s)) d`, pgx.Identifier{rawTable}.Sanitize(), pgx.Identifier{sinkTable}.Sanitize())
	if err := conn.QueryRow(ctx, q).Scan(&diff); err != nil {
		return r, err
	}
	if diff != 0 {
		return r, fmt.Errorf("tables %s and %s differ in %d rows", rawTable, sinkTable, diff)
	}
	for _, table := range []string{rawTable, sinkTable} {
		if _, err := conn.Exec(ctx, "DROP TABLE "+pgx.Identifier{table}.Sanitize()); err != nil {
			return r, err
		}
	}
	return r, e.deleteTopic(ctx, topic)
}

func pgSinkTable(s pgSinkSpec, rows []pgSinkPair) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Kafka -> PostgreSQL, %d rows per run (%d tasks, insert.mode %s, note %d bytes), rows/s:\n", s.rows, s.tasks, s.mode, s.valueSize)
	fmt.Fprintf(&b, "%-6s %12s %12s %8s %14s\n", "run", "raw pgx", "sluice", "ratio", "first row (ms)")
	var raw, sl time.Duration
	for i, r := range rows {
		raw += r.raw
		sl += r.sluice.done
		fmt.Fprintf(&b, "%-6d %12.0f %12.0f %8.3f %14d\n", i, rate(int64(s.rows), r.raw), rate(int64(s.rows), r.sluice.done),
			r.raw.Seconds()/r.sluice.done.Seconds(), r.sluice.first.Milliseconds())
	}
	n := int64(s.rows) * int64(len(rows))
	fmt.Fprintf(&b, "%-6s %12.0f %12.0f %8.3f\n", "all", rate(n, raw), rate(n, sl), raw.Seconds()/sl.Seconds())
	return b.String()
}

func pgSinkSpecFromFlags(tb testing.TB) pgSinkSpec {
	s := pgSinkSpec{rows: *flagPgSinkRows, tasks: *flagPgSinkTasks, valueSize: *flagPgSinkValueSize, mode: *flagPgSinkInsertMode}
	if s.rows < 1 || s.tasks < 1 || (s.mode != "insert" && s.mode != "upsert") {
		tb.Fatalf("-bench.pg-sink-rows and -bench.pg-sink-tasks must be at least 1, -bench.pg-sink-mode insert or upsert")
	}
	return s
}

// BenchmarkPostgresSink writes the same rows through a plain pgx writer
// and through the JDBC sink (from a pre-filled topic, through the runtime),
// alternately, into one PostgreSQL, and reports:
//
//	raw-rows/s      the pgx writer
//	sluice-rows/s   the sink, from the connector's creation until the
//	                table holds every row
//	ratio-vs-raw    sluice-rows/s / raw-rows/s
//	first-row-ms    mean time from the connector's creation to the first
//	                row in the table (start-up: tasks, consumer group)
//
// One iteration is one pair of runs; ns/op is the time of a pair.
func BenchmarkPostgresSink(b *testing.B) {
	s := pgSinkSpecFromFlags(b)
	pg := pgtest.Start(b)
	e := newEnv(b)
	conn := pg.Conn(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var cpu pgSinkServerCPU
	rows := loopRuns(b, func(i int) (pgSinkPair, error) { return runPgSinkPair(ctx, e, pg, conn, i, s, i%2 == 0, &cpu) })
	raw := sum(rows, func(r pgSinkPair) time.Duration { return r.raw })
	sl := sum(rows, func(r pgSinkPair) time.Duration { return r.sluice.done })
	first := sum(rows, func(r pgSinkPair) time.Duration { return r.sluice.first })
	n := int64(s.rows) * int64(len(rows))
	b.ReportMetric(rate(n, raw), "raw-rows/s")
	b.ReportMetric(rate(n, sl), "sluice-rows/s")
	b.ReportMetric(raw.Seconds()/sl.Seconds(), "ratio-vs-raw")
	b.ReportMetric(float64(first.Milliseconds())/float64(len(rows)), "first-row-ms")
	b.ReportMetric(float64(cpu.raw.Microseconds())/float64(n), "raw-server-cpu-us/row")
	b.ReportMetric(float64(cpu.sluice.Microseconds())/float64(n), "sluice-server-cpu-us/row")
	b.Log("\n" + pgSinkTable(s, rows))
}

// TestPostgresSinkBenchSmoke runs the benchmark's code once with tiny
// sizes, so that `go test ./bench/` keeps it working, and checks that both
// sides wrote the same rows.
func TestPostgresSinkBenchSmoke(t *testing.T) {
	pg := pgtest.Start(t)
	e := newEnv(t)
	conn := pg.Conn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := pgSinkSpec{rows: 1500, tasks: 2, valueSize: 16, mode: "upsert"}
	var cpu pgSinkServerCPU
	rows := smokePairs(t, func(run int, rawFirst bool) (pgSinkPair, error) {
		return runPgSinkPair(ctx, e, pg, conn, run, s, rawFirst, &cpu)
	})
	// No check of cpu: at these sizes the server's work is a tick or two
	// of /proc's 10 ms.
	t.Log("\n" + pgSinkTable(s, rows))
}
