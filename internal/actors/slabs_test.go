package actors

import (
	"errors"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// A poll's slab is given back only once the offset tracker is done with
// every record registered in it (ADR 0029): a record acknowledged before
// an earlier one of its source partition still sits in the partition's
// queue, so the slab waits for the earlier one; a record without a
// source partition is done with at its acknowledgement; a slab still
// being filled is never given back.
func TestSlabIsGivenBackOnlyOnceTheTrackerIsDoneWithIt(t *testing.T) {
	tr := newOffsetTracker()
	a, b := map[string]any{"p": "a"}, map[string]any{"p": "b"}
	batch := []*connectors.SourceRecord{
		trackerRecord(a, 1), trackerRecord(b, 1), trackerRecord(a, 2), nil, {}, trackerRecord(a, 3),
	}
	slab := getSlab(len(batch))
	out := slab.out
	tr.addBatch(batch, func(i int) *pending { return &out[i].pending }, slab)
	freed := slabsFreed.Load()
	given := func() bool { return slabsFreed.Load() != freed }

	for _, i := range []int{2, 4, 1, 5} { // a:2, the record without a partition, b:1, a:3
		tr.ack(&out[i].pending, nil)
		if given() {
			t.Fatalf("the slab was given back after record %d's ack, with a:1 unacknowledged", i)
		}
	}
	if got := slab.left.Load() - slabBias; got != 3 {
		t.Fatalf("the slab counts %d records not done with, want 3 (a:1, and a:2 and a:3 behind it)", got)
	}
	tr.ack(&out[0].pending, nil) // a:1: the tracker is done with a:1, a:2, a:3
	if given() {
		t.Fatal("the slab was given back while it was being filled")
	}
	slab.filled()
	if !given() {
		t.Fatal("the slab was not given back once the tracker was done with every record and it was filled")
	}
}

// A slab holding a record that failed, or one never produced (released),
// is never given back: the tracker keeps those records in their
// partition's queue for the rest of the run.
func TestSlabOfAFailedOrReleasedRecordIsNeverGivenBack(t *testing.T) {
	for _, end := range []string{"failed", "released"} {
		t.Run(end, func(t *testing.T) {
			tr := newOffsetTracker()
			a := map[string]any{"p": "a"}
			batch := []*connectors.SourceRecord{trackerRecord(a, 1), trackerRecord(a, 2), trackerRecord(a, 3)}
			slab := getSlab(len(batch))
			out := slab.out
			tr.addBatch(batch, func(i int) *pending { return &out[i].pending }, slab)
			freed := slabsFreed.Load()
			if end == "failed" {
				tr.ack(&out[1].pending, errors.New("refused"))
			} else {
				tr.release(&out[1].pending)
			}
			tr.ack(&out[0].pending, nil)
			tr.ack(&out[2].pending, nil)
			slab.filled()
			if slabsFreed.Load() != freed {
				t.Fatalf("the slab was given back with a %s record in it", end)
			}
		})
	}
}

// A slab handed out again holds nothing of the records it held before.
func TestSlabHandedOutAgainIsCleared(t *testing.T) {
	for range 100 { // sync.Pool may drop what it is given (always under -race, sometimes)
		slab := getSlab(3)
		for i := range slab.out {
			slab.out[i].pin = &chunkPin{}
			slab.out[i].record.Offset = 42
			slab.out[i].record.Value = []byte("old")
		}
		reused := slabsReused.Load()
		slab.filled()
		again := getSlab(3)
		if slabsReused.Load() == reused {
			continue
		}
		for i, o := range again.out {
			if o.pin != nil || o.record.Offset != 0 || o.record.Value != nil {
				t.Fatalf("record %d of a slab handed out again still holds %+v", i, o.record)
			}
		}
		return
	}
	t.Fatal("no slab was handed out again in 100 tries")
}
