package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

	// Of the connection: its prepared statements.
	stmts sinkStatements
	// Buffers reused from Write to Write.
	spare  []*sinkRun
	key    []byte
	params []byte
	ends   []int
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

// BorrowsRecords reports that Write keeps nothing of its records
// (connectors.RecordBorrower): their values are encoded into the
// statement's parameters, and the layouts it caches are keyed by and read
// from the converters' schemas, never from a record's values; a batch is
// written, or fails, before Write returns.
func (t *SinkTask) BorrowsRecords() bool { return true }

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
	t.stmts = sinkStatements{}
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
	// The data, all tables in one transaction: BEGIN and the statements
	// of every run go as one pipeline (sinkwire.go), then COMMIT once
	// all succeeded. COMMIT stays a round trip of its own: sent in the
	// pipeline, it would commit a Write whose caller gave up waiting (a
	// statement blocked on a lock finishes after the connection closed),
	// which the retry would then write again.
	type sent struct {
		run   *sinkRun
		table sinkTableRef
		meta  *sinkTableMeta
	}
	var batch pgconn.Batch
	batch.ExecParams("BEGIN", nil, nil, nil, nil)
	var sents []sent
	defer func() {
		for _, s := range sents {
			t.spare = append(t.spare, s.run)
		}
	}()
	for i, tw := range writes {
		if metas[i] == nil {
			continue // only deletes, of a table that does not exist
		}
		runs, err := t.runs(tw, metas[i])
		for _, r := range runs {
			// Recycled with the sent ones, whatever happens.
			sents = append(sents, sent{run: r, table: tw.ref, meta: metas[i]})
		}
		if err != nil {
			return err
		}
	}
	pgc := t.conn.PgConn()
	queued := sents[:0:0]
	for _, s := range sents {
		sql, err := s.meta.statement(s.run.op, s.run.layout, s.run.wires)
		if err != nil {
			return err
		}
		if sql == "" {
			continue
		}
		sd, err := t.stmts.prepare(ctx, pgc, sql)
		if err != nil {
			return fmt.Errorf("prepare the %s of table %s: %w", s.run.op, s.table, err)
		}
		t.params, t.ends = s.run.appendParams(t.params[:0], t.ends[:0])
		params := make([][]byte, len(t.ends))
		from := 0
		for c, end := range t.ends {
			params[c] = t.params[from:end]
			from = end
		}
		// Bind copies the parameters into the batch: t.params is free
		// again for the next run.
		batch.ExecStatement(sd, params, sinkBinary, nil)
		queued = append(queued, s)
	}
	if len(queued) == 0 {
		return nil
	}
	mrr := pgc.ExecBatch(ctx, &batch)
	done := -1 // BEGIN comes first
	for mrr.NextResult() {
		if _, err := mrr.ResultReader().Close(); err != nil {
			break
		}
		done++
	}
	if err := mrr.Close(); err != nil {
		t.rollback(pgc)
		if done >= 0 && done < len(queued) {
			s := queued[done]
			return fmt.Errorf("%s of %d rows into table %s: %w", s.run.op, s.run.rows, s.table, err)
		}
		return fmt.Errorf("begin: %w", err)
	}
	if _, err := pgc.Exec(ctx, "COMMIT").ReadAll(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// rollback ends the failed transaction of a Write, on its own deadline:
// the Write's may be what ended. A connection that cannot is closed, which
// ends the transaction too.
func (t *SinkTask) rollback(pgc *pgconn.PgConn) {
	if pgc.IsClosed() || pgc.TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sinkCloseTimeout)
	defer cancel()
	if _, err := pgc.Exec(ctx, "ROLLBACK").ReadAll(); err != nil {
		t.dropConn()
	}
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

// runs splits a table's records into statements: consecutive records of
// one layout share a statement of at most batch.size rows. A change of
// layout (another schema, or a delete after writes) starts a new one, so
// statements apply in record order. Every value is rendered here, so a
// record that cannot be written fails the batch before the database sees
// any of it.
func (t *SinkTask) runs(tw *sinkTableWrite, m *sinkTableMeta) ([]*sinkRun, error) {
	var out []*sinkRun
	var cur *sinkRun
	for i, r := range tw.records {
		l := tw.layouts[i]
		if cur == nil || cur.layout != l || cur.rows >= t.cfg.batchSize {
			op := t.cfg.insertMode
			if l.delete {
				op = sinkOpDelete
			}
			cur = t.newRun(op, l, m)
			out = append(out, cur)
		}
		for c := range l.cols {
			col := &l.cols[c]
			if err := cur.appendValue(c, sinkValueOf(r, col), col.schema, m.cols[col.name], t.cfg.tz); err != nil {
				return out, sinkRecordError(r, "table %s, column %q: %v", m.ref, col.name, err)
			}
			if c < l.npk && cur.byKey != nil && cur.spans[len(cur.spans)-1].start < 0 {
				return out, sinkRecordError(r, "primary key column %q of table %s is null", col.name, tw.ref)
			}
		}
		var key []byte
		if cur.byKey != nil {
			key = cur.appendKey(t.key[:0])
			t.key = key
		}
		cur.endRow(key)
	}
	return out, nil
}

// newRun returns an empty run, reusing the buffers of an earlier Write's.
func (t *SinkTask) newRun(op string, l *sinkLayout, m *sinkTableMeta) *sinkRun {
	var r *sinkRun
	if n := len(t.spare); n > 0 {
		r, t.spare = t.spare[n-1], t.spare[:n-1]
	} else {
		r = &sinkRun{}
	}
	r.reset(op, l, m)
	return r
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
