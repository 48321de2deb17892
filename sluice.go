// Package sluice runs a Sluice worker inside your own program, so that a
// binary of yours can carry your connectors beside the built-in ones.
//
// Sluice is Kafka Connect as a Go actor system: workers started with the same
// cluster name share Kafka's group membership and three internal topics
// (<cluster>-configs, -offsets and -status), spread connectors and their
// tasks among themselves, and serve Kafka Connect's REST API. A worker started
// here is the same worker `sluice worker` runs: it talks to workers started
// by the sluice binary and to other embedded ones alike, as long as every
// worker of a cluster knows the connector classes that cluster runs.
//
// This package is the only public way in to the runtime, which lives under
// internal/ so that it can change without breaking anyone; the connector API
// is package connectors. A program that adds a connector of its own:
//
//	reg := builtin.Registry()            // FileStream, Datagen, JDBC/PostgreSQL
//	if err := reg.Register(myPlugin); err != nil {
//		log.Fatal(err)
//	}
//	w, err := sluice.NewWorker(sluice.Config{
//		Cluster:   "demo",
//		Bootstrap: []string{"127.0.0.1:9092"},
//		RESTAddr:  ":8083",
//		Registry:  reg,
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	// ... until a signal, then stop the tasks and flush their offsets:
//	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
//	defer cancel()
//	err = w.Stop(ctx)
//
// examples/custombinary in the repository is such a program, complete.
package sluice

import (
	"context"
	"maps"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/worker"
)

// Config is what one worker needs. Only Cluster and Bootstrap are required
// (or group.id and bootstrap.servers in Props);
// every other field has the default `sluice worker` has.
type Config struct {
	// Cluster names the cluster: workers with the same name form one
	// cluster. It is the Kafka group id, the prefix of the internal topics
	// and the label of the workers' gossip, so workers of two clusters
	// never mix even on one broker and one network.
	Cluster string
	// Bootstrap lists Kafka brokers as host:port (bootstrap.servers).
	Bootstrap []string
	// RESTAddr is where Kafka Connect's REST API listens over HTTP,
	// host:port; empty takes Connect's listeners key from Props (HTTP and
	// HTTPS listeners), else ":8083", and port 0 picks a free port
	// (Worker.RESTAddr tells which). Workers name each other by their REST addresses (the
	// leader's is how the others find its admin actor; GET /workers shows
	// them), so across machines give a host they can reach.
	RESTAddr string
	// WorkerID names this worker in statuses and in the Kafka group
	// (group.instance.id, so a worker restarted with its id takes its
	// work back without a rebalance); empty means the REST address, as in
	// Kafka Connect.
	WorkerID string
	// GossipBind is where other workers reach this one for failure
	// detection and control messages, host:port; empty means
	// 127.0.0.1:0, which only works while every worker runs on one
	// machine. GossipAdvertise is the address others should use instead,
	// behind NAT or in containers. Workers find each other's addresses
	// through the Kafka group.
	GossipBind, GossipAdvertise string
	// Props are Kafka Connect's distributed worker keys, as in
	// connect-distributed.properties: converter defaults for every
	// connector (value.converter, value.converter.schemas.enable, ...),
	// the storage topics, offset.flush.interval.ms, and keys that stand for
	// the fields above where those are empty (bootstrap.servers, group.id,
	// listeners), Kafka's security keys (security.protocol, sasl.*,
	// ssl.*) for every Kafka client, the REST API's (https listeners,
	// basic authentication, CORS) and config providers
	// (${provider:path:key}). Keys Sluice cannot honour (GSSAPI,
	// scheduled.rebalance.max.delay.ms other than 0, ...) make NewWorker fail,
	// naming each; keys without
	// effect and unknown keys are logged once. The README's table of
	// worker keys lists them.
	Props map[string]string
	// Registry holds the connector classes this worker can run; nil means
	// the built-in ones (connectors/builtin.Registry). To add your own,
	// start from builtin.Registry() and Register them.
	Registry *connectors.Registry
	// KafkaOpts are extra options for every Kafka client of the worker:
	// TLS (kgo.DialTLSConfig), SASL (kgo.SASL), and so on. Give TLS and
	// SASL either here or with the security keys in Props, not both:
	// franz-go adds SASL mechanisms up.
	KafkaOpts []kgo.Opt
	// Log is where the worker logs, and its level the level the
	// worker's loggers start at (for example
	// zerolog.New(os.Stderr).Level(zerolog.InfoLevel)); PUT
	// /admin/loggers changes them at run time. The zero Logger logs
	// nothing.
	Log zerolog.Logger
	// DisableMetrics turns the metrics off: nothing is recorded and GET
	// /metrics (Prometheus, under Kafka Connect's metric names) is not
	// served, as the worker command's --metrics=false.
	DisableMetrics bool
}

// Worker is a running worker. Its methods are safe for concurrent use.
type Worker struct {
	w        *worker.Worker
	stopOnce sync.Once
	stopErr  error
}

// NewWorker starts a worker and returns at once. The REST API listens
// before NewWorker returns (reads answer 503 while the worker starts;
// writes wait for it); the
// worker then connects to Kafka in the background, retrying with backoff
// while the brokers are unreachable, creates the internal topics when they
// are missing, reads them, and joins the cluster. Ready tells when it runs
// connectors.
//
// NewWorker fails on a bad Config or an address it cannot listen on (REST
// or gossip); failures that retrying cannot fix come later, through Done
// and Err.
func NewWorker(cfg Config) (*Worker, error) {
	w, err := worker.Start(worker.Config{
		Cluster:         cfg.Cluster,
		Bootstrap:       slices.Clone(cfg.Bootstrap),
		RESTAddr:        cfg.RESTAddr,
		WorkerID:        cfg.WorkerID,
		GossipBind:      cfg.GossipBind,
		GossipAdvertise: cfg.GossipAdvertise,
		// A copy: the worker reads Props for as long as it runs.
		Props:          maps.Clone(cfg.Props),
		Registry:       cfg.Registry,
		KafkaOpts:      slices.Clone(cfg.KafkaOpts),
		Log:            cfg.Log,
		Version:        version(),
		DisableMetrics: cfg.DisableMetrics,
	})
	if err != nil {
		return nil, err
	}
	return &Worker{w: w}, nil
}

// RESTAddr is the address the REST API listens on, with the port that
// was picked when Config.RESTAddr asked for port 0.
func (w *Worker) RESTAddr() string { return w.w.RESTAddr() }

// Ready reports whether the worker has read the cluster's state and runs
// connectors. Until then its REST API answers 503.
func (w *Worker) Ready() bool { return w.w.Ready() }

// Done is closed when the worker stopped, or when its start failed for
// good (Err says why).
func (w *Worker) Done() <-chan struct{} { return w.w.Done() }

// Err is why the start failed for good (a bad internal topic, say), or nil.
// An unreachable Kafka is not such a failure: the worker keeps retrying.
func (w *Worker) Err() error { return w.w.Err() }

// Stop stops the worker gracefully: the REST API, then every task of this
// worker (flushing its source offsets and committing its sink offsets),
// then it leaves the Kafka group so that its work moves to the other
// workers at once, and closes its Kafka clients. ctx bounds the wait for
// tasks; give it some seconds. Stop may be called more than once, also
// after a failed start; later calls return the first call's result.
func (w *Worker) Stop(ctx context.Context) error {
	w.stopOnce.Do(func() { w.stopErr = w.w.Stop(ctx) })
	return w.stopErr
}

const modulePath = "github.com/sluice-io/sluice"

// version is Sluice's version as this program was built with it, which the
// REST API reports (GET /, and for plugins without a version of their own).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	mod := &bi.Main
	if mod.Path != modulePath {
		mod = nil
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				mod = d
				break
			}
		}
	}
	switch {
	case mod == nil:
		return "unknown"
	case mod.Replace != nil && mod.Replace.Version != "":
		return mod.Replace.Version
	case mod.Version == "":
		return "(devel)"
	}
	return mod.Version
}
