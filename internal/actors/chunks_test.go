package actors

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/connectors/datagen"
)

// A source task's values share chunks only while the chunks its records
// in flight hold stay under an eighth of buffer.memory: with no acks,
// values get allocations of their own once that many chunks are held, and
// chunks are used again once acks let some go. Every value keeps its
// bytes until it is acknowledged.
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
	var bad atomic.Int64
	for _, f := range flight {
		if f.pin != nil {
			wg.Go(func() {
				if !bytes.Equal(f.got, f.want) {
					bad.Add(1)
				}
				f.pin.release(-1)
			})
		}
	}
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d values changed before they were acknowledged", n)
	}
	if n := v.pinned.Load(); n != 1 {
		t.Fatalf("%d chunks pinned once every record was acknowledged, want 1 (the one being filled)", n)
	}
	if produce(200) == nil {
		t.Fatal("a value had an allocation of its own once the chunks were let go")
	}
	v.idle()
	for i, f := range flight {
		if f.pin == nil && !bytes.Equal(f.got, f.want) {
			// Values of their own are never written again.
			t.Fatalf("value %d is %.30q, want %.30q", i, f.got, f.want)
		}
	}
	last := flight[len(flight)-1]
	if !bytes.Equal(last.got, last.want) {
		t.Fatalf("the last value is %.30q before its ack, want %.30q", last.got, last.want)
	}
	last.pin.release(-1)
	if n := v.pinned.Load(); n != 0 {
		t.Fatalf("%d chunks pinned after the task went idle and its last record was acknowledged", n)
	}
}

// A chunk is written into again once every value in it was acknowledged,
// and never before (ADR 0028): the producer's goroutines, standing in for
// franz-go, read each value when they acknowledge it, while the task goes
// on writing values into chunks, the free ones first. Under -race a chunk
// handed out again too early is also a data race between the task's
// writes and the acknowledging goroutine's read.
func TestValueChunksAreWrittenAgainOnlyOnceFree(t *testing.T) {
	conv := converters.NewJSONConverter()
	if err := conv.Configure(map[string]string{"schemas.enable": "false"}, false); err != nil {
		t.Fatal(err)
	}
	v := newValueChunks(conv, 32<<20)
	type inFlight struct {
		want, got []byte
		pin       *chunkPin
	}
	// Acknowledgements come late and out of order: two goroutines each
	// hold a window of records before acknowledging them in reverse.
	acks := make(chan inFlight, 64)
	var bad atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			var held []inFlight
			ack := func() {
				for i := len(held) - 1; i >= 0; i-- {
					f := held[i]
					if !bytes.Equal(f.got, f.want) {
						bad.Add(1)
					}
					if f.pin != nil {
						f.pin.release(-1)
					}
				}
				held = held[:0]
			}
			for f := range acks {
				if held = append(held, f); len(held) == 50 {
					ack()
				}
			}
			ack()
		})
	}
	chunks := map[*byte]bool{}
	var fills int
	var lastPin *chunkPin
	const records = 20000
	for i := range records {
		value := fmt.Sprintf("%d:%s", i, strings.Repeat(string(rune('a'+i%26)), 100+i%50))
		got, err := v.convert(conv, "t", connectors.StringSchema, value)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := conv.FromConnect("t", connectors.StringSchema, value)
		pin := v.produced()
		if pin != nil && pin != lastPin {
			fills++
			chunks[unsafe.SliceData(pin.chunk)] = true
		}
		lastPin = pin
		acks <- inFlight{want, got, pin}
		if i%1000 == 999 {
			v.idle() // as a poll that brings nothing
		}
	}
	v.idle()
	close(acks)
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d of %d values changed before they were acknowledged", n, records)
	}
	if n := v.pinned.Load(); n != 0 {
		t.Fatalf("%d chunks pinned once every record was acknowledged", n)
	}
	// About 200 values of 150 bytes fill a chunk, and every thousandth
	// record starts a new one: over 100 chunks were filled. Far fewer
	// distinct ones say they were handed out again. (Under -race,
	// sync.Pool drops a quarter of what it is given.)
	if fills < 50 || len(chunks) > fills/2 {
		t.Fatalf("%d distinct chunks filled %d times: free chunks were not written into again", len(chunks), fills)
	}
	t.Logf("%d distinct chunks filled %d times", len(chunks), fills)
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

// Values written into chunks that are handed out again, in records whose
// slabs are handed out again, reach Kafka whole (ADRs 0028 and 0029,
// invariant 1): two Datagen tasks produce 60,000 records through the
// runtime, and every record in the topic must be exactly the value its
// task and sequence number make, each once. A chunk or a slab handed out
// while one of its records was still unacknowledged would have that
// record overwritten by a later one before franz-go wrote it.
func TestSourceValuesInChunksHandedOutAgainArriveWhole(t *testing.T) {
	e := newEnv(t)
	const perTask = 30000
	topic := e.topic("chunked")
	before, slabsBefore := chunksReused.Load(), slabsReused.Load()
	e.create("chunked", datagenConfig("chunked", topic, perTask, "batch.size", "500", "value.size", "100",
		"value.converter.schemas.enable", "false"))
	recs := e.readRecords(topic, 2*perTask, 0)
	pad := strings.Repeat("x", 100)
	seen := map[[2]int64]bool{}
	for _, r := range recs {
		task, seq, err := datagen.ParseValue(r.Value)
		if err != nil {
			t.Fatalf("a record's value %.60q: %v", r.Value, err)
		}
		if want := fmt.Sprintf(`{"task":%d,"seq":%d,"pad":"%s"}`, task, seq, pad); string(r.Value) != want {
			t.Fatalf("task %d seq %d arrived as %.80q, want %.80q", task, seq, r.Value, want)
		}
		seen[[2]int64{int64(task), seq}] = true
	}
	if len(seen) != 2*perTask {
		t.Fatalf("%d distinct records of %d in the topic (%d read)", len(seen), 2*perTask, len(recs))
	}
	if chunksReused.Load() == before || slabsReused.Load() == slabsBefore {
		t.Fatalf("%d chunks and %d slabs handed out again: the test did not try what it is for",
			chunksReused.Load()-before, slabsReused.Load()-slabsBefore)
	}
}
