package converters

import (
	"unsafe"

	"github.com/sluice-io/sluice/connectors"
)

// arenaChunk is the size of an Arena's chunks: a few hundred values of a
// hundred bytes share one allocation, and a string kept long after its
// batch holds no more than this alive.
const arenaChunk = 32 << 10

// Arena copies the bytes of the strings a sink task's converters return
// into chunks shared by many of them: one allocation per chunk instead of
// one per string. A consumed record's bytes belong to its fetch, so a
// string read from them must be a copy (a zero-copy string would keep a
// whole fetch response alive for as long as a task holds one value of it);
// the arena makes that copy cheap. Not safe for concurrent use: each sink
// task has its own. The zero value is ready to use.
type Arena struct {
	chunk []byte
}

// String returns a copy of b as a string.
func (a *Arena) String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaChunk/8 {
		// A large value would leave much of a chunk unused: it gets an
		// allocation of its own.
		return string(b)
	}
	if cap(a.chunk)-len(a.chunk) < len(b) {
		a.chunk = make([]byte, 0, arenaChunk)
	}
	off := len(a.chunk)
	a.chunk = append(a.chunk, b...)
	// The bytes of a chunk below its length are never written again (a
	// full chunk is replaced, never reset), so the string may alias them.
	return unsafe.String(&a.chunk[off], len(b))
}

// ToConnectArena is ToConnect with the string's bytes copied into a. The
// sink runtime calls it for a *StringConverter itself only, never through
// an interface: a converter that embeds StringConverter to override
// ToConnect would have it bypassed.
func (c *StringConverter) ToConnectArena(topic string, data []byte, a *Arena) (*connectors.Schema, any, error) {
	if data == nil {
		return connectors.OptionalStringSchema, nil, nil
	}
	return connectors.OptionalStringSchema, a.String(data), nil
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
