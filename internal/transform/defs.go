package transform

import (
	"strings"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
)

// TransformDef is the definition of transform alias's keys as a connector
// config holds them, as Connect's ConnectorConfig.enrich adds them: type,
// predicate and negate, then the transform's own keys, prefixed with
// transforms.<alias>. and in the group "Transforms: <alias>". own may be
// nil (the class is unknown).
func TransformDef(alias string, own *connectors.ConfigDef) *connectors.ConfigDef {
	prefix := connconfig.Transforms + "." + alias + "."
	group := "Transforms: " + alias
	d := connectors.NewConfigDef()
	d.Define(connectors.ConfigKey{Name: prefix + typeKey, Type: connectors.TypeClass, Required: true, Importance: connectors.High,
		Doc: "Class for the '" + alias + "' transformation.", Group: group, DisplayName: "Transformation type for " + alias})
	d.Define(connectors.ConfigKey{Name: prefix + predicateKey, Type: connectors.TypeString, Importance: connectors.Medium,
		Doc: "The alias of a predicate used to determine whether to apply this transformation.", Group: group,
		DisplayName: "Predicate for " + alias})
	d.Define(connectors.ConfigKey{Name: prefix + negateKey, Type: connectors.TypeBoolean, Default: "false", Importance: connectors.Medium,
		Doc: "Whether the configured predicate should be negated.", Group: group, DisplayName: "Negate predicate for " + alias})
	return d.Merge(prefixed(own, prefix, group))
}

// PredicateDef is the definition of predicate alias's keys as a connector
// config holds them: type, then the predicate's own keys, prefixed with
// predicates.<alias>. and in the group "Predicates: <alias>".
func PredicateDef(alias string, own *connectors.ConfigDef) *connectors.ConfigDef {
	prefix := connconfig.Predicates + "." + alias + "."
	group := "Predicates: " + alias
	d := connectors.NewConfigDef()
	d.Define(connectors.ConfigKey{Name: prefix + typeKey, Type: connectors.TypeClass, Required: true, Importance: connectors.High,
		Doc: "Class for the '" + alias + "' predicate.", Group: group, DisplayName: "Predicate type for " + alias})
	return d.Merge(prefixed(own, prefix, group))
}

func prefixed(own *connectors.ConfigDef, prefix, group string) *connectors.ConfigDef {
	out := connectors.NewConfigDef()
	if own == nil {
		return out
	}
	for _, k := range own.Keys() {
		k.Name = prefix + k.Name
		k.Group = group
		out.Define(k)
	}
	return out
}

// Definitions is the definition of every transform and predicate key
// config has, for the validate endpoint: each alias's keys, with the keys
// of its class when the registry knows it.
func Definitions(reg *connectors.Registry, config map[string]string) *connectors.ConfigDef {
	d := connectors.NewConfigDef()
	seen := map[string]bool{}
	for _, a := range connectors.SplitList(config[connconfig.Transforms]) {
		if seen[a] {
			continue
		}
		seen[a] = true
		var own *connectors.ConfigDef
		if p, err := reg.LookupTransform(strings.TrimSpace(config[connconfig.Transforms+"."+a+"."+typeKey])); err == nil {
			t := p.New()
			own = t.Config()
			_ = t.Close()
		}
		d = d.Merge(TransformDef(a, own))
	}
	seen = map[string]bool{}
	for _, a := range connectors.SplitList(config[connconfig.Predicates]) {
		if seen[a] {
			continue
		}
		seen[a] = true
		var own *connectors.ConfigDef
		if p, err := reg.LookupPredicate(strings.TrimSpace(config[connconfig.Predicates+"."+a+"."+typeKey])); err == nil {
			pr := p.New()
			own = pr.Config()
			_ = pr.Close()
		}
		d = d.Merge(PredicateDef(a, own))
	}
	return d
}
