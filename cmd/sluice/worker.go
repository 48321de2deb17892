package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/worker"
)

const workerHelp = `
sluice worker runs one worker of a Sluice cluster against any Kafka. Workers
started with the same --cluster name share the internal topics
<cluster>-configs, <cluster>-offsets and <cluster>-status, and serve Kafka
Connect's REST API on --rest-addr.

Example:
  sluice worker --cluster demo --bootstrap 127.0.0.1:9092 --rest-addr :8083 --worker-id w1

Worker-level settings are Kafka Connect's keys, given as --prop: converter
defaults, and config.storage.topic, offset.storage.topic, status.storage.topic,
offset.storage.partitions, status.storage.partitions,
*.storage.replication.factor and offset.flush.interval.ms (a flag given with a
non-default value wins over the key):
  --prop value.converter=org.apache.kafka.connect.storage.StringConverter
`

// workerFlags are the flags of 'worker' (and, partly, 'dev').
type workerFlags struct {
	cluster     string
	bootstrap   string
	restAddr    string
	workerID    string
	replication replicationFactor
	flushMs     int
	backoffMin  time.Duration
	backoffMax  time.Duration
	configTopic string
	offsetTopic string
	statusTopic string
	props       propsFlag
	bind        string
	advertise   string
	join        string
	session     time.Duration
	heartbeat   time.Duration
	probe       time.Duration
	probeWait   time.Duration
	suspicion   int
	// requestTimeout bounds a request's wait for the group (control.Router).
	requestTimeout time.Duration
	logFlags
}

// Defaults of the group timing flags.
const (
	defaultSession   = 10 * time.Second
	defaultHeartbeat = time.Second
)

func (f *workerFlags) register(fs *flag.FlagSet, dev bool) {
	if !dev {
		fs.StringVar(&f.cluster, "cluster", "", "cluster name: workers with the same name form one cluster (required)")
		fs.StringVar(&f.bootstrap, "bootstrap", "", "Kafka bootstrap servers, host:port[,host:port...] (required)")
		fs.StringVar(&f.restAddr, "rest-addr", ":8083", "host:port of the REST API")
	} else {
		fs.StringVar(&f.cluster, "cluster", "sluice", "cluster name: the prefix of the internal topics")
	}
	fs.StringVar(&f.workerID, "worker-id", "", "this worker's id (default: the REST address, as Kafka Connect)")
	f.replication = -1
	fs.Var(&f.replication, "replication-factor", "replication factor of the internal topics; -1 takes the broker's default")
	fs.IntVar(&f.flushMs, "offset-flush-interval-ms", 1000, "how often source offsets are flushed and sink offsets committed (offset.flush.interval.ms)")
	fs.DurationVar(&f.backoffMin, "restart-backoff-min", time.Second, "first wait before a failed connector or task restarts")
	fs.DurationVar(&f.backoffMax, "restart-backoff-max", time.Minute, "cap of the doubling wait between restarts")
	fs.StringVar(&f.configTopic, "config-topic", "", "config topic (config.storage.topic; default <cluster>-configs)")
	fs.StringVar(&f.offsetTopic, "offsets-topic", "", "offsets topic (offset.storage.topic; default <cluster>-offsets)")
	fs.StringVar(&f.statusTopic, "status-topic", "", "status topic (status.storage.topic; default <cluster>-status)")
	bind := "127.0.0.1:0"
	if dev {
		// A known port, so that the admin commands find the dev cluster
		// with their default --join.
		bind = "127.0.0.1:8084"
	}
	fs.StringVar(&f.bind, "bind", bind, "host:port where other workers and the admin commands (--join) reach this one (gossip); port 0 picks one. Use a non-loopback address when workers run on several machines")
	fs.StringVar(&f.advertise, "advertise", "", "host:port other workers should use for this one, when it differs from --bind (NAT, containers)")
	fs.StringVar(&f.join, "join", "", "other workers' --bind addresses, host:port[,host:port...] (optional: workers also find each other through the Kafka group)")
	fs.DurationVar(&f.session, "session-timeout", defaultSession, "Kafka group session timeout (session.timeout.ms): how long a silent worker keeps its work when gossip cannot tell it is dead")
	fs.DurationVar(&f.heartbeat, "heartbeat-interval", defaultHeartbeat, "Kafka group heartbeat interval (heartbeat.interval.ms)")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 90*time.Second, "how long a REST or admin request waits for this worker to join its group, or for a rebalance to name a leader, before it is answered 503 or 409 (Connect's REST request timeout)")
	fs.DurationVar(&f.probe, "probe-interval", 200*time.Millisecond, "gossip failure detection: how often each worker probes another (raise it on a slow or lossy network)")
	fs.DurationVar(&f.probeWait, "probe-timeout", 100*time.Millisecond, "gossip failure detection: how long a probe waits for its answer")
	fs.IntVar(&f.suspicion, "suspicion-mult", 2, "gossip failure detection: how many probe intervals a suspected worker has to refute before it is declared dead")
	fs.Var(&f.props, "prop", "a Kafka Connect worker key=value: converter defaults (value.converter=StringConverter, ...), *.storage.topic, *.storage.partitions, *.storage.replication.factor, offset.flush.interval.ms, session.timeout.ms, heartbeat.interval.ms, rebalance.timeout.ms, topic.tracking.*; any other key is refused (repeatable; SLUICE_PROP takes comma-separated pairs)")
	f.logFlags.register(fs)
}

func (f *workerFlags) config(log zerolog.Logger) (worker.Config, error) {
	if f.cluster == "" {
		return worker.Config{}, usageError{fmt.Errorf("--cluster is required")}
	}
	if strings.TrimSpace(f.bootstrap) == "" {
		return worker.Config{}, usageError{fmt.Errorf("--bootstrap is required")}
	}
	if f.flushMs <= 0 {
		return worker.Config{}, usageError{fmt.Errorf("--offset-flush-interval-ms must be positive")}
	}
	if f.backoffMin <= 0 || f.backoffMax < f.backoffMin {
		return worker.Config{}, usageError{fmt.Errorf("--restart-backoff-min must be positive and at most --restart-backoff-max")}
	}
	// The typed fields win over Connect's keys given with --prop, except
	// where the flag still has its default: then the --prop key applies.
	rf := int16(f.replication)
	if rf == -1 {
		rf = 0
	}
	flush := time.Duration(f.flushMs) * time.Millisecond
	if _, ok := f.props.m["offset.flush.interval.ms"]; ok && f.flushMs == 1000 {
		flush = 0
	}
	if f.probe <= 0 || f.probeWait <= 0 || f.probeWait >= f.probe || f.suspicion < 1 {
		return worker.Config{}, usageError{fmt.Errorf("--probe-timeout must be positive and below --probe-interval, and --suspicion-mult at least 1")}
	}
	if f.requestTimeout <= 0 {
		return worker.Config{}, usageError{fmt.Errorf("--request-timeout must be positive")}
	}
	if f.session <= 0 || f.heartbeat <= 0 || f.heartbeat >= f.session {
		return worker.Config{}, usageError{fmt.Errorf("--heartbeat-interval must be positive and below --session-timeout")}
	}
	// Connect's group timing keys given with --prop apply where the flag
	// keeps its default, as offset.flush.interval.ms does.
	session, heartbeat := f.session, f.heartbeat
	if _, ok := f.props.m["session.timeout.ms"]; ok && f.session == defaultSession {
		session = 0
	}
	if _, ok := f.props.m["heartbeat.interval.ms"]; ok && f.heartbeat == defaultHeartbeat {
		heartbeat = 0
	}
	boot := connectors.SplitList(f.bootstrap)
	return worker.Config{
		Cluster: f.cluster, WorkerID: f.workerID, Bootstrap: boot, RESTAddr: f.restAddr,
		ConfigTopic: f.configTopic, OffsetsTopic: f.offsetTopic, StatusTopic: f.statusTopic,
		ReplicationFactor:   rf,
		Props:               f.props.m,
		OffsetFlushInterval: flush,
		RestartBackoffMin:   f.backoffMin,
		RestartBackoffMax:   f.backoffMax,
		RequestTimeout:      f.requestTimeout,
		GossipBind:          f.bind,
		GossipAdvertise:     f.advertise,
		Join:                connectors.SplitList(f.join),
		SessionTimeout:      session,
		ProbeInterval:       f.probe,
		ProbeTimeout:        f.probeWait,
		SuspicionMult:       f.suspicion,
		HeartbeatInterval:   heartbeat,
		Version:             Version,
		Loggers:             f.loggers,
		Log:                 log,
	}, nil
}

// propsFlag collects key=value pairs.
type propsFlag struct{ m map[string]string }

func (p *propsFlag) String() string { return "" }

func (p *propsFlag) Set(v string) error {
	if p.m == nil {
		p.m = map[string]string{}
	}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("%q is not key=value", kv)
		}
		p.m[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return nil
}

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("worker", workerHelp, stderr)
	var f workerFlags
	f.register(fs, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	cfg, err := f.config(log)
	if err != nil {
		return err
	}
	w, err := worker.Start(cfg)
	if err != nil {
		return err
	}
	return serve(ctx, w, log)
}

// serve runs until a signal or a fatal start error, then stops the worker
// gracefully: tasks stop and flush their offsets.
func serve(ctx context.Context, w *worker.Worker, log zerolog.Logger) error {
	select {
	case <-ctx.Done():
	case <-w.Done():
		if err := w.Err(); err != nil {
			return err
		}
	}
	log.Info().Msg("shutting down: stopping tasks and flushing offsets")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return w.Stop(sctx)
}
