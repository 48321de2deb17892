package benchproc

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka is the one Apache Kafka node a harness runs both systems on,
// started with the integration suite's script (test/kafka/kafka.sh), with a
// client of the harness's own for creating and counting topics.
type Kafka struct {
	Repo, Dir, Bootstrap string
	Client               *kgo.Client
	Admin                *kadm.Client
}

// OpenKafka starts the node in dir (StartKafka) and connects to it.
func OpenKafka(ctx context.Context, repo, dir string, props ...string) (*Kafka, error) {
	bootstrap, err := StartKafka(ctx, repo, dir, props...)
	if err != nil {
		return nil, err
	}
	k := &Kafka{Repo: repo, Dir: dir, Bootstrap: bootstrap}
	if k.Client, err = kgo.NewClient(kgo.SeedBrokers(bootstrap)); err != nil {
		k.Stop()
		return nil, err
	}
	k.Admin = kadm.NewClient(k.Client)
	return k, nil
}

// Stop closes the client and stops the node.
func (k *Kafka) Stop() {
	if k.Client != nil {
		k.Client.Close()
	}
	StopKafka(k.Repo, k.Dir)
}

// CreateTopic creates a topic with the given partitions, replication 1.
func (k *Kafka) CreateTopic(ctx context.Context, topic string, partitions int32) error {
	resp, err := k.Admin.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}
