package converters

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

func TestNewByEveryName(t *testing.T) {
	want := map[string]string{
		"org.apache.kafka.connect.json.JsonConverter": "*converters.JSONConverter",
		"JsonConverter": "*converters.JSONConverter",
		"Json":          "*converters.JSONConverter",
		"org.apache.kafka.connect.storage.StringConverter": "*converters.StringConverter",
		"StringConverter": "*converters.StringConverter",
		" String ":        "*converters.StringConverter",
		"org.apache.kafka.connect.converters.ByteArrayConverter": "*converters.ByteArrayConverter",
		"ByteArray": "*converters.ByteArrayConverter",
		"org.apache.kafka.connect.converters.IntegerConverter": "IntegerConverter",
		"LongConverter":  "LongConverter",
		"Short":          "ShortConverter",
		"FloatConverter": "FloatConverter",
		"org.apache.kafka.connect.converters.DoubleConverter":  "DoubleConverter",
		"org.apache.kafka.connect.converters.BooleanConverter": "*converters.BooleanConverter",
		"io.confluent.connect.avro.AvroConverter":              "*converters.AvroConverter",
		"AvroConverter": "*converters.AvroConverter",
		"Avro":          "*converters.AvroConverter",
	}
	for name, typ := range want {
		c, err := New(name)
		if err != nil {
			t.Errorf("New(%q): %v", name, err)
			continue
		}
		got := reflect.TypeOf(c).String()
		if nc, ok := c.(*NumberConverter); ok {
			got = nc.name()
		}
		if got != typ {
			t.Errorf("New(%q) = %s, want %s", name, got, typ)
		}
	}
	a, _ := New("Json")
	b, _ := New("Json")
	if a == b {
		t.Error("New returned a shared instance")
	}
}

func TestNewUnknownListsKnown(t *testing.T) {
	for _, name := range []string{"Foo", "", "jsonconverter", "org.apache.kafka.connect.json.JsonConverterX"} {
		_, err := New(name)
		var ue *UnknownConverterError
		if !errors.As(err, &ue) {
			t.Fatalf("New(%q) = %v, want *UnknownConverterError", name, err)
		}
		for _, class := range Classes() {
			if !strings.Contains(err.Error(), class) {
				t.Errorf("New(%q) error %q does not list %s", name, err, class)
			}
		}
	}
}

func TestClasses(t *testing.T) {
	classes := Classes()
	if len(classes) != 12 || classes[0] != DefaultClass {
		t.Fatalf("Classes() = %v", classes)
	}
	for _, c := range classes {
		if _, err := New(c); err != nil {
			t.Errorf("class %s does not resolve: %v", c, err)
		}
	}
	classes[0] = "mutated"
	if Classes()[0] != DefaultClass {
		t.Error("Classes returned the registry's own slice")
	}
}

func TestResolvePrecedence(t *testing.T) {
	tests := []struct {
		name         string
		connector    map[string]string
		worker       map[string]string
		isKey        bool
		wantType     string
		wantSchemas  bool // JsonConverter's schemas.enable, when wantType is JSON
		wantEncoding bool
	}{
		{"default", nil, nil, false, "*converters.JSONConverter", true, false},
		{"default takes worker props", nil, map[string]string{"value.converter.schemas.enable": "false"}, false, "*converters.JSONConverter", false, false},
		{"worker class", nil, map[string]string{"value.converter": "StringConverter"}, false, "*converters.StringConverter", false, false},
		{"worker key class", nil, map[string]string{"key.converter": "StringConverter", "value.converter": "ByteArrayConverter"}, true, "*converters.StringConverter", false, false},
		{"connector over worker", map[string]string{"value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"},
			map[string]string{"value.converter": "StringConverter"}, false, "*converters.ByteArrayConverter", false, false},
		{"connector props with connector class", map[string]string{"value.converter": "JsonConverter", "value.converter.schemas.enable": "false"},
			map[string]string{"value.converter": "JsonConverter", "value.converter.schemas.enable": "true"}, false, "*converters.JSONConverter", false, false},
		{"worker props not used for connector class", map[string]string{"value.converter": "JsonConverter"},
			map[string]string{"value.converter.schemas.enable": "false"}, false, "*converters.JSONConverter", true, false},
		{"connector props without class are ignored, as in Connect", map[string]string{"value.converter.schemas.enable": "false"},
			map[string]string{"value.converter": "JsonConverter"}, false, "*converters.JSONConverter", true, false},
		{"key props do not leak into value", map[string]string{"value.converter": "JsonConverter", "key.converter.schemas.enable": "false"},
			nil, false, "*converters.JSONConverter", true, false},
		{"value props do not leak into key", map[string]string{"key.converter": "JsonConverter", "value.converter.schemas.enable": "false"},
			nil, true, "*converters.JSONConverter", true, false},
	}
	for _, tc := range tests {
		c, err := Resolve(tc.connector, tc.worker, tc.isKey)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := reflect.TypeOf(c).String(); got != tc.wantType {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.wantType)
			continue
		}
		if jc, ok := c.(*JSONConverter); ok && jc.schemasEnabled != tc.wantSchemas {
			t.Errorf("%s: schemas.enable = %v, want %v", tc.name, jc.schemasEnabled, tc.wantSchemas)
		}
	}
}

func TestResolveErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name      string
		connector map[string]string
		worker    map[string]string
		isKey     bool
		want      string
	}{
		{"unknown connector class", map[string]string{"value.converter": "Foo"}, nil, false,
			`value.converter: unknown converter class "Foo"; known: org.apache.kafka.connect.json.JsonConverter, `},
		{"unknown worker key class", nil, map[string]string{"key.converter": "Bar"}, true, `key.converter: unknown converter class "Bar"`},
		{"bad prop", map[string]string{"value.converter": "Json", "value.converter.schemas.enable": "maybe"}, nil, false, "value.converter.schemas.enable"},
		{"bad encoding", map[string]string{"key.converter": "String", "key.converter.converter.encoding": "UTF-16"}, nil, true, "key.converter.converter.encoding"},
		{"registry converter without its registry", map[string]string{"value.converter": "Avro"}, nil, false, "value.converter.schema.registry.url"},
		{"registry converter key unknown", map[string]string{"key.converter": "Protobuf", "key.converter.schema.registry.url": "http://127.0.0.1:1", "key.converter.colour": "red"}, nil, true, "key.converter.colour"},
		{"registry converter key at a default only", map[string]string{"value.converter": "JsonSchema", "value.converter.schema.registry.url": "http://127.0.0.1:1", "value.converter.normalize.schemas": "true"}, nil, false, "value.converter.normalize.schemas"},
	}
	for _, tc := range tests {
		_, err := Resolve(tc.connector, tc.worker, tc.isKey)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want it to contain %q", tc.name, err, tc.want)
		}
	}
	_, err := Resolve(map[string]string{"value.converter": "Json", "value.converter.decimal.format": "HEX"}, nil, false)
	var ce *connectors.ConfigError
	if !errors.As(err, &ce) || len(ce.Errors["value.converter.decimal.format"]) != 1 {
		t.Errorf("want a ConfigError keyed by the full property, got %#v", err)
	}
}

// TestResolveKeyAndValue converts the same record with the converters a
// connector would get for its key and its value.
func TestResolveKeyAndValue(t *testing.T) {
	cfg := map[string]string{
		"key.converter":                  "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
	}
	kc, err := Resolve(cfg, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := Resolve(cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	k, err := kc.FromConnect("t", connectors.StringSchema, "dg-0")
	if err != nil || string(k) != "dg-0" {
		t.Errorf("key = %q, %v", k, err)
	}
	v, err := vc.FromConnect("t", datagenSchema, &connectors.StructValue{Schema: datagenSchema, Values: []any{int32(0), int64(7), "ab"}})
	if err != nil || string(v) != `{"task":0,"seq":7,"pad":"ab"}` {
		t.Errorf("value = %s, %v", v, err)
	}
}
