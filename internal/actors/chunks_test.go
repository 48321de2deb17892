package actors

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
)

// A source task's values share chunks only while the chunks its records
// in flight hold stay under an eighth of buffer.memory: with no acks,
// values get allocations of their own once that many chunks are held, and
// chunks are used again once acks let some go. Every value keeps its
// bytes throughout.
func TestValueChunksAreBoundedByWhatIsInFlight(t *testing.T) {
	conv := converters.NewJSONConverter()
	if err := conv.Configure(map[string]string{"schemas.enable": "false"}, false); err != nil {
		t.Fatal(err)
	}
	const maxChunks = 4
	v := newValueChunks(conv, maxChunks*8*converters.ArenaChunk)
	if v.maxPinned != maxChunks {
		t.Fatalf("maxPinned %d, want %d", v.maxPinned, maxChunks)
	}
	pad := strings.Repeat("x", 1000)
	type inFlight struct {
		want, got []byte
		pin       *chunkPin
	}
	var flight []inFlight
	produce := func(i int) *chunkPin {
		t.Helper()
		value := fmt.Sprintf("%d:%s", i, pad)
		got, err := v.convert(conv, "t", connectors.StringSchema, value)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := conv.FromConnect("t", connectors.StringSchema, value)
		pin := v.produced()
		flight = append(flight, inFlight{want, got, pin})
		return pin
	}
	// About 30 values of 1 KB fill a chunk: 4 chunks, then values of
	// their own.
	var own int
	for i := range 200 {
		if produce(i) == nil {
			own++
		}
	}
	if n := v.pinned.Load(); n != maxChunks {
		t.Fatalf("%d chunks pinned with nothing acknowledged, want %d", n, maxChunks)
	}
	if own < 200-maxChunks*converters.ArenaChunk/1000 {
		t.Fatalf("only %d of 200 values had an allocation of their own past %d chunks", own, maxChunks)
	}
	// Acks come from the producer's goroutines, in any order.
	var wg sync.WaitGroup
	for _, f := range flight {
		if f.pin != nil {
			wg.Go(func() { f.pin.release(-1) })
		}
	}
	wg.Wait()
	if n := v.pinned.Load(); n != 1 {
		t.Fatalf("%d chunks pinned once every record was acknowledged, want 1 (the one being filled)", n)
	}
	if produce(200) == nil {
		t.Fatal("a value had an allocation of its own once the chunks were let go")
	}
	v.idle()
	flight[len(flight)-1].pin.release(-1)
	if n := v.pinned.Load(); n != 0 {
		t.Fatalf("%d chunks pinned after the task went idle and its last record was acknowledged", n)
	}
	for i, f := range flight {
		if !bytes.Equal(f.got, f.want) {
			t.Fatalf("value %d is %.30q, want %.30q", i, f.got, f.want)
		}
	}
}

// A value that is not written into a chunk (a null, a converter of
// another type) pins nothing.
func TestValueChunksPinOnlyChunkedValues(t *testing.T) {
	conv := converters.NewJSONConverter()
	v := newValueChunks(conv, 32<<20)
	if _, err := v.convert(conv, "t", connectors.StringSchema, "in a chunk"); err != nil {
		t.Fatal(err)
	}
	if v.produced() == nil {
		t.Fatal("a value written into a chunk has no pin")
	}
	if b, err := v.convert(conv, "t", nil, nil); b != nil || err != nil {
		t.Fatalf("a tombstone converted to %q, %v", b, err)
	}
	if v.produced() != nil {
		t.Fatal("a tombstone pinned a chunk")
	}
	other := &converters.ByteArrayConverter{}
	w := newValueChunks(other, 32<<20)
	if _, err := w.convert(other, "t", connectors.BytesSchema, []byte("raw")); err != nil {
		t.Fatal(err)
	}
	if w.produced() != nil {
		t.Fatal("a ByteArrayConverter value pinned a chunk")
	}
}
