package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

const mib = 1 << 20

// second is one interval's sample: allocated bytes in one second, and a
// GOGC base of 16 MiB.
func second(allocated uint64) sample {
	return sample{allocated: allocated, elapsed: time.Second, base: 16 * mib}
}

func TestPacerStaysAtTheDefaultWhileAllocationIsSlow(t *testing.T) {
	p := pacer{headroom: 64 * mib, idlePercent: 100}
	for i := range 30 {
		// Just under the busy rate (headroom/busyDivisor a second).
		if pc := p.observe(second(64*mib/busyDivisor - 100_000)); pc != 100 || p.busy {
			t.Fatalf("interval %d: GOGC %d busy %v; want 100 and idle", i, pc, p.busy)
		}
	}
}

func TestPacerGivesTheHeadroomWhenBusy(t *testing.T) {
	p := pacer{headroom: 64 * mib, idlePercent: 100}
	if pc := p.observe(second(200 * mib)); pc != 400 || !p.busy {
		t.Fatalf("200 MiB/s with a 16 MiB base: GOGC %d busy %v; want 400 (goal = live + 64 MiB)", pc, p.busy)
	}
	// The goal follows the live heap: a larger one gets a smaller percent,
	// never below the default.
	if pc := p.observe(sample{allocated: 200 * mib, elapsed: time.Second, base: 32 * mib}); pc != 200 {
		t.Errorf("32 MiB base: GOGC %d, want 200", pc)
	}
	if pc := p.observe(sample{allocated: 200 * mib, elapsed: time.Second, base: 256 * mib}); pc != 100 {
		t.Errorf("256 MiB base, larger than the headroom: GOGC %d, want the default 100", pc)
	}
	if pc := p.observe(sample{allocated: 200 * mib, elapsed: time.Second, base: 1024}); pc != maxPercent {
		t.Errorf("a tiny base: GOGC %d, want the cap %d", pc, maxPercent)
	}
}

func TestPacerGoesIdleOnlyAfterAQuietSpell(t *testing.T) {
	p := pacer{headroom: 64 * mib, idlePercent: 100}
	p.observe(second(100 * mib))
	// Nine quiet seconds, then a busy one: the spell starts again.
	for range quietSamples - 1 {
		if p.observe(second(64*mib/busyDivisor - mib)); !p.busy {
			t.Fatal("went idle before a whole quiet spell")
		}
	}
	p.observe(second(64 * mib / busyDivisor))
	for i := range quietSamples - 1 {
		if p.observe(second(mib)); !p.busy {
			t.Fatalf("went idle %d seconds into the second spell; a busy second should restart it", i+1)
		}
	}
	if pc := p.observe(second(mib)); pc != 100 || p.busy {
		t.Fatalf("after %d quiet seconds: GOGC %d busy %v; want 100 and idle", quietSamples, pc, p.busy)
	}
}

func TestPacerGoesBusyOnCollectionsThatComeFast(t *testing.T) {
	p := pacer{headroom: 64 * mib, idlePercent: 100}
	// An idle worker: a collection after 16 MiB in ten seconds.
	if pc := p.observeGC(sample{allocated: 16 * mib, elapsed: 10 * time.Second, base: 16 * mib}); pc != 100 || p.busy {
		t.Fatalf("collections 10 s apart: GOGC %d busy %v; want 100 and idle", pc, p.busy)
	}
	// Work starts: the next collection comes 50 ms later.
	if pc := p.observeGC(sample{allocated: 16 * mib, elapsed: 50 * time.Millisecond, base: 16 * mib}); pc != 400 || !p.busy {
		t.Fatalf("collections 50 ms apart: GOGC %d busy %v; want 400 and busy", pc, p.busy)
	}
	// A collection forced right after another follows little allocation.
	q := pacer{headroom: 64 * mib, idlePercent: 100}
	if q.observeGC(sample{allocated: mib, elapsed: 10 * time.Millisecond, base: 16 * mib}); q.busy {
		t.Fatal("1 MiB in 10 ms between a collection and a forced one made the worker busy")
	}
	// A slow collection does not end busy: only a quiet spell of
	// intervals does.
	if p.observeGC(sample{allocated: mib, elapsed: 30 * time.Second, base: 16 * mib}); !p.busy {
		t.Fatal("a slow collection made the worker idle")
	}
}

// With a work count, allocating fast is busy only while work is done: a
// worker creating hundreds of connectors allocates fast and moves nothing.
func TestPacerCountingWorkNeedsWorkToBeBusy(t *testing.T) {
	p := pacer{headroom: 64 * mib, idlePercent: 100, counted: true}
	if pc := p.observe(second(200 * mib)); pc != 100 || p.busy {
		t.Fatalf("200 MiB/s and no work: GOGC %d busy %v; want 100 and idle", pc, p.busy)
	}
	if pc := p.observeGC(sample{allocated: 16 * mib, elapsed: 50 * time.Millisecond, base: 16 * mib}); pc != 100 || p.busy {
		t.Fatalf("collections 50 ms apart and no work: GOGC %d busy %v; want 100 and idle", pc, p.busy)
	}
	s := second(200 * mib)
	s.work = 1000
	if pc := p.observe(s); pc != 400 || !p.busy {
		t.Fatalf("200 MiB/s moving 1000 records: GOGC %d busy %v; want 400 and busy", pc, p.busy)
	}
	// Work stops while allocation goes on: that is a quiet second.
	for range quietSamples {
		p.observe(second(200 * mib))
	}
	if p.busy {
		t.Fatalf("still busy after %d seconds without work", quietSamples)
	}
}

func TestPacerKeepsAnIdlePercentOtherThanGos(t *testing.T) {
	p := pacer{headroom: 64 * mib, idlePercent: 50}
	if pc := p.observe(second(idleFullRate)); pc != 50 {
		t.Errorf("idle at the full rate: GOGC %d, want the process's own 50", pc)
	}
	if pc := p.observe(sample{allocated: 200 * mib, elapsed: time.Second, base: 512 * mib}); pc != 50 {
		t.Errorf("busy with a live heap past the headroom: GOGC %d, want 50", pc)
	}
}

// Idle, the room follows the fastest rate of the last rateWindow
// intervals: the default at idleFullRate and above, in proportion under
// it, never under the floor; before any interval, the default.
func TestPacerIdleRoomFollowsTheAllocationRate(t *testing.T) {
	p := pacer{headroom: 64 * mib, idlePercent: 100}
	if pc := p.observeGC(sample{allocated: mib, elapsed: 10 * time.Second, base: 16 * mib}); pc != 100 {
		t.Fatalf("before any interval: GOGC %d, want the default 100", pc)
	}
	for _, tc := range []struct {
		rate uint64
		want int
	}{
		{4 * idleFullRate, 100},
		{idleFullRate, 100},
		{idleFullRate / 2, 50},
		{idleFullRate / 4, 25},
		{idleFullRate / 20, idleFloorPercent},
		{0, idleFloorPercent},
	} {
		q := pacer{headroom: 64 * mib, idlePercent: 100}
		if pc := q.observe(second(tc.rate)); pc != tc.want || q.busy {
			t.Errorf("idle at %d B/s: GOGC %d busy %v; want %d", tc.rate, pc, q.busy, tc.want)
		}
		// The base does not enter: the room is a share of it.
		if pc := q.percent(512 * mib); pc != tc.want {
			t.Errorf("idle at %d B/s with a 512 MiB base: GOGC %d, want %d", tc.rate, pc, tc.want)
		}
	}
	// A second at the full rate holds the default for the window; the
	// interval that pushes it out lets the room shrink.
	p.observe(second(idleFullRate))
	for i := range rateWindow - 1 {
		if pc := p.observe(second(0)); pc != 100 {
			t.Fatalf("%d quiet seconds after a fast one: GOGC %d, want 100 while it is in the window", i+1, pc)
		}
	}
	if pc := p.observe(second(0)); pc != idleFloorPercent {
		t.Fatalf("%d quiet seconds: GOGC %d, want the floor %d", rateWindow, pc, idleFloorPercent)
	}
	// Work starting on an idle worker: collections come after a small
	// room, but fast; the first one puts the room back to the default, and
	// the next, after more than a sixteenth of the headroom, is busy.
	if pc := p.observeGC(sample{allocated: 3 * mib / 2, elapsed: 5 * time.Millisecond, base: 16 * mib}); pc != 100 || p.busy {
		t.Fatalf("idle, a collection after 1.5 MiB in 5 ms: GOGC %d busy %v; want the default 100", pc, p.busy)
	}
	if pc := p.observeGC(sample{allocated: 16 * mib, elapsed: 50 * time.Millisecond, base: 16 * mib}); pc != 400 || !p.busy {
		t.Fatalf("then one after 16 MiB in 50 ms: GOGC %d busy %v; want 400 and busy", pc, p.busy)
	}
	// A collection forced after little allocation leaves the room alone.
	q := pacer{headroom: 64 * mib, idlePercent: 100}
	q.observe(second(0))
	if pc := q.observeGC(sample{allocated: 64 << 10, elapsed: time.Millisecond, base: 16 * mib}); pc != idleFloorPercent {
		t.Errorf("idle, a forced collection 64 KiB after another: GOGC %d, want the floor %d", pc, idleFloorPercent)
	}
	// An idle percent at or under the floor is left as it is.
	low := pacer{headroom: 64 * mib, idlePercent: 5}
	if pc := low.observe(second(0)); pc != 5 {
		t.Errorf("idle percent 5: GOGC %d, want 5", pc)
	}
}

// atDefaultGOGC skips the test when GOGC is in its environment (the pacer
// then does nothing), and sets Go's default for the test's duration.
func atDefaultGOGC(t *testing.T, why string) {
	t.Helper()
	if _, ok := os.LookupEnv("GOGC"); ok {
		t.Skip(why)
	}
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// garbage keeps the last chunk reachable from a global, so that every
// chunk is a heap allocation.
var garbage atomic.Pointer[[]byte]

// allocateFor allocates and drops about rate bytes a second until stop.
func allocateFor(stop <-chan struct{}, rate int) {
	const chunk = 64 << 10
	allocateEvery(stop, rate/100/chunk, chunk)
}

// allocateEvery allocates and drops n blocks of size bytes every 10 ms
// until stop.
func allocateEvery(stop <-chan struct{}, n, size int) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			for range n {
				b := make([]byte, size)
				garbage.Store(&b)
			}
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (GOGC now %d)", what, gogc())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStartPacesTheRuntime runs the pacer on this process: allocating fast
// raises GOGC so that the heap goal is about the live heap plus the
// headroom, stopping lets it fall back, and stop restores the default.
func TestStartPacesTheRuntime(t *testing.T) {
	atDefaultGOGC(t, "GOGC is set in this test's environment; TestStartLeavesAnOperatorsGOGC covers that case")
	// A live heap of a worker's size: with the test binary's few MiB alone,
	// GOGC would be capped at maxPercent and the room below it smaller.
	live := make([]byte, 16*mib)
	defer runtime.KeepAlive(live)
	stop := Start(Options{Headroom: 64 * mib, Interval: 20 * time.Millisecond, Log: zerolog.Nop()})
	defer stop()

	done := make(chan struct{})
	go allocateFor(done, 400*mib)
	waitFor(t, "GOGC above 100 while allocating 400 MiB/s", func() bool { return gogc() > 100 })
	runtime.GC()
	// The goal is live + base*GOGC/100 = live + 64 MiB, give or take the
	// base's drift between the last collection and this read.
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	waitFor(t, "a heap goal of about live + 64 MiB", func() bool {
		metrics.Read(s)
		room := int64(s[0].Value.Uint64()) - int64(s[1].Value.Uint64())
		return room > 48*mib && room < 80*mib
	})
	close(done)
	// Idle after three quiet intervals, and the room shrinks once the
	// busy intervals have left the rate window.
	waitFor(t, "GOGC under 100 once allocation stopped", func() bool { return gogc() < 100 })

	done = make(chan struct{})
	go allocateFor(done, 400*mib)
	waitFor(t, "busy again", func() bool { return gogc() > 100 })
	close(done)
	stop()
	if pc := gogc(); pc != 100 {
		t.Errorf("after stop: GOGC %d, want 100 restored", pc)
	}
}

// TestStartIdleGoalStaysNearTheLiveHeap: a process that allocates slowly
// gets a heap goal a fraction of its live heap above it, where Go's
// default would leave as much again.
func TestStartIdleGoalStaysNearTheLiveHeap(t *testing.T) {
	atDefaultGOGC(t, "GOGC is set in this test's environment")
	live := make([]byte, 16*mib)
	defer runtime.KeepAlive(live)
	// About 200 KiB a second, in 2 KiB allocations: idle, a room of about
	// a fifth of the live heap (up to two fifths with the ticker's jitter).
	done := make(chan struct{})
	defer close(done)
	go allocateEvery(done, 1, 2<<10)
	stop := Start(Options{Headroom: 64 * mib, Interval: 20 * time.Millisecond, Log: zerolog.Nop()})
	defer stop()
	waitFor(t, "an idle GOGC under half the default", func() bool { pc := gogc(); return pc <= 50 && pc >= idleFloorPercent })
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if room := s[0].Value.Uint64() - s[1].Value.Uint64(); room > 10*mib {
		t.Errorf("idle at about 200 KiB/s with 16 MiB live: the goal is %d MiB above the live heap (GOGC %d), want well under the default's 16", room/mib, gogc())
	}
}

// TestStartGoesBusyBeforeTheFirstInterval: with an interval far longer
// than the test, only the collections can tell the pacer that the process
// allocates fast.
func TestStartGoesBusyBeforeTheFirstInterval(t *testing.T) {
	atDefaultGOGC(t, "GOGC is set in this test's environment")
	stop := Start(Options{Headroom: 64 * mib, Interval: time.Hour, Log: zerolog.Nop()})
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go allocateFor(done, 400*mib)
	waitFor(t, "GOGC above 100 from the collections alone", func() bool { return gogc() > 100 })
}

// TestStartWithWorkCounted: allocating fast while the work count stands
// still leaves GOGC alone; once it moves, the process is busy.
func TestStartWithWorkCounted(t *testing.T) {
	atDefaultGOGC(t, "GOGC is set in this test's environment")
	var work atomic.Uint64
	stop := Start(Options{Headroom: 64 * mib, Interval: 20 * time.Millisecond, Work: work.Load, Log: zerolog.Nop()})
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go allocateFor(done, 400*mib)
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if pc := gogc(); pc > 100 {
			t.Fatalf("GOGC rose to %d with no work done", pc)
		}
		time.Sleep(5 * time.Millisecond)
	}
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				work.Add(10)
			}
		}
	}()
	waitFor(t, "busy once work is done", func() bool { return gogc() > 100 })
}

// TestGoingIdleReleasesOnceInAWhile: the first idle after busy returns
// the heap's free pages; another within releaseEvery leaves them to Go's
// scavenger.
func TestGoingIdleReleasesOnceInAWhile(t *testing.T) {
	atDefaultGOGC(t, "GOGC is set in this test's environment")
	live := make([]byte, 16*mib)
	defer runtime.KeepAlive(live)
	var released atomic.Int32
	stop := start(Options{Headroom: 64 * mib, Interval: 20 * time.Millisecond, Log: zerolog.Nop()}, func() { released.Add(1) })
	defer stop()
	for round := range 2 {
		done := make(chan struct{})
		go allocateFor(done, 400*mib)
		waitFor(t, "busy", func() bool { return gogc() > 100 })
		close(done)
		waitFor(t, "idle", func() bool { return gogc() <= 100 })
		time.Sleep(50 * time.Millisecond)
		if n := released.Load(); n != 1 {
			t.Fatalf("round %d: %d releases, want 1 (the first idle releases, the second is within %v)", round, n, releaseEvery)
		}
	}
}

// TestStartLeavesAnOperatorsGOGC: GOGC in the environment wins, and a
// headroom of 0 turns the pacer off.
func TestStartLeavesAnOperatorsGOGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, tc := range []struct {
		name     string
		env      bool
		headroom uint64
	}{
		{"GOGC set", true, 64 * mib},
		{"headroom 0", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env {
				t.Setenv("GOGC", "100")
			}
			stop := Start(Options{Headroom: tc.headroom, Interval: 10 * time.Millisecond, Log: zerolog.Nop()})
			defer stop()
			done := make(chan struct{})
			go allocateFor(done, 400*mib)
			defer close(done)
			deadline := time.Now().Add(300 * time.Millisecond)
			for time.Now().Before(deadline) {
				if pc := gogc(); pc != 100 {
					t.Fatalf("GOGC moved to %d", pc)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
