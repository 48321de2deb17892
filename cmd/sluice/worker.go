package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/actors"
	"github.com/sluice-io/sluice/internal/gcpace"
	"github.com/sluice-io/sluice/internal/javaprops"
	"github.com/sluice-io/sluice/internal/rest"
	"github.com/sluice-io/sluice/internal/worker"
)

const workerHelp = `
sluice worker runs one worker of a Sluice cluster against any Kafka. Workers
started with the same --cluster name share the internal topics
<cluster>-configs, <cluster>-offsets and <cluster>-status, and serve Kafka
Connect's REST API on --rest-addr.

Example:
  sluice worker --cluster demo --bootstrap 127.0.0.1:9092 --rest-addr :8083 --worker-id w1

A Kafka Connect worker properties file runs unchanged:
  sluice worker --config connect-distributed.properties
bootstrap.servers, group.id (the cluster name), listeners (the REST address),
rest.advertised.*, the storage topics, the converters and Connect's other
worker keys apply as in Connect, TLS and SASL to Kafka included
(security.protocol, sasl.*, ssl.*, also under producer., consumer., admin.),
and config providers (config.providers):
${file:/path/secrets.properties:key} placeholders are resolved in the worker's
keys and, when each starts, in connector and task configs. Keys Sluice cannot
honour (worker-level producer.* and consumer.* other than the security keys,
...) are refused at
start, every one named; keys without effect here (plugin.path, ...) and
unknown keys are logged once and ignored, as Connect ignores unknown keys.
The README's table of worker keys lists them all. A single key can also be
given with --prop:
  --prop value.converter=org.apache.kafka.connect.storage.StringConverter

Precedence, for each setting, highest first: the flag on the command line,
its SLUICE_<FLAG> variable, the Connect key given with --prop (SLUICE_PROP),
the key in the --config file (SLUICE_CONFIG), then the default.
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
	// maxBody bounds a REST request's body; Connect has no key for it.
	maxBody int64
	// ui serves the dashboard (/ui, /ui/state) on the REST listeners.
	ui bool
	// metrics serves GET /metrics and records what it needs (on by default).
	metrics bool
	// pprof serves Go's profiles at /debug/pprof/ (off by default).
	pprof bool
	// gcHeadroomMiB is the heap a busy worker may allocate past its live
	// heap before Go collects (internal/gcpace); 0 keeps Go's default,
	// busy or idle.
	gcHeadroomMiB int
	// configFile is a Kafka Connect worker properties file (worker only).
	configFile string
	clusterSec clusterSecFlags
	logFlags
}

// Defaults of the group timing flags.
const (
	defaultSession   = 10 * time.Second
	defaultHeartbeat = time.Second
)

func (f *workerFlags) register(fs *flag.FlagSet, dev bool) {
	if !dev {
		fs.StringVar(&f.configFile, "config", "", "a Kafka Connect worker properties file (connect-distributed.properties): its keys apply where no flag, SLUICE_* variable or --prop sets the same thing")
		fs.StringVar(&f.cluster, "cluster", "", "cluster name: workers with the same name form one cluster (required, or group.id)")
		fs.StringVar(&f.bootstrap, "bootstrap", "", "Kafka bootstrap servers, host:port[,host:port...] (required, or bootstrap.servers; with --config, Connect's default localhost:9092)")
		fs.StringVar(&f.restAddr, "rest-addr", ":8083", "host:port of the REST API (listeners)")
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
	f.clusterSec.register(fs)
	fs.BoolVar(&f.ui, "ui", true, "serve the live dashboard at /ui and its JSON at /ui/state on the REST listeners, behind the REST API's authentication; --ui=false answers both 404")
	fs.Int64Var(&f.maxBody, "rest-max-body-bytes", rest.MaxBodyBytes, "the largest REST request body taken; a larger one is answered 413 (Kafka Connect has no such bound or key)")
	fs.Var(&f.props, "prop", "a Kafka Connect worker key=value, as in connect-distributed.properties (it wins over --config's): converter defaults (value.converter=StringConverter, ...), *.storage.topic, offset.flush.interval.ms, ...; keys Sluice cannot honour are refused, unknown ones logged and ignored (repeatable; SLUICE_PROP takes several pairs, one per line or comma-separated; a comma not followed by key= stays in the value, so lists such as listeners=http://:8083,https://:8443 need no quoting)")
	fs.BoolVar(&f.metrics, "metrics", true, "record metrics and serve them at GET /metrics (Prometheus text and OpenMetrics); --metrics=false records nothing")
	fs.BoolVar(&f.pprof, "pprof", false, "serve Go's runtime profiles (CPU, heap, goroutines) at /debug/pprof/ on the REST listeners, behind the REST API's authentication, for `go tool pprof`")
	fs.IntVar(&f.gcHeadroomMiB, "gc-headroom-mib", gcpace.DefaultHeadroom>>20, "while the worker allocates fast (moving records), let its heap grow this many MiB past what is live before Go's garbage collector runs, instead of GOGC's 100% of it: less CPU for a bounded amount of memory. Idle, the heap's room follows the allocation rate (Go's default from 1 MiB/s up, less under it). 0 turns both off; GOGC in the environment also does")
	f.logFlags.register(fs)
}

// startGCPace paces the collector as --gc-headroom-mib says, until stop.
func (f *workerFlags) startGCPace(log zerolog.Logger) (stop func(), err error) {
	if f.gcHeadroomMiB < 0 || f.gcHeadroomMiB > 1<<20 {
		return nil, usageError{fmt.Errorf("--gc-headroom-mib (or SLUICE_GC_HEADROOM_MIB) %d: want 0 (off) to %d", f.gcHeadroomMiB, 1<<20)}
	}
	// Busy means moving records: a worker creating connectors allocates
	// fast too, and would keep their state spread over a grown heap.
	return gcpace.Start(gcpace.Options{Headroom: uint64(f.gcHeadroomMiB) << 20, Work: actors.RecordsMoved, Log: log}), nil
}

// workerConfig is the worker's Config from the parsed flags (fs) and the
// Kafka Connect keys of --config and --prop.
func (f *workerFlags) workerConfig(fs *flag.FlagSet, log zerolog.Logger) (worker.Config, error) {
	props, err := f.workerProps(log)
	if err != nil {
		return worker.Config{}, err
	}
	return f.config(log, setFlags(fs), props)
}

// workerProps are the Kafka Connect worker keys: the --config file's,
// with the --prop keys over them. Values are trimmed, as Connect's
// ConfigDef trims the values it parses.
func (f *workerFlags) workerProps(log zerolog.Logger) (map[string]string, error) {
	props := map[string]string{}
	if f.configFile != "" {
		b, err := os.ReadFile(f.configFile)
		if err != nil {
			return nil, usageError{fmt.Errorf("--config: %v", err)}
		}
		file, err := javaprops.Parse(b)
		if err != nil {
			return nil, usageError{fmt.Errorf("--config %s: %v", f.configFile, err)}
		}
		for k, v := range file {
			props[k] = strings.TrimSpace(v)
		}
		log.Info().Str("config", f.configFile).Int("keys", len(file)).Msg("read the worker properties file")
	}
	maps.Copy(props, f.props.m)
	return props, nil
}

// config builds the worker's Config from the flags, the flags set on the
// command line or in the environment (set), and the Connect keys (props).
// A flag that was set wins over the key for the same setting; one left at
// its default yields to the key, which the worker applies where the
// Config's field is empty.
func (f *workerFlags) config(log zerolog.Logger, set map[string]bool, props map[string]string) (worker.Config, error) {
	has := func(keys ...string) bool {
		return slices.ContainsFunc(keys, func(k string) bool { return props[k] != "" })
	}
	use := func(flag string, keys ...string) bool { return set[flag] || !has(keys...) }
	if f.cluster == "" && !has("group.id") {
		return worker.Config{}, usageError{fmt.Errorf("--cluster (or group.id in the --config file) is required")}
	}
	boot := connectors.SplitList(f.bootstrap)
	if len(boot) == 0 && !has("bootstrap.servers") {
		if f.configFile == "" {
			return worker.Config{}, usageError{fmt.Errorf("--bootstrap is required")}
		}
		boot = []string{"localhost:9092"} // Connect's default bootstrap.servers
	}
	if err := f.check(use); err != nil {
		return worker.Config{}, err
	}
	gossipKeys, clusterTLS, err := f.clusterSec.resolve(props)
	if err != nil {
		return worker.Config{}, err
	}
	cfg := worker.Config{
		WorkerID: f.workerID, Bootstrap: boot,
		ConfigTopic: f.configTopic, OffsetsTopic: f.offsetTopic, StatusTopic: f.statusTopic,
		Props:             props,
		RestartBackoffMin: f.backoffMin,
		RestartBackoffMax: f.backoffMax,
		RequestTimeout:    f.requestTimeout,
		RESTMaxBodyBytes:  f.maxBody,
		DisableMetrics:    !f.metrics,
		EnablePprof:       f.pprof,
		GossipBind:        f.bind,
		GossipAdvertise:   f.advertise,
		Join:              connectors.SplitList(f.join),
		ProbeInterval:     f.probe,
		ProbeTimeout:      f.probeWait,
		SuspicionMult:     f.suspicion,
		GossipKeys:        gossipKeys,
		ClusterTLS:        clusterTLS,
		Version:           Version,
		Loggers:           f.loggers,
		Log:               log,
	}
	// Each zero value below lets the worker take the Connect key.
	if use("cluster", "group.id") {
		cfg.Cluster = f.cluster
	}
	if use("rest-addr", "listeners") {
		cfg.RESTAddr = f.restAddr
	}
	if use("replication-factor", "config.storage.replication.factor", "offset.storage.replication.factor", "status.storage.replication.factor") {
		cfg.ReplicationFactor = int16(f.replication)
	}
	if use("offset-flush-interval-ms", "offset.flush.interval.ms") {
		cfg.OffsetFlushInterval = time.Duration(f.flushMs) * time.Millisecond
	}
	if use("session-timeout", "session.timeout.ms") {
		cfg.SessionTimeout = f.session
	}
	if use("heartbeat-interval", "heartbeat.interval.ms") {
		cfg.HeartbeatInterval = f.heartbeat
	}
	if set["ui"] {
		// The flag wins over sluice.ui.enable: it replaces the key, which
		// the worker reads (a DisableUI of false cannot say "on").
		props[worker.KeyUIEnable] = strconv.FormatBool(f.ui)
	}
	return cfg, nil
}

// check refuses bad flag values; use tells whether a flag applies (see
// config).
func (f *workerFlags) check(use func(flag string, keys ...string) bool) error {
	switch {
	case f.flushMs <= 0:
		return usageError{fmt.Errorf("--offset-flush-interval-ms must be positive")}
	case f.backoffMin <= 0 || f.backoffMax < f.backoffMin:
		return usageError{fmt.Errorf("--restart-backoff-min must be positive and at most --restart-backoff-max")}
	case f.probe <= 0 || f.probeWait <= 0 || f.probeWait >= f.probe || f.suspicion < 1:
		return usageError{fmt.Errorf("--probe-timeout must be positive and below --probe-interval, and --suspicion-mult at least 1")}
	case f.requestTimeout <= 0:
		return usageError{fmt.Errorf("--request-timeout must be positive")}
	case f.maxBody <= 0:
		return usageError{fmt.Errorf("--rest-max-body-bytes must be positive")}
	case f.session <= 0 || f.heartbeat <= 0:
		return usageError{fmt.Errorf("--session-timeout and --heartbeat-interval must be positive")}
	case use("session-timeout", "session.timeout.ms") && use("heartbeat-interval", "heartbeat.interval.ms") && f.heartbeat >= f.session:
		// With a Connect key involved, the worker checks the pair.
		return usageError{fmt.Errorf("--heartbeat-interval must be below --session-timeout")}
	}
	return nil
}

// propsFlag collects key=value pairs: one per --prop, or several in one
// value (SLUICE_PROP) separated by newlines or commas. Many of Connect's
// values are comma-separated lists themselves (listeners,
// ssl.enabled.protocols, config.providers, ...), so a comma starts a new
// pair only when what follows it is key=...; otherwise it belongs to the
// value: listeners=http://a:8083,https://a:8443 is one pair.
type propsFlag struct{ m map[string]string }

func (p *propsFlag) String() string { return "" }

func (p *propsFlag) Set(v string) error {
	if p.m == nil {
		p.m = map[string]string{}
	}
	for _, line := range strings.Split(v, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		prev := ""
		for _, kv := range strings.Split(line, ",") {
			k, val, ok := strings.Cut(kv, "=")
			if prev != "" && continuesList(prev, k, ok) {
				// A list value (bootstrap.servers=a:9092,b:9092), or
				// gossip keys, whose base64 may end in "=".
				p.m[prev] += "," + strings.TrimSpace(kv)
				continue
			}
			if !ok || strings.TrimSpace(k) == "" {
				return fmt.Errorf("%q is not key=value", kv)
			}
			prev = strings.TrimSpace(k)
			p.m[prev] = strings.TrimSpace(val)
		}
	}
	return nil
}

// continuesList reports whether a comma-separated piece (k before its
// first "=", if it has one) is one more item of the value of the key
// before it rather than a key=value of its own: a piece without "=", or,
// after the gossip key, one whose "key" has no dot, which every worker key
// Sluice takes with a list has and base64 never has.
func continuesList(prev, k string, hasEquals bool) bool {
	return !hasEquals || (prev == worker.KeyGossipKey && !strings.Contains(k, "."))
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
	cfg, err := f.workerConfig(fs, log)
	if err != nil {
		return err
	}
	stopPace, err := f.startGCPace(log)
	if err != nil {
		return err
	}
	defer stopPace()
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
	sctx, cancel := context.WithTimeout(context.Background(), w.StopTimeout())
	defer cancel()
	return w.Stop(sctx)
}
