// Package loglevel gives a process named, hierarchical zerolog loggers whose
// levels change at run time. It is the model behind Kafka Connect's
// /admin/loggers API (KIP-495, KIP-976), with log4j's rules:
//
//   - Names are dotted; "a.b" is the parent of "a.b.c". The root logger is
//     "root" (any case, as in Connect).
//   - A logger's effective level is the explicit level of the nearest of
//     itself and its ancestors that has one, else the root's.
//   - Setting a level on a namespace sets it explicitly on the logger of
//     that name and on every known logger below it; a logger created later
//     inherits from its nearest ancestor. Setting "root" sets every logger.
//
// Loggers already handed out follow changes at once: each carries a hook
// that reads its logger's level atomically and drops events below it.
// Dropping at the hook still costs building the event, so a registry made
// with ManageGlobalLevel also keeps zerolog's global level at the lowest
// level any logger can have: while nothing asks for DEBUG, Debug() returns
// a nil event everywhere and its fields are never computed.
//
// The loggers of a Sluice worker (internal/worker derives them; each also
// carries the fields "logger" and "worker"):
//
//	root                 the process: commands, the embedded broker
//	sluice.worker        a worker's start and stop, membership, assignments
//	sluice.group         the Kafka group member: join, sync, heartbeats
//	sluice.gossip        memberlist: failure detection between workers
//	sluice.actors        the connector and task actors and their pipelines
//	sluice.actorcluster  the actor cluster that spans the workers
//	sluice.state         the config and status topics
//	sluice.offsets       source offsets in the offsets topic
//	sluice.rest          the REST API; each request is logged at DEBUG
//
// So `PUT /admin/loggers/sluice.actors {"level":"DEBUG"}` turns on the
// pipelines' debug logging, and `PUT /admin/loggers/sluice` every Sluice
// logger but root.
package loglevel

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Names of the loggers a Sluice worker uses; see the package doc.
const (
	RootName     = "root"
	Worker       = "sluice.worker"
	Group        = "sluice.group"
	Gossip       = "sluice.gossip"
	Actors       = "sluice.actors"
	ActorCluster = "sluice.actorcluster"
	State        = "sluice.state"
	Offsets      = "sluice.offsets"
	REST         = "sluice.rest"
)

// LevelNames lists the level names ParseLevel accepts, for messages.
const LevelNames = "TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF"

// ParseLevel reads a level name as Connect's Level.toLevel does: case does
// not matter, OFF turns a logger off and ALL is the lowest level, TRACE.
func ParseLevel(s string) (zerolog.Level, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "TRACE", "ALL":
		return zerolog.TraceLevel, nil
	case "DEBUG":
		return zerolog.DebugLevel, nil
	case "INFO":
		return zerolog.InfoLevel, nil
	case "WARN":
		return zerolog.WarnLevel, nil
	case "ERROR":
		return zerolog.ErrorLevel, nil
	case "FATAL":
		return zerolog.FatalLevel, nil
	case "OFF":
		return zerolog.Disabled, nil
	}
	return zerolog.NoLevel, fmt.Errorf("invalid log level %q: valid levels are %s (any case)", s, LevelNames)
}

// LevelName is a level as Connect shows it: upper case, OFF for disabled.
func LevelName(l zerolog.Level) string {
	if l == zerolog.Disabled {
		return "OFF"
	}
	if s := l.String(); s != "" {
		return strings.ToUpper(s)
	}
	return strconv.Itoa(int(l))
}

// Options configure a Registry.
type Options struct {
	// Root is the root logger's level; every logger starts with it.
	Root zerolog.Level
	// ManageGlobalLevel keeps zerolog's global level at the lowest level
	// any of this registry's loggers can have, so that events no logger
	// wants are not built. The global level bounds every zerolog logger
	// in the process, so set it only on the process's own registry (the
	// binary's), not on registries that tests make beside other loggers.
	ManageGlobalLevel bool
	// Now stamps level changes; nil is time.Now.
	Now func() time.Time
}

// Setting is a logger's level and when it last changed at run time (zero:
// never).
type Setting struct {
	Level        zerolog.Level
	LastModified time.Time
}

// Registry holds the named loggers of a process. It is safe for concurrent
// use; loggers it hands out read their level without locking.
type Registry struct {
	base    zerolog.Logger
	now     func() time.Time
	managed bool

	mu    sync.Mutex
	root  *node
	nodes map[string]*node // every logger handed out or set, except root
}

// node is one named logger. level is what its hook reads on every event;
// the other fields are guarded by Registry.mu.
type node struct {
	name     string
	level    atomic.Int32
	explicit bool
	set      zerolog.Level // the explicit level, if explicit
	modified time.Time
}

// Run drops events below the logger's current level.
func (n *node) Run(e *zerolog.Event, level zerolog.Level, _ string) {
	if level < zerolog.Level(n.level.Load()) {
		e.Discard()
	}
}

func (n *node) effective() zerolog.Level { return zerolog.Level(n.level.Load()) }

// New returns a registry whose loggers write through base (its writer,
// context fields and hooks; its level is replaced by the loggers' own).
func New(base zerolog.Logger, o Options) *Registry {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	r := &Registry{
		base:    base.Level(zerolog.TraceLevel),
		now:     now,
		managed: o.ManageGlobalLevel,
		root:    &node{name: RootName, explicit: true, set: o.Root},
		nodes:   map[string]*node{},
	}
	r.root.level.Store(int32(o.Root))
	r.mu.Lock()
	r.refreshLocked()
	r.mu.Unlock()
	return r
}

func isRoot(name string) bool { return name == "" || strings.EqualFold(name, RootName) }

// Logger returns the logger of name ("" or "root": the root logger),
// creating it if needed. Level changes reach the returned logger and every
// logger derived from it.
func (r *Registry) Logger(name string) zerolog.Logger {
	r.mu.Lock()
	n := r.nodeLocked(name)
	r.mu.Unlock()
	l := r.base.Hook(n)
	if n != r.root {
		l = l.With().Str("logger", n.name).Logger()
	}
	return l
}

// Root is the root logger.
func (r *Registry) Root() zerolog.Logger { return r.Logger(RootName) }

// nodeLocked returns the node of name, creating it with the level it
// inherits.
func (r *Registry) nodeLocked(name string) *node {
	if isRoot(name) {
		return r.root
	}
	if n, ok := r.nodes[name]; ok {
		return n
	}
	n := &node{name: name}
	n.level.Store(int32(r.inheritedLocked(name)))
	r.nodes[name] = n
	return n
}

// inheritedLocked is the level name has by its own explicit level or its
// nearest ancestor's.
func (r *Registry) inheritedLocked(name string) zerolog.Level {
	for n := name; ; {
		if x, ok := r.nodes[n]; ok && x.explicit {
			return x.set
		}
		i := strings.LastIndexByte(n, '.')
		if i < 0 {
			return r.root.set
		}
		n = n[:i]
	}
}

// Set sets level on namespace and every known logger below it ("root" or
// "": every logger) and returns their names, sorted, as Connect does: all
// that were set, including those already at that level. Only those whose
// level differed get a new last-modified time. Descendants are found by
// dotted prefix: "a.b" covers "a.b.c" but not "a.bc" (Connect matches any
// name that starts with the namespace, which would).
func (r *Registry) Set(namespace string, level zerolog.Level) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var targets []*node
	if isRoot(namespace) {
		targets = append(targets, r.root)
		for _, n := range r.nodes {
			targets = append(targets, n)
		}
	} else {
		r.nodeLocked(namespace)
		prefix := namespace + "."
		for name, n := range r.nodes {
			if name == namespace || strings.HasPrefix(name, prefix) {
				targets = append(targets, n)
			}
		}
	}
	now := r.now()
	names := make([]string, 0, len(targets))
	for _, n := range targets {
		if n.effective() != level {
			n.modified = now
		}
		n.explicit, n.set = true, level
		names = append(names, n.name)
	}
	r.refreshLocked()
	sort.Strings(names)
	return names
}

// refreshLocked stores every logger's effective level for its hook and,
// if managed, lowers or raises zerolog's global level to match.
func (r *Registry) refreshLocked() {
	r.root.level.Store(int32(r.root.set))
	floor := r.root.set
	for name, n := range r.nodes {
		n.level.Store(int32(r.inheritedLocked(name)))
		if n.explicit {
			// Every level a logger can have, now or once created,
			// is root's or an explicit one: their minimum is the
			// floor.
			floor = min(floor, n.set)
		}
	}
	if r.managed {
		setFloor(r, floor)
	}
}

// Levels returns the root logger and every logger with an explicit level,
// as GET /admin/loggers lists them.
func (r *Registry) Levels() map[string]Setting {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]Setting{RootName: {Level: r.root.set, LastModified: r.root.modified}}
	for name, n := range r.nodes {
		if n.explicit {
			out[name] = Setting{Level: n.set, LastModified: n.modified}
		}
	}
	return out
}

// Level returns a known logger's effective level; ok is false for a name
// no logger has.
func (r *Registry) Level(name string) (s Setting, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.root
	if !isRoot(name) {
		if n, ok = r.nodes[name]; !ok {
			return Setting{}, false
		}
	}
	return Setting{Level: n.effective(), LastModified: n.modified}, true
}

// floors holds, per managed registry, the lowest level its loggers can
// have; zerolog's global level is their minimum, so that no managed
// registry's logger loses events it wants to another's setting.
var floors = struct {
	sync.Mutex
	m map[*Registry]zerolog.Level
}{m: map[*Registry]zerolog.Level{}}

func setFloor(r *Registry, l zerolog.Level) {
	floors.Lock()
	defer floors.Unlock()
	floors.m[r] = l
	g := zerolog.Disabled
	for _, f := range floors.m {
		g = min(g, f)
	}
	zerolog.SetGlobalLevel(g)
}
