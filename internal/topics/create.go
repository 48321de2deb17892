// Package topics holds what every Kafka-backed store of Sluice shares:
// creating and checking the internal topics (EnsureTopics), and a Tailer that
// reads a compacted topic from its start into memory and can wait until it
// has read to the end, which is how a worker reads its own writes back.
package topics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicSpec describes an internal topic.
type TopicSpec struct {
	Name string
	// Partitions of a topic to create; -1 means the broker default. A spec
	// with exactly 1 partition also demands that an existing topic has
	// exactly one, because the config topic relies on a total order.
	Partitions int32
	// ReplicationFactor of a topic to create; -1 means the broker default.
	ReplicationFactor int16
	// Compact creates the topic with cleanup.policy=compact and refuses an
	// existing topic whose policy is anything else.
	Compact bool
}

// Reasons a TopicError carries; match them with errors.Is.
var (
	// ErrPartitionCount: an existing topic has a partition count the spec
	// cannot accept.
	ErrPartitionCount = errors.New("wrong partition count")
	// ErrCleanupPolicy: an existing topic that must be compacted is not.
	ErrCleanupPolicy = errors.New("cleanup.policy must be exactly compact")
	// ErrReplicationFactor: the replication factor asked for exceeds the
	// number of brokers, so the topic cannot be created.
	ErrReplicationFactor = errors.New("replication factor larger than the number of brokers")
)

// TopicError says which internal topic is wrong and why. The caller knows
// which setting named the topic (config.storage.topic,
// config.storage.replication.factor, ...) and adds that to its message.
type TopicError struct {
	Topic  string
	Reason error  // one of the Err* values above
	Detail string // what was found, e.g. "has 3 partitions, want 1"
}

func (e *TopicError) Error() string {
	return fmt.Sprintf("topic %q: %v: %s", e.Topic, e.Reason, e.Detail)
}

func (e *TopicError) Unwrap() error { return e.Reason }

// EnsureTopics creates the missing topics of specs and checks the existing
// ones. Two workers may run it at once: a topic that appears between the
// listing and the creation is checked like any existing topic.
func EnsureTopics(ctx context.Context, adm *kadm.Client, specs ...TopicSpec) error {
	if len(specs) == 0 {
		return nil
	}
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		names = append(names, s.Name)
	}
	// kadm answers metadata from a cache that also remembers missing
	// topics for a few seconds; asking for authorized operations is its
	// documented way to bypass that cache, which a check right after a
	// creation needs.
	fresh := kadm.WithAuthorizedOps(ctx)
	details, err := adm.ListTopics(fresh, names...)
	if err != nil {
		return fmt.Errorf("listing internal topics %v: %w", names, err)
	}
	var brokers int
	for _, s := range specs {
		d, ok := details[s.Name]
		exists := ok && d.Err == nil
		if ok && d.Err != nil && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("describing topic %q: %w", s.Name, d.Err)
		}
		if !exists {
			if s.ReplicationFactor > 0 && brokers == 0 {
				meta, err := adm.BrokerMetadata(ctx)
				if err != nil {
					return fmt.Errorf("listing brokers: %w", err)
				}
				brokers = len(meta.Brokers)
			}
			created, err := createTopic(ctx, adm, s, brokers)
			if err != nil {
				return err
			}
			if created {
				continue
			}
			// Someone else created it meanwhile: check theirs.
			if d, err = describeCreated(fresh, adm, s.Name); err != nil {
				return err
			}
		}
		if err := checkTopic(ctx, adm, s, d); err != nil {
			return err
		}
	}
	return nil
}

// describeCreated describes a topic another worker just created. Apache
// Kafka answers UNKNOWN_TOPIC_OR_PARTITION until the creation reached the
// broker's metadata (kfake never does), so that answer is retried until ctx
// ends.
func describeCreated(ctx context.Context, adm *kadm.Client, name string) (kadm.TopicDetail, error) {
	delay := 50 * time.Millisecond
	for {
		details, err := adm.ListTopics(ctx, name)
		if err != nil {
			return kadm.TopicDetail{}, fmt.Errorf("describing topic %q: %w", name, err)
		}
		d := details[name]
		if d.Err == nil {
			return d, nil
		}
		if !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return d, fmt.Errorf("describing topic %q: %w", name, d.Err)
		}
		select {
		case <-ctx.Done():
			return d, fmt.Errorf("describing topic %q: %w (it was created by another worker but never became visible)", name, d.Err)
		case <-time.After(delay):
		}
		if delay *= 2; delay > time.Second {
			delay = time.Second
		}
	}
}

// createTopic reports false without error when the topic already exists.
func createTopic(ctx context.Context, adm *kadm.Client, s TopicSpec, brokers int) (bool, error) {
	if s.ReplicationFactor > 0 && brokers > 0 && int(s.ReplicationFactor) > brokers {
		return false, &TopicError{Topic: s.Name, Reason: ErrReplicationFactor,
			Detail: fmt.Sprintf("asked for %d, the cluster has %d broker(s)", s.ReplicationFactor, brokers)}
	}
	var configs map[string]*string
	if s.Compact {
		configs = map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	}
	partitions := s.Partitions
	if partitions == 0 {
		partitions = -1
	}
	resp, err := adm.CreateTopic(ctx, partitions, s.ReplicationFactor, configs, s.Name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, nil
	case errors.Is(err, kerr.InvalidReplicationFactor):
		return false, &TopicError{Topic: s.Name, Reason: ErrReplicationFactor,
			Detail: fmt.Sprintf("asked for %d, the broker refused: %s", s.ReplicationFactor, resp.ErrMessage)}
	default:
		if resp.ErrMessage != "" {
			return false, fmt.Errorf("creating topic %q: %w (%s)", s.Name, err, resp.ErrMessage)
		}
		return false, fmt.Errorf("creating topic %q: %w", s.Name, err)
	}
}

func checkTopic(ctx context.Context, adm *kadm.Client, s TopicSpec, d kadm.TopicDetail) error {
	if s.Partitions == 1 && len(d.Partitions) != 1 {
		return &TopicError{Topic: s.Name, Reason: ErrPartitionCount,
			Detail: fmt.Sprintf("has %d partitions, want exactly 1", len(d.Partitions))}
	}
	if !s.Compact {
		return nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, s.Name)
	if err != nil {
		return fmt.Errorf("describing configs of topic %q: %w", s.Name, err)
	}
	rc, err := rcs.On(s.Name, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return fmt.Errorf("describing configs of topic %q: %w", s.Name, err)
	}
	policy := "delete" // Kafka's default when the topic does not set one
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.Value != nil && *c.Value != "" {
			policy = *c.Value
		}
	}
	// As Connect: "compact,delete" would let retention remove the only
	// copy of a config or offset, so only a pure compact policy passes.
	var parts []string
	for p := range strings.SplitSeq(policy, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	if len(parts) != 1 || parts[0] != "compact" {
		return &TopicError{Topic: s.Name, Reason: ErrCleanupPolicy,
			Detail: fmt.Sprintf("has cleanup.policy=%s", policy)}
	}
	return nil
}
