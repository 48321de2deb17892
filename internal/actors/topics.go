package actors

import (
	"context"
	"sync/atomic"
)

// TopicRecorder records the topics connectors use: Connect's topic tracking
// (KIP-558), kept in the status topic by *state.StatusLog.
type TopicRecorder interface {
	// RecordActiveTopic records that a task used topic, unless the topic
	// is already recorded for the connector. It must not block: sources
	// call it from the producer's acknowledgement callbacks.
	RecordActiveTopic(connector string, task int, topic string)
	// ActiveTopicsEpoch moves whenever the recorder forgets a recorded
	// topic (an operator's reset, a failed write): a task that caches what
	// it recorded must record again once it moved.
	ActiveTopicsEpoch() uint64
}

// taskTopics is one task run's record of the topics it used. Asking the
// recorder for every record would cost a lock and two map lookups per
// record; instead each topic's entry remembers the recorder's epoch at
// which it was recorded, and the recorder is called only for a topic new
// to the task or after the epoch moved. A nil *taskTopics records nothing.
type taskTopics struct {
	rec       TopicRecorder
	connector string
	task      int
	// stopping is the task run's context: once it ends, nothing more is
	// recorded. A deleted connector's topics are tombstoned when its
	// actors have stopped; a late acknowledgement recording a topic after
	// that would bring the deleted connector's topic back.
	stopping context.Context
	// entries is touched only by the pipeline goroutine; the entries
	// themselves are shared with acknowledgement callbacks.
	entries map[string]*topicEntry
}

// topicEntry is one topic a task used. recorded is the recorder's epoch
// plus one when the task last recorded it: zero means never.
type topicEntry struct {
	topic    string
	recorded atomic.Uint64
}

// newTaskTopics returns the topic record of one task run, or nil when the
// runtime records no topics (no recorder, or topic.tracking.enable=false).
func (r *taskRun) newTaskTopics(ctx context.Context) *taskTopics {
	if r.rt.opts.Topics == nil {
		return nil
	}
	return &taskTopics{rec: r.rt.opts.Topics, connector: r.id.Connector, task: r.id.Task,
		stopping: ctx, entries: map[string]*topicEntry{}}
}

// entry returns topic's entry. Only the pipeline goroutine calls it.
func (t *taskTopics) entry(topic string) *topicEntry {
	if t == nil {
		return nil
	}
	e := t.entries[topic]
	if e == nil {
		e = &topicEntry{topic: topic}
		t.entries[topic] = e
	}
	return e
}

// used notes that the task used e's topic: a record of it was acknowledged
// (source) or consumed (sink). Any goroutine may call it; on the hot path
// it is two atomic loads.
func (t *taskTopics) used(e *topicEntry) {
	if e == nil {
		return
	}
	now := t.rec.ActiveTopicsEpoch() + 1
	if e.recorded.Load() == now {
		return
	}
	if t.stopping.Err() != nil {
		return
	}
	// One caller per epoch records; the epoch is read before the call, so
	// a reset that lands meanwhile makes the next use record again.
	if e.recorded.Swap(now) == now {
		return
	}
	t.rec.RecordActiveTopic(t.connector, t.task, e.topic)
}

// use is used(entry(topic)), for the pipeline goroutine.
func (t *taskTopics) use(topic string) { t.used(t.entry(topic)) }
