package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
)

// Task is the connector's one task: it snapshots, then streams the slot,
// on a goroutine of its own that hands records to Poll through a queue of
// max.queue.size records.
type Task struct {
	log       zerolog.Logger
	s         *settings
	tc        connectors.SourceTaskContext
	partition map[string]any
	// headers are the context headers of every event of this run
	// (none with extended.headers.enabled=false).
	headers []connectors.Header

	meta *pgx.Conn
	repl *pgconn.PgConn

	// txn is set when the worker runs the task exactly once with
	// transaction.boundary=connector: the reader then commits the whole
	// snapshot, and each PostgreSQL transaction, as one Kafka transaction.
	txn connectors.TransactionContext
	// handed is the offset of the last record Poll returned: a reader
	// restarted after a retriable failure resumes after it, not from the
	// stored offset, for the records in between are on their way to Kafka
	// (in an exactly-once task's open transaction they would be written
	// twice).
	handed map[string]any

	queue  chan queued
	failed chan struct{} // closed when the reader stopped with err
	err    error
	done   chan struct{} // closed when the reader returned
	cancel context.CancelFunc

	// progress is shared by the reader (which records finished
	// transactions) and Commit (which confirms them to PostgreSQL).
	progress progress
	// flushLSN is the LSN the reader reports to PostgreSQL as flushed:
	// everything before it is in Kafka and its offsets are committed.
	flushLSN atomic.Uint64
}

// progress tracks what the reader queued entirely (transactions and
// heartbeats), so that Commit can tell from a committed offset which of
// them are safe in Kafka.
type progress struct {
	mu   sync.Mutex
	done []finished
	// stored is the stored offset Commit last read (valid when
	// hasStored). Commit may read it before the reader has decoded the
	// COMMIT of the transaction whose last record it is: add applies it
	// to what is finished later, or that transaction would wait for a
	// Commit that, with no further traffic, never comes, and hold the
	// slot's WAL and a database shutdown with it.
	stored    storedPosition
	hasStored bool
}

// finished is a transaction or a heartbeat the reader queued entirely.
// Offsets say lsn_commit: where the commit record of the last transaction
// finished before the record ends (Debezium's meaning). A transaction is
// safe once a stored offset's lsn_commit reaches its commit LSN (where its
// commit record starts), or once the stored offset is its own last
// change's; a heartbeat once the stored offset is the heartbeat's or a
// later one.
type finished struct {
	commitLSN uint64 // a transaction's commit LSN; a heartbeat's lsn_commit
	// prevCommit and lastLSN are the lsn_commit and lsn of a
	// transaction's last record (lastLSN 0: it had none).
	prevCommit, lastLSN uint64
	heartbeat           bool
	procLSN             uint64 // a heartbeat's lsn_proc
	endLSN              uint64 // what PostgreSQL may forget once it is safe
}

// storedPosition is what Commit reads back of the stored offset.
type storedPosition struct {
	commitLSN, lsn, procLSN uint64
	change                  bool // a change's offset, not a heartbeat's
}

// add records f and returns the end LSN that the last stored offset
// already makes safe (0: none).
func (p *progress) add(f finished) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = append(p.done, f)
	if !p.hasStored {
		return 0
	}
	return p.confirmLocked(p.stored)
}

// confirm drops what a stored offset covers and returns the highest end
// LSN among it (0: none).
func (p *progress) confirm(at storedPosition) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stored, p.hasStored = at, true
	return p.confirmLocked(at)
}

func (p *progress) confirmLocked(at storedPosition) uint64 {
	var end uint64
	n := 0
	for _, f := range p.done {
		var safe bool
		switch {
		case f.heartbeat:
			safe = f.commitLSN < at.commitLSN || (f.commitLSN == at.commitLSN && f.procLSN <= at.procLSN)
		default:
			// A later transaction's record, or this one's last (changes
			// of one transaction have increasing LSNs; a heartbeat's
			// offset, between transactions, is no change's).
			safe = f.commitLSN <= at.commitLSN ||
				(f.lastLSN != 0 && at.change && at.commitLSN == f.prevCommit && at.lsn >= f.lastLSN)
		}
		if !safe {
			break
		}
		end = max(end, f.endLSN)
		n++
	}
	p.done = p.done[n:]
	return end
}

// idle reports whether everything queued is confirmed.
func (p *progress) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.done) == 0
}

// Open checks what only a config or server change fixes (wal_level, the
// role's privilege, a missing publication), so that the task fails at once
// with the reason, and starts the reader. Transient trouble (the database
// is down, the slot still held by a killed predecessor's session) is left
// to the reader, whose retriable errors Poll reports and recovers from.
func (t *Task) Open(ctx context.Context, tc connectors.SourceTaskContext, config map[string]string) error {
	s, err := parseSettings(config)
	if err != nil {
		return err
	}
	t.s, t.tc, t.log = s, tc, *tc.Logger()
	t.txn = tc.TransactionContext()
	t.partition = map[string]any{"server": s.prefix}
	if s.extendedHeaders {
		t.headers = contextHeaders(s.prefix, newRunID())
	}
	if conn, err := s.connect(ctx); err == nil {
		err = s.preflight(ctx, conn, false)
		conn.Close(context.WithoutCancel(ctx))
		if err != nil && !connectors.IsRetriable(err) {
			return err
		}
	} else if !connectors.IsRetriable(err) {
		return err
	}
	return t.startReader()
}

// startReader starts a reader after the last record Poll returned, or
// from the stored offset when it returned none.
func (t *Task) startReader() error {
	stored := t.handed
	if stored == nil {
		var err error
		if stored, err = t.tc.Offset(t.partition); err != nil {
			return connectors.Retriable(fmt.Errorf("read the stored offset: %w", err))
		}
	}
	t.queue = make(chan queued, t.s.maxQueue)
	t.failed = make(chan struct{})
	t.done = make(chan struct{})
	t.err = nil
	t.progress = progress{}
	rctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	r := &reader{t: t, resume: offsetPosition(stored)}
	go func() {
		defer close(t.done)
		defer t.closeConns()
		if err := r.start(rctx); err != nil && rctx.Err() == nil {
			t.err = err
			close(t.failed)
		}
	}()
	return nil
}

// stopReader stops the reader and waits for it.
func (t *Task) stopReader() {
	if t.cancel != nil {
		t.cancel()
		<-t.done
		t.cancel = nil
	}
}

// closeConns closes the reader's connections; the reader calls it as it
// returns.
func (t *Task) closeConns() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if t.repl != nil {
		t.repl.Close(ctx)
		t.repl = nil
	}
	if t.meta != nil {
		t.meta.Close(ctx)
		t.meta = nil
	}
}

// resumePoint is what a stored offset says about where to continue.
type resumePoint struct {
	exists             bool
	snapshotIncomplete bool
	streaming          bool // the offset is a streamed record's
	// change is set when the offset is a change's (not a heartbeat's):
	// its lsn may equal lsn_commit, the end of the previous commit
	// record being where the change's record starts.
	change         bool
	commitLSN, lsn uint64
}

func offsetPosition(o map[string]any) resumePoint {
	if o == nil {
		return resumePoint{}
	}
	rp := resumePoint{exists: true}
	if _, ok := o["snapshot"]; ok {
		last, _ := o["last_snapshot_record"].(bool)
		completed, _ := o["snapshot_completed"].(bool)
		rp.snapshotIncomplete = !last && !completed
	} else {
		rp.streaming = true
	}
	rp.commitLSN = uint64(number(o["lsn_commit"]))
	rp.lsn = uint64(number(o["lsn"]))
	rp.change = isChangeMessage(o)
	return rp
}

// isChangeMessage reports whether a stored offset is a change event's,
// by the message it says was decoded last; a heartbeat's is not.
func isChangeMessage(o map[string]any) bool {
	mt, _ := o["messageType"].(string)
	return mt == "INSERT" || mt == "UPDATE" || mt == "DELETE" || mt == "TRUNCATE"
}

// number reads a JSON number of a stored offset.
func number(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case int:
		return int64(n)
	case interface{ Int64() (int64, error) }:
		i, _ := n.Int64()
		return i
	}
	return 0
}

// Poll returns the queued records, up to max.batch.size, waiting up to
// poll.interval.ms for the first.
func (t *Task) Poll(ctx context.Context) ([]*connectors.SourceRecord, error) {
	wait := time.NewTimer(time.Duration(t.s.pollMs) * time.Millisecond)
	defer wait.Stop()
	var out []*connectors.SourceRecord
	// end is the batch's last record that ends a whole transaction (a
	// PostgreSQL transaction, the snapshot, a heartbeat), the one an
	// exactly-once task asks the runtime to commit after.
	var end *connectors.SourceRecord
	take := func(q queued) {
		out = append(out, q.rec)
		if q.end {
			end = q.rec
		}
	}
	select {
	case q := <-t.queue:
		take(q)
	case <-t.failed:
		err := t.err
		if t.txn != nil {
			// Fail the task, retriable or not: the runtime aborts the
			// open transaction (a part of a snapshot or of a PostgreSQL
			// transaction) and restarts the task, which resumes from
			// the offsets committed with the last whole one.
			return nil, fmt.Errorf("%v (transaction.boundary=connector: the task restarts from its last committed transaction)", err)
		}
		if connectors.IsRetriable(err) {
			// The runtime retries Poll with backoff: the next call
			// reads from a new reader, started after the last record
			// returned.
			t.stopReader()
			if rerr := t.startReader(); rerr != nil {
				return nil, rerr
			}
		}
		return nil, err
	case <-wait.C:
		return nil, nil
	case <-ctx.Done():
		return nil, nil
	}
drain:
	for len(out) < t.s.maxBatch {
		select {
		case q := <-t.queue:
			take(q)
		default:
			break drain
		}
	}
	if end != nil && t.txn != nil {
		// One Kafka transaction per poll, up to its last whole
		// transaction: each ends whole in Kafka, several in one
		// commit. A commit per PostgreSQL transaction would cost an
		// EndTxn round trip each, which a stream of small transactions
		// outruns.
		t.txn.CommitTransactionAfter(end)
	}
	t.handed = out[len(out)-1].Offset
	return out, nil
}

// queued is a record on its way from the reader to Poll; end says that it
// is the last record of a whole transaction, after which an exactly-once
// task's Kafka transaction may commit.
type queued struct {
	rec *connectors.SourceRecord
	end bool
}

// Commit runs after the runtime stored the offsets of every record Kafka
// acknowledged: the stored offset tells which transactions are now safe,
// and the reader confirms them to PostgreSQL, which may then recycle
// their WAL. Nothing is confirmed before its offset is stored.
func (t *Task) Commit(ctx context.Context) error {
	o, err := t.tc.Offset(t.partition)
	if err != nil || o == nil {
		return err
	}
	if _, snap := o["snapshot"]; snap {
		return nil // the slot stays at its creation point until streaming
	}
	at := storedPosition{commitLSN: uint64(number(o["lsn_commit"])), lsn: uint64(number(o["lsn"])), procLSN: uint64(number(o["lsn_proc"])),
		change: isChangeMessage(o)}
	t.raiseFlush(t.progress.confirm(at))
	return nil
}

// raiseFlush moves flushLSN up to lsn, never down: Commit and the reader
// both raise it.
func (t *Task) raiseFlush(lsn uint64) {
	for {
		cur := t.flushLSN.Load()
		if lsn <= cur || t.flushLSN.CompareAndSwap(cur, lsn) {
			return
		}
	}
}

// Close stops the reader (which closes its connections); with
// slot.drop.on.stop it drops the slot.
func (t *Task) Close() error {
	t.stopReader()
	if t.s == nil || !t.s.dropSlotOnStop {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := t.s.connect(ctx)
	if err != nil {
		return fmt.Errorf("drop replication slot %q: %w", t.s.slot, err)
	}
	defer conn.Close(ctx)
	// The walsender of the connection just closed may hold the slot a
	// moment longer: wait for it to let go (or for the timeout).
	for {
		var active bool
		err := conn.QueryRow(ctx, "SELECT active FROM pg_replication_slots WHERE slot_name = $1", t.s.slot).Scan(&active)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("drop replication slot %q: %w", t.s.slot, err)
		}
		if !active {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("drop replication slot %q: it is still in use: %w", t.s.slot, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", t.s.slot); err != nil {
		return fmt.Errorf("drop replication slot %q: %w", t.s.slot, err)
	}
	return nil
}

// enqueue hands a record to Poll. While the queue is full it keeps the
// replication connection alive, so that a slow Kafka does not let
// wal_sender_timeout end the stream, and checks that the server is not
// going down meanwhile (see checkServer).
func (r *reader) enqueue(ctx context.Context, rec *connectors.SourceRecord) error {
	return r.enqueueItem(ctx, queued{rec: rec})
}

// enqueueEnd hands Poll the last record of a whole transaction: a
// PostgreSQL transaction, the snapshot, or a heartbeat (transactions of
// their own).
func (r *reader) enqueueEnd(ctx context.Context, rec *connectors.SourceRecord) error {
	return r.enqueueItem(ctx, queued{rec: rec, end: true})
}

func (r *reader) enqueueItem(ctx context.Context, q queued) error {
	rec := q.rec
	if rec.KeySchema != heartbeatKeySchema {
		// Debezium adds its context headers to change events and
		// tombstones, after their own (a key change's newkey/oldkey);
		// its heartbeats have none.
		if len(rec.Headers) == 0 {
			// Shared by every record, its capacity its length: the
			// runtime and the transforms never change a record's
			// headers in place, and an append copies them.
			rec.Headers = r.t.headers[:len(r.t.headers):len(r.t.headers)]
		} else {
			rec.Headers = append(rec.Headers, r.t.headers...)
		}
	}
	select {
	case r.t.queue <- q:
		// Room in the queue, the rule while the runtime keeps up: no
		// timer made for a record that never waits.
		return nil
	default:
	}
	for {
		select {
		case r.t.queue <- q:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(statusInterval):
			if r.streaming {
				if err := r.checkServer(ctx); err != nil {
					return err
				}
				if err := r.sendStatus(ctx); err != nil {
					return err
				}
			}
		}
	}
}

// statusInterval is how often the reader tells PostgreSQL how far it is,
// well within the default wal_sender_timeout of 60 s.
const statusInterval = 10 * time.Second

func (r *reader) sendStatus(ctx context.Context) error {
	lsn := pglogrepl.LSN(r.t.flushLSN.Load())
	err := pglogrepl.SendStandbyStatusUpdate(ctx, r.t.repl, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: lsn, WALFlushPosition: lsn, WALApplyPosition: lsn, ClientTime: time.Now(),
	})
	if err != nil {
		return classifyStream(fmt.Errorf("send the slot's status: %w", err), r.t.s)
	}
	r.lastStatus = time.Now()
	r.sentFlush = uint64(lsn)
	return nil
}
