package transforms

import "github.com/sluice-io/sluice/connectors"

// Filter (org.apache.kafka.connect.transforms.Filter) drops every record.
// It is meant to run under a predicate (transforms.<alias>.predicate, with
// negate), so that it drops the records the predicate selects.
var _ = addTransform(connectors.TransformPlugin{
	Class: pkg + "Filter",
	New:   func() connectors.Transform { return filter{} },
})

type filter struct{}

func (filter) Config() *connectors.ConfigDef { return connectors.NewConfigDef() }

func (filter) Configure(map[string]string) error { return nil }

func (filter) Apply(*connectors.Record) (*connectors.Record, error) { return nil, nil }

func (filter) Close() error { return nil }
