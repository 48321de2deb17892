package actors

import (
	"bytes"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchPool gives a sink task's consumer the memory its fetches are
// decoded into, and takes it back once every record of a batch was
// recycled (kgo.WithPools, kgo.Record.Recycle): the decompressed bytes of
// each record batch and the []kgo.Record its records are decoded into.
// Without it each fetched batch allocates both anew, most of a busy sink's
// allocation, and the collector runs and marks at that pace (ADR 0026).
//
// Pooled memory is written again once given back, so a sink recycles a
// batch's records only when nothing can still read their keys, values and
// headers, which kgo decodes into it (sinkPipeline.recycles says when; a
// record's topic is not in it). Slices are kept by capacity in
// power-of-two classes, so that a batch gets one at least as large as it
// needs instead of one that must be replaced; sync.Pool drops what no
// fetch takes again within two collections, so an idle sink keeps none.
type fetchPool struct {
	bytes   classPool[byte]
	records classPool[kgo.Record]
	// reused counts the slices given out again.
	reused atomic.Uint64
}

// classPool keeps slices of T by capacity class (classFor, classOf).
type classPool[T any] [fetchPoolClasses]sync.Pool // of *[]T

// get returns an empty slice with room for n elements, one given back
// earlier when there is one (counted in reused); nil when n is beyond the
// classes.
func (cp *classPool[T]) get(n int, reused *atomic.Uint64) []T {
	c := classFor(n)
	if c >= fetchPoolClasses {
		return nil
	}
	if s, ok := cp[c].Get().(*[]T); ok {
		reused.Add(1)
		return (*s)[:0]
	}
	return make([]T, 0, 1<<c)
}

// put keeps s in the largest class its capacity holds.
func (cp *classPool[T]) put(s []T) {
	if c := classOf(cap(s)); c >= 0 && c < fetchPoolClasses {
		s = s[:0]
		cp[c].Put(&s)
	}
}

// fetchPoolClasses bounds the classes: 1 << (fetchPoolClasses-1) bytes or
// records at most, far over a batch's size (a record batch is at most the
// broker's message.max.bytes, 1 MiB by default, compressed); larger slices
// are left to the collector.
const fetchPoolClasses = 28

var (
	_ kgo.PoolDecompressBytes = (*fetchPool)(nil)
	_ kgo.PoolRecords         = (*fetchPool)(nil)
)

// classFor is the class whose slices hold at least n elements.
func classFor(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// classOf is the class a slice of capacity c is kept in: the largest whose
// size it holds.
func classOf(c int) int {
	if c <= 0 {
		return -1
	}
	return bits.Len(uint(c)) - 1
}

// snappyMaxRatio bounds how many times its size a snappy block can
// decode to: a copy of at most 64 bytes takes a tag of at least 2.
const snappyMaxRatio = 32

// xerialPrefix starts snappy in xerial's framing (Java's older clients),
// whose decoded length is the sum of its blocks'.
var xerialPrefix = []byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// GetDecompressBytes returns room for the batch's decompressed bytes.
// Snappy (Kafka's raw block format) says its decoded length up front; for
// the other codecs the room is a guess, and a codec that needs more
// allocates it (the larger slice then comes back here). A snappy header
// claiming more than snappyMaxRatio times the compressed size is not
// believed: kgo checks it against its limit only after this, and a
// corrupt batch must not have the pool allocate what it claims.
func (p *fetchPool) GetDecompressBytes(compressed []byte, codec kgo.CompressionCodecType) []byte {
	want := 4 * len(compressed)
	if codec == kgo.CodecSnappy && !bytes.HasPrefix(compressed, xerialPrefix) {
		if n, err := s2.DecodedLen(compressed); err == nil && n <= snappyMaxRatio*len(compressed) {
			want = n
		}
	}
	return p.bytes.get(want, &p.reused)
}

// PutDecompressBytes takes back a batch's bytes; kgo has cleared them.
func (p *fetchPool) PutDecompressBytes(b []byte) { p.bytes.put(b) }

// GetRecords returns room for n decoded records.
func (p *fetchPool) GetRecords(n int) []kgo.Record { return p.records.get(n, &p.reused) }

// PutRecords takes back a batch's records; Recycle has cleared each.
func (p *fetchPool) PutRecords(r []kgo.Record) { p.records.put(r) }
