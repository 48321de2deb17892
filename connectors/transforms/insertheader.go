package transforms

import (
	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
)

// InsertHeader (org.apache.kafka.connect.transforms.InsertHeader) adds a
// header to each record: header names it, value.literal is its value,
// read as Connect's Values.parseString reads text (converters.ParseValue):
// "42" is the int8 42, "true" a boolean, "[1,2]" an array, "null" a null
// header, anything else a string. Both values are trimmed, as Connect's
// config trims them.
var _ = addTransform(connectors.TransformPlugin{
	Class: pkg + "InsertHeader",
	New:   func() connectors.Transform { return &insertHeader{} },
})

const (
	insertHeaderName    = "header"
	insertHeaderLiteral = "value.literal"
)

type insertHeader struct {
	header connectors.Header
}

func (t *insertHeader) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: insertHeaderName, Type: connectors.TypeString, Required: true,
			Importance: connectors.High, Doc: "The name of the header."}).
		Define(connectors.ConfigKey{Name: insertHeaderLiteral, Type: connectors.TypeString, Required: true,
			Importance: connectors.High, Doc: "The literal value that is to be set as the header value on all records."})
}

func (t *insertHeader) Configure(props map[string]string) error {
	schema, value, err := converters.ParseValue(javaTrim(props[insertHeaderLiteral]))
	if err != nil {
		ce := &connectors.ConfigError{}
		ce.Add(insertHeaderLiteral, err.Error())
		return ce
	}
	t.header = connectors.Header{Key: javaTrim(props[insertHeaderName]), Schema: schema, Value: value}
	return nil
}

// Apply adds the header after the record's own. Every record shares the
// literal's value, which nothing may modify.
func (t *insertHeader) Apply(r *connectors.Record) (*connectors.Record, error) {
	return withHeaders(r, append(copyHeaders(r.Headers, 1), t.header)), nil
}

func (t *insertHeader) Close() error { return nil }
