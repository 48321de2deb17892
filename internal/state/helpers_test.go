package state

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/topics"
)

const (
	configTopic = "c-configs"
	statusTopic = "c-status"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newCluster starts a broker with the config and status topics, created by
// the code that creates them for a worker.
func newCluster(t *testing.T) []kgo.Opt {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl := newClient(t, opts)
	err = topics.EnsureTopics(testCtx(t), kadm.NewClient(cl),
		topics.TopicSpec{Name: configTopic, Partitions: 1, ReplicationFactor: -1, Compact: true},
		topics.TopicSpec{Name: statusTopic, Partitions: 5, ReplicationFactor: -1, Compact: true},
	)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

func newClient(t *testing.T, opts []kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produce(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// logBuffer is a log destination the tailer goroutine writes to while the
// test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() zerolog.Logger { return zerolog.New(l) }
