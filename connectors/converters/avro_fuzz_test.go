package converters

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// FuzzAvroToConnect feeds arbitrary frames to AvroConverter.ToConnect over
// schemas registered for a struct of every type, a general union and a map
// with non-string keys. It must never panic, every error must be a
// *DataError, and a frame it accepts must be written back (under a schema
// of its own) to the same payload bytes.
func FuzzAvroToConnect(f *testing.F) {
	reg := newCountingRegistry(f)
	c := avroConv(f, reg, false, nil)
	foreign := `{"type":"record","name":"Rec","namespace":"ns","fields":[
		{"name":"color","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
		{"name":"hash","type":{"type":"fixed","name":"Hash","size":2}},
		{"name":"either","type":["null","int","string",{"type":"array","items":"long"}]},
		{"name":"m","type":{"type":"map","values":["null","double"]}}]}`
	fid, _, err := reg.RegisterSchema("fuzz-value", srSchemaAvro(foreign))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(appendFrameHeader(nil, fid), 0x02, 0xab, 0xcd, 0x04, 0x02, 'z', 0x02, 0x02, 'k', 0x02, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x00))
	everything := connectors.StructSchema("e",
		connectors.Field{Name: "i8", Schema: connectors.Int8Schema},
		connectors.Field{Name: "dec", Schema: decimalSchema("2")},
		connectors.Field{Name: "date", Schema: dateSchema.Optionally()},
		connectors.Field{Name: "time", Schema: timeSchema},
		connectors.Field{Name: "ts", Schema: timestampSchema},
		connectors.Field{Name: "km", Schema: &connectors.Schema{Type: connectors.Map, Keys: connectors.Int16Schema, Values: connectors.BytesSchema}},
		connectors.Field{Name: "arr", Schema: &connectors.Schema{Type: connectors.Array, Items: connectors.Float32Schema.Optionally()}},
	)
	v := connectors.NewStruct(everything).MustSet("i8", int8(1)).MustSet("dec", rat("1.5")).MustSet("time", dateSchemaZero()).
		MustSet("ts", dateSchemaZero()).MustSet("km", map[string]any{"3": []byte("x")}).MustSet("arr", []any{float32(1), nil})
	seed, err := c.FromConnect("fuzz", everything, v)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0x7f, 0xff, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, _, out := fuzzReadBack(t, c, "fuzz", data)
		if s != nil && !bytes.Equal(out[5:], data[5:]) && !hasEnumOrMap(s) {
			t.Fatalf("payload %x written back as %x", data[5:], out[5:])
		}
	})
}

// hasEnumOrMap reports parts whose bytes legitimately change on rewrite:
// enums (written back as strings) and string-keyed maps (Go maps have no
// order, Avro's bytes do).
func hasEnumOrMap(s *connectors.Schema) bool {
	if s == nil {
		return false
	}
	if s.Parameters[avroEnumParam] != "" || s.Type == connectors.Map {
		return true
	}
	for _, f := range s.Fields {
		if hasEnumOrMap(f.Schema) {
			return true
		}
	}
	return hasEnumOrMap(s.Items) || hasEnumOrMap(s.Values)
}

func dateSchemaZero() any { return time.UnixMilli(0).UTC() }
