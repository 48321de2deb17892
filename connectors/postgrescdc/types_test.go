package postgrescdc

import (
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/pgtest"
)

func noTypes(uint32) *typeInfo { return nil }

func TestConverterSchemasFollowTheModes(t *testing.T) {
	adaptive := typeModes{decimal: "precise", time: "adaptive", binary: "bytes"}
	for _, tc := range []struct {
		oid    uint32
		typmod int32
		m      typeModes
		typ    connectors.SchemaType
		name   string
	}{
		{oidInt2, -1, adaptive, connectors.Int16, ""},
		{oidNumeric, (10<<16 | 2) + 4, adaptive, connectors.Bytes, connectors.DecimalLogical},
		{oidNumeric, -1, adaptive, connectors.Struct, varScaleName},
		{oidNumeric, -1, typeModes{decimal: "double"}, connectors.Float64, ""},
		{oidNumeric, -1, typeModes{decimal: "string"}, connectors.String, ""},
		{oidMoney, -1, adaptive, connectors.Bytes, connectors.DecimalLogical},
		{oidDate, -1, adaptive, connectors.Int32, dateName},
		{oidDate, -1, typeModes{time: "connect"}, connectors.Int32, connectors.DateLogical},
		{oidTime, -1, adaptive, connectors.Int64, microTimeName},
		{oidTime, 3, adaptive, connectors.Int32, timeName},
		{oidTime, 3, typeModes{time: "adaptive_time_microseconds"}, connectors.Int64, microTimeName},
		{oidTime, -1, typeModes{time: "connect"}, connectors.Int32, connectors.TimeLogical},
		{oidTimestamp, -1, adaptive, connectors.Int64, microTimestampNm},
		{oidTimestamp, 2, adaptive, connectors.Int64, timestampName},
		{oidTimestamp, -1, typeModes{time: "connect"}, connectors.Int64, connectors.TimestampLogical},
		{oidTimestamptz, -1, adaptive, connectors.String, zonedTimestampNm},
		{oidTimetz, -1, adaptive, connectors.String, zonedTimeName},
		{oidInterval, -1, adaptive, connectors.Int64, microDurationName},
		{oidBytea, -1, adaptive, connectors.Bytes, ""},
		{oidBytea, -1, typeModes{binary: "hex"}, connectors.String, ""},
		{oidJSONB, -1, adaptive, connectors.String, jsonName},
		{oidUUID, -1, adaptive, connectors.String, uuidName},
		{1007, -1, adaptive, connectors.Array, ""},
	} {
		c := converterFor(tc.oid, tc.typmod, tc.m, noTypes)
		if c == nil || c.schema.Type != tc.typ || c.schema.Name != tc.name {
			t.Errorf("oid %d typmod %d %+v: schema %+v, want %s %s", tc.oid, tc.typmod, tc.m, c, tc.typ, tc.name)
		}
	}
	if c := converterFor(oidNumeric, (10<<16|2)+4, adaptive, noTypes); c.schema.Parameters["scale"] != "2" || c.schema.Parameters["connect.decimal.precision"] != "10" {
		t.Errorf("decimal parameters %v", c.schema.Parameters)
	}
	// A type the connector does not map is left out (box).
	if c := converterFor(603, -1, adaptive, noTypes); c != nil {
		t.Errorf("box is captured: %+v", c.schema)
	}
	enum := func(oid uint32) *typeInfo {
		switch oid {
		case 9000:
			return &typeInfo{enumLabels: []string{"sad", "ok", "happy"}}
		case 9001:
			return &typeInfo{elem: 9000}
		}
		return nil
	}
	if c := converterFor(9000, -1, adaptive, enum); c == nil || c.schema.Name != enumName || c.schema.Parameters["allowed"] != "sad,ok,happy" {
		t.Errorf("enum schema %+v", c)
	}
	if c := converterFor(9001, -1, adaptive, enum); c == nil || c.schema.Items.Name != enumName || c.schema.Items.Optional {
		t.Errorf("enum array schema %+v", c)
	}
}

func TestConverterValues(t *testing.T) {
	adaptive := typeModes{decimal: "precise", time: "adaptive", binary: "bytes"}
	parse := func(oid uint32, typmod int32, m typeModes, text string) any {
		t.Helper()
		v, err := converterFor(oid, typmod, m, noTypes).parse(text)
		if err != nil {
			t.Fatalf("oid %d %q: %v", oid, text, err)
		}
		return v
	}
	check := func(got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %#v, want %#v", got, want)
		}
	}
	check(parse(oidDate, -1, adaptive, "2024-03-01"), int32(19783))
	check(parse(oidTime, -1, adaptive, "13:14:15.5"), int64(47655500000))
	check(parse(oidTime, 3, adaptive, "00:00:01.25"), int32(1250))
	check(parse(oidTimestamp, -1, adaptive, "2024-03-01 00:00:00.000001"), int64(1709251200000001))
	check(parse(oidTimestamp, 3, adaptive, "1970-01-01 00:00:01.5"), int64(1500))
	check(parse(oidTimestamptz, -1, adaptive, "2024-03-01 12:00:00.5+02"), "2024-03-01T10:00:00.500000Z")
	check(parse(oidTimestamptz, 0, adaptive, "2024-03-01 12:00:00+05:30"), "2024-03-01T06:30:00Z")
	check(parse(oidTimetz, -1, adaptive, "10:15:30+02"), "08:15:30Z")
	check(parse(oidTimetz, -1, adaptive, "00:15:30.25-01:30"), "01:45:30.25Z")
	check(parse(oidInterval, -1, adaptive, "P1Y2M3DT4H5M6.5S"), int64(((((14*30.4375+3)*24+4)*60+5)*60+6.5)*1e6))
	check(parse(oidInterval, -1, adaptive, "PT-1H"), int64(-3600e6))
	check(parse(oidBytea, -1, adaptive, `\x01ff`), []byte{1, 255})
	check(parse(oidBytea, -1, typeModes{binary: "base64"}, `\x01ff`), "Af8=")
	check(parse(oidBytea, -1, typeModes{binary: "hex"}, `\x01ff`), "01ff")
	check(parse(oidNumeric, -1, typeModes{decimal: "double"}, "1.25"), 1.25)
	check(parse(oidNumeric, -1, typeModes{decimal: "string"}, "1.250"), "1.250")
	check(parse(oidMoney, -1, typeModes{decimal: "string"}, "-$1,234.50"), "-1234.50")
	check(parse(oidBool, -1, adaptive, "t"), true)
	check(parse(1007, -1, adaptive, `{1,NULL,3}`), []any{int32(1), nil, int32(3)})
	check(parse(1009, -1, adaptive, `{"a,b",c,"d\"e",NULL,"NULL"}`), []any{"a,b", "c", `d"e`, nil, "NULL"})
	check(parse(1009, -1, adaptive, `{}`), []any{})
	vs := parse(oidNumeric, -1, adaptive, "-1.50").(*connectors.StructValue)
	check(vs.Values, []any{int32(2), []byte{0xff, 0x6a}}) // -150 in two's complement
	check(parse(oidNumeric, (5<<16|2)+4, adaptive, "12.34").(*big.Rat).String(), "617/50")
	c := converterFor(oidTimestamp, -1, typeModes{time: "connect"}, noTypes)
	v, _ := c.parse("2024-03-01 00:00:00")
	check(v, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC))
}

// The same row reads the same in the snapshot and from the stream: both
// paths parse PostgreSQL's text output.
func TestTypesSnapshotAndStreamAgree(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')`)
	cols := `id int PRIMARY KEY, n numeric(10,3), nv numeric, r real, d double precision, b boolean, dt date, tm time, ts timestamp(3),
		tstz timestamptz, ttz timetz, iv interval, by bytea, j json, jb jsonb, u uuid, m mood, ms mood[], ia int[], ta text[], mo money, c char(3), x xml, ip inet`
	row := `1, 12.5, 3.14159, 1.5, 2.25, true, '2024-01-02', '03:04:05.678901', '2024-01-02 03:04:05.678', '2024-01-02 03:04:05.678901+01', '03:04:05+02',
		'1 day 2 hours', '\x0102', '{"a": 1}', '{"b": [1, 2]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'happy', '{ok,sad}', '{1,2,NULL}', '{"x y",z}', 12.34, 'ab', '<a/>', '10.0.0.1'`
	srv.Exec(t, `CREATE TABLE typed (`+cols+`)`)
	srv.Exec(t, `INSERT INTO typed VALUES (`+row+`)`)
	h := newHarness(t, cdcConfig(srv))
	h.open()
	snap := h.poll(1)
	srv.Exec(t, `INSERT INTO typed VALUES (`+strings.Replace(row, "1,", "2,", 1)+`)`)
	streamed := h.poll(1)
	a := snap[0].Value.(*connectors.StructValue).Get("after").(*connectors.StructValue)
	b := streamed[0].Value.(*connectors.StructValue).Get("after").(*connectors.StructValue)
	if !reflect.DeepEqual(a.Schema, b.Schema) {
		t.Fatalf("schemas differ:\n%+v\n%+v", a.Schema.Fields, b.Schema.Fields)
	}
	for i, f := range a.Schema.Fields {
		if f.Name == "id" {
			continue
		}
		if !reflect.DeepEqual(a.Values[i], b.Values[i]) {
			t.Errorf("%s: snapshot %#v, stream %#v", f.Name, a.Values[i], b.Values[i])
		}
	}
	want := map[string]any{
		"b": true, "dt": int32(19724), "tm": int64(11045678901), "ts": int64(1704164645678),
		"tstz": "2024-01-02T02:04:05.678901Z", "ttz": "01:04:05Z", "j": `{"a": 1}`, "jb": `{"b": [1, 2]}`,
		"u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "m": "happy", "ms": []any{"ok", "sad"}, "ia": []any{int32(1), int32(2), nil},
		"ta": []any{"x y", "z"}, "c": "ab ", "x": "<a/>", "ip": "10.0.0.1", "by": []byte{1, 2}, "r": float32(1.5), "d": 2.25,
		"iv": int64(93600e6),
	}
	for name, w := range want {
		if got := a.Get(name); !reflect.DeepEqual(got, w) {
			t.Errorf("%s = %#v, want %#v", name, got, w)
		}
	}
	if _, s := a.Schema.Field("m"); s.Parameters["allowed"] != "sad,ok,happy" {
		t.Errorf("enum allowed = %v", s.Parameters)
	}
	if got := a.Get("n").(*big.Rat); got.Cmp(big.NewRat(25, 2)) != 0 {
		t.Errorf("n = %v", got)
	}
}

func TestColumnDefaultsAreSchemaDefaults(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TYPE defmood AS ENUM ('sad', 'ok')`)
	srv.Exec(t, `CREATE TABLE defs (id serial PRIMARY KEY, n int NOT NULL DEFAULT -1, s text DEFAULT 'it''s', b boolean DEFAULT true,
		d numeric(5,2) DEFAULT 1.5, ts timestamptz DEFAULT now(), plain int, by bytea DEFAULT '\x01', m defmood DEFAULT 'ok',
		j jsonb DEFAULT json_build_object())`)
	srv.Exec(t, `INSERT INTO defs DEFAULT VALUES`)
	h := newHarness(t, cdcConfig(srv))
	h.open()
	rec := h.poll(1)[0]
	row := rec.Value.(*connectors.StructValue).Get("after").(*connectors.StructValue)
	// As Debezium's: a computed default (serial's nextval, now()) has the
	// type's placeholder, and a quoted literal ends at its first inner
	// quote (LITERAL_DEFAULT_PATTERN, '(.*?)').
	want := map[string]any{"id": int32(0), "n": int32(-1), "s": "it", "b": true, "ts": "1970-01-01T00:00:00.000000Z", "plain": nil,
		"by": nil, "m": "ok", "j": "{}"}
	for name, w := range want {
		if _, s := row.Schema.Field(name); !reflect.DeepEqual(s.Default, w) {
			t.Errorf("%s default = %#v, want %#v", name, s.Default, w)
		}
	}
	if _, s := row.Schema.Field("d"); s.Default == nil || s.Default.(*big.Rat).Cmp(big.NewRat(3, 2)) != 0 {
		t.Errorf("d default = %v", s.Default)
	}
	if _, s := row.Schema.Field("n"); s.Optional {
		t.Error("NOT NULL column n is optional")
	}
}

// A nullable variable-scale numeric column has an optional copy of the
// converter's schema: the struct value must carry the column's schema, or
// a converter refuses it as written with a different schema.
func TestVariableScaleDecimalValueCarriesTheColumnSchema(t *testing.T) {
	conv := numericConverter(-1, "precise")
	col := &column{name: "num_var", optional: true, conv: conv, schema: conv.schema.Optionally()}
	tbl := &table{schema: "public", name: "t", columns: []*column{col}}
	tbl.buildSchemas("p")
	row, err := tbl.row([]cell{{text: "12.5"}})
	if err != nil {
		t.Fatal(err)
	}
	sv, ok := row.Values[0].(*connectors.StructValue)
	if !ok {
		t.Fatalf("num_var is %T, want a struct", row.Values[0])
	}
	if sv.Schema != col.schema {
		t.Fatalf("num_var's value has schema %+v, want the column's optional schema", sv.Schema)
	}
	if err := row.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Debezium's Bits: the string as a binary number, little-endian, in as
// few bytes as its highest set bit needs.
func TestBitsAsDebeziumWritesThem(t *testing.T) {
	c := bitsConverter(12)
	if c.schema.Name != "io.debezium.data.Bits" || c.schema.Parameters["length"] != "12" {
		t.Fatalf("schema %+v", c.schema)
	}
	for text, want := range map[string][]byte{
		"101000000001": {0x01, 0x0a},
		"000000000000": {},
		"000010000000": {0x80},
		"100000000000": {0x00, 0x08},
	} {
		got, err := c.parse(text)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %#v, %v; want %#v", text, got, err, want)
		}
	}
	if _, err := c.parse("10x"); err == nil {
		t.Error("a bad bit string parsed")
	}
}

// Debezium's Point: x, y and the point in little-endian WKB.
func TestPointAsDebeziumWritesIt(t *testing.T) {
	v, err := pointConverter().parse("(1.5,-2)")
	if err != nil {
		t.Fatal(err)
	}
	p := v.(*connectors.StructValue)
	wantWKB := []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0xc0}
	if p.Get("x") != 1.5 || p.Get("y") != -2.0 || !reflect.DeepEqual(p.Get("wkb"), wantWKB) || p.Get("srid") != nil {
		t.Fatalf("point = %v", p.Values)
	}
	if _, err := pointConverter().parse("(1.5)"); err == nil {
		t.Error("a bad point parsed")
	}
}
