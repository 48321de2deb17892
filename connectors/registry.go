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
	names := []string{p.Class}
	simple := p.Class[strings.LastIndex(p.Class, ".")+1:]
	names = append(names, simple)
	if s := strings.TrimSuffix(simple, "Connector"); s != simple && s != "" {
		names = append(names, s)
	}
	names = append(names, p.Aliases...)
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

// Registry finds plugins by any of their names.
type Registry struct {
	mu      sync.RWMutex
	plugins []Plugin
	byName  map[string]int
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]int{}} }

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

// UnknownClassError says a connector.class matched no plugin, and lists the
// known ones so that the user can correct a typo.
type UnknownClassError struct {
	Class string
	Known []string
}

func (e *UnknownClassError) Error() string {
	return fmt.Sprintf("unknown connector class %q; known classes: %s", e.Class, strings.Join(e.Known, ", "))
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
