package offsets

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicStores opens the stores of connector-specific offsets topics
// (offsets.storage.topic), one per topic per worker, shared by the tasks
// and the offsets API, and keeps them until Close. A topic that does not
// exist is created with create, which gives it the settings of the worker's
// offsets topic, as Connect does.
type TopicStores struct {
	opts   []kgo.Opt
	create func(ctx context.Context, topic string) error
	log    zerolog.Logger

	mu     sync.Mutex
	stores map[string]*SourceStore
}

// NewTopicStores returns a TopicStores whose stores connect with opts.
func NewTopicStores(opts []kgo.Opt, create func(ctx context.Context, topic string) error, log zerolog.Logger) *TopicStores {
	return &TopicStores{opts: opts, create: create, log: log, stores: map[string]*SourceStore{}}
}

// Open returns the store of topic, read to its end when first opened.
func (s *TopicStores) Open(ctx context.Context, topic string) (*SourceStore, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.stores[topic]; st != nil {
		return st, nil
	}
	if err := s.create(ctx, topic); err != nil {
		return nil, fmt.Errorf("the connector's offsets topic %q: %w", topic, err)
	}
	st, err := NewSourceStore(s.opts, topic)
	if err != nil {
		return nil, err
	}
	st.SetLogger(s.log)
	if err := st.Start(ctx); err != nil {
		st.Close()
		return nil, err
	}
	s.stores[topic] = st
	return st, nil
}

// Close closes every store opened.
func (s *TopicStores) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stores {
		st.Close()
	}
	s.stores = map[string]*SourceStore{}
}

// Layered is the offsets of a connector with its own offsets topic, as
// Connect's ConnectorOffsetBackingStore: reads take the connector's topic
// first and the worker's where the connector's has no offset for a
// partition (offsets written before the connector had its own topic);
// writes go to the connector's topic, then to the worker's.
type Layered struct {
	Own, Worker *SourceStore
}

// Offset is the connector's topic's offset of partition, else the worker's.
func (l Layered) Offset(connector string, partition map[string]any) (map[string]any, error) {
	off, err := l.Own.Offset(connector, partition)
	if err != nil || off != nil {
		return off, err
	}
	return l.Worker.Offset(connector, partition)
}

// Offsets merges both topics' offsets of connector, the connector's topic
// winning, sorted as SourceStore.Offsets sorts them.
func (l Layered) Offsets(connector string) []PartitionOffset {
	merged := map[string]PartitionOffset{}
	for _, store := range []*SourceStore{l.Worker, l.Own} {
		for _, po := range store.Offsets(connector) {
			// Offsets returns canonical partitions, which encode.
			key, _ := canonicalPartition(po.Partition)
			merged[key] = po
		}
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]PartitionOffset, len(keys))
	for i, k := range keys {
		out[i] = merged[k]
	}
	return out
}

// ReadToEnd reads both topics to their ends.
func (l Layered) ReadToEnd(ctx context.Context) error {
	if err := l.Own.ReadToEnd(ctx); err != nil {
		return err
	}
	return l.Worker.ReadToEnd(ctx)
}

// Write writes entries to the connector's topic, then to the worker's, as
// Connect does; an error of the second write is returned too.
func (l Layered) Write(ctx context.Context, connector string, entries []PartitionOffset) error {
	if err := l.Own.Write(ctx, connector, entries); err != nil {
		return err
	}
	return l.WriteSecondary(ctx, connector, entries)
}

// WriteSecondary writes entries to the worker's topic: after the
// connector's topic committed them (exactly-once tasks write that one in
// their transactions).
func (l Layered) WriteSecondary(ctx context.Context, connector string, entries []PartitionOffset) error {
	if err := l.Worker.Write(ctx, connector, entries); err != nil {
		return fmt.Errorf("the worker's offsets topic: %w", err)
	}
	return nil
}

// OffsetRecords encodes entries for the connector's topic.
func (l Layered) OffsetRecords(connector string, entries []PartitionOffset) ([]*kgo.Record, error) {
	return l.Own.OffsetRecords(connector, entries)
}

// Committed shows records of the connector's topic (OffsetRecords).
func (l Layered) Committed(connector string, recs []*kgo.Record) { l.Own.Committed(connector, recs) }
