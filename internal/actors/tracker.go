package actors

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/offsets"
)

// offsetTracker advances, per source partition, a watermark over records in
// the order the task produced them: a record's offset becomes committable only
// when Kafka acknowledged it and every earlier record of the same source
// partition (invariant 1). Acks arrive on the producer's goroutines, so it is
// guarded by a mutex; the poll loop adds and takes.
type offsetTracker struct {
	mu       sync.Mutex
	parts    map[string]*partTrack
	inflight int
	// inflightBytes is the converted size of the records produced and not
	// yet acknowledged (reserve), the figure Connect bounds by
	// buffer.memory.
	// It is atomic so that reserve, once per record, takes no lock while
	// the window has room; it changes under mu everywhere else.
	inflightBytes atomic.Int64
	// wakeAtBytes is what inflightBytes must fall to before a waiting
	// reserve is woken (math.MaxInt64 when none waits: every ack wakes a
	// waitAtMost). reserve and waitAtMost are called by the pipeline's
	// one goroutine, so at most one of them waits.
	wakeAtBytes int64
	err         error // the first produce error: the task fails with it
	waiting     bool
	wakeup      chan struct{}
	// clean says every partition's acknowledged offset was flushed when
	// settled last looked; an ack that moves a watermark clears it, so that
	// settled walks the partitions again only after one did.
	clean bool

	// lastMap and lastPart cache the partition of the previous record: most
	// sources reuse one partition map for many records, and keying a map by
	// its JSON costs more than the rest of the record's bookkeeping. The
	// map itself is held (not only its address), so that no other map can
	// be allocated at its address while the cache compares with it.
	lastMap  map[string]any
	lastPart *partTrack
}

type partTrack struct {
	partition map[string]any
	// queue[head:] are the partition's tokens in produce order. The
	// acknowledged prefix is taken off by moving head; the array is used
	// again from its start once the queue is empty, and compacted once
	// head passes half of it, so that a busy partition's queue does not
	// move along its array and reallocate at every append past its end
	// (8% of a FileStreamSource worker's allocation, 2026-12-05). idle
	// lets go of an empty queue's array.
	queue   []*pending
	head    int
	acked   trackedOffset
	flushed trackedOffset
}

// trackedOffset is a record's source offset as the tracker keeps it: the
// map the task gave, or the one integer it gave instead
// (SourceRecord.OffsetKey), made into a map only when it is committed
// (committable), so that a source giving integers allocates no map per
// record.
type trackedOffset struct {
	m   map[string]any
	key string
	n   int64
}

func offsetOf(rec *connectors.SourceRecord) trackedOffset {
	if rec.Offset != nil {
		return trackedOffset{m: rec.Offset}
	}
	return trackedOffset{key: rec.OffsetKey, n: rec.OffsetInt}
}

func (o trackedOffset) isSet() bool { return o.m != nil || o.key != "" }

// asMap returns the offset as a map, built once: the built map is kept in o,
// so that markFlushed's map is recognised as this offset's.
func (o *trackedOffset) asMap() map[string]any {
	if o.m == nil && o.key != "" {
		o.m = map[string]any{o.key: o.n}
	}
	return o.m
}

// sameOffset says whether a and b are the same offset: the same map (maps
// are compared by identity: the task must not modify one it handed over),
// or the same integer under the same key.
func sameOffset(a, b trackedOffset) bool {
	if a.m != nil && b.m != nil {
		return reflect.ValueOf(a.m).Pointer() == reflect.ValueOf(b.m).Pointer()
	}
	return a.key != "" && a.key == b.key && a.n == b.n
}

// pending is one record from addBatch to ack (or release). Its memory is the caller's, one
// slab per poll (addBatch), so that the tracker allocates nothing per record; the tracker
// tells the slab when it is done with the token (ack), after which it reads it no more.
type pending struct {
	// slab is the memory the token is in (slabs.go), told when the
	// tracker is done with it; nil in tests that register tokens of
	// their own.
	slab   *outSlab
	part   *partTrack
	offset trackedOffset
	done   bool
	// live says the record is counted in flight: from addBatch until its
	// ack or release.
	live bool
	// bytes is what reserve counted of the record in inflightBytes, given
	// back at its ack or release.
	bytes int64
}

func newOffsetTracker() *offsetTracker {
	return &offsetTracker{parts: map[string]*partTrack{}, wakeup: make(chan struct{}, 1), wakeAtBytes: math.MaxInt64}
}

// addBatch registers the records of one poll, in the order they will be
// produced, under one lock: entry(i) is where records[i]'s token lives,
// which its ack (or release) takes. A nil record gets no token; a record
// without a source partition is only counted in flight.
func (t *offsetTracker) addBatch(records []*connectors.SourceRecord, entry func(i int) *pending, slab *outSlab) {
	t.mu.Lock()
	defer t.mu.Unlock()
	registered := 0
	for i, rec := range records {
		if rec == nil {
			continue
		}
		e := entry(i)
		*e = pending{live: true, slab: slab}
		registered++
		t.inflight++
		if rec.Partition == nil {
			continue
		}
		e.part, e.offset = t.partFor(rec.Partition), offsetOf(rec)
		e.part.queue = append(e.part.queue, e)
	}
	if slab != nil {
		slab.left.Add(int64(registered))
	}
}

// release takes a record that was registered but will never be produced
// (the task stops or fails in the middle of a poll's records) out of
// flight. Its partition's watermark stays before it for good, as after a
// failed record: its offset, and those of later records of the same
// partition, are never committed (invariant 1).
func (t *offsetTracker) release(e *pending) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.live {
		e.live = false
		t.inflight--
		t.unreserve(e)
		t.wake()
	}
}

// reserve blocks until the task's unacknowledged records leave room for n
// more bytes under budget, then counts them as e's, as a Connect task's
// producer blocks its send while its buffer.memory is full (Connect sets
// max.block.ms to its maximum, so the send waits rather than fails). The
// pipeline fails a record larger than budget before it gets here, as
// Java's producer does; should one come, it goes once nothing else is in
// flight rather than never. It returns early when a produce failed (the
// task fails with that error) or ctx ends; waited says whether it had to
// wait for acknowledgements.
func (t *offsetTracker) reserve(ctx context.Context, e *pending, n, budget int64) (waited bool, err error) {
	// The common case, room in the budget, takes no lock and allocates
	// no closure.
	if t.tryReserve(e, n, budget) {
		return false, nil
	}
	// Woken only once a quarter of the budget is free besides n, not at
	// every ack: a full window would otherwise trade one wake-up of the
	// pipeline per acknowledged record for one record produced.
	t.mu.Lock()
	t.wakeAtBytes = max(0, budget-n-budget/4)
	t.mu.Unlock()
	err = t.waitFor(ctx, func() bool { return t.tryReserveLocked(e, n, budget) })
	t.mu.Lock()
	t.wakeAtBytes = math.MaxInt64
	t.mu.Unlock()
	return true, err
}

func (t *offsetTracker) tryReserve(e *pending, n, budget int64) bool {
	// Only the pipeline's goroutine reserves, and no waiter exists while it
	// is here, so a sum briefly above budget before it is taken back
	// misleads nobody.
	if v := t.inflightBytes.Add(n); v <= budget || v == n {
		e.bytes = n
		return true
	}
	t.inflightBytes.Add(-n)
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tryReserveLocked(e, n, budget)
}

// tryReserveLocked counts n bytes as e's if they fit, or whatever the
// size once a produce failed (the task is failing); t.mu is held.
func (t *offsetTracker) tryReserveLocked(e *pending, n, budget int64) bool {
	if v := t.inflightBytes.Load(); t.err != nil || v == 0 || v+n <= budget {
		e.bytes = n
		t.inflightBytes.Add(n)
		return true
	}
	return false
}

// unreserve gives back what reserve counted for e; t.mu is held.
func (t *offsetTracker) unreserve(e *pending) {
	t.inflightBytes.Add(-e.bytes)
	e.bytes = 0
}

func (t *offsetTracker) partFor(partition map[string]any) *partTrack {
	if t.lastPart != nil && reflect.ValueOf(partition).Pointer() == reflect.ValueOf(t.lastMap).Pointer() {
		return t.lastPart
	}
	key, err := json.Marshal(partition)
	if err != nil {
		key = []byte(reflect.ValueOf(partition).String())
	}
	p := t.parts[string(key)]
	if p == nil {
		p = &partTrack{partition: partition}
		t.parts[string(key)] = p
	}
	t.lastMap, t.lastPart = partition, p
	return p
}

// ack marks a record acknowledged (err nil) or failed. A failed record stops
// its partition's watermark for good: nothing after it is committed, and the
// task fails with err.
func (t *offsetTracker) ack(e *pending, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.live = false
	t.inflight--
	t.unreserve(e)
	if err != nil {
		if t.err == nil {
			t.err = err
		}
	} else {
		e.done = true
		if p := e.part; p != nil {
			// Invariant 1: only a contiguous acknowledged prefix moves
			// the committable offset.
			i := p.head
			for i < len(p.queue) && p.queue[i].done {
				q := p.queue[i]
				if q.offset.isSet() {
					p.acked = q.offset
					t.clean = false
				}
				i++
				// Done with q: its slab may be handed out again, so
				// nothing of q is read after this (slabs.go).
				if q.slab != nil {
					q.slab.finish(-1)
				}
			}
			if i > p.head {
				p.pop(i)
			}
		} else if e.slab != nil {
			e.slab.finish(-1)
		}
	}
	t.wake()
}

// pop takes the tokens before queue[i] off the partition's queue.
func (p *partTrack) pop(i int) {
	clear(p.queue[p.head:i])
	p.head = i
	switch n := len(p.queue) - i; {
	case n == 0:
		p.queue, p.head = p.queue[:0], 0
	case i > n:
		copy(p.queue, p.queue[i:])
		clear(p.queue[n:])
		p.queue, p.head = p.queue[:n], 0
	}
}

// idle lets go of the arrays of the partitions' empty queues: a task that
// polls nothing holds no queue the size of its last burst.
func (t *offsetTracker) idle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.parts {
		if len(p.queue) == p.head {
			p.queue, p.head = nil, 0
		}
	}
}

// wake lets a waiter (waitAtMost, drain, reserve) look again; t.mu is
// held.
func (t *offsetTracker) wake() {
	if t.waiting && (t.err != nil || t.inflightBytes.Load() <= t.wakeAtBytes) {
		t.waiting = false
		select {
		case t.wakeup <- struct{}{}:
		default:
		}
	}
}

// skip marks a record that was dropped before produce (errors.tolerance=all)
// as done, so its partition's watermark can pass it.
func (t *offsetTracker) skip(e *pending) { t.ack(e, nil) }

// committable returns the offsets acknowledged since the last flush.
func (t *offsetTracker) committable() []offsets.PartitionOffset {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []offsets.PartitionOffset
	for _, p := range t.parts {
		if p.acked.isSet() && !sameOffset(p.acked, p.flushed) {
			out = append(out, offsets.PartitionOffset{Partition: p.partition, Offset: p.acked.asMap()})
		}
	}
	return out
}

// flushed records that entries were durably stored.
func (t *offsetTracker) markFlushed(entries []offsets.PartitionOffset) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range entries {
		key, _ := json.Marshal(e.Partition)
		if p := t.parts[string(key)]; p != nil {
			p.flushed = trackedOffset{m: e.Offset}
			if p.acked.m != nil && sameOffset(p.acked, p.flushed) {
				// The acknowledged offset is still the one committable
				// built: keep its integer form too, so that an ack of a
				// record with the same integer (a source that re-sends
				// a position) counts as flushed.
				p.flushed = p.acked
			}
		}
	}
}

// settled says that no record is in flight and every acknowledged offset
// was flushed: an offset flush now would write nothing, and none can have
// anything to write before the task polls records again.
func (t *offsetTracker) settled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inflight > 0 {
		return false
	}
	if !t.clean {
		for _, p := range t.parts {
			if p.acked.isSet() && !sameOffset(p.acked, p.flushed) {
				return false
			}
		}
		t.clean = true
	}
	return true
}

func (t *offsetTracker) inFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inflight
}

func (t *offsetTracker) failure() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// waitAtMost blocks until at most n records are in flight, ctx ends, or a
// produce failed: the source's backpressure by records (a task's stop
// drains with drain instead).
func (t *offsetTracker) waitAtMost(ctx context.Context, n int) error {
	return t.waitFor(ctx, func() bool { return t.err != nil || t.inflight <= n })
}

// drain blocks until no record is in flight or ctx ends. Unlike
// waitAtMost it does not return at a produce failure: a task that fails
// still waits for the acknowledgements of the records it produced before,
// so that they are in Kafka and their offsets committed, as Connect's
// producer delivers what was sent before it closes.
func (t *offsetTracker) drain(ctx context.Context) error {
	return t.waitFor(ctx, func() bool { return t.inflight <= 0 })
}

// waitFor blocks until ready (called with t.mu held, after every ack or
// release) returns true, or ctx ends.
func (t *offsetTracker) waitFor(ctx context.Context, ready func() bool) error {
	for {
		t.mu.Lock()
		if ready() {
			t.mu.Unlock()
			return nil
		}
		t.waiting = true
		t.mu.Unlock()
		select {
		case <-t.wakeup:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
