package topics

import (
	"errors"
	"testing"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/twmb/franz-go/pkg/kadm"
)

func cleanupPolicy(t *testing.T, adm *kadm.Client, topic string) string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" {
			return c.MaybeValue()
		}
	}
	return ""
}

func TestEnsureTopicsCreates(t *testing.T) {
	_, opts := kafkatest.NewCluster(t)
	adm := kafkatest.NewAdmin(t, opts)
	specs := []TopicSpec{
		{Name: "c-configs", Partitions: 1, ReplicationFactor: -1, Compact: true},
		{Name: "c-offsets", Partitions: 25, ReplicationFactor: 1, Compact: true},
		{Name: "c-status", Partitions: 5, ReplicationFactor: -1, Compact: true},
		{Name: "c-plain", Partitions: 2, ReplicationFactor: -1},
	}
	if err := EnsureTopics(testCtx(t), adm, specs...); err != nil {
		t.Fatal(err)
	}
	// A fresh client: adm's metadata cache remembers the topics as missing.
	details, err := kafkatest.NewAdmin(t, opts).ListTopics(testCtx(t), "c-configs", "c-offsets", "c-status", "c-plain")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		d := details[s.Name]
		if d.Err != nil || int32(len(d.Partitions)) != s.Partitions {
			t.Errorf("%s: %d partitions (err %v), want %d", s.Name, len(d.Partitions), d.Err, s.Partitions)
		}
		want := "delete"
		if s.Compact {
			want = "compact"
		}
		if got := cleanupPolicy(t, adm, s.Name); got != want {
			t.Errorf("%s: cleanup.policy %q, want %q", s.Name, got, want)
		}
	}
	// A second worker starting later finds them and accepts them.
	if err := EnsureTopics(testCtx(t), adm, specs...); err != nil {
		t.Fatalf("second run: %v", err)
	}
}

func TestEnsureTopicsRefusesWrongExisting(t *testing.T) {
	_, opts := kafkatest.NewCluster(t)
	adm := kafkatest.NewAdmin(t, opts)
	kafkatest.CreateTopic(t, opts, "x-configs", 3, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	kafkatest.CreateTopic(t, opts, "x-status", 5, map[string]*string{"cleanup.policy": kadm.StringPtr("delete")})
	kafkatest.CreateTopic(t, opts, "x-offsets", 10, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	kafkatest.CreateTopic(t, opts, "x-mixed", 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact,delete")})

	err := EnsureTopics(testCtx(t), adm, TopicSpec{Name: "x-configs", Partitions: 1, ReplicationFactor: -1, Compact: true})
	var te *TopicError
	if !errors.As(err, &te) || te.Topic != "x-configs" || !errors.Is(err, ErrPartitionCount) {
		t.Fatalf("config topic with 3 partitions: got %v, want a TopicError naming x-configs and ErrPartitionCount", err)
	}

	err = EnsureTopics(testCtx(t), adm, TopicSpec{Name: "x-status", Partitions: 5, ReplicationFactor: -1, Compact: true})
	if !errors.As(err, &te) || te.Topic != "x-status" || !errors.Is(err, ErrCleanupPolicy) {
		t.Fatalf("delete policy: got %v, want ErrCleanupPolicy for x-status", err)
	}

	err = EnsureTopics(testCtx(t), adm, TopicSpec{Name: "x-mixed", Partitions: 1, ReplicationFactor: -1, Compact: true})
	if !errors.Is(err, ErrCleanupPolicy) {
		t.Fatalf("compact,delete policy: got %v, want ErrCleanupPolicy", err)
	}

	// Only a one-partition spec insists on its count: an offsets topic
	// made with fewer partitions than the default still works.
	if err := EnsureTopics(testCtx(t), adm, TopicSpec{Name: "x-offsets", Partitions: 25, ReplicationFactor: -1, Compact: true}); err != nil {
		t.Fatalf("offsets topic with 10 partitions: %v", err)
	}

	err = EnsureTopics(testCtx(t), adm, TopicSpec{Name: "x-new", Partitions: 1, ReplicationFactor: 3, Compact: true})
	if !errors.As(err, &te) || te.Topic != "x-new" || !errors.Is(err, ErrReplicationFactor) {
		t.Fatalf("replication factor 3 on 1 broker: got %v, want ErrReplicationFactor for x-new", err)
	}
	if d, _ := kafkatest.NewAdmin(t, opts).ListTopics(testCtx(t), "x-new"); d["x-new"].Err == nil {
		t.Fatal("x-new was created despite the refused replication factor")
	}
}
