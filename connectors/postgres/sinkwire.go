package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluice-io/sluice/connectors"
)

// This file is the sink's side of the wire: the rows of a run become one
// binary text[] parameter per column, built straight from the values' text
// into one buffer (no string or pgtype value per value), and a Write's
// BEGIN and statements go to the server as one pipeline of prepared
// statements ending in one Sync; COMMIT follows once they all succeeded
// (SinkTask.write says why not in the pipeline). Two round trips per Write,
// where BEGIN, each statement and COMMIT took one each.

// sinkMaxStatements bounds the statements a connection keeps prepared;
// past it they are all deallocated and prepared again as needed. A table
// and layout need at most a few (insert or upsert, delete).
const sinkMaxStatements = 256

// sinkBinary is the format code list of a Bind whose parameters are all
// binary (one code applies to every parameter).
var sinkBinary = []int16{1}

// sinkSpan is where one value's text lies in a run's data; start -1 is NULL.
type sinkSpan struct{ start, end int32 }

var sinkNull = sinkSpan{start: -1}

// sinkRun is one statement's worth of rows of one layout.
type sinkRun struct {
	op     string
	layout *sinkLayout
	rows   int
	// data holds the text of every value of the run, back to back. spans
	// has len(layout.cols) entries per row, row after row.
	data  []byte
	spans []sinkSpan
	// byKey finds the row of a primary key, for upsert, update and
	// delete: one statement cannot touch a row twice (ON CONFLICT DO
	// UPDATE refuses to), and the last record of a key is the one that
	// counts, so a later record replaces an earlier one in place.
	byKey map[string]int
}

// reset makes r an empty run of op and l, keeping its buffers.
func (r *sinkRun) reset(op string, l *sinkLayout) {
	r.op, r.layout, r.rows = op, l, 0
	r.data, r.spans = r.data[:0], r.spans[:0]
	if op == sinkOpInsert {
		r.byKey = nil
	} else if r.byKey == nil {
		r.byKey = map[string]int{}
	} else {
		clear(r.byKey)
	}
}

// appendValue appends the text of v (nil: NULL) to the run's data and
// its span to the current row.
func (r *sinkRun) appendValue(v any, s *connectors.Schema, colType string, tz *time.Location) error {
	if v == nil {
		r.spans = append(r.spans, sinkNull)
		return nil
	}
	start := len(r.data)
	data, err := sinkAppendText(r.data, v, s, colType, tz)
	if err != nil {
		r.data = r.data[:start]
		return err
	}
	if bytes.IndexByte(data[start:], 0) >= 0 {
		// PostgreSQL text cannot hold NUL; saying so beats its generic
		// "invalid byte sequence" error.
		r.data = data[:start]
		return fmt.Errorf("value contains a NUL character, which PostgreSQL text cannot store")
	}
	r.data = data
	r.spans = append(r.spans, sinkSpan{start: int32(start), end: int32(len(data))})
	return nil
}

// endRow ends the row whose values were just appended. A row whose key
// an earlier row of the run has replaces that row and is taken back off
// the end; key is the row's key (nil when the run has no keys).
func (r *sinkRun) endRow(key []byte) {
	if r.byKey != nil {
		n := len(r.layout.cols)
		if prev, ok := r.byKey[string(key)]; ok {
			copy(r.spans[prev*n:(prev+1)*n], r.spans[r.rows*n:])
			r.spans = r.spans[:r.rows*n]
			return
		}
		r.byKey[string(key)] = r.rows
	}
	r.rows++
}

// appendKey appends the run's current row's primary key to dst, as the
// byKey map knows it: the key columns' text, each ended by a NUL (which
// PostgreSQL text cannot hold, so the encoding is unambiguous). The
// caller made sure that none is NULL.
func (r *sinkRun) appendKey(dst []byte) []byte {
	row := r.spans[r.rows*len(r.layout.cols):]
	for c := range r.layout.npk {
		sp := row[c]
		dst = append(dst, r.data[sp.start:sp.end]...)
		dst = append(dst, 0)
	}
	return dst
}

// appendParams appends the run's parameters to buf, one binary text[]
// (PostgreSQL's array_recv format) per column, and returns buf and where
// each column's array ends in it.
func (r *sinkRun) appendParams(buf []byte, ends []int) ([]byte, []int) {
	n := len(r.layout.cols)
	for c := range n {
		head := len(buf)
		buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
		buf = binary.BigEndian.AppendUint32(buf, 0) // has NULLs, set below
		buf = binary.BigEndian.AppendUint32(buf, pgtype.TextOID)
		buf = binary.BigEndian.AppendUint32(buf, uint32(r.rows))
		buf = binary.BigEndian.AppendUint32(buf, 1) // lower bound
		hasNull := false
		for row := range r.rows {
			sp := r.spans[row*n+c]
			if sp.start < 0 {
				hasNull = true
				buf = binary.BigEndian.AppendUint32(buf, 0xffffffff) // -1: NULL
				continue
			}
			buf = binary.BigEndian.AppendUint32(buf, uint32(sp.end-sp.start))
			buf = append(buf, r.data[sp.start:sp.end]...)
		}
		if hasNull {
			binary.BigEndian.PutUint32(buf[head+4:], 1)
		}
		ends = append(ends, len(buf))
	}
	return buf, ends
}

// sinkStatements are the statements one connection has prepared, by SQL.
type sinkStatements struct {
	bySQL map[string]*pgconn.StatementDescription
	seq   int
}

// prepare returns sql prepared on conn, preparing it (one round trip) the
// first time.
func (s *sinkStatements) prepare(ctx context.Context, conn *pgconn.PgConn, sql string) (*pgconn.StatementDescription, error) {
	if sd, ok := s.bySQL[sql]; ok {
		return sd, nil
	}
	if len(s.bySQL) >= sinkMaxStatements {
		for _, sd := range s.bySQL {
			if err := conn.Deallocate(ctx, sd.Name); err != nil {
				return nil, fmt.Errorf("deallocate a prepared statement: %w", err)
			}
		}
		clear(s.bySQL)
	}
	if s.bySQL == nil {
		s.bySQL = map[string]*pgconn.StatementDescription{}
	}
	s.seq++
	sd, err := conn.Prepare(ctx, "sluice_sink_"+strconv.Itoa(s.seq), sql, nil)
	if err != nil {
		return nil, err
	}
	s.bySQL[sql] = sd
	return sd, nil
}
