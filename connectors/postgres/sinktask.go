package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
)

// Deadlines of the sink's database calls (invariant 8): the runtime's
// context has none. A write of one delivered batch (at most a few thousand
// rows) that takes longer than sinkWriteTimeout is stuck, not slow; giving up
// returns a retriable error, and the batch is written again on a fresh
// connection.
const (
	sinkWriteTimeout = 2 * time.Minute
	sinkCloseTimeout = 5 * time.Second
	// sinkMaxLayouts bounds the layout cache; schemas come from converters,
	// which reuse them, so only a pathological stream reaches it.
	sinkMaxLayouts = 4096
)

// SinkTask writes records to PostgreSQL tables, one transaction per Write:
// when Write returns nil the batch is committed, so the runtime may commit
// its offsets (invariant 1). It does not buffer, so it needs no PreCommit.
type SinkTask struct {
	log  zerolog.Logger
	cfg  *sinkConfig
	conn *pgx.Conn

	tables  map[string]*sinkTableMeta // by quoted name
	layouts map[sinkLayoutCacheKey]*sinkLayout
	refs    map[string]sinkTableRef // by topic
}

// Open parses the config (the URL included). It does not connect:
// the first Write does, so a database that is down when the task starts is
// retried with backoff like one that goes away later.
func (t *SinkTask) Open(_ context.Context, tc connectors.SinkTaskContext, config map[string]string) error {
	cfg, err := parseSinkConfig(config)
	if err != nil {
		return err
	}
	t.log = zerolog.Nop()
	if tc != nil && tc.Logger() != nil {
		t.log = tc.Logger().With().Str("connector_class", "JdbcSinkConnector").Logger()
	}
	t.cfg = cfg
	t.tables = map[string]*sinkTableMeta{}
	t.layouts = map[sinkLayoutCacheKey]*sinkLayout{}
	t.refs = map[string]sinkTableRef{}
	return nil
}

// Close closes the connection. It is safe after a failed Open and twice.
func (t *SinkTask) Close() error {
	t.dropConn()
	return nil
}

func (t *SinkTask) dropConn() {
	if t.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sinkCloseTimeout)
	defer cancel()
	// Close sends Terminate; an error only says the connection was
	// already gone, which is what closing wants.
	_ = t.conn.Close(ctx)
	t.conn = nil
}

// sinkTableWrite is everything one Write does to one table, in record order.
type sinkTableWrite struct {
	ref     sinkTableRef
	records []*connectors.SinkRecord
	layouts []*sinkLayout // of each record
}

// Write writes the batch in one transaction and returns nil only once it
// is committed. Errors the database may not repeat (connection lost,
// serialization failure, deadlock, the database shutting down) are
// connectors.Retriable: the runtime calls Write again with the same records
// after a backoff, on a new connection. In upsert mode that leaves the
// tables as if the batch was written once; insert mode may write a row twice
// when the connection broke after COMMIT was sent and before its answer.
func (t *SinkTask) Write(ctx context.Context, records []*connectors.SinkRecord) error {
	if t.cfg == nil {
		return errors.New("postgres sink: write before open")
	}
	if len(records) == 0 {
		return nil
	}
	// Which table and columns each record writes needs no database, and
	// a record that cannot be written fails the batch before it starts.
	var writes []*sinkTableWrite
	byTable := map[string]*sinkTableWrite{}
	for _, r := range records {
		ref, err := t.tableFor(r.Topic)
		if err != nil {
			return err
		}
		l, err := t.layoutOf(r)
		if err != nil {
			return fmt.Errorf("postgres sink: table %s: %w", ref, err)
		}
		tw := byTable[ref.quoted]
		if tw == nil {
			tw = &sinkTableWrite{ref: ref}
			byTable[ref.quoted] = tw
			writes = append(writes, tw)
		}
		tw.records = append(tw.records, r)
		tw.layouts = append(tw.layouts, l)
	}

	wctx, cancel := context.WithTimeout(ctx, sinkWriteTimeout)
	defer cancel()
	err := t.write(wctx, writes)
	if err == nil {
		return nil
	}
	// What the sink knows of the tables may be what failed (a column
	// dropped meanwhile): read them again before the next attempt.
	clear(t.tables)
	retry := !errors.Is(err, sinkErrSchemaMismatch) && sinkTransient(err)
	if t.conn != nil && (t.conn.IsClosed() || (retry && !sinkIsPgError(err))) {
		// A broken connection is replaced on the next Write.
		t.dropConn()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if retry {
		return connectors.Retriable(fmt.Errorf("postgres sink (will retry): %w", err))
	}
	return fmt.Errorf("postgres sink: %w", err)
}

func (t *SinkTask) tableFor(topic string) (sinkTableRef, error) {
	if ref, ok := t.refs[topic]; ok {
		return ref, nil
	}
	ref, err := t.cfg.tableFor(topic)
	if err != nil {
		return ref, fmt.Errorf("postgres sink: %w", err)
	}
	t.refs[topic] = ref
	return ref, nil
}

func (t *SinkTask) layoutOf(r *connectors.SinkRecord) (*sinkLayout, error) {
	key, cacheable := t.cfg.cacheKey(r)
	if cacheable {
		if l, ok := t.layouts[key]; ok {
			return l, nil
		}
	}
	l, err := t.cfg.buildLayout(r)
	if err != nil {
		return nil, err
	}
	if cacheable {
		if len(t.layouts) >= sinkMaxLayouts {
			clear(t.layouts)
		}
		t.layouts[key] = l
	}
	return l, nil
}

func (t *SinkTask) write(ctx context.Context, writes []*sinkTableWrite) error {
	if t.conn == nil {
		// connection.attempts and connection.backoff.ms apply here; the
		// runtime retries the Write after that.
		conn, err := Connect(ctx, t.cfg.conn)
		if err != nil {
			return fmt.Errorf("connecting: %w", err)
		}
		t.conn = conn
	}
	// Tables and columns first, each DDL statement on its own: a failed
	// batch must not take a created table with it, and two tasks creating
	// the same table must not block each other's batches.
	metas := make([]*sinkTableMeta, len(writes))
	for i, tw := range writes {
		m, err := t.prepareTable(ctx, tw)
		if err != nil {
			return err
		}
		metas[i] = m
	}
	// The data, all tables in one transaction.
	batches := make([][]*sinkRun, len(writes))
	for i, tw := range writes {
		if metas[i] == nil {
			continue // only deletes, of a table that does not exist
		}
		runs, err := t.runs(tw, metas[i])
		if err != nil {
			return err
		}
		batches[i] = runs
	}
	tx, err := t.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		// After a successful Commit, Rollback does nothing. On its own
		// deadline: ctx may be the one that ended.
		rctx, cancel := context.WithTimeout(context.Background(), sinkCloseTimeout)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	for i, runs := range batches {
		for _, r := range runs {
			sql, err := metas[i].statement(r.op, r.layout)
			if err != nil {
				return err
			}
			if sql == "" {
				continue
			}
			args := make([]any, len(r.cols))
			for c := range r.cols {
				args[c] = r.cols[c]
			}
			if _, err := tx.Exec(ctx, sql, args...); err != nil {
				return fmt.Errorf("%s of %d rows into table %s: %w", r.op, r.rows, writes[i].ref, err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// prepareTable makes sure tw's table exists and has every column its
// records write (auto.create, auto.evolve), and returns what the sink
// knows of it; nil when the table does not exist and tw only deletes.
func (t *SinkTask) prepareTable(ctx context.Context, tw *sinkTableWrite) (*sinkTableMeta, error) {
	m, err := t.table(ctx, tw.ref)
	if err != nil {
		return nil, err
	}
	if m == nil {
		var create *sinkLayout
		for _, l := range tw.layouts {
			if !l.delete {
				create = l
				break
			}
		}
		if create == nil {
			// Deleting from a table that does not exist deletes nothing.
			return nil, nil
		}
		if !t.cfg.autoCreate {
			return nil, sinkMismatch("table %s does not exist and auto.create is false", tw.ref)
		}
		sql, err := sinkCreateTableSQL(tw.ref, create)
		if err != nil {
			return nil, err
		}
		if m, err = t.ddl(ctx, tw.ref, sql); err != nil {
			return nil, err
		}
		if m == nil {
			return nil, sinkMismatch("table %s is still missing after CREATE TABLE", tw.ref)
		}
		t.log.Info().Str("table", tw.ref.String()).Str("sql", sql).Msg("created table (auto.create)")
	}
	seen := map[*sinkLayout]bool{}
	for _, l := range tw.layouts {
		if seen[l] {
			continue
		}
		seen[l] = true
		for i, col := range l.cols {
			if _, ok := m.cols[col.name]; ok {
				continue
			}
			if !t.cfg.autoEvolve {
				return nil, sinkMismatch("table %s has no column %q and auto.evolve is false", tw.ref, col.name)
			}
			if i < l.npk {
				return nil, sinkMismatch("table %s has no primary key column %q, and auto.evolve adds only nullable columns", tw.ref, col.name)
			}
			sql, err := sinkAddColumnSQL(tw.ref, col)
			if err != nil {
				return nil, err
			}
			if m, err = t.ddl(ctx, tw.ref, sql); err != nil {
				return nil, err
			}
			if m == nil {
				return nil, sinkMismatch("table %s disappeared while adding column %q", tw.ref, col.name)
			}
			if _, ok := m.cols[col.name]; !ok {
				return nil, sinkMismatch("table %s still has no column %q after ALTER TABLE", tw.ref, col.name)
			}
			t.log.Info().Str("table", tw.ref.String()).Str("sql", sql).Msg("added column (auto.evolve)")
		}
	}
	return m, nil
}

// table returns what the sink knows of a table, reading it when needed.
func (t *SinkTask) table(ctx context.Context, ref sinkTableRef) (*sinkTableMeta, error) {
	if m, ok := t.tables[ref.quoted]; ok {
		return m, nil
	}
	m, err := sinkLoadTable(ctx, t.conn, ref)
	if err != nil || m == nil {
		return nil, err
	}
	t.tables[ref.quoted] = m
	return m, nil
}

// ddl runs one DDL statement on its own and reads the table again. When
// the statement fails, the table is read anyway: another task may have
// made the same change at the same moment (concurrent CREATE TABLE IF NOT
// EXISTS can fail with a unique violation), and the caller checks whether
// what it needed is there.
func (t *SinkTask) ddl(ctx context.Context, ref sinkTableRef, sql string) (*sinkTableMeta, error) {
	_, execErr := t.conn.Exec(ctx, sql)
	delete(t.tables, ref.quoted)
	if execErr != nil && t.conn.IsClosed() {
		return nil, fmt.Errorf("%s: %w", sql, execErr)
	}
	m, err := t.table(ctx, ref)
	if err != nil {
		return nil, err
	}
	if execErr != nil && m == nil {
		return nil, fmt.Errorf("%s: %w", sql, execErr)
	}
	return m, nil
}

// sinkRun is one statement's worth of rows of one layout, column by column.
type sinkRun struct {
	op     string
	layout *sinkLayout
	cols   [][]pgtype.Text
	rows   int
	// byKey finds the row of a primary key, for upsert, update and
	// delete: one statement cannot touch a row twice (ON CONFLICT DO
	// UPDATE refuses to), and the last record of a key is the one that
	// counts, so a later record replaces an earlier one in place.
	byKey map[string]int
}

// runs splits a table's records into statements: consecutive records of
// one layout share a statement of at most batch.size rows. A change of
// layout (another schema, or a delete after writes) starts a new one, so
// statements apply in record order.
func (t *SinkTask) runs(tw *sinkTableWrite, m *sinkTableMeta) ([]*sinkRun, error) {
	var out []*sinkRun
	var cur *sinkRun
	var key strings.Builder
	for i, r := range tw.records {
		l := tw.layouts[i]
		if cur == nil || cur.layout != l || cur.rows >= t.cfg.batchSize {
			op := t.cfg.insertMode
			if l.delete {
				op = sinkOpDelete
			}
			cur = &sinkRun{op: op, layout: l, cols: make([][]pgtype.Text, len(l.cols))}
			if op != sinkOpInsert {
				cur.byKey = map[string]int{}
			}
			out = append(out, cur)
		}
		row := cur.rows
		if cur.byKey != nil {
			key.Reset()
			for c := range l.npk {
				v, err := t.text(r, m, l, c)
				if err != nil {
					return nil, err
				}
				if !v.Valid {
					return nil, sinkRecordError(r, "primary key column %q of table %s is null", l.cols[c].name, tw.ref)
				}
				// NUL cannot occur in PostgreSQL text: a safe separator.
				key.WriteString(v.String)
				key.WriteByte(0)
			}
			if prev, ok := cur.byKey[key.String()]; ok {
				row = prev
			} else {
				cur.byKey[key.String()] = row
			}
		}
		for c := range l.cols {
			v, err := t.text(r, m, l, c)
			if err != nil {
				return nil, err
			}
			if row == cur.rows {
				cur.cols[c] = append(cur.cols[c], v)
			} else {
				cur.cols[c][row] = v
			}
		}
		if row == cur.rows {
			cur.rows++
		}
	}
	return out, nil
}

func (t *SinkTask) text(r *connectors.SinkRecord, m *sinkTableMeta, l *sinkLayout, c int) (pgtype.Text, error) {
	col := &l.cols[c]
	v, err := sinkTextValue(sinkValueOf(r, col), col.schema, m.cols[col.name], t.cfg.tz)
	if err != nil {
		return v, sinkRecordError(r, "table %s, column %q: %v", m.ref, col.name, err)
	}
	return v, nil
}

func sinkIsPgError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// sinkTransient reports whether a database error may go away by itself, so
// the same batch should be written again after a backoff: conn.go's
// IsTransient (connection lost or refused, shutdown, serialization failure,
// deadlock, ...), and a statement canceled by statement_timeout or by a
// server short of resources.
func sinkTransient(err error) bool {
	if connectors.IsRetriable(err) || IsTransient(err) {
		return true
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "57014" || strings.HasPrefix(pe.Code, "53"))
}
