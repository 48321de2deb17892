package converters

import (
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// HeaderConverter turns a record header's value (Connect data: a schema and
// its Go value) into the bytes stored in Kafka, and back: Kafka Connect's
// HeaderConverter, which a worker applies to a source's headers after the
// transforms and to a sink's before them.
type HeaderConverter interface {
	FromConnectHeader(topic, headerKey string, schema *connectors.Schema, value any) ([]byte, error)
	ToConnectHeader(topic, headerKey string, data []byte) (*connectors.Schema, any, error)
}

// DefaultHeaderClass is the header converter used when neither the
// connector nor the worker names one: SimpleHeaderConverter, as in Kafka
// Connect.
const DefaultHeaderClass = SimpleHeaderConverterClass

// ResolveHeader builds a connector's header converter as Kafka Connect's
// Worker does: the class header.converter names in the connector config,
// configured with the connector's header.converter.* keys; else the
// worker's, with the worker's keys; else DefaultHeaderClass. Besides
// SimpleHeaderConverter, every converter of this package is also a header
// converter, as in Connect: a header's value is converted as a record's
// value would be.
func ResolveHeader(connectorConfig, workerConfig map[string]string) (HeaderConverter, error) {
	class := headerClass(connectorConfig, workerConfig)
	if isSimpleHeaderClass(class) {
		return &SimpleHeaderConverter{}, nil
	}
	if i, ok := byName[strings.TrimSpace(class)]; ok && recordOnly[registry[i].class] {
		return nil, fmt.Errorf("%s: %s converts record keys and values only, not headers (as in Confluent, it is no HeaderConverter)", headerConverterKey, registry[i].class)
	}
	c, err := resolve(headerConverterKey, DefaultHeaderClass, connectorConfig, workerConfig, false)
	if err != nil {
		return nil, err
	}
	return headerAdapter{c}, nil
}

const headerConverterKey = "header.converter"

// headerClass is the class ResolveHeader uses, as resolve picks it.
func headerClass(connectorConfig, workerConfig map[string]string) string {
	if class, ok := connectorConfig[headerConverterKey]; ok {
		return class
	}
	if class, ok := workerConfig[headerConverterKey]; ok {
		return class
	}
	return DefaultHeaderClass
}

// headerAdapter is a Converter used for headers.
type headerAdapter struct{ c Converter }

func (h headerAdapter) FromConnectHeader(topic, _ string, schema *connectors.Schema, value any) ([]byte, error) {
	return h.c.FromConnect(topic, schema, value)
}

func (h headerAdapter) ToConnectHeader(topic, _ string, data []byte) (*connectors.Schema, any, error) {
	return h.c.ToConnect(topic, data)
}
