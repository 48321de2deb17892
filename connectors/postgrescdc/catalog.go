package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/postgres"
)

// catalog reads table and type descriptions on the task's query
// connection, and caches types.
type catalog struct {
	conn  *pgx.Conn
	s     *settings
	log   *zerolog.Logger
	types map[uint32]*typeInfo
}

// colDesc is a column as a relation message or pg_attribute describes it.
type colDesc struct {
	name   string
	oid    uint32
	typmod int32
	key    bool // part of the replica identity, as a relation message flags it
}

// lookupType describes a type that is not built in: an enum, a domain, an
// extension type Debezium maps by name (ltree, citext, hstore), or an array
// of one. It returns nil for other types (and on a failed query, which
// leaves the column out as an unknown type would be, after a warning).
func (c *catalog) lookupType(ctx context.Context) func(uint32) *typeInfo {
	return func(oid uint32) *typeInfo {
		if ti, ok := c.types[oid]; ok {
			return ti
		}
		var typtype, name string
		var elem, base uint32
		var baseTypmod int32
		var labels []string
		err := c.conn.QueryRow(ctx, `SELECT t.typtype::text, t.typname::text, t.typelem, t.typbasetype, t.typtypmod,
				coalesce((SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid), '{}')
			FROM pg_type t WHERE t.oid = $1`, oid).Scan(&typtype, &name, &elem, &base, &baseTypmod, &labels)
		if err != nil {
			c.log.Warn().Err(err).Uint32("oid", oid).Msg("cannot describe a column type; its columns are left out")
			return nil
		}
		var ti *typeInfo
		switch {
		case typtype == "e":
			ti = &typeInfo{enumLabels: labels}
		case typtype == "d":
			ti = &typeInfo{base: base, baseTypmod: baseTypmod}
		case elem != 0:
			ti = &typeInfo{elem: elem}
		case namedTypes[name]:
			ti = &typeInfo{name: name}
		}
		c.types[oid] = ti
		return ti
	}
}

// describe reads a table's columns (when cols is nil: the snapshot),
// their nullability and its key, and builds the table.
func (c *catalog) describe(ctx context.Context, schema, name string, cols []colDesc) (*table, error) {
	qname := pgx.Identifier{schema, name}.Sanitize()
	catalogCols, notNull, defaults, err := c.columnsOf(ctx, qname)
	gone := false
	if err != nil {
		var pg *pgconn.PgError
		if cols == nil || !errors.As(err, &pg) || pg.Code != "42P01" {
			return nil, err
		}
		// The table was dropped after the changes being decoded: the
		// relation message alone describes them (every column optional,
		// the key its replica identity).
		gone = true
		c.log.Warn().Str("table", schema+"."+name).Msg("table no longer exists: its changes are described by the replication stream alone")
	}
	if cols == nil {
		cols = catalogCols
	}
	keyNames := c.s.keyColumnsFor(schema, name)
	switch {
	case keyNames != nil:
	case gone:
		for _, d := range cols {
			if d.key {
				keyNames = append(keyNames, d.name)
			}
		}
	default:
		if keyNames, err = c.keyOf(ctx, qname); err != nil {
			return nil, err
		}
	}
	t := &table{schema: schema, name: name}
	lookup := c.lookupType(ctx)
	for _, d := range cols {
		if !c.s.capturesColumn(schema, name, d.name) {
			t.columns = append(t.columns, nil)
			continue
		}
		conv := converterFor(d.oid, d.typmod, c.s.modes, lookup)
		if conv == nil {
			c.log.Warn().Str("table", schema+"."+name).Str("column", d.name).Uint32("type_oid", d.oid).
				Msg("column type is not supported; the column is left out of the events, as Debezium leaves out unknown types")
			t.columns = append(t.columns, nil)
			continue
		}
		optional := !notNull[d.name]
		sch := conv.schema
		_, isEnum := c.types[d.oid]
		isEnum = isEnum && c.types[d.oid] != nil && c.types[d.oid].enumLabels != nil
		if def, ok := defaultValue(d.oid, isEnum, conv, defaults[d.name]); ok {
			cp := *sch
			cp.Default = def
			sch = &cp
		}
		if optional {
			sch = sch.Optionally()
		}
		t.columns = append(t.columns, &column{name: d.name, optional: optional, conv: conv, schema: sch})
	}
	for _, k := range keyNames {
		found := false
		for i, col := range t.columns {
			if col != nil && col.name == k {
				t.keyIdx = append(t.keyIdx, i)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("key column %q of table %s is not captured (check %s and the column lists)", k, qname, MessageKeyColumnsKey)
		}
	}
	if len(t.keyIdx) == 0 {
		c.log.Warn().Str("table", schema+"."+name).Msg("table has no primary key, unique index or message.key.columns entry: its events have a null key, as Debezium's")
	}
	t.buildSchemas(c.s.prefix)
	return t, nil
}

// functionDefault is Debezium's FUNCTION_DEFAULT_PATTERN: a default that
// PostgreSQL computes (nextval(...), now(), gen_random_uuid(), ...).
var functionDefault = regexp.MustCompile(`^[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)`)

// currentDateTimes are the SQL keywords Debezium takes for computed
// defaults too.
var currentDateTimes = map[string]bool{"current_timestamp": true, "current_time": true, "current_date": true, "localtime": true, "localtimestamp": true}

// computedDefaults is, per type Debezium gives defaults to, the value
// standing for a computed default in the schema (Debezium's
// PostgresDefaultValueConverter placeholders, in PostgreSQL's text form).
var computedDefaults = map[uint32]string{
	oidBool: "false", oidBpchar: "", oidVarchar: "", oidText: "", oidNumeric: "0.0", oidFloat4: "0.0", oidFloat8: "0.0",
	oidInt2: "0", oidInt4: "0", oidInt8: "0", oidJSON: "{}", oidJSONB: "{}", oidXML: "", oidUUID: "00000000-0000-0000-0000-000000000000",
	oidDate: "1970-01-01", oidTime: "00:00:00", oidTimestamp: "1970-01-01 00:00:00", oidTimestamptz: "1970-01-01 00:00:00+00",
	oidInterval: "PT0S",
}

// quotedLiteral is Debezium's LITERAL_DEFAULT_PATTERN, which it finds
// anywhere in a default that holds a quote: what lies between the first
// two quotes. A quote doubled inside the literal therefore ends it: the
// default written it, two quotes, s is "it", as in Debezium 3.6.1.
var quotedLiteral = regexp.MustCompile(`'(.*?)'`)

// defaultValue converts a column's default expression as Debezium does
// for the schema: a constant is the column's value of it, a computed
// default the type's placeholder, a type Debezium gives no default (bytea,
// arrays, money, ...) none.
func defaultValue(oid uint32, enum bool, conv *converter, expr string) (any, bool) {
	expr = strings.TrimSpace(expr)
	placeholder, known := computedDefaults[oid]
	if expr == "" || (!known && !enum) || strings.HasPrefix(expr, "NULL::") {
		return nil, false
	}
	var text string
	switch {
	case functionDefault.MatchString(expr) || currentDateTimes[strings.ToLower(expr)]:
		if enum {
			return nil, false
		}
		text = placeholder
	case strings.Contains(expr, "'"):
		m := quotedLiteral.FindStringSubmatch(expr)
		if m == nil {
			return nil, false
		}
		text = m[1]
	default:
		text = strings.Trim(expr, "()")
	}
	v, err := conv.parse(text)
	if err != nil || v == nil {
		return nil, false
	}
	return v, true
}

// columnsOf reads a table's columns in order, which are NOT NULL, and
// their default expressions.
func (c *catalog) columnsOf(ctx context.Context, qname string) ([]colDesc, map[string]bool, map[string]string, error) {
	rows, err := c.conn.Query(ctx, `SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull, pg_get_expr(d.adbin, d.adrelid)
		FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = $1::text::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		ORDER BY a.attnum`, qname)
	if err != nil {
		return nil, nil, nil, postgres.ClassifyError(fmt.Errorf("describe table %s: %w", qname, err))
	}
	defer rows.Close()
	notNull := map[string]bool{}
	defaults := map[string]string{}
	var cols []colDesc
	for rows.Next() {
		var d colDesc
		var nn bool
		var def *string
		if err := rows.Scan(&d.name, &d.oid, &d.typmod, &nn, &def); err != nil {
			return nil, nil, nil, err
		}
		notNull[d.name] = nn
		if def != nil {
			defaults[d.name] = *def
		}
		cols = append(cols, d)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, postgres.ClassifyError(fmt.Errorf("describe table %s: %w", qname, err))
	}
	return cols, notNull, defaults, nil
}

// keyOf returns the primary key's columns, or, as Debezium, those of a
// unique index when there is no primary key.
func (c *catalog) keyOf(ctx context.Context, qname string) ([]string, error) {
	var cols []string
	err := c.conn.QueryRow(ctx, `SELECT coalesce((SELECT array_agg(a.attname::text ORDER BY k.ord)
			FROM unnest(i.indkey) WITH ORDINALITY k(attnum, ord) JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum), '{}')
		FROM pg_index i WHERE i.indrelid = $1::text::regclass AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
		ORDER BY i.indisprimary DESC, i.indexrelid LIMIT 1`, qname).Scan(&cols)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, postgres.ClassifyError(fmt.Errorf("read the key of %s: %w", qname, err))
	}
	return cols, nil
}

// fallback is what Debezium puts in a required column PostgreSQL sent as
// null (the non-key columns of a delete's old key tuple): the type's zero.
func fallback(s *connectors.Schema) any {
	switch s.Name {
	case connectors.DecimalLogical:
		return new(big.Rat)
	case connectors.DateLogical, connectors.TimeLogical, connectors.TimestampLogical:
		return time.Unix(0, 0).UTC()
	case zonedTimestampNm:
		return "1970-01-01T00:00:00Z"
	case zonedTimeName:
		return "00:00:00Z"
	case varScaleName:
		v := connectors.NewStruct(s)
		v.Values[0], v.Values[1] = int32(0), []byte{0}
		return v
	}
	switch s.Type {
	case connectors.Int8:
		return int8(0)
	case connectors.Int16:
		return int16(0)
	case connectors.Int32:
		return int32(0)
	case connectors.Int64:
		return int64(0)
	case connectors.Float32:
		return float32(0)
	case connectors.Float64:
		return float64(0)
	case connectors.Boolean:
		return false
	case connectors.String:
		return ""
	case connectors.Bytes:
		return []byte{}
	case connectors.Array:
		return []any{}
	}
	return nil
}
