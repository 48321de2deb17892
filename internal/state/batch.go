package state

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Batch is records of the config topic that one request writes together,
// in order, and that its answer waits for as one: a connector's target
// state, config and first task configs at creation, or a stop with its
// emptied task configs. Workers read them in order, so a connector whose
// config is read already has its target state, and task configs still
// become visible only with their commit record (invariant 6).
type Batch struct {
	recs  []*kgo.Record
	ops   []BatchOp
	descr []string
	err   error
}

// BatchOp names one write of a batch, for callers that log or record them.
type BatchOp struct {
	// Kind is "target", "config", "tasks" or "task-count".
	Kind   string
	Name   string
	Target TargetState // for "target"
	Tasks  int         // for "tasks" and "task-count": how many tasks
}

// Ops lists the batch's writes in order.
func (b *Batch) Ops() []BatchOp { return append([]BatchOp(nil), b.ops...) }

func (b *Batch) add(op BatchOp, descr string, recs ...*kgo.Record) *Batch {
	b.ops = append(b.ops, op)
	b.descr = append(b.descr, descr)
	b.recs = append(b.recs, recs...)
	return b
}

// TargetState writes target-state-<name>. For STOPPED, "state" says PAUSED,
// as Connect writes it for readers that predate "state.v2".
func (b *Batch) TargetState(name string, s TargetState) *Batch {
	legacy := s
	switch s {
	case TargetStarted, TargetPaused:
	case TargetStopped:
		legacy = TargetPaused
	default:
		b.err = fmt.Errorf("unknown target state %q", s)
		return b
	}
	v, _ := json.Marshal(map[string]string{"state": string(legacy), "state.v2": string(s)}) // strings: cannot fail
	return b.add(BatchOp{Kind: "target", Name: name, Target: s}, "target state of connector "+strconv.Quote(name),
		&kgo.Record{Key: []byte(targetStatePrefix + name), Value: v})
}

// ConnectorConfig writes connector-<name> -> {"properties":{...}}.
func (b *Batch) ConnectorConfig(name string, config map[string]string) *Batch {
	return b.add(BatchOp{Kind: "config", Name: name}, "config of connector "+strconv.Quote(name),
		&kgo.Record{Key: []byte(connectorPrefix + name), Value: propertiesValue(config)})
}

// TaskConfigs writes task-<name>-<n> for every task, then commit-<name> ->
// {"tasks":N}. Empty tasks write only the commit, which empties the list.
func (b *Batch) TaskConfigs(name string, tasks []map[string]string) *Batch {
	recs := make([]*kgo.Record, 0, len(tasks)+1)
	for i, tc := range tasks {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "%s%s-%d", taskPrefix, name, i), Value: propertiesValue(tc)})
	}
	commit, _ := json.Marshal(map[string]int{"tasks": len(tasks)}) // an int: cannot fail
	recs = append(recs, &kgo.Record{Key: []byte(commitPrefix + name), Value: commit})
	return b.add(BatchOp{Kind: "tasks", Name: name, Tasks: len(tasks)},
		fmt.Sprintf("%d task config(s) of connector %q", len(tasks), name), recs...)
}

// TaskCount writes tasks-fencing-<name> -> {"task-count":N}, as Connect's
// leader does once it fenced the producers of a source connector's earlier
// tasks.
func (b *Batch) TaskCount(name string, n int) *Batch {
	v, _ := json.Marshal(map[string]int{"task-count": n}) // an int: cannot fail
	return b.add(BatchOp{Kind: "task-count", Name: name, Tasks: n}, fmt.Sprintf("task count %d of connector %q", n, name),
		&kgo.Record{Key: []byte(taskCountPrefix + name), Value: v})
}

// Write produces the batch to partition 0 in order and returns once this
// worker's snapshot holds all of it: a write reads itself back before it
// answers, so the next request sees it.
func (c *ConfigLog) Write(ctx context.Context, b *Batch) error {
	if b.err != nil {
		return b.err
	}
	if len(b.recs) == 0 {
		return nil
	}
	return c.write(ctx, strings.Join(b.descr, ", "), b.recs...)
}

func propertiesValue(props map[string]string) []byte {
	if props == nil {
		props = map[string]string{}
	}
	v, _ := json.Marshal(map[string]any{"properties": props}) // strings: cannot fail
	return v
}
