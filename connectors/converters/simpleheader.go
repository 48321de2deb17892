package converters

import (
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// SimpleHeaderConverterClass is Kafka Connect's default header converter.
const SimpleHeaderConverterClass = "org.apache.kafka.connect.storage.SimpleHeaderConverter"

// SimpleHeaderConverter mirrors org.apache.kafka.connect.storage.SimpleHeaderConverter,
// the header converter a worker uses when none is named: a header's value
// is written as text (ValueString, in UTF-8) and read back by inferring its
// schema from the text (ParseValue), so "42" reads as the int8 42 and
// "[1,2]" as an array of int8.
//
// Connect decodes the bytes as UTF-8, replacing malformed sequences with
// U+FFFD. Sluice keeps them as they are in the Go string, as its
// StringConverter does, so that a header of arbitrary bytes that reads as a
// string (most do) is written back byte for byte. A header that nests
// arrays and maps too deeply to be parsed (Connect's StackOverflowError)
// reads, as in Connect, as its bytes (schema bytes).
//
// It takes no configuration; it is a header converter only, not a key or
// value converter (New refuses it), as in Connect.
type SimpleHeaderConverter struct{}

// Configure accepts and ignores props: the converter has no settings.
func (*SimpleHeaderConverter) Configure(map[string]string) error { return nil }

// FromConnectHeader writes value as ValueString does; a null value is a
// null header (nil).
func (*SimpleHeaderConverter) FromConnectHeader(_, _ string, schema *connectors.Schema, value any) ([]byte, error) {
	if isNullValue(value) {
		return nil, nil
	}
	s, err := ValueString(schema, value)
	if err != nil {
		return nil, &DataError{Converter: "SimpleHeaderConverter", Msg: err.Error()}
	}
	return []byte(s), nil
}

// ToConnectHeader reads a header as ParseValue does; a null header is null
// (nil schema and value).
func (*SimpleHeaderConverter) ToConnectHeader(_, _ string, data []byte) (*connectors.Schema, any, error) {
	if data == nil {
		return nil, nil, nil
	}
	schema, value, err := ParseValue(string(data))
	if err != nil {
		return connectors.BytesSchema, data, nil
	}
	return schema, value, nil
}

// isNullValue reports whether v is Java's null: nil, or a nil slice, map
// or pointer of the Go types Connect values take.
func isNullValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []byte:
		return x == nil
	case []any:
		return x == nil
	case map[string]any:
		return x == nil
	case *connectors.StructValue:
		return x == nil
	}
	return false
}

// isSimpleHeaderClass reports whether class names SimpleHeaderConverter as
// Connect accepts it: its class name, simple name or alias.
func isSimpleHeaderClass(class string) bool {
	switch strings.TrimSpace(class) {
	case SimpleHeaderConverterClass, "SimpleHeaderConverter", "SimpleHeader":
		return true
	}
	return false
}

// HeaderClasses lists the canonical class names of the header converters
// (for the connector-plugins endpoint's header_converter plugins): every
// converter of Classes that Connect also uses for headers (not the registry
// converters, see recordOnly), and SimpleHeaderConverter.
func HeaderClasses() []string {
	var out []string
	for _, c := range Classes() {
		if !recordOnly[c] {
			out = append(out, c)
		}
	}
	return append(out, SimpleHeaderConverterClass)
}
