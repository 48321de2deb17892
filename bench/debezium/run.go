package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluice-io/sluice/bench/internal/benchproc"
	"github.com/twmb/franz-go/pkg/kgo"
)

// measured is what one run of one system gave.
type measured struct {
	snapshotRate, streamRate float64 // rows/s, changes/s
	writerRate               float64 // the streaming writer's changes/s
	snapshotRSS, streamRSS   int64   // peak bytes
	lagRSS                   int64
	streamCPU                time.Duration // the worker's CPU time while streaming
	lagP50, lagP99           time.Duration
	// load is the machine's 1-minute load average at the end of the
	// run: other processes' work shows in every figure.
	load float64
}

func (m measured) String() string {
	return fmt.Sprintf("snapshot %.0f rows/s, streaming %.0f changes/s (writer %.0f/s), RSS %d/%d/%d MiB, lag p50 %v p99 %v",
		m.snapshotRate, m.streamRate, m.writerRate, m.snapshotRSS>>20, m.streamRSS>>20, m.lagRSS>>20, m.lagP50, m.lagP99)
}

// runOnce runs one system through the three phases with a connector of
// its own (name: its slot, publication and topic prefix).
func runOnce(ctx context.Context, o options, pg *postgres, b *broker, sys system, name string) (m measured, err error) {
	if err := pg.exec(ctx, `TRUNCATE stream, lag`); err != nil {
		return m, err
	}
	dir := mkdir(o.workDir, name)
	config := map[string]string{
		"connector.class":             "io.debezium.connector.postgresql.PostgresConnector",
		"tasks.max":                   "1",
		"database.hostname":           "127.0.0.1",
		"database.port":               strconv.Itoa(pg.port),
		"database.user":               "postgres",
		"database.password":           "postgres",
		"database.dbname":             "postgres",
		"topic.prefix":                name,
		"plugin.name":                 "pgoutput",
		"slot.name":                   name,
		"publication.name":            name + "_pub",
		"publication.autocreate.mode": "filtered",
		"table.include.list":          "public.snap,public.stream,public.lag",
		"snapshot.mode":               "initial",
	}
	// The topics exist before the worker starts, one partition each, so
	// that neither system's figures hold the creation of a topic.
	for _, table := range []string{"snap", "stream", "lag"} {
		if err := b.CreateTopic(ctx, name+".public."+table, 1); err != nil {
			return m, err
		}
	}
	p, err := sys.start(dir, name, config)
	if err != nil {
		return m, err
	}
	defer func() {
		p.Stop(60 * time.Second)
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if cerr := dropSlot(cctx, pg, name); cerr != nil && err == nil {
			err = cerr
		}
		b.deleteTopics(cctx, name+".")
	}()
	pid := p.Pid()

	// Snapshot.
	rss := sampleRSS(pid)
	var snapFirst, snapEnd time.Time
	snapFirst, snapEnd, err = timeRecords(ctx, b, name+".public.snap", int64(o.rows), o.phaseTimeout, p.Alive)
	m.snapshotRate = float64(o.rows) / max(snapEnd.Sub(snapFirst).Seconds(), 0.1)
	m.snapshotRSS = rss.peak()
	if err != nil {
		return m, fmt.Errorf("snapshot: %w", err)
	}

	// Streaming under a write load that outruns the connector.
	rss = sampleRSS(pid)
	_, cpu0, _ := procStat(pid)
	writer := make(chan error, 1)
	writeStart := time.Now()
	go func() {
		err := writeBurst(ctx, pg, o.changes, o.txRows)
		m.writerRate = float64(o.changes) / time.Since(writeStart).Seconds()
		writer <- err
	}()
	var streamEnd time.Time
	_, streamEnd, err = timeRecords(ctx, b, name+".public.stream", int64(o.changes), o.phaseTimeout, p.Alive)
	m.streamRate = float64(o.changes) / streamEnd.Sub(writeStart).Seconds()
	_, cpu1, _ := procStat(pid)
	m.streamCPU = cpu1 - cpu0
	m.streamRSS = rss.peak()
	if werr := <-writer; werr != nil {
		return m, fmt.Errorf("streaming writer: %w", werr)
	}
	if err != nil {
		return m, fmt.Errorf("streaming: %w", err)
	}

	// Lag under a steady load.
	rss = sampleRSS(pid)
	m.lagP50, m.lagP99, err = measureLag(ctx, o, pg, b, name+".public.lag", p.Alive)
	m.lagRSS = rss.peak()
	if err != nil {
		return m, fmt.Errorf("lag: %w", err)
	}
	m.load, _ = benchproc.LoadAverage()
	return m, nil
}

// timeRecords waits until topic holds want records and returns when its
// first record and its last were seen, polling its end offsets every 100 ms.
func timeRecords(ctx context.Context, b *broker, topic string, want int64, timeout time.Duration, alive func() error) (first, last time.Time, err error) {
	deadline := time.Now().Add(timeout)
	var n int64
	for {
		if n, err = b.records(ctx, topic); err == nil {
			now := time.Now()
			if n > 0 && first.IsZero() {
				first = now
			}
			if n >= want {
				if n > want {
					return first, now, fmt.Errorf("topic %s holds %d records, more than the %d expected", topic, n, want)
				}
				return first, now, nil
			}
		}
		if err := alive(); err != nil {
			return first, last, err
		}
		if ctx.Err() != nil {
			return first, last, ctx.Err()
		}
		if time.Now().After(deadline) {
			return first, last, fmt.Errorf("topic %s holds %d of %d records after %v", topic, n, want, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeBurst commits changes changes into stream as fast as PostgreSQL
// takes them: inserts of txRows rows a transaction, then updates of the
// same rows, txRows a transaction.
func writeBurst(ctx context.Context, pg *postgres, changes, txRows int) error {
	conn, err := pg.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows := changes / 2
	for lo := 1; lo <= rows; lo += txRows {
		if _, err := conn.Exec(ctx, `INSERT INTO stream SELECT g, 'customer-' || g, (g % 100000) / 100.0, now(), g % 3 = 0
			FROM generate_series($1::bigint, $2::bigint) g`, lo, min(lo+txRows-1, rows)); err != nil {
			return err
		}
	}
	for lo := 1; lo <= rows; lo += txRows {
		if _, err := conn.Exec(ctx, `UPDATE stream SET amount = amount + 1, active = NOT active WHERE id BETWEEN $1 AND $2`, lo, min(lo+txRows-1, rows)); err != nil {
			return err
		}
	}
	return nil
}

// measureLag commits lagRate rows a second, 10 a transaction, for
// lagDuration, while a consumer reads the topic, and returns the p50 and
// p99 of the time from each row's commit (source.ts_us) to its record's
// arrival at the consumer, leaving out the first 2 s.
func measureLag(ctx context.Context, o options, pg *postgres, b *broker, topic string, alive func() error) (p50, p99 time.Duration, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.AllowAutoTopicCreation())
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	conn, err := pg.connect(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	want := int(o.lagRate) * int(o.lagDuration/time.Second)
	begin := time.Now()
	skipBefore := begin.Add(2 * time.Second).UnixMicro()
	wrote := make(chan error, 1)
	go func() {
		every := time.Second * 10 / time.Duration(o.lagRate)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for id := 1; id <= want; id += 10 {
			if _, err := conn.Exec(ctx, `INSERT INTO lag SELECT g, 'customer-' || g, (g % 100000) / 100.0, now(), g % 3 = 0
				FROM generate_series($1::bigint, $2::bigint) g`, id, id+9); err != nil {
				wrote <- err
				return
			}
			<-tick.C
		}
		wrote <- nil
	}()
	var lags []time.Duration
	seen := 0
	deadline := begin.Add(o.lagDuration + o.phaseTimeout)
	for seen < want {
		if err := alive(); err != nil {
			return 0, 0, err
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("%d of %d records in %s", seen, want, topic)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		fs.EachRecord(func(r *kgo.Record) {
			arrived := time.Now()
			seen++
			var ev struct {
				Payload struct {
					Source struct {
						TsUs int64 `json:"ts_us"`
					} `json:"source"`
				} `json:"payload"`
			}
			if json.Unmarshal(r.Value, &ev) != nil || ev.Payload.Source.TsUs == 0 {
				err = fmt.Errorf("a record of %s without payload.source.ts_us: %.200s", topic, r.Value)
				return
			}
			if ev.Payload.Source.TsUs >= skipBefore {
				lags = append(lags, arrived.Sub(time.UnixMicro(ev.Payload.Source.TsUs)))
			}
		})
		if err != nil {
			return 0, 0, err
		}
	}
	if werr := <-wrote; werr != nil {
		return 0, 0, werr
	}
	if len(lags) == 0 {
		return 0, 0, fmt.Errorf("no record of %s after the first 2 s", topic)
	}
	slices.Sort(lags)
	return lags[len(lags)*50/100], lags[min(len(lags)-1, len(lags)*99/100)], nil
}

// dropSlot drops a run's slot once its walsender is gone, and its
// publication, so that the slot holds no WAL for the runs that follow.
func dropSlot(ctx context.Context, pg *postgres, name string) error {
	conn, err := pg.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for {
		var active *bool
		err := conn.QueryRow(ctx, `SELECT active FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&active)
		if err != nil {
			break // no slot
		}
		if active != nil && !*active {
			if _, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, name); err != nil {
				return fmt.Errorf("drop slot %s: %w", name, err)
			}
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slot %s still active: %w", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	_, err = conn.Exec(ctx, `DROP PUBLICATION IF EXISTS `+pgx.Identifier{name + "_pub"}.Sanitize())
	return err
}
