package connectors

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Plugin describes a connector implementation the runtime can instantiate.
type Plugin struct {
	// Class is the canonical class name, for a port of a Kafka Connect
	// connector the Java class name (org.apache.kafka.connect.file.FileStreamSourceConnector),
	// so that Connect configs work unchanged.
	Class string
	// Aliases are further names the plugin answers to. The simple class name
	// and the simple name without a "Connector" suffix are always aliases.
	Aliases []string
	Type    Type
	Version string
	New     func() Connector
}

// Names returns every name the plugin is known by, canonical first.
func (p Plugin) Names() []string {
	return names(p.Class, "Connector", p.Aliases)
}

// names are a plugin's names: its class, the simple name after the last
// dot, that name without suffix, and its aliases, without repeats.
func names(class, suffix string, aliases []string) []string {
	names := []string{class}
	simple := class[strings.LastIndex(class, ".")+1:]
	names = append(names, simple)
	if s := strings.TrimSuffix(simple, suffix); s != simple && s != "" {
		names = append(names, s)
	}
	names = append(names, aliases...)
	seen := map[string]bool{}
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Registry finds plugins by any of their names: connectors, and the single
// message transforms and predicates their configs name.
type Registry struct {
	mu      sync.RWMutex
	plugins []Plugin
	byName  map[string]int

	transforms  []TransformPlugin
	transformBy map[string]int
	predicates  []PredicatePlugin
	predicateBy map[string]int
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]int{}, transformBy: map[string]int{}, predicateBy: map[string]int{}}
}

// Register adds a plugin. A name already taken by another plugin is an error.
func (r *Registry) Register(p Plugin) error {
	if p.Class == "" || p.New == nil || (p.Type != Source && p.Type != Sink) {
		return fmt.Errorf("plugin %q: class, type and constructor are required", p.Class)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range p.Names() {
		if _, ok := r.byName[n]; ok {
			return fmt.Errorf("plugin name %q is already registered", n)
		}
	}
	for _, n := range p.Names() {
		r.byName[n] = len(r.plugins)
	}
	r.plugins = append(r.plugins, p)
	return nil
}

// MustRegister is Register for built-ins, whose names are known not to clash.
func (r *Registry) MustRegister(p Plugin) *Registry {
	if err := r.Register(p); err != nil {
		panic(err)
	}
	return r
}

// UnknownClassError says a class name matched no plugin, and lists the
// known ones so that the user can correct a typo.
type UnknownClassError struct {
	Class string
	Known []string
	// Kind is what was looked up: "" for a connector, "transformation"
	// or "predicate".
	Kind string
}

func (e *UnknownClassError) Error() string {
	kind := e.Kind
	if kind == "" {
		kind = "connector"
	}
	return fmt.Sprintf("unknown %s class %q; known classes: %s", kind, e.Class, strings.Join(e.Known, ", "))
}

// Lookup finds a plugin by class name or alias.
func (r *Registry) Lookup(name string) (Plugin, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if i, ok := r.byName[strings.TrimSpace(name)]; ok {
		return r.plugins[i], nil
	}
	known := make([]string, 0, len(r.plugins))
	for _, p := range r.plugins {
		known = append(known, p.Class)
	}
	sort.Strings(known)
	return Plugin{}, &UnknownClassError{Class: name, Known: known}
}

// Plugins returns every plugin, sorted by class.
func (r *Registry) Plugins() []Plugin {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := append([]Plugin(nil), r.plugins...)
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}

// Names returns every name the transform is known by, canonical first.
func (p TransformPlugin) Names() []string { return names(p.Class, "", p.Aliases) }

// Names returns every name the predicate is known by, canonical first.
func (p PredicatePlugin) Names() []string { return names(p.Class, "", p.Aliases) }

// RegisterTransform adds a transform. A name already taken by another
// transform is an error.
func (r *Registry) RegisterTransform(p TransformPlugin) error {
	if p.Class == "" || p.New == nil {
		return fmt.Errorf("transform %q: class and constructor are required", p.Class)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return register(r.transformBy, p.Names(), func() int { r.transforms = append(r.transforms, p); return len(r.transforms) - 1 })
}

// RegisterPredicate adds a predicate. A name already taken by another
// predicate is an error.
func (r *Registry) RegisterPredicate(p PredicatePlugin) error {
	if p.Class == "" || p.New == nil {
		return fmt.Errorf("predicate %q: class and constructor are required", p.Class)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return register(r.predicateBy, p.Names(), func() int { r.predicates = append(r.predicates, p); return len(r.predicates) - 1 })
}

func register(byName map[string]int, names []string, add func() int) error {
	for _, n := range names {
		if _, ok := byName[n]; ok {
			return fmt.Errorf("plugin name %q is already registered", n)
		}
	}
	i := add()
	for _, n := range names {
		byName[n] = i
	}
	return nil
}

// LookupTransform finds a transform by class name or alias; an unknown
// name gives an *UnknownClassError listing the known transform classes.
func (r *Registry) LookupTransform(name string) (TransformPlugin, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if i, ok := r.transformBy[strings.TrimSpace(name)]; ok {
		return r.transforms[i], nil
	}
	known := make([]string, 0, len(r.transforms))
	for _, p := range r.transforms {
		known = append(known, p.Class)
	}
	sort.Strings(known)
	return TransformPlugin{}, &UnknownClassError{Class: name, Known: known, Kind: "transformation"}
}

// LookupPredicate finds a predicate by class name or alias; an unknown
// name gives an *UnknownClassError listing the known predicate classes.
func (r *Registry) LookupPredicate(name string) (PredicatePlugin, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if i, ok := r.predicateBy[strings.TrimSpace(name)]; ok {
		return r.predicates[i], nil
	}
	known := make([]string, 0, len(r.predicates))
	for _, p := range r.predicates {
		known = append(known, p.Class)
	}
	sort.Strings(known)
	return PredicatePlugin{}, &UnknownClassError{Class: name, Known: known, Kind: "predicate"}
}

// Transforms returns every transform, sorted by class.
func (r *Registry) Transforms() []TransformPlugin {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := append([]TransformPlugin(nil), r.transforms...)
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}

// Predicates returns every predicate, sorted by class.
func (r *Registry) Predicates() []PredicatePlugin {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := append([]PredicatePlugin(nil), r.predicates...)
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}
