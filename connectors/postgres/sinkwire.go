package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluice-io/sluice/connectors"
)

// This file is the sink's side of the wire: the rows of a run become one
// binary array parameter per column (text[], or an array of the column's
// own type: sinkWire), built straight from the values into one buffer (no
// string or pgtype value per value), and a Write's
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

// sinkWire is how one column's values travel: as text, cast to the
// column's type by the statement, or, where the value's Connect type is
// exactly the column's type, in that type's own binary form, which spares
// the server parsing every value (a timestamp's text above all).
type sinkWire byte

const (
	sinkWireText sinkWire = iota
	sinkWireInt8
	sinkWireInt4
	sinkWireInt2
	sinkWireFloat8
	sinkWireBool
	sinkWireTimestamp   // timestamp without time zone: the wall time in db.timezone
	sinkWireTimestamptz // timestamp with time zone: the instant
)

// sinkWireOf is the wire of a column of type colType (format_type's
// spelling) whose values have schema s (nil: schemaless, as text).
func sinkWireOf(s *connectors.Schema, colType string) sinkWire {
	switch {
	case s == nil:
	case s.Name == connectors.TimestampLogical:
		switch colType {
		case "timestamp without time zone":
			return sinkWireTimestamp
		case "timestamp with time zone":
			return sinkWireTimestamptz
		}
	case s.Name != "":
	case s.Type == connectors.Int64 && colType == "bigint":
		return sinkWireInt8
	case s.Type == connectors.Int32 && colType == "integer":
		return sinkWireInt4
	case (s.Type == connectors.Int16 || s.Type == connectors.Int8) && colType == "smallint":
		return sinkWireInt2
	case s.Type == connectors.Float64 && colType == "double precision":
		return sinkWireFloat8
	case s.Type == connectors.Boolean && colType == "boolean":
		return sinkWireBool
	}
	return sinkWireText
}

// elem is the wire's array element type: its oid, and its name in a cast.
func (w sinkWire) elem() (uint32, string) {
	switch w {
	case sinkWireInt8:
		return pgtype.Int8OID, "int8"
	case sinkWireInt4:
		return pgtype.Int4OID, "int4"
	case sinkWireInt2:
		return pgtype.Int2OID, "int2"
	case sinkWireFloat8:
		return pgtype.Float8OID, "float8"
	case sinkWireBool:
		return pgtype.BoolOID, "bool"
	case sinkWireTimestamp:
		return pgtype.TimestampOID, "timestamp"
	case sinkWireTimestamptz:
		return pgtype.TimestamptzOID, "timestamptz"
	}
	return pgtype.TextOID, "text"
}

// sinkWiresOf appends the wire of each column of l in table m to dst.
func sinkWiresOf(dst []sinkWire, l *sinkLayout, m *sinkTableMeta) []sinkWire {
	for i := range l.cols {
		dst = append(dst, sinkWireOf(l.cols[i].schema, m.cols[l.cols[i].name]))
	}
	return dst
}

// appendBinary appends v in wire w's binary form.
func (w sinkWire) appendBinary(dst []byte, v any, tz *time.Location) ([]byte, error) {
	switch w {
	case sinkWireInt8, sinkWireInt4, sinkWireInt2:
		var n int64
		switch x := v.(type) {
		case int8:
			n = int64(x)
		case int16:
			n = int64(x)
		case int32:
			n = int64(x)
		case int64:
			n = x
		default:
			return dst, fmt.Errorf("a %T value where its schema says integer", v)
		}
		switch w {
		case sinkWireInt4:
			if n < math.MinInt32 || n > math.MaxInt32 {
				return dst, fmt.Errorf("value %d is out of range for type integer", n)
			}
			return binary.BigEndian.AppendUint32(dst, uint32(n)), nil
		case sinkWireInt2:
			if n < math.MinInt16 || n > math.MaxInt16 {
				return dst, fmt.Errorf("value %d is out of range for type smallint", n)
			}
			return binary.BigEndian.AppendUint16(dst, uint16(n)), nil
		}
		return binary.BigEndian.AppendUint64(dst, uint64(n)), nil
	case sinkWireFloat8:
		f, ok := v.(float64)
		if !ok {
			return dst, fmt.Errorf("a %T value where its schema says float64", v)
		}
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case sinkWireBool:
		b, ok := v.(bool)
		if !ok {
			return dst, fmt.Errorf("a %T value where its schema says boolean", v)
		}
		if b {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case sinkWireTimestamp, sinkWireTimestamptz:
		t, ok := v.(time.Time)
		if !ok {
			return dst, fmt.Errorf("a %T value where its schema says Timestamp", v)
		}
		if w == sinkWireTimestamp {
			// The wall time in db.timezone, as the text form's offset,
			// which a timestamp column ignores, leaves it.
			wall := t.In(tz)
			t = time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), time.UTC)
		}
		// Microseconds, truncated as the text form's six places are.
		return binary.BigEndian.AppendUint64(dst, uint64(t.UnixMicro()-pgEpochMicros)), nil
	}
	return dst, fmt.Errorf("no binary form for wire %d", w)
}

// sinkSpan is where one value lies in a run's data; start -1 is NULL.
type sinkSpan struct{ start, end int }

var sinkNull = sinkSpan{start: -1}

// sinkRun is one statement's worth of rows of one layout.
type sinkRun struct {
	op     string
	layout *sinkLayout
	wires  []sinkWire // of each column
	rows   int
	// data holds every value of the run in its wire form, back to back. spans
	// has len(layout.cols) entries per row, row after row.
	data  []byte
	spans []sinkSpan
	// byKey finds the row of a primary key, for upsert, update and
	// delete: one statement cannot touch a row twice (ON CONFLICT DO
	// UPDATE refuses to), and the last record of a key is the one that
	// counts, so a later record replaces an earlier one in place.
	byKey map[string]int
}

// reset makes r an empty run of op and l into table m, keeping its
// buffers.
func (r *sinkRun) reset(op string, l *sinkLayout, m *sinkTableMeta) {
	r.op, r.layout, r.rows = op, l, 0
	r.wires = sinkWiresOf(r.wires[:0], l, m)
	r.data, r.spans = r.data[:0], r.spans[:0]
	if op == sinkOpInsert {
		r.byKey = nil
	} else if r.byKey == nil {
		r.byKey = map[string]int{}
	} else {
		clear(r.byKey)
	}
}

// appendValue appends v (nil: NULL), the value of column c, to the run's
// data in the column's wire form, and its span to the current row.
func (r *sinkRun) appendValue(c int, v any, s *connectors.Schema, colType string, tz *time.Location) error {
	if v == nil {
		r.spans = append(r.spans, sinkNull)
		return nil
	}
	start := len(r.data)
	if w := r.wires[c]; w != sinkWireText {
		data, err := w.appendBinary(r.data, v, tz)
		if err != nil {
			return err
		}
		r.data = data
		r.spans = append(r.spans, sinkSpan{start: start, end: len(data)})
		return nil
	}
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
	r.spans = append(r.spans, sinkSpan{start: start, end: len(data)})
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
// byKey map knows it: the key columns' wire forms, each followed by a NUL.
// That is unambiguous: text holds no NUL, and a binary form's length is
// fixed by its column. The caller made sure that no key column is NULL.
func (r *sinkRun) appendKey(dst []byte) []byte {
	row := r.spans[r.rows*len(r.layout.cols):]
	for c := range r.layout.npk {
		sp := row[c]
		dst = append(dst, r.data[sp.start:sp.end]...)
		dst = append(dst, 0)
	}
	return dst
}

// appendParams appends the run's parameters to buf, one binary array
// (PostgreSQL's array_recv format) of the column's wire type per column,
// and returns buf and where each column's array ends in it.
func (r *sinkRun) appendParams(buf []byte, ends []int) ([]byte, []int) {
	n := len(r.layout.cols)
	for c := range n {
		head := len(buf)
		buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
		buf = binary.BigEndian.AppendUint32(buf, 0) // has NULLs, set below
		oid, _ := r.wires[c].elem()
		buf = binary.BigEndian.AppendUint32(buf, oid)
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
