package actors

import (
	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/internal/connconfig"
)

// setup is what a supervisor derives from a connector config, once per
// config, and hands to every connector and task actor it spawns for it: the
// plugin that runs the connector and its runtime keys, parsed. A config
// that cannot run (an unknown class, a bad key) gives err instead, with
// which each child fails, and is restarted, like any failing child
// (invariant 5), until a new config replaces it.
type setup struct {
	config map[string]string
	plugin connectors.Plugin
	keys   connconfig.Runtime
	err    error
}

func newSetup(reg *connectors.Registry, w connconfig.Worker, config map[string]string) *setup {
	s := &setup{config: config}
	if s.plugin, s.err = reg.Lookup(config[connconfig.ConnectorClass]); s.err != nil {
		return s
	}
	s.keys, s.err = connconfig.ParseRuntime(w, s.plugin.Type, config)
	return s
}

// newConverter builds a task's key or value converter. It is
// converters.Resolve; tests replace it to add converters of their own.
var newConverter = converters.Resolve
