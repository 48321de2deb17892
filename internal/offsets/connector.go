package offsets

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// SinkGroup is the consumer group of a sink connector's tasks, named as
// Kafka Connect names it, so that offsets committed by Connect carry over.
func SinkGroup(connector string) string { return "connect-" + connector }

// SinkOffset is the committed offset of one topic partition in a sink
// connector's consumer group. A nil Offset deletes the partition's offset.
type SinkOffset struct {
	Topic     string
	Partition int32
	Offset    *int64
}

var (
	// ErrGroupNotEmpty means the sink connector's consumer group still has
	// members after those of its stopped tasks were removed: a task still
	// runs (a zombie, or the connector was resumed meanwhile), or a
	// consumer outside Sluice uses the group. Kafka lets only members
	// commit to a non-empty group.
	ErrGroupNotEmpty = errors.New("the consumer group still has active members")
	// ErrUnknownPartition means an offset was given for a topic partition
	// that does not exist.
	ErrUnknownPartition = errors.New("unknown topic or partition")
)

// ConnectorOffsets reads, alters and resets the offsets of one connector at
// a time, as Kafka Connect's offsets API (KIP-875) does: a source
// connector's in the offsets topic through the SourceStore, a sink
// connector's in its consumer group through the admin client.
//
// Altering and resetting assume the connector is stopped: its tasks
// neither flush source offsets nor consume any more. Checking that is the
// caller's job.
type ConnectorOffsets struct {
	src    *SourceStore
	topics *TopicStores // nil: no connector has its own offsets topic
	adm    *kadm.Client
}

// NewConnectorOffsets returns the offsets operations over the worker's
// source offset store, the stores of connector-specific offsets topics
// (nil when there are none) and the admin client.
func NewConnectorOffsets(src *SourceStore, topics *TopicStores, adm *kadm.Client) *ConnectorOffsets {
	return &ConnectorOffsets{src: src, topics: topics, adm: adm}
}

// sourceView is a source connector's offsets: the worker's store, or a
// Layered one with the connector's own topic.
type sourceView interface {
	ReadToEnd(ctx context.Context) error
	Offsets(connector string) []PartitionOffset
	Write(ctx context.Context, connector string, entries []PartitionOffset) error
}

// view returns the offsets of a connector whose offsets.storage.topic is
// ownTopic ("" for none).
func (c *ConnectorOffsets) view(ctx context.Context, ownTopic string) (sourceView, error) {
	if ownTopic == "" || ownTopic == c.src.Topic() {
		return c.src, nil
	}
	if c.topics == nil {
		return nil, fmt.Errorf("connector-specific offsets topic %q: this worker opens none", ownTopic)
	}
	own, err := c.topics.Open(ctx, ownTopic)
	if err != nil {
		return nil, err
	}
	return Layered{Own: own, Worker: c.src}, nil
}

// SourceOffsets lists every source partition of connector that has an
// offset; ownTopic is its offsets.storage.topic ("" for none). It first
// reads the offsets topics to their ends, so that it also shows what other
// workers wrote before the call.
func (c *ConnectorOffsets) SourceOffsets(ctx context.Context, connector, ownTopic string) ([]PartitionOffset, error) {
	v, err := c.view(ctx, ownTopic)
	if err != nil {
		return nil, err
	}
	if err := v.ReadToEnd(ctx); err != nil {
		return nil, err
	}
	return v.Offsets(connector), nil
}

// AlterSourceOffsets writes the given offsets of connector; a nil Offset
// deletes the partition's offset. It returns once the store has read the
// writes back, so that SourceOffsets shows them.
func (c *ConnectorOffsets) AlterSourceOffsets(ctx context.Context, connector, ownTopic string, offs []PartitionOffset) error {
	v, err := c.view(ctx, ownTopic)
	if err != nil {
		return err
	}
	// Read to the end first: Write reuses the exact key bytes of a
	// partition it already knows (perhaps written by Kafka Connect in
	// another field order); a key it has not read yet would be written
	// anew and leave the old record to win again after compaction.
	if err := v.ReadToEnd(ctx); err != nil {
		return err
	}
	if err := v.Write(ctx, connector, offs); err != nil {
		return err
	}
	return v.ReadToEnd(ctx)
}

// ResetSourceOffsets deletes every source offset of connector with
// tombstones (in both topics when it has its own). Resetting a connector
// without offsets does nothing.
func (c *ConnectorOffsets) ResetSourceOffsets(ctx context.Context, connector, ownTopic string) error {
	v, err := c.view(ctx, ownTopic)
	if err != nil {
		return err
	}
	if err := v.ReadToEnd(ctx); err != nil {
		return err
	}
	current := v.Offsets(connector)
	if len(current) == 0 {
		return nil
	}
	tombstones := make([]PartitionOffset, len(current))
	for i, po := range current {
		tombstones[i] = PartitionOffset{Partition: po.Partition}
	}
	if err := v.Write(ctx, connector, tombstones); err != nil {
		return err
	}
	return v.ReadToEnd(ctx)
}

// sinkOffsets is one attempt of SinkOffsets.
func (c *ConnectorOffsets) sinkOffsets(ctx context.Context, connector string) ([]SinkOffset, error) {
	group := SinkGroup(connector)
	fetched, err := c.adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return []SinkOffset{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fetching the offsets of consumer group %s: %w", group, err)
	}
	out := []SinkOffset{}
	var ferr error
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			if ferr == nil {
				ferr = fmt.Errorf("fetching the offset of %s[%d] in consumer group %s: %w", o.Topic, o.Partition, group, o.Err)
			}
			return
		}
		if o.At < 0 {
			return // nothing committed
		}
		at := o.At
		out = append(out, SinkOffset{Topic: o.Topic, Partition: o.Partition, Offset: &at})
	})
	if ferr != nil {
		return nil, ferr
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// alterSinkOffsets commits the given offsets to connector's consumer group
// and deletes those given as nil; for a partition given twice, the last
// entry counts. The stopped tasks' static members are removed from the
// group first, since Kafka refuses admin commits to a non-empty group.
// Errors wrap ErrGroupNotEmpty when members remain, and
// ErrUnknownPartition for a commit to a partition that does not exist.
func (c *ConnectorOffsets) alterSinkOffsets(ctx context.Context, connector string, offs []SinkOffset) error {
	group := SinkGroup(connector)
	commits := make(kadm.Offsets)
	deletes := make(kadm.TopicsSet)
	for _, o := range offs {
		if o.Offset == nil {
			commits.Delete(o.Topic, o.Partition)
			deletes.Add(o.Topic, o.Partition)
			continue
		}
		if ps := deletes[o.Topic]; ps != nil {
			delete(ps, o.Partition)
			if len(ps) == 0 {
				delete(deletes, o.Topic)
			}
		}
		// Add keeps the higher of two offsets; the later entry must win.
		commits.Delete(o.Topic, o.Partition)
		commits.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: *o.Offset, LeaderEpoch: -1})
	}
	if err := c.removeStoppedTasks(ctx, connector); err != nil {
		return err
	}
	if len(commits) > 0 {
		if err := c.commit(ctx, group, commits); err != nil {
			return err
		}
	}
	if len(deletes) > 0 {
		if err := c.deleteOffsets(ctx, group, deletes); err != nil {
			return err
		}
	}
	return nil
}

func (c *ConnectorOffsets) commit(ctx context.Context, group string, commits kadm.Offsets) error {
	resps, err := c.adm.CommitOffsets(ctx, group, commits)
	if err != nil {
		return classifyGroupErr(fmt.Errorf("committing offsets to consumer group %s: %w", group, err))
	}
	var unknown []string
	var first error
	for _, o := range resps.Sorted() {
		switch {
		case o.Err == nil:
		case errors.Is(o.Err, kerr.UnknownTopicOrPartition):
			unknown = append(unknown, fmt.Sprintf("%s[%d]", o.Topic, o.Partition))
		case first == nil:
			first = fmt.Errorf("committing the offset of %s[%d] to consumer group %s: %w", o.Topic, o.Partition, group, o.Err)
		}
	}
	if first != nil {
		return classifyGroupErr(first)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: %s", ErrUnknownPartition, strings.Join(unknown, ", "))
	}
	return nil
}

func (c *ConnectorOffsets) deleteOffsets(ctx context.Context, group string, deletes kadm.TopicsSet) error {
	resps, err := c.adm.DeleteOffsets(ctx, group, deletes)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return nil // no group, no offsets to delete
	}
	if err != nil {
		return classifyGroupErr(fmt.Errorf("deleting offsets of consumer group %s: %w", group, err))
	}
	var first error
	resps.EachError(func(t string, p int32, err error) {
		// Kafka drops the offsets of a deleted topic itself: a topic
		// that no longer exists has nothing left to delete.
		if errors.Is(err, kerr.UnknownTopicOrPartition) || first != nil {
			return
		}
		first = fmt.Errorf("deleting the offset of %s[%d] from consumer group %s: %w", t, p, group, err)
	})
	return classifyGroupErr(first)
}

// resetSinkOffsets deletes connector's consumer group, and with it every
// offset it committed, as Kafka Connect does. A group that does not exist
// is already reset. Errors wrap ErrGroupNotEmpty when members remain after
// the stopped tasks' static members were removed.
func (c *ConnectorOffsets) resetSinkOffsets(ctx context.Context, connector string) error {
	group := SinkGroup(connector)
	if err := c.removeStoppedTasks(ctx, connector); err != nil {
		return err
	}
	_, err := c.adm.DeleteGroup(ctx, group)
	if err == nil || errors.Is(err, kerr.GroupIDNotFound) {
		return nil
	}
	return classifyGroupErr(fmt.Errorf("deleting consumer group %s: %w", group, err))
}

// classifyGroupErr marks with ErrGroupNotEmpty the errors Kafka answers an
// admin commit or deletion with when the group has members.
func classifyGroupErr(err error) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{kerr.UnknownMemberID, kerr.IllegalGeneration, kerr.RebalanceInProgress, kerr.NonEmptyGroup, kerr.GroupSubscribedToTopic} {
		if errors.Is(err, e) {
			return fmt.Errorf("%w: %w", ErrGroupNotEmpty, err)
		}
	}
	return err
}

const (
	// maxEvictions bounds how often removeStoppedTasks removes the tasks'
	// members: one that keeps coming back belongs to a task still running,
	// and the commit then reports ErrGroupNotEmpty.
	maxEvictions = 3
	// settlePoll is how often the group is described while the rebalance
	// that follows the removal completes.
	settlePoll = 50 * time.Millisecond
)

// removeStoppedTasks removes from connector's consumer group the static
// members of its tasks (instance id "<connector>-<task>"), and waits until
// the group is empty. Sink tasks are static members and do not leave the
// group when they stop, so the group keeps them until their session times
// out, and Kafka refuses admin commits and deletions until then. Members
// that are not the connector's tasks are left alone: the commit then fails
// with ErrGroupNotEmpty, as Kafka Connect's does.
func (c *ConnectorOffsets) removeStoppedTasks(ctx context.Context, connector string) error {
	group := SinkGroup(connector)
	for evictions := 0; ; {
		described, err := c.adm.DescribeGroups(ctx, group)
		if err != nil {
			return fmt.Errorf("describing consumer group %s: %w", group, err)
		}
		g, ok := described[group]
		if !ok || errors.Is(g.Err, kerr.GroupIDNotFound) {
			return nil
		}
		if g.Err != nil {
			return fmt.Errorf("describing consumer group %s: %w", group, g.Err)
		}
		if g.State == "Empty" || g.State == "Dead" {
			return nil
		}
		var ours []string
		for _, m := range g.Members {
			if m.InstanceID != nil && isTaskInstance(connector, *m.InstanceID) {
				ours = append(ours, *m.InstanceID)
			}
		}
		switch {
		case len(ours) == 0 && len(g.Members) > 0:
			return nil // others' members: the commit reports them
		case len(ours) > 0 && evictions >= maxEvictions:
			return nil // a task keeps rejoining: the commit reports it
		case len(ours) > 0:
			evictions++
			resps, err := c.adm.LeaveGroup(ctx, kadm.LeaveGroup(group).InstanceIDs(ours...).
				Reason("sluice: removing the stopped tasks of connector "+connector+" to modify its offsets"))
			if err != nil {
				return fmt.Errorf("removing the stopped tasks %v from consumer group %s: %w", ours, group, err)
			}
			var lerr error
			resps.EachError(func(l kadm.LeaveGroupResponse) {
				// Gone already (its session ended meanwhile).
				if lerr == nil && !errors.Is(l.Err, kerr.UnknownMemberID) {
					lerr = fmt.Errorf("removing stopped task %s from consumer group %s: %w", l.InstanceID, group, l.Err)
				}
			})
			if lerr != nil {
				return lerr
			}
		}
		// No members left, but the rebalance their departure started has
		// not completed: Kafka refuses admin commits until the group is
		// Empty.
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for consumer group %s to become empty (state %s): %w", group, g.State, ctx.Err())
		case <-time.After(settlePoll):
		}
	}
}

// isTaskInstance reports whether id is the group instance id of one of
// connector's sink tasks: "<connector>-<task number>".
func isTaskInstance(connector, id string) bool {
	n, ok := strings.CutPrefix(id, connector+"-")
	if !ok || n == "" {
		return false
	}
	for _, r := range n {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// SinkOffsets lists the committed offsets of connector's consumer group,
// sorted by topic and partition; a group that does not exist has none.
func (c *ConnectorOffsets) SinkOffsets(ctx context.Context, connector string) ([]SinkOffset, error) {
	var out []SinkOffset
	err := whileCoordinatorMoves(ctx, func() (err error) {
		out, err = c.sinkOffsets(ctx, connector)
		return err
	})
	return out, err
}

// AlterSinkOffsets commits offs to connector's consumer group (see
// alterSinkOffsets), retrying while the group's coordinator moves.
func (c *ConnectorOffsets) AlterSinkOffsets(ctx context.Context, connector string, offs []SinkOffset) error {
	return whileCoordinatorMoves(ctx, func() error { return c.alterSinkOffsets(ctx, connector, offs) })
}

// ResetSinkOffsets deletes connector's consumer group (see
// resetSinkOffsets), retrying while the group's coordinator moves.
func (c *ConnectorOffsets) ResetSinkOffsets(ctx context.Context, connector string) error {
	return whileCoordinatorMoves(ctx, func() error { return c.resetSinkOffsets(ctx, connector) })
}

// whileCoordinatorMoves runs f again, with a growing pause, while Kafka
// answers that the group's coordinator is not ready (a fresh broker
// loading __consumer_offsets, a coordinator moving): these pass by
// themselves, and every sink offsets operation is idempotent.
func whileCoordinatorMoves(ctx context.Context, f func() error) error {
	delay := 50 * time.Millisecond
	for {
		err := f()
		if err == nil || !(errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator)) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}
