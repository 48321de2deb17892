package control

import (
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/transform"
)

// evaluation is a config checked by every validator there is: the common
// keys, the plugin's keys, the plugin's own cross-key rules, the common
// cross-key rules and the converters.
type evaluation struct {
	plugin connectors.Plugin
	found  bool
	def    *connectors.ConfigDef
	values []connectors.ConfigValue
	errs   map[string][]string
}

func (e *evaluation) add(key string, msgs ...string) {
	for _, m := range msgs {
		if !slices.Contains(e.errs[key], m) {
			e.errs[key] = append(e.errs[key], m)
		}
	}
}

func (e *evaluation) addAll(ce *connectors.ConfigError) {
	if ce == nil {
		return
	}
	for k, msgs := range ce.Errors {
		e.add(k, msgs...)
	}
}

func (c *Controller) evaluate(config map[string]string) *evaluation {
	ev := &evaluation{errs: map[string][]string{}}
	// The values are checked as the connector will get them, placeholders
	// resolved, as Connect validates (AbstractHerder.validateConnectorConfig).
	// A placeholder that cannot be resolved is an error on its key; the
	// config is then checked as written.
	if resolved, err := c.o.Providers.Transform(config); err != nil {
		var ce *connectors.ConfigError
		if !errors.As(err, &ce) {
			ce = &connectors.ConfigError{}
			ce.Add(connconfig.ConnectorClass, err.Error())
		}
		ev.addAll(ce)
	} else {
		config = resolved
	}
	var t connectors.Type
	if class := strings.TrimSpace(config[connconfig.ConnectorClass]); class != "" {
		p, err := c.o.Plugins.Lookup(class)
		if err != nil {
			// UnknownClassError's message lists the known classes.
			ev.add(connconfig.ConnectorClass, err.Error())
		} else {
			ev.plugin, ev.found, t = p, true, p.Type
		}
	}
	ev.def = connconfig.ConfigDef(t)
	var inst connectors.Connector
	if ev.found {
		var own *connectors.ConfigDef
		err := safely(ev.plugin.Class, "describing its config", func() {
			inst = ev.plugin.New()
			own = inst.Config()
		})
		if err != nil {
			ev.add(connconfig.ConnectorClass, err.Error())
			inst = nil
		}
		ev.def = ev.def.Merge(own)
	}
	// The keys of each transform and predicate alias, as Connect's
	// ConnectorConfig.enrich adds them; transform code may panic too.
	if err := safely("transforms", "describing their config", func() {
		ev.def = ev.def.Merge(transform.Definitions(c.o.Plugins, config))
	}); err != nil {
		ev.add(connconfig.Transforms, err.Error())
	}
	ev.values = ev.def.Validate(config)
	for _, v := range ev.values {
		ev.add(v.Name, v.Errors...)
	}
	ev.addAll(connconfig.Validate(c.o.Worker, t, config))
	ev.addAll(c.checkTransforms(config))
	if t == connectors.Source && inst != nil {
		// Connect's preflight checks of exactly.once.support and
		// transaction.boundary, which ask the connector.
		var ce *connectors.ConfigError
		if err := safely(ev.plugin.Class, "checking its exactly-once support", func() {
			ce = connconfig.ValidateExactlyOnce(c.o.Worker, inst, config)
		}); err != nil {
			ev.add(connconfig.ConnectorClass, err.Error())
		}
		ev.addAll(ce)
	}
	if v, ok := inst.(connectors.ConfigValidator); ok {
		var errs map[string][]string
		if err := safely(ev.plugin.Class, "validating a config", func() { errs = v.ValidateConfig(config) }); err != nil {
			ev.add(connconfig.ConnectorClass, err.Error())
		}
		for k, msgs := range errs {
			ev.add(k, msgs...)
		}
	}
	if c.o.CheckConverters != nil {
		ev.addAll(c.o.CheckConverters(config))
	}
	for k, msgs := range ev.errs {
		if len(msgs) == 0 {
			delete(ev.errs, k)
		}
	}
	return ev
}

// Validate answers PUT /connector-plugins/{class}/config/validate: every
// key, defined or in error, with its definition, value and errors. A config
// that is invalid is a normal answer, not an error; errors are for a class
// no plugin has, or a config naming another plugin than the path.
func (c *Controller) Validate(class string, config map[string]string) (ConfigInfos, error) {
	p, err := c.o.Plugins.Lookup(class)
	if err != nil {
		return ConfigInfos{}, errorf(http.StatusBadRequest, "%v", err)
	}
	cfg := make(map[string]string, len(config)+1)
	for k, v := range config {
		cfg[k] = v
	}
	if inc := strings.TrimSpace(cfg[connconfig.ConnectorClass]); inc == "" {
		cfg[connconfig.ConnectorClass] = p.Class
	} else if ip, err := c.o.Plugins.Lookup(inc); err != nil || ip.Class != p.Class {
		return ConfigInfos{}, errorf(http.StatusBadRequest, "Included connector type %s does not match request type %s", inc, class)
	}
	ev := c.evaluate(cfg)
	return render(p.Class, ev), nil
}

func render(name string, ev *evaluation) ConfigInfos {
	out := ConfigInfos{Name: name, Groups: []string{}, Configs: []ConfigInfo{}}
	orders := map[string]int{}
	seen := map[string]bool{}
	for i, k := range ev.def.Keys() {
		seen[k.Name] = true
		if k.Group != "" && !slices.Contains(out.Groups, k.Group) {
			out.Groups = append(out.Groups, k.Group)
		}
		v := ev.values[i]
		var value *string
		switch {
		case k.Type == connectors.TypePassword && (v.Set || v.Value != ""):
			value = ptr(connectors.HiddenValue) // a default password too, as Connect
		case v.Set || v.Value != "":
			value = ptr(v.Value)
		}
		errs := append([]string{}, ev.errs[k.Name]...)
		out.ErrorCount += len(errs)
		out.Configs = append(out.Configs, ConfigInfo{
			Definition: keyInfo(k, orders),
			Value: ConfigValueInfo{
				Name: k.Name, Value: value, Errors: errs, Visible: true,
				RecommendedValues: append([]string{}, k.Recommended...),
			},
		})
	}
	// Errors on keys that no definition has (transforms.<alias>.type, keys
	// a plugin's ValidateConfig names) still count and must be shown.
	var extra []string
	for k := range ev.errs {
		if !seen[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		errs := append([]string{}, ev.errs[k]...)
		out.ErrorCount += len(errs)
		out.Configs = append(out.Configs, ConfigInfo{
			Definition: ConfigKeyInfo{
				Name: k, Type: string(connectors.TypeString), Importance: string(connectors.Low),
				Width: "NONE", DisplayName: k, Dependents: []string{}, Order: -1,
			},
			Value: ConfigValueInfo{Name: k, Errors: errs, Visible: true, RecommendedValues: []string{}},
		})
	}
	return out
}

// keyInfo converts a definition; orders counts keys per group so far,
// because Connect numbers keys within their group from 1 (-1 without one).
func keyInfo(k connectors.ConfigKey, orders map[string]int) ConfigKeyInfo {
	info := ConfigKeyInfo{
		Name: k.Name, Type: string(k.Type), Required: k.Required,
		Importance: string(k.Importance), Documentation: k.Doc,
		Width: "NONE", DisplayName: k.DisplayName, Dependents: []string{}, Order: -1,
	}
	if info.DisplayName == "" {
		info.DisplayName = k.Name
	}
	if !k.Required && k.Default != "" {
		info.DefaultValue = ptr(k.Default)
	}
	if k.Group != "" {
		info.Group = ptr(k.Group)
		orders[k.Group]++
		info.Order = orders[k.Group]
	}
	return info
}

func ptr(s string) *string { return &s }

// checkWrite validates a config about to be written for connector name and
// returns it with name filled in, as Connect stores it.
func (c *Controller) checkWrite(name string, config map[string]string) (map[string]string, *evaluation, error) {
	cfg := make(map[string]string, len(config)+1)
	for k, v := range config {
		cfg[k] = v
	}
	var mismatch string
	if v, ok := cfg[connconfig.Name]; ok && v != name {
		mismatch = "Connector name configuration (" + v + ") doesn't match connector name in the URL (" + name + ")"
	}
	cfg[connconfig.Name] = name
	ev := c.evaluate(cfg)
	if mismatch != "" {
		ev.add(connconfig.Name, mismatch)
	}
	if len(ev.errs) > 0 {
		return nil, ev, invalidConfig(ev.errs)
	}
	return cfg, ev, nil
}

// ParseInitialState reads initial_state as Connect does: any case, empty
// meaning RUNNING.
func ParseInitialState(s string) (InitialState, error) {
	switch st := InitialState(strings.ToUpper(strings.TrimSpace(s))); st {
	case "":
		return InitialRunning, nil
	case InitialRunning, InitialPaused, InitialStopped:
		return st, nil
	}
	return "", errorf(http.StatusBadRequest, "Invalid initial_state %q: must be one of RUNNING, PAUSED, STOPPED", s)
}

// checkTransforms builds the chain of transforms config names, as each task
// will, so that what would fail a task at start (an unknown class, a bad
// key, a transform that refuses its config) is refused by name now.
func (c *Controller) checkTransforms(config map[string]string) (ce *connectors.ConfigError) {
	err := safely("transforms", "configuring them", func() {
		chain, err := transform.Build(c.o.Plugins, config)
		if err != nil {
			if !errors.As(err, &ce) {
				ce = &connectors.ConfigError{}
				ce.Add(connconfig.Transforms, err.Error())
			}
			return
		}
		_ = chain.Close()
	})
	if err != nil {
		ce = &connectors.ConfigError{}
		ce.Add(connconfig.Transforms, err.Error())
	}
	return ce
}
