package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/topics"
)

// Config topic key prefixes, as Kafka Connect writes them.
const (
	connectorPrefix   = "connector-"
	taskPrefix        = "task-"
	commitPrefix      = "commit-"
	targetStatePrefix = "target-state-"
	restartPrefix     = "restart-connector-"
)

// Keys Kafka Connect writes that Sluice has no use for yet; they are skipped
// without a warning so that a topic shared with Connect reads quietly.
var ignoredConfigPrefixes = []string{"session-key"}

// taskCountPrefix keys Connect's task-count records, tasks-fencing-<name>
// -> {"task-count":N}: the leader wrote it after fencing the transactional
// producers of the connector's earlier tasks (exactly-once sources).
const taskCountPrefix = "tasks-fencing-"

// ConfigLog is the config topic (1 partition, compacted) tailed into a
// Snapshot. Writes go to partition 0 so that a task config and its commit
// keep their order even on a topic that wrongly has more partitions.
type ConfigLog struct {
	t        *topics.Tailer
	topic    string
	log      zerolog.Logger
	changes  chan struct{}
	restarts *restartQueue

	mu      sync.Mutex
	next    int64
	configs map[string]map[string]string
	targets map[string]TargetState
	tasks   map[string][]map[string]string
	// taskCounts are the task-count records (taskCountPrefix).
	taskCounts map[string]int
	// pending holds task-<name>-<n> records read since the last
	// commit-<name>; they are invisible until that commit (invariant 6).
	pending map[string]map[int]map[string]string
	// newFrom is, per partition, the first offset that was not in the
	// topic when Start began: only restart requests from there on are
	// news; older ones were handled (or not) before this worker started.
	newFrom map[int32]int64
	// loggers carries cluster-wide log levels to their handler (loggers.go).
	loggers loggerLevels
	// views are the connectors as Snapshot hands them out, each made once
	// per change of that connector; snap is the map the last Snapshot
	// returned, nil once any record was applied since. A record about a
	// connector drops its view. Before, every Snapshot made every
	// connector anew: the worker takes a snapshot or two per config
	// record, and creating 500 connectors one by one allocated 138 MB of
	// them (ADR 0023).
	views map[string]*Connector
	snap  map[string]*Connector
}

// NewConfigLog creates a reader and writer of the config topic; opts carry
// the connection settings.
func NewConfigLog(opts []kgo.Opt, topic string, log zerolog.Logger) (*ConfigLog, error) {
	c := &ConfigLog{
		topic:      topic,
		log:        log.With().Str("topic", topic).Logger(),
		changes:    make(chan struct{}, 1),
		configs:    make(map[string]map[string]string),
		targets:    make(map[string]TargetState),
		tasks:      make(map[string][]map[string]string),
		pending:    make(map[string]map[int]map[string]string),
		taskCounts: make(map[string]int),
		views:      make(map[string]*Connector),
	}
	all := append(append([]kgo.Opt(nil), opts...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(10000),
	)
	t, err := topics.NewTailer(all, topic, c.apply)
	if err != nil {
		return nil, fmt.Errorf("config topic: %w", err)
	}
	c.t = t
	c.restarts = newRestartQueue()
	return c, nil
}

// Start tails the topic and returns once the snapshot holds everything the
// topic held when Start was called.
func (c *ConfigLog) Start(ctx context.Context) error {
	c.mu.Lock()
	listed := c.newFrom != nil
	c.mu.Unlock()
	if !listed {
		// Listed before tailing begins, so that no record can be
		// applied before the tailer knows whether it is news.
		ends, err := c.t.EndOffsets(ctx)
		if err != nil {
			return fmt.Errorf("config topic: %w", err)
		}
		c.mu.Lock()
		if c.newFrom == nil {
			c.newFrom = ends
		}
		c.mu.Unlock()
	}
	if err := c.t.Start(ctx); err != nil {
		return fmt.Errorf("config topic: %w", err)
	}
	return nil
}

// ReadToEnd returns once the snapshot holds every record the topic held
// when it was called: the group leader reads to the end before it assigns.
func (c *ConfigLog) ReadToEnd(ctx context.Context) error {
	if err := c.t.WaitForEnd(ctx); err != nil {
		return fmt.Errorf("config topic: %w", err)
	}
	return nil
}

// Close stops tailing, closes the client and closes the Restarts channel.
func (c *ConfigLog) Close() {
	c.t.Close()
	c.restarts.close()
}

// Changes receives a value after changes were applied to the snapshot.
// Sends are coalesced: one value may stand for many changes, so a receiver
// reads Snapshot afterwards rather than counting.
func (c *ConfigLog) Changes() <-chan struct{} { return c.changes }

// Restarts delivers the restart requests read after Start began, in the
// order they were read. The channel holds restartBuffer requests; beyond
// that, requests wait in a queue holding at most one (merged) request per
// connector, so nothing is dropped and memory stays bounded by the number
// of connectors. The channel is closed by Close.
func (c *ConfigLog) Restarts() <-chan RestartRequest { return c.restarts.out }

// Snapshot is the state read so far. It is shared, not copied, and
// read-only: its map and connectors are the same for every call until the
// next record is applied, and a connector's stay the same until a record
// about that connector (ADR 0023); its config maps are the log's own, which
// the log never writes into (a record replaces a map whole). An idle worker
// held a copy of every connector's and task's config per assignment, and
// creating 500 connectors copied every config once per snapshot (ADR 0017,
// fifth round). Whoever changes a config starts from maps.Clone, and plugins
// are handed copies of their own (actors: connectorRun.start,
// sourcePipeline.run, taskRun.build).
func (c *ConfigLog) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil {
		c.snap = make(map[string]*Connector, len(c.configs))
		for name, cfg := range c.configs {
			v := c.views[name]
			if v == nil {
				v = c.connectorLocked(name, cfg)
				c.views[name] = v
			}
			c.snap[name] = v
		}
	}
	return Snapshot{Offset: c.next, Connectors: c.snap}
}

// Offset is the next offset of the config topic to read: every record
// before it is applied.
func (c *ConfigLog) Offset() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next
}

// Connector is one connector as Snapshot has it (its maps shared, read-only), false when
// it has no config. A request about one connector copies that connector
// only: with Snapshot, GET /connectors?expand=status copied every
// connector's config once per connector.
func (c *ConfigLog) Connector(name string) (*Connector, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, ok := c.configs[name]
	if !ok {
		return nil, false
	}
	return c.connectorLocked(name, cfg), true
}

// Names returns the names of the connectors that have a config, in no
// order.
func (c *ConfigLog) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.configs))
	for name := range c.configs {
		names = append(names, name)
	}
	return names
}

// connectorLocked describes connector name whose config is cfg, sharing the
// log's maps (Snapshot); c.mu is held.
func (c *ConfigLog) connectorLocked(name string, cfg map[string]string) *Connector {
	conn := &Connector{Name: name, Config: cfg, TargetState: TargetStarted}
	if ts, ok := c.targets[name]; ok {
		conn.TargetState = ts
	}
	conn.TaskCount = c.taskCounts[name]
	if tasks := c.tasks[name]; tasks != nil {
		// A slice of its own (Connector's callers may keep it), the
		// maps in it shared.
		conn.Tasks = slices.Clone(tasks)
	}
	return conn
}

func (c *ConfigLog) apply(r *kgo.Record) {
	c.mu.Lock()
	if r.Offset+1 > c.next {
		c.next = r.Offset + 1
	}
	restart, err := c.applyLocked(r)
	c.forgetLocked(string(r.Key))
	c.mu.Unlock()
	if err != nil {
		c.log.Warn().Err(err).Str("key", string(r.Key)).Int32("partition", r.Partition).
			Int64("offset", r.Offset).Msg("skipping config record")
	}
	if restart != nil {
		c.restarts.push(*restart)
	}
	c.loggers.deliver()
	select {
	case c.changes <- struct{}{}:
	default:
	}
}

// forgetLocked drops what Snapshot made from the state a record with this
// key may have changed: the view of the connector it names, and the last
// snapshot's map. A key of no connector's view (a pending task config,
// invisible until its commit; a restart request; a log level) changes no
// view, and a new map costs one entry per connector.
func (c *ConfigLog) forgetLocked(key string) {
	c.snap = nil
	for _, prefix := range []string{connectorPrefix, targetStatePrefix, commitPrefix, taskCountPrefix} {
		if name, ok := strings.CutPrefix(key, prefix); ok {
			delete(c.views, name)
			return
		}
	}
}

// applyLocked applies one record and returns a restart request to deliver.
func (c *ConfigLog) applyLocked(r *kgo.Record) (*RestartRequest, error) {
	key := string(r.Key)
	switch {
	case strings.HasPrefix(key, connectorPrefix):
		name := key[len(connectorPrefix):]
		if r.Value == nil {
			// The target state goes too, so that a connector
			// re-created under this name starts STARTED even if
			// the target-state tombstone is missing.
			delete(c.configs, name)
			delete(c.tasks, name)
			delete(c.pending, name)
			delete(c.targets, name)
			delete(c.taskCounts, name)
			return nil, nil
		}
		props, err := parseProperties(r.Value)
		if err != nil {
			return nil, err
		}
		c.configs[name] = props

	case strings.HasPrefix(key, targetStatePrefix):
		name := key[len(targetStatePrefix):]
		if r.Value == nil {
			delete(c.targets, name)
			return nil, nil
		}
		ts, err := parseTargetState(r.Value)
		if err != nil {
			return nil, err
		}
		c.targets[name] = ts

	case strings.HasPrefix(key, taskPrefix):
		name, n, err := splitTaskKey(key[len(taskPrefix):])
		if err != nil {
			return nil, err
		}
		if r.Value == nil {
			return nil, errors.New("task config tombstone")
		}
		props, err := parseProperties(r.Value)
		if err != nil {
			return nil, err
		}
		if c.pending[name] == nil {
			c.pending[name] = make(map[int]map[string]string)
		}
		c.pending[name][n] = props

	case strings.HasPrefix(key, commitPrefix):
		name := key[len(commitPrefix):]
		if r.Value == nil {
			return nil, errors.New("commit tombstone")
		}
		var v struct {
			Tasks *int `json:"tasks"`
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return nil, fmt.Errorf("commit value: %w", err)
		}
		if v.Tasks == nil || *v.Tasks < 0 {
			return nil, errors.New(`commit value has no valid "tasks" count`)
		}
		return nil, c.commitLocked(name, *v.Tasks)

	case strings.HasPrefix(key, restartPrefix):
		name := key[len(restartPrefix):]
		if r.Value == nil {
			return nil, nil // compaction cleanup; nothing to restart
		}
		var req RestartRequest
		if err := json.Unmarshal(r.Value, &req); err != nil {
			return nil, fmt.Errorf("restart request value: %w", err)
		}
		req.Connector = name
		if from, known := c.newFrom[r.Partition]; known && r.Offset >= from {
			return &req, nil
		}

	case strings.HasPrefix(key, taskCountPrefix):
		name := key[len(taskCountPrefix):]
		if r.Value == nil {
			delete(c.taskCounts, name)
			return nil, nil
		}
		var v struct {
			TaskCount *int `json:"task-count"`
		}
		if err := json.Unmarshal(r.Value, &v); err != nil || v.TaskCount == nil || *v.TaskCount < 0 {
			return nil, fmt.Errorf(`task-count record is not {"task-count":N}`)
		}
		c.taskCounts[name] = *v.TaskCount

	case strings.HasPrefix(key, loggerClusterPrefix):
		return nil, c.loggerLevelLocked(r, key[len(loggerClusterPrefix):])

	default:
		for _, p := range ignoredConfigPrefixes {
			if strings.HasPrefix(key, p) {
				return nil, nil
			}
		}
		return nil, errors.New("unknown key")
	}
	return nil, nil
}

// commitLocked makes the pending task configs of name visible if they are
// complete.
func (c *ConfigLog) commitLocked(name string, n int) error {
	pending := c.pending[name]
	// As Connect: whether applied or not, the records before this commit
	// are done with; a later commit needs a complete fresh set.
	delete(c.pending, name)
	// Invariant 6: task configs become visible only with a commit whose
	// count N is matched by task records 0..N-1 written since the
	// previous commit; a commit missing any of them is ignored whole,
	// so no mix of old and new task configs is ever visible.
	tasks := make([]map[string]string, n)
	for i := range n {
		tc, ok := pending[i]
		if !ok {
			return fmt.Errorf("inconsistent task configs of connector %q: commit of %d task(s) without task %d; ignoring it", name, n, i)
		}
		tasks[i] = tc
	}
	c.tasks[name] = tasks
	return nil
}

// splitTaskKey splits "<name>-<n>"; names may contain '-', numbers cannot.
func splitTaskKey(s string) (string, int, error) {
	i := strings.LastIndexByte(s, '-')
	if i <= 0 {
		return "", 0, errors.New("task key without <connector>-<n>")
	}
	digits := s[i+1:]
	n, err := strconv.Atoi(digits)
	if err != nil || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return "", 0, fmt.Errorf("task key with bad task number %q", digits)
	}
	return s[:i], n, nil
}

// parseProperties reads {"properties":{...}}. Values that are not strings
// (a hand-written record may hold numbers or booleans) become their JSON
// text; nulls are dropped.
func parseProperties(value []byte) (map[string]string, error) {
	var v struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(value, &v); err != nil {
		return nil, fmt.Errorf("properties value: %w", err)
	}
	if v.Properties == nil {
		return nil, errors.New(`value has no "properties" object`)
	}
	props := make(map[string]string, len(v.Properties))
	for k, val := range v.Properties {
		switch x := val.(type) {
		case nil:
		case string:
			props[k] = x
		default:
			b, err := json.Marshal(x)
			if err != nil {
				return nil, fmt.Errorf("property %q: %w", k, err)
			}
			props[k] = string(b)
		}
	}
	return props, nil
}

// parseTargetState prefers "state.v2", which Connect added for STOPPED and
// writes next to a "state" that older readers understand.
func parseTargetState(value []byte) (TargetState, error) {
	var v struct {
		State   string `json:"state"`
		StateV2 string `json:"state.v2"`
	}
	if err := json.Unmarshal(value, &v); err != nil {
		return "", fmt.Errorf("target state value: %w", err)
	}
	for _, s := range []string{v.StateV2, v.State} {
		switch TargetState(s) {
		case TargetStarted, TargetPaused, TargetStopped:
			return TargetState(s), nil
		}
	}
	return "", fmt.Errorf("unknown target state %q / %q", v.State, v.StateV2)
}

// write produces recs to partition 0 in order and returns once the tailer
// has applied the last of them.
func (c *ConfigLog) write(ctx context.Context, what string, recs ...*kgo.Record) error {
	for _, r := range recs {
		r.Topic = c.topic
		r.Partition = 0
	}
	if err := produceAll(ctx, c.t.Client(), recs...); err != nil {
		return fmt.Errorf("config topic %q: writing %s: %w", c.topic, what, err)
	}
	last := recs[len(recs)-1]
	if err := c.t.WaitPosition(ctx, last.Partition, last.Offset); err != nil {
		return fmt.Errorf("config topic %q: %s written but not yet read back: %w", c.topic, what, err)
	}
	return nil
}

// PutConnectorConfig writes connector-<name> -> {"properties":{...}}.
func (c *ConfigLog) PutConnectorConfig(ctx context.Context, name string, config map[string]string) error {
	return c.Write(ctx, new(Batch).ConnectorConfig(name, config))
}

// PutTargetState writes target-state-<name>.
func (c *ConfigLog) PutTargetState(ctx context.Context, name string, s TargetState) error {
	return c.Write(ctx, new(Batch).TargetState(name, s))
}

// PutTaskConfigs writes a connector's task configs and their commit record.
func (c *ConfigLog) PutTaskConfigs(ctx context.Context, name string, tasks []map[string]string) error {
	return c.Write(ctx, new(Batch).TaskConfigs(name, tasks))
}

// DeleteConnector tombstones connector-<name> and target-state-<name>, as
// Connect does.
func (c *ConfigLog) DeleteConnector(ctx context.Context, name string) error {
	return c.write(ctx, "deletion of connector "+strconv.Quote(name),
		&kgo.Record{Key: []byte(connectorPrefix + name)},
		&kgo.Record{Key: []byte(targetStatePrefix + name)})
}

// RequestRestart writes restart-connector-<name>.
func (c *ConfigLog) RequestRestart(ctx context.Context, r RestartRequest) error {
	v, err := json.Marshal(map[string]bool{"include-tasks": r.IncludeTasks, "only-failed": r.OnlyFailed})
	if err != nil {
		return err
	}
	return c.write(ctx, "restart request of connector "+strconv.Quote(r.Connector),
		&kgo.Record{Key: []byte(restartPrefix + r.Connector), Value: v})
}
