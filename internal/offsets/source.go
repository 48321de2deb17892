// Package offsets keeps connectors' offsets with Kafka Connect's formats:
// source offsets in the offsets topic (SourceStore), sink offsets in the
// consumer group connect-<name>, and the offsets API over both
// (ConnectorOffsets) that GET/PATCH/DELETE /connectors/{c}/offsets use.
package offsets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/topics"
)

// PartitionOffset is one source partition's offset. A nil Offset deletes the
// partition's offset (a tombstone).
type PartitionOffset struct {
	Partition map[string]any
	Offset    map[string]any
}

// SourceStore keeps source offsets in the offsets topic with Kafka Connect's
// formats: key ["<connector>",{<source partition>}], value {<source offset>},
// a null value deletes. Keys are written canonically (sorted object keys,
// compact JSON) and lookups normalise, so a key written by Kafka Connect
// with any field order is found. Numbers read back are int64 when written
// as integers, float64 otherwise.
type SourceStore struct {
	t *topics.Tailer

	mu      sync.RWMutex
	log     zerolog.Logger
	entries map[string]map[string]*srcEntry // connector -> canonical partition JSON -> entry
}

// srcEntry is the latest known offset of one source partition, and where it
// was read from or written to, so that the tailer, which may lag behind a
// local Write, never replaces a newer value with an older one.
type srcEntry struct {
	rawKey []byte // key bytes as found in the topic, reused when writing
	value  []byte // canonical JSON of the offset; nil for a deleted one
	kpart  int32
	koff   int64
}

// maxBufferedOffsets bounds the producer's memory; Write blocks (up to its
// ctx) when a flush carries more partitions than this.
const maxBufferedOffsets = 10000

// NewSourceStore creates a store reading and writing topic; opts carry the
// connection settings.
func NewSourceStore(opts []kgo.Opt, topic string) (*SourceStore, error) {
	s := &SourceStore{
		log:     zerolog.Nop(),
		entries: make(map[string]map[string]*srcEntry),
	}
	all := append(append([]kgo.Opt(nil), opts...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(maxBufferedOffsets),
	)
	t, err := topics.NewTailer(all, topic, s.apply)
	if err != nil {
		return nil, err
	}
	s.t = t
	return s, nil
}

// SetLogger sets where unreadable records are reported; call before Start.
func (s *SourceStore) SetLogger(l zerolog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = l
}

// Start tails the topic and returns once it has read to the end.
func (s *SourceStore) Start(ctx context.Context) error {
	if err := s.t.Start(ctx); err != nil {
		return fmt.Errorf("source offsets: %w", err)
	}
	return nil
}

// Topic is the offsets topic the store reads and writes.
func (s *SourceStore) Topic() string { return s.t.Topic() }

// Close stops tailing and closes the client.
func (s *SourceStore) Close() { s.t.Close() }

// ReadToEnd returns once every offset written to the topic before the call
// has been read: a task that moved here from another worker must see its
// predecessor's last flush before it opens.
func (s *SourceStore) ReadToEnd(ctx context.Context) error { return s.t.WaitForEnd(ctx) }

func (s *SourceStore) apply(r *kgo.Record) {
	connector, partition, err := parseOffsetKey(r.Key)
	var value []byte
	if err == nil && r.Value != nil {
		var off map[string]any
		if off, err = decodeObject(r.Value); err == nil && off != nil {
			value, err = canonicalJSON(off)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.log.Warn().Err(err).Str("topic", r.Topic).Int32("partition", r.Partition).
			Int64("offset", r.Offset).Bytes("key", r.Key).Msg("skipping unreadable source offset record")
		return
	}
	byPart := s.entries[connector]
	if e := byPart[partition]; e != nil && e.kpart == r.Partition && e.koff > r.Offset {
		return // a local Write already made a newer record visible
	}
	if value == nil {
		// The tailer has now passed the tombstone, so no older record
		// can follow: the entry can go instead of staying as a marker.
		delete(byPart, partition)
		if len(byPart) == 0 {
			delete(s.entries, connector)
		}
		return
	}
	if byPart == nil {
		byPart = make(map[string]*srcEntry)
		s.entries[connector] = byPart
	}
	byPart[partition] = &srcEntry{rawKey: bytes.Clone(r.Key), value: value, kpart: r.Partition, koff: r.Offset}
}

// parseOffsetKey returns the connector and the canonical JSON of the source
// partition of a key ["<connector>",{...}].
func parseOffsetKey(key []byte) (string, string, error) {
	if key == nil {
		return "", "", errors.New("null key")
	}
	v, err := decodeJSON(key)
	if err != nil {
		return "", "", fmt.Errorf("key is not JSON: %w", err)
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return "", "", errors.New(`key is not ["<connector>",{<partition>}]`)
	}
	connector, ok := arr[0].(string)
	if !ok {
		return "", "", errors.New("key's connector name is not a string")
	}
	if _, ok := arr[1].(map[string]any); !ok && arr[1] != nil {
		return "", "", errors.New("key's source partition is not a JSON object")
	}
	p, err := encodeJSON(arr[1])
	if err != nil {
		return "", "", err
	}
	return connector, string(p), nil
}

func canonicalPartition(partition map[string]any) (string, error) {
	if partition == nil {
		return "null", nil
	}
	p, err := canonicalJSON(partition)
	if err != nil {
		return "", fmt.Errorf("source partition %v: %w", partition, err)
	}
	return string(p), nil
}

// Offset is the stored offset of a connector's source partition, or nil if
// there is none.
func (s *SourceStore) Offset(connector string, partition map[string]any) (map[string]any, error) {
	p, err := canonicalPartition(partition)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	var value []byte
	if e := s.entries[connector][p]; e != nil {
		value = e.value
	}
	s.mu.RUnlock()
	if value == nil {
		return nil, nil
	}
	return decodeObject(value)
}

// Offsets lists every source partition of connector that has an offset,
// sorted by the canonical JSON of the partition.
func (s *SourceStore) Offsets(connector string) []PartitionOffset {
	type kv struct{ p, v []byte }
	s.mu.RLock()
	var found []kv
	for p, e := range s.entries[connector] {
		if e.value != nil {
			found = append(found, kv{[]byte(p), e.value})
		}
	}
	s.mu.RUnlock()
	sort.Slice(found, func(i, j int) bool { return bytes.Compare(found[i].p, found[j].p) < 0 })
	out := make([]PartitionOffset, 0, len(found))
	for _, f := range found {
		// Both were produced by canonicalJSON, so decoding cannot fail.
		part, _ := decodeObject(f.p)
		off, _ := decodeObject(f.v)
		out = append(out, PartitionOffset{Partition: part, Offset: off})
	}
	return out
}

// Write produces the entries (acks=all, idempotent) and returns once all are
// acknowledged; they are then visible to Offset at once. An error (including
// ctx ending first) means none of them may be assumed written: some may
// have been, and the tailer will show them when it reads them.
func (s *SourceStore) Write(ctx context.Context, connector string, entries []PartitionOffset) error {
	recs, err := s.OffsetRecords(connector, entries)
	if err != nil || len(recs) == 0 {
		return err
	}
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(recs)) // never blocks kgo's callbacks
	for i, r := range recs {
		s.t.Client().Produce(ctx, r, func(_ *kgo.Record, err error) { results <- result{i, err} })
	}
	var firstErr error
	for range recs {
		select {
		case res := <-results:
			if res.err != nil && firstErr == nil {
				firstErr = res.err
			}
		case <-ctx.Done():
			return fmt.Errorf("writing %d source offset(s) of connector %q: %w", len(recs), connector, ctx.Err())
		}
	}
	if firstErr != nil {
		return fmt.Errorf("writing %d source offset(s) of connector %q: %w", len(recs), connector, firstErr)
	}
	// Invariant 1: offsets reach the view that tasks resume from only
	// after Kafka acknowledged every one of them; on any failure above
	// the view is left as it was.
	s.Committed(connector, recs)
	return nil
}

// OffsetRecords encodes entries as records of the offsets topic, for a
// producer that writes them itself: an exactly-once source task writes
// them in the transaction of the records they are the offsets of. Their
// Partition is -1, for the producer's key partitioner (murmur2, as
// Connect's). Once Kafka has acknowledged them (and, in a transaction,
// the transaction committed), Committed shows them to Offset at once.
func (s *SourceStore) OffsetRecords(connector string, entries []PartitionOffset) ([]*kgo.Record, error) {
	recs := make([]*kgo.Record, len(entries))
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i, e := range entries {
		p, err := canonicalPartition(e.Partition)
		if err != nil {
			return nil, err
		}
		var key []byte
		if old := s.entries[connector][p]; old != nil {
			// Same bytes as the existing record (perhaps written by
			// Kafka Connect in another field order): same partition
			// and compaction key, so the new value truly replaces it.
			key = old.rawKey
		} else {
			key, err = encodeJSON([]any{connector, json.RawMessage(p)})
			if err != nil {
				return nil, fmt.Errorf("source offset key for %s: %w", p, err)
			}
		}
		var value []byte
		if e.Offset != nil {
			if value, err = canonicalJSON(e.Offset); err != nil {
				return nil, fmt.Errorf("source offset %v: %w", e.Offset, err)
			}
		}
		recs[i] = &kgo.Record{Topic: s.t.Topic(), Key: key, Value: value, Partition: -1}
	}
	return recs, nil
}

// Committed makes records of OffsetRecords that Kafka acknowledged (and
// whose transaction committed) visible to Offset without waiting for the
// tailer to read them.
func (s *SourceStore) Committed(connector string, recs []*kgo.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		// Both were produced by OffsetRecords' encoders, so these cannot
		// fail.
		_, part, err := parseOffsetKey(r.Key)
		if err != nil {
			continue
		}
		byPart := s.entries[connector]
		if e := byPart[part]; e != nil && e.kpart == r.Partition && e.koff > r.Offset {
			continue // the tailer already read something newer
		}
		if byPart == nil {
			byPart = make(map[string]*srcEntry)
			s.entries[connector] = byPart
		}
		// A deleted entry stays as a marker (nil value) until the
		// tailer reads the tombstone, to hide older records it may
		// still apply.
		byPart[part] = &srcEntry{rawKey: r.Key, value: r.Value, kpart: r.Partition, koff: r.Offset}
	}
}
