package actors

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"

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
	err      error // the first produce error: the task fails with it
	waiting  bool
	wakeup   chan struct{}
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
	queue     []*pending // in produce order; head is queue[0]
	acked     map[string]any
	flushed   map[string]any
}

// pending is one record from addBatch to ack (or release). Its memory is the caller's, one
// slab per poll (addBatch), so that the tracker allocates nothing per record.
type pending struct {
	part   *partTrack
	offset map[string]any
	done   bool
	// live says the record is counted in flight: from addBatch until its
	// ack or release.
	live bool
}

func newOffsetTracker() *offsetTracker {
	return &offsetTracker{parts: map[string]*partTrack{}, wakeup: make(chan struct{}, 1)}
}

// addBatch registers the records of one poll, in the order they will be
// produced, under one lock: entry(i) is where records[i]'s token lives,
// which its ack (or release) takes. A nil record gets no token; a record
// without a source partition is only counted in flight.
func (t *offsetTracker) addBatch(records []*connectors.SourceRecord, entry func(i int) *pending) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, rec := range records {
		if rec == nil {
			continue
		}
		e := entry(i)
		*e = pending{live: true}
		t.inflight++
		if rec.Partition == nil {
			continue
		}
		e.part, e.offset = t.partFor(rec.Partition), rec.Offset
		e.part.queue = append(e.part.queue, e)
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
		t.wake()
	}
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
	if err != nil {
		if t.err == nil {
			t.err = err
		}
	} else {
		e.done = true
		if p := e.part; p != nil {
			// Invariant 1: only a contiguous acknowledged prefix moves
			// the committable offset.
			i := 0
			for i < len(p.queue) && p.queue[i].done {
				if p.queue[i].offset != nil {
					p.acked = p.queue[i].offset
					t.clean = false
				}
				i++
			}
			if i > 0 {
				clear(p.queue[:i])
				p.queue = p.queue[i:]
			}
		}
	}
	t.wake()
}

// wake lets waitAtMost look again; t.mu is held.
func (t *offsetTracker) wake() {
	if t.waiting {
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
		if p.acked != nil && !sameOffset(p.acked, p.flushed) {
			out = append(out, offsets.PartitionOffset{Partition: p.partition, Offset: p.acked})
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
			p.flushed = e.Offset
		}
	}
}

func sameOffset(a, b map[string]any) bool {
	return a != nil && b != nil && reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
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
			if p.acked != nil && !sameOffset(p.acked, p.flushed) {
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
// produce failed. With n below the window it is the source's backpressure;
// with 0 it drains before the last flush.
func (t *offsetTracker) waitAtMost(ctx context.Context, n int) error {
	for {
		t.mu.Lock()
		if t.err != nil || t.inflight <= n {
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
