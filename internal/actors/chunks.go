package actors

import (
	"sync"
	"sync/atomic"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
)

// valueChunks is where a source task's values are written when its value
// converter can (arenaConverter): a poll's values share 32 KiB chunks instead
// of one allocation each (and a pooled buffer they were copied from), which
// were about a third of a Datagen value's conversion (ADR 0022).
//
// A chunk stays in memory as long as one record whose value is in it is
// unacknowledged, while buffer.memory counts only the values' own bytes.
// Records to a partition that stalls, interleaved with records to
// partitions that do not, would each hold a whole chunk: up to 20,000
// records in flight, 640 MiB. So the task counts the chunks its records
// in flight hold (pins), and writes values into chunks only while they
// are fewer than an eighth of buffer.memory's worth (and at least 4);
// past that, each value gets an allocation of its own, as before. The
// chunks then add at most an eighth of buffer.memory (128 KiB for a budget
// under 1 MiB) to what buffer.memory bounds.
type valueChunks struct {
	writer arenaConverter
	arena  converters.Arena
	// cur counts the records produced with a value in the chunk being
	// filled (chunk number curGen): curCount of them, not yet added to
	// it.
	cur      *chunkPin
	curGen   uint64
	curCount int64
	// pinned is the number of chunks some record in flight holds
	// (or being filled), and maxPinned its bound.
	pinned    atomic.Int64
	maxPinned int64
	// handed is the pin of the chunk last handed to the arena (chunk),
	// which becomes cur when a value produced from it is the first of
	// its chunk.
	handed *chunkPin
}

// chunkPin counts what holds one chunk: the records produced with their
// value in it, not yet acknowledged, and pinBias while it is the chunk
// being filled. Acks subtract from it at once; the pipeline adds the
// records it produced when the chunk stops being filled, with the bias
// taken off, so the count reaches 0 exactly once, after both.
//
// The count reaching 0 also says that no value in the chunk is referenced
// any more: the promise lets go of its record's value before it releases
// the pin (sourcePipeline.acked), a value never produced holds no count
// and is never read again, and franz-go is done with a record once it has
// called its promise. The chunk, with its pin, then goes to freeChunks,
// from which any source task's arena takes its next chunk (ADR 0028).
type chunkPin struct {
	live   atomic.Int64
	pinned *atomic.Int64
	// chunk is the chunk's whole memory.
	chunk []byte
}

const pinBias = 1 << 40

// freeChunks holds chunks (with their *chunkPin) whose values are all
// acknowledged, for any source task to write values into again: a busy
// task then fills the same few chunks instead of allocating 32 KiB every
// few hundred records. A sync.Pool, so that the collector empties it
// when the tasks stop producing: an idle worker holds no free chunk.
var freeChunks sync.Pool

// chunksReused counts the chunks handed out again from freeChunks, for
// tests.
var chunksReused atomic.Uint64

func newValueChunks(c converters.Converter, bufferMemory int64) *valueChunks {
	v := &valueChunks{writer: arenaConverterOf(c), maxPinned: max(4, bufferMemory/8/converters.ArenaChunk)}
	v.arena.TakeChunksFrom(v.chunk)
	return v
}

// chunk hands the arena its next chunk: a free one, else a new one.
func (v *valueChunks) chunk() []byte {
	p, _ := freeChunks.Get().(*chunkPin)
	if p == nil {
		p = &chunkPin{chunk: converters.NewChunk()}
	} else {
		chunksReused.Add(1)
	}
	v.handed = p
	return p.chunk[:0]
}

// convert is c.FromConnect, written into a chunk when it can be.
func (v *valueChunks) convert(c converters.Converter, topic string, s *connectors.Schema, value any) ([]byte, error) {
	if v.pinned.Load() < v.maxPinned {
		switch {
		case v.writer.json != nil:
			return v.writer.json.FromConnectArena(topic, s, value, &v.arena)
		case v.writer.str != nil:
			return v.writer.str.FromConnectArena(topic, s, value, &v.arena)
		}
	}
	v.arena.Forget()
	return c.FromConnect(topic, s, value)
}

// produced says that the value converted last is about to be produced: it
// returns the pin of its chunk, for release once it is acknowledged, or
// nil when the value has an allocation of its own.
func (v *valueChunks) produced() *chunkPin {
	gen := v.arena.LastChunk()
	if gen == 0 {
		return nil
	}
	if gen != v.curGen || v.cur == nil {
		v.done()
		// The value is the first produced from the chunk the arena was
		// handed last: the arena takes a chunk (chunk) whenever it moves
		// to a new one, and idle drops the arena's chunk, so handed is
		// set here.
		v.cur, v.handed = v.handed, nil
		v.cur.pinned = &v.pinned
		v.cur.live.Store(pinBias)
		v.pinned.Add(1)
		v.curGen, v.curCount = gen, 0
	}
	v.curCount++
	return v.cur
}

// done ends the count of the chunk being filled: from here on only its
// records' acks change it.
func (v *valueChunks) done() {
	if v.cur == nil {
		return
	}
	v.cur.release(v.curCount - pinBias)
	v.cur, v.curCount = nil, 0
}

// idle lets go of the chunk being filled: a task that polls nothing holds
// no chunk of its own.
func (v *valueChunks) idle() {
	v.done()
	v.arena.Drop()
}

// release adds delta to the pin's count; the chunk is no longer pinned
// when it reaches 0. Safe from any goroutine (acks come from the
// producer's).
func (c *chunkPin) release(delta int64) {
	if c.live.Add(delta) == 0 {
		c.pinned.Add(-1)
		// Every pin comes from chunk(), with its chunk; the pool holds
		// no task's valueChunks alive through it.
		c.pinned = nil
		freeChunks.Put(c)
	}
}
