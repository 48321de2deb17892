package postgres

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// This file turns the rows of a query into Connect values straight from
// the wire: each column's bytes (binary for the types pgx asks binary for,
// text for text) become the Go value of the column's Connect schema in one
// step, where pgx's Values built its own value first (a pgtype.Numeric, a
// time in the local zone) and Column.ConnectValue then built another. The
// values of a batch share one []any, and its strings one backing string.
// A column whose wire type is not the one it was described with (the table
// changed under the query, which the fingerprint then catches) goes the
// general way: pgx's codec, then ConnectValue.

// srcKind is how a column's bytes are decoded.
type srcKind uint8

const (
	srcGeneral srcKind = iota // pgx's codec, then Column.ConnectValue
	srcString                 // text of any type: the bytes as they are
	srcInt16
	srcInt32
	srcInt64
	srcFloat32
	srcFloat64
	srcBool
	srcBytea
	srcTimestamp
	srcDate
	srcTime
	srcNumeric
)

// pgEpochMicros is PostgreSQL's epoch, 2000-01-01 UTC, in Unix microseconds;
// pgEpochDays the same in days.
const (
	pgEpochMicros = 946684800 * 1000000
	pgEpochDays   = 10957
)

// srcKindOf picks the decoding of column c as the server sends it (fd).
func srcKindOf(c *Column, fd *pgconn.FieldDescription) srcKind {
	if c.ReadsAsText() {
		if fd.DataTypeOID == pgtype.TextOID {
			return srcString
		}
		return srcGeneral
	}
	if fd.DataTypeOID != c.OID {
		return srcGeneral
	}
	switch c.OID {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
		return srcString
	}
	if fd.Format != pgx.BinaryFormatCode {
		return srcGeneral
	}
	switch c.OID {
	case pgtype.Int2OID:
		return srcInt16
	case pgtype.Int4OID:
		return srcInt32
	case pgtype.Int8OID:
		return srcInt64
	case pgtype.Float4OID:
		return srcFloat32
	case pgtype.Float8OID:
		return srcFloat64
	case pgtype.BoolOID:
		return srcBool
	case pgtype.ByteaOID:
		return srcBytea
	case pgtype.TimestampOID, pgtype.TimestamptzOID:
		return srcTimestamp
	case pgtype.DateOID:
		return srcDate
	case pgtype.TimeOID:
		return srcTime
	case pgtype.NumericOID:
		return srcNumeric
	}
	return srcGeneral
}

// srcStringRef is a string value waiting for its batch's backing string:
// row and column, and its place in the arena.
type srcStringRef struct {
	row, col   int32
	start, end int
}

// srcDecoder decodes the rows of one query. Its buffers are reused from
// query to query (the fetch goroutine owns it); the rows it returns are not.
type srcDecoder struct {
	arena []byte
	refs  []srcStringRef
	kinds []srcKind
	rats  srcRatSlab
}

// collect reads every row of rows as Connect values of cols, the columns
// of the query's select list in order.
func (d *srcDecoder) collect(rows pgx.Rows, cols []Column) ([]srcRow, error) {
	defer rows.Close()
	fds := rows.FieldDescriptions()
	if len(fds) != len(cols) {
		return nil, fmt.Errorf("the query returned %d columns, %d were described", len(fds), len(cols))
	}
	d.kinds = d.kinds[:0]
	for i := range fds {
		d.kinds = append(d.kinds, srcKindOf(&cols[i], &fds[i]))
	}
	d.arena, d.refs = d.arena[:0], d.refs[:0]
	n := len(cols)
	var out []srcRow
	var slab []any // the values of the next rows, allocated a chunk at a time
	for rows.Next() {
		if len(slab) < n {
			slab = make([]any, n*srcSlabRows)
		}
		row := srcRow(slab[:n:n])
		slab = slab[n:]
		for i, raw := range rows.RawValues() {
			c := &cols[i]
			if raw == nil {
				if !c.Nullable {
					return nil, fmt.Errorf("column %q is NOT NULL yet returned NULL", c.Name)
				}
				continue
			}
			if d.kinds[i] == srcString {
				d.refs = append(d.refs, srcStringRef{row: int32(len(out)), col: int32(i), start: len(d.arena), end: len(d.arena) + len(raw)})
				d.arena = append(d.arena, raw...)
				continue
			}
			v, err := d.decode(rows, c, d.kinds[i], &fds[i], raw)
			if err != nil {
				return nil, err
			}
			row[i] = v
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(d.refs) > 0 {
		// One string for the batch's text; each value is a slice of it.
		all := string(d.arena)
		for _, r := range d.refs {
			out[r.row][r.col] = all[r.start:r.end]
		}
	}
	return out, nil
}

// srcSlabRows is how many rows' values one allocation holds.
const srcSlabRows = 256

// decode returns the Connect value of one non-NULL, non-string value.
func (d *srcDecoder) decode(rows pgx.Rows, c *Column, kind srcKind, fd *pgconn.FieldDescription, raw []byte) (any, error) {
	need := 0
	switch kind {
	case srcInt16:
		need = 2
	case srcInt32, srcFloat32, srcDate:
		need = 4
	case srcInt64, srcFloat64, srcTimestamp, srcTime:
		need = 8
	case srcBool:
		need = 1
	}
	if need > 0 && len(raw) != need {
		return nil, fmt.Errorf("column %q: %d bytes for a %d-byte value", c.Name, len(raw), need)
	}
	switch kind {
	case srcInt16:
		return int16(binary.BigEndian.Uint16(raw)), nil
	case srcInt32:
		return int32(binary.BigEndian.Uint32(raw)), nil
	case srcInt64:
		return int64(binary.BigEndian.Uint64(raw)), nil
	case srcFloat32:
		return math.Float32frombits(binary.BigEndian.Uint32(raw)), nil
	case srcFloat64:
		return math.Float64frombits(binary.BigEndian.Uint64(raw)), nil
	case srcBool:
		return raw[0] != 0, nil
	case srcBytea:
		return append([]byte{}, raw...), nil
	case srcTimestamp:
		us := int64(binary.BigEndian.Uint64(raw))
		switch us {
		case math.MaxInt64:
			return nil, srcInfinite(c, pgtype.Infinity)
		case math.MinInt64:
			return nil, srcInfinite(c, pgtype.NegativeInfinity)
		}
		return time.UnixMicro(us + pgEpochMicros).UTC(), nil
	case srcDate:
		days := int32(binary.BigEndian.Uint32(raw))
		switch days {
		case math.MaxInt32:
			return nil, srcInfinite(c, pgtype.Infinity)
		case math.MinInt32:
			return nil, srcInfinite(c, pgtype.NegativeInfinity)
		}
		return time.Unix((int64(days)+pgEpochDays)*86400, 0).UTC(), nil
	case srcTime:
		return time.UnixMicro(int64(binary.BigEndian.Uint64(raw))).UTC(), nil
	case srcNumeric:
		r, err := d.rats.numeric(raw)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		return r, nil
	}
	typ, ok := rows.Conn().TypeMap().TypeForOID(fd.DataTypeOID)
	if !ok {
		if fd.Format == pgx.TextFormatCode {
			return c.ConnectValue(string(raw))
		}
		return nil, fmt.Errorf("column %q: no decoder for type oid %d", c.Name, fd.DataTypeOID)
	}
	v, err := typ.Codec.DecodeValue(rows.Conn().TypeMap(), fd.DataTypeOID, fd.Format, raw)
	if err != nil {
		return nil, fmt.Errorf("column %q: %w", c.Name, err)
	}
	return c.ConnectValue(v)
}

func srcInfinite(c *Column, m pgtype.InfinityModifier) error {
	return fmt.Errorf("column %q: %v cannot be a Connect %s", c.Name, m, c.Schema().Name)
}

// Signs of PostgreSQL's binary numeric.
const (
	pgNumericPos  = 0x0000
	pgNumericNeg  = 0x4000
	pgNumericNaN  = 0xC000
	pgNumericPInf = 0xD000
	pgNumericNInf = 0xF000
)

// srcRatSlab hands out the *big.Rat of small decimals with no allocation
// of their own: the Rats and the words of their numerators and
// denominators are taken from chunks shared by srcSlabRows values, where
// new(big.Rat).SetInt64 and the denominator's SetInt64 made three
// allocations a value (a third of the decoder's time for a row with one
// numeric). Each value's words are a slice whose capacity is its length,
// so a caller that changes one Rat gets new words for it (big.nat grows
// by allocating) and never writes over its neighbours'.
type srcRatSlab struct {
	rats  []big.Rat
	words []big.Word
}

// srcRatTemplate is a Rat with a denominator: a Rat copied from it gives
// Denom() a reference to the copy's own denominator (a zero Rat's Denom
// returns a detached 1), whose words SetBits then replaces, so the
// template's own words are only ever read.
var srcRatTemplate = func() (r big.Rat) {
	r.SetInt64(1)
	return r
}()

// numeric is srcNumericRat with the small decimals from the slab.
func (s *srcRatSlab) numeric(raw []byte) (*big.Rat, error) {
	if bits.UintSize != 64 {
		return srcNumericRat(raw)
	}
	unscaled, den, ok := srcNumericInt64(raw)
	if !ok {
		return srcNumericRat(raw) // a wide value, or one it words the error of
	}
	if len(s.rats) == 0 {
		s.rats = make([]big.Rat, srcSlabRows)
	}
	if len(s.words) < 2 {
		s.words = make([]big.Word, 2*srcSlabRows)
	}
	r := &s.rats[0]
	s.rats = s.rats[1:]
	w := s.words[:2:2]
	s.words = s.words[2:]
	mag := uint64(unscaled)
	if unscaled < 0 {
		mag = -mag
	}
	w[0], w[1] = big.Word(mag), big.Word(den)
	*r = srcRatTemplate
	r.Denom().SetBits(w[1:2:2])
	num := r.Num().SetBits(w[0:1:1])
	if unscaled < 0 {
		num.Neg(num)
	}
	return r, nil
}

// srcNumericInt64 decodes a binary numeric of at most 16 significant
// decimal digits and 16 places as the fraction unscaled/den in lowest
// terms (den a power of ten divided by what it shares with unscaled);
// ok is false for a wider value, which needs big.Int, and for one that is
// not a valid decimal (srcNumericRat says why).
func srcNumericInt64(raw []byte) (unscaled, den int64, ok bool) {
	if len(raw) < 8 {
		return 0, 0, false
	}
	ndigits := int(binary.BigEndian.Uint16(raw))
	weight := int(int16(binary.BigEndian.Uint16(raw[2:])))
	sign := binary.BigEndian.Uint16(raw[4:])
	if sign != pgNumericPos && sign != pgNumericNeg || len(raw) != 8+2*ndigits {
		return 0, 0, false
	}
	if ndigits == 0 {
		return 0, 1, true
	}
	exp := weight - (ndigits - 1)
	if exp < -4 || ndigits+max(exp, 0) > 4 {
		return 0, 0, false
	}
	for i := range ndigits {
		unscaled = unscaled*10000 + int64(binary.BigEndian.Uint16(raw[8+2*i:]))
	}
	for range max(exp, 0) {
		unscaled *= 10000
	}
	if sign == pgNumericNeg {
		unscaled = -unscaled
	}
	den = 1
	for range -exp {
		den *= 10000
	}
	// den is a power of ten, so what unscaled and den share is 2s and 5s:
	// dividing those out leaves the fraction in lowest terms, the form
	// big.Rat keeps, with no gcd to compute.
	for den%2 == 0 && unscaled%2 == 0 {
		unscaled, den = unscaled/2, den/2
	}
	for den%5 == 0 && unscaled%5 == 0 {
		unscaled, den = unscaled/5, den/5
	}
	return unscaled, den, true
}

// srcNumericRat decodes PostgreSQL's binary numeric (numeric_send): a
// count of base-10000 digits, the weight of the first, a sign, the display
// scale, then the digits. The value is digits[i] * 10000^(weight-i) summed,
// exactly, as a *big.Rat (a Connect Decimal's Go value).
func srcNumericRat(raw []byte) (*big.Rat, error) {
	if len(raw) < 8 {
		return nil, fmt.Errorf("numeric of %d bytes", len(raw))
	}
	ndigits := int(binary.BigEndian.Uint16(raw))
	weight := int(int16(binary.BigEndian.Uint16(raw[2:])))
	sign := binary.BigEndian.Uint16(raw[4:])
	switch sign {
	case pgNumericNaN:
		return nil, fmt.Errorf("NaN cannot be a Connect Decimal")
	case pgNumericPInf:
		return nil, fmt.Errorf("Infinity cannot be a Connect Decimal")
	case pgNumericNInf:
		return nil, fmt.Errorf("-Infinity cannot be a Connect Decimal")
	case pgNumericPos, pgNumericNeg:
	default:
		return nil, fmt.Errorf("numeric with sign %#x", sign)
	}
	if len(raw) != 8+2*ndigits {
		return nil, fmt.Errorf("numeric of %d digits in %d bytes", ndigits, len(raw))
	}
	if ndigits == 0 {
		return new(big.Rat), nil
	}
	if unscaled, den, ok := srcNumericInt64(raw); ok {
		r := new(big.Rat).SetInt64(unscaled)
		if den != 1 {
			r.Denom().SetInt64(den) // a reference to r's denominator, after SetInt64
		}
		return r, nil
	}
	// The value is unscaled * 10000^exp.
	exp := weight - (ndigits - 1)
	unscaled := new(big.Int)
	digit, base := new(big.Int), big.NewInt(10000)
	for i := range ndigits {
		unscaled.Mul(unscaled, base)
		unscaled.Add(unscaled, digit.SetUint64(uint64(binary.BigEndian.Uint16(raw[8+2*i:]))))
	}
	if sign == pgNumericNeg {
		unscaled.Neg(unscaled)
	}
	pow := new(big.Int).Exp(base, big.NewInt(int64(abs(exp))), nil)
	if exp >= 0 {
		return new(big.Rat).SetInt(unscaled.Mul(unscaled, pow)), nil
	}
	return new(big.Rat).SetFrac(unscaled, pow), nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
