package actors

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
)

// overridingJSON embeds JSONConverter to change what ToConnect returns: the
// sink must call its ToConnect, not the embedded type's ToConnectArena.
type overridingJSON struct{ converters.JSONConverter }

func (c *overridingJSON) ToConnect(topic string, data []byte) (*connectors.Schema, any, error) {
	return connectors.StringSchema, "overridden", nil
}

// A JsonConverter's (and a StringConverter's) strings come from the task's
// arena: a string value costs no allocation of its own (neither its
// bytes nor its header as an interface value), and it does not
// change when the fetched bytes it was read from are overwritten. A
// converter that only embeds one keeps its own ToConnect.
func TestSinkConvertReadsStringsThroughArena(t *testing.T) {
	line := strings.Repeat("abcdefghi ", 10)[:99]
	envelope := []byte(`{"schema":{"type":"string","optional":false},"payload":"` + line + `"}`)
	for _, tc := range []struct {
		name  string
		value converters.Converter
		data  []byte
	}{
		{"JsonConverter", converters.NewJSONConverter(), envelope},
		{"StringConverter", &converters.StringConverter{}, []byte(line)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &sinkPipeline{codec: codec{key: &converters.StringConverter{}, value: tc.value}}
			p.keyArena, p.valueArena = arenaConverterOf(p.key), arenaConverterOf(p.value)
			r := &kgo.Record{Topic: "t", Value: append([]byte(nil), tc.data...)}
			var sr connectors.SinkRecord
			if err := p.convert(r, &sr); err != nil {
				t.Fatal(err)
			}
			for i := range r.Value {
				r.Value[i] = 'X'
			}
			if sr.Value != line {
				t.Fatalf("value %q after its fetched bytes changed, want %q", sr.Value, line)
			}
			r.Value = tc.data
			through := testing.AllocsPerRun(1000, func() { _ = p.convert(r, &sr) })
			p.valueArena = arenaConverterOf(nil)
			alone := testing.AllocsPerRun(1000, func() { _ = p.convert(r, &sr) })
			// The arena's chunk, once per few hundred values, rounds away.
			if through != alone-2 {
				t.Fatalf("convert allocates %v times through the arena, %v without; want two fewer", through, alone)
			}
		})
	}

	p := &sinkPipeline{codec: codec{key: &converters.StringConverter{}, value: &overridingJSON{}}}
	p.keyArena, p.valueArena = arenaConverterOf(p.key), arenaConverterOf(p.value)
	var sr connectors.SinkRecord
	if err := p.convert(&kgo.Record{Topic: "t", Value: envelope}, &sr); err != nil {
		t.Fatal(err)
	}
	if sr.Value != "overridden" {
		t.Fatalf("value %q: the embedding converter's ToConnect was bypassed", sr.Value)
	}
}
