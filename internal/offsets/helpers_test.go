package offsets

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newCluster(t *testing.T, opts ...kfake.Opt) (*kfake.Cluster, []kgo.Opt) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newAdmin(t *testing.T, opts []kgo.Opt) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func newProducer(t *testing.T, opts []kgo.Opt, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func makeTopic(t *testing.T, opts []kgo.Opt, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	if _, err := newAdmin(t, opts).CreateTopic(testCtx(t), partitions, -1, configs, topic); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

func produce(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// zerologTo logs into b; the tailer goroutine writes while the test reads
// only after Start, which the tailer's progress channel orders.
func zerologTo(b *strings.Builder) zerolog.Logger {
	return zerolog.New(zerolog.SyncWriter(b))
}
