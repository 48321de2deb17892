package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/topics"
)

// Status topic key prefixes, as Kafka Connect writes them.
const (
	statusConnectorPrefix = "status-connector-"
	statusTaskPrefix      = "status-task-"
	// Connect's topic tracking (KIP-558) also lives in the status topic
	// (topics.go).
	statusTopicPrefix = "status-topic-"
)

// connectorSlot is the task number under which a connector's own status is
// kept next to its tasks' statuses.
const connectorSlot = -1

// statusMaxBuffered bounds the statuses waiting to be sent; a Put beyond it
// fails (logged) instead of blocking the actor that called it.
const statusMaxBuffered = 10000

// statusDeliveryTimeout bounds how long a status write may be retried, so
// Flush cannot wait forever on a broker that is gone.
const statusDeliveryTimeout = 30 * time.Second

// StatusLog is the status topic (compacted, several partitions) tailed into
// a table of connector and task statuses.
//
// Replacement rule, for records read and for this worker's own Puts alike:
// a status replaces the current one if there is none, or the same worker
// wrote both, or the new generation is >= the current one. ">=" rather than
// ">" is what Kafka Connect's KafkaStatusBackingStore checks
// (value.generation() <= status.generation() in canWriteSafely): within one
// generation a task runs on at most one worker (invariant 4), so two
// workers with the same generation are a hand-over inside a rebalance, and
// the later write is the truth; only a worker still reporting from an
// older generation is stale. Tombstones always delete.
type StatusLog struct {
	t     *topics.Tailer
	topic string
	log   zerolog.Logger

	mu sync.Mutex
	// view is the topic as read, with the replacement rule applied;
	// overlay is this worker's writes not yet read back, shown in front
	// of view so that a REST read right after a Put sees it.
	view    map[string]map[int]Status
	overlay map[string]map[int]*pendingStatus
	applied map[int32]int64 // next offset the tailer will apply, per partition
	failed  int             // failed writes since the last Flush
	lastErr error

	topics topicTable // status-topic- records (topics.go)
}

// pendingStatus is this worker's latest write of one key until the tailer
// has read it back.
type pendingStatus struct {
	st          *Status // nil for a tombstone
	outstanding int     // writes not yet acknowledged
	acked       bool    // part and off hold the latest acknowledged write
	part        int32
	off         int64
}

// NewStatusLog creates a reader and writer of the status topic; opts carry
// the connection settings.
func NewStatusLog(opts []kgo.Opt, topic string, log zerolog.Logger) (*StatusLog, error) {
	s := &StatusLog{
		topic:   topic,
		log:     log.With().Str("topic", topic).Logger(),
		view:    make(map[string]map[int]Status),
		overlay: make(map[string]map[int]*pendingStatus),
		applied: make(map[int32]int64),
	}
	all := append(append([]kgo.Opt(nil), opts...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(statusMaxBuffered),
		kgo.RecordDeliveryTimeout(statusDeliveryTimeout),
	)
	t, err := topics.NewTailer(all, topic, s.apply)
	if err != nil {
		return nil, fmt.Errorf("status topic: %w", err)
	}
	s.t = t
	return s, nil
}

// Start tails the topic and returns once it has read to the end.
func (s *StatusLog) Start(ctx context.Context) error {
	if err := s.t.Start(ctx); err != nil {
		return fmt.Errorf("status topic: %w", err)
	}
	return nil
}

// Close stops tailing and closes the client; unsent statuses are dropped,
// so call Flush first.
func (s *StatusLog) Close() { s.t.Close() }

func canReplace(cur Status, exists bool, next Status) bool {
	return !exists || cur.WorkerID == next.WorkerID || next.Generation >= cur.Generation
}

func statusKey(connector string, task int) string {
	if task == connectorSlot {
		return statusConnectorPrefix + connector
	}
	return fmt.Sprintf("%s%s-%d", statusTaskPrefix, connector, task)
}

func parseStatusKey(key string) (string, int, error) {
	switch {
	case strings.HasPrefix(key, statusConnectorPrefix):
		return key[len(statusConnectorPrefix):], connectorSlot, nil
	case strings.HasPrefix(key, statusTaskPrefix):
		return splitTaskKey(key[len(statusTaskPrefix):])
	default:
		return "", 0, errors.New("unknown key")
	}
}

func (s *StatusLog) apply(r *kgo.Record) {
	key := string(r.Key)
	if strings.HasPrefix(key, statusTopicPrefix) {
		s.applyTopic(r)
		return
	}
	conn, task, err := parseStatusKey(key)
	var st Status
	if err == nil && r.Value != nil {
		if err = json.Unmarshal(r.Value, &st); err == nil && st.State == "" {
			err = errors.New(`status value without "state"`)
		}
	}
	if err != nil {
		s.log.Warn().Err(err).Str("key", key).Int32("partition", r.Partition).
			Int64("offset", r.Offset).Msg("skipping status record")
		s.advance(r)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied[r.Partition] = r.Offset + 1
	if r.Value == nil {
		deleteSlot(s.view, conn, task)
	} else if cur, ok := s.view[conn][task]; canReplace(cur, ok, st) {
		setSlot(s.view, conn, task, st)
	}
	if p := s.overlay[conn][task]; p != nil && p.outstanding == 0 && p.acked && p.part == r.Partition && r.Offset >= p.off {
		deleteSlot(s.overlay, conn, task)
	}
}

func (s *StatusLog) advance(r *kgo.Record) {
	s.mu.Lock()
	s.applied[r.Partition] = r.Offset + 1
	s.mu.Unlock()
}

func setSlot[V any](m map[string]map[int]V, conn string, task int, v V) {
	if m[conn] == nil {
		m[conn] = make(map[int]V)
	}
	m[conn][task] = v
}

func deleteSlot[V any](m map[string]map[int]V, conn string, task int) {
	delete(m[conn], task)
	if len(m[conn]) == 0 {
		delete(m, conn)
	}
}

// visibleLocked is what this worker currently believes the status is.
func (s *StatusLog) visibleLocked(conn string, task int) (Status, bool) {
	if p := s.overlay[conn][task]; p != nil {
		if p.st == nil {
			return Status{}, false
		}
		return *p.st, true
	}
	st, ok := s.view[conn][task]
	return st, ok
}

// PutConnector records a connector's status without blocking: the write is
// sent in the background and a failure is logged (and reported by Flush).
// A status the replacement rule rejects is neither shown nor written.
func (s *StatusLog) PutConnector(name string, st Status) { s.put(name, connectorSlot, &st) }

// PutTask records a task's status like PutConnector.
func (s *StatusLog) PutTask(id connectors.TaskID, st Status) { s.put(id.Connector, id.Task, &st) }

// DeleteConnector tombstones status-connector-<name> and
// status-task-<name>-<n> for n < tasks, and the connector's active topics,
// without blocking.
func (s *StatusLog) DeleteConnector(name string, tasks int) {
	s.put(name, connectorSlot, nil)
	for n := range tasks {
		s.put(name, n, nil)
	}
	s.forgetActiveTopics(name)
}

func (s *StatusLog) put(conn string, task int, st *Status) {
	key := statusKey(conn, task)
	var value []byte
	s.mu.Lock()
	if st != nil {
		if cur, ok := s.visibleLocked(conn, task); !canReplace(cur, ok, *st) {
			s.mu.Unlock()
			about := s.about(conn, task)
			about.Debug().Str("key", key).Str("status_worker", st.WorkerID).Int64("generation", st.Generation).
				Str("current_worker", cur.WorkerID).Int64("current_generation", cur.Generation).
				Msg("not writing a status older than the current one")
			return
		}
		var err error
		if value, err = json.Marshal(st); err != nil {
			s.mu.Unlock()
			about := s.about(conn, task)
			about.Error().Err(err).Str("key", key).Msg("encoding status")
			return
		}
	}
	p := s.overlay[conn][task]
	if p == nil {
		p = &pendingStatus{}
		setSlot(s.overlay, conn, task, p)
	}
	p.st = st
	p.outstanding++
	s.mu.Unlock()

	rec := &kgo.Record{Topic: s.topic, Key: []byte(key), Value: value}
	s.t.Client().TryProduce(context.Background(), rec, func(r *kgo.Record, err error) {
		s.acked(conn, task, r, err)
	})
}

// about is the log of the statuses of a connector (task connectorSlot) or
// of one of its tasks: its lines carry the connector and task fields, as
// the lines of the connector and task themselves do.
func (s *StatusLog) about(conn string, task int) zerolog.Logger {
	l := s.log.With().Str("connector", conn)
	if task != connectorSlot {
		l = l.Int("task", task)
	}
	return l.Logger()
}

func (s *StatusLog) acked(conn string, task int, r *kgo.Record, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed++
		s.lastErr = err
		about := s.about(conn, task)
		about.Error().Err(err).Str("key", string(r.Key)).Msg("writing status")
	}
	p := s.overlay[conn][task]
	if p == nil {
		return
	}
	p.outstanding--
	if err == nil && (!p.acked || r.Partition != p.part || r.Offset > p.off) {
		p.acked, p.part, p.off = true, r.Partition, r.Offset
	}
	if p.outstanding > 0 {
		return
	}
	// With nothing in flight, drop the overlay once the tailer has read
	// the last acknowledged write (or when every write failed, so the
	// topic's view shows again).
	if !p.acked || s.applied[p.part] > p.off {
		deleteSlot(s.overlay, conn, task)
	}
}

// Connector is the status of a connector, if one is known.
func (s *StatusLog) Connector(name string) (Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.visibleLocked(name, connectorSlot)
}

// Tasks are the known statuses of a connector's tasks by task number.
func (s *StatusLog) Tasks(name string) map[int]Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]Status)
	for n, st := range s.view[name] {
		if n != connectorSlot {
			out[n] = st
		}
	}
	for n, p := range s.overlay[name] {
		switch {
		case n == connectorSlot:
		case p.st == nil:
			delete(out, n)
		default:
			out[n] = *p.st
		}
	}
	return out
}

// Flush waits until every status written so far has been acknowledged or
// has failed, or ctx ends. It reports writes that failed since the last
// Flush.
func (s *StatusLog) Flush(ctx context.Context) error {
	if err := s.t.Client().Flush(ctx); err != nil {
		return fmt.Errorf("status topic %q: flushing: %w", s.topic, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed > 0 {
		err := fmt.Errorf("status topic %q: %d status write(s) failed, last: %w", s.topic, s.failed, s.lastErr)
		s.failed, s.lastErr = 0, nil
		return err
	}
	return nil
}
