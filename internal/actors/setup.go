package actors

import (
	"fmt"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/internal/configprovider"
	"github.com/sluice-io/sluice/internal/connconfig"
)

// setup is what a supervisor hands every connector and task actor it
// spawns for one connector config: the config as stored, with its
// ${provider:path:key} placeholders. Each start of a connector or task
// resolves it anew (start), on the actor's goroutine, never in Receive
// (invariant 8), so a restarted task reads a rotated secret, as Connect
// resolves the config at every start.
type setup struct {
	config    map[string]string
	registry  *connectors.Registry
	worker    connconfig.Worker
	providers *configprovider.Transformer
}

func newSetup(rt *Runtime, config map[string]string) *setup {
	return &setup{config: config, registry: rt.opts.Registry, worker: rt.opts.Worker, providers: rt.opts.Providers}
}

// started is a connector config as one start of a connector or task runs
// it: placeholders resolved, the plugin that runs it, its runtime keys
// parsed. A config that cannot run (a placeholder that cannot be
// resolved, an unknown class, a bad key) gives an error instead, with
// which the child fails and is restarted like any failing child
// (invariant 5), until a new config replaces it.
type started struct {
	config map[string]string
	plugin connectors.Plugin
	keys   connconfig.Runtime
}

func (s *setup) start() (*started, error) {
	config, err := s.resolve(s.config)
	if err != nil {
		return nil, err
	}
	st := &started{config: config}
	if st.plugin, err = s.registry.Lookup(config[connconfig.ConnectorClass]); err != nil {
		return nil, err
	}
	if st.keys, err = connconfig.ParseRuntime(s.worker, st.plugin.Type, config); err != nil {
		return nil, err
	}
	return st, nil
}

// resolve replaces the placeholders of a connector or task config with
// what the worker's config providers read. The error names the keys, the
// providers and the paths, never a value.
func (s *setup) resolve(config map[string]string) (map[string]string, error) {
	resolved, err := s.providers.Transform(config)
	if err != nil {
		return nil, fmt.Errorf("resolving the config's placeholders: %w", err)
	}
	return resolved, nil
}

// newConverter builds a task's key or value converter. It is
// converters.Resolve; tests replace it to add converters of their own.
var newConverter = converters.Resolve
