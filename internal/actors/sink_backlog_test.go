package actors

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
)

func backlogRecords(topic string, partition int32, from, n int64) []*kgo.Record {
	var out []*kgo.Record
	for o := from; o < from+n; o++ {
		out = append(out, &kgo.Record{Topic: topic, Partition: partition, Offset: o})
	}
	return out
}

// The backlog goes to Write max.poll.records at a time, in order; a
// revoked partition's records leave it (their next owner reads them
// again), the others stay in their order.
func TestSinkBacklogBatchesAndRevocation(t *testing.T) {
	p := &sinkPipeline{
		taskRun:   &taskRun{}, // metrics off
		keys:      connconfig.Runtime{Overrides: connconfig.Overrides{Consumer: connconfig.ConsumerOverrides{MaxPollRecords: 3}}},
		written:   map[connectors.TopicPartition]int64{{Topic: "t", Partition: 0}: 2},
		committed: map[connectors.TopicPartition]int64{{Topic: "t", Partition: 0}: 1},
	}
	p.backlog = append(append(backlogRecords("t", 0, 2, 4), backlogRecords("t", 1, 0, 3)...), backlogRecords("u", 0, 0, 2)...)

	first := p.nextBatch()
	if len(first) != 3 || first[0].Offset != 2 || first[2].Offset != 4 {
		t.Fatalf("first batch %d records from offset %d, want t-0 2..4", len(first), first[0].Offset)
	}
	p.forget(map[string][]int32{"t": {0}})
	if _, ok := p.written[connectors.TopicPartition{Topic: "t", Partition: 0}]; ok {
		t.Fatal("the revoked partition's written offset is still known")
	}
	var left []string
	for len(p.backlog) > 0 {
		b := p.nextBatch()
		if len(b) > 3 {
			t.Fatalf("a batch of %d records, more than max.poll.records 3", len(b))
		}
		for _, r := range b {
			left = append(left, r.Topic+string(rune('0'+r.Partition))+string(rune('0'+r.Offset)))
		}
	}
	want := []string{"t10", "t11", "t12", "u00", "u01"}
	if len(left) != len(want) {
		t.Fatalf("backlog after the revocation %v, want %v", left, want)
	}
	for i := range want {
		if left[i] != want[i] {
			t.Fatalf("backlog after the revocation %v, want %v", left, want)
		}
	}
	// The batch already taken is not the backlog's any more.
	if first[0].Partition != 0 || first[0].Offset != 2 {
		t.Fatalf("the batch handed to Write changed under it: %+v", first[0])
	}
}
