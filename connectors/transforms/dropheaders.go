package transforms

import "github.com/sluice-io/sluice/connectors"

// DropHeaders (org.apache.kafka.connect.transforms.DropHeaders) removes
// the headers named in headers (every one of each name) from each record.
var _ = addTransform(connectors.TransformPlugin{
	Class: pkg + "DropHeaders",
	New:   func() connectors.Transform { return &dropHeaders{} },
})

const dropHeadersNames = "headers"

type dropHeaders struct {
	names map[string]bool
}

func (t *dropHeaders) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: dropHeadersNames, Type: connectors.TypeList, Required: true,
			Importance: connectors.High, Doc: "The name of the headers to be removed.", Validate: validateNonEmptyList})
}

func (t *dropHeaders) Configure(props map[string]string) error {
	t.names = map[string]bool{}
	for _, n := range javaList(props[dropHeadersNames]) {
		t.names[n] = true
	}
	return nil
}

func (t *dropHeaders) Apply(r *connectors.Record) (*connectors.Record, error) {
	kept := make([]connectors.Header, 0, len(r.Headers))
	for _, h := range r.Headers {
		if !t.names[h.Key] {
			kept = append(kept, h)
		}
	}
	return withHeaders(r, kept), nil
}

func (t *dropHeaders) Close() error { return nil }
