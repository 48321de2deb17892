package postgrescdc

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
)

// Debezium's logical type names (io.debezium.data and io.debezium.time).
const (
	jsonName          = "io.debezium.data.Json"
	uuidName          = "io.debezium.data.Uuid"
	enumName          = "io.debezium.data.Enum"
	xmlName           = "io.debezium.data.Xml"
	bitsName          = "io.debezium.data.Bits"
	pointName         = "io.debezium.data.geometry.Point"
	ltreeName         = "io.debezium.data.Ltree"
	tsvectorName      = "io.debezium.data.Tsvector"
	varScaleName      = "io.debezium.data.VariableScaleDecimal"
	dateName          = "io.debezium.time.Date"
	timeName          = "io.debezium.time.Time"
	microTimeName     = "io.debezium.time.MicroTime"
	nanoTimeName      = "io.debezium.time.NanoTime"
	timestampName     = "io.debezium.time.Timestamp"
	microTimestampNm  = "io.debezium.time.MicroTimestamp"
	nanoTimestampName = "io.debezium.time.NanoTimestamp"
	zonedTimestampNm  = "io.debezium.time.ZonedTimestamp"
	zonedTimeName     = "io.debezium.time.ZonedTime"
	microDurationName = "io.debezium.time.MicroDuration"

	// unavailableValue is Debezium's unavailable.value.placeholder: what an
	// update carries for a TOASTed column it did not change.
	unavailableValue = "__debezium_unavailable_value"
)

// PostgreSQL type oids (pg_type.dat).
const (
	oidBool        = 16
	oidBytea       = 17
	oidChar        = 18
	oidName        = 19
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidOID         = 26
	oidJSON        = 114
	oidXML         = 142
	oidCidr        = 650
	oidMacaddr8    = 774
	oidMacaddr     = 829
	oidInet        = 869
	oidFloat4      = 700
	oidFloat8      = 701
	oidMoney       = 790
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidInterval    = 1186
	oidTimetz      = 1266
	oidBit         = 1560
	oidVarbit      = 1562
	oidPoint       = 600
	oidTsvector    = 3614
	oidNumeric     = 1700
	oidUUID        = 2950
	oidJSONB       = 3802
	oidInt4Range   = 3904
	oidNumRange    = 3906
	oidTsRange     = 3908
	oidTstzRange   = 3910
	oidDateRange   = 3912
	oidInt8Range   = 3926
)

// arrayElems maps the array types Debezium captures to their element type.
var arrayElems = map[uint32]uint32{
	1000: oidBool, 1001: oidBytea, 1002: oidChar, 1005: oidInt2, 1007: oidInt4, 1009: oidText,
	1014: oidBpchar, 1015: oidVarchar, 1016: oidInt8, 1021: oidFloat4, 1022: oidFloat8, 1028: oidOID,
	1231: oidNumeric, 1182: oidDate, 1183: oidTime, 1115: oidTimestamp, 1185: oidTimestamptz,
	1270: oidTimetz, 2951: oidUUID, 199: oidJSON, 3807: oidJSONB, 1041: oidInet, 651: oidCidr,
	1040: oidMacaddr, 775: oidMacaddr8, 3905: oidInt4Range, 3907: oidNumRange, 3909: oidTsRange,
	3911: oidTstzRange, 3913: oidDateRange, 3927: oidInt8Range,
}

// typeModes are the connector's *.handling.mode and time.precision.mode.
type typeModes struct {
	decimal string // precise, double, string
	time    string // adaptive, adaptive_time_microseconds, connect
	binary  string // bytes, base64, base64-url-safe, hex
	hstore  string // json, map
}

// typeInfo is what the connector knows of a type that is not built in.
type typeInfo struct {
	enumLabels []string // an enum's labels in sort order
	elem       uint32   // an array's element type (0: not an array)
	name       string   // an extension type in namedTypes
	// base is a domain's base type (0: not a domain), and baseTypmod the
	// domain's modifier of it (numeric(8,2) for CREATE DOMAIN price AS
	// numeric(8,2)); a column of a domain has no modifier of its own.
	base       uint32
	baseTypmod int32
}

// converter turns a column's text representation (pgoutput's and the
// snapshot's output format) into its Connect value.
type converter struct {
	schema *connectors.Schema // required; made optional per column
	parse  func(text string) (any, error)
	// parseSnapshot, when set, parses what the snapshot read: Debezium's
	// snapshot reads through the JDBC driver, whose values differ from
	// the stream's for a few inputs (infinite dates).
	parseSnapshot func(text string) (any, error)
	// placeholder is the value of an unchanged TOASTed column.
	placeholder any
}

func logical(t connectors.SchemaType, name string) *connectors.Schema {
	return &connectors.Schema{Type: t, Name: name, Version: 1}
}

// precisionOf reads a time type's fractional digits from its typmod; a
// column without one has PostgreSQL's default, 6.
func precisionOf(typmod int32) int {
	if typmod < 0 || typmod > 6 {
		return 6
	}
	return int(typmod)
}

// converterFor returns the converter of a column type, or nil when Debezium
// would not capture the type (include.unknown.datatypes=false): such
// columns are left out of the events, as Debezium leaves them out.
func converterFor(oid uint32, typmod int32, m typeModes, lookup func(uint32) *typeInfo) *converter {
	str := func(s *connectors.Schema) *converter {
		return &converter{schema: s, parse: func(t string) (any, error) { return t, nil }, placeholder: unavailableValue}
	}
	switch oid {
	case oidBool:
		return &converter{schema: connectors.BooleanSchema, parse: parseBool}
	case oidInt2:
		return &converter{schema: connectors.Int16Schema, parse: func(t string) (any, error) {
			n, err := strconv.ParseInt(t, 10, 16)
			return int16(n), err
		}}
	case oidInt4:
		return &converter{schema: connectors.Int32Schema, parse: func(t string) (any, error) {
			n, err := strconv.ParseInt(t, 10, 32)
			return int32(n), err
		}}
	case oidInt8, oidOID:
		return &converter{schema: connectors.Int64Schema, parse: func(t string) (any, error) { return strconv.ParseInt(t, 10, 64) }}
	case oidFloat4:
		return &converter{schema: connectors.Float32Schema, parse: func(t string) (any, error) {
			f, err := strconv.ParseFloat(t, 32)
			return float32(f), err
		}}
	case oidFloat8:
		return &converter{schema: connectors.Float64Schema, parse: func(t string) (any, error) { return strconv.ParseFloat(t, 64) }}
	case oidText, oidVarchar, oidBpchar, oidName, oidChar, oidInet, oidCidr, oidMacaddr, oidMacaddr8,
		oidInt4Range, oidNumRange, oidTsRange, oidTstzRange, oidDateRange, oidInt8Range:
		return str(connectors.StringSchema)
	case oidJSON, oidJSONB:
		return str(logical(connectors.String, jsonName))
	case oidXML:
		return str(logical(connectors.String, xmlName))
	case oidUUID:
		return str(logical(connectors.String, uuidName))
	case oidBit, oidVarbit:
		switch {
		case typmod == 1:
			return &converter{schema: connectors.BooleanSchema, parse: func(t string) (any, error) { return t == "1", nil }}
		case typmod > 1:
			return bitsConverter(int(typmod))
		case oid == oidVarbit:
			// A varbit without a length is, to Debezium, one of the
			// JDBC driver's column size: Integer.MAX_VALUE.
			return bitsConverter(math.MaxInt32)
		}
		return nil
	case oidPoint:
		return pointConverter()
	case oidTsvector:
		return str(logical(connectors.String, tsvectorName))
	case oidBytea:
		return byteaConverter(m.binary)
	case oidNumeric:
		return numericConverter(typmod, m.decimal)
	case oidMoney:
		return moneyConverter(m.decimal)
	case oidDate:
		return dateConverter(m.time)
	case oidTime:
		return timeConverter(precisionOf(typmod), m.time)
	case oidTimestamp:
		return timestampConverter(precisionOf(typmod), m.time)
	case oidTimestamptz:
		width := precisionOf(typmod)
		return &converter{schema: logical(connectors.String, zonedTimestampNm), parse: func(t string) (any, error) { return zonedTimestamp(t, width) }}
	case oidTimetz:
		return &converter{schema: logical(connectors.String, zonedTimeName), parse: zonedTime}
	case oidInterval:
		return &converter{schema: logical(connectors.Int64, microDurationName), parse: microDuration}
	}
	if elem, ok := arrayElems[oid]; ok {
		return arrayConverter(converterFor(elem, typmod, m, lookup), true)
	}
	info := lookup(oid)
	if info == nil {
		return nil
	}
	if info.base != 0 {
		// Debezium captures a domain as its base type (its base's, for
		// a domain over a domain), with the domain's length, precision
		// and scale; an array of a domain it leaves out (below).
		if typmod < 0 {
			typmod = info.baseTypmod
		}
		return converterFor(info.base, typmod, m, lookup)
	}
	if info.enumLabels != nil {
		return enumConverter(info.enumLabels)
	}
	if info.name == "hstore" {
		return hstoreConverter(m.hstore)
	}
	if info.name != "" {
		return namedConverter(info.name)
	}
	if info.elem != 0 {
		ei := lookup(info.elem)
		switch {
		case ei != nil && ei.enumLabels != nil:
			// Debezium's array of enum has required elements.
			return arrayConverter(enumConverter(ei.enumLabels), false)
		case ei != nil && ei.name == "ltree":
			return arrayConverter(namedConverter(ei.name), true)
		}
	}
	return nil
}

// namedTypes are the extension types (their oids differ from database to
// database) that Debezium maps by name.
var namedTypes = map[string]bool{"ltree": true, "citext": true, "hstore": true}

// namedConverter maps an extension type of namedTypes as Debezium does:
// ltree as io.debezium.data.Ltree, citext as a plain string.
func namedConverter(name string) *converter {
	s := connectors.StringSchema
	if name == "ltree" {
		s = logical(connectors.String, ltreeName)
	}
	return &converter{schema: s, parse: func(t string) (any, error) { return t, nil }, placeholder: unavailableValue}
}

// bitsConverter maps a bit string of length bits (more than one) as
// Debezium does: io.debezium.data.Bits with its length, the value the
// string read as a binary number (its last bit the lowest), in
// little-endian bytes, as few as its highest set bit needs (none for all
// zeros): what Java's BitSet.toByteArray gives.
func bitsConverter(length int) *converter {
	s := &connectors.Schema{Type: connectors.Bytes, Name: bitsName, Version: 1, Parameters: map[string]string{"length": strconv.Itoa(length)}}
	return &converter{schema: s, placeholder: []byte(unavailableValue), parse: func(t string) (any, error) {
		out := make([]byte, 0, (len(t)+7)/8)
		for i := range len(t) {
			switch t[i] {
			case '0':
			case '1':
				bit := len(t) - 1 - i
				for len(out) <= bit/8 {
					out = append(out, 0)
				}
				out[bit/8] |= 1 << (bit % 8)
			default:
				return nil, fmt.Errorf("not a bit string: %q", t)
			}
		}
		return out, nil
	}}
}

// pointSchema is Debezium's io.debezium.data.geometry.Point.
var pointSchema = &connectors.Schema{Type: connectors.Struct, Name: pointName, Version: 1, Doc: "Geometry (POINT)",
	Fields: []connectors.Field{
		{Name: "x", Schema: connectors.Float64Schema},
		{Name: "y", Schema: connectors.Float64Schema},
		{Name: "wkb", Schema: connectors.OptionalBytesSchema},
		{Name: "srid", Schema: &connectors.Schema{Type: connectors.Int32, Optional: true}},
	}}

// pointConverter maps point as Debezium does: x, y, the point in
// little-endian WKB and no SRID.
func pointConverter() *converter {
	return &converter{schema: pointSchema, parse: func(t string) (any, error) {
		xs, ys, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(t, "("), ")"), ",")
		x, errX := strconv.ParseFloat(xs, 64)
		y, errY := strconv.ParseFloat(ys, 64)
		if !ok || errX != nil || errY != nil {
			return nil, fmt.Errorf("not a point: %q", t)
		}
		wkb := make([]byte, 21)
		wkb[0] = 1                                // little-endian
		binary.LittleEndian.PutUint32(wkb[1:], 1) // a Point
		binary.LittleEndian.PutUint64(wkb[5:], math.Float64bits(x))
		binary.LittleEndian.PutUint64(wkb[13:], math.Float64bits(y))
		v := connectors.NewStruct(pointSchema)
		v.Values[0], v.Values[1], v.Values[2] = x, y, wkb
		return v, nil
	}}
}

func enumConverter(labels []string) *converter {
	s := logical(connectors.String, enumName)
	s.Parameters = map[string]string{"allowed": strings.Join(labels, ",")}
	return &converter{schema: s, parse: func(t string) (any, error) { return t, nil }, placeholder: unavailableValue}
}

func parseBool(t string) (any, error) {
	switch t {
	case "t", "true":
		return true, nil
	case "f", "false":
		return false, nil
	}
	return nil, fmt.Errorf("not a boolean: %q", t)
}

func byteaConverter(mode string) *converter {
	encode := func(b []byte) any { return b }
	s := connectors.BytesSchema
	switch mode {
	case "base64":
		s, encode = connectors.StringSchema, func(b []byte) any { return base64.StdEncoding.EncodeToString(b) }
	case "base64-url-safe":
		s, encode = connectors.StringSchema, func(b []byte) any { return base64.URLEncoding.EncodeToString(b) }
	case "hex":
		s, encode = connectors.StringSchema, func(b []byte) any { return hex.EncodeToString(b) }
	}
	return &converter{schema: s, placeholder: encode([]byte(unavailableValue)), parse: func(t string) (any, error) {
		b, err := decodeBytea(t)
		if err != nil {
			return nil, err
		}
		return encode(b), nil
	}}
}

// decodeBytea reads bytea's hex output format (bytea_output=hex, the default).
func decodeBytea(t string) ([]byte, error) {
	if !strings.HasPrefix(t, `\x`) {
		return nil, fmt.Errorf("bytea value is not in hex format (set bytea_output=hex)")
	}
	return hex.DecodeString(t[2:])
}

// numericConverter maps numeric as Debezium's decimal.handling.mode: a
// column with a declared scale becomes Connect's Decimal (with Debezium's
// connect.decimal.precision parameter), one without becomes
// io.debezium.data.VariableScaleDecimal.
func numericConverter(typmod int32, mode string) *converter {
	switch mode {
	case "double":
		return &converter{schema: connectors.Float64Schema, parse: func(t string) (any, error) { return strconv.ParseFloat(t, 64) }}
	case "string":
		return &converter{schema: connectors.StringSchema, parse: func(t string) (any, error) { return t, nil }}
	}
	if typmod < 4 {
		s := &connectors.Schema{Type: connectors.Struct, Name: varScaleName, Version: 1, Doc: "Variable scaled decimal",
			Fields: []connectors.Field{{Name: "scale", Schema: connectors.Int32Schema}, {Name: "value", Schema: connectors.BytesSchema}}}
		return &converter{schema: s, parse: func(t string) (any, error) {
			if t == "NaN" {
				return nil, nil // Debezium has no precise NaN: it emits null
			}
			unscaled, scale, err := splitDecimal(t)
			if err != nil {
				return nil, err
			}
			v := connectors.NewStruct(s)
			v.Values[0] = int32(scale)
			v.Values[1] = converters.BigIntegerBytes(unscaled)
			return v, nil
		}}
	}
	precision, scale := int((typmod-4)>>16)&0xffff, int((typmod-4)&0xffff)
	s := &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1,
		Parameters: map[string]string{"scale": strconv.Itoa(scale), "connect.decimal.precision": strconv.Itoa(precision)}}
	return &converter{schema: s, parse: parseRat}
}

func parseRat(t string) (any, error) {
	if t == "NaN" {
		return nil, nil
	}
	r, ok := new(big.Rat).SetString(t)
	if !ok {
		return nil, fmt.Errorf("not a number: %q", t)
	}
	return r, nil
}

// splitDecimal returns the unscaled integer and scale of a decimal text.
func splitDecimal(t string) (*big.Int, int, error) {
	scale := 0
	digits := t
	if i := strings.IndexByte(t, '.'); i >= 0 {
		scale = len(t) - i - 1
		digits = t[:i] + t[i+1:]
	}
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, 0, fmt.Errorf("not a decimal: %q", t)
	}
	return n, scale, nil
}

// moneyConverter maps money as Debezium does: Decimal of scale 2
// (money.fraction.digits), double or string.
func moneyConverter(mode string) *converter {
	plain := func(t string) string {
		return strings.NewReplacer("$", "", ",", "", " ", "").Replace(t)
	}
	switch mode {
	case "double":
		return &converter{schema: connectors.Float64Schema, parse: func(t string) (any, error) { return strconv.ParseFloat(plain(t), 64) }}
	case "string":
		return &converter{schema: connectors.StringSchema, parse: func(t string) (any, error) { return plain(t), nil }}
	}
	s := &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1, Parameters: map[string]string{"scale": "2"}}
	return &converter{schema: s, parse: func(t string) (any, error) { return parseRat(plain(t)) }}
}

// Debezium's days for PostgreSQL's infinite dates. The stream's are the
// epoch days of its POSITIVE_ and NEGATIVE_INFINITY_LOCAL_DATE
// (-5877611-06-21 and -22); the snapshot's are what the JDBC driver's
// infinite java.sql.Date (PGStatement.DATE_POSITIVE_ and
// DATE_NEGATIVE_INFINITY milliseconds) becomes as a LocalDate in UTC, its
// epoch day cut to an int. Both are what Debezium 3.6.1 writes, checked
// by the differential test (test/debezium).
var (
	streamInfiniteDays   = map[string]int32{"infinity": -2147472692, "-infinity": -2147472691}
	snapshotInfiniteDays = map[string]int32{"infinity": -622191234, "-infinity": -625821272}
)

func dateConverter(mode string) *converter {
	days := func(infinite map[string]int32) func(string) (int32, error) {
		return func(t string) (int32, error) {
			if d, ok := infinite[t]; ok {
				return d, nil
			}
			d, err := time.Parse("2006-01-02", t)
			if err != nil {
				return 0, fmt.Errorf("not a date: %q", t)
			}
			return int32(d.Unix() / 86400), nil
		}
	}
	stream, snapshot := days(streamInfiniteDays), days(snapshotInfiniteDays)
	if mode == "connect" {
		asDate := func(days func(string) (int32, error)) func(string) (any, error) {
			return func(t string) (any, error) {
				d, err := days(t)
				return time.Unix(int64(d)*86400, 0).UTC(), err
			}
		}
		return &converter{schema: &connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical, Version: 1},
			parse: asDate(stream), parseSnapshot: asDate(snapshot)}
	}
	asInt := func(days func(string) (int32, error)) func(string) (any, error) {
		return func(t string) (any, error) { return days(t) }
	}
	return &converter{schema: logical(connectors.Int32, dateName), parse: asInt(stream), parseSnapshot: asInt(snapshot)}
}

// timeOfDay parses a time's text as nanoseconds since midnight (24:00:00
// is allowed, as in PostgreSQL).
func timeOfDay(t string) (int64, error) {
	var h, m, s int64
	frac := ""
	main := t
	if i := strings.IndexByte(t, '.'); i >= 0 {
		main, frac = t[:i], t[i+1:]
	}
	if _, err := fmt.Sscanf(main, "%d:%d:%d", &h, &m, &s); err != nil {
		return 0, fmt.Errorf("not a time: %q", t)
	}
	ns := int64(0)
	if frac != "" {
		f := (frac + "000000000")[:9]
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("not a time: %q", t)
		}
		ns = n
	}
	return ((h*60+m)*60+s)*int64(time.Second) + ns, nil
}

func timeConverter(precision int, mode string) *converter {
	switch {
	case mode == "connect":
		return &converter{schema: &connectors.Schema{Type: connectors.Int32, Name: connectors.TimeLogical, Version: 1},
			parse: func(t string) (any, error) {
				ns, err := timeOfDay(t)
				return time.Unix(0, ns).UTC(), err
			}}
	case mode == "adaptive_time_microseconds" || (precision > 3 && precision <= 6):
		return &converter{schema: logical(connectors.Int64, microTimeName), parse: func(t string) (any, error) {
			ns, err := timeOfDay(t)
			return ns / 1000, err
		}}
	case precision <= 3:
		return &converter{schema: logical(connectors.Int32, timeName), parse: func(t string) (any, error) {
			ns, err := timeOfDay(t)
			return int32(ns / 1e6), err
		}}
	}
	return &converter{schema: logical(connectors.Int64, nanoTimeName), parse: func(t string) (any, error) { return timeOfDay(t) }}
}

// Debezium's instants for PostgreSQL's infinite timestamps: its
// POSITIVE_ and NEGATIVE_INFINITY_INSTANT, from the JDBC driver's
// PGStatement.DATE_POSITIVE_ and DATE_NEGATIVE_INFINITY read as
// microseconds, in the snapshot and in the stream alike.
var (
	positiveInfinity = time.UnixMicro(9223372036825200000).UTC()
	negativeInfinity = time.UnixMicro(-9223372036832400000).UTC()
)

// parseTimestamp reads timestamp's ISO output (DateStyle=ISO), with " BC"
// for years before 1, and infinity and -infinity as Debezium maps them.
func parseTimestamp(t string) (time.Time, error) {
	switch t {
	case "infinity":
		return positiveInfinity, nil
	case "-infinity":
		return negativeInfinity, nil
	}
	bc := strings.HasSuffix(t, " BC")
	t = strings.TrimSuffix(t, " BC")
	v, err := time.Parse("2006-01-02 15:04:05.999999999", t)
	if err != nil {
		return time.Time{}, fmt.Errorf("not a timestamp: %q", t)
	}
	if bc {
		v = v.AddDate(-2*v.Year()+1, 0, 0)
	}
	return v, nil
}

func timestampConverter(precision int, mode string) *converter {
	switch {
	case mode == "connect":
		return &converter{schema: &connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical, Version: 1},
			parse: func(t string) (any, error) { return parseTimestamp(t) }}
	case precision <= 3:
		return &converter{schema: logical(connectors.Int64, timestampName), parse: func(t string) (any, error) {
			v, err := parseTimestamp(t)
			return v.UnixMilli(), err
		}}
	}
	return &converter{schema: logical(connectors.Int64, microTimestampNm), parse: func(t string) (any, error) {
		v, err := parseTimestamp(t)
		return v.UnixMicro(), err
	}}
}

// zonedTimestamp formats a timestamptz as Debezium's ZonedTimestamp: ISO
// 8601 in UTC with as many fractional digits as the column's precision.
func zonedTimestamp(t string, width int) (any, error) {
	if t == "infinity" || t == "-infinity" {
		return t, nil
	}
	bc := strings.HasSuffix(t, " BC")
	t = strings.TrimSuffix(t, " BC")
	v, err := time.Parse("2006-01-02 15:04:05.999999999Z07:00:00", normalizeOffset(t))
	if err != nil {
		return nil, fmt.Errorf("not a timestamp with time zone: %q", t)
	}
	if bc {
		v = v.AddDate(-2*v.Year()+1, 0, 0)
	}
	v = v.UTC()
	layout := "2006-01-02T15:04:05Z"
	if width > 0 {
		layout = "2006-01-02T15:04:05." + strings.Repeat("0", width) + "Z"
	} else if v.Nanosecond() != 0 {
		layout = "2006-01-02T15:04:05.999999999Z"
	}
	return v.Format(layout), nil
}

// normalizeOffset widens PostgreSQL's "+02" and "+05:30" offsets to
// "+02:00:00" so that one layout parses them all.
func normalizeOffset(t string) string {
	i := strings.LastIndexAny(t, "+-")
	if i < 0 || i < strings.IndexByte(t, ' ') {
		return t
	}
	off := t[i:]
	switch len(off) {
	case 3:
		off += ":00:00"
	case 6:
		off += ":00"
	}
	return t[:i] + off
}

// zonedTime formats a timetz as Debezium's ZonedTime: ISO 8601 in UTC,
// fractional digits only as needed.
func zonedTime(t string) (any, error) {
	i := strings.LastIndexAny(t, "+-")
	if i < 0 {
		return nil, fmt.Errorf("not a time with time zone: %q", t)
	}
	ns, err := timeOfDay(t[:i])
	if err != nil {
		return nil, err
	}
	off, err := time.Parse("-07:00:00", normalizeOffset("00:00:00" + t[i:])[8:])
	if err != nil {
		return nil, fmt.Errorf("not a time with time zone: %q", t)
	}
	_, secs := off.Zone()
	day := int64(24 * time.Hour)
	ns = ((ns-int64(secs)*int64(time.Second))%day + day) % day
	v := time.Unix(0, ns).UTC()
	if ns%int64(time.Second) == 0 {
		return v.Format("15:04:05Z"), nil
	}
	return v.Format("15:04:05.999999999Z"), nil
}

// microDuration reads an interval in IntervalStyle=iso_8601
// (P1Y2M3DT4H5M6.5S) as Debezium's MicroDuration: months are 30.4375
// days (365.25/12), as in io.debezium.time.MicroDuration.
func microDuration(t string) (any, error) {
	if !strings.HasPrefix(t, "P") {
		return nil, fmt.Errorf("interval %q is not in ISO 8601 (set IntervalStyle=iso_8601)", t)
	}
	var years, months, days, hours, minutes, seconds float64
	inTime := false
	num := ""
	for _, r := range t[1:] {
		switch {
		case r == 'T':
			inTime = true
		case r == '-' || r == '.' || (r >= '0' && r <= '9'):
			num += string(r)
		default:
			f, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return nil, fmt.Errorf("bad interval %q", t)
			}
			num = ""
			switch {
			case r == 'Y':
				years = f
			case r == 'M' && !inTime:
				months = f
			case r == 'W':
				days += 7 * f
			case r == 'D':
				days += f
			case r == 'H':
				hours = f
			case r == 'M':
				minutes = f
			case r == 'S':
				seconds = f
			default:
				return nil, fmt.Errorf("bad interval %q", t)
			}
		}
	}
	numberOfDays := (years*12+months)*30.4375 + days
	secs := ((numberOfDays*24+hours)*60+minutes)*60 + seconds
	return int64(math.Round(secs * 1e6)), nil
}

// arrayConverter maps a one-dimensional array of elem.
func arrayConverter(elem *converter, optionalElems bool) *converter {
	if elem == nil {
		return nil
	}
	items := elem.schema
	if optionalElems {
		items = items.Optionally()
	}
	s := &connectors.Schema{Type: connectors.Array, Items: items}
	var placeholder any
	if elem.placeholder != nil {
		placeholder = []any{elem.placeholder}
	}
	return &converter{schema: s, placeholder: placeholder, parse: func(t string) (any, error) {
		texts, err := parseArray(t)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(texts))
		for i, e := range texts {
			if e == nil {
				continue
			}
			if out[i], err = elem.parse(*e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}}
}

// unquote reads the double-quoted string that starts at s[i], as
// PostgreSQL writes array elements and hstore keys and values: a backslash
// escapes the character after it. It returns the string, the index after
// its closing quote, and whether it had one.
func unquote(s string, i int) (string, int, bool) {
	var b strings.Builder
	for i++; i < len(s) && s[i] != '"'; i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String(), i + 1, i < len(s)
}

// parseArray splits a one-dimensional array literal ({a,"b c",NULL});
// a nil element is SQL NULL.
func parseArray(t string) ([]*string, error) {
	if i := strings.Index(t, "={"); i >= 0 && strings.HasPrefix(t, "[") {
		t = t[i+1:] // explicit bounds: [0:1]={...}
	}
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return nil, fmt.Errorf("not an array: %q", t)
	}
	body := t[1 : len(t)-1]
	if body == "" {
		return []*string{}, nil
	}
	if strings.HasPrefix(body, "{") {
		return nil, fmt.Errorf("multi-dimensional arrays are not supported: %q", t)
	}
	var out []*string
	for i := 0; i <= len(body); {
		var v string
		quoted := i < len(body) && body[i] == '"'
		if quoted {
			v, i, _ = unquote(body, i)
		} else {
			start := i
			for i < len(body) && body[i] != ',' {
				i++
			}
			v = body[start:i]
		}
		if !quoted && strings.EqualFold(v, "NULL") {
			out = append(out, nil)
		} else {
			out = append(out, &v)
		}
		i++ // the comma
	}
	return out, nil
}
