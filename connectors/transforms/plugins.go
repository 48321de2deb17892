package transforms

import (
	"sort"

	"github.com/sluice-io/sluice/connectors"
)

// The transforms and predicates of this package. Each file adds its own
// (var _ = addTransform(...)), so that a new transform is one file.
var (
	transformPlugins []connectors.TransformPlugin
	predicatePlugins []connectors.PredicatePlugin
)

// version is the Apache Kafka version the transforms are ported from, which
// Connect's plugin listing shows as theirs.
const version = "4.1.1"

// pkg is the Java package of Connect's transforms.
const pkg = "org.apache.kafka.connect.transforms."

func addTransform(p connectors.TransformPlugin) bool {
	if p.Version == "" {
		p.Version = version
	}
	transformPlugins = append(transformPlugins, p)
	return true
}

// addKeyValue adds a transform's $Key and $Value variants (Connect's nested
// classes Name$Key and Name$Value), made by newT over the part each works
// on.
func addKeyValue(name string, newT func(part) connectors.Transform) bool {
	addTransform(connectors.TransformPlugin{Class: pkg + name + "$Key", New: func() connectors.Transform { return newT(keyPart{}) }})
	addTransform(connectors.TransformPlugin{Class: pkg + name + "$Value", New: func() connectors.Transform { return newT(valuePart{}) }})
	return true
}

func addPredicate(p connectors.PredicatePlugin) bool {
	if p.Version == "" {
		p.Version = version
	}
	predicatePlugins = append(predicatePlugins, p)
	return true
}

// Register adds every transform and predicate of this package to r.
func Register(r *connectors.Registry) error {
	ts := append([]connectors.TransformPlugin(nil), transformPlugins...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Class < ts[j].Class })
	for _, p := range ts {
		if err := r.RegisterTransform(p); err != nil {
			return err
		}
	}
	ps := append([]connectors.PredicatePlugin(nil), predicatePlugins...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].Class < ps[j].Class })
	for _, p := range ps {
		if err := r.RegisterPredicate(p); err != nil {
			return err
		}
	}
	return nil
}
