package postgres

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// sinkColumnType returns the PostgreSQL type auto.create and auto.evolve give
// a column of schema s, as Confluent's PostgreSQL dialect maps them, or an
// error for a schema no column type holds.
func sinkColumnType(s *connectors.Schema) (string, error) {
	switch s.Name {
	case connectors.DecimalLogical:
		return "numeric", nil
	case connectors.TimestampLogical:
		return "timestamp", nil
	case connectors.DateLogical:
		return "date", nil
	case connectors.TimeLogical:
		return "time", nil
	}
	switch s.Type {
	case connectors.Int8, connectors.Int16:
		return "smallint", nil
	case connectors.Int32:
		return "integer", nil
	case connectors.Int64:
		return "bigint", nil
	case connectors.Float32:
		return "real", nil
	case connectors.Float64:
		return "double precision", nil
	case connectors.Boolean:
		return "boolean", nil
	case connectors.String:
		return "text", nil
	case connectors.Bytes:
		return "bytea", nil
	}
	return "", fmt.Errorf("no PostgreSQL column type for Connect type %s", sinkDescribeSchema(s))
}

func sinkDescribeSchema(s *connectors.Schema) string {
	if s.Name != "" {
		return fmt.Sprintf("%s (%s)", s.Type, s.Name)
	}
	return string(s.Type)
}

// sinkAppendText appends v (not nil) as PostgreSQL's text input for a
// column of type colType (format_type's spelling) to dst. Values travel as
// text (but those sinkWireOf sends binary) and are cast to the column's own
// type in the statement, so every type PostgreSQL can read from text works,
// including ones the sink has no Go mapping for (enums, uuid, json,
// varchar(n), numeric(p,s), ...), and one prepared statement serves any
// number of rows (see sinkwire.go). The common types are appended in
// place, without a string of their own.
//
// s is the field's Connect schema, nil for schemaless values.
func sinkAppendText(dst []byte, v any, s *connectors.Schema, colType string, tz *time.Location) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return append(dst, x...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float64:
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return strconv.AppendFloat(dst, x, 'g', -1, 64), nil
		}
	case time.Time:
		if s == nil || (s.Name != connectors.DateLogical && s.Name != connectors.TimeLogical) {
			return x.In(tz).AppendFormat(dst, sinkPgTimestampLayout), nil
		}
	}
	str, err := sinkTextOf(v, s, colType, tz)
	if err != nil {
		return dst, err
	}
	return append(dst, str...), nil
}

// Layouts of PostgreSQL's text input. A Timestamp carries its offset, so a
// timestamptz column gets the right instant, and a timestamp column (which
// ignores the offset) gets the wall time in db.timezone.
const (
	sinkPgTimestampLayout = "2006-01-02 15:04:05.999999-07:00"
	sinkPgDateLayout      = "2006-01-02"
	sinkPgTimeLayout      = "15:04:05.999999"
)

func sinkTextOf(v any, s *connectors.Schema, colType string, tz *time.Location) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int8:
		return strconv.FormatInt(int64(x), 10), nil
	case int16:
		return strconv.FormatInt(int64(x), 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.FormatInt(int64(x), 10), nil
	case float32:
		return sinkFormatFloat(float64(x), 32), nil
	case float64:
		return sinkFormatFloat(x, 64), nil
	case []byte:
		if sinkIsTextual(colType) {
			// Raw bytes need not be valid text; refusing beats writing
			// their hex spelling as if it were the value.
			return "", fmt.Errorf("a bytes value fits a bytea column, not %s", colType)
		}
		// bytea's hex input format.
		return `\x` + hex.EncodeToString(x), nil
	case *big.Rat:
		if x == nil {
			return "", fmt.Errorf("nil Decimal")
		}
		if s != nil {
			if scale, err := strconv.Atoi(s.Parameters["scale"]); err == nil && scale >= 0 {
				return x.FloatString(scale), nil
			}
		}
		if x.IsInt() {
			return x.Num().String(), nil
		}
		// Without a scale, the shortest exact decimal if there is one.
		if n, exact := x.FloatPrec(); exact {
			return x.FloatString(n), nil
		}
		return "", fmt.Errorf("Decimal %s has no finite decimal form and its schema no scale", x.RatString())
	case time.Time:
		var name string
		if s != nil {
			name = s.Name
		}
		switch name {
		case connectors.DateLogical:
			// A Date is a calendar day, at midnight UTC in Connect.
			return x.UTC().Format(sinkPgDateLayout), nil
		case connectors.TimeLogical:
			return x.UTC().Format(sinkPgTimeLayout), nil
		default:
			return x.In(tz).Format(sinkPgTimestampLayout), nil
		}
	case map[string]any, []any:
		if !sinkIsJSON(colType) {
			return "", fmt.Errorf("a %T value fits only a json or jsonb column, not %s", v, colType)
		}
		b, err := json.Marshal(x)
		if err != nil {
			return "", fmt.Errorf("cannot render as JSON: %v", err)
		}
		return string(b), nil
	case *connectors.StructValue:
		return "", fmt.Errorf("a nested struct has no column type (flatten it first)")
	}
	return "", fmt.Errorf("unsupported value of Go type %T", v)
}

func sinkFormatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

func sinkIsTextual(colType string) bool {
	return colType == "text" || strings.HasPrefix(colType, "character")
}

func sinkIsJSON(colType string) bool { return colType == "json" || colType == "jsonb" }
