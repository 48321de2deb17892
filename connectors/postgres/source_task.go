package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
)

// srcFetchTimeout bounds one round of queries of a table. It is independent of
// Poll's deadline (500 ms in the runtime): a query that takes longer than a
// Poll keeps running, and a later Poll picks up its rows, where cancelling
// it at every deadline would never get a slow table anywhere.
const srcFetchTimeout = 2 * time.Minute

// srcCloseTimeout bounds closing the connection (a Terminate message).
const srcCloseTimeout = 5 * time.Second

// srcFingerprintSQL summarises a table's columns, so that each fetch can
// tell in the same round trip whether the cached description still holds.
const srcFingerprintSQL = `SELECT coalesce(string_agg(a.attname || ':' || a.atttypid || ':' || a.atttypmod || ':' || a.attnotnull, ',' ORDER BY a.attnum), '')
	FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1::text::regclass AND a.attnum > 0 AND NOT a.attisdropped`

// SourceTask reads its tables (or the query) in turn: a table with more
// rows than one batch is read again at once, a table that has caught up
// waits poll.interval.ms. Queries run on a goroutine of the task's own, one
// at a time on the task's one connection, so Poll can return at its
// deadline while a query runs on.
type SourceTask struct {
	log    zerolog.Logger
	cfg    *sourceConfig
	states []*srcState

	pending []*connectors.SourceRecord

	// conn is used only by the fetch goroutine while one runs, and by
	// Close after it ended.
	conn      *pgx.Conn
	cursorSeq int
	dec       srcDecoder // the fetch goroutine's

	inflight *srcFetch
	ctx      context.Context // ends at Close: stops a running fetch
	cancel   context.CancelFunc
}

// srcState is one table (or the query) of a task.
type srcState struct {
	what      string // "table public.orders" or "the query", for messages
	table     srcTable
	from      string // the FROM item
	alias     string // qualifies column names: "q" for the query
	name      string // the value schema's name
	topic     string
	partition map[string]any

	// Offsets of the last row handed to Poll's caller.
	inc int64
	ts  time.Time

	// Written by the fetch goroutine only.
	fingerprint string
	cols        *srcColumns
	selectList  string
	cursor      string // bulk: the open WITH HOLD cursor of a pass, "" between passes

	next time.Time // when to query again
}

// srcFetch is one round of queries of one state, run by the fetch goroutine.
type srcFetch struct {
	st   *srcState
	done chan struct{}

	recs []*connectors.SourceRecord
	inc  int64
	ts   time.Time
	more bool // a full batch: more rows may wait
	err  error
}

var _ connectors.SourceTask = (*SourceTask)(nil)

func (t *SourceTask) Open(_ context.Context, tc connectors.SourceTaskContext, config map[string]string) error {
	cfg, err := parseSourceConfig(config)
	if err != nil {
		return err
	}
	t.cfg = cfg
	if l := tc.Logger(); l != nil {
		t.log = l.With().Str("connector_class", "JdbcSourceConnector").Logger()
	} else {
		t.log = zerolog.Nop()
	}
	pc, err := ParseURL(cfg.conn.URL, cfg.conn.User, cfg.conn.Password)
	if err != nil {
		return err
	}
	db := pc.Database
	t.ctx, t.cancel = context.WithCancel(context.Background())
	if cfg.query != "" {
		t.states = []*srcState{{
			what: "the query", from: "(" + cfg.query + ") AS q", alias: "q", topic: cfg.prefix,
			partition: map[string]any{PartitionQueryField: PartitionQueryValue},
		}}
	} else {
		raw, ok := config[sourceTablesKey]
		if !ok {
			return fmt.Errorf("task config has no %q: tasks get it from the connector's TaskConfigs", sourceTablesKey)
		}
		var pairs [][2]string
		if err := json.Unmarshal([]byte(raw), &pairs); err != nil {
			return fmt.Errorf("task config %q: %v", sourceTablesKey, err)
		}
		for _, p := range pairs {
			tb := srcTable{Schema: p[0], Name: p[1]}
			t.states = append(t.states, &srcState{
				what: "table " + tb.String(), table: tb, from: tb.sql(), name: tb.Name, topic: cfg.prefix + tb.Name,
				partition: map[string]any{
					PartitionProtocolField: PartitionProtocolV1,
					PartitionTableField:    db + "." + tb.String(),
				},
			})
		}
	}
	for _, st := range t.states {
		st.inc = math.MinInt64
		st.ts = time.Unix(0, 0).UTC() // Confluent's initial timestamp
		off, err := tc.Offset(st.partition)
		if err != nil {
			return fmt.Errorf("reading the committed offset of %s: %w", st.what, err)
		}
		if err := st.restore(off); err != nil {
			return fmt.Errorf("committed offset %v of %s: %w", off, st.what, err)
		}
	}
	return nil
}

// restore applies a committed offset.
func (st *srcState) restore(off map[string]any) error {
	if off == nil {
		return nil
	}
	if n, ok, err := srcOffsetInt(off[OffsetIncrementing]); err != nil {
		return err
	} else if ok {
		st.inc = n
	}
	ms, ok, err := srcOffsetInt(off[OffsetTimestamp])
	if err != nil {
		return err
	}
	if ok {
		nanos, _, err := srcOffsetInt(off[OffsetTimestampNanos])
		if err != nil {
			return err
		}
		if nanos == 0 {
			nanos = (ms%1000 + 1000) % 1000 * int64(time.Millisecond)
		}
		st.ts = srcOffsetTime(ms, nanos)
	}
	return nil
}

func (t *SourceTask) Poll(ctx context.Context) ([]*connectors.SourceRecord, error) {
	for {
		if len(t.pending) > 0 {
			n := min(len(t.pending), t.cfg.batch)
			out := t.pending[:n:n]
			t.pending = t.pending[n:]
			return out, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if t.inflight == nil {
			st := t.due()
			if wait := time.Until(st.next); wait > 0 {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					timer.Stop()
					return nil, nil
				case <-timer.C:
				}
			}
			t.start(st)
		}
		select {
		case <-ctx.Done():
			return nil, nil // the fetch runs on; the next Poll takes its rows
		case <-t.inflight.done:
		}
		f := t.inflight
		t.inflight = nil
		st := f.st
		if f.err != nil {
			// Query it again as soon as the runtime polls again (it backs
			// off after a retriable error).
			st.next = time.Now()
			return nil, f.err
		}
		if len(f.recs) > 0 {
			st.inc, st.ts = f.inc, f.ts
		}
		if f.more {
			st.next = time.Now()
		} else {
			st.next = time.Now().Add(t.cfg.pollInterval)
		}
		t.pending = f.recs
		// Prefetch: the next query runs while the runtime converts and
		// produces this batch, so the database and Kafka work in parallel.
		if next := t.due(); !next.next.After(time.Now()) {
			t.start(next)
		}
	}
}

// due returns the state to query next: the one whose time came first.
func (t *SourceTask) due() *srcState {
	best := t.states[0]
	for _, st := range t.states[1:] {
		if st.next.Before(best.next) {
			best = st
		}
	}
	return best
}

func (t *SourceTask) start(st *srcState) {
	f := &srcFetch{st: st, done: make(chan struct{}), inc: st.inc, ts: st.ts}
	t.inflight = f
	go t.fetch(f)
}

// fetch runs one round of queries; it owns t.conn until f.done closes.
func (t *SourceTask) fetch(f *srcFetch) {
	defer close(f.done)
	ctx, cancel := context.WithTimeout(t.ctx, srcFetchTimeout)
	defer cancel()
	err := t.fetchRecords(ctx, f)
	if err == nil {
		return
	}
	f.recs = nil
	if t.ctx.Err() != nil {
		// Close interrupted the fetch: not a failure of the task.
		err = context.Canceled
	}
	f.err = ClassifyError(err)
	if connectors.IsRetriable(f.err) {
		t.log.Warn().Err(err).Str("source", f.st.what).Msg("query failed; it is retried")
	}
	// After a failure the connection's state (an open cursor, a broken
	// stream) is unknown: start over on a new one, and a bulk pass over.
	if t.conn != nil {
		cctx, ccancel := context.WithTimeout(context.Background(), srcCloseTimeout)
		t.conn.Close(cctx)
		ccancel()
		t.conn = nil
	}
	for _, st := range t.states {
		st.cursor = ""
		if t.cfg.query != "" {
			st.cols = nil // described per connection
		}
	}
}

func (t *SourceTask) fetchRecords(ctx context.Context, f *srcFetch) error {
	if t.conn == nil {
		conn, err := t.cfg.connect(ctx)
		if err != nil {
			return err
		}
		t.conn = conn
	}
	st := f.st
	if t.cfg.mode == ModeBulk {
		return t.fetchBulk(ctx, f)
	}
	if st.cols == nil {
		if err := t.describe(ctx, st); err != nil {
			return err
		}
	}
	sql, args := t.dataQuery(st, st.inc, st.ts)
	rows, fp, err := t.query(ctx, st, sql, args...)
	if err != nil {
		return err
	}
	if st.table.Name != "" && fp != st.fingerprint {
		// The table changed since it was described: its rows were read
		// with the old column list. Describe it again and read again.
		if err := t.describe(ctx, st); err != nil {
			return err
		}
		sql, args = t.dataQuery(st, st.inc, st.ts)
		if rows, _, err = t.query(ctx, st, sql, args...); err != nil {
			return err
		}
	}
	f.more = len(rows) == t.cfg.batch
	if t.cfg.mode == ModeTimestamp && f.more {
		if rows, err = t.completeTies(ctx, st, rows); err != nil {
			return err
		}
	}
	return t.records(f, rows)
}

// srcRow is one row: its columns' Connect values (source_decode.go).
type srcRow []any

// query runs the data query; for a table it runs the fingerprint query in
// the same round trip (a pgx batch) and returns its result too.
func (t *SourceTask) query(ctx context.Context, st *srcState, sql string, args ...any) ([]srcRow, string, error) {
	if st.table.Name == "" {
		rows, err := t.conn.Query(ctx, sql, args...)
		if err != nil {
			return nil, "", fmt.Errorf("query %s: %w", st.what, err)
		}
		out, err := t.dec.collect(rows, st.cols.cols)
		if err != nil {
			return nil, "", fmt.Errorf("query %s: %w", st.what, err)
		}
		return out, "", nil
	}
	b := &pgx.Batch{}
	b.Queue(srcFingerprintSQL, st.table.sql())
	b.Queue(sql, args...)
	br := t.conn.SendBatch(ctx, b)
	var fp string
	if err := br.QueryRow().Scan(&fp); err != nil {
		br.Close()
		return nil, "", fmt.Errorf("query %s: %w", st.what, err)
	}
	rows, err := br.Query()
	var out []srcRow
	if err == nil {
		out, err = t.dec.collect(rows, st.cols.cols)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if fp != st.fingerprint {
			// A column of the old list is gone (undefined column): the
			// caller describes the table again.
			return nil, fp, nil
		}
		return nil, "", fmt.Errorf("query %s: %w", st.what, err)
	}
	return out, fp, nil
}

// describe reads the columns of st and builds its select list and schema.
func (t *SourceTask) describe(ctx context.Context, st *srcState) error {
	var cols []Column
	var auto *Column
	var err error
	if st.table.Name == "" {
		cols, err = srcDescribeQuery(ctx, t.conn, t.cfg.query)
		if err != nil {
			return fmt.Errorf("prepare the query: %w", err)
		}
	} else {
		if err := t.conn.QueryRow(ctx, srcFingerprintSQL, st.table.sql()).Scan(&st.fingerprint); err != nil {
			return fmt.Errorf("describe %s: %w", st.what, err)
		}
		if cols, auto, err = srcDescribeTable(ctx, t.conn, st.table); err != nil {
			return err
		}
	}
	rc, kerr := srcResolveColumns(t.cfg, st.what, cols, auto)
	if kerr != nil {
		return fmt.Errorf("%s: %s", kerr.key, kerr.msg)
	}
	fields := make([]connectors.Field, len(cols))
	exprs := make([]string, len(cols))
	for i, c := range cols {
		fields[i] = connectors.Field{Name: c.Name, Schema: c.Schema()}
		exprs[i] = c.SelectExpr(st.alias)
	}
	rc.schema = connectors.StructSchema(st.name, fields...)
	st.cols = rc
	st.selectList = strings.Join(exprs, ", ")
	return nil
}

func (st *srcState) col(i int) string {
	e := pgx.Identifier{st.cols.cols[i].Name}.Sanitize()
	if st.alias != "" {
		e = st.alias + "." + e
	}
	return e
}

// tsExpr is the row's timestamp: the column, or the first non-null of them.
func (st *srcState) tsExpr() string {
	if len(st.cols.ts) == 1 {
		return st.col(st.cols.ts[0])
	}
	parts := make([]string, len(st.cols.ts))
	for i, c := range st.cols.ts {
		parts[i] = st.col(c)
	}
	return "COALESCE(" + strings.Join(parts, ", ") + ")"
}

// dataQuery is the mode's query, Confluent's conditions with a LIMIT. The
// upper bound of timestamps is the database's clock minus the delay, so
// rows of transactions still in flight are less likely to be skipped.
func (t *SourceTask) dataQuery(st *srcState, inc int64, ts time.Time) (string, []any) {
	base := "SELECT " + st.selectList + " FROM " + st.from
	limit := " LIMIT " + strconv.Itoa(t.cfg.batch)
	end := "statement_timestamp() - $%d::bigint * interval '1 millisecond'"
	delay := t.cfg.delay.Milliseconds()
	switch t.cfg.mode {
	case ModeIncrementing:
		c := st.col(st.cols.inc)
		return base + " WHERE " + c + " > $1::bigint ORDER BY " + c + " ASC" + limit, []any{inc}
	case ModeTimestamp:
		x := st.tsExpr()
		return base + " WHERE " + x + " > $1 AND " + x + " < " + fmt.Sprintf(end, 2) + " ORDER BY " + x + " ASC" + limit, []any{ts, delay}
	default: // timestamp+incrementing
		x, c := st.tsExpr(), st.col(st.cols.inc)
		return base + " WHERE " + x + " < " + fmt.Sprintf(end, 3) + " AND ((" + x + " = $1 AND " + c + " > $2::bigint) OR " + x + " > $1)" +
			" ORDER BY " + x + " ASC, " + c + " ASC" + limit, []any{ts, inc, delay}
	}
}

// completeTies makes a full batch of timestamp mode end at a change of
// timestamp: the next query asks for later timestamps only, so rows that
// share the last timestamp must all be read now. It drops the last
// timestamp's rows, or, when the whole batch has one timestamp, reads all
// rows with it (more than a batch; Poll hands them out a batch at a time).
func (t *SourceTask) completeTies(ctx context.Context, st *srcState, rows []srcRow) ([]srcRow, error) {
	last, _ := t.rowTime(st, rows[len(rows)-1])
	first, _ := t.rowTime(st, rows[0])
	if !first.Equal(last) {
		i := len(rows)
		for i > 0 {
			ts, _ := t.rowTime(st, rows[i-1])
			if !ts.Equal(last) {
				break
			}
			i--
		}
		return rows[:i], nil
	}
	x := st.tsExpr()
	r, err := t.conn.Query(ctx, "SELECT "+st.selectList+" FROM "+st.from+" WHERE "+x+" = $1", last)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", st.what, err)
	}
	all, err := t.dec.collect(r, st.cols.cols)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", st.what, err)
	}
	return all, nil
}

// rowTime is the row's timestamp (the first non-null timestamp column).
func (t *SourceTask) rowTime(st *srcState, row srcRow) (time.Time, bool) {
	for _, i := range st.cols.ts {
		if ts, ok := row[i].(time.Time); ok {
			return ts, true
		}
	}
	return time.Time{}, false
}

func srcRowInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// records turns rows into records with their offsets, and leaves in f the
// offset after the last one.
func (t *SourceTask) records(f *srcFetch, rows []srcRow) error {
	st := f.st
	prevTs := f.ts // timestamp mode: the end of the last complete group
	recs := make([]*connectors.SourceRecord, len(rows))
	// One allocation each for the batch's records and structs; a row's
	// values are the struct's values as they are.
	slab := make([]connectors.SourceRecord, len(rows))
	structs := make([]connectors.StructValue, len(rows))
	for i, row := range rows {
		structs[i] = connectors.StructValue{Schema: st.cols.schema, Values: row}
		slab[i] = connectors.SourceRecord{
			Partition:   st.partition,
			Topic:       st.topic,
			ValueSchema: st.cols.schema,
			Value:       &structs[i],
		}
		recs[i] = &slab[i]
		var n int64
		if t.cfg.usesIncrementing() {
			var ok bool
			if n, ok = srcRowInt(row[st.cols.inc]); !ok {
				return fmt.Errorf("%s: incrementing column %q is NULL in a row", st.what, st.cols.cols[st.cols.inc].Name)
			}
			f.inc = n
			if !t.cfg.usesTimestamp() {
				// Incrementing mode's offset is one integer: given as
				// such, not as a map per row (docs/adr/0020).
				slab[i].OffsetKey, slab[i].OffsetInt = OffsetIncrementing, n
				continue
			}
		}
		off := map[string]any{} // bulk mode's offset is empty
		if t.cfg.usesIncrementing() {
			off[OffsetIncrementing] = n
		}
		if t.cfg.usesTimestamp() {
			ts, ok := t.rowTime(st, row)
			if !ok {
				return fmt.Errorf("%s: timestamp column is NULL in a row", st.what)
			}
			if t.cfg.mode == ModeTimestamp && i+1 < len(rows) {
				// Rows sharing a timestamp are resumed as a group: until
				// the group's last row, the offset stays before the group,
				// so a restart in its middle reads the whole group again.
				if next, _ := t.rowTime(st, rows[i+1]); next.Equal(ts) {
					ts = prevTs
				}
			}
			prevTs = ts
			f.ts = ts
			off[OffsetTimestamp] = ts.UnixMilli()
			off[OffsetTimestampNanos] = int64(ts.Nanosecond())
		}
		slab[i].Offset = off
	}
	f.recs = recs
	return nil
}

// fetchBulk reads the next batch of a bulk pass. A pass is a WITH HOLD
// cursor: the server keeps the result, so the connection stays free for the
// task's other tables, and each Poll takes one batch from it.
func (t *SourceTask) fetchBulk(ctx context.Context, f *srcFetch) error {
	st := f.st
	if st.cursor == "" {
		if err := t.describe(ctx, st); err != nil {
			return err
		}
		t.cursorSeq++
		name := "sluice_bulk_" + strconv.Itoa(t.cursorSeq)
		if _, err := t.conn.Exec(ctx, "DECLARE "+name+" NO SCROLL CURSOR WITH HOLD FOR SELECT "+st.selectList+" FROM "+st.from); err != nil {
			return fmt.Errorf("query %s: %w", st.what, err)
		}
		st.cursor = name
	}
	r, err := t.conn.Query(ctx, "FETCH FORWARD "+strconv.Itoa(t.cfg.batch)+" FROM "+st.cursor)
	if err != nil {
		return fmt.Errorf("query %s: %w", st.what, err)
	}
	rows, err := t.dec.collect(r, st.cols.cols)
	if err != nil {
		return fmt.Errorf("query %s: %w", st.what, err)
	}
	f.more = len(rows) == t.cfg.batch
	if !f.more {
		if _, err := t.conn.Exec(ctx, "CLOSE "+st.cursor); err != nil {
			return fmt.Errorf("query %s: %w", st.what, err)
		}
		st.cursor = ""
	}
	return t.records(f, rows)
}

func (t *SourceTask) Commit(context.Context) error { return nil }

func (t *SourceTask) Close() error {
	if t.cancel == nil {
		return nil
	}
	t.cancel()
	if t.inflight != nil {
		<-t.inflight.done
		t.inflight = nil
	}
	if t.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), srcCloseTimeout)
		defer cancel()
		err := t.conn.Close(ctx)
		t.conn = nil
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}
