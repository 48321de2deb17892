package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Connect's topic tracking (KIP-558) keeps, in the status topic, which
// topics each connector has used: the key
// status-topic-<topic>:connector-<connector> (KafkaStatusBackingStore's
// TOPIC_STATUS_PREFIX and TOPIC_STATUS_SEPARATOR) with the value
// {"topic":{"name","connector","task","discoverTimestamp"}}; a tombstone
// forgets the topic again.
const topicStatusSeparator = ":connector-"

// Worker config keys of topic tracking (WorkerConfig), both true by default.
const (
	TopicTrackingEnableConfig     = "topic.tracking.enable"
	TopicTrackingAllowResetConfig = "topic.tracking.allow.reset"
)

// defaultTopicRetryDelay is how long after a failed topic record the
// recorded topics are forgotten by tasks' caches, so they record again:
// Connect retries such writes, and a retry per failure at once would turn
// a broker outage into a storm of writes.
const defaultTopicRetryDelay = 10 * time.Second

// TopicStatus says that a connector's task used a topic, first at
// DiscoverTimestamp (Unix milliseconds).
type TopicStatus struct {
	Topic             string `json:"name"`
	Connector         string `json:"connector"`
	Task              int    `json:"task"`
	DiscoverTimestamp int64  `json:"discoverTimestamp"`
}

// topicStatusValue is the record value: Connect wraps the status in a map
// under "topic".
type topicStatusValue struct {
	Topic *TopicStatus `json:"topic"`
}

// TopicTracking is the worker's topic.tracking.* config.
type TopicTracking struct {
	Enabled    bool // topic.tracking.enable
	AllowReset bool // topic.tracking.allow.reset
}

// ParseTopicTracking reads topic.tracking.enable and
// topic.tracking.allow.reset from a worker's properties; unset keys take
// Connect's default, true.
func ParseTopicTracking(props map[string]string) (TopicTracking, error) {
	t := TopicTracking{Enabled: true, AllowReset: true}
	for _, k := range []struct {
		key string
		dst *bool
	}{{TopicTrackingEnableConfig, &t.Enabled}, {TopicTrackingAllowResetConfig, &t.AllowReset}} {
		// Connect's boolean parsing: trimmed, either case.
		switch v := strings.TrimSpace(props[k.key]); strings.ToLower(v) {
		case "":
		case "true":
			*k.dst = true
		case "false":
			*k.dst = false
		default:
			return TopicTracking{}, fmt.Errorf("%s: %q is not true or false", k.key, v)
		}
	}
	return t, nil
}

// topicTable is the part of a StatusLog that holds active topics. Its zero
// value is ready, with tracking and reset enabled (Connect's defaults).
type topicTable struct {
	// trackingOff and resetOff are the negated config, so the zero value
	// is Connect's default.
	trackingOff atomic.Bool
	resetOff    atomic.Bool
	// epoch moves whenever a recorded topic is forgotten (a tombstone read,
	// a failed write retried), so that tasks, which cache what they
	// recorded to stay off the hot path, record again.
	epoch      atomic.Uint64
	retryArmed atomic.Bool
	retryDelay time.Duration // 0: defaultTopicRetryDelay; set by tests

	mu sync.Mutex
	// active is connector -> topic -> status: the topic as read, plus this
	// worker's own records in front of it from the moment they are sent,
	// so that a task's next record of the same topic is not written again.
	active map[string]map[string]TopicStatus
}

// SetTopicTracking applies the worker's topic.tracking.* config: with
// tracking disabled, nothing is recorded and a deleted connector's topics
// are left alone, as in Connect.
func (s *StatusLog) SetTopicTracking(t TopicTracking) {
	s.topics.trackingOff.Store(!t.Enabled)
	s.topics.resetOff.Store(!t.AllowReset)
}

// TopicTrackingEnabled reports topic.tracking.enable.
func (s *StatusLog) TopicTrackingEnabled() bool { return !s.topics.trackingOff.Load() }

// TopicTrackingResetAllowed reports topic.tracking.allow.reset.
func (s *StatusLog) TopicTrackingResetAllowed() bool { return !s.topics.resetOff.Load() }

// ActiveTopicsEpoch moves whenever a recorded topic is forgotten. A task
// that caches the topics it recorded must record them again once it moved.
func (s *StatusLog) ActiveTopicsEpoch() uint64 { return s.topics.epoch.Load() }

func topicStatusKey(connector, topic string) string {
	return statusTopicPrefix + topic + topicStatusSeparator + connector
}

// parseTopicStatusKey splits status-topic-<topic>:connector-<connector>.
// Like Connect, it splits at the first ':' (topic names cannot hold one,
// connector names can) and refuses an empty topic or connector.
func parseTopicStatusKey(key string) (topic, connector string, err error) {
	rest, ok := strings.CutPrefix(key, statusTopicPrefix)
	if !ok {
		return "", "", errors.New("not a topic status key")
	}
	colon := strings.IndexByte(rest, ':')
	if colon < 0 {
		return "", "", fmt.Errorf("topic status key without %q", topicStatusSeparator)
	}
	topic = rest[:colon]
	if connector, ok = strings.CutPrefix(rest[colon:], topicStatusSeparator); !ok {
		return "", "", fmt.Errorf("topic status key without %q", topicStatusSeparator)
	}
	switch {
	case topic == "":
		return "", "", errors.New("topic status key with an empty topic")
	case connector == "":
		return "", "", errors.New("topic status key with an empty connector")
	}
	return topic, connector, nil
}

// applyTopic applies a status-topic- record read from the topic; apply
// hands these keys here.
func (s *StatusLog) applyTopic(r *kgo.Record) {
	defer s.advance(r)
	key := string(r.Key)
	topic, connector, err := parseTopicStatusKey(key)
	var v topicStatusValue
	if err == nil && r.Value != nil {
		if err = json.Unmarshal(r.Value, &v); err == nil && v.Topic == nil {
			err = errors.New(`topic status value without "topic"`)
		}
	}
	if err != nil {
		s.log.Warn().Err(err).Str("key", key).Int32("partition", r.Partition).
			Int64("offset", r.Offset).Msg("skipping topic status record")
		return
	}
	tt := &s.topics
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if r.Value == nil {
		if _, ok := tt.active[connector][topic]; ok {
			tt.deleteLocked(connector, topic)
			tt.epoch.Add(1)
		}
		return
	}
	// The key says which topic of which connector; the value's fields
	// only tell which task found it and when, so a value that lacks them
	// still records the topic.
	st := *v.Topic
	st.Topic, st.Connector = topic, connector
	tt.setLocked(st)
}

func (tt *topicTable) setLocked(st TopicStatus) {
	if tt.active == nil {
		tt.active = make(map[string]map[string]TopicStatus)
	}
	if tt.active[st.Connector] == nil {
		tt.active[st.Connector] = make(map[string]TopicStatus)
	}
	tt.active[st.Connector][st.Topic] = st
}

func (tt *topicTable) deleteLocked(connector, topic string) {
	delete(tt.active[connector], topic)
	if len(tt.active[connector]) == 0 {
		delete(tt.active, connector)
	}
}

// RecordActiveTopic records that task of connector used topic, unless the
// topic is already recorded for the connector (Connect's
// WorkerTask.recordActiveTopic). It never blocks: the record is sent in the
// background; a failed write is forgotten again and retried once tasks
// notice (ActiveTopicsEpoch).
func (s *StatusLog) RecordActiveTopic(connector string, task int, topic string) {
	if topic == "" || connector == "" || !s.TopicTrackingEnabled() {
		return
	}
	tt := &s.topics
	tt.mu.Lock()
	if _, ok := tt.active[connector][topic]; ok {
		tt.mu.Unlock()
		return
	}
	st := TopicStatus{Topic: topic, Connector: connector, Task: task, DiscoverTimestamp: time.Now().UnixMilli()}
	tt.setLocked(st)
	tt.mu.Unlock()

	// Strings and numbers only: Marshal cannot fail.
	value, _ := json.Marshal(topicStatusValue{Topic: &st})
	rec := &kgo.Record{Topic: s.topic, Key: []byte(topicStatusKey(connector, topic)), Value: value}
	s.t.Client().TryProduce(context.Background(), rec, func(_ *kgo.Record, err error) {
		if err != nil {
			s.topicWriteFailed(st, err)
		}
	})
}

// topicWriteFailed drops a topic record that was not written from the
// local view, unless something newer replaced it meanwhile, and has tasks
// record their topics again after a delay.
func (s *StatusLog) topicWriteFailed(st TopicStatus, err error) {
	tt := &s.topics
	tt.mu.Lock()
	if cur, ok := tt.active[st.Connector][st.Topic]; ok && cur == st {
		tt.deleteLocked(st.Connector, st.Topic)
	}
	tt.mu.Unlock()
	s.log.Error().Err(err).Str("connector", st.Connector).Str("active_topic", st.Topic).
		Msg("writing an active topic record; it is recorded again on its next use")
	if tt.retryArmed.CompareAndSwap(false, true) {
		delay := tt.retryDelay
		if delay <= 0 {
			delay = defaultTopicRetryDelay
		}
		time.AfterFunc(delay, func() {
			tt.retryArmed.Store(false)
			tt.epoch.Add(1)
		})
	}
}

// ActiveTopics lists, sorted, the topics recorded for a connector.
func (s *StatusLog) ActiveTopics(connector string) []string {
	tt := &s.topics
	tt.mu.Lock()
	defer tt.mu.Unlock()
	out := make([]string, 0, len(tt.active[connector]))
	for topic := range tt.active[connector] {
		out = append(out, topic)
	}
	slices.Sort(out)
	return out
}

func (s *StatusLog) topicTombstones(connector string) []*kgo.Record {
	var recs []*kgo.Record
	for _, topic := range s.ActiveTopics(connector) {
		recs = append(recs, &kgo.Record{Topic: s.topic, Key: []byte(topicStatusKey(connector, topic))})
	}
	return recs
}

// ResetActiveTopics tombstones every topic recorded for a connector
// (Connect's resetConnectorActiveTopics) and returns once the tombstones
// are written and read back, so the caller sees the topics gone. Tasks
// that keep using a topic record it again.
func (s *StatusLog) ResetActiveTopics(ctx context.Context, connector string) error {
	recs := s.topicTombstones(connector)
	if len(recs) == 0 {
		return nil
	}
	if err := produceAll(ctx, s.t.Client(), recs...); err != nil {
		return fmt.Errorf("status topic %q: resetting the active topics of %s: %w", s.topic, connector, err)
	}
	// kgo has set each record's partition and offset; read up to them.
	targets := make(map[int32]int64)
	for _, r := range recs {
		targets[r.Partition] = max(targets[r.Partition], r.Offset+1)
	}
	if err := s.t.WaitFor(ctx, targets); err != nil {
		return fmt.Errorf("status topic %q: reading back the reset of the active topics of %s: %w", s.topic, connector, err)
	}
	return nil
}

// forgetActiveTopics tombstones a deleted connector's topics without
// blocking, as Connect resets the active topics of connectors it no longer
// finds in the config once their tasks stopped; only with tracking
// enabled, like Connect.
func (s *StatusLog) forgetActiveTopics(connector string) {
	if !s.TopicTrackingEnabled() {
		return
	}
	for _, rec := range s.topicTombstones(connector) {
		s.t.Client().TryProduce(context.Background(), rec, func(r *kgo.Record, err error) {
			if err != nil {
				s.log.Error().Err(err).Str("key", string(r.Key)).Msg("tombstoning an active topic of a deleted connector")
			}
		})
	}
}
