package actors

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/builtin"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/internal/testutil"
	"github.com/sluice-io/sluice/internal/transform"
)

// padFor is the padding of the value paddedValue gives seq: its length
// and letter follow from seq, so that a value whose bytes were overwritten
// by another record's shows it.
func padFor(seq int64) string {
	return strings.Repeat(string(rune('a'+seq%26)), int(seq%97))
}

func paddedValue(seq int64) string { return fmt.Sprintf("0:%d:%s", seq, padFor(seq)) }

func TestFetchPoolGivesRoomAndTakesItBack(t *testing.T) {
	var p fetchPool
	for _, n := range []int{0, 1, 2, 3, 500, 512, 513, 100_000} {
		if r := p.GetRecords(n); cap(r) < n || len(r) != 0 {
			t.Fatalf("GetRecords(%d): len %d cap %d", n, len(r), cap(r))
		}
	}
	// Snappy's block format says its decoded length: the room fits it.
	want := []byte(strings.Repeat("sluice ", 5000))
	if b := p.GetDecompressBytes(s2.EncodeSnappy(nil, want), kgo.CodecSnappy); cap(b) < len(want) || len(b) != 0 {
		t.Fatalf("snappy room: len %d cap %d for %d bytes", len(b), cap(b), len(want))
	}
	// A header that claims far more than a snappy block can hold is not
	// believed: a corrupt batch must not make the pool allocate it.
	lying := append(binary.AppendUvarint(nil, 1<<26), 0, 0, 0, 0)
	if b := p.GetDecompressBytes(lying, kgo.CodecSnappy); cap(b) > 1<<10 {
		t.Fatalf("a snappy header claiming 64 MiB in %d bytes got room for %d", len(lying), cap(b))
	}
	// What is put back is given out again, for a request its class holds
	// (sync.Pool may drop an item, under the race detector on purpose, so
	// a few tries).
	reused := false
	for range 100 {
		r := p.GetRecords(300)
		p.PutRecords(r)
		if again := p.GetRecords(260); cap(again) == cap(r) && &again[:1][0] == &r[:1][0] {
			reused = true
			break
		}
	}
	if !reused {
		t.Fatal("records put back were never given out again")
	}
	// A slice whose capacity is no power of two goes to the class below,
	// so that whatever that class gives out holds what it promises.
	p.PutDecompressBytes(make([]byte, 0, 3000))
	for range 20 {
		if b := p.GetDecompressBytes(make([]byte, 500), kgo.CodecLz4); cap(b) < 2000 {
			t.Fatalf("room for 2000 bytes has capacity %d", cap(b))
		}
	}
}

// Only a borrowing task whose converters and transforms are all Sluice's
// own, known to keep nothing they read, has its fetched memory reused.
func TestSinkRecyclesOnlyWhatNothingKeeps(t *testing.T) {
	str, js := &converters.StringConverter{}, &converters.JSONConverter{}
	avro := &converters.AvroConverter{}
	reg := builtin.Registry()
	registerTestTransforms(reg)
	foreign, err := transform.Build(reg, map[string]string{"transforms": "t", "transforms.t.type": "test.Drop"})
	if err != nil {
		t.Fatal(err)
	}
	own, err := transform.Build(reg, map[string]string{"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.r.regex": "(.*)", "transforms.r.replacement": "$1-x"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		borrows bool
		codec   codec
		want    bool
	}{
		{"borrowing, String and JSON", true, codec{key: str, value: js, headers: &converters.SimpleHeaderConverter{}}, true},
		{"borrowing, a RegexRouter", true, codec{key: str, value: str, headers: &converters.SimpleHeaderConverter{}, chain: own}, true},
		{"not borrowing", false, codec{key: str, value: js, headers: &converters.SimpleHeaderConverter{}}, false},
		{"borrowing, Avro values", true, codec{key: str, value: avro, headers: &converters.SimpleHeaderConverter{}}, false},
		{"borrowing, a transform of another package", true, codec{key: str, value: str, headers: &converters.SimpleHeaderConverter{}, chain: foreign}, false},
	} {
		p := &sinkPipeline{taskRun: &taskRun{}, codec: c.codec, task: &keepingSinkTask{borrows: c.borrows}}
		p.takePromise()
		if p.recycles != c.want {
			t.Errorf("%s: recycles %v, want %v", c.name, p.recycles, c.want)
		}
	}
}

// A borrowing sink's fetched memory is reused for later fetches (ADR
// 0026), and every record it writes is whole: snappy-compressed batches
// of values whose padding follows from their seq, through a sink that
// checks each value while Write runs. Recycling a batch before Write was
// done with it would hand Write cleared or overwritten bytes.
func TestSinkRecyclesBorrowedFetches(t *testing.T) {
	e := newEnv(t)
	const n = 30000
	topic := e.topic("recycled")
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...),
		kgo.ProducerBatchCompression(kgo.SnappyCompression()), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range int64(n) {
		cl.Produce(ctx, &kgo.Record{Key: []byte("0"), Value: []byte(paddedValue(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	before := sinkFetches.reused.Load()
	e.create("recycler", withConv(map[string]string{"name": "recycler", "connector.class": "test.TestSink",
		"topics": topic, "borrows": "true", "consumer.override.max.partition.fetch.bytes": "65536"}))
	h := hooksFor("recycler")
	testutil.Eventually(t, 60*time.Second, "every record written", func() error {
		if st := e.taskState("recycler", 0); st.State == "FAILED" {
			t.Fatalf("the sink failed: %s", st.Trace)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		seen := map[int64]bool{}
		for _, s := range h.written {
			seen[s] = true
		}
		if len(seen) != n {
			return fmt.Errorf("%d of %d distinct records written", len(seen), n)
		}
		return nil
	})
	if st := e.taskState("recycler", 0); st.State != "RUNNING" {
		t.Fatalf("sink %s: %s", st.State, st.Trace)
	}
	if got := sinkFetches.reused.Load() - before; got == 0 {
		t.Fatal("no fetch was decoded into memory an earlier one gave back")
	}
}

var _ connectors.RecordBorrower = (*testSinkTask)(nil)
