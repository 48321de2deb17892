package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/postgres"
)

// reader runs on the task's goroutine: it owns both connections.
type reader struct {
	t      *Task
	cat    *catalog
	resume resumePoint

	streaming  bool
	lastStatus time.Time
	sentFlush  uint64 // the flush LSN last reported to PostgreSQL

	tables map[uint32]*table // by relation id; nil entry: not captured
	tx     *txState
	// walEnd is the server's WAL end from the last keepalive outside a
	// transaction: all of it before is decoded and queued.
	walEnd        uint64
	lastHeartbeat time.Time
	lastTxID      int64
	msgType       string // Debezium's name of the message being decoded
	// lastCommit is the commit LSN of the last transaction decoded: the
	// lsn_commit of the records that follow, as Debezium's.
	lastCommit uint64
	// resumedPast is set once the first transaction after the stored
	// offset's lsn_commit began.
	resumedPast bool
	lastProbe   time.Time // when checkServer last asked the server
	// held is the last record of the PostgreSQL transaction being
	// decoded, kept back when the task defines its transactions until the
	// COMMIT says it is the last (see put).
	held *connectors.SourceRecord
}

// txState is the transaction being decoded.
type txState struct {
	xid        int64
	commitLSN  uint64
	commitTime time.Time
	lastLSN    uint64 // the LSN of its last record queued with its own offset
	skip       bool   // queued before a restart: the stored offset covers it
	skipUpTo   uint64 // changes at or below this LSN were queued before
}

// start connects, checks the server and the slot, creates the
// publication, then runs.
func (r *reader) start(ctx context.Context) error {
	s, t := r.t.s, r.t
	var err error
	if t.meta, err = s.connect(ctx); err != nil {
		return err
	}
	if err := s.preflight(ctx, t.meta, true); err != nil {
		return err
	}
	if err := s.ensurePublication(ctx, t.meta); err != nil {
		return err
	}
	if t.repl, err = s.connectReplication(ctx); err != nil {
		return err
	}
	r.cat = &catalog{conn: t.meta, s: s, log: &t.log, types: map[uint32]*typeInfo{}}
	return r.run(ctx)
}

func (r *reader) run(ctx context.Context) error {
	s := r.t.s
	slot, err := s.slotState(ctx, r.t.meta)
	if err != nil {
		return err
	}
	snapshot := false
	switch s.snapshotMode {
	case SnapshotInitial, SnapshotInitialOnly:
		snapshot = !r.resume.exists || r.resume.snapshotIncomplete
	case SnapshotAlways:
		snapshot = true
	case SnapshotWhenNeeded:
		snapshot = !r.resume.exists || r.resume.snapshotIncomplete || !slot.exists
	}
	if s.snapshotMode == SnapshotInitialOnly && !snapshot {
		r.t.log.Info().Msg("snapshot.mode is initial_only and the snapshot is complete: nothing to stream")
		<-ctx.Done()
		return nil
	}
	if snapshot && slot.exists && r.t.txn != nil {
		// The task commits the snapshot as one Kafka transaction, so an
		// interrupted one left nothing visible. A new slot exports a new
		// snapshot that the slot streams exactly after: the history
		// starts there, with no change both in the snapshot and in the
		// stream (the old slot would send the changes made since it was
		// created, after the reads that already show them).
		if err := pglogrepl.DropReplicationSlot(ctx, r.t.repl, s.slot, pglogrepl.DropReplicationSlotOptions{}); err != nil {
			return classifyStream(fmt.Errorf("drop replication slot %q to snapshot anew: %w", s.slot, err), s)
		}
		slot.exists = false
	}
	var start pglogrepl.LSN
	switch {
	case !slot.exists:
		action := "NOEXPORT_SNAPSHOT"
		if snapshot {
			action = "EXPORT_SNAPSHOT"
		}
		res, err := pglogrepl.CreateReplicationSlot(ctx, r.t.repl, s.slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{SnapshotAction: action, Mode: pglogrepl.LogicalReplication})
		if err != nil {
			return classifyStream(fmt.Errorf("create replication slot %q: %w", s.slot, err), s)
		}
		if start, err = pglogrepl.ParseLSN(res.ConsistentPoint); err != nil {
			return fmt.Errorf("replication slot %q: bad consistent point %q: %w", s.slot, res.ConsistentPoint, err)
		}
		if r.resume.exists && !snapshot {
			r.t.log.Warn().Str("slot", s.slot).Msg("the replication slot was missing and is created anew: changes made since the last stored offset are lost (snapshot.mode=when_needed would snapshot again)")
		}
		if snapshot {
			// The slot's exported snapshot is exactly what the slot
			// streams after: nothing missed, nothing twice.
			if err := r.snapshot(ctx, res.SnapshotName, uint64(start)); err != nil {
				return err
			}
		}
	case snapshot:
		// The slot exists (a snapshot that did not finish, or
		// snapshot.mode=always): its position has not moved past what
		// Kafka holds, so snapshotting now and then streaming from it
		// misses nothing; changes made between the two arrive twice,
		// as Debezium's do.
		if err := r.snapshot(ctx, "", 0); err != nil {
			return err
		}
	}
	if snapshot && s.snapshotMode == SnapshotInitialOnly {
		// Nothing will ever stream from the slot: kept, it would hold
		// WAL forever.
		if err := pglogrepl.DropReplicationSlot(ctx, r.t.repl, s.slot, pglogrepl.DropReplicationSlotOptions{}); err != nil {
			return classifyStream(fmt.Errorf("drop replication slot %q after the initial_only snapshot: %w", s.slot, err), s)
		}
		r.t.log.Info().Msg("snapshot.mode is initial_only: the snapshot is done, nothing is streamed")
		<-ctx.Done()
		return nil
	}
	return r.stream(ctx, start)
}

// classifyStream makes replication errors say what to do, and retries
// those that may pass.
func classifyStream(err error, s *settings) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case pg.Code == "55006" || strings.Contains(pg.Message, "is active for PID"):
			return connectors.Retriable(fmt.Errorf("replication slot %q is in use by another process; give each connector its own slot.name: %w", s.slot, err))
		case pg.Code == "42704" && strings.Contains(pg.Message, "publication"):
			return fmt.Errorf("publication %q was dropped while the connector used it; PostgreSQL decodes the slot's changes "+
				"against the publication as it was when they were written, so recreating it does not help: recreate the publication, "+
				"drop replication slot %q and restart the connector with a snapshot: %w", s.publication, s.slot, err)
		case pg.Code == "42501":
			return fmt.Errorf("role %q may not use replication slot %q (it needs the REPLICATION attribute): %w", s.user, s.slot, err)
		case pg.Code == "55000" && strings.Contains(pg.Message, "wal_level"):
			return fmt.Errorf("the server's wal_level must be logical: %w", err)
		}
	}
	return postgres.ClassifyError(err)
}

// snapshot reads every captured table as op=r events: in the slot's
// exported snapshot (snapshotName) positioned at its consistent point
// (lsn), or, without one, in a snapshot of its own positioned at the
// current WAL end.
func (r *reader) snapshot(ctx context.Context, snapshotName string, lsn uint64) error {
	s, conn := r.t.s, r.t.meta
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return postgres.ClassifyError(fmt.Errorf("begin the snapshot: %w", err))
	}
	defer tx.Rollback(context.Background())
	if snapshotName != "" {
		if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+snapshotName+"'"); err != nil {
			return postgres.ClassifyError(fmt.Errorf("use the slot's snapshot %q: %w", snapshotName, err))
		}
	} else {
		var current pglogrepl.LSN
		if err := tx.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&current); err != nil {
			return postgres.ClassifyError(fmt.Errorf("read the snapshot's WAL position: %w", err))
		}
		lsn = uint64(current)
	}
	var txid int64
	if err := tx.QueryRow(ctx, "SELECT txid_current()").Scan(&txid); err != nil {
		return postgres.ClassifyError(fmt.Errorf("read the snapshot's transaction id: %w", err))
	}
	tables, err := s.capturedTables(ctx, conn)
	if err != nil {
		return err
	}
	r.t.log.Info().Int("tables", len(tables)).Str("lsn", pglogrepl.LSN(lsn).String()).Msg("snapshot started")
	now := time.Now()
	// Every record of the snapshot but the last has the same source
	// offset: they share one map, which nothing changes once Poll handed
	// it over (the runtime's offset tracker only reads offsets), instead
	// of a map of their own each held until Kafka acknowledges them.
	snapOffset := position{commitTime: now, txID: txid, lsn: lsn, snapshot: "true"}.offset()
	var pending *connectors.SourceRecord // one record of look-ahead, to mark the last ones
	var pendingTable *table
	var pendingFirst bool
	var pendingIdx int
	emit := func(lastInTable, lastOverall bool) error {
		if pending == nil {
			return nil
		}
		first, last := pendingFirst && pendingIdx == 0, lastInTable && pendingIdx == len(tables)-1
		marker := "true"
		switch {
		case last:
			marker = "last"
		case first:
			marker = "first"
		case lastInTable:
			marker = "last_in_data_collection"
		case pendingFirst:
			marker = "first_in_data_collection"
		}
		p := position{commitTime: now, txID: txid, lsn: lsn, snapshot: marker, lastSnap: lastOverall}
		pending.Value.(*connectors.StructValue).Values[2] = p.sourceValue(s.prefix, s.dbname, pendingTable)
		pending.Offset = snapOffset
		if lastOverall {
			pending.Offset = p.offset()
		}
		rec := pending
		pending = nil
		if lastOverall {
			return r.enqueueEnd(ctx, rec) // the whole snapshot, or none of it
		}
		return r.enqueue(ctx, rec)
	}
	rows := 0
	for i, tn := range tables {
		t, err := r.cat.describe(ctx, tn[0], tn[1], nil)
		if err != nil {
			return err
		}
		first := true
		err = r.readTable(ctx, tx, t, func(row *connectors.StructValue) error {
			if err := emit(pendingTable != t, false); err != nil {
				return err
			}
			// Its source block and offset come in emit, once the next
			// row tells whether it is the last.
			pending = t.eventAt(r.t.partition, "r", nil, row, nil, nil, time.Now())
			pendingTable, pendingFirst, pendingIdx = t, first, i
			first = false
			rows++
			return nil
		})
		if err != nil {
			return err
		}
	}
	if pending != nil {
		if err := emit(true, true); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return postgres.ClassifyError(fmt.Errorf("end the snapshot: %w", err))
	}
	r.t.log.Info().Int("rows", rows).Msg("snapshot finished")
	return nil
}

// readTable reads a table in text format through a cursor, snapshot.fetch.size
// rows a round trip.
func (r *reader) readTable(ctx context.Context, tx pgx.Tx, t *table, each func(*connectors.StructValue) error) error {
	qname := pgx.Identifier{t.schema, t.name}.Sanitize()
	var cols []string
	for _, c := range t.columns {
		if c != nil {
			cols = append(cols, pgx.Identifier{c.name}.Sanitize())
		}
	}
	// Columns left out are selected as NULL so that positions match the
	// relation's, as pgoutput sends them.
	var sel []string
	j := 0
	for _, c := range t.columns {
		if c == nil {
			sel = append(sel, "NULL")
			continue
		}
		sel = append(sel, cols[j])
		j++
	}
	if _, err := tx.Exec(ctx, "DECLARE sluice_snapshot NO SCROLL CURSOR FOR SELECT "+strings.Join(sel, ", ")+" FROM "+qname); err != nil {
		return postgres.ClassifyError(fmt.Errorf("snapshot %s: %w", qname, err))
	}
	fetch := fmt.Sprintf("FETCH %d FROM sluice_snapshot", r.t.s.fetchSize)
	cells := make([]cell, len(t.columns))
	for {
		rr := tx.Conn().PgConn().ExecParams(ctx, fetch, nil, nil, nil, []int16{0})
		n := 0
		for rr.NextRow() {
			n++
			vals := rr.Values()
			for i := range cells {
				if vals[i] == nil {
					cells[i] = cell{null: true}
				} else {
					cells[i] = cell{text: string(vals[i]), snapshot: true}
				}
			}
			row, err := t.row(cells)
			if err != nil {
				rr.Close()
				return err
			}
			if err := each(row); err != nil {
				rr.Close()
				return err
			}
		}
		if _, err := rr.Close(); err != nil {
			return postgres.ClassifyError(fmt.Errorf("snapshot %s: %w", qname, err))
		}
		if n < r.t.s.fetchSize {
			break
		}
	}
	_, err := tx.Exec(ctx, "CLOSE sluice_snapshot")
	return postgres.ClassifyError(err)
}

// stream reads the slot from start (0: where PostgreSQL last confirmed).
func (r *reader) stream(ctx context.Context, start pglogrepl.LSN) error {
	s := r.t.s
	err := pglogrepl.StartReplication(ctx, r.t.repl, s.slot, start, pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names '" + strings.ReplaceAll(s.publication, "'", "''") + "'"},
	})
	if err != nil {
		return classifyStream(fmt.Errorf("start streaming replication slot %q: %w", s.slot, err), s)
	}
	r.streaming = true
	r.tables = map[uint32]*table{}
	if r.resume.streaming {
		r.lastCommit = r.resume.commitLSN
	}
	r.lastHeartbeat = time.Now()
	r.t.log.Info().Str("slot", s.slot).Str("from", start.String()).Msg("streaming started")
	for {
		// Report at least every statusInterval, and at once (within the
		// receive timeout) when Commit confirmed more.
		if time.Since(r.lastStatus) >= statusInterval || r.t.flushLSN.Load() > r.sentFlush {
			if err := r.sendStatus(ctx); err != nil {
				return err
			}
		}
		if err := r.maybeHeartbeat(ctx); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		msg, err := r.t.repl.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pgconn.Timeout(err) {
				continue
			}
			return classifyStream(fmt.Errorf("read replication slot %q: %w", s.slot, err), s)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			return classifyStream(fmt.Errorf("replication slot %q: %w", s.slot, pgconn.ErrorResponseToPgError(m)), s)
		case *pgproto3.CopyData:
			if err := r.copyData(ctx, m.Data); err != nil {
				return err
			}
		}
	}
}

func (r *reader) copyData(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return err
		}
		if r.tx == nil {
			r.walEnd = uint64(k.ServerWALEnd)
			// Everything decoded is in Kafka with its offset stored:
			// the WAL up to here holds nothing more for this slot, as
			// PostgreSQL's own apply worker reasons. Reporting it also
			// lets a PostgreSQL shutdown finish, which waits for its
			// logical walsenders' clients to confirm its last WAL.
			if r.t.progress.idle() {
				r.t.raiseFlush(r.walEnd)
			}
		}
		if k.ReplyRequested {
			if r.t.flushLSN.Load() < uint64(k.ServerWALEnd) {
				if err := r.checkServer(ctx); err != nil {
					return err
				}
			}
			return r.sendStatus(ctx)
		}
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return err
		}
		return r.decode(ctx, uint64(x.WALStart), x.WALData)
	}
	return nil
}

// probeInterval bounds how often checkServer asks the server.
const probeInterval = time.Second

// checkServer runs an empty query on the catalog connection, at most
// every probeInterval. A PostgreSQL fast shutdown ends every session but
// the walsenders, then waits for each logical walsender's client to
// confirm the whole WAL, asking again after each reply. While records are
// on their way to Kafka the reader may not confirm, and its replies keep
// wal_sender_timeout from ever ending the walsender: the shutdown and the
// reader would wait on each other for good (and a postmaster killed
// meanwhile leaves that walsender running). The catalog session's end
// tells the reader that the database is going down: it stops with a
// retriable error, which closes the stream and lets the shutdown finish,
// and the next reader resumes from the stored offset.
func (r *reader) checkServer(ctx context.Context) error {
	if time.Since(r.lastProbe) < probeInterval {
		return nil
	}
	r.lastProbe = time.Now()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.t.meta.Ping(pctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Retriable whatever the cause: a new reader reconnects and
		// reports what is wrong with the server, if anything remains.
		return connectors.Retriable(fmt.Errorf("replication slot %q: the server waits for a confirmation of WAL whose records are not stored in Kafka yet, "+
			"and its sessions end (is it shutting down?): %w", r.t.s.slot, err))
	}
	return nil
}

// maybeHeartbeat queues a heartbeat record every heartbeat.interval.ms
// while no transaction is open: its offset is the server's WAL end, so
// committing it lets the slot advance over changes of tables the
// connector does not capture.
func (r *reader) maybeHeartbeat(ctx context.Context) error {
	s := r.t.s
	if s.heartbeatMs <= 0 || r.tx != nil || time.Since(r.lastHeartbeat) < time.Duration(s.heartbeatMs)*time.Millisecond {
		return nil
	}
	r.lastHeartbeat = time.Now()
	if r.walEnd == 0 {
		return nil
	}
	now := time.Now()
	p := position{commitTime: now, txID: r.lastTxID, lsn: r.lastCommit, procLSN: r.walEnd, lastCommit: r.lastCommit, messageType: r.msgType}
	key := connectors.NewStruct(heartbeatKeySchema)
	key.Values[0] = s.prefix
	val := connectors.NewStruct(heartbeatValueSchema)
	val.Values[0] = now.UnixMilli()
	rec := &connectors.SourceRecord{
		Partition: r.t.partition, Offset: p.offset(), Topic: "__debezium-heartbeat." + s.prefix,
		KeySchema: heartbeatKeySchema, Key: key, ValueSchema: heartbeatValueSchema, Value: val,
	}
	if err := r.enqueueEnd(ctx, rec); err != nil {
		return err
	}
	r.t.raiseFlush(r.t.progress.add(finished{commitLSN: r.lastCommit, heartbeat: true, procLSN: r.walEnd, endLSN: r.walEnd}))
	return nil
}

// Debezium's heartbeat schemas.
var (
	heartbeatKeySchema = &connectors.Schema{Type: connectors.Struct, Name: "io.debezium.connector.common.ServerNameKey", Version: 1,
		Fields: []connectors.Field{{Name: "serverName", Schema: connectors.StringSchema}}}
	heartbeatValueSchema = &connectors.Schema{Type: connectors.Struct, Name: "io.debezium.connector.common.Heartbeat", Version: 1,
		Fields: []connectors.Field{{Name: "ts_ms", Schema: connectors.Int64Schema}}}
)

// put queues a record of the PostgreSQL transaction being decoded. When
// the task defines its transactions it keeps the record back and queues
// the one it held: the COMMIT queues the last one (commitHeld), marked as
// its Kafka transaction's end.
func (r *reader) put(ctx context.Context, rec *connectors.SourceRecord) error {
	if r.t.txn == nil {
		return r.enqueue(ctx, rec)
	}
	prev := r.held
	r.held = rec
	if prev == nil {
		return nil
	}
	return r.enqueue(ctx, prev)
}

// commitHeld queues the held record, the last of its PostgreSQL
// transaction, marked as a transaction's end: Poll asks the runtime to
// commit the Kafka transaction after the last such record of its batch, so
// that a Kafka transaction holds whole PostgreSQL transactions, one or
// several, never a part of one.
func (r *reader) commitHeld(ctx context.Context) error {
	if r.held == nil {
		return nil
	}
	rec := r.held
	r.held = nil
	return r.enqueueEnd(ctx, rec)
}
