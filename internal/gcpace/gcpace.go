// Package gcpace lets a busy worker's heap grow a fixed headroom past its
// live heap before Go collects it (ADR 0021), and keeps an idle worker's
// heap close to its live heap, with room in proportion to how fast it
// allocates (ADR 0023).
//
// Go collects when the heap has grown by GOGC percent (100 by default) of
// what the last collection found live, plus stacks and globals. A worker's
// live heap is small (15-20 MB), and moving records allocates hundreds of
// megabytes a second, so at the default it collects many times a second:
// marking, write barriers and assists were a fifth of a busy worker's CPU.
// The collector's work per second is about the allocation rate times the
// live heap over the room it leaves, so a fixed room (the headroom) in
// place of "as much again as is live" cuts it by that ratio, for memory
// that is bounded and known in advance. An idle worker allocates little;
// there the headroom would only let its resident set grow, so the pacer
// keeps the default until the worker allocates fast while it moves
// records. Idle, the default's room (as much again as is live) is mostly
// memory that a slow allocator never needs between two collections, so the
// pacer leaves less, in proportion to the allocation rate (ADR 0023).
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// DefaultHeadroom is the heap a busy worker may allocate past its live heap
// before a collection: about what GOGC=400 gives a worker of 16 MB live,
// where the measured CPU of the record path fell by a fifth to a quarter.
const DefaultHeadroom = 64 << 20

// The rate and the quiet time that tell busy from idle. Busy is allocating
// at least headroom/2 a second (32 MiB/s at the default). The collector's
// work grows with the allocation rate whatever the live heap, and so does
// what the headroom saves: at the default pace a worker collects about as
// many bytes as it allocates. Under that rate the saving is a few percent
// of a core at most, while the headroom's pages would still count in the
// resident set: a CDC worker streaming 1,000 changes a second allocates
// 10-20 MB a second, and with an eighth of the headroom as the threshold it
// held 50-60 MiB more at that pace (ADR 0021). Idle starts after three
// intervals in a row under that rate, or without records moving, so that
// a worker that pauses between batches keeps its headroom.
const (
	busyDivisor  = 2
	quietSamples = 3
	// maxPercent bounds GOGC when the live heap is tiny: a test binary or
	// a worker that has just started would otherwise get thousands.
	maxPercent = 1000
)

// While idle, GOGC is in proportion to the fastest allocation of the last
// rateWindow intervals: Go's default (or the process's own GOGC) at
// idleFullRate and above, never under idleFloorPercent (ADR 0023). A
// collection costs about the same whatever the room it leaves (it marks
// the live heap), so the collector's share of a core while idle is about
// the rate over the room times one collection's cost: with the room in
// proportion to the rate, that share is bounded by one collection's cost
// per byte times idleFullRate, whatever the rate under it. A collection of
// a worker with 500 idle connectors (12 MB live, 550 goroutines) took
// 25-35 ms of CPU, about 2.5 ns a byte scanned: at 1 MiB/s the bound is
// about a quarter of a percent of a core. 2 MiB/s held the same memory
// (the heap's fragmentation, not the goal, is then what is left) for
// twice the collections. Under the floor the worker would collect for the
// few kilobytes a second it allocates, and the room saved is small.
const (
	idleFullRate     = 1 << 20
	idleFloorPercent = 10
	rateWindow       = 10
)

// sample is what the pacer decides on: bytes allocated and units of work
// done over an interval, and GOGC's base at the last collection (live
// heap, stacks and globals scanned).
type sample struct {
	allocated uint64
	elapsed   time.Duration
	base      uint64
	work      uint64
}

// pacer is the decision, apart from the runtime, so that tests can drive
// it with samples.
type pacer struct {
	headroom uint64
	// idlePercent is GOGC when idle: Go's default, or what the process
	// started with.
	idlePercent int
	// counted: the process counts its work (Options.Work), and only an
	// interval with work in it can be busy.
	counted bool
	busy    bool
	quiet   int
	// rates are the allocation rates (bytes a second) of the last
	// rateWindow intervals, rates[seen%rateWindow] the next to replace;
	// seen counts the intervals observed.
	rates [rateWindow]uint64
	seen  int
}

// rate is the bytes allocated a second over the sample, 0 over no time.
func (s sample) rate() uint64 {
	if s.elapsed <= 0 {
		return 0
	}
	return uint64(float64(s.allocated) / s.elapsed.Seconds())
}

// fast says whether s allocated at the busy rate, while working if the
// process counts its work.
func (p *pacer) fast(s sample) bool {
	return s.elapsed > 0 && s.rate() >= p.headroom/busyDivisor && (!p.counted || s.work > 0)
}

// record puts a rate in the idle room's window, over its oldest.
func (p *pacer) record(rate uint64) {
	p.rates[p.seen%rateWindow] = rate
	p.seen++
}

// observe takes one interval's sample and returns the GOGC percent the
// process should run at.
func (p *pacer) observe(s sample) int {
	if s.elapsed <= 0 {
		return p.percent(s.base)
	}
	p.record(s.rate())
	if p.fast(s) {
		p.busy, p.quiet = true, 0
	} else if p.busy {
		p.quiet++
		if p.quiet >= quietSamples {
			p.busy, p.quiet = false, 0
		}
	}
	return p.percent(s.base)
}

// observeGC takes what was allocated between the last two collections and
// returns the GOGC percent the process should run at. A collection comes
// sooner than an interval once allocation starts (at the default, after as
// much again as is live): a run of work shorter than a few intervals gets
// the headroom from its second collection on. It only ever makes the
// worker busy; only the intervals' quiet spell makes it idle. Between
// two collections at least a sixteenth of the headroom must have been
// allocated.
func (p *pacer) observeGC(s sample) int {
	// Idle, the room may be small and collections come after little
	// allocation. One that came at the full rate counts in the rate
	// window at once, so that work starting on an idle worker gets Go's
	// default room from its first collection on (and the headroom from a
	// later one) instead of collecting at the idle pace until the next
	// interval. A collection forced soon after another follows too little
	// allocation to count.
	if !p.busy && s.allocated >= p.headroom/64 && s.rate() >= idleFullRate {
		p.record(s.rate())
	}
	// A collection forced soon after another (runtime.GC, a heap profile)
	// follows little allocation, however short the time between them.
	if s.allocated >= p.headroom/16 && p.fast(s) {
		p.busy, p.quiet = true, 0
	}
	return p.percent(s.base)
}

// percent is the GOGC that puts the heap goal at the live heap plus the
// headroom while busy: the goal is live + base*GOGC/100. It never goes
// below the idle percent: a worker whose live heap outgrows the headroom
// collects as it would without the pacer. Idle, it is idleRoom's.
func (p *pacer) percent(base uint64) int {
	if !p.busy {
		return p.idleRoom()
	}
	if base == 0 {
		base = 1
	}
	pc := p.headroom * 100 / base
	switch {
	case pc > maxPercent:
		return maxPercent
	case pc < uint64(p.idlePercent):
		return p.idlePercent
	}
	return int(pc)
}

// idleRoom is GOGC while idle: the idle percent times the fastest rate of
// the last rateWindow intervals over idleFullRate, at least
// idleFloorPercent and at most the idle percent. Before the first
// interval the rate is unknown, and the idle percent stands.
func (p *pacer) idleRoom() int {
	if p.seen == 0 || p.idlePercent <= idleFloorPercent {
		return p.idlePercent
	}
	var peak uint64
	for _, r := range p.rates {
		peak = max(peak, r)
	}
	if peak >= idleFullRate {
		return p.idlePercent
	}
	return max(idleFloorPercent, int(peak*uint64(p.idlePercent)/idleFullRate))
}

// Options configure Start.
type Options struct {
	// Headroom is the heap a busy worker may allocate past its live heap
	// before a collection; 0 turns the pacer off, busy or idle: Go's
	// default throughout.
	Headroom uint64
	// Interval is how often the allocation rate is read; default 1 s.
	Interval time.Duration
	// Work, when set, counts the process's units of work (a worker: the
	// records it moved); then only allocation while work is done makes
	// the process busy. Allocation without it (creating many connectors)
	// gets no headroom: long-lived objects allocated into a grown heap
	// stay spread over more of it once the heap shrinks back.
	Work func() uint64
	Log  zerolog.Logger
}

// Start paces the collector until stop is called, which puts GOGC back to
// what it was. It does nothing when the operator has set GOGC in the
// environment (theirs wins) or Headroom is 0. GOMEMLIMIT, if set, still
// caps the heap: Go collects at whichever of the two goals comes first.
func Start(o Options) (stop func()) { return start(o, debug.FreeOSMemory) }

// start is Start with the release of free pages given (tests count it).
func start(o Options, release func()) (stop func()) {
	if o.Headroom == 0 {
		return func() {}
	}
	if v, ok := os.LookupEnv("GOGC"); ok {
		o.Log.Debug().Str("GOGC", v).Msg("GOGC is set: the collector is left as it says (no busy headroom)")
		return func() {}
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	r := &runner{
		p:       pacer{headroom: o.Headroom, counted: o.Work != nil},
		work:    o.Work,
		release: release,
		log:     o.Log,
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	r.samples = []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
		{Name: "/gc/gogc:percent"},
	}
	metrics.Read(r.samples)
	r.p.idlePercent = int(r.samples[4].Value.Uint64())
	r.set = r.p.idlePercent
	r.lastAlloc, r.lastWork, r.lastAt = r.samples[0].Value.Uint64(), r.worked(), time.Now()
	r.gcAlloc, r.gcWork, r.gcAt = r.lastAlloc, r.lastWork, r.lastAt
	r.armGCHook()
	go r.loop(o.Interval)
	var once sync.Once
	return func() {
		once.Do(func() {
			close(r.done)
			<-r.stopped
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.set != r.p.idlePercent {
				debug.SetGCPercent(r.p.idlePercent)
				r.set = r.p.idlePercent
			}
		})
	}
}

type runner struct {
	log     zerolog.Logger
	work    func() uint64
	done    chan struct{}
	stopped chan struct{}

	mu                  sync.Mutex
	p                   pacer
	samples             []metrics.Sample
	set                 int // the GOGC percent last set
	lastAlloc, lastWork uint64
	lastAt              time.Time
	// gcAlloc, gcWork and gcAt are the bytes allocated, the work count and
	// the time at the last collection the hook saw.
	gcAlloc, gcWork uint64
	gcAt            time.Time
	// release returns free heap pages to the system (debug.FreeOSMemory;
	// tests count calls), and lastRelease is when it last ran.
	release     func()
	lastRelease time.Time
}

// worked is the work count now, 0 when the process does not count it.
func (r *runner) worked() uint64 {
	if r.work == nil {
		return 0
	}
	return r.work()
}

func (r *runner) loop(interval time.Duration) {
	defer close(r.stopped)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case now := <-t.C:
			r.tick(now)
		}
	}
}

// releaseEvery is the shortest time between two releases of the heap's
// free pages when the worker goes idle: each is a forced collection, and a
// worker that goes idle and busy again every few seconds leaves the rest
// to Go's scavenger.
const releaseEvery = 30 * time.Second

// tick reads the allocation rate and moves between busy and idle. Going
// idle, it gives the headroom's pages back at once (debug.FreeOSMemory,
// at most once per releaseEvery): Go's background scavenger returns them
// at a pace of a few MB a second, and a CDC worker that had streamed fast
// still held 50-60 MiB more than before the pacer twenty seconds later
// (ADR 0021). It only returns what the heap no longer uses; once the busy
// intervals have left the rate window, the idle room (idleRoom) takes the
// goal lower still, and Go's scavenger returns the pages that frees.
func (r *runner) tick(now time.Time) {
	if r.tickLocked(now) {
		r.release()
	}
}

func (r *runner) tickLocked(now time.Time) (release bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	metrics.Read(r.samples)
	alloc, work := r.samples[0].Value.Uint64(), r.worked()
	wasBusy := r.p.busy
	pc := r.p.observe(sample{allocated: alloc - r.lastAlloc, elapsed: now.Sub(r.lastAt), base: r.base(), work: work - r.lastWork})
	r.lastAlloc, r.lastWork, r.lastAt = alloc, work, now
	if r.p.busy != wasBusy {
		if r.p.busy {
			r.log.Debug().Int("gogc", pc).Uint64("headroom_bytes", r.p.headroom).Msg("busy: the heap may grow by the headroom before a collection")
		} else {
			r.log.Debug().Int("gogc", pc).Msg("idle: the heap's room follows the allocation rate again")
			if r.lastRelease.IsZero() || now.Sub(r.lastRelease) >= releaseEvery {
				release, r.lastRelease = true, now
			}
		}
	}
	r.apply(pc)
	return release
}

// afterGC runs after each collection. Collections that follow each other
// at the busy rate make the worker busy without waiting for the next
// interval; while busy, the live heap each one found moves the goal with
// it at once, so a heap that grows fast is never left with a goal many
// times its size.
func (r *runner) afterGC() {
	r.mu.Lock()
	defer r.mu.Unlock()
	metrics.Read(r.samples)
	now, alloc, work := time.Now(), r.samples[0].Value.Uint64(), r.worked()
	wasBusy := r.p.busy
	pc := r.p.observeGC(sample{allocated: alloc - r.gcAlloc, elapsed: now.Sub(r.gcAt), base: r.base(), work: work - r.gcWork})
	r.gcAlloc, r.gcWork, r.gcAt = alloc, work, now
	if r.p.busy && !wasBusy {
		r.log.Debug().Int("gogc", pc).Uint64("headroom_bytes", r.p.headroom).Msg("busy: the heap may grow by the headroom before a collection")
	}
	r.apply(pc)
}

func (r *runner) base() uint64 {
	return r.samples[1].Value.Uint64() + r.samples[2].Value.Uint64() + r.samples[3].Value.Uint64()
}

// apply sets GOGC when it moved by more than an eighth: each change
// recomputes the heap goal, and small moves buy nothing.
func (r *runner) apply(pc int) {
	d := pc - r.set
	if d < 0 {
		d = -d
	}
	if pc == r.set || (d*8 < r.set && pc != r.p.idlePercent) {
		return
	}
	debug.SetGCPercent(pc)
	r.set = pc
}

// gcSentinel is allocated for its cleanup, which runs after the collection
// that frees it. It holds a pointer so that it is never one of the tiny
// allocations that share a block (whose cleanups may never run).
type gcSentinel struct {
	_ *byte
	_ [8]byte
}

// armGCHook calls afterGC after the next collection, and rearms itself
// there, until stop.
func (r *runner) armGCHook() {
	s := new(gcSentinel)
	runtime.AddCleanup(s, func(r *runner) {
		select {
		case <-r.done:
			return
		default:
		}
		r.afterGC()
		r.armGCHook()
	}, r)
}
