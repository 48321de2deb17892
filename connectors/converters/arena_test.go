package converters

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// The arena's strings are copies: they keep their text when the bytes
// they were read from change, and when the arena fills chunk after chunk.
func TestArenaStringsAreCopies(t *testing.T) {
	var a Arena
	src := []byte{}
	var got []string
	var want []string
	for i := range 5000 {
		// Sizes up to past the point where a value gets its own
		// allocation, so that chunks fill unevenly.
		v := fmt.Sprintf("%d-%s", i, bytes.Repeat([]byte{'v'}, i%(arenaChunk/6)))
		src = append(src[:0], v...)
		got = append(got, a.String(src))
		want = append(want, v)
		for j := range src {
			src[j] = 'X'
		}
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("string %d is %.40q, want %.40q", i, got[i], want[i])
		}
	}
	if s := a.String(nil); s != "" {
		t.Fatalf("String(nil) = %q", s)
	}
}

// ToConnectArena returns what ToConnect does.
func TestStringConverterToConnectArena(t *testing.T) {
	var a Arena
	c := &StringConverter{}
	for _, data := range [][]byte{nil, {}, []byte("text"), []byte("ünï\xff")} {
		ws, wv, werr := c.ToConnect("t", data)
		gs, gv, gerr := c.ToConnectArena("t", data, &a)
		if gs != ws || gv != wv || (gerr == nil) != (werr == nil) {
			t.Errorf("ToConnectArena(%q) = %v, %#v, %v; ToConnect gives %v, %#v, %v", data, gs, gv, gerr, ws, wv, werr)
		}
	}
}

// arenaSeeds are envelopes whose values hold strings in every place the
// decoder reads one: escapes, invalid UTF-8, empty strings, and strings
// nested in structs, maps (keys too) and arrays.
var arenaSeeds = []string{
	`{"schema":{"type":"string"},"payload":""}`,
	`{"schema":{"type":"string"},"payload":"a\"b\\c\n\u00e9\ud83d\ude00\ud800/\/"}`,
	"{\"schema\":{\"type\":\"string\"},\"payload\":\"ab\xffc\xe2\x82d\"}",
	`{"schema":{"type":"struct","fields":[{"field":"s","type":"string"},` +
		`{"field":"m","type":"map","keys":{"type":"string"},"values":{"type":"array","items":{"type":"string"}}},` +
		`{"field":"n","type":"struct","optional":true,"fields":[{"field":"x","type":"string","optional":true},{"field":"d","type":"string","default":"dflt"}]}]},` +
		`"payload":{"s":"top","m":{"k\u00e9":["a","","c\t"],"":[],"plain key":["v"]},"n":{"x":"inner","d":null}}}`,
	`{"schema":{"type":"map","keys":{"type":"int32"},"values":{"type":"string"}},"payload":[[1,"one"],[2,""]]}`,
	`{"payload":{"a":"b"},"schema":{"type":"map","keys":{"type":"string"},"values":{"type":"string"}}}`,
	`{"schema":null,"payload":{"k":["s","\u0000",{"":"e","n":{"deep":"er"}}],"\u00e9":"x"}}`,
	`{"schema":{"type":"string"},"payload":"unterminated}`,
	`{"schema":{"type":"string"},"payload":"x","extra":1}`,
	`{"k":"v","a":["b",{"c":"d"}]}`,
	`"top-level string"`,
}

// ToConnectArena reads what ToConnect reads, errors included, and what it
// returns does not change when the bytes it read from are overwritten: its
// strings are copies, never the record's bytes.
func TestJSONConverterToConnectArena(t *testing.T) {
	withSchemas := NewJSONConverter()
	plain := jsonConv(t, false, map[string]string{"schemas.enable": "false"})
	var a Arena
	for _, c := range []*JSONConverter{withSchemas, plain} {
		for _, seed := range append(arenaSeeds, fuzzSeeds...) {
			checkToConnectArena(t, c, []byte(seed), &a)
		}
	}
}

func checkToConnectArena(t *testing.T, c *JSONConverter, data []byte, a *Arena) {
	t.Helper()
	ws, wv, werr := c.ToConnect("t", data)
	fetched := bytes.Clone(data)
	gs, gv, gerr := c.ToConnectArena("t", fetched, a)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || !schemaEqual(gs, ws) || !connectEqual(gv, wv) {
		t.Fatalf("ToConnectArena(%q) = %+v, %#v, %v; ToConnect gives %+v, %#v, %v", data, gs, gv, gerr, ws, wv, werr)
	}
	for i := range fetched {
		fetched[i] = 'X'
	}
	if !connectEqual(gv, wv) {
		t.Fatalf("ToConnectArena(%q)'s value changed with the bytes it was read from: %#v, want %#v", data, gv, wv)
	}
}

// The strings of a value read through the arena are allocated in it, not
// one by one: ToConnectArena allocates two less per string in the value
// than ToConnect (its bytes, and its header as an interface value: Box),
// and the arena grows by their bytes.
func TestJSONConverterToConnectArenaAllocates(t *testing.T) {
	c := NewJSONConverter()
	line := strings.Repeat("abcdefghi ", 10)[:99]
	str, err := c.FromConnect("t", connectors.StringSchema, line)
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 100)
	three := connectors.StructSchema("three", connectors.Field{Name: "a", Schema: connectors.StringSchema},
		connectors.Field{Name: "b", Schema: connectors.StringSchema}, connectors.Field{Name: "c", Schema: connectors.StringSchema})
	strct, err := c.FromConnect("t", three, &connectors.StructValue{Schema: three, Values: []any{pad, pad, pad}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		data    []byte
		strings int
		bytes   int
	}{{str, 1, len(line)}, {strct, 3, 3 * len(pad)}} {
		var a Arena
		_, _, _ = c.ToConnectArena("t", tc.data, &a) // the schema is cached from here on
		before := len(a.chunk)
		if _, _, err := c.ToConnectArena("t", tc.data, &a); err != nil {
			t.Fatal(err)
		}
		if grew := len(a.chunk) - before; grew != tc.bytes {
			t.Errorf("reading %q, the arena grew by %d bytes, want %d", tc.data, grew, tc.bytes)
		}
		plainAllocs := testing.AllocsPerRun(1000, func() { _, _, _ = c.ToConnect("t", tc.data) })
		// A chunk is allocated every few hundred values, which the
		// average per run rounds away.
		arenaAllocs := testing.AllocsPerRun(1000, func() { _, _, _ = c.ToConnectArena("t", tc.data, &a) })
		if arenaAllocs != plainAllocs-float64(2*tc.strings) {
			t.Errorf("reading %q allocates %v times with the arena, %v without; want %d fewer", tc.data, arenaAllocs, plainAllocs, 2*tc.strings)
		}
	}
}

// arenaValues are Connect values to write with FromConnectArena: those the
// seeds read back as, and strings from empty to past the size that gets
// an allocation of its own, so that chunks fill unevenly and values
// outgrow the room they were given.
func arenaValues(t *testing.T, c *JSONConverter) (schemas []*connectors.Schema, values []any) {
	t.Helper()
	for _, seed := range append(arenaSeeds, fuzzSeeds...) {
		s, v, err := c.ToConnect("t", []byte(seed))
		if err == nil {
			schemas, values = append(schemas, s), append(values, v)
		}
	}
	for i := range 3000 {
		n := (i * 37) % (arenaChunk / 5)
		if i%10 == 9 {
			n = i % 7 // a run of short ones after a long one
		}
		schemas = append(schemas, connectors.StringSchema)
		values = append(values, fmt.Sprintf("%d:%s", i, strings.Repeat("ü", n/2)))
	}
	schemas, values = append(schemas, nil, connectors.OptionalStringSchema), append(values, nil, nil)
	return schemas, values
}

// FromConnectArena writes what FromConnect writes, errors and nulls
// included, and every value keeps its bytes while the arena writes the
// ones after it: no two values share a byte, and none has capacity past
// its length that an append could write into the next.
func TestJSONConverterFromConnectArena(t *testing.T) {
	withSchemas := NewJSONConverter()
	plain := jsonConv(t, false, map[string]string{"schemas.enable": "false"})
	for _, c := range []*JSONConverter{withSchemas, plain} {
		schemas, values := arenaValues(t, withSchemas)
		var a Arena
		var got, want [][]byte
		for i := range values {
			w, werr := c.FromConnect("t", schemas[i], values[i])
			g, gerr := c.FromConnectArena("t", schemas[i], values[i], &a)
			if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || (g == nil) != (w == nil) || !bytes.Equal(g, w) {
				t.Fatalf("FromConnectArena(%.60s) = %.60q, %v; FromConnect gives %.60q, %v", fmt.Sprint(values[i]), g, gerr, w, werr)
			}
			if cap(g) != len(g) {
				t.Fatalf("value %d has capacity %d past its length %d", i, cap(g), len(g))
			}
			if i%500 == 0 {
				a.Drop() // as an idle source task does
			}
			got, want = append(got, g), append(want, w)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("value %d changed as later values were written: %.60q, want %.60q", i, got[i], want[i])
			}
		}
	}
}

// StringConverter's FromConnectArena writes what its FromConnect writes,
// for strings and for the other types it renders as Java's toString.
func TestStringConverterFromConnectArena(t *testing.T) {
	c := &StringConverter{}
	schemas, values := arenaValues(t, NewJSONConverter())
	schemas = append(schemas, connectors.Int32Schema, connectors.StringSchema)
	values = append(values, int32(7), "")
	var a Arena
	var got, want [][]byte
	for i := range values {
		w, werr := c.FromConnect("t", schemas[i], values[i])
		g, gerr := c.FromConnectArena("t", schemas[i], values[i], &a)
		if (gerr == nil) != (werr == nil) || (g == nil) != (w == nil) || !bytes.Equal(g, w) || cap(g) != len(g) {
			t.Fatalf("FromConnectArena(%.60s) = %.60q (cap %d), %v; FromConnect gives %.60q, %v", fmt.Sprint(values[i]), g, cap(g), gerr, w, werr)
		}
		got, want = append(got, g), append(want, w)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("value %d changed as later values were written: %.60q, want %.60q", i, got[i], want[i])
		}
	}
}

// Values of a hundred bytes written into the arena cost a chunk every few
// hundred of them, where FromConnect allocates each (and copies it out of
// a pooled scratch buffer).
func TestFromConnectArenaAllocates(t *testing.T) {
	c := jsonConv(t, false, map[string]string{"schemas.enable": "false"})
	schema := connectors.StructSchema("v", connectors.Field{Name: "seq", Schema: connectors.Int64Schema},
		connectors.Field{Name: "pad", Schema: connectors.StringSchema})
	v := &connectors.StructValue{Schema: schema, Values: []any{int64(12345), strings.Repeat("x", 100)}}
	var a Arena
	if allocs := testing.AllocsPerRun(1000, func() { _, _ = c.FromConnectArena("t", schema, v, &a) }); allocs >= 0.1 {
		t.Errorf("FromConnectArena allocates %v times per value, want a chunk every few hundred values", allocs)
	}
	if allocs := testing.AllocsPerRun(1000, func() { _, _ = c.FromConnect("t", schema, v) }); allocs < 1 {
		t.Errorf("FromConnect allocates %v times per value; the test no longer compares with one allocation each", allocs)
	}
}

// A boxed string is a string like any other: it type-switches, compares
// and prints as one, and it keeps its text through collections and the
// arena's later strings and slabs.
func TestArenaBoxIsAPlainString(t *testing.T) {
	var a Arena
	var got []any
	for i := range 3 * boxSlab {
		got = append(got, a.Box(a.String([]byte(fmt.Sprintf("value-%d", i)))))
		if i%200 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	for i, v := range got {
		want := fmt.Sprintf("value-%d", i)
		s, ok := v.(string)
		if !ok || s != want || v != any(want) || fmt.Sprint(v) != want {
			t.Fatalf("boxed value %d is %#v (%T), want %q", i, v, v, want)
		}
	}
	if v := a.Box(""); v != any("") {
		t.Fatalf("Box(\"\") = %#v", v)
	}
}

// A fresh chunk's bytes are not cleared: a string only ever shows what
// was copied in, whatever the chunk held before.
func TestArenaChunksAreOnlyReadWhereWritten(t *testing.T) {
	for range 50 {
		var a Arena
		junk := bytes.Repeat([]byte{'J'}, arenaChunk)
		_ = a.String(junk[:arenaChunk/8])
		runtime.GC()
		for i := range 1000 {
			want := strings.Repeat(string(rune('a'+i%26)), i%97)
			if got := a.String([]byte(want)); got != want {
				t.Fatalf("string %d is %q, want %q", i, got, want)
			}
		}
	}
}
