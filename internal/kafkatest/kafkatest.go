// Package kafkatest starts, for tests and benchmarks, what a worker's state
// lives on: an embedded broker (kfake, on loopback), the internal topics, and
// the real config, status and offset stores, read to their end.
package kafkatest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/cluster/state"
	"github.com/sluice-io/sluice/offsets"
)

// Env is a broker with a worker's stores on it. Everything closes in
// tb.Cleanup; a runtime built on it should stop in a cleanup registered
// later, so that it stops first.
type Env struct {
	Broker   *kfake.Cluster
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

// Start creates the topics <prefix>-configs, -offsets and -status and
// starts the stores on them. Logs go to stderr at warn, at info with -v.
func Start(tb testing.TB, prefix string, producerOpts ...kgo.Opt) *Env {
	tb.Helper()
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(broker.Close)
	level := zerolog.WarnLevel
	if testing.Verbose() {
		level = zerolog.InfoLevel
	}
	e := &Env{
		Broker: broker,
		Opts:   []kgo.Opt{kgo.SeedBrokers(broker.ListenAddrs()...)},
		Log: zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000"}).
			Level(level).With().Timestamp().Logger(),
	}
	if e.Client, err = kgo.NewClient(e.Opts...); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Client.Close)
	e.Admin = kadm.NewClient(e.Client)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := offsets.EnsureTopics(ctx, e.Admin,
		offsets.TopicSpec{Name: prefix + "-configs", Partitions: 1, ReplicationFactor: -1, Compact: true},
		offsets.TopicSpec{Name: prefix + "-offsets", Partitions: 25, ReplicationFactor: -1, Compact: true},
		offsets.TopicSpec{Name: prefix + "-status", Partitions: 5, ReplicationFactor: -1, Compact: true},
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
