package converters

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice-io/sluice/connectors"
)

func jsonSchemaConv(t testing.TB, reg *countingRegistry, extra map[string]string) *JSONSchemaConverter {
	t.Helper()
	return registryConv(t, "JsonSchemaConverter", reg, false, extra).(*JSONSchemaConverter)
}

// TestJSONSchemaMapping checks the registered schema and the payload
// against what Confluent's JsonSchemaData writes for the same data.
func TestJSONSchemaMapping(t *testing.T) {
	reg := newCountingRegistry(t)
	c := jsonSchemaConv(t, reg, nil)
	cases := []struct {
		schema  *connectors.Schema
		value   any
		schemaJ string
		payload string
	}{
		{connectors.Int8Schema, int8(-1), `{"type":"integer","connect.type":"int8"}`, `-1`},
		{connectors.OptionalStringSchema, "x", `{"oneOf":[{"type":"null"},{"type":"string"}]}`, `"x"`},
		{connectors.BytesSchema, []byte{0, 1}, `{"type":"string","connect.type":"bytes"}`, `"AAE="`},
		{decimalSchema("2"), rat("1"), `{"type":"string","title":"org.apache.kafka.connect.data.Decimal","connect.type":"bytes","connect.version":1,"connect.parameters":{"scale":"2"}}`, `"ZA=="`},
		{dateSchema, time.Date(1970, 1, 3, 0, 0, 0, 0, time.UTC), `{"type":"integer","title":"org.apache.kafka.connect.data.Date","connect.type":"int32","connect.version":1}`, `2`},
		{avroPoint, avroPointValue(1),
			`{"type":"object","properties":{"x":{"type":"integer","connect.type":"int32","connect.index":0},"label":{"oneOf":[{"type":"null"},{"type":"string"}],"connect.index":1}},"title":"com.acme.Point"}`,
			`{"x":1,"label":"p"}`},
		{&connectors.Schema{Type: connectors.Map, Keys: connectors.Int32Schema, Values: connectors.StringSchema}, map[string]any{"1": "a"},
			`{"type":"array","items":{"type":"object","properties":{"key":{"type":"integer","connect.type":"int32","connect.index":0},"value":{"type":"string","connect.index":1}}},"connect.type":"map"}`,
			`[{"key":1,"value":"a"}]`},
	}
	for i, tc := range cases {
		topic := fmt.Sprintf("js%d", i)
		b, err := c.FromConnect(topic, tc.schema, tc.value)
		if err != nil {
			t.Errorf("%d: %v", i, err)
			continue
		}
		ss, ok := reg.GetSchema(topic+"-value", 1)
		if !ok || ss.Type != sr.TypeJSON || int(b[4]) != ss.ID {
			t.Errorf("%d: registered %+v (%v), frame % x", i, ss, ok, b[:5])
			continue
		}
		if !jsonSame(ss.Schema.Schema, tc.schemaJ) {
			t.Errorf("%d: registered\n%s\nwant\n%s", i, ss.Schema.Schema, tc.schemaJ)
		}
		if !jsonSame(string(b[5:]), tc.payload) {
			t.Errorf("%d: payload %s, want %s", i, b[5:], tc.payload)
		}
	}
}

func TestJSONSchemaRoundTrip(t *testing.T) {
	reg := newCountingRegistry(t)
	nested := connectors.StructSchema("Inner", connectors.Field{Name: "flag", Schema: connectors.BooleanSchema})
	everything := connectors.StructSchema("com.acme.Everything", append(primitiveFields(),
		connectors.Field{Name: "opt", Schema: connectors.OptionalInt64Schema},
		connectors.Field{Name: "arr", Schema: &connectors.Schema{Type: connectors.Array, Items: connectors.OptionalStringSchema}},
		connectors.Field{Name: "map", Schema: &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.Int64Schema}},
		connectors.Field{Name: "intmap", Schema: &connectors.Schema{Type: connectors.Map, Keys: connectors.Int32Schema, Values: connectors.OptionalStringSchema}},
		connectors.Field{Name: "inner", Schema: nested},
		connectors.Field{Name: "optinner", Schema: nested.Optionally()},
		connectors.Field{Name: "dflt", Schema: &connectors.Schema{Type: connectors.Int32, Default: int32(7), Doc: "seven"}},
	)...)
	value := setPrimitiveFields(connectors.NewStruct(everything)).
		MustSet("arr", []any{"a", nil}).
		MustSet("map", map[string]any{"a": int64(1), "b": int64(2)}).
		MustSet("intmap", map[string]any{"-5": "x", "10": nil}).
		MustSet("inner", connectors.NewStruct(nested).MustSet("flag", true)).
		MustSet("dflt", int32(3))
	for _, format := range []string{"BASE64", "NUMERIC"} {
		c := jsonSchemaConv(t, reg, map[string]string{"decimal.format": format, "json.fail.invalid.schema": "true"})
		topic := "jsrt-" + format
		b, err := c.FromConnect(topic, everything, value)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		s, v, err := c.ToConnect(topic, b)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		want := *everything
		want.Version = 1
		if !schemaEqual(s, &want) {
			t.Errorf("%s: schema read back as\n%s\nwant\n%s", format, dumpSchema(s), dumpSchema(&want))
		}
		if !connectEqual(restruct(v, everything), value) {
			t.Errorf("%s: value read back as %#v", format, v)
		}
	}
}

// TestJSONSchemaReadsForeignSchemas reads a JSON Schema as a producer
// outside Connect writes one (Confluent's Python serializer, for one):
// no connect.* properties, required properties, a nullable type list, a
// $ref and an enum.
func TestJSONSchemaReadsForeignSchemas(t *testing.T) {
	reg := newCountingRegistry(t)
	c := jsonSchemaConv(t, reg, map[string]string{"use.optional.for.nonrequired": "true", "json.fail.invalid.schema": "true"})
	schema := `{"$schema":"http://json-schema.org/draft-07/schema#","title":"User","type":"object",
		"properties":{"id":{"type":"integer"},"name":{"type":"string"},"score":{"type":["number","null"]},
		"tags":{"type":"array","items":{"type":"string"}},"addr":{"$ref":"#/definitions/Addr"},
		"color":{"enum":["RED","GREEN"]}},
		"required":["id","name","tags","color"],
		"definitions":{"Addr":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
	id, _, err := reg.RegisterSchema("users-value", sr.Schema{Schema: schema, Type: sr.TypeJSON})
	if err != nil {
		t.Fatal(err)
	}
	frame := append(appendFrameHeader(nil, id), `{"id":7,"name":"ann","score":1.5,"tags":["a"],"addr":{"city":"Oslo"},"color":"RED"}`...)
	s, v, err := c.ToConnect("users", frame)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, f := range s.Fields {
		names = append(names, fmt.Sprintf("%s:%s:%v", f.Name, f.Schema.Type, f.Schema.Optional))
	}
	if got := strings.Join(names, " "); got != "id:int64:false name:string:false score:float64:true tags:array:false addr:struct:true color:string:false" || s.Name != "User" || s.Version != 1 {
		t.Errorf("schema %s: fields %s", dumpSchema(s), got)
	}
	sv := v.(*connectors.StructValue)
	if sv.Get("id") != int64(7) || sv.Get("score") != 1.5 || sv.Get("addr").(*connectors.StructValue).Get("city") != "Oslo" || sv.Get("color") != "RED" {
		t.Errorf("value %#v", sv.Values)
	}
	// json.fail.invalid.schema=true: a payload the schema refuses.
	bad := append(appendFrameHeader(nil, id), `{"id":"seven","name":"ann","tags":[],"color":"RED"}`...)
	if _, _, err := c.ToConnect("users", bad); err == nil || !strings.Contains(err.Error(), "validate") {
		t.Errorf("invalid payload: %v", err)
	}
	if _, _, err := c.ToConnect("users", append(appendFrameHeader(nil, id), `{"id":1} x`...)); err == nil {
		t.Errorf("trailing data accepted")
	}
}

func TestJSONSchemaConfig(t *testing.T) {
	for _, props := range []map[string]string{
		{"decimal.format": "HEX"},
		{"preserve.additional.properties": "true"},
		{"use.latest.version": "true"},
		{"connect.meta.data": "true"},
	} {
		props["schema.registry.url"] = "http://127.0.0.1:1"
		err := (&JSONSchemaConverter{}).Configure(props, false)
		if err == nil {
			t.Errorf("%v accepted", props)
			continue
		}
		for k := range props {
			if k != "schema.registry.url" && !strings.Contains(err.Error(), k) {
				t.Errorf("%v: error %q does not name %s", props, err, k)
			}
		}
	}
	reg := newCountingRegistry(t)
	c := jsonSchemaConv(t, reg, map[string]string{"object.additional.properties": "false"})
	if _, err := c.FromConnect("closed", avroPoint, avroPointValue(1)); err != nil {
		t.Fatal(err)
	}
	ss, _ := reg.GetSchema("closed-value", 1)
	if !strings.Contains(ss.Schema.Schema, `"additionalProperties":false`) {
		t.Errorf("object.additional.properties=false wrote %s", ss.Schema.Schema)
	}
}
