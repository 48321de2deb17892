// Package storetest starts, for tests and benchmarks, what a worker's state
// lives on: the internal topics on a test broker (internal/kafkatest's:
// embedded kfake, or the real one SLUICE_TEST_BOOTSTRAP names, under topic
// names no other Start, test run or package shares) and the real config,
// status and offset stores, read to their end.
package storetest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/topics"
)

// Env is a broker with a worker's stores on it. Everything closes in
// tb.Cleanup; a runtime built on it should stop in a cleanup registered
// later (Drive does), so that it stops first.
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
	if seeds := kafkatest.Bootstrap(); len(seeds) > 0 {
		return start(tb, nil, []kgo.Opt{kgo.SeedBrokers(seeds...)}, kafkatest.Unique(prefix), producerOpts)
	}
	return StartFake(tb, prefix, producerOpts...)
}

// StartFake is Start on a new embedded kfake broker even when
// SLUICE_TEST_BOOTSTRAP is set, for tests that need what only kfake offers
// (Broker.ControlKey to inject failures).
func StartFake(tb testing.TB, prefix string, producerOpts ...kgo.Opt) *Env {
	tb.Helper()
	broker, opts := kafkatest.NewCluster(tb, kfake.AllowAutoTopicCreation())
	return start(tb, broker, opts, prefix, producerOpts)
}

func start(tb testing.TB, broker *kfake.Cluster, opts []kgo.Opt, prefix string, producerOpts []kgo.Opt) *Env {
	tb.Helper()
	level := zerolog.WarnLevel
	if testing.Verbose() {
		level = zerolog.InfoLevel
	}
	e := &Env{
		Broker: broker,
		Prefix: prefix,
		Opts:   opts,
		Log: zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000"}).
			Level(level).With().Timestamp().Logger(),
	}
	e.Client = kafkatest.NewClient(tb, e.Opts)
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
	var err error
	e.Configs, err = state.NewConfigLog(e.Opts, prefix+"-configs", e.Log)
	kafkatest.StartStore(tb, ctx, e.Configs, err)
	e.Statuses, err = state.NewStatusLog(e.Opts, prefix+"-status", e.Log)
	kafkatest.StartStore(tb, ctx, e.Statuses, err)
	e.Offsets, err = offsets.NewSourceStore(e.Opts, prefix+"-offsets")
	kafkatest.StartStore(tb, ctx, e.Offsets, err)
	e.Producer = kafkatest.NewClient(tb, e.Opts, producerOpts...)
	return e
}

// Drive runs follow (a runtime following the config topic as the one
// member of a cluster, as actors.Runtime.FollowAlone does) until the test
// ends. Then it cancels follow's context, waits for it to return, stops
// the runtime with stop within stopTimeout, failing the test if that
// fails, and flushes the statuses the stopping tasks wrote before the
// status log closes, as cluster/worker's Stop does; a failed flush fails
// the test only when strictFlush.
func (e *Env) Drive(tb testing.TB, follow func(context.Context), stop func(context.Context) error, stopTimeout time.Duration, strictFlush bool) context.CancelFunc {
	tb.Helper()
	fctx, fcancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		follow(fctx)
	}()
	tb.Cleanup(func() {
		fcancel()
		<-done
		sctx, scancel := context.WithTimeout(context.Background(), stopTimeout)
		defer scancel()
		if err := stop(sctx); err != nil {
			tb.Errorf("runtime stop: %v", err)
		}
		if err := e.Statuses.Flush(sctx); err != nil && strictFlush {
			tb.Errorf("status flush: %v", err)
		}
	})
	return fcancel
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
