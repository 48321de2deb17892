// Package kafkatest starts, for tests and benchmarks, what a worker's state
// lives on: a broker, the internal topics, and the real config, status and
// offset stores, read to their end.
//
// The broker is an embedded kfake cluster on loopback, unless the
// environment names a real one in SLUICE_TEST_BOOTSTRAP (for example an
// Apache Kafka started by test/kafka/kafka.sh): then every Start uses that
// broker, under topic names no other Start, test run or package shares.
package kafkatest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/topics"
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

// Env is a broker with a worker's stores on it. Everything closes in
// tb.Cleanup; a runtime built on it should stop in a cleanup registered
// later, so that it stops first.
type Env struct {
	// Broker is the embedded broker, nil on a real one (SLUICE_TEST_BOOTSTRAP).
	Broker *kfake.Cluster
	// Prefix is what the internal topics are named after: the prefix given
	// to Start, made unique on a real broker.
	Prefix   string
	Opts     []kgo.Opt // seed brokers
	Client   *kgo.Client
	Admin    *kadm.Client
	Configs  *state.ConfigLog
	Statuses *state.StatusLog
	Offsets  *offsets.SourceStore
	// Producer is built with producerOpts, e.g. actors.ProducerOpts().
	Producer *kgo.Client
	Log      zerolog.Logger
}

// Topic names a data topic of this Env: name itself on an embedded broker,
// which the Env has to itself, and name made unique on a real one.
func (e *Env) Topic(name string) string {
	if e.Broker != nil {
		return name
	}
	return name + "-" + e.Prefix
}

// Start creates the topics <prefix>-configs, -offsets and -status and
// starts the stores on them, on the broker SLUICE_TEST_BOOTSTRAP names or
// else on a new embedded one. Logs go to stderr at warn, at info with -v.
func Start(tb testing.TB, prefix string, producerOpts ...kgo.Opt) *Env {
	tb.Helper()
	if seeds := Bootstrap(); len(seeds) > 0 {
		return start(tb, nil, seeds, Unique(prefix), producerOpts)
	}
	return StartFake(tb, prefix, producerOpts...)
}

// StartFake is Start on a new embedded kfake broker even when
// SLUICE_TEST_BOOTSTRAP is set, for tests that need what only kfake offers
// (Broker.ControlKey to inject failures).
func StartFake(tb testing.TB, prefix string, producerOpts ...kgo.Opt) *Env {
	tb.Helper()
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(broker.Close)
	return start(tb, broker, broker.ListenAddrs(), prefix, producerOpts)
}

func start(tb testing.TB, broker *kfake.Cluster, seeds []string, prefix string, producerOpts []kgo.Opt) *Env {
	tb.Helper()
	level := zerolog.WarnLevel
	if testing.Verbose() {
		level = zerolog.InfoLevel
	}
	e := &Env{
		Broker: broker,
		Prefix: prefix,
		Opts:   []kgo.Opt{kgo.SeedBrokers(seeds...)},
		Log: zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000"}).
			Level(level).With().Timestamp().Logger(),
	}
	var err error
	if e.Client, err = kgo.NewClient(e.Opts...); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Client.Close)
	e.Admin = kadm.NewClient(e.Client)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := topics.EnsureTopics(ctx, e.Admin,
		topics.TopicSpec{Name: prefix + "-configs", Partitions: 1, ReplicationFactor: -1, Compact: true},
		topics.TopicSpec{Name: prefix + "-offsets", Partitions: 25, ReplicationFactor: -1, Compact: true},
		topics.TopicSpec{Name: prefix + "-status", Partitions: 5, ReplicationFactor: -1, Compact: true},
	); err != nil {
		tb.Fatal(err)
	}
	if e.Configs, err = state.NewConfigLog(e.Opts, prefix+"-configs", e.Log); err != nil {
		tb.Fatal(err)
	}
	if e.Statuses, err = state.NewStatusLog(e.Opts, prefix+"-status", e.Log); err != nil {
		tb.Fatal(err)
	}
	if e.Offsets, err = offsets.NewSourceStore(e.Opts, prefix+"-offsets"); err != nil {
		tb.Fatal(err)
	}
	for _, s := range []interface{ Start(context.Context) error }{e.Configs, e.Statuses, e.Offsets} {
		if err := s.Start(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(e.Configs.Close)
	tb.Cleanup(e.Statuses.Close)
	tb.Cleanup(e.Offsets.Close)
	if e.Producer, err = kgo.NewClient(append(append([]kgo.Opt{}, e.Opts...), producerOpts...)...); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Producer.Close)
	return e
}

// StoppedSinkTask consumes records records of topic as sink task 0 of
// connector does (a static member of connect-<connector>), commits what it
// read, and closes without leaving the group, as a stopped sink task does:
// the group keeps the member until its session times out.
func (e *Env) StoppedSinkTask(tb testing.TB, connector, topic string, records int) {
	tb.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.Opts...),
		kgo.ConsumerGroup(offsets.SinkGroup(connector)),
		kgo.InstanceID(connector+"-0"),
		kgo.SessionTimeout(45*time.Second),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)...)
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for n := 0; n < records; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			tb.Fatalf("consumed %d of %d records: %v", n, records, err)
		}
		n += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		tb.Fatal(err)
	}
}
