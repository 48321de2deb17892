package converters

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	`{"schema":` + datagenSchemaJSON + `,"payload":{"task":1,"seq":42,"pad":"xx"}}`,
	`{ "schema": { "type": "map", "keys": { "type" : "int32" }, "values": { "type" : "int32" } }, "payload": [ [1, 12], [2, 15] ] }`,
	`{"schema":{"type":"map","keys":{"type":"struct","fields":[{"type":"double","optional":true,"field":"x"}]},"values":{"type":"bytes"}},"payload":[[{"x":1.5},"AQI="],[{"x":null},""]]}`,
	`{"schema":{"type":"array","items":{"type":"float","optional":true}},"payload":[1.5,null,"NaN",1e39,-0.0]}`,
	`{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"},"default":"AJw="},"payload":null}`,
	`{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"-3"}},"payload":12000}`,
	`{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Date","version":1},"payload":-719528}`,
	`{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Time","optional":true,"default":5},"payload":null}`,
	`{"schema":{"type":"int64","name":"org.apache.kafka.connect.data.Timestamp"},"payload":-9223372036854775808}`,
	`{"schema":{"type":"struct","name":"s","version":3,"doc":"d","fields":[{"field":"a","type":"string","default":"z"},{"field":"b","type":"int8","optional":true}],"default":{"a":"q"}},"payload":{"b":1}}`,
	`{"payload":"x","schema":{"type":"string","parameters":{"k":"v","scale":"1"}}}`,
	`{"schema":null,"payload":{"a":[1,2.5,"s",true,null,{"b":{}}],"\u00e9\ud83d\ude00":"\ud800"}}`,
	`{"schema":{"type":"int16"},"payload":-0032768}`,
	`[1, 2, {"a": "b"}]`,
	`"just a string \n"`,
	`123456789012345678`,
	`-1.5e-7`,
	`{"schema":{"type":"string"},"payload":"<>&\u2028\u0001"}`,
	"",
	"null",
}

// FuzzJSONToConnect feeds arbitrary bytes to ToConnect with schemas on and
// off. It must never panic, every error must be a *DataError, and whatever
// it accepts must be written back by FromConnect, read back to equal values,
// and then rewritten to the same bytes. Without schemas, its reading of valid
// JSON must agree with encoding/json's.
func FuzzJSONToConnect(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	withSchemas := NewJSONConverter()
	numeric := NewJSONConverter()
	if err := numeric.Configure(map[string]string{"decimal.format": "NUMERIC"}, true); err != nil {
		f.Fatal(err)
	}
	plain := NewJSONConverter()
	if err := plain.Configure(map[string]string{"schemas.enable": "false"}, false); err != nil {
		f.Fatal(err)
	}
	// One arena across inputs, as a sink task keeps one across records.
	var arena Arena
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		// A hang would stall the fuzzer silently; crashing the worker makes
		// it record the input.
		watchdog := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("ToConnect hangs on %q", data)) })
		defer watchdog.Stop()
		for _, c := range []*JSONConverter{withSchemas, numeric, plain} {
			roundTrip(t, c, data)
			checkToConnectArena(t, c, data, &arena)
		}
		for _, c := range []*JSONConverter{withSchemas, numeric} {
			s, v, err := c.ToConnect("t", data)
			ws, wv, werr := anyOrder(c, data)
			if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() || !schemaEqual(s, ws) || !looseEqual(v, wv) {
				t.Fatalf("%q read as %+v %#v (%v), by the general walk as %+v %#v (%v)", data, s, v, err, ws, wv, werr)
			}
		}
		differential(t, plain, data)
		// Slowness is a bug too: records arrive by the million.
		if d := time.Since(start); d > time.Second {
			t.Fatalf("%d bytes took %v", len(data), d)
		}
	})
}

func roundTrip(t *testing.T, c *JSONConverter, data []byte) {
	s, v, err := c.ToConnect("t", data)
	if err != nil {
		asDataError(t, err)
		return
	}
	out, err := c.FromConnect("t", s, v)
	if err != nil {
		var de *DataError
		if errors.As(err, &de) && de.scale {
			// A numeric decimal with more digits than its scale: Connect
			// reads it too and cannot write it back either.
			return
		}
		t.Fatalf("FromConnect of what %q read as %+v %#v: %v", data, s, v, err)
	}
	if out != nil && !json.Valid(out) {
		t.Fatalf("%q was written as invalid JSON %q", data, out)
	}
	s2, v2, err := c.ToConnect("t", out)
	if err != nil {
		t.Fatalf("%q was written as %q, which does not read back: %v", data, out, err)
	}
	if !schemaEqual(s, s2) || !looseEqual(v, v2) {
		t.Fatalf("%q read as %+v %#v, written as %q, read back as %+v %#v", data, s, v, out, s2, v2)
	}
	again, err := c.FromConnect("t", s2, v2)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("%q written as %q, then as %q (%v)", data, out, again, err)
	}
}

// looseEqual is connectEqual, except that a schemaless non-finite float
// equals the string Jackson writes for it: JSON cannot hold the number.
func looseEqual(a, b any) bool {
	if f, ok := a.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		if s, ok := b.(string); ok {
			return s == string(appendJavaFloat(nil, f, 64))
		}
	}
	switch a.(type) {
	case []any, map[string]any:
		return elementsEqual(a, b, looseEqual)
	}
	return connectEqual(a, b)
}

func differential(t *testing.T, plain *JSONConverter, data []byte) {
	if !json.Valid(data) {
		return
	}
	_, got, err := plain.ToConnect("t", data)
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "out of range of int64") || strings.Contains(msg, "nesting deeper") || strings.Contains(msg, "longer than") {
			return
		}
		t.Fatalf("encoding/json accepts %q, ToConnect says %v", data, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var std any
	if err := dec.Decode(&std); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if want := fromStd(std); !connectEqual(got, want) {
		t.Fatalf("%q: ToConnect gave %#v, encoding/json %#v", data, got, want)
	}
}

// fromStd maps encoding/json's reading onto Connect's schemaless values.
func fromStd(v any) any {
	switch v := v.(type) {
	case json.Number:
		if !strings.ContainsAny(string(v), ".eE") {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			return n
		}
		f, _ := strconv.ParseFloat(string(v), 64)
		return f
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = fromStd(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = fromStd(e)
		}
		return out
	}
	return v
}

// FuzzJSONString checks the hand-written string escaping: the output is
// valid JSON that encoding/json reads back as the input, with invalid UTF-8
// replaced byte by byte, and our own decoder agrees.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"\\/", "\x00\x1f\x7f", "\u2028é😀", "a\xffb\xc3", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q escaped as invalid JSON %s: %v", s, out, err)
		}
		want := sanitize(s)
		if back != want {
			t.Fatalf("%q escaped as %s, read back as %q", s, out, back)
		}
		d := decoder{data: out}
		raw, err := d.str()
		if err != nil || string(raw) != want {
			t.Fatalf("decoder read %s as %q, %v", out, raw, err)
		}
	})
}

func sanitize(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
