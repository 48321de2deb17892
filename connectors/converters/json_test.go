package converters

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/testutil"
)

var datagenSchema = connectors.StructSchema("io.sluice.connect.datagen.Value",
	connectors.Field{Name: "task", Schema: connectors.Int32Schema},
	connectors.Field{Name: "seq", Schema: connectors.Int64Schema},
	connectors.Field{Name: "pad", Schema: connectors.StringSchema},
)

const datagenSchemaJSON = `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"task"},{"type":"int64","optional":false,"field":"seq"},{"type":"string","optional":false,"field":"pad"}],"optional":false,"name":"io.sluice.connect.datagen.Value"}`

// connectTestStruct is the struct of Connect's JsonConverterTest.structToJson.
var connectTestStruct = connectors.StructSchema("",
	connectors.Field{Name: "field1", Schema: connectors.BooleanSchema},
	connectors.Field{Name: "field2", Schema: connectors.StringSchema},
	connectors.Field{Name: "field3", Schema: connectors.StringSchema},
	connectors.Field{Name: "field4", Schema: connectors.BooleanSchema},
)

// TestJSONFromConnectGolden checks FromConnect against the bytes Kafka
// Connect's JsonConverter (Jackson, compact) writes for the same data: the
// key order of its asJsonSchema, Java's number formatting, base64 bytes.
func TestJSONFromConnectGolden(t *testing.T) {
	optBool := connectors.BooleanSchema.Optionally()
	boolDefault := &connectors.Schema{Type: connectors.Boolean, Default: true}
	boolMeta := &connectors.Schema{Type: connectors.Boolean, Name: "bool", Version: 3, Doc: "the documentation", Parameters: map[string]string{"foo": "bar"}}
	optStringDefault := &connectors.Schema{Type: connectors.String, Optional: true, Default: "default"}
	int32Array := &connectors.Schema{Type: connectors.Array, Items: connectors.Int32Schema}
	stringIntMap := &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.Int32Schema}
	intIntMap := &connectors.Schema{Type: connectors.Map, Keys: connectors.Int32Schema, Values: connectors.Int32Schema}
	debeziumDecimal := &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1,
		Parameters: map[string]string{"scale": "2", "connect.decimal.precision": "5"}}

	tests := []struct {
		name   string
		props  map[string]string
		schema *connectors.Schema
		value  any
		want   string
	}{
		{"boolean", nil, connectors.BooleanSchema, true, `{"schema":{"type":"boolean","optional":false},"payload":true}`},
		{"optional null", nil, optBool, nil, `{"schema":{"type":"boolean","optional":true},"payload":null}`},
		{"default", nil, boolDefault, true, `{"schema":{"type":"boolean","optional":false,"default":true},"payload":true}`},
		{"schema metadata", nil, boolMeta, true, `{"schema":{"type":"boolean","optional":false,"name":"bool","version":3,"doc":"the documentation","parameters":{"foo":"bar"}},"payload":true}`},
		{"int8", nil, connectors.Int8Schema, int8(12), `{"schema":{"type":"int8","optional":false},"payload":12}`},
		{"int16", nil, connectors.Int16Schema, int16(-12), `{"schema":{"type":"int16","optional":false},"payload":-12}`},
		{"int32", nil, connectors.Int32Schema, int32(12), `{"schema":{"type":"int32","optional":false},"payload":12}`},
		{"int64", nil, connectors.Int64Schema, int64(4398046511104), `{"schema":{"type":"int64","optional":false},"payload":4398046511104}`},
		{"float32", nil, connectors.Float32Schema, float32(12.34), `{"schema":{"type":"float","optional":false},"payload":12.34}`},
		{"float64", nil, connectors.Float64Schema, 12.34, `{"schema":{"type":"double","optional":false},"payload":12.34}`},
		{"float64 whole", nil, connectors.Float64Schema, 1.0, `{"schema":{"type":"double","optional":false},"payload":1.0}`},
		{"float64 large", nil, connectors.Float64Schema, 1e10, `{"schema":{"type":"double","optional":false},"payload":1.0E10}`},
		{"float64 small", nil, connectors.Float64Schema, -0.00001234, `{"schema":{"type":"double","optional":false},"payload":-1.234E-5}`},
		{"float64 NaN", nil, connectors.Float64Schema, math.NaN(), `{"schema":{"type":"double","optional":false},"payload":"NaN"}`},
		{"bytes", nil, connectors.BytesSchema, []byte("test-string"), `{"schema":{"type":"bytes","optional":false},"payload":"dGVzdC1zdHJpbmc="}`},
		{"string", nil, connectors.StringSchema, "test-string", `{"schema":{"type":"string","optional":false},"payload":"test-string"}`},
		{"string escapes", nil, connectors.StringSchema, "q\"b\\s/\b\f\n\r\t\x01\x1f<>&\u2028é\x7f",
			`{"schema":{"type":"string","optional":false},"payload":"q\"b\\s/\b\f\n\r\t\u0001\u001F<>&` + "\u2028é\x7f" + `"}`},
		{"invalid utf8", nil, connectors.StringSchema, "a\xffb", `{"schema":{"type":"string","optional":false},"payload":"a` + "\uFFFD" + `b"}`},
		{"array", nil, int32Array, []any{int32(1), int32(2), int32(3)}, `{"schema":{"type":"array","items":{"type":"int32","optional":false},"optional":false},"payload":[1,2,3]}`},
		{"string map", nil, stringIntMap, map[string]any{"key2": int32(15), "key1": int32(12)},
			`{"schema":{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":{"key1":12,"key2":15}}`},
		{"int map", nil, intIntMap, map[string]any{"1": int32(12), "2": int32(15)},
			`{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":[[1,12],[2,15]]}`},
		{"struct", nil, connectTestStruct, &connectors.StructValue{Schema: connectTestStruct, Values: []any{true, "string2", "string3", false}},
			`{"schema":{"type":"struct","fields":[{"type":"boolean","optional":false,"field":"field1"},{"type":"string","optional":false,"field":"field2"},{"type":"string","optional":false,"field":"field3"},{"type":"boolean","optional":false,"field":"field4"}],"optional":false},"payload":{"field1":true,"field2":"string2","field3":"string3","field4":false}}`},
		{"datagen", nil, datagenSchema, &connectors.StructValue{Schema: datagenSchema, Values: []any{int32(1), int64(42), "xx"}},
			`{"schema":` + datagenSchemaJSON + `,"payload":{"task":1,"seq":42,"pad":"xx"}}`},
		{"decimal base64", nil, decimalSchema("2"), rat("1.56"),
			`{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"AJw="}`},
		{"decimal negative", nil, decimalSchema("2"), rat("-1.56"),
			`{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"/2Q="}`},
		{"decimal numeric", map[string]string{"decimal.format": "numeric"}, decimalSchema("2"), rat("1.56"),
			`{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":1.56}`},
		{"decimal numeric trailing zeros", map[string]string{"decimal.format": "NUMERIC"}, decimalSchema("4"), rat("1.56"),
			`{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"4"}},"payload":1.5600}`},
		{"decimal numeric tiny", map[string]string{"decimal.format": "NUMERIC"}, decimalSchema("9"), rat("0.000000012"),
			`{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"9"}},"payload":1.2E-8}`},
		{"decimal scale first", nil, debeziumDecimal, rat("1.56"),
			`{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"5"}},"payload":"AJw="}`},
		{"date", nil, dateSchema, time.UnixMilli(10000 * millisPerDay).UTC(),
			`{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1},"payload":10000}`},
		{"time", nil, timeSchema, time.Date(1970, 1, 1, 4, 0, 0, 0, time.UTC),
			`{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1},"payload":14400000}`},
		{"timestamp", nil, timestampSchema, time.UnixMilli(4000000000),
			`{"schema":{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1},"payload":4000000000}`},
		{"null replaced by default", nil, optStringDefault, nil, `{"schema":{"type":"string","optional":true,"default":"default"},"payload":"default"}`},
		{"null kept", map[string]string{"replace.null.with.default": "false"}, optStringDefault, nil, `{"schema":{"type":"string","optional":true,"default":"default"},"payload":null}`},
		{"no schema primitive", nil, nil, true, `{"schema":null,"payload":true}`},
		{"no schema array", nil, nil, []any{int32(1), "string", true}, `{"schema":null,"payload":[1,"string",true]}`},
		{"no schema map", nil, nil, map[string]any{"key2": int64(15), "key1": 12.5, "key3": nil}, `{"schema":null,"payload":{"key1":12.5,"key2":15,"key3":null}}`},
		{"tombstone", nil, nil, nil, ``},
		{"schemaless struct", map[string]string{"schemas.enable": "false"}, datagenSchema,
			&connectors.StructValue{Schema: datagenSchema, Values: []any{int32(1), int64(42), "xx"}}, `{"task":1,"seq":42,"pad":"xx"}`},
		{"schemaless optional null", map[string]string{"schemas.enable": "false"}, optBool, nil, `null`},
		{"schemaless tombstone", map[string]string{"schemas.enable": "false"}, nil, nil, ``},
		{"schemaless decimal", map[string]string{"schemas.enable": "false"}, decimalSchema("2"), rat("1.56"), `"AJw="`},
	}
	for _, tc := range tests {
		for _, isKey := range []bool{false, true} {
			c := jsonConv(t, isKey, tc.props)
			got, err := c.FromConnect("topic", tc.schema, tc.value)
			if err != nil {
				t.Errorf("%s (key %v): FromConnect: %v", tc.name, isKey, err)
				continue
			}
			if string(got) != tc.want {
				t.Errorf("%s (key %v):\n got %s\nwant %s", tc.name, isKey, got, tc.want)
			}
			if tc.want == "" && got != nil {
				t.Errorf("%s: a tombstone must be nil bytes, got %q", tc.name, got)
			}
			if got != nil && !json.Valid(got) {
				t.Errorf("%s: invalid JSON %s", tc.name, got)
			}
		}
	}
}

// TestJSONToConnectGolden reads inputs taken from Connect's own
// JsonConverterTest, with its whitespace and key orders.
func TestJSONToConnectGolden(t *testing.T) {
	structSchema := connectors.StructSchema("",
		connectors.Field{Name: "field1", Schema: connectors.BooleanSchema},
		connectors.Field{Name: "field2", Schema: connectors.StringSchema})
	optReqSchema := connectors.StructSchema("",
		connectors.Field{Name: "optional", Schema: connectors.StringSchema.Optionally()},
		connectors.Field{Name: "required", Schema: connectors.StringSchema})
	tests := []struct {
		name       string
		props      map[string]string
		in         string
		wantSchema *connectors.Schema
		want       any
	}{
		{"boolean", nil, `{ "schema": { "type": "boolean" }, "payload": true }`, connectors.BooleanSchema, true},
		{"optional null", nil, `{ "schema": { "type": "boolean", "optional": true }, "payload": null }`, connectors.BooleanSchema.Optionally(), nil},
		{"default for null", nil, `{ "schema": { "type": "boolean", "default": true }, "payload": null }`, &connectors.Schema{Type: connectors.Boolean, Default: true}, true},
		{"null kept", map[string]string{"replace.null.with.default": "false"}, `{ "schema": { "type": "boolean", "optional": true, "default": true }, "payload": null }`,
			&connectors.Schema{Type: connectors.Boolean, Optional: true, Default: true}, nil},
		{"metadata", nil, `{ "schema": { "type": "boolean", "optional": false, "name": "bool", "version": 2, "doc": "the documentation", "parameters": { "foo": "bar" }}, "payload": true }`,
			&connectors.Schema{Type: connectors.Boolean, Name: "bool", Version: 2, Doc: "the documentation", Parameters: map[string]string{"foo": "bar"}}, true},
		{"payload first", nil, `{"payload":12,"schema":{"type":"int8"}}`, connectors.Int8Schema, int8(12)},
		{"int8 leading zeros", nil, `{ "schema": { "type": "int8" }, "payload": 0012 }`, connectors.Int8Schema, int8(12)},
		{"int16 leading zeros", nil, `{ "schema": { "type": "int16" }, "payload": 000123 }`, connectors.Int16Schema, int16(123)},
		{"int32", nil, `{ "schema": { "type": "int32" }, "payload": 000012345 }`, connectors.Int32Schema, int32(12345)},
		{"int32 as 1e2", nil, `{ "schema": { "type": "int32" }, "payload": 1e2 }`, connectors.Int32Schema, int32(100)},
		{"int64", nil, `{ "schema": { "type": "int64" }, "payload": 4398046511104 }`, connectors.Int64Schema, int64(4398046511104)},
		{"int64 min", nil, `{ "schema": { "type": "int64" }, "payload": -9223372036854775808 }`, connectors.Int64Schema, int64(math.MinInt64)},
		{"float", nil, `{ "schema": { "type": "float" }, "payload": 12.34 }`, connectors.Float32Schema, float32(12.34)},
		{"double", nil, `{ "schema": { "type": "double" }, "payload": 12.34 }`, connectors.Float64Schema, 12.34},
		{"double NaN", nil, `{ "schema": { "type": "double" }, "payload": "NaN" }`, connectors.Float64Schema, math.NaN()},
		{"bytes", nil, `{ "schema": { "type": "bytes" }, "payload": "dGVzdC1zdHJpbmc=" }`, connectors.BytesSchema, []byte("test-string")},
		{"bytes unpadded", nil, `{ "schema": { "type": "bytes" }, "payload": "AQI" }`, connectors.BytesSchema, []byte{1, 2}},
		{"string", nil, `{ "schema": { "type": "string" }, "payload": "foo-bar-baz" }`, connectors.StringSchema, "foo-bar-baz"},
		{"string escapes", nil, `{ "schema": { "type": "string" }, "payload": "a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\ud800x" }`, connectors.StringSchema, "a\"\\/\b\f\n\r\té😀\uFFFDx"},
		{"array", nil, `{ "schema": { "type": "array", "items": { "type" : "int32" } }, "payload": [1, 2, 3] }`,
			&connectors.Schema{Type: connectors.Array, Items: connectors.Int32Schema}, []any{int32(1), int32(2), int32(3)}},
		{"string map", nil, `{ "schema": { "type": "map", "keys": { "type" : "string" }, "values": { "type" : "int32" } }, "payload": { "key1": 12, "key2": 15} }`,
			&connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.Int32Schema}, map[string]any{"key1": int32(12), "key2": int32(15)}},
		{"int map", nil, `{ "schema": { "type": "map", "keys": { "type" : "int32" }, "values": { "type" : "int32" } }, "payload": [ [1, 12], [2, 15] ] }`,
			&connectors.Schema{Type: connectors.Map, Keys: connectors.Int32Schema, Values: connectors.Int32Schema}, map[string]any{"1": int32(12), "2": int32(15)}},
		{"struct", nil, `{ "schema": { "type": "struct", "fields": [{ "field": "field1", "type": "boolean" }, { "field": "field2", "type": "string" }] }, "payload": { "field1": true, "field2": "string" } }`,
			structSchema, &connectors.StructValue{Schema: structSchema, Values: []any{true, "string"}}},
		{"struct missing optional", nil, `{ "schema": { "type": "struct", "fields": [{ "field":"optional", "type": "string", "optional": true }, {  "field": "required", "type": "string" }] }, "payload": { "required": "required" } }`,
			optReqSchema, &connectors.StructValue{Schema: optReqSchema, Values: []any{nil, "required"}}},
		{"struct duplicate key last wins", nil, `{"schema":{"type":"struct","fields":[{"field":"a","type":"int32"}]},"payload":{"a":null,"b":[1,{"x":2}],"a":7}}`,
			connectors.StructSchema("", connectors.Field{Name: "a", Schema: connectors.Int32Schema}),
			&connectors.StructValue{Schema: connectors.StructSchema("", connectors.Field{Name: "a", Schema: connectors.Int32Schema}), Values: []any{int32(7)}}},
		{"decimal", nil, `{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, "parameters": { "scale": "2" } }, "payload": "AJw=" }`,
			decimalSchema("2"), rat("1.56")},
		{"decimal optional null", nil, `{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, "optional": true, "parameters": { "scale": "2" } }, "payload": null }`,
			&connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1, Optional: true, Parameters: map[string]string{"scale": "2"}}, nil},
		{"decimal default", nil, `{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, "default": "AJw=", "parameters": { "scale": "2" } }, "payload": null }`,
			&connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1, Default: rat("1.56"), Parameters: map[string]string{"scale": "2"}}, rat("1.56")},
		{"decimal numeric", nil, `{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, "parameters": { "scale": "2" } }, "payload": 1.56 }`,
			decimalSchema("2"), rat("1.56")},
		{"decimal numeric long", nil, `{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, "parameters": { "scale": "17" } }, "payload": 1.23456789123456789 }`,
			decimalSchema("17"), rat("1.23456789123456789")},
		{"date", nil, `{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1 }, "payload": 10000 }`,
			dateSchema, time.UnixMilli(10000 * millisPerDay).UTC()},
		{"date default", nil, `{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1, "default": 0 }, "payload": null }`,
			&connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical, Version: 1, Default: time.Unix(0, 0).UTC()}, time.Unix(0, 0).UTC()},
		{"time", nil, `{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1 }, "payload": 14400000 }`,
			timeSchema, time.Date(1970, 1, 1, 4, 0, 0, 0, time.UTC)},
		{"timestamp", nil, `{ "schema": { "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1 }, "payload": 4000000000 }`,
			timestampSchema, time.UnixMilli(4000000000).UTC()},
		{"timestamp default", nil, `{ "schema": { "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,  "optional": true, "default": 42 }, "payload": null }`,
			&connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical, Version: 1, Optional: true, Default: time.UnixMilli(42).UTC()}, time.UnixMilli(42).UTC()},
		{"null schema null", nil, `{ "schema": null, "payload": null }`, nil, nil},
		{"null schema boolean", nil, `{ "schema": null, "payload": true }`, nil, true},
		{"null schema integer", nil, `{ "schema": null, "payload": 12 }`, nil, int64(12)},
		{"null schema float", nil, `{ "schema": null, "payload": 12.24 }`, nil, 12.24},
		{"null schema string", nil, `{ "schema": null, "payload": "a string" }`, nil, "a string"},
		{"null schema array", nil, `{ "schema": null, "payload": [1, "2", 3] }`, nil, []any{int64(1), "2", int64(3)}},
		{"null schema map", nil, `{ "schema": null, "payload": { "field1": 1, "field2": 2} }`, nil, map[string]any{"field1": int64(1), "field2": int64(2)}},
		{"schemaless true", map[string]string{"schemas.enable": "false"}, `true`, nil, true},
		{"schemaless empty", map[string]string{"schemas.enable": "false"}, ``, nil, nil},
		{"schemaless blank", map[string]string{"schemas.enable": "false"}, " \n\t", nil, nil},
		{"schemaless null", map[string]string{"schemas.enable": "false"}, `null`, nil, nil},
		{"schemaless object", map[string]string{"schemas.enable": "false"}, `{ "a": "", "b": null, "c": [1.5, -0, 1e3], "d": {"e": false}}`, nil,
			map[string]any{"a": "", "b": nil, "c": []any{1.5, int64(0), 1000.0}, "d": map[string]any{"e": false}}},
		{"schemaless envelope is plain data", map[string]string{"schemas.enable": "false"}, `{"schema":{"type":"int32"},"payload":1}`, nil,
			map[string]any{"schema": map[string]any{"type": "int32"}, "payload": int64(1)}},
	}
	for _, tc := range tests {
		for _, isKey := range []bool{false, true} {
			c := jsonConv(t, isKey, tc.props)
			s, v, err := c.ToConnect("topic", []byte(tc.in))
			if err != nil {
				t.Errorf("%s: ToConnect: %v", tc.name, err)
				continue
			}
			if !schemaEqual(s, tc.wantSchema) {
				t.Errorf("%s: schema\n got %+v\nwant %+v", tc.name, s, tc.wantSchema)
			}
			if !connectEqual(v, tc.want) {
				t.Errorf("%s: value\n got %#v\nwant %#v", tc.name, v, tc.want)
			}
		}
	}
}

func TestJSONTombstones(t *testing.T) {
	for _, props := range []map[string]string{nil, {"schemas.enable": "false"}} {
		c := jsonConv(t, false, props)
		if b, err := c.FromConnect("t", nil, nil); b != nil || err != nil {
			t.Errorf("%v: FromConnect(nil, nil) = %q, %v; want nil, nil", props, b, err)
		}
		if s, v, err := c.ToConnect("t", nil); s != nil || v != nil || err != nil {
			t.Errorf("%v: ToConnect(nil) = %v, %v, %v; want nils", props, s, v, err)
		}
	}
}

func TestJSONToConnectErrors(t *testing.T) {
	tests := []struct {
		name     string
		props    map[string]string
		in       string
		wantPath string
		wantMsg  string
	}{
		{"plain JSON with schemas", nil, `{"a":1}`, "", "set schemas.enable=false"},
		{"missing payload", nil, `{"schema":null}`, "", envelopeMsg},
		{"extra field", nil, `{"schema":null,"payload":1,"x":2}`, "", envelopeMsg},
		{"array envelope", nil, `[1,2]`, "", envelopeMsg},
		{"empty with schemas", nil, ``, "", envelopeMsg},
		{"syntax before envelope", nil, `{"schema":null,"payload":[1,}`, "", "invalid JSON at offset 28"},
		{"trailing garbage", map[string]string{"schemas.enable": "false"}, `{} x`, "", "after the JSON value"},
		{"unterminated", map[string]string{"schemas.enable": "false"}, `"abc`, "", "unterminated string"},
		{"control char", map[string]string{"schemas.enable": "false"}, "\"a\x01\"", "", "control character"},
		{"bad escape", map[string]string{"schemas.enable": "false"}, `"\x"`, "", "invalid escape"},
		{"bad literal", map[string]string{"schemas.enable": "false"}, `tru`, "", "invalid JSON"},
		{"big integer", map[string]string{"schemas.enable": "false"}, `[1, 99999999999999999999]`, "[1]", "out of range of int64"},
		{"too deep", map[string]string{"schemas.enable": "false"}, strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), "", "nesting deeper"},
		{"long number", map[string]string{"schemas.enable": "false"}, "1" + strings.Repeat("0", maxNumberLen), "", "longer than 1000"},
		{"huge exponent", nil, `{"schema":{"type":"int32"},"payload":1e999999999}`, "", "not an integer"},
		{"no type", nil, `{"schema":{"optional":true},"payload":1}`, "schema", `"type"`},
		{"unknown type", nil, `{"schema":{"type":"uint8"},"payload":1}`, "schema", `unknown schema type "uint8"`},
		{"array without items", nil, `{"schema":{"type":"array"},"payload":[]}`, "schema", `must specify "items"`},
		{"map without values", nil, `{"schema":{"type":"map","keys":{"type":"string"}},"payload":{}}`, "schema", `must specify "values"`},
		{"struct without fields", nil, `{"schema":{"type":"struct"},"payload":{}}`, "schema", `"fields" must be an array`},
		{"field without name", nil, `{"schema":{"type":"struct","fields":[{"type":"int32"}]},"payload":{}}`, "schema.fields[0]", `"field" name`},
		{"duplicate field", nil, `{"schema":{"type":"struct","fields":[{"type":"int32","field":"a"},{"type":"int32","field":"a"}]},"payload":{}}`, "schema.fields", `two fields named "a"`},
		{"non-string parameter", nil, `{"schema":{"type":"int32","parameters":{"a":1}},"payload":1}`, "schema.parameters", "string values"},
		{"decimal without scale", nil, `{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal"},"payload":1.5}`, "", "scale parameter not found"},
		{"decimal empty bytes", nil, `{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"1"}},"payload":""}`, "", "invalid bytes for Decimal"},
		{"date not int", nil, `{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Date"},"payload":1.5}`, "", "invalid Date"},
		{"time out of day", nil, `{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Time"},"payload":86400001}`, "", "invalid Time"},
		{"string for int32", nil, `{"schema":` + datagenSchemaJSON + `,"payload":{"task":"1","seq":1,"pad":""}}`, "task", "expected int32, got a string"},
		{"missing required", nil, `{"schema":` + datagenSchemaJSON + `,"payload":{"task":1,"pad":""}}`, "seq", "null value for a required int64"},
		{"int8 overflow", nil, `{"schema":{"type":"int8"},"payload":300}`, "", "out of range of int8"},
		{"fraction for int", nil, `{"schema":{"type":"int64"},"payload":1.5}`, "", "not an integer"},
		{"bad base64", nil, `{"schema":{"type":"bytes"},"payload":"!!"}`, "", "invalid base64"},
		{"nested path", nil, `{"schema":{"type":"struct","fields":[{"field":"tags","type":"array","items":{"type":"struct","fields":[{"field":"m","type":"map","keys":{"type":"string"},"values":{"type":"boolean"}}]}}]},` +
			`"payload":{"tags":[{"m":{}},{"m":{"k":1}}]}}`, `tags[1].m["k"]`, "expected boolean, got a number"},
		{"non-string map as object", nil, `{"schema":{"type":"map","keys":{"type":"int32"},"values":{"type":"int32"}},"payload":{"1":2}}`, "", "[key, value] pairs"},
		{"short map entry", nil, `{"schema":{"type":"map","keys":{"type":"int32"},"values":{"type":"int32"}},"payload":[[1]]}`, "[0]", "2 elements"},
		{"long map entry", nil, `{"schema":{"type":"map","keys":{"type":"int32"},"values":{"type":"int32"}},"payload":[[1,2,3]]}`, "[0]", "more than 2"},
		{"required null default", nil, `{"schema":{"type":"int32","default":null},"payload":1}`, "schema.default", "null value for a required int32"},
	}
	for _, tc := range tests {
		c := jsonConv(t, false, tc.props)
		s, v, err := c.ToConnect("topic", []byte(tc.in))
		if err == nil {
			t.Errorf("%s: ToConnect succeeded with %v, %#v", tc.name, s, v)
			continue
		}
		de := asDataError(t, err)
		if de.Path != tc.wantPath || !strings.Contains(de.Msg, tc.wantMsg) || de.Converter != "JsonConverter" {
			t.Errorf("%s: got path %q msg %q; want path %q msg containing %q", tc.name, de.Path, de.Msg, tc.wantPath, tc.wantMsg)
		}
	}
}

// An array schema without an items schema (Values.parseString of a mixed
// literal makes one) is written as Connect writes it: "items": null, the
// elements schemaless.
func TestJSONArrayWithoutItemsSchema(t *testing.T) {
	c := NewJSONConverter()
	if err := c.Configure(map[string]string{"schemas.enable": "true"}, false); err != nil {
		t.Fatal(err)
	}
	b, err := c.FromConnect("t", &connectors.Schema{Type: connectors.Array, Optional: true}, []any{int64(1), "a"})
	want := `{"schema":{"type":"array","items":null,"optional":true},"payload":[1,"a"]}`
	if err != nil || string(b) != want {
		t.Fatalf("FromConnect = %s, %v; want %s", b, err, want)
	}
}

func TestJSONFromConnectErrors(t *testing.T) {
	nested := connectors.StructSchema("outer",
		connectors.Field{Name: "addr", Schema: connectors.StructSchema("addr", connectors.Field{Name: "city", Schema: connectors.StringSchema})},
		connectors.Field{Name: "tags", Schema: &connectors.Schema{Type: connectors.Array, Items: connectors.StringSchema}},
		connectors.Field{Name: "attrs", Schema: &connectors.Schema{Type: connectors.Map, Keys: connectors.Int32Schema, Values: connectors.Int64Schema}},
	)
	addr := func(city any) *connectors.StructValue {
		return &connectors.StructValue{Schema: nested.Fields[0].Schema, Values: []any{city}}
	}
	tests := []struct {
		name     string
		schema   *connectors.Schema
		value    any
		wantPath string
		wantMsg  string
	}{
		{"string for int32", datagenSchema, &connectors.StructValue{Schema: datagenSchema, Values: []any{"1", int64(1), ""}}, "task", "expected int32 (int32 schema), got string"},
		{"int for int32", connectors.Int32Schema, 5, "", "expected int32 (int32 schema), got int"},
		{"missing required", datagenSchema, &connectors.StructValue{Schema: datagenSchema, Values: []any{int32(1), nil, ""}}, "seq", "null value for a required int64"},
		{"required nil", connectors.StringSchema, nil, "", "null value for a required string"},
		{"short struct", datagenSchema, &connectors.StructValue{Schema: datagenSchema, Values: []any{int32(1)}}, "", "1 values for 3 fields"},
		{"struct without schema", datagenSchema, &connectors.StructValue{Values: []any{}}, "", "no schema"},
		{"other struct schema", datagenSchema, &connectors.StructValue{Schema: connectTestStruct, Values: make([]any, 4)}, "", "differs"},
		{"nested field", nested, &connectors.StructValue{Schema: nested, Values: []any{addr(int32(1)), []any{}, map[string]any{}}}, "addr.city", "got int32"},
		{"array element", nested, &connectors.StructValue{Schema: nested, Values: []any{addr("x"), []any{"a", 2}, map[string]any{}}}, "tags[1]", "got int"},
		{"map value", nested, &connectors.StructValue{Schema: nested, Values: []any{addr("x"), []any{}, map[string]any{"1": "x"}}}, `attrs["1"]`, "got string"},
		{"map key", nested, &connectors.StructValue{Schema: nested, Values: []any{addr("x"), []any{}, map[string]any{"one": int64(1)}}}, `attrs["one"]`, `map key "one" is not a valid int32`},
		{"bytes", connectors.BytesSchema, "abc", "", "expected []byte"},
		{"decimal type", decimalSchema("2"), 1.5, "", "expected *big.Rat"},
		{"decimal scale", decimalSchema("2"), rat("1.555"), "", "does not fit the schema's scale 2"},
		{"decimal no scale", &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical}, rat("1"), "", "scale parameter not found"},
		{"date with time", dateSchema, time.Date(2020, 1, 1, 1, 0, 0, 0, time.UTC), "", "no time of day"},
		{"time with date", timeSchema, time.Date(2020, 1, 1, 1, 0, 0, 0, time.UTC), "", "1970-01-01"},
		{"timestamp type", timestampSchema, int64(5), "", "expected time.Time"},
		{"schemaless time", nil, time.Now(), "", "needs a schema"},
		{"schemaless unknown", nil, struct{}{}, "", "no Connect schema type"},
		{"unknown type", &connectors.Schema{Type: "uint8"}, 1, "", `unknown schema type "uint8"`},
	}
	for _, tc := range tests {
		c := jsonConv(t, false, nil)
		b, err := c.FromConnect("topic", tc.schema, tc.value)
		if err == nil {
			t.Errorf("%s: FromConnect succeeded with %s", tc.name, b)
			continue
		}
		de := asDataError(t, err)
		if de.Path != tc.wantPath || !strings.Contains(de.Msg, tc.wantMsg) {
			t.Errorf("%s: got path %q msg %q; want path %q msg containing %q", tc.name, de.Path, de.Msg, tc.wantPath, tc.wantMsg)
		}
	}
	de := &DataError{Converter: "JsonConverter", Path: "addr.city", Msg: "boom"}
	if got := de.Error(); got != "JsonConverter: field addr.city: boom" {
		t.Errorf("Error() = %q", got)
	}
}

// TestJSONRoundTrip writes every type and logical type and reads it back,
// with schemas, as key and as value, in both decimal formats.
func TestJSONRoundTrip(t *testing.T) {
	point := connectors.StructSchema("point",
		connectors.Field{Name: "x", Schema: connectors.Float64Schema},
		connectors.Field{Name: "label", Schema: connectors.StringSchema.Optionally()},
	)
	withDefault := &connectors.Schema{Type: connectors.Struct, Name: "d", Optional: true, Version: 2, Doc: "doc",
		Fields: []connectors.Field{{Name: "n", Schema: &connectors.Schema{Type: connectors.Int32, Default: int32(7)}}}}
	withDefault.Default = &connectors.StructValue{Schema: withDefault, Values: []any{int32(3)}}
	pointKeyMap := &connectors.Schema{Type: connectors.Map, Keys: point, Values: connectors.StringSchema}
	pointKey, _ := NewJSONConverter().keyString(point, &connectors.StructValue{Schema: point, Values: []any{1.5, nil}})

	cases := []struct {
		schema *connectors.Schema
		value  any
	}{
		{connectors.Int8Schema, int8(math.MinInt8)},
		{connectors.Int16Schema, int16(math.MaxInt16)},
		{connectors.Int32Schema, int32(math.MinInt32)},
		{connectors.Int64Schema, int64(math.MaxInt64)},
		{connectors.Float32Schema, float32(3.4028235e38)},
		{connectors.Float32Schema, float32(1e-45)},
		{connectors.Float64Schema, math.SmallestNonzeroFloat64},
		{connectors.Float64Schema, math.Inf(-1)},
		{connectors.Float64Schema, math.Copysign(0, -1)},
		{connectors.BooleanSchema, false},
		{connectors.StringSchema, "héllo \"wörld\"\n\u2028\x00"},
		{connectors.BytesSchema, []byte{0, 1, 254, 255}},
		{connectors.BytesSchema, []byte{}},
		{connectors.OptionalBytesSchema, nil},
		{&connectors.Schema{Type: connectors.Array, Items: connectors.StringSchema.Optionally()}, []any{"a", nil, "c"}},
		{&connectors.Schema{Type: connectors.Array, Items: point}, []any{&connectors.StructValue{Schema: point, Values: []any{1.5, nil}}}},
		{&connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.Int64Schema}, map[string]any{"a": int64(1), "": int64(-1)}},
		{&connectors.Schema{Type: connectors.Map, Keys: connectors.Int64Schema, Values: connectors.BooleanSchema}, map[string]any{"-5": true, "10": false}},
		{&connectors.Schema{Type: connectors.Map, Keys: connectors.Float64Schema, Values: connectors.BooleanSchema}, map[string]any{"1.5": true, "NaN": false, "1.0E10": true}},
		{&connectors.Schema{Type: connectors.Map, Keys: connectors.BytesSchema, Values: connectors.BooleanSchema}, map[string]any{"AAE=": true}},
		{&connectors.Schema{Type: connectors.Map, Keys: dateSchema, Values: connectors.BooleanSchema}, map[string]any{"19000": true}},
		{pointKeyMap, map[string]any{pointKey: "p"}},
		{point, &connectors.StructValue{Schema: point, Values: []any{-2.25, "here"}}},
		{withDefault, &connectors.StructValue{Schema: withDefault, Values: []any{int32(1)}}},
		{datagenSchema, &connectors.StructValue{Schema: datagenSchema, Values: []any{int32(3), int64(1 << 40), strings.Repeat("x", 100)}}},
		{decimalSchema("2"), rat("-123456789012345678901234567890.12")},
		{decimalSchema("0"), rat("128")},
		{decimalSchema("-2"), rat("1200")},
		{decimalSchema("3"), rat("0")},
		{dateSchema, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)},
		{dateSchema, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{timeSchema, time.Date(1970, 1, 1, 23, 59, 59, 999e6, time.UTC)},
		{timestampSchema, time.Date(2024, 5, 6, 7, 8, 9, 123e6, time.UTC)},
		{timestampSchema, time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, format := range []string{"BASE64", "NUMERIC"} {
		for _, isKey := range []bool{false, true} {
			c := jsonConv(t, isKey, map[string]string{"decimal.format": format})
			for _, tc := range cases {
				b, err := c.FromConnect("t", tc.schema, tc.value)
				if err != nil {
					t.Errorf("%s: FromConnect(%+v, %#v): %v", format, tc.schema, tc.value, err)
					continue
				}
				s, v, err := c.ToConnect("t", b)
				if err != nil {
					t.Errorf("%s: ToConnect(%s): %v", format, b, err)
					continue
				}
				if !schemaEqual(s, tc.schema) || !connectEqual(v, tc.value) {
					t.Errorf("%s: %s read back as\n%+v %#v\nwant %+v %#v", format, b, s, v, tc.schema, tc.value)
				}
				again, err := c.FromConnect("t", s, v)
				if err != nil || !bytes.Equal(again, b) {
					t.Errorf("%s: rewrite of %s gave %s, %v", format, b, again, err)
				}
			}
		}
	}
}

func TestJSONConfigure(t *testing.T) {
	bad := []map[string]string{
		{"schemas.enable": "yes"},
		{"decimal.format": "HEX"},
		{"schemas.cache.size": "many"},
		{"replace.null.with.default": "1"},
	}
	for _, props := range bad {
		err := NewJSONConverter().Configure(props, false)
		var ce *connectors.ConfigError
		if err == nil || !asConfigError(err, &ce) {
			t.Errorf("Configure(%v) = %v; want a *connectors.ConfigError", props, err)
			continue
		}
		for k := range props {
			if len(ce.Errors[k]) == 0 {
				t.Errorf("Configure(%v): error %v does not name %s", props, err, k)
			}
		}
	}
	c := jsonConv(t, false, map[string]string{"schemas.enable": "FALSE", "decimal.format": "Numeric", "schemas.cache.size": "5", "unknown.key": "x"})
	if c.schemasEnabled || !c.numericDecimal || c.fromCache.max != 5 {
		t.Errorf("config not applied: %+v", c)
	}
}

// TestJSONSchemaCache shows that the envelope's schema part is rendered once
// per *Schema and that the cache stays within schemas.cache.size.
func TestJSONSchemaCache(t *testing.T) {
	c := jsonConv(t, false, map[string]string{"schemas.cache.size": "2"})
	s := &connectors.Schema{Type: connectors.String, Doc: "first"}
	first, err := c.FromConnect("t", s, "v")
	if err != nil {
		t.Fatal(err)
	}
	// Breaking the immutability contract reveals the cache: the rendering
	// made before the change is reused.
	s.Doc = "second"
	second, _ := c.FromConnect("t", s, "v")
	if !bytes.Equal(first, second) || !bytes.Contains(second, []byte(`"doc":"first"`)) {
		t.Errorf("schema re-rendered: %s then %s", first, second)
	}
	for i := range 10 {
		if _, err := c.FromConnect("t", &connectors.Schema{Type: connectors.Int32, Version: i + 1}, int32(1)); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.fromCache.len(); n > 2 {
		t.Errorf("cache holds %d schemas, limit 2", n)
	}

	off := jsonConv(t, false, map[string]string{"schemas.cache.size": "0"})
	if _, err := off.FromConnect("t", s, "v"); err != nil {
		t.Fatal(err)
	}
	if n := off.fromCache.len(); n != 0 {
		t.Errorf("disabled cache holds %d", n)
	}

	in := []byte(`{"schema":` + datagenSchemaJSON + `,"payload":{"task":1,"seq":2,"pad":""}}`)
	s1, _, err := c.ToConnect("t", in)
	if err != nil {
		t.Fatal(err)
	}
	s2, _, _ := c.ToConnect("t", in)
	if s1 != s2 {
		t.Error("the same schema bytes gave two *Schema")
	}
	// Without a cache every envelope's schema is parsed anew, the last
	// one read included.
	o1, _, err := off.ToConnect("t", in)
	if err != nil {
		t.Fatal(err)
	}
	if o2, _, _ := off.ToConnect("t", in); o1 == o2 {
		t.Error("schemas.cache.size=0, yet the same schema bytes gave one *Schema twice")
	}
}

// TestJSONEnvelopeInOrderAgreesWithAnyOrder: the one-pass reading of an
// envelope in JsonConverter's own order must give what the general walk
// gives, errors included, the first time a schema is read and again when
// its bytes are the last schema's.
func TestJSONEnvelopeInOrderAgreesWithAnyOrder(t *testing.T) {
	inputs := append([]string{
		`{"schema":{"type":"string","optional":false},"payload":"line"}`,
		` { "schema" : {"type":"string"} , "payload" : "a\"b\u00e9" } `,
		`{"schema":{"type":"string"},"payload":"x","payload":"y"}`,
		`{"schema":{"type":"string"},"payload":"x","extra":1}`,
		`{"schema":{"type":"string"},"payload":"x"`,
		`{"schema":{"type":"string"},"payload":"x"} 1`,
		`{"schema":{"type":"string"},"payload":"x"}}`,
		`{"schema":{"type":"int32"},"payload":"x"}`,
		`{"schema":{"type":"int32"},"payload":7,"schema":{"type":"string"}}`,
		`{"schema":{"type":"strin"},"payload":"x"}`,
		`{"schema":{"type":"string"}}`,
		`{"schema":{"type":"string"},"payload":}`,
		`{"schema":{"type":"string"} ,"payload":"x"}`,
		`{"schema":{"type":"string"}x,"payload":"x"}`,
		`{"schema":{"type":"string"},"payload":"x"}`,
		`{"schema":{"type":"int64"},"payload":12}`,
		`{"schema":{"type":"int64"},"payload":123}`,
		`{"schema":null,"payload":{"a":1}}`,
		`{"schema":1,"payload":1}`,
		`{"schema":12,"payload":1}`,
		`{"\u0073chema":{"type":"string"},"payload":"escaped key"}`,
		`{"schema":{"type":"string"},"payload":"x"}`,
		`{"schema":{"type":"string"},"payload":1}`,
		`{"schema":{"type":"string"},"payload":null}`,
		`{"schema":{"type":"string"},"payload":"x"`,
		`{"schema":{"type":"string"},"payload":"a\\u00e9\u0001"}`,
		`{"schema":{"type":"string"},"payload": "x"}`,
		`{"schema":{"type":"string"},"payload": "y"}`,
		`{"schema":{"type":"string"},"payload":"x"}`,
		`{"schema":{"type":"string","optional":true},"payload":null}`,
		`{"schema":{"type":"string","optional":true},"payload":"z"}`,
		`{"schema":{"type":"string"},"payload":"x"}`,
		`{"schema":{"type":"int32"},"payload":1}`,
		`{"schema":{"type":"int64"},"payload":1}`,
		`{"schema":{"type":"int32"},"payload":1}`,
	}, fuzzSeeds...)
	// One converter reading them all, one after another: each input
	// meets the envelope head the one before left (the same head with
	// another payload, or with whatever follows it), and a head read
	// twice in a row is taken as the same bytes.
	seq := jsonConv(t, false, nil)
	prev := []byte(nil)
	for i := range 2 * len(inputs) {
		in := []byte(inputs[i/2])
		if i%2 == 1 && i/2+1 < len(inputs) {
			in = []byte(inputs[i/2+1])
		}
		s, v, err := seq.ToConnect("t", in)
		ws, wv, werr := anyOrder(seq, in)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() ||
			!schemaEqual(s, ws) || !connectEqual(v, wv) {
			t.Errorf("%q after %q: %+v %#v (%v), the general walk's %+v %#v (%v)", in, prev, s, v, err, ws, wv, werr)
		}
		prev = in
	}
	for _, in := range inputs {
		c := jsonConv(t, false, nil)
		for pass := range 2 {
			s, v, err := c.ToConnect("t", []byte(in))
			ws, wv, werr := anyOrder(c, []byte(in))
			if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
				t.Errorf("%q, pass %d: error %v, the general walk's %v", in, pass, err, werr)
				continue
			}
			if !schemaEqual(s, ws) || !connectEqual(v, wv) {
				t.Errorf("%q, pass %d: %+v %#v, the general walk's %+v %#v", in, pass, s, v, ws, wv)
			}
		}
	}
}

// anyOrder is ToConnect with schemas as it reads an envelope without the
// one-pass reading.
func anyOrder(c *JSONConverter, data []byte) (*connectors.Schema, any, error) {
	d := decoder{c: c, data: data}
	if d.peek() != '{' {
		return c.ToConnect("t", data)
	}
	s, v, err := d.envelopeAnyOrder()
	if err != nil {
		return nil, nil, dataErr("JsonConverter", err)
	}
	return s, v, nil
}

// TestJSONConcurrent runs conversions from many goroutines, for -race.
func TestJSONConcurrent(t *testing.T) {
	c := jsonConv(t, false, map[string]string{"schemas.cache.size": "3"})
	done := make(chan error)
	for g := range 8 {
		go func() {
			for i := range 200 {
				s := datagenSchema
				if i%3 == 0 {
					s = &connectors.Schema{Type: connectors.Int32, Version: g*1000 + i + 1}
				}
				var v any = &connectors.StructValue{Schema: datagenSchema, Values: []any{int32(g), int64(i), "p"}}
				if s != datagenSchema {
					v = int32(i)
				}
				b, err := c.FromConnect("t", s, v)
				if err == nil {
					_, _, err = c.ToConnect("t", b)
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestJSONStringMatchesEncodingJSON compares the escaping with encoding/json
// (HTML escaping off) on strings where the two agree by design.
func TestJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\s/", "\b\f\n\r\t", "<a href='x'>&amp;</a>", "日本語 ✓ 😀", "\x7f", strings.Repeat("ab\"", 50)} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(buf.String(), "\n")
		if got := string(appendJSONString(nil, s)); got != want {
			t.Errorf("%q: got %s, encoding/json %s", s, got, want)
		}
	}
}

// Field names are worked out once per struct schema: schemas that take
// turns (a task writing two tables, a struct nested in another) each keep
// their own names, with the caches on and off.
func TestJSONStructSchemasTakingTurns(t *testing.T) {
	inner := connectors.StructSchema("inner", connectors.Field{Name: "b\"q", Schema: connectors.Int32Schema})
	outer := connectors.StructSchema("outer",
		connectors.Field{Name: "a", Schema: connectors.StringSchema}, connectors.Field{Name: "in", Schema: inner})
	other := connectors.StructSchema("other", connectors.Field{Name: "x", Schema: connectors.Int32Schema},
		connectors.Field{Name: "y", Schema: connectors.Int32Schema})
	outerValue := &connectors.StructValue{Schema: outer, Values: []any{"v", &connectors.StructValue{Schema: inner, Values: []any{int32(1)}}}}
	otherValue := &connectors.StructValue{Schema: other, Values: []any{int32(2), int32(3)}}
	for _, size := range []string{"1000", "0"} {
		c := jsonConv(t, false, map[string]string{"schemas.enable": "false", "schemas.cache.size": size})
		for range 3 {
			if b, err := c.FromConnect("t", outer, outerValue); err != nil || string(b) != `{"a":"v","in":{"b\"q":1}}` {
				t.Fatalf("cache size %s: outer %s, %v", size, b, err)
			}
			if b, err := c.FromConnect("t", other, otherValue); err != nil || string(b) != `{"x":2,"y":3}` {
				t.Fatalf("cache size %s: other %s, %v", size, b, err)
			}
		}
	}
}

// jsonPlainPrefix must stop exactly at the first byte that is not written
// as it is: every byte value, at every place in a word, among plain bytes
// and before or after other special bytes (where a borrow could hide one
// or make one up), after a plain word; and a string of whole plain words
// is plain to its last word, its tail left to the caller.
func TestJSONPlainPrefix(t *testing.T) {
	special := func(c byte) bool { return c >= utf8.RuneSelf || !jsonSafe[c] }
	reference := func(w []byte) int {
		for i := range len(w) / 8 * 8 {
			if special(w[i]) {
				return i
			}
		}
		return len(w) / 8 * 8
	}
	for c := range 256 {
		for pos := range 8 {
			for _, fill := range []byte{'a', ' ', '~', 0x1f, 0x00, 0x7f, 0x80, 0xff, '"', '\\', '!', '#', '[', ']'} {
				for _, fillFrom := range []int{0, pos + 1} {
					w := append([]byte("plain..."), bytes.Repeat([]byte{'p'}, 8)...)
					for i := 8 + fillFrom; i < 16; i++ {
						w[i] = fill
					}
					w[8+pos] = byte(c)
					full := append(w, "tail"...)
					if got, want := jsonPlainPrefix(string(full)), reference(full); got != want {
						t.Fatalf("%q: got %d plain bytes, want %d", full, got, want)
					}
					if got, want := jsonPlainPrefix(full), reference(full); got != want {
						t.Fatalf("%q as bytes: got %d plain bytes, want %d", full, got, want)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab \"\\\x00\x1f\x20\x7f\x80\xc3\xa9\xff~")
	for range 200000 {
		w := make([]byte, rng.IntN(40))
		for i := range w {
			if rng.IntN(4) == 0 {
				w[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				w[i] = 'a' + byte(rng.IntN(26))
			}
		}
		if got, want := jsonPlainPrefix(w), reference(w); got != want {
			t.Fatalf("%q: got %d plain bytes, want %d", w, got, want)
		}
	}
}

// jsonPlainASCII must fail a string with any one byte that is not read as it
// is (a backslash, a control character, a byte of 0x80 or more), wherever it
// stands: in the sixteen-byte loop's first or second word, in the eight-byte
// word after it, in the overlapping last word or in a short string's bytes,
// next to other such bytes (whose borrows could hide it) or alone; and pass
// every string of only plain bytes. A quote is not its business: the caller
// cut the string at the first one.
func TestJSONPlainASCII(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '\\' }
	reference := func(b []byte) bool {
		for _, c := range b {
			if !plain(c) {
				return false
			}
		}
		return true
	}
	for n := range 41 {
		for pos := range n {
			for c := range 256 {
				for _, fill := range []byte{'a', ' ', '~', '"', 0x1f, 0x00, 0x80, '\\'} {
					b := bytes.Repeat([]byte{'a'}, n)
					if pos > 0 {
						b[pos-1] = fill
					}
					b[pos] = byte(c)
					if got, want := jsonPlainASCII(b), reference(b); got != want {
						t.Fatalf("%q: plain %v, want %v", b, got, want)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("ab \"\\\x00\x1f\x20\x7f\x80\xc3\xa9\xff~")
	for range 200000 {
		w := make([]byte, rng.IntN(60))
		for i := range w {
			if rng.IntN(16) == 0 {
				w[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				w[i] = ' ' + byte(rng.IntN(95))
			}
		}
		if got, want := jsonPlainASCII(w), reference(w); got != want {
			t.Fatalf("%q: plain %v, want %v", w, got, want)
		}
	}
}

// Strings longer than a window are escaped as their bytes one at a time: a
// special byte anywhere in a long plain string is escaped where it is.
func TestJSONStringLongWithOneSpecialByte(t *testing.T) {
	for c := range 256 {
		one := string(appendJSONString(nil, string([]byte{byte(c)})))
		escaped := one[1 : len(one)-1]
		for pos := range 19 {
			in := []byte(strings.Repeat("a", 19))
			in[pos] = byte(c)
			want := `"` + strings.Repeat("a", pos) + escaped + strings.Repeat("a", 18-pos) + `"`
			if got := string(appendJSONString(nil, string(in))); got != want {
				t.Fatalf("%q: got %s, want %s", in, got, want)
			}
		}
	}
}

func TestJSONDecimalScaleBounded(t *testing.T) {
	c := jsonConv(t, false, nil)
	in := `{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"999999999"}},"payload":"AQ=="}`
	done := make(chan error, 1)
	go func() { _, _, err := c.ToConnect("t", []byte(in)); done <- err }()
	err := testutil.Receive(t, done, 10*time.Second, "a huge Decimal scale is still being computed after 10s")
	if err == nil || !strings.Contains(err.Error(), "beyond") {
		t.Errorf("huge scale gave %v", err)
	}
}

// A value that outgrows the size of the one before comes back in a buffer
// of about its own size, not in the one append doubled: the bytes stay in
// memory until Kafka acknowledges the record, and buffer.memory bounds
// them by their length.
func TestJSONFromConnectHoldsNoSpareBuffer(t *testing.T) {
	c := NewJSONConverter()
	if err := c.Configure(map[string]string{"schemas.enable": "false"}, false); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, 100, 5000, 20000, 50, 70000} {
		b, err := c.FromConnect("t", connectors.StringSchema, strings.Repeat("x", n))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != n+2 {
			t.Fatalf("len %d, want %d", len(b), n+2)
		}
		if spare := cap(b) - len(b); spare > 64 && spare > len(b)/8 {
			t.Errorf("a %d-byte value in a buffer of %d bytes", len(b), cap(b))
		}
	}
}

// A value's buffer is cut to its length, up to the allocator's size class
// (an eighth at most above 128 bytes, 16 bytes below), also when values of
// one size repeat: the bytes of every record in flight count against
// buffer.memory by their length.
func TestJSONFromConnectBufferFitsValue(t *testing.T) {
	for _, props := range []map[string]string{nil, {"schemas.enable": "false"}} {
		c := jsonConv(t, false, props)
		for _, n := range []int{0, 5, 100, 100, 100, 3000, 3000, 100, 40000, 40000, 100, 100} {
			b, err := c.FromConnect("t", datagenSchema, &connectors.StructValue{Schema: datagenSchema, Values: []any{int32(1), int64(n), strings.Repeat("x", n)}})
			if err != nil {
				t.Fatal(err)
			}
			if spare := cap(b) - len(b); spare > 16 && spare > len(b)/8 {
				t.Errorf("%v: a %d-byte value in a buffer of %d bytes", props, len(b), cap(b))
			}
		}
	}
}

// Each value has a buffer of its own, not one shared with the next value
// or with a concurrent call: kgo holds a record's bytes until it is
// acknowledged.
func TestJSONFromConnectBuffersAreOwn(t *testing.T) {
	c := jsonConv(t, false, map[string]string{"schemas.enable": "false"})
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			var kept [][]byte
			var want []string
			for i := range 500 {
				s := fmt.Sprintf("%d-%d-%s", g, i, strings.Repeat("v", i%50))
				b, err := c.FromConnect("t", connectors.StringSchema, s)
				if err != nil {
					done <- err
					return
				}
				kept = append(kept, b)
				want = append(want, `"`+s+`"`)
			}
			for i := range kept {
				if string(kept[i]) != want[i] {
					done <- fmt.Errorf("value %d is %s, want %s", i, kept[i], want[i])
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
