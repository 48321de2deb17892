package actors

import (
	"sync"
	"sync/atomic"
)

// outSlab is the memory of one poll's records on their way to Kafka (their
// outgoing: the offset tracker's token, the kgo.Record, the promise's
// bookkeeping), handed out again for a later poll once every record in it
// is finished with, instead of allocated for each poll: a Datagen poll's
// slab is 232 KB, which the runtime cleared and the collector marked and
// freed for every thousand records (ADR 0029).
//
// A record is finished with once the offset tracker let go of its token:
// when its partition's watermark passed it (offsetTracker.ack takes the
// acknowledged prefix off the partition's queue), or at its
// acknowledgement when it has no source partition. By then franz-go has
// called its promise, after which it reads nothing of the record but its
// Context (which is why that is never the outgoing: see outgoing), and the
// promise reads nothing of its outgoing after the tracker's ack. A record
// that failed, or that was never produced (release), stays in the
// tracker's queue for the rest of the run, and its slab goes to the
// collector rather than back.
type outSlab struct {
	out []outgoing
	// left counts the slab's records registered with the tracker and not
	// yet finished with, plus slabBias while sendBatch fills the slab: it
	// reaches 0 once, after both.
	left atomic.Int64
}

const slabBias = 1 << 40

// freeSlabs keeps slabs by capacity class (classFor in fetchpool.go); a
// sync.Pool, so that an idle worker keeps none for long.
var freeSlabs [slabClasses]sync.Pool // of *outSlab

// slabClasses bounds the classes: a poll of more than 1<<(slabClasses-1)
// records gets a slab that is never given back.
const slabClasses = 17

// slabsReused counts the slabs handed out again, and slabsFreed those
// given back, for tests.
var slabsReused, slabsFreed atomic.Uint64

// getSlab returns a slab of n cleared records, counted as being filled.
func getSlab(n int) *outSlab {
	c := classFor(n)
	var s *outSlab
	if c < slabClasses {
		if s, _ = freeSlabs[c].Get().(*outSlab); s != nil {
			slabsReused.Add(1)
			s.out = s.out[:n]
			clear(s.out)
		} else {
			s = &outSlab{out: make([]outgoing, n, 1<<c)}
		}
	} else {
		s = &outSlab{out: make([]outgoing, n)}
	}
	s.left.Store(slabBias)
	return s
}

// filled says that sendBatch handed every record of the slab over.
func (s *outSlab) filled() { s.finish(-slabBias) }

// finish subtracts delta from the slab's count and gives the slab back
// when it reaches 0. Safe from any goroutine.
func (s *outSlab) finish(delta int64) {
	if s.left.Add(delta) != 0 {
		return
	}
	if c := classOf(cap(s.out)); c >= 0 && c < slabClasses && 1<<c == cap(s.out) {
		slabsFreed.Add(1)
		freeSlabs[c].Put(s)
	}
}
