package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// sinkTableRef is a destination table as table.name.format named it.
type sinkTableRef struct {
	schema string // empty: the first schema of search_path
	name   string
	quoted string // the SQL identifier, quoted
}

func (t sinkTableRef) String() string {
	if t.schema != "" {
		return t.schema + "." + t.name
	}
	return t.name
}

// tableFor returns the table records of topic go to: table.name.format with
// ${topic} replaced. Dots separate schema and table (and a catalog, which
// PostgreSQL cannot switch to within a connection and is ignored), as
// Confluent's sink reads a table name; every part is quoted, so names keep
// their case and may hold any character.
func (c *sinkConfig) tableFor(topic string) (sinkTableRef, error) {
	full := strings.ReplaceAll(c.tableFormat, sinkTopicPlaceholder, topic)
	parts := strings.Split(full, ".")
	if len(parts) > 3 {
		return sinkTableRef{}, fmt.Errorf("table name %q (table.name.format %q, topic %q) has more than catalog.schema.table", full, c.tableFormat, topic)
	}
	for _, p := range parts {
		if p == "" {
			return sinkTableRef{}, fmt.Errorf("table name %q (table.name.format %q, topic %q) has an empty part", full, c.tableFormat, topic)
		}
	}
	t := sinkTableRef{name: parts[len(parts)-1]}
	if len(parts) > 1 {
		t.schema = parts[len(parts)-2]
		t.quoted = pgx.Identifier{t.schema, t.name}.Sanitize()
	} else {
		t.quoted = pgx.Identifier{t.name}.Sanitize()
	}
	return t, nil
}

// sinkTableMeta is what the sink knows of an existing table: its columns'
// types, and the statements it built for it. It is dropped after any failed
// write, so a retry sees the table as it is then.
type sinkTableMeta struct {
	ref sinkTableRef
	// cols maps a column name to its type without modifiers, as
	// format_type(oid, NULL) spells it: values are cast to it, and the
	// insert or update then applies the column's own length, precision
	// or range check (an explicit cast to varchar(n) would truncate).
	cols  map[string]string
	stmts map[string]string // by op and layout id
}

// sinkLoadTable reads a table's columns, or returns nil when there is no such
// table.
func sinkLoadTable(ctx context.Context, q sinkQuerier, ref sinkTableRef) (*sinkTableMeta, error) {
	var oid *uint32
	if err := q.QueryRow(ctx, "SELECT to_regclass($1)::oid", ref.quoted).Scan(&oid); err != nil {
		return nil, fmt.Errorf("looking up table %s: %w", ref, err)
	}
	if oid == nil {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT attname, format_type(atttypid, NULL) FROM pg_attribute
		WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, *oid)
	if err != nil {
		return nil, fmt.Errorf("reading the columns of table %s: %w", ref, err)
	}
	m := &sinkTableMeta{ref: ref, cols: map[string]string{}, stmts: map[string]string{}}
	var name, typ string
	_, err = pgx.ForEachRow(rows, []any{&name, &typ}, func() error {
		m.cols[name] = typ
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the columns of table %s: %w", ref, err)
	}
	return m, nil
}

// sinkQuerier is what sinkLoadTable needs of a connection.
type sinkQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// sinkErrSchemaMismatch marks an error about the table's shape (missing table or
// column, unmappable type): no retry can fix it, the task fails with it.
var sinkErrSchemaMismatch = errors.New("table does not fit the records")

func sinkMismatch(format string, args ...any) error {
	return fmt.Errorf("%w: %s", sinkErrSchemaMismatch, fmt.Sprintf(format, args...))
}

// sinkCreateTableSQL is auto.create's CREATE TABLE for layout l: the columns of
// l with their mapped types, NOT NULL unless optional, and the primary key
// of pk.mode.
func sinkCreateTableSQL(ref sinkTableRef, l *sinkLayout) (string, error) {
	var b strings.Builder
	b.WriteString("CREATE TABLE IF NOT EXISTS ")
	b.WriteString(ref.quoted)
	b.WriteString(" (")
	for i, col := range l.cols {
		if col.schema == nil {
			return "", sinkMismatch("table %s does not exist, and auto.create cannot create it from records without a schema "+
				"(field %q): create the table, or use a converter with schemas", ref, col.name)
		}
		typ, err := sinkColumnType(col.schema)
		if err != nil {
			return "", sinkMismatch("table %s, column %q: %v", ref, col.name, err)
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pgx.Identifier{col.name}.Sanitize())
		b.WriteByte(' ')
		b.WriteString(typ)
		if i < l.npk || !col.schema.Optional {
			b.WriteString(" NOT NULL")
		}
	}
	if l.npk > 0 {
		b.WriteString(", PRIMARY KEY (")
		sinkWriteColumnList(&b, l.pk())
		b.WriteByte(')')
	}
	b.WriteByte(')')
	return b.String(), nil
}

// sinkAddColumnSQL is auto.evolve's ALTER TABLE for one missing column. It is
// always nullable: rows already in the table have no value for it.
func sinkAddColumnSQL(ref sinkTableRef, col sinkColumn) (string, error) {
	if col.schema == nil {
		return "", sinkMismatch("table %s has no column %q, and auto.evolve cannot add it for records without a schema: "+
			"add the column, or use a converter with schemas", ref, col.name)
	}
	typ, err := sinkColumnType(col.schema)
	if err != nil {
		return "", sinkMismatch("table %s, column %q: %v", ref, col.name, err)
	}
	return "ALTER TABLE " + ref.quoted + " ADD COLUMN IF NOT EXISTS " + pgx.Identifier{col.name}.Sanitize() + " " + typ, nil
}

func sinkWriteColumnList(b *strings.Builder, cols []sinkColumn) {
	for i, col := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pgx.Identifier{col.name}.Sanitize())
	}
}

// Statement kinds.
const (
	sinkOpInsert = "insert"
	sinkOpUpsert = "upsert"
	sinkOpUpdate = "update"
	sinkOpDelete = "delete"
)

// statement returns the SQL that writes rows of layout l with op, each
// column's values traveling as wires says. Each column's values arrive as
// one array parameter (text[], or an array of the column's own type:
// sinkwire.go), unnested into rows and cast to the column's type: one
// statement, prepared once per connection (sinkStatements), writes any
// number of rows in one round trip. It returns "" when there is nothing to
// do (an update of a layout that has only key columns).
func (m *sinkTableMeta) statement(op string, l *sinkLayout, wires []sinkWire) (string, error) {
	// Layouts of one id have the same columns, but their values may
	// travel in other forms.
	key := op + "\x00" + l.id + "\x00" + string(wires)
	if s, ok := m.stmts[key]; ok {
		return s, nil
	}
	types := make([]string, len(l.cols))
	for i, col := range l.cols {
		typ, ok := m.cols[col.name]
		if !ok {
			return "", sinkMismatch("table %s has no column %q", m.ref, col.name)
		}
		types[i] = typ
	}
	// unnest($1::text[], ...) AS u(c1, ...): positional names inside the
	// statement, so column names need no quoting there.
	var src strings.Builder
	src.WriteString("unnest(")
	for i := range l.cols {
		if i > 0 {
			src.WriteString(", ")
		}
		_, elem := wires[i].elem()
		src.WriteString("$" + strconv.Itoa(i+1) + "::" + elem + "[]")
	}
	src.WriteString(") AS u(")
	for i := range l.cols {
		if i > 0 {
			src.WriteString(", ")
		}
		src.WriteString("c" + strconv.Itoa(i+1))
	}
	src.WriteByte(')')
	cast := func(i int) string { return "u.c" + strconv.Itoa(i+1) + "::" + types[i] }
	quote := func(i int) string { return pgx.Identifier{l.cols[i].name}.Sanitize() }
	pkMatch := func(b *strings.Builder) {
		for i := range l.npk {
			if i > 0 {
				b.WriteString(" AND ")
			}
			b.WriteString("t." + quote(i) + " = " + cast(i))
		}
	}

	var b strings.Builder
	switch op {
	case sinkOpInsert, sinkOpUpsert:
		b.WriteString("INSERT INTO " + m.ref.quoted + " (")
		sinkWriteColumnList(&b, l.cols)
		b.WriteString(") SELECT ")
		for i := range l.cols {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(cast(i))
		}
		b.WriteString(" FROM ")
		b.WriteString(src.String())
		if op == sinkOpUpsert {
			b.WriteString(" ON CONFLICT (")
			sinkWriteColumnList(&b, l.pk())
			if l.npk == len(l.cols) {
				b.WriteString(") DO NOTHING")
				break
			}
			b.WriteString(") DO UPDATE SET ")
			for i := l.npk; i < len(l.cols); i++ {
				if i > l.npk {
					b.WriteString(", ")
				}
				b.WriteString(quote(i) + " = EXCLUDED." + quote(i))
			}
		}
	case sinkOpUpdate:
		if l.npk == len(l.cols) {
			m.stmts[key] = ""
			return "", nil
		}
		b.WriteString("UPDATE " + m.ref.quoted + " AS t SET ")
		for i := l.npk; i < len(l.cols); i++ {
			if i > l.npk {
				b.WriteString(", ")
			}
			b.WriteString(quote(i) + " = " + cast(i))
		}
		b.WriteString(" FROM ")
		b.WriteString(src.String())
		b.WriteString(" WHERE ")
		pkMatch(&b)
	case sinkOpDelete:
		b.WriteString("DELETE FROM " + m.ref.quoted + " AS t USING ")
		b.WriteString(src.String())
		b.WriteString(" WHERE ")
		pkMatch(&b)
	default:
		return "", fmt.Errorf("unknown statement kind %q", op)
	}
	s := b.String()
	m.stmts[key] = s
	return s, nil
}
