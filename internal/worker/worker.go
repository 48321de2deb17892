// Package worker assembles one Sluice worker: the Kafka clients, the state
// topics, the actor runtime that runs connectors and tasks, and the REST
// server. cmd/sluice starts it; tests start several in one process.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/builtin"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/internal/actors"
	"github.com/sluice-io/sluice/internal/basicauth"
	"github.com/sluice-io/sluice/internal/cluster/actorcluster"
	"github.com/sluice-io/sluice/internal/cluster/clustertls"
	"github.com/sluice-io/sluice/internal/cluster/gossip"
	"github.com/sluice-io/sluice/internal/cluster/group"
	"github.com/sluice-io/sluice/internal/configprovider"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/kafkasec"
	"github.com/sluice-io/sluice/internal/loglevel"
	"github.com/sluice-io/sluice/internal/metrics"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/rest"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/topics"
)

// Config is a worker's configuration. Zero values take Kafka Connect's
// defaults where Connect has one.
type Config struct {
	// Cluster names the cluster: the prefix of the internal topics (and,
	// with distributed mode, the Kafka group id).
	Cluster   string
	WorkerID  string
	Bootstrap []string
	// RESTAddr is where the REST API listens over HTTP (host:port; ":0"
	// picks a port). Set, it replaces Connect's listeners key with this one
	// listener; unset, listeners (and admin.listeners) in Props open one
	// or more HTTP and HTTPS listeners (listeners.go).
	RESTAddr string
	// RESTMaxBodyBytes bounds a REST request's body; a larger one is
	// answered 413. Zero takes 1 MiB (rest.MaxBodyBytes). Connect has no
	// such key: this is the --rest-max-body-bytes flag.
	RESTMaxBodyBytes int64
	// DisableUI turns the dashboard (GET /ui, GET /ui/state) off: both
	// answer 404 as any unknown path.
	DisableUI bool
	// RESTAdvertisedHost and RESTAdvertisedPort are what this worker gives
	// out to the others as its REST URL (in the group's metadata, in
	// gossip, in GET /workers) and, by default, its id, as Connect's
	// rest.advertised.host.name and rest.advertised.port; empty and zero
	// take the listener's (127.0.0.1 for a listener on every interface).
	RESTAdvertisedHost string
	RESTAdvertisedPort int
	// ClientID is the client.id of the worker's own Kafka clients (its
	// group membership and the internal topics), as Connect's client.id;
	// empty means sluice-<worker id>. Tasks' clients keep their own ids.
	ClientID string

	// Internal topics, as Connect's config.storage.topic etc.; empty means
	// <cluster>-configs, <cluster>-offsets, <cluster>-status.
	ConfigTopic, OffsetsTopic, StatusTopic string
	OffsetsPartitions, StatusPartitions    int32 // 25 and 5
	// ReplicationFactor of the internal topics; -1 (the default) takes the
	// broker's default.replication.factor.
	ReplicationFactor int16

	// Props are Kafka Connect's distributed worker keys, as in
	// connect-distributed.properties: converter defaults for every
	// connector (key.converter, value.converter and their sub-keys), and
	// keys that set the fields above where a field is unset
	// (bootstrap.servers, group.id, listeners, config.storage.topic, ...).
	// Keys Sluice cannot honour are refused at start; the others it
	// ignores are logged (connectkeys.go).
	Props map[string]string

	OffsetFlushInterval time.Duration // offset.flush.interval.ms, default 1 s
	// OffsetFlushTimeout bounds one offset flush (source) or commit (sink)
	// before it is given up and retried at the next interval
	// (offset.flush.timeout.ms; default 30 s, Connect's is 5 s).
	OffsetFlushTimeout time.Duration
	// ShutdownTimeout bounds how long a stopping task may take to drain
	// its in-flight records and flush its offsets
	// (task.shutdown.graceful.timeout.ms, default 5 s).
	ShutdownTimeout time.Duration
	// GossipBind is where memberlist listens (host:port; default
	// 127.0.0.1:0). Workers find each other's gossip addresses through the
	// Kafka group; Join lists seeds to contact at once.
	GossipBind, GossipAdvertise string
	Join                        []string
	// Failure detection tuning (memberlist); zero values take a LAN tuning
	// that notices a kill -9 in under a second on loopback.
	ProbeInterval, ProbeTimeout time.Duration
	SuspicionMult               int
	// GossipKeys encrypt gossip (gossip.Config.Keys); empty takes
	// sluice.gossip.key, and without it gossip is plaintext.
	GossipKeys [][]byte
	// ClusterTLS carries the actor remote over mutual TLS (package
	// clustertls); nil takes the sluice.cluster.tls.* files, and without
	// them the remote is plaintext gRPC.
	ClusterTLS *clustertls.Config

	// Group timing: session.timeout.ms (10 s), heartbeat.interval.ms
	// (1 s here, 3 s in Connect) and rebalance.timeout.ms (60 s).
	SessionTimeout, HeartbeatInterval, RebalanceTimeout time.Duration
	// RequestTimeout bounds how long a REST or admin request waits for the
	// worker to join its group or for a rebalance to end before it is
	// answered 503 or 409 (control.DefaultRequestTimeout, 90 s, as
	// Connect's REST request timeout).
	RequestTimeout time.Duration
	// RestartBackoffMin and RestartBackoffMax bound the capped exponential
	// backoff (with jitter) before a failed connector or task restarts;
	// zero takes 1 s and 1 min (invariant 5).
	RestartBackoffMin, RestartBackoffMax time.Duration
	Registry                             *connectors.Registry
	// KafkaOpts are extra client options (TLS, SASL, ...).
	KafkaOpts []kgo.Opt
	Version   string
	// Loggers are the process's named loggers: each component logs
	// through its own (see internal/loglevel for the names) and
	// /admin/loggers changes their levels at run time. Nil makes a
	// registry over Log with Log's level at the root; it does not manage
	// zerolog's global level, which suits tests that run several workers.
	Loggers *loglevel.Registry
	// Log is where a worker without Loggers writes.
	Log zerolog.Logger
	// DisableMetrics turns the metrics off: nothing is recorded and GET
	// /metrics is not served (the --metrics=false flag).
	DisableMetrics bool
	// EnablePprof serves Go's runtime profiles at /debug/pprof/ on the
	// REST listeners, behind the REST API's authentication (the --pprof
	// flag); off by default.
	EnablePprof bool

	// providers are the config providers Props configure
	// (config.providers), which resolve the placeholders of Props
	// themselves and of every connector and task config at its start.
	providers *configprovider.Transformer
	// listeners are the REST listeners applyListeners resolved.
	listeners *restListeners
	// restAuth is the basic authentication rest.extension.classes asks
	// for (nil: none); authResolved tells it was read.
	restAuth     *basicauth.Users
	authResolved bool
}

// logger is the logger of a component of this worker: the named logger,
// with the worker's id on every event.
func (c *Config) logger(name string) zerolog.Logger {
	return c.Loggers.Logger(name).With().Str("worker", c.WorkerID).Logger()
}

// Resolve returns cfg as Start would run it: Kafka Connect's keys in Props
// applied where the fields are unset, and the defaults filled in. It
// refuses what Start refuses.
func Resolve(cfg Config) (Config, error) {
	err := cfg.defaults()
	return cfg, err
}

func (c *Config) defaults() error {
	if c.Loggers == nil {
		c.Loggers = loglevel.New(c.Log, loglevel.Options{Root: c.Log.GetLevel()})
	}
	if err := c.resolveProviders(); err != nil {
		return err
	}
	if err := c.applyConnectKeys(); err != nil {
		return err
	}
	if c.Cluster == "" {
		return errors.New("cluster name is required (or group.id)")
	}
	if len(c.Bootstrap) == 0 {
		return errors.New("at least one bootstrap broker is required (or bootstrap.servers)")
	}
	if c.ConfigTopic == "" {
		c.ConfigTopic = c.Cluster + "-configs"
	}
	if c.OffsetsTopic == "" {
		c.OffsetsTopic = c.Cluster + "-offsets"
	}
	if c.StatusTopic == "" {
		c.StatusTopic = c.Cluster + "-status"
	}
	if c.OffsetsPartitions == 0 {
		c.OffsetsPartitions = 25
	}
	if c.StatusPartitions == 0 {
		c.StatusPartitions = 5
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.Registry == nil {
		c.Registry = builtin.Registry()
	}
	if c.Props == nil {
		c.Props = map[string]string{}
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
	if !c.authResolved {
		users, err := basicauth.FromProps(c.Props, c.logger(loglevel.REST))
		if err != nil {
			return err
		}
		c.restAuth, c.authResolved = users, true
	}
	return nil
}

// resolveProviders builds the config providers Props configure and
// replaces the placeholders of Props with their values, as Connect's
// worker config does (KIP-421): a worker key such as sasl.jaas.config may
// keep its secret in a file. Props becomes a new map; the caller's keeps
// its placeholders.
func (c *Config) resolveProviders() error {
	if c.providers != nil {
		return nil // Resolve's result, started: Props are resolved already
	}
	t, err := configprovider.FromWorkerProps(c.Props, c.Loggers.Logger(loglevel.Worker))
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if c.Props, err = configprovider.ResolveWorkerProps(t, c.Props); err != nil {
		return err
	}
	c.providers = t
	return nil
}

// workerKeys are the Kafka Connect worker keys a worker takes in Props and
// honours as Connect does; with them, the converter defaults
// (key.converter, value.converter, header.converter and their sub-keys)
// and mappedKeys (connectkeys.go). Every other key is ignored with a log
// line or refused at start (classifyKeys), so that a properties file
// written for Connect never runs with a setting silently dropped.
var workerKeys = map[string]bool{
	"config.storage.topic": true, "offset.storage.topic": true, "status.storage.topic": true,
	"offset.storage.partitions": true, "status.storage.partitions": true,
	"config.storage.replication.factor": true, "offset.storage.replication.factor": true, "status.storage.replication.factor": true,
	"offset.flush.interval.ms": true,
	"session.timeout.ms":       true, "heartbeat.interval.ms": true, "rebalance.timeout.ms": true,
	"topic.tracking.enable": true, "topic.tracking.allow.reset": true,
	connconfig.WorkerOverridePolicy: true, connconfig.WorkerTopicCreationEnable: true,
	connconfig.WorkerExactlyOnceSourceSupport: true,
}

// fenceSources fences the transactional producers of the first tasks tasks
// of source connector name (control.Options.FenceSources), with the
// producer client of the worker's source tasks.
func (w *Worker) fenceSources(ctx context.Context, name string, tasks int) error {
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = actors.TransactionalID(w.cfg.Cluster, connectors.TaskID{Connector: name, Task: i})
	}
	return actors.FenceProducers(ctx, w.producer, ids)
}

// Worker is a running worker.
type Worker struct {
	cfg Config
	log zerolog.Logger
	// servers are the REST API's listeners; rest the one advertised.
	servers []*restServer
	rest    *restServer
	// auth checks REST and admin requests' credentials (nil: none asked).
	auth basicauth.Checker
	// restURL is the REST URL this worker gives out to the others.
	restURL string

	ready     atomic.Bool
	clusterID atomic.Value // string, once Kafka answered
	// unreachable is why the start cannot reach Kafka now (a string, empty
	// once it has), for GET /health while the worker starts.
	unreachable atomic.Value
	startMu     sync.Mutex
	startErr    error

	// connWorker is what connector validation and the runtime read of this
	// worker's keys: the client override policy, topic.creation.enable.
	connWorker connconfig.Worker

	ctl      *control.Controller
	api      *control.Router // ctl, with writes carried out by the leader
	adm      *kadm.Client
	admCl    *kgo.Client
	producer *kgo.Client
	// security is the TLS and SASL of every Kafka client the worker makes.
	security *clientSecurity
	// connectorAdm is the connectors' admin client: adm, or one of its own
	// when the worker's admin.* keys ask for other settings (closed by
	// closeConnectorAdm).
	connectorAdm      *kadm.Client
	closeConnectorAdm func()
	configs           *state.ConfigLog
	statuses          *state.StatusLog
	offsets           *offsets.SourceStore
	// offsetTopics are the connector-specific offsets topics
	// (offsets.storage.topic) opened so far.
	offsetTopics *offsets.TopicStores
	runtime      *actors.Runtime
	// metrics is nil with metrics off.
	metrics *metrics.Registry

	gossip       *gossip.Gossip
	actors       *actorcluster.Node
	members      *membership
	memberCancel context.CancelFunc
	memberDone   chan struct{}
	// connected is closed once connect has returned: the fields it sets
	// (runtime, actors, memberCancel) are then safe to read.
	connected chan struct{}

	cancel   context.CancelFunc
	done     chan struct{}
	doneOnce sync.Once
}

// Start listens on the REST address at once (answering 503 while starting),
// then connects to Kafka in the background, retrying with backoff while the
// brokers are unreachable, and starts running connectors once it has read
// the state topics. Errors that retrying cannot fix (a bad topic config) end
// the start: Err reports them and Done closes.
func Start(cfg Config) (*Worker, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	servers, err := cfg.listeners.open()
	if err != nil {
		return nil, err
	}
	var advertisedServer *restServer
	for _, s := range servers {
		if !s.admin && s.l == cfg.listeners.advertisedListener() {
			advertisedServer = s
			break
		}
	}
	addr := advertisedServer.ln.Addr().String()
	restURL := cfg.listeners.advertised + "://" + cfg.restAdvertised(addr)
	if cfg.WorkerID == "" {
		// Connect's worker id: the advertised host and port.
		cfg.WorkerID = cfg.restAdvertised(addr)
	}
	// Made once the worker id is known: every line carries it.
	log, restLog := cfg.logger(loglevel.Worker), cfg.logger(loglevel.REST)
	classifyKeys(cfg.Props).log(log)
	w := &Worker{cfg: cfg, log: log, servers: servers, rest: advertisedServer, restURL: restURL,
		done: make(chan struct{}), memberDone: make(chan struct{}), connected: make(chan struct{})}
	if cfg.restAuth != nil {
		w.auth = cfg.restAuth
		log.Info().Strs("users_files", cfg.restAuth.Paths()).Msg("REST API and admin requests require HTTP basic authentication")
	}
	if r := cfg.listeners.replaced; r != "" {
		log.Info().Str("listeners", r).Str("rest_addr", cfg.RESTAddr).
			Msg("the listeners key is replaced by the REST address given (--rest-addr): one HTTP listener there")
	}
	if strings.TrimSpace(cfg.Props["access.control.allow.methods"]) != "" && rest.NewCORS(cfg.Props["access.control.allow.origin"], "") == nil {
		log.Info().Str("key", "access.control.allow.methods").Msg("no effect without access.control.allow.origin, as in Kafka Connect")
	}
	w.members = &membership{w: w}
	w.metrics = w.newMetrics()

	if err := w.build(); err != nil {
		w.closeClients()
		closeAll(servers)
		return nil, err
	}
	w.serveREST(restHandlers{
		api:     w.withPprof(w.withMetrics(w.members.handler(rest.NewHandler(w.api, restLog, rest.WithMaxBody(cfg.RESTMaxBodyBytes))))),
		auth:    w.auth,
		cors:    rest.NewCORS(cfg.Props["access.control.allow.origin"], cfg.Props["access.control.allow.methods"]),
		log:     restLog,
		routing: cfg.listeners,
	})
	main, admin := w.ListenerURLs()
	log.Info().Strs("rest", main).Strs("admin", admin).Str("advertised", restURL).Str("cluster", cfg.Cluster).Strs("bootstrap", cfg.Bootstrap).Msg("worker starting")

	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.startup(ctx)
	return w, nil
}

// build makes the Kafka clients, the state stores and the control plane;
// none of them talks to Kafka yet.
func (w *Worker) build() error {
	var err error
	if w.security, err = loadSecurity(w.cfg.Props); err != nil {
		return err
	}
	// The security options follow KafkaOpts, as in the clients the actors
	// make (an embedding program gives TLS and SASL either way, not both:
	// franz-go adds SASL mechanisms up).
	clientOpts := func(kind, id string) []kgo.Opt {
		opts := append([]kgo.Opt{kgo.SeedBrokers(w.cfg.Bootstrap...), kgo.ClientID(id)}, w.cfg.KafkaOpts...)
		if kind == kafkasec.Worker {
			return append(opts, w.security.own.Options()...)
		}
		return append(opts, w.security.kinds[kind].Options()...)
	}
	// client.id names the worker's own clients; the producer of its
	// source tasks is not one of them.
	kopts := clientOpts(kafkasec.Worker, cmp.Or(w.cfg.ClientID, "sluice-"+w.cfg.WorkerID))
	if w.admCl, err = kgo.NewClient(kopts...); err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	w.adm = kadm.NewClient(w.admCl)
	if w.configs, err = state.NewConfigLog(kopts, w.cfg.ConfigTopic, w.cfg.logger(loglevel.State)); err != nil {
		return err
	}
	w.configs.OnLoggerLevel(w.applyClusterLogLevel)
	if w.statuses, err = state.NewStatusLog(kopts, w.cfg.StatusTopic, w.cfg.logger(loglevel.State)); err != nil {
		return err
	}
	tracking, err := state.ParseTopicTracking(w.cfg.Props)
	if err != nil {
		return err
	}
	w.statuses.SetTopicTracking(tracking)
	if w.connWorker, err = connconfig.ParseWorker(w.cfg.Props); err != nil {
		return err
	}
	if w.offsets, err = offsets.NewSourceStore(kopts, w.cfg.OffsetsTopic); err != nil {
		return err
	}
	w.offsets.SetLogger(w.cfg.logger(loglevel.Offsets))
	w.offsetTopics = offsets.NewTopicStores(kopts, func(ctx context.Context, topic string) error {
		// With the worker's offsets topic's settings, as Connect creates
		// a connector's own offsets topic.
		return topics.EnsureTopics(ctx, w.adm, topics.TopicSpec{Name: topic, Partitions: w.cfg.OffsetsPartitions,
			ReplicationFactor: w.cfg.ReplicationFactor, Compact: true})
	}, w.cfg.logger(loglevel.Offsets))
	// The connectors' shared producer, with the worker's producer.* keys.
	producerOpts := append(clientOpts(kafkasec.Producer, "sluice-"+w.cfg.WorkerID), actors.ProducerOpts()...)
	if w.producer, err = kgo.NewClient(append(producerOpts, w.connWorker.Clients.Producer.Opts...)...); err != nil {
		return err
	}
	if w.connectorAdm, w.closeConnectorAdm, err = w.security.connectorAdmin(w.adm, w.connWorker.Clients.Admin,
		append([]kgo.Opt{kgo.SeedBrokers(w.cfg.Bootstrap...), kgo.ClientID("sluice-" + w.cfg.WorkerID + "-admin")}, w.cfg.KafkaOpts...)); err != nil {
		return err
	}

	ctl, err := control.New(control.Options{
		Configs: w.configs, Statuses: w.statuses, Plugins: w.cfg.Registry,
		Converters:       converters.Classes(),
		HeaderConverters: converters.HeaderClasses(),
		Worker:           w.connWorker,
		FenceSources:     w.fenceSources,
		CheckConverters:  func(c map[string]string) *connectors.ConfigError { return checkRuntimeKeys(c, w.cfg.Props) },
		WorkerID:         w.cfg.WorkerID,
		Version:          w.cfg.Version,
		Ready:            w.ready.Load,
		Standing:         w.members.standing,
		KafkaProblem:     w.security.Problem,
		KafkaClusterIDFunc: func() string {
			id, _ := w.clusterID.Load().(string)
			return id
		},
		Loggers: loggersBackend{Registry: w.cfg.Loggers, configs: w.configs},
		Offsets: offsets.NewConnectorOffsets(w.offsets, w.offsetTopics, w.adm),
		Topics:  w.statuses,
		// The leader asks the worker that runs a task to restart it.
		RestartTask: w.members.restartTaskOn,
		Providers:   w.cfg.providers,
		Log:         w.cfg.logger(loglevel.REST),
	})
	if err != nil {
		return err
	}
	w.ctl = ctl
	w.api = control.NewRouter(ctl, w.members, w.cfg.RequestTimeout)
	bind := w.cfg.GossipBind
	if bind == "" {
		bind = "127.0.0.1:0"
	}
	if w.gossip, err = gossip.Start(gossip.Config{
		Cluster: w.cfg.Cluster, Meta: gossip.Meta{WorkerID: w.cfg.WorkerID, URL: w.restURL, ActorTLS: w.cfg.ClusterTLS != nil},
		Bind: bind, Advertise: w.cfg.GossipAdvertise, Join: w.cfg.Join, Keys: w.cfg.GossipKeys,
		ProbeInterval: w.cfg.ProbeInterval, ProbeTimeout: w.cfg.ProbeTimeout, SuspicionMult: w.cfg.SuspicionMult,
		OnGone: w.removeGone, Log: w.cfg.logger(loglevel.Gossip),
	}); err != nil {
		return err
	}
	w.members.member = group.New(group.Config{
		Group: w.cfg.Cluster, WorkerID: w.cfg.WorkerID, URL: w.restURL,
		Gossip:         w.gossip.Addr(),
		Client:         w.admCl,
		SessionTimeout: w.cfg.SessionTimeout, HeartbeatInterval: w.cfg.HeartbeatInterval, RebalanceTimeout: w.cfg.RebalanceTimeout,
		Log: w.cfg.logger(loglevel.Group),
	}, w.members)
	return nil
}

// loggersBackend serves /admin/loggers: this worker's loggers, and the
// config topic for levels that every worker applies.
type loggersBackend struct {
	*loglevel.Registry
	configs *state.ConfigLog
}

func (b loggersBackend) PutLoggerLevel(ctx context.Context, namespace, level string) error {
	return b.configs.PutLoggerLevel(ctx, namespace, level)
}

// applyClusterLogLevel applies a cluster-wide level read from the config
// topic, as Connect's workers do. The writer validated it; a record with a
// bad level (written by hand, or by a newer version) is skipped.
func (w *Worker) applyClusterLogLevel(l state.LoggerLevel) {
	level, err := loglevel.ParseLevel(l.Level)
	if err != nil {
		w.log.Warn().Err(err).Str("namespace", l.Namespace).Msg("ignoring a cluster-wide log level from the config topic")
		return
	}
	changed := w.cfg.Loggers.Set(l.Namespace, level)
	w.log.Info().Str("namespace", l.Namespace).Str("log_level", loglevel.LevelName(level)).Strs("loggers", changed).
		Msg("applied a cluster-wide log level")
}

// checkRuntimeKeys validates the runtime keys the control package does not
// know about: converter classes and their settings, with the worker's
// converter defaults.
func checkRuntimeKeys(c map[string]string, workerProps map[string]string) *connectors.ConfigError {
	ce := &connectors.ConfigError{}
	if _, err := converters.Resolve(c, workerProps, true); err != nil {
		ce.Add("key.converter", err.Error())
	}
	if _, err := converters.Resolve(c, workerProps, false); err != nil {
		ce.Add("value.converter", err.Error())
	}
	if _, err := converters.ResolveHeader(c, workerProps); err != nil {
		ce.Add("header.converter", err.Error())
	}
	if len(ce.Errors) == 0 {
		return nil
	}
	return ce
}

// restAdvertised is the host:port this worker gives out to the others for
// its REST API listening at addr, as Connect's RestServer.advertisedUrl:
// rest.advertised.host.name and rest.advertised.port where given.
func (c *Config) restAdvertised(addr string) string {
	host, port, err := net.SplitHostPort(advertised(addr))
	if err != nil {
		return addr
	}
	if c.RESTAdvertisedPort != 0 {
		port = strconv.Itoa(c.RESTAdvertisedPort)
	}
	return net.JoinHostPort(cmp.Or(c.RESTAdvertisedHost, host), port)
}

// advertised is addr with a host others can dial: a listener on every
// interface gives 127.0.0.1.
func advertised(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// RESTAddr is the address the advertised REST listener listens on.
func (w *Worker) RESTAddr() string { return w.rest.ln.Addr().String() }

// ListenerURLs are the URLs of the REST listeners (main) and of the
// listeners that serve the /admin endpoints alone (admin), with the ports
// they were given.
func (w *Worker) ListenerURLs() (main, admin []string) {
	for _, s := range w.servers {
		if s.admin {
			admin = append(admin, s.URL())
		} else {
			main = append(main, s.URL())
		}
	}
	return main, admin
}

// StopTimeout is how long a graceful Stop may take: the tasks' drain
// (task.shutdown.graceful.timeout.ms), then leaving the group and flushing
// the statuses.
func (w *Worker) StopTimeout() time.Duration { return w.cfg.ShutdownTimeout + 25*time.Second }

// ID is the worker id.
func (w *Worker) ID() string { return w.cfg.WorkerID }

// Ready reports whether the worker has read its state and runs connectors.
func (w *Worker) Ready() bool { return w.ready.Load() }

// Done is closed when the worker's start failed for good or it stopped.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Err is the reason the start failed, if it did.
func (w *Worker) Err() error {
	w.startMu.Lock()
	defer w.startMu.Unlock()
	return w.startErr
}

func (w *Worker) startup(ctx context.Context) {
	err := w.connect(ctx)
	if err == nil {
		// The membership outlives ctx: at shutdown the worker leaves its
		// group only after its tasks stopped and flushed their offsets.
		mctx, mcancel := context.WithCancel(context.Background())
		w.memberCancel = mcancel
		go func() {
			defer close(w.memberDone)
			_ = w.members.member.Run(mctx)
		}()
	}
	// What connect set up is Stop's to shut down from here on.
	close(w.connected)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Error().Err(err).Msg("worker cannot start")
			w.startMu.Lock()
			w.startErr = err
			w.startMu.Unlock()
			w.doneOnce.Do(func() { close(w.done) })
		}
		return
	}
	w.members.follow(ctx)
}

// connect waits for Kafka, creates and reads the state topics, and starts
// the actor runtime.
func (w *Worker) connect(ctx context.Context) error {
	cfg := w.cfg
	b := actors.Backoff{Initial: 500 * time.Millisecond, Max: 10 * time.Second, Jitter: 0.1}
	for attempt := 1; ; attempt++ {
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		meta, err := w.adm.BrokerMetadata(mctx)
		cancel()
		authErr := w.security.observe(err)
		if err == nil {
			w.clusterID.Store(meta.Cluster)
			w.unreachable.Store("")
			break
		}
		w.unreachable.Store(err.Error())
		if ctx.Err() != nil {
			return ctx.Err()
		}
		delay := b.Delay(attempt)
		if authErr != nil {
			// Retried as an unreachable broker is: credentials may be
			// fixed on the broker's side (a SCRAM user created late).
			w.log.Error().Err(authErr).Strs("bootstrap", cfg.Bootstrap).Int("attempt", attempt).Dur("retry_in", delay).
				Msg("the worker cannot authenticate to Kafka; retrying")
		} else {
			w.log.Warn().Err(err).Strs("bootstrap", cfg.Bootstrap).Int("attempt", attempt).Dur("retry_in", delay).
				Msg("Kafka is unreachable; retrying")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := topics.EnsureTopics(tctx, w.adm,
		topics.TopicSpec{Name: cfg.ConfigTopic, Partitions: 1, ReplicationFactor: cfg.ReplicationFactor, Compact: true},
		topics.TopicSpec{Name: cfg.OffsetsTopic, Partitions: cfg.OffsetsPartitions, ReplicationFactor: cfg.ReplicationFactor, Compact: true},
		topics.TopicSpec{Name: cfg.StatusTopic, Partitions: cfg.StatusPartitions, ReplicationFactor: cfg.ReplicationFactor, Compact: true},
	)
	if err != nil {
		return fmt.Errorf("internal topics: %w", err)
	}
	for _, s := range []interface{ Start(context.Context) error }{w.configs, w.statuses, w.offsets} {
		if err := s.Start(tctx); err != nil {
			return err
		}
	}
	var topics actors.TopicRecorder // nil: tasks record nothing
	if w.statuses.TopicTrackingEnabled() {
		topics = w.statuses
	}
	rt, err := actors.NewRuntime(actors.Options{
		Topics:   topics,
		WorkerID: cfg.WorkerID, GroupID: cfg.Cluster, Registry: cfg.Registry, WorkerProps: cfg.Props,
		Offsets: w.offsets, OffsetTopics: w.offsetTopics, Status: w.statuses, TaskConfigs: w.api,
		KafkaOpts: append([]kgo.Opt{kgo.SeedBrokers(cfg.Bootstrap...)}, cfg.KafkaOpts...),
		Security:  w.security.actorSecurity(),
		Producer:  w.producer, Admin: w.connectorAdm, Worker: w.connWorker, Providers: cfg.providers,
		Backoff: restartBackoff(cfg.RestartBackoffMin, cfg.RestartBackoffMax), OffsetFlushInterval: cfg.OffsetFlushInterval,
		OffsetFlushTimeout: cfg.OffsetFlushTimeout, ShutdownTimeout: cfg.ShutdownTimeout,
		Log: cfg.logger(loglevel.Actors), Metrics: w.metrics,
	})
	if err != nil {
		return err
	}
	w.runtime = rt
	host, _, _ := net.SplitHostPort(w.gossip.Addr())
	if w.actors, err = actorcluster.Start(actorcluster.Config{
		System: rt.ActorSystem(), Cluster: cfg.Cluster, Host: host, Gossip: w.gossip, TLS: cfg.ClusterTLS,
		Info: w.members.info, Rates: w.members.rates, Admin: w.members.adminServer().Handle, Log: cfg.logger(loglevel.ActorCluster),
	}); err != nil {
		return err
	}
	return nil
}

// Stop stops the REST API, then every task (flushing offsets), leaves the
// group, and closes the Kafka clients.
func (w *Worker) Stop(ctx context.Context) error {
	w.cancel()
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	for _, s := range w.servers {
		_ = s.srv.Shutdown(hctx)
	}
	cancel()
	// connect returns promptly once canceled; waiting for it means a stop
	// during startup neither races with it nor leaves a runtime running.
	select {
	case <-w.connected:
	case <-ctx.Done():
		return fmt.Errorf("worker still connecting at shutdown: %w", ctx.Err())
	}
	var errs []error
	if w.runtime != nil {
		if err := w.runtime.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if w.memberCancel != nil {
		w.memberCancel() // leave the group: the tasks that stopped move at once
		select {
		case <-w.memberDone:
		case <-ctx.Done():
		}
	}
	if w.actors != nil {
		w.actors.Shutdown()
	}
	if w.gossip != nil {
		w.gossip.Leave()
	}
	if err := w.statuses.Flush(ctx); err != nil {
		errs = append(errs, fmt.Errorf("status flush: %w", err))
	}
	w.closeClients()
	w.doneOnce.Do(func() { close(w.done) })
	w.log.Info().Msg("worker stopped")
	return errors.Join(errs...)
}

// removeGone removes a worker that gossip lost from the Kafka group by its
// instance id, so the group rebalances now rather than after the session
// timeout (fast failover). A worker that is back already (restarted with
// its id) is left alone. If gossip was wrong and the worker lives, it is
// fenced, stops its tasks and rejoins (invariant 3): safe, only slower.
func (w *Worker) removeGone(workerID string) {
	if workerID == w.cfg.WorkerID || w.gossip.IsAlive(workerID) {
		return
	}
	w.metrics.PeerGone()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := group.LeaveByInstance(ctx, w.admCl, w.cfg.Cluster, workerID); err != nil {
		w.log.Warn().Err(err).Str("peer", workerID).Msg("could not remove a gone worker from the group; the session timeout will")
		return
	}
	w.log.Info().Str("peer", workerID).Msg("removed a gone worker from the group: its work moves now")
}

func (w *Worker) closeClients() {
	if w.closeConnectorAdm != nil {
		w.closeConnectorAdm()
	}
	if w.producer != nil {
		w.producer.Close()
	}
	if w.configs != nil {
		w.configs.Close()
	}
	if w.statuses != nil {
		w.statuses.Close()
	}
	if w.offsets != nil {
		w.offsets.Close()
	}
	if w.offsetTopics != nil {
		w.offsetTopics.Close()
	}
	if w.admCl != nil {
		w.admCl.Close()
	}
}

// restartBackoff is the supervisors' restart policy; zero bounds take the
// actors' defaults.
func restartBackoff(min, max time.Duration) actors.Backoff {
	if min <= 0 || max <= 0 {
		return actors.Backoff{}
	}
	return actors.Backoff{Initial: min, Max: max, Jitter: 0.2, ResetAfter: 2 * max}
}
