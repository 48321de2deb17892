package state

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/testutil"
	"github.com/sluice-io/sluice/internal/topics"
)

const (
	configTopic = "c-configs"
	statusTopic = "c-status"
)

func testCtx(t *testing.T) context.Context { return testutil.Context(t, 20*time.Second) }

// newCluster starts a broker with the config and status topics, created by
// the code that creates them for a worker.
func newCluster(t *testing.T) []kgo.Opt {
	t.Helper()
	_, opts := kafkatest.NewCluster(t)
	err := topics.EnsureTopics(testCtx(t), kafkatest.NewAdmin(t, opts),
		topics.TopicSpec{Name: configTopic, Partitions: 1, ReplicationFactor: -1, Compact: true},
		topics.TopicSpec{Name: statusTopic, Partitions: 5, ReplicationFactor: -1, Compact: true},
	)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// startConfigLog starts a config log, read to its end, that closes with
// the test; likewise startStatusLog.
func startConfigLog(t *testing.T, opts []kgo.Opt, log zerolog.Logger) *ConfigLog {
	t.Helper()
	c, err := NewConfigLog(opts, configTopic, log)
	kafkatest.StartStore(t, testCtx(t), c, err)
	return c
}

func startStatusLog(t *testing.T, opts []kgo.Opt, log zerolog.Logger) *StatusLog {
	t.Helper()
	s, err := NewStatusLog(opts, statusTopic, log)
	kafkatest.StartStore(t, testCtx(t), s, err)
	return s
}

// twoStatusLogs starts the status logs of two workers.
func twoStatusLogs(t *testing.T, opts []kgo.Opt) (*StatusLog, *StatusLog) {
	t.Helper()
	return startStatusLog(t, opts, zerolog.Nop()), startStatusLog(t, opts, zerolog.Nop())
}
