// Package kafkatest gives tests and benchmarks a Kafka broker and clients
// of it: an embedded kfake cluster on loopback, the real broker the
// environment names in SLUICE_TEST_BOOTSTRAP (for example an Apache Kafka
// started by test/kafka/kafka.sh), names that no other run shares on such
// a broker, and clients, topics and records that close with the test and
// fail it on error. NewSecure is the same for a broker that requires SASL
// and TLS, with test certificates from GenerateTLS and the Connect keys
// that reach it.
//
// It imports no package of this module, so that the tests of every
// package, those of internal/state, internal/offsets and internal/topics
// included, can use it. A worker's stores on a broker are
// internal/storetest's job.
package kafkatest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BootstrapEnv names the environment variable that points the suite at a
// real broker: comma-separated host:port seeds.
const BootstrapEnv = "SLUICE_TEST_BOOTSTRAP"

// Bootstrap returns the seed brokers of the real broker the suite runs
// against, or nil when it runs on embedded kfake brokers.
func Bootstrap() []string {
	var seeds []string
	for _, s := range strings.Split(os.Getenv(BootstrapEnv), ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

// External reports whether SLUICE_TEST_BOOTSTRAP names a real broker.
func External() bool { return len(Bootstrap()) > 0 }

var (
	runID   = fmt.Sprintf("%x%04x", time.Now().UnixNano()&0xffffffff, os.Getpid()&0xffff)
	nameSeq atomic.Int64
)

// Unique returns name made unique for this process and call:
// name-<run>-<n>. Cluster, connector topic and group names on a shared
// broker go through it so that tests, packages run in parallel and earlier
// runs against the same broker never see each other's data.
func Unique(name string) string {
	return fmt.Sprintf("%s-%s-%d", name, runID, nameSeq.Add(1))
}

// opTimeout bounds one admin or produce call of the helpers below.
const opTimeout = 20 * time.Second

// NewCluster starts an embedded one-broker kfake cluster with opts, closed
// when the test ends, and returns it with the client options that seed it.
func NewCluster(tb testing.TB, opts ...kfake.Opt) (*kfake.Cluster, []kgo.Opt) {
	tb.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
}

// NewClient is a client with opts and then extra, closed when the test
// ends.
func NewClient(tb testing.TB, opts []kgo.Opt, extra ...kgo.Opt) *kgo.Client {
	tb.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), opts...), extra...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	return cl
}

// NewAdmin is an admin client on a NewClient.
func NewAdmin(tb testing.TB, opts []kgo.Opt) *kadm.Client {
	tb.Helper()
	return kadm.NewClient(NewClient(tb, opts))
}

// CreateTopic creates topic with partitions partitions, the broker's
// replication factor and configs.
func CreateTopic(tb testing.TB, opts []kgo.Opt, topic string, partitions int32, configs map[string]*string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := NewAdmin(tb, opts).CreateTopic(ctx, partitions, -1, configs, topic); err != nil {
		tb.Fatalf("creating %s: %v", topic, err)
	}
}

// Produce writes recs with cl and waits for every ack.
func Produce(tb testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		tb.Fatal(err)
	}
}

// Store is what reads a topic to its end on Start and stops reading on
// Close: the config, status and offset stores, the tailer.
type Store interface {
	Start(context.Context) error
	Close()
}

// StartStore takes what a store's constructor returns: it fails the test
// on err, closes s when the test ends and starts s within ctx.
func StartStore(tb testing.TB, ctx context.Context, s Store, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	if err := s.Start(ctx); err != nil {
		tb.Fatal(err)
	}
}

// StartWithin starts s with a deadline d away and returns Start's error,
// failing the test if Start did not return within a few seconds of the
// deadline: a store pointed at an unreachable broker must give up in
// time.
func StartWithin(tb testing.TB, s Store, d time.Duration) error {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	err := s.Start(ctx)
	if took := time.Since(start); took > 3*time.Second {
		tb.Fatalf("Start took %v with a %v deadline", took, d)
	}
	return err
}

// ConsumeUntilIdle polls cl, calling each for every record, until idle
// polls in a row, each waiting up to a second, bring no record, or until
// deadline passes (the zero time: no deadline).
func ConsumeUntilIdle(cl *kgo.Client, idle int, deadline time.Time, each func(*kgo.Record)) {
	for quiet := 0; quiet < idle && (deadline.IsZero() || time.Now().Before(deadline)); {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if fs.NumRecords() == 0 {
			quiet++
			continue
		}
		quiet = 0
		fs.EachRecord(each)
	}
}

// ConsumeTo polls cl, a consumer of a topic from its start, until every
// partition of end has been read up to its end offset, and calls each for
// every record below that offset. Fetch errors go to onErr, if not nil,
// and polling goes on. If ctx ends first, ConsumeTo returns ctx's error
// with the offsets it reached.
func ConsumeTo(ctx context.Context, cl *kgo.Client, end map[int32]int64, each func(*kgo.Record), onErr func(topic string, partition int32, err error)) (map[int32]int64, error) {
	next := map[int32]int64{}
	done := func() bool {
		for p, e := range end {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return next, err
		}
		if onErr != nil {
			fs.EachError(onErr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end[r.Partition] {
				each(r)
			}
			next[r.Partition] = r.Offset + 1
		})
	}
	return next, nil
}

// WaitUp pings the broker at addr every 100 ms until it answers, and
// returns the last error if it does not within timeout. Before each retry
// it calls alive, which should end the test if the broker's process died.
func WaitUp(addr string, timeout time.Duration, alive func()) error {
	deadline := time.Now().Add(timeout)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err = cl.Ping(ctx)
			cancel()
			cl.Close()
		}
		if err == nil {
			return nil
		}
		alive()
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// NewConsumer is a NewClient that consumes topics from their start.
func NewConsumer(tb testing.TB, opts []kgo.Opt, topics []string, extra ...kgo.Opt) *kgo.Client {
	tb.Helper()
	return NewClient(tb, opts, append([]kgo.Opt{kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, extra...)...)
}
