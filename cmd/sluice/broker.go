package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"path/filepath"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const brokerHelp = `
sluice broker runs the embedded Kafka-compatible broker (franz-go's kfake) alone,
so that several 'sluice worker' processes can share it on one machine. Topics,
records and consumer group offsets persist under --data-dir.

Example:
  sluice broker --addr 127.0.0.1:9092 --data-dir ./sluice-data
  sluice worker --cluster demo --bootstrap 127.0.0.1:9092 --rest-addr :8083 --worker-id w1
` + brokerSecurityHelp

func runBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("broker", brokerHelp, stderr)
	addr := fs.String("addr", "127.0.0.1:9092", "host:port the broker listens on")
	dataDir := fs.String("data-dir", "./sluice-data", "directory where the broker persists its data")
	var sec brokerSecurityFlags
	sec.register(fs)
	var lf logFlags
	lf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	secOpts, err := sec.kfakeOpts()
	if err != nil {
		return err
	}
	b, err := startBroker(*addr, filepath.Join(*dataDir, "kafka"), log, secOpts...)
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintf(stdout, "sluice broker listening on %s%s, data in %s (Ctrl-C stops it)\n", b.ListenAddrs()[0], sec.describe(), *dataDir)
	<-ctx.Done()
	log.Info().Msg("stopping broker")
	return nil
}

// startBroker starts kfake on addr, persisting to dir, with topic
// auto-creation on as most Kafka installations have it, and extra (the
// security flags' options).
func startBroker(addr, dir string, log zerolog.Logger, extra ...kfake.Opt) (*kfake.Cluster, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, usageError{fmt.Errorf("--addr %q: %v", addr, err)}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("broker cannot listen on %s: %w (is another broker running? pick another address)", addr, err)
	}
	used := false
	c, err := kfake.NewCluster(append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			// The first listener is the one bound above, so the address
			// error surfaces before kfake starts.
			if !used {
				used = true
				return ln, nil
			}
			return net.Listen(network, addr)
		}),
		kfake.DataDir(dir),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(1),
		kfake.WithLogger(kfakeLogger{log.With().Str("component", "broker").Logger()}),
	}, extra...)...)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	askNoTelemetry(c)
	return c, nil
}

// askNoTelemetry makes the broker answer GetTelemetrySubscriptions (KIP-714)
// as an Apache Kafka broker with no client-metrics subscription does, its
// default: no metrics requested, ask again in 5 minutes. kfake asks every
// client for all its metrics every 30 s and discards them; each push cost
// every client of a worker CPU and a burst of compression buffers.
func askNoTelemetry(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.GetTelemetrySubscriptions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		greq := req.(*kmsg.GetTelemetrySubscriptionsRequest)
		resp := greq.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
		resp.ClientInstanceID = greq.ClientInstanceID
		if resp.ClientInstanceID == [16]byte{} {
			// The broker assigns a client its id, as Kafka does.
			_, _ = rand.Read(resp.ClientInstanceID[:])
		}
		resp.PushIntervalMillis = 5 * 60 * 1000 // Kafka's interval.ms default
		return resp, nil, true
	})
}

// kfakeLogger forwards kfake's warnings and errors to zerolog.
type kfakeLogger struct{ log zerolog.Logger }

func (l kfakeLogger) Logf(level kfake.LogLevel, msg string, args ...any) {
	switch level {
	case kfake.LogLevelError:
		l.log.Error().Msgf(msg, args...)
	case kfake.LogLevelWarn:
		l.log.Warn().Msgf(msg, args...)
	}
}

func splitPort(addr string) (string, string, error) { return net.SplitHostPort(addr) }
