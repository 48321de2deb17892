package converters

import (
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// FuzzJSONSchemaToConnect feeds arbitrary frames to
// JSONSchemaConverter.ToConnect: never a panic, every error a *DataError,
// and what it accepts it can write back.
func FuzzJSONSchemaToConnect(f *testing.F) {
	reg := newCountingRegistry(f)
	c := jsonSchemaConv(f, reg, nil)
	schema := `{"type":"object","properties":{"n":{"type":"integer","connect.type":"int16"},"d":{"type":"string","title":"org.apache.kafka.connect.data.Decimal","connect.type":"bytes","connect.parameters":{"scale":"2"}},
		"t":{"type":"integer","title":"org.apache.kafka.connect.data.Time","connect.type":"int32"},"m":{"type":"array","connect.type":"map","items":{"type":"object","properties":{"key":{"type":"integer","connect.type":"int8"},"value":{"type":"boolean"}}}},
		"u":{"oneOf":[{"type":"null"},{"type":"string"},{"type":"integer"}]},"o":{"type":["null","number"]}}}`
	id, _, err := reg.RegisterSchema("fz-value", sr.Schema{Schema: schema, Type: sr.TypeJSON})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(appendFrameHeader(nil, id), `{"n":1,"d":"ZA==","t":5,"m":[{"key":1,"value":true}],"u":"s","o":null}`...))
	f.Add(append(appendFrameHeader(nil, id), `{"u":3}`...))
	f.Add([]byte{0, 0, 0, 0, 9, '{'})
	f.Fuzz(func(t *testing.T, data []byte) { fuzzReadBack(t, c, "fz", data) })
}
