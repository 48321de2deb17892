// Package builtin lists the connectors that ship with Sluice.
package builtin

import (
	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/connectors/file"
	"github.com/sluice-io/sluice/connectors/postgres"
	"github.com/sluice-io/sluice/connectors/postgrescdc"
	"github.com/sluice-io/sluice/connectors/transforms"
)

// Registry returns a new registry holding every built-in plugin: the
// connectors, and Kafka Connect's transforms and predicates. Each call
// builds a fresh one, so callers may add their own plugins without
// affecting others.
func Registry() *connectors.Registry {
	r := connectors.NewRegistry().
		MustRegister(file.SourcePlugin()).
		MustRegister(file.SinkPlugin()).
		MustRegister(datagen.Plugin()).
		MustRegister(postgres.SourcePlugin()).
		MustRegister(postgres.SinkPlugin()).
		MustRegister(postgrescdc.Plugin())
	if err := transforms.Register(r); err != nil {
		panic(err) // built-in names are known not to clash
	}
	return r
}
