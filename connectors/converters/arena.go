package converters

import (
	"strings"
	"unsafe"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/strbox"
)

// arenaChunk is the size of an Arena's chunks: a few hundred values of a
// hundred bytes share one allocation, and a string kept long after its
// batch holds no more than this alive. Just under 32 KiB: the runtime's
// largest small size class holds 32 KiB less its 8-byte header room, and
// a larger object takes the slower path of a span of its own.
const arenaChunk = 32<<10 - 8

// boxSlab is how many string headers one allocation of Box holds.
const boxSlab = 256

// ArenaChunk is the size of an Arena's chunks, for a runtime that bounds
// how many its records hold.
const ArenaChunk = arenaChunk

// Arena copies the bytes of the strings a sink task's converters return
// into chunks shared by many of them: one allocation per chunk instead of
// one per string. A consumed record's bytes belong to its fetch, so a
// string read from them must be a copy (a zero-copy string would keep a
// whole fetch response alive for as long as a task holds one value of it);
// the arena makes that copy cheap. A task that only borrows its records
// (connectors.RecordBorrower) keeps no value, so its arena shares the
// fetched bytes instead (Share). Not safe for concurrent use: each sink
// task has its own. The zero value is ready to use.
type Arena struct {
	chunk []byte
	// boxes holds the headers of the strings Box made into interface
	// values: filled, then replaced, never written again below its
	// length until ReuseBoxes says so. boxed counts the strings boxed
	// since the last ReuseBoxes, in this slab and those it replaced.
	boxes []string
	boxed int
	// shares says that String returns the bytes it is given as a string
	// instead of a copy (Share).
	shares bool
	// For values written into the arena (FromConnectArena): the length
	// of the last one, which sizes the room given to the next, and
	// whether the room last given is the chunk's free tail.
	last    int
	inChunk bool
	// gen counts the chunks values were written into; lastGen is the
	// chunk of the last value kept, 0 when it has an allocation of its
	// own.
	gen, lastGen uint64
	// chunks, when set (TakeChunksFrom), gives the chunks values are
	// written into in place of fresh allocations.
	chunks func() []byte
}

// TakeChunksFrom has the arena write values (FromConnectArena) into
// chunks get returns, each empty with capacity ArenaChunk, instead of
// allocating them: a source task whose values are done with once Kafka
// acknowledged them hands a chunk out again once no value in it is in
// flight (ADR 0028). Strings (String) still get chunks of their own: a
// sink task keeps them as long as it likes.
func (a *Arena) TakeChunksFrom(get func() []byte) { a.chunks = get }

// NewChunk returns an empty chunk of capacity ArenaChunk whose bytes are
// not cleared, for a TakeChunksFrom source with none to hand out again.
func NewChunk() []byte { return freshChunk() }

// LastChunk says which chunk the last value written into the arena is
// in: chunks are numbered from 1 as the arena makes them, and 0 means an
// allocation of its own. A source task counts the records that hold each
// chunk alive with it.
func (a *Arena) LastChunk() uint64 { return a.lastGen }

// Drop lets go of the chunk values are written into and of the slab
// strings are boxed in. Values already given keep them alive until they
// are released; a task drops them when a poll brings nothing, so that an
// idle task holds no chunk, and no slab whose strings share bytes of the
// last fetch (Share) and would keep that fetch in memory.
func (a *Arena) Drop() {
	a.chunk, a.boxes, a.boxed = nil, nil, 0
}

// Forget says that the last value was not written into the arena
// (LastChunk is 0 until the next one is).
func (a *Arena) Forget() { a.lastGen = 0 }

// room is where the next value written into the arena is appended: the
// chunk's free tail, with length 0, or a fresh chunk when less than twice
// the last value is left. A large value (over an eighth of a chunk, like
// String's) gets an allocation of its own instead, sized for the last one.
// A value that outgrows the room is moved to an allocation of its own by
// append, which copies nothing of the values before it (the room has
// length 0). keep must be called with what was appended.
func (a *Arena) room() []byte {
	if a.last > arenaChunk/8 {
		a.inChunk = false
		return make([]byte, 0, a.last+64)
	}
	if cap(a.chunk)-len(a.chunk) < 2*a.last+64 {
		if a.chunks != nil {
			a.chunk = a.chunks()
		} else {
			a.chunk = freshChunk()
		}
		a.gen++
	}
	a.inChunk = true
	return a.chunk[len(a.chunk):len(a.chunk)]
}

// keep takes b, appended to room's slice, as a value: when it is in the
// chunk, the chunk's length moves past it; its capacity is cut to its
// length either way, so that nothing appended to it can reach the next
// value. The bytes a value leaves unused in an allocation of its own are
// bounded as JSONConverter.FromConnect bounds them: a value is held until
// Kafka acknowledges it, in a window buffer.memory bounds by length.
func (a *Arena) keep(room, b []byte) []byte {
	a.last, a.lastGen = len(b), 0
	if len(b) == 0 {
		return b[:0:0]
	}
	if a.inChunk && cap(b) == cap(room) {
		// Same capacity as the room: append did not move it, so b is
		// the chunk's bytes from its old length on.
		a.chunk = a.chunk[:len(a.chunk)+len(b)]
		a.lastGen = a.gen
		return b[:len(b):len(b)]
	}
	if spare := cap(b) - len(b); spare > 64 && spare > len(b)/8 {
		b = append(make([]byte, 0, len(b)), b...)
	}
	return b[:len(b):len(b)]
}

// Share makes String return the bytes it is given as they are, not a
// copy: for a sink task that only borrows its records
// (connectors.RecordBorrower), whose strings then never outlive the
// fetched bytes they are read from.
func (a *Arena) Share() { a.shares = true }

// String returns b as a string: a copy in a chunk, or, once Share was
// called, b's own bytes, which must then never change.
func (a *Arena) String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if a.shares {
		return unsafe.String(&b[0], len(b))
	}
	if len(b) > arenaChunk/8 {
		// A large value would leave much of a chunk unused: it gets an
		// allocation of its own.
		return string(b)
	}
	if cap(a.chunk)-len(a.chunk) < len(b) {
		a.chunk = freshChunk()
	}
	off := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	// The bytes of a chunk below its length are never written again (a
	// full chunk is replaced, never reset), so the string may alias them.
	return unsafe.String(&a.chunk[off], len(b))
}

// freshChunk returns an empty chunk of capacity arenaChunk whose bytes
// are not cleared: every byte of a chunk is written before a value holds
// it (String copies, room's caller appends), so clearing it first is work
// for nothing, on every chunk of every task's record path. The memory comes
// from strings.Builder, whose Grow is the standard library's one way to
// allocate bytes uncleared; the builder and the one-byte string it made
// are dropped, and the chunk is its buffer.
func freshChunk() []byte {
	var b strings.Builder
	b.Grow(arenaChunk)
	b.WriteByte(0)
	return unsafe.Slice(unsafe.StringData(b.String()), arenaChunk)[:0]
}

// Box returns s as an interface value (what a converter returns) without
// an allocation of its own: converting a string to an interface allocates
// its 16-byte header, once per record on a sink's path. The header is
// kept in a slab of boxSlab shared with the arena's other strings, so a
// boxed value keeps its slab alive, and with it the strings (and their
// chunks) of the slab's other values, as a string of a chunk keeps the
// chunk's other strings alive (ADR 0024).
func (a *Arena) Box(s string) any {
	if len(a.boxes) == cap(a.boxes) {
		a.boxes = make([]string, 0, boxSlab)
	}
	a.boxed++
	a.boxes = append(a.boxes, s)
	return strbox.Of(&a.boxes[len(a.boxes)-1])
}

// maxBoxSlab bounds the slab ReuseBoxes sizes for a whole batch's boxed
// strings; a batch that boxes more gets slabs of boxSlab, as without it.
const maxBoxSlab = 16 << 10

// ReuseBoxes says that nothing reads the values Box returned again: the
// slab they are in is written again from its start, and the next Box
// changes what an earlier one's interface value holds. A sink task calls
// it after a batch whose records nothing keeps once written (a borrowing
// task, and converters and transforms that keep nothing: ADR 0026), so
// that its boxes cost no allocation. A batch that filled more than one
// slab has the next sized for all of its strings, up to maxBoxSlab.
func (a *Arena) ReuseBoxes() {
	if a.boxed > cap(a.boxes) && a.boxed <= maxBoxSlab {
		a.boxes = make([]string, 0, a.boxed)
	}
	a.boxes, a.boxed = a.boxes[:0], 0
}

// ToConnectArena is ToConnect with the string's bytes in a (copied, or
// shared once a.Share was called) and its header boxed there too. The
// sink runtime calls it for a *StringConverter itself only, never through
// an interface: a converter that embeds StringConverter to override
// ToConnect would have it bypassed.
func (c *StringConverter) ToConnectArena(topic string, data []byte, a *Arena) (*connectors.Schema, any, error) {
	if data == nil {
		return connectors.OptionalStringSchema, nil, nil
	}
	return connectors.OptionalStringSchema, a.Box(a.String(data)), nil
}

// ToConnectArena is ToConnect with the value's strings (string values,
// struct fields, array elements, and the keys of maps with string keys and
// of schemaless objects) copied into a. The schema is read without it: the
// converter caches schemas, and a cached one must not hold a chunk alive.
// As for StringConverter, the sink runtime calls it for a *JSONConverter
// itself only, never through an interface.
func (c *JSONConverter) ToConnectArena(topic string, data []byte, a *Arena) (*connectors.Schema, any, error) {
	return c.toConnect(data, a)
}

// FromConnectArena is FromConnect with the value written into a: a source
// task's values share its chunks instead of one allocation each (and the
// scratch buffer FromConnect copies from). A chunk stays alive until
// Kafka acknowledged every value in it. As ToConnectArena, the source
// runtime calls it for a *JSONConverter itself only, never through an
// interface, so that a converter embedding JSONConverter to override
// FromConnect has its FromConnect called.
func (c *JSONConverter) FromConnectArena(topic string, schema *connectors.Schema, value any, a *Arena) ([]byte, error) {
	a.lastGen = 0
	if schema == nil && value == nil {
		return nil, nil
	}
	room := a.room()
	b, err := c.appendRecord(room, schema, value)
	if err != nil {
		// What was appended is past the chunk's length: the next value
		// writes over it.
		return nil, dataErr("JsonConverter", err)
	}
	return a.keep(room, b), nil
}

// FromConnectArena is FromConnect with the value written into a (see
// JSONConverter.FromConnectArena).
func (c *StringConverter) FromConnectArena(topic string, schema *connectors.Schema, value any, a *Arena) ([]byte, error) {
	a.lastGen = 0
	switch v := value.(type) {
	case nil:
		return nil, nil
	case string:
		room := a.room()
		return a.keep(room, append(room, v...)), nil
	}
	room := a.room()
	b, err := appendJavaString(room, schema, value)
	if err != nil {
		return nil, dataErr("StringConverter", err)
	}
	return a.keep(room, b), nil
}
