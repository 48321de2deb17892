package actors

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
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

// laggingSinkTask declares durable, at each PreCommit, only the offsets it
// was given at the one before, as FileStreamSink does with its background
// fsync.
type laggingSinkTask struct {
	testSinkTask
	mu   sync.Mutex
	prev map[connectors.TopicPartition]int64
}

func (s *laggingSinkTask) PreCommit(_ context.Context, offsets map[connectors.TopicPartition]int64) (map[connectors.TopicPartition]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	safe := map[connectors.TopicPartition]int64{}
	for tp, off := range s.prev {
		if given, ok := offsets[tp]; ok {
			safe[tp] = min(off, given)
		}
	}
	s.prev = maps.Clone(offsets)
	return safe, nil
}

type laggingSink struct{ testConnector }

func (c *laggingSink) NewTask() connectors.SinkTask { return &laggingSinkTask{} }

// The commit before partitions move to another member asks a PreCommit
// that declared less than was written once more, so that the next owner
// starts after everything written. Periodic commits never come (an hour
// apart): only the commit of the revocation can commit.
func TestSinkRevocationCommitAsksPreCommitAgain(t *testing.T) {
	e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, func(o *Options) {
		o.OffsetFlushInterval = time.Hour
		o.Registry.MustRegister(connectors.Plugin{Class: "test.LaggingSink", Type: connectors.Sink, Version: "1",
			New: func() connectors.Connector { return &laggingSink{} }})
	})
	topic := e.topic("lagging-rev-in")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.adm.CreateTopic(ctx, 2, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 6 {
		// Keys spread the records over both partitions.
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte{byte(i)}, Value: []byte(fmt.Sprintf("0:%d", i))})
	}
	if err := e.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.create("lagging-rev", withConv(map[string]string{"name": "lagging-rev", "connector.class": "test.LaggingSink", "topics": topic}))
	testutil.Eventually(t, 20*time.Second, "the six records written", func() error {
		h := hooksFor("lagging-rev")
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.written) != 6 {
			return fmt.Errorf("written %v", h.written)
		}
		return nil
	})
	committed := func() map[int32]int64 {
		out := map[int32]int64{}
		offs, err := e.adm.FetchOffsets(ctx, "connect-lagging-rev")
		if err != nil {
			return out
		}
		for _, part := range []int32{0, 1} {
			if o, ok := offs.Lookup(topic, part); ok {
				out[part] = o.At
			}
		}
		return out
	}
	if c := committed(); len(c) > 0 {
		t.Fatalf("committed %v before any revocation: the test's periodic commits are not off", c)
	}
	// A second member of the task's group takes one of the partitions;
	// it commits nothing itself.
	other, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), kgo.ConsumerGroup("connect-lagging-rev"),
		kgo.ConsumeTopics(topic), kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	go func() {
		for pollCtx.Err() == nil {
			other.PollFetches(pollCtx)
		}
	}()
	ends, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "the moved partition's offset committed", func() error {
		c := committed()
		for part, off := range c {
			if end, _ := ends.Lookup(topic, part); off != end.Offset {
				return fmt.Errorf("partition %d committed at %d, want its end %d", part, off, end.Offset)
			}
		}
		if len(c) == 0 {
			return errors.New("nothing committed")
		}
		return nil
	})
}

// A task whose PreCommit lags one call behind has the offsets of
// everything it wrote committed when it stops (the last commit and the
// revocation's each ask it). Periodic commits never come (an hour apart).
func TestSinkStopCommitsLaggingPreCommit(t *testing.T) {
	e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, func(o *Options) {
		o.OffsetFlushInterval = time.Hour
		o.Registry.MustRegister(connectors.Plugin{Class: "test.LaggingSink", Type: connectors.Sink, Version: "1",
			New: func() connectors.Connector { return &laggingSink{} }})
	})
	topic := e.topic("lagging-in")
	produceWithBad(t, e, topic) // three records, all of them strings the test sink reads
	e.create("lagging", withConv(map[string]string{"name": "lagging", "connector.class": "test.LaggingSink", "topics": topic}))
	testutil.Eventually(t, 20*time.Second, "the three records written", func() error {
		h := hooksFor("lagging")
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.written) != 3 {
			return fmt.Errorf("written %v", h.written)
		}
		return nil
	})
	if c := e.committed("lagging", topic); c > 0 {
		t.Fatalf("committed %d before the task stopped: the test's periodic commits are not off", c)
	}
	e.setTarget("lagging", state.TargetStopped)
	testutil.Eventually(t, 20*time.Second, "offsets committed as the task stopped", func() error {
		if c := e.committed("lagging", topic); c != 3 {
			return fmt.Errorf("committed %d", c)
		}
		return nil
	})
}
