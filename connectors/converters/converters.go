// Package converters turns Connect data (a *connectors.Schema and its Go
// value) into the bytes of a Kafka record key or value, and back.
//
// Every converter mirrors the Kafka Connect class of the same name, byte for
// byte where Connect's output is deterministic, so that a topic written by
// Kafka Connect can be read by Sluice and the other way round:
//
//	org.apache.kafka.connect.json.JsonConverter
//	org.apache.kafka.connect.storage.StringConverter
//	org.apache.kafka.connect.converters.ByteArrayConverter
//	org.apache.kafka.connect.converters.{Integer,Long,Short,Float,Double,Boolean}Converter
//
// and, for headers only, org.apache.kafka.connect.storage.SimpleHeaderConverter
// (the default header converter), with the port of Connect's Values it
// rests on (ParseValue, ValueString).
//
// Converters are configured with Connect's keys and are safe for concurrent
// use once configured. Schemas handed to FromConnect and returned by
// ToConnect are treated as immutable, as Connect treats them: JsonConverter
// caches by schema identity, so a *connectors.Schema must not be modified
// after it has been converted once.
package converters

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// Converter converts between Connect data (schema + Go value, see
// connectors/schema.go for the Go value of each type) and bytes.
type Converter interface {
	// Configure receives the converter's own props (prefix already
	// stripped, e.g. "schemas.enable") and whether it converts keys.
	Configure(props map[string]string, isKey bool) error
	FromConnect(topic string, schema *connectors.Schema, value any) ([]byte, error)
	ToConnect(topic string, data []byte) (*connectors.Schema, any, error)
}

type entry struct {
	class string
	make  func() Converter
}

// registry is in the order Classes reports; the JSON converter comes first
// because it is the default.
var registry = []entry{
	{"org.apache.kafka.connect.json.JsonConverter", func() Converter { return NewJSONConverter() }},
	{"org.apache.kafka.connect.storage.StringConverter", func() Converter { return &StringConverter{} }},
	{"org.apache.kafka.connect.converters.ByteArrayConverter", func() Converter { return &ByteArrayConverter{} }},
	{"org.apache.kafka.connect.converters.IntegerConverter", func() Converter { return &NumberConverter{kind: connectors.Int32} }},
	{"org.apache.kafka.connect.converters.LongConverter", func() Converter { return &NumberConverter{kind: connectors.Int64} }},
	{"org.apache.kafka.connect.converters.ShortConverter", func() Converter { return &NumberConverter{kind: connectors.Int16} }},
	{"org.apache.kafka.connect.converters.FloatConverter", func() Converter { return &NumberConverter{kind: connectors.Float32} }},
	{"org.apache.kafka.connect.converters.DoubleConverter", func() Converter { return &NumberConverter{kind: connectors.Float64} }},
	{"org.apache.kafka.connect.converters.BooleanConverter", func() Converter { return &BooleanConverter{} }},
	{AvroConverterClass, func() Converter { return &AvroConverter{} }},
	{JSONSchemaConverterClass, func() Converter { return &JSONSchemaConverter{} }},
	{ProtobufConverterClass, func() Converter { return &ProtobufConverter{} }},
}

// byName maps every accepted spelling to its registry index: the class name,
// the simple name (JsonConverter) and, as Connect's plugin aliases do, the
// simple name without its "Converter" suffix (Json).
var byName = func() map[string]int {
	m := map[string]int{}
	for i, e := range registry {
		simple := e.class[strings.LastIndexByte(e.class, '.')+1:]
		m[e.class] = i
		m[simple] = i
		m[strings.TrimSuffix(simple, "Converter")] = i
	}
	return m
}()

// UnknownConverterError says a converter class matched none of the known
// converters, and lists them so that the user can correct a typo.
type UnknownConverterError struct {
	Class string
	Known []string
}

func (e *UnknownConverterError) Error() string {
	return fmt.Sprintf("unknown converter class %q; known: %s", e.Class, strings.Join(e.Known, ", "))
}

// New returns an unconfigured converter by Kafka Connect class name or its
// simple name (JsonConverter) or Connect's short alias (Json). An unknown
// name gives an *UnknownConverterError listing the known class names.
func New(class string) (Converter, error) {
	if i, ok := byName[strings.TrimSpace(class)]; ok {
		return registry[i].make(), nil
	}
	if isSimpleHeaderClass(class) {
		return nil, fmt.Errorf("%s is a header converter only: name it in header.converter, not as a key or value converter", SimpleHeaderConverterClass)
	}
	return nil, &UnknownConverterError{Class: class, Known: Classes()}
}

// Classes lists the canonical class names (for the connector-plugins endpoint).
func Classes() []string {
	out := make([]string, len(registry))
	for i, e := range registry {
		out[i] = e.class
	}
	return out
}

// DefaultClass is the converter used when neither the connector nor the
// worker names one: the one Kafka Connect's shipped worker configs name.
const DefaultClass = "org.apache.kafka.connect.json.JsonConverter"

// Resolve builds the key (isKey) or value converter for a connector the way
// Kafka Connect's Worker does. If the connector config names the class
// ("key.converter"/"value.converter"), it is configured with the connector's
// own prefixed props only ("value.converter.schemas.enable", ...), never the
// worker's: this is Connect's behaviour, and why a connector that sets
// value.converter.schemas.enable without value.converter has no effect.
// Otherwise the worker's class and the worker's prefixed props are used. If
// neither names a class, the worker's prefixed props configure DefaultClass.
//
// Errors name the offending key: `value.converter: unknown converter class
// "Foo"; known: ...`, or a *connectors.ConfigError keyed by the full
// prefixed property name.
func Resolve(connectorConfig, workerConfig map[string]string, isKey bool) (Converter, error) {
	key := "value.converter"
	if isKey {
		key = "key.converter"
	}
	return resolve(key, DefaultClass, connectorConfig, workerConfig, isKey)
}

// resolve builds the converter that key (key.converter, value.converter,
// header.converter) names, as Resolve describes.
func resolve(key, defaultClass string, connectorConfig, workerConfig map[string]string, isKey bool) (Converter, error) {
	props := workerConfig
	class, ok := connectorConfig[key]
	if ok {
		props = connectorConfig
	} else if class, ok = workerConfig[key]; !ok {
		class = defaultClass
	}
	c, err := New(class)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	own := map[string]string{}
	for k, v := range props {
		if rest, found := strings.CutPrefix(k, key+"."); found {
			own[rest] = v
		}
	}
	if err := c.Configure(own, isKey); err != nil {
		var ce *connectors.ConfigError
		if errors.As(err, &ce) {
			prefixed := &connectors.ConfigError{}
			for k, msgs := range ce.Errors {
				for _, m := range msgs {
					prefixed.Add(key+"."+k, m)
				}
			}
			return nil, prefixed
		}
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return c, nil
}

// DataError is a value that does not fit its schema or bytes that do not
// decode. Path locates the offending part of the value: struct fields joined
// by dots, array elements as [i], map entries as ["key"]; it is empty for
// the value itself.
type DataError struct {
	Converter string
	Path      string
	Msg       string

	scale bool // a decimal with more fractional digits than its scale
}

func (e *DataError) Error() string {
	if e.Path == "" {
		return e.Converter + ": " + e.Msg
	}
	return fmt.Sprintf("%s: field %s: %s", e.Converter, e.Path, e.Msg)
}

// pathErr is a DataError still travelling up the value; the converter name is
// added at the top so the recursive code stays free of it.
type pathErr struct {
	path  string
	msg   string
	scale bool
}

func (e *pathErr) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

func errorf(format string, args ...any) error {
	return &pathErr{msg: fmt.Sprintf(format, args...)}
}

// inField prefixes err's path with a struct field name.
func inField(err error, name string) error {
	if pe, ok := err.(*pathErr); ok {
		switch {
		case pe.path == "":
			pe.path = name
		case pe.path[0] == '[':
			pe.path = name + pe.path
		default:
			pe.path = name + "." + pe.path
		}
	}
	return err
}

// inElem prefixes err's path with an array index or map key.
func inElem(err error, elem string) error {
	if pe, ok := err.(*pathErr); ok {
		if pe.path == "" || pe.path[0] == '[' {
			pe.path = elem + pe.path
		} else {
			pe.path = elem + "." + pe.path
		}
	}
	return err
}

func index(i int) string { return fmt.Sprintf("[%d]", i) }

func mapKey(k string) string { return fmt.Sprintf("[%q]", k) }

// dataErr turns an internal error into the DataError callers see.
func dataErr(converter string, err error) error {
	if pe, ok := err.(*pathErr); ok {
		return &DataError{Converter: converter, Path: pe.path, Msg: pe.msg, scale: pe.scale}
	}
	return &DataError{Converter: converter, Msg: err.Error()}
}

// typeName names a Go value's type in errors the way a user reads them.
func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parseBool parses a boolean property the way Kafka's ConfigDef does.
func parseBool(ce *connectors.ConfigError, props map[string]string, key string, def bool) bool {
	v, ok := props[key]
	if !ok {
		return def
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true
	case "false":
		return false
	}
	ce.Add(key, fmt.Sprintf("Invalid value %q for configuration %s: Expected value to be either true or false", v, key))
	return def
}

// RetainsNoInput reports whether c, a converter or header converter, is
// one of this package's that keep nothing of the bytes they are given
// once a call returns: what they cache (JSONConverter's schemas) is a
// copy, and only the value they return may share the bytes. A runtime
// that reuses a record's memory once the record is done with relies on
// it; converters of other packages, and those here that read through a
// Schema Registry, are not known to, and so report false.
func RetainsNoInput(c any) bool {
	switch c := c.(type) {
	case headerAdapter:
		return RetainsNoInput(c.c)
	case *StringConverter, *ByteArrayConverter, *JSONConverter, *NumberConverter, *BooleanConverter, *SimpleHeaderConverter:
		return true
	}
	return false
}
