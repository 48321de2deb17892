package converters

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// datagenValue is what the Datagen source emits per record, with 100 bytes
// of padding.
var datagenValue = &connectors.StructValue{Schema: datagenSchema, Values: []any{int32(3), int64(123456789), strings.Repeat("x", 100)}}

func BenchmarkJSONFromConnectStruct(b *testing.B) {
	c := jsonConv(b, false, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.FromConnect("t", datagenSchema, datagenValue); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONFromConnectStructNoSchemas(b *testing.B) {
	c := jsonConv(b, false, map[string]string{"schemas.enable": "false"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.FromConnect("t", datagenSchema, datagenValue); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodingJSONStructBaseline is the approach the append encoder
// replaces: a map per record and encoding/json, schema included.
func BenchmarkEncodingJSONStructBaseline(b *testing.B) {
	var schema any
	if err := json.Unmarshal([]byte(datagenSchemaJSON), &schema); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		payload := map[string]any{}
		for i, f := range datagenSchema.Fields {
			payload[f.Name] = datagenValue.Values[i]
		}
		if _, err := json.Marshal(map[string]any{"schema": schema, "payload": payload}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONToConnectStruct(b *testing.B) {
	benchJSONToConnect(b, datagenSchema, datagenValue)
}

func BenchmarkJSONToConnectArenaStruct(b *testing.B) {
	benchJSONToConnectArena(b, datagenSchema, datagenValue)
}

// benchJSONToConnect reads, with schemas, what FromConnect writes of value.
func benchJSONToConnect(b *testing.B, schema *connectors.Schema, value any) {
	c, data := jsonToRead(b, schema, value)
	for b.Loop() {
		if _, _, err := c.ToConnect("t", data); err != nil {
			b.Fatal(err)
		}
	}
}

// benchJSONToConnectArena is benchJSONToConnect through an arena, as the
// sink runtime reads.
func benchJSONToConnectArena(b *testing.B, schema *connectors.Schema, value any) {
	c, data := jsonToRead(b, schema, value)
	var a Arena
	for b.Loop() {
		if _, _, err := c.ToConnectArena("t", data, &a); err != nil {
			b.Fatal(err)
		}
	}
}

func jsonToRead(b *testing.B, schema *connectors.Schema, value any) (*JSONConverter, []byte) {
	c := jsonConv(b, false, nil)
	data, err := c.FromConnect("t", schema, value)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	return c, data
}

func BenchmarkJSONToConnectSchemaless(b *testing.B) {
	c := jsonConv(b, false, map[string]string{"schemas.enable": "false"})
	data, err := c.FromConnect("t", datagenSchema, datagenValue)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.ToConnect("t", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStringFromConnectKey(b *testing.B) {
	c := &StringConverter{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.FromConnect("t", connectors.StringSchema, "datagen-3"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendJSONString is the escaping of Datagen's 100-byte pad, the
// largest part of its value.
func BenchmarkAppendJSONString(b *testing.B) {
	s := strings.Repeat("x", 100)
	buf := make([]byte, 0, 128)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = appendJSONString(buf[:0], s)
	}
}

// BenchmarkJSONToConnectStringEnvelope reads what bench/connect's sink
// scenario consumes: a 99-byte line as a STRING in Connect's envelope, the
// shape of JsonConverter's output for a FileStreamSource line.
func BenchmarkJSONToConnectStringEnvelope(b *testing.B) {
	benchJSONToConnect(b, connectors.StringSchema, strings.Repeat("abcdefghi ", 10)[:99])
}

func BenchmarkJSONToConnectArenaStringEnvelope(b *testing.B) {
	benchJSONToConnectArena(b, connectors.StringSchema, strings.Repeat("abcdefghi ", 10)[:99])
}
