// Package builtin lists the connectors that ship with Sluice.
package builtin

import (
	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/connectors/file"
	"github.com/sluice-io/sluice/connectors/postgres"
)

// Registry returns a new registry holding every built-in plugin. Each call
// builds a fresh one, so callers may add their own plugins without affecting
// others.
func Registry() *connectors.Registry {
	return connectors.NewRegistry().
		MustRegister(file.SourcePlugin()).
		MustRegister(file.SinkPlugin()).
		MustRegister(datagen.Plugin()).
		MustRegister(postgres.SourcePlugin()).
		MustRegister(postgres.SinkPlugin())
}
