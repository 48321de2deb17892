package postgrescdc

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/sluice-io/sluice/connectors"
)

// messageTypes are Debezium's names of pgoutput's messages, which its
// offsets carry as messageType.
var messageTypes = map[pglogrepl.MessageType]string{
	pglogrepl.MessageTypeBegin: "BEGIN", pglogrepl.MessageTypeCommit: "COMMIT", pglogrepl.MessageTypeInsert: "INSERT",
	pglogrepl.MessageTypeUpdate: "UPDATE", pglogrepl.MessageTypeDelete: "DELETE", pglogrepl.MessageTypeTruncate: "TRUNCATE",
}

// decode turns one pgoutput message into change events.
func (r *reader) decode(ctx context.Context, lsn uint64, data []byte) error {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return fmt.Errorf("decode pgoutput message at %s: %w", pglogrepl.LSN(lsn), err)
	}
	s := r.t.s
	r.msgType = messageTypes[msg.Type()]
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		return r.relation(ctx, m)
	case *pglogrepl.BeginMessage:
		tx := &txState{xid: int64(m.Xid), commitLSN: uint64(m.FinalLSN), commitTime: m.CommitTime}
		// After a restart PostgreSQL resends the transactions it was not
		// told are safe; the stored offset says how much of them is in
		// Kafka already: those that committed up to its lsn_commit
		// entirely, and of the next one (the offset's own transaction)
		// the changes up to its lsn. A heartbeat's offset has lsn =
		// lsn_commit but is no change's: none of the next transaction.
		if r.resume.streaming {
			switch {
			case tx.commitLSN <= r.resume.commitLSN:
				tx.skip = true
			case !r.resumedPast:
				if r.resume.change {
					tx.skipUpTo = r.resume.lsn
				}
				r.resumedPast = true
			}
		}
		r.tx = tx
		r.lastTxID = tx.xid
	case *pglogrepl.CommitMessage:
		if r.tx == nil {
			return nil
		}
		if err := r.commitHeld(ctx); err != nil {
			return err
		}
		r.t.raiseFlush(r.t.progress.add(finished{commitLSN: r.tx.commitLSN, prevCommit: r.lastCommit, lastLSN: r.tx.lastLSN, endLSN: uint64(m.TransactionEndLSN)}))
		r.walEnd = uint64(m.TransactionEndLSN)
		// Debezium's lsn_commit (and source.sequence's first element)
		// is where the commit record ends, the LSN pgoutput sends the
		// commit message at, not where it starts (FinalLSN). The
		// resume check above still holds: a transaction's FinalLSN is
		// below its own end and above the previous one's.
		r.lastCommit = uint64(m.TransactionEndLSN)
		r.tx = nil
	case *pglogrepl.InsertMessage:
		if t, ok := r.change(m.RelationID, lsn, "c"); ok {
			after, err := t.row(cells(m.Tuple))
			if err != nil {
				return err
			}
			return r.emit(ctx, t, "c", nil, after, lsn)
		}
	case *pglogrepl.UpdateMessage:
		if t, ok := r.change(m.RelationID, lsn, "u"); ok {
			newCells, oldCells := cells(m.NewTuple), cells(m.OldTuple)
			if len(oldCells) == len(newCells) {
				// With REPLICA IDENTITY FULL the old tuple holds every
				// column: as Debezium, an unchanged TOASTed value is
				// taken from it rather than shown as the placeholder.
				for i := range newCells {
					if newCells[i].unchanged && !oldCells[i].unchanged {
						newCells[i] = oldCells[i]
					}
				}
			}
			after, err := t.row(newCells)
			if err != nil {
				return err
			}
			var before *connectors.StructValue
			if m.OldTuple != nil {
				if before, err = t.row(oldCells); err != nil {
					return err
				}
			}
			if oldKey, newKey := t.key(before), t.key(after); oldKey != nil && !reflect.DeepEqual(oldKey.Values, newKey.Values) {
				// The key changed: as Debezium, a delete of the old key
				// (and its tombstone) then a create of the new one, with
				// headers that point at each other's key.
				del := t.event(r.t.partition, s.prefix, s.dbname, "d", before, nil, r.position(lsn), time.Now())
				del.Headers = []connectors.Header{{Key: "__debezium.newkey", Schema: t.keySchema, Value: newKey}}
				if err := r.queueDelete(ctx, del, lsn, false); err != nil {
					return err
				}
				cre := t.event(r.t.partition, s.prefix, s.dbname, "c", nil, after, r.position(lsn), time.Now())
				cre.Headers = []connectors.Header{{Key: "__debezium.oldkey", Schema: t.keySchema, Value: oldKey}}
				return r.queue(ctx, cre, lsn)
			}
			return r.emit(ctx, t, "u", before, after, lsn)
		}
	case *pglogrepl.DeleteMessage:
		if t, ok := r.change(m.RelationID, lsn, "d"); ok {
			before, err := t.row(cells(m.OldTuple))
			if err != nil {
				return err
			}
			return r.emit(ctx, t, "d", before, nil, lsn)
		}
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			if t, ok := r.change(id, lsn, "t"); ok {
				rec := t.truncateEvent(r.t.partition, s.prefix, s.dbname, r.position(lsn), time.Now())
				if err := r.queue(ctx, rec, lsn); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// relation (re)describes a table: pgoutput sends a relation message
// before a table's first change in a session and after it changes.
func (r *reader) relation(ctx context.Context, m *pglogrepl.RelationMessage) error {
	if !r.t.s.capturesTable(m.Namespace, m.RelationName) {
		r.tables[m.RelationID] = nil
		return nil
	}
	cols := make([]colDesc, len(m.Columns))
	for i, c := range m.Columns {
		cols[i] = colDesc{name: c.Name, oid: c.DataType, typmod: c.TypeModifier, key: c.Flags&1 != 0}
	}
	t, err := r.cat.describe(ctx, m.Namespace, m.RelationName, cols)
	if err != nil {
		return err
	}
	r.tables[m.RelationID] = t
	return nil
}

// change returns the table of a change that is to be emitted: captured,
// not in skipped.operations, not queued before a restart.
func (r *reader) change(relID uint32, lsn uint64, op string) (*table, bool) {
	t := r.tables[relID]
	if t == nil || r.t.s.skipped[op] || r.tx == nil || r.tx.skip || lsn <= r.tx.skipUpTo {
		return nil, false
	}
	return t, true
}

func (r *reader) position(lsn uint64) position {
	return position{commitTime: r.tx.commitTime, txID: r.tx.xid, lsn: lsn, procLSN: lsn, lastCommit: r.lastCommit, messageType: r.msgType}
}

// emit queues a change event, and a tombstone after a delete when
// tombstones.on.delete says so.
func (r *reader) emit(ctx context.Context, t *table, op string, before, after *connectors.StructValue, lsn uint64) error {
	rec := t.event(r.t.partition, r.t.s.prefix, r.t.s.dbname, op, before, after, r.position(lsn), time.Now())
	if op == "d" {
		return r.queueDelete(ctx, rec, lsn, true)
	}
	return r.queue(ctx, rec, lsn)
}

// queueDelete queues a delete event and, when tombstones.on.delete says
// so, its tombstone.
// final is false when more records of the same change follow.
func (r *reader) queueDelete(ctx context.Context, del *connectors.SourceRecord, lsn uint64, final bool) error {
	withTombstone := r.t.s.tombstones && del.Key != nil
	if withTombstone {
		tomb := tombstone(del) // before queuePart rewrites del's offset
		if err := r.queuePart(ctx, del, lsn); err != nil {
			return err
		}
		if final {
			return r.queue(ctx, tomb, lsn)
		}
		return r.queuePart(ctx, tomb, lsn)
	}
	if final {
		return r.queue(ctx, del, lsn)
	}
	return r.queuePart(ctx, del, lsn)
}

// queuePart queues a record of a change that more records complete (a
// delete before its tombstone, the delete half of a key change). Its
// offset is the position just before the change: all records of one
// change share its LSN, and a restart that found a part's offset stored
// must emit the whole change again rather than skip its rest.
func (r *reader) queuePart(ctx context.Context, rec *connectors.SourceRecord, lsn uint64) error {
	rec.Offset = r.position(lsn - 1).offset()
	return r.put(ctx, rec)
}

// queue queues a record that carries its change's own offset.
func (r *reader) queue(ctx context.Context, rec *connectors.SourceRecord, lsn uint64) error {
	if err := r.put(ctx, rec); err != nil {
		return err
	}
	r.tx.lastLSN = lsn
	return nil
}

// cells reads a pgoutput tuple.
func cells(t *pglogrepl.TupleData) []cell {
	if t == nil {
		return nil
	}
	out := make([]cell, len(t.Columns))
	for i, c := range t.Columns {
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
			out[i] = cell{null: true}
		case pglogrepl.TupleDataTypeToast:
			out[i] = cell{unchanged: true}
		default:
			out[i] = cell{text: string(c.Data)}
		}
	}
	return out
}
