package loglevel

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/sluice-io/sluice/internal/testutil"
)

// buffer is a log destination safe for concurrent writers.
type buffer struct{ testutil.LogBuffer }

// entries returns the JSON lines written so far and empties the buffer.
func (b *buffer) entries(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.Take()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

func messages(entries []map[string]any) []string {
	var out []string
	for _, e := range entries {
		out = append(out, fmt.Sprint(e["message"]))
	}
	return out
}

// isolateGlobal restores zerolog's global level and forgets managed
// registries after the test, so that tests do not see each other's floors.
func isolateGlobal(t *testing.T) {
	prev := zerolog.GlobalLevel()
	floors.Lock()
	saved := maps.Clone(floors.m)
	floors.m = map[*Registry]zerolog.Level{}
	floors.Unlock()
	t.Cleanup(func() {
		floors.Lock()
		floors.m = saved
		floors.Unlock()
		zerolog.SetGlobalLevel(prev)
	})
}

// clock is a settable time source.
type clock struct{ ms atomic.Int64 }

func (c *clock) now() time.Time { return time.UnixMilli(c.ms.Load()) }
func (c *clock) set(ms int64)   { c.ms.Store(ms) }
func newClock(ms int64) *clock  { c := &clock{}; c.set(ms); return c }
func at(ms int64) time.Time     { return time.UnixMilli(ms) }

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]zerolog.Level{
		"TRACE": zerolog.TraceLevel, "debug": zerolog.DebugLevel, "Info": zerolog.InfoLevel,
		" warn ": zerolog.WarnLevel, "ERROR": zerolog.ErrorLevel, "fatal": zerolog.FatalLevel,
		"OFF": zerolog.Disabled, "all": zerolog.TraceLevel,
	} {
		got, err := ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "LOUD", "WARNING", "5", "panic"} {
		if _, err := ParseLevel(bad); err == nil || !strings.Contains(err.Error(), LevelNames) {
			t.Errorf("ParseLevel(%q) = %v; want an error listing the levels", bad, err)
		}
	}
	for l, want := range map[zerolog.Level]string{
		zerolog.TraceLevel: "TRACE", zerolog.DebugLevel: "DEBUG", zerolog.InfoLevel: "INFO",
		zerolog.WarnLevel: "WARN", zerolog.ErrorLevel: "ERROR", zerolog.FatalLevel: "FATAL",
		zerolog.Disabled: "OFF",
	} {
		if got := LevelName(l); got != want {
			t.Errorf("LevelName(%v) = %q, want %q", l, got, want)
		}
		if back, err := ParseLevel(want); err != nil || back != l {
			t.Errorf("ParseLevel(LevelName(%v)) = %v, %v", l, back, err)
		}
	}
}

// A level change reaches loggers handed out before it, and loggers derived
// from them, without touching any other logger.
func TestChangeReachesLoggersHandedOut(t *testing.T) {
	isolateGlobal(t)
	var buf buffer
	r := New(zerolog.New(&buf), Options{Root: zerolog.InfoLevel, ManageGlobalLevel: true})
	source := r.Logger("sluice.actors.source").With().Str("connector", "c1").Logger()
	group := r.Logger(Group)

	source.Debug().Msg("before")
	group.Debug().Msg("before")
	source.Info().Msg("info")
	if got := messages(buf.entries(t)); !reflect.DeepEqual(got, []string{"info"}) {
		t.Fatalf("at INFO wrote %v", got)
	}

	changed := r.Set(Actors, zerolog.DebugLevel)
	if want := []string{Actors, "sluice.actors.source"}; !reflect.DeepEqual(changed, want) {
		t.Fatalf("Set returned %v, want %v", changed, want)
	}
	source.Debug().Msg("after")
	group.Debug().Msg("after")
	es := buf.entries(t)
	if len(es) != 1 || es[0]["message"] != "after" || es[0]["level"] != "debug" ||
		es[0]["logger"] != "sluice.actors.source" || es[0]["connector"] != "c1" {
		t.Fatalf("after Set(DEBUG) wrote %v; want only the source's debug event with its fields", es)
	}

	r.Set(Actors, zerolog.WarnLevel)
	source.Info().Msg("quiet")
	source.Warn().Msg("loud")
	if got := messages(buf.entries(t)); !reflect.DeepEqual(got, []string{"loud"}) {
		t.Fatalf("after Set(WARN) wrote %v", got)
	}
}

// counted counts how often zerolog asked for its fields, that is, how often
// an event carrying it was built.
type counted struct{ n atomic.Int64 }

func (c *counted) MarshalZerologObject(e *zerolog.Event) { c.n.Add(1); e.Int("n", 1) }

func TestDisabledEventsAreNotBuilt(t *testing.T) {
	isolateGlobal(t)
	var buf buffer
	r := New(zerolog.New(&buf), Options{Root: zerolog.InfoLevel, ManageGlobalLevel: true})
	actors, group := r.Logger(Actors), r.Logger(Group)
	var c counted
	debug := func(l zerolog.Logger) { l.Debug().Object("x", &c).Msg("debug") }

	debug(actors)
	debug(group)
	if c.n.Load() != 0 || zerolog.GlobalLevel() != zerolog.InfoLevel {
		t.Fatalf("nothing at DEBUG: %d debug events built, global level %v; want 0 and info", c.n.Load(), zerolog.GlobalLevel())
	}

	r.Set(Actors, zerolog.DebugLevel)
	if zerolog.GlobalLevel() != zerolog.DebugLevel {
		t.Fatalf("global level %v with a logger at DEBUG", zerolog.GlobalLevel())
	}
	debug(actors)
	if c.n.Load() != 1 || len(buf.entries(t)) != 1 {
		t.Fatalf("the logger at DEBUG built %d events", c.n.Load())
	}

	r.Set(Actors, zerolog.InfoLevel)
	c.n.Store(0)
	debug(actors)
	debug(group)
	if c.n.Load() != 0 || zerolog.GlobalLevel() != zerolog.InfoLevel {
		t.Fatalf("back at INFO: %d debug events built, global %v", c.n.Load(), zerolog.GlobalLevel())
	}

	r.Set(RootName, zerolog.Disabled)
	actors.Error().Object("x", &c).Msg("off")
	if c.n.Load() != 0 || len(buf.entries(t)) != 0 {
		t.Fatal("with every logger OFF an error event was built or written")
	}
}

// Every managed registry keeps the levels it needs; an unmanaged one never
// moves the global level.
func TestGlobalLevelIsTheLowestFloor(t *testing.T) {
	isolateGlobal(t)
	zerolog.SetGlobalLevel(zerolog.TraceLevel)
	New(zerolog.Nop(), Options{Root: zerolog.Disabled}).Set("x", zerolog.ErrorLevel)
	if zerolog.GlobalLevel() != zerolog.TraceLevel {
		t.Fatalf("an unmanaged registry set the global level to %v", zerolog.GlobalLevel())
	}
	a := New(zerolog.Nop(), Options{Root: zerolog.WarnLevel, ManageGlobalLevel: true})
	b := New(zerolog.Nop(), Options{Root: zerolog.ErrorLevel, ManageGlobalLevel: true})
	if zerolog.GlobalLevel() != zerolog.WarnLevel {
		t.Fatalf("global %v, want warn (a's root)", zerolog.GlobalLevel())
	}
	b.Set("b.x", zerolog.DebugLevel)
	if zerolog.GlobalLevel() != zerolog.DebugLevel {
		t.Fatalf("global %v, want debug (b.x)", zerolog.GlobalLevel())
	}
	b.Set(RootName, zerolog.ErrorLevel) // root sets every logger, b.x too
	a.Set(RootName, zerolog.InfoLevel)
	if zerolog.GlobalLevel() != zerolog.InfoLevel {
		t.Fatalf("global %v, want info (a's new root)", zerolog.GlobalLevel())
	}
}

// Connect's (log4j's) semantics of a namespace.
func TestHierarchy(t *testing.T) {
	clk := newClock(1000)
	r := New(zerolog.Nop(), Options{Root: zerolog.InfoLevel, Now: clk.now})
	for _, n := range []string{"sluice.actors", "sluice.actors.source", "sluice.actors.source.jdbc", "sluice.actorsx", "sluice.group"} {
		r.Logger(n)
	}
	level := func(name string) zerolog.Level {
		t.Helper()
		s, ok := r.Level(name)
		if !ok {
			t.Fatalf("Level(%q): unknown", name)
		}
		return s.Level
	}
	if got := level("sluice.actors.source"); got != zerolog.InfoLevel {
		t.Fatalf("inherited %v from root, want info", got)
	}
	if _, ok := r.Level("sluice"); ok {
		t.Fatal(`"sluice" is known though no logger has that name`)
	}

	// A namespace covers itself and its dotted descendants only.
	clk.set(2000)
	got := r.Set("sluice.actors.source", zerolog.WarnLevel)
	if want := []string{"sluice.actors.source", "sluice.actors.source.jdbc"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Set returned %v, want %v", got, want)
	}
	clk.set(3000)
	got = r.Set("sluice.actors", zerolog.DebugLevel)
	if want := []string{"sluice.actors", "sluice.actors.source", "sluice.actors.source.jdbc"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Set returned %v, want %v (not sluice.actorsx)", got, want)
	}
	if level("sluice.actors.source") != zerolog.DebugLevel || level("sluice.actorsx") != zerolog.InfoLevel {
		t.Fatal("setting a namespace did not set its descendant, or set a mere prefix match")
	}
	// A descendant set later keeps its own level...
	clk.set(4000)
	r.Set("sluice.actors.source", zerolog.ErrorLevel)
	if level("sluice.actors.source.jdbc") != zerolog.ErrorLevel || level("sluice.actors") != zerolog.DebugLevel {
		t.Fatal("a descendant's level did not apply to its own descendants only")
	}
	// ...and a logger created later inherits from its nearest ancestor.
	r.Logger("sluice.actors.source.kafka")
	r.Logger("sluice.actors.sink")
	if level("sluice.actors.source.kafka") != zerolog.ErrorLevel || level("sluice.actors.sink") != zerolog.DebugLevel {
		t.Fatal("new loggers did not inherit from their nearest explicit ancestor")
	}

	// Setting a namespace that no logger has creates it.
	got = r.Set("com.example", zerolog.TraceLevel)
	if !reflect.DeepEqual(got, []string{"com.example"}) || level("com.example") != zerolog.TraceLevel {
		t.Fatalf("Set on a new namespace returned %v", got)
	}

	want := map[string]Setting{
		RootName:                    {Level: zerolog.InfoLevel},
		"sluice.actors":             {Level: zerolog.DebugLevel, LastModified: at(3000)},
		"sluice.actors.source":      {Level: zerolog.ErrorLevel, LastModified: at(4000)},
		"sluice.actors.source.jdbc": {Level: zerolog.ErrorLevel, LastModified: at(4000)},
		"com.example":               {Level: zerolog.TraceLevel, LastModified: at(4000)},
	}
	if got := r.Levels(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Levels() = %v\nwant       %v", got, want)
	}

	// Setting a level a logger already has lists it but keeps its time.
	clk.set(5000)
	got = r.Set("sluice.actors", zerolog.DebugLevel)
	if len(got) != 5 {
		t.Fatalf("Set returned %v; want the five loggers under sluice.actors", got)
	}
	s, _ := r.Level("sluice.actors")
	if !s.LastModified.Equal(at(3000)) {
		t.Fatalf("unchanged logger's last modified moved to %v", s.LastModified)
	}
	s, _ = r.Level("sluice.actors.source")
	if !s.LastModified.Equal(at(5000)) || s.Level != zerolog.DebugLevel {
		t.Fatalf("changed logger: %+v", s)
	}

	// root, in any case, sets every logger.
	got = r.Set("ROOT", zerolog.WarnLevel)
	if len(got) != 9 || !slices.Contains(got, RootName) {
		t.Fatalf("Set(ROOT) returned %v; want all eight loggers and root", got)
	}
	if n := len(r.Levels()); n != 9 {
		t.Fatalf("Levels() has %d loggers after Set(root), want 9", n)
	}
	for name := range r.Levels() {
		if l := mustLevel(t, r, name).Level; l != zerolog.WarnLevel {
			t.Fatalf("%s at %v after Set(root)", name, l)
		}
	}
	if s, ok := r.Level("Root"); !ok || s.Level != zerolog.WarnLevel || !s.LastModified.Equal(at(5000)) {
		t.Fatalf("Level(Root) = %+v, %v", s, ok)
	}
}

func mustLevel(t *testing.T, r *Registry, name string) Setting {
	t.Helper()
	s, ok := r.Level(name)
	if !ok {
		t.Fatalf("Level(%q): unknown", name)
	}
	return s
}

// The root logger carries no "logger" field, follows root's level, and the
// base's own level does not cap what the registry allows.
func TestRootLoggerAndBase(t *testing.T) {
	var buf buffer
	base := zerolog.New(&buf).Level(zerolog.ErrorLevel).With().Str("app", "sluice").Logger()
	r := New(base, Options{Root: zerolog.InfoLevel})
	root, x := r.Root(), r.Logger("x")
	root.Info().Msg("hello")
	root.Debug().Msg("hidden")
	es := buf.entries(t)
	if len(es) != 1 || es[0]["app"] != "sluice" || es[0]["logger"] != nil {
		t.Fatalf("root wrote %v", es)
	}
	r.Set(RootName, zerolog.Disabled)
	root.Log().Msg("no level")
	x.Error().Msg("error")
	if es := buf.entries(t); len(es) != 0 {
		t.Fatalf("OFF wrote %v", es)
	}
}

// Loggers log while levels change and are read: run with -race.
func TestConcurrentUse(t *testing.T) {
	isolateGlobal(t)
	var buf buffer
	r := New(zerolog.New(&buf), Options{Root: zerolog.InfoLevel, ManageGlobalLevel: true})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 4 {
		l := r.Logger(fmt.Sprintf("sluice.actors.t%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				l.Debug().Msg("d")
				l.Info().Msg("i")
			}
		}()
	}
	levels := []zerolog.Level{zerolog.DebugLevel, zerolog.InfoLevel, zerolog.WarnLevel}
	for i := range 200 {
		r.Set(Actors, levels[i%len(levels)])
		r.Logger(fmt.Sprintf("sluice.actors.new%d", i%7))
		_ = r.Levels()
		_, _ = r.Level(Actors)
	}
	r.Set(Actors, zerolog.ErrorLevel)
	close(stop)
	wg.Wait()
	buf.entries(t)
	t0 := r.Logger("sluice.actors.t0")
	t0.Warn().Msg("w")
	if es := buf.entries(t); len(es) != 0 {
		t.Fatalf("at ERROR a warning was written: %v", es)
	}
}
