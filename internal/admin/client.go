package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/cluster/clustertls"
	"github.com/sluice-io/sluice/internal/cluster/gossip"
	"github.com/sluice-io/sluice/internal/controlpb"
)

// ClientConfig says how to reach a cluster.
type ClientConfig struct {
	// Cluster is the cluster name: gossip refuses members of another.
	Cluster string
	// Join lists workers' gossip addresses (their --bind); one that
	// answers is enough.
	Join []string
	// Bind is where the client listens for answers (host:port). Empty
	// means port 0 on the local address that routes to the first join
	// address: workers must be able to reach the client back.
	Bind string
	// GossipKeys and TLS are the cluster's gossip keys and remote TLS, as
	// the workers have them (gossip.Config.Keys, package clustertls):
	// without them a secured cluster neither lets the client join nor
	// answers it.
	GossipKeys [][]byte
	TLS        *clustertls.Config
	// JoinTimeout bounds finding a worker; default 5 s.
	JoinTimeout time.Duration
	Log         zerolog.Logger
	// ActorLogs passes protoactor's own logs on to Log; they are noise
	// (it reports the client's own disconnect as an error) unless one is
	// debugging the client.
	ActorLogs bool
}

// Client talks to a cluster's admin actors. It joins the cluster's gossip
// as a client member (workers ignore it) only to learn the workers' actor
// addresses, and sends protobuf requests through protoactor's remote.
type Client struct {
	g       *gossip.Gossip
	system  *actor.ActorSystem
	remote  *remote.Remote
	workers []gossip.Meta

	mu sync.Mutex
	// handshake is the last failed TLS handshake with a worker: the
	// reason a request then times out, which protoactor does not tell.
	handshake *clustertls.HandshakeFailure
}

// Dial joins the cluster and waits until at least one worker's admin actor
// is known.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if len(cfg.Join) == 0 {
		return nil, errors.New("no worker address to join: give --join HOST:PORT (a worker's --bind address)")
	}
	bind := cfg.Bind
	if bind == "" {
		host, err := localHostFor(cfg.Join[0])
		if err != nil {
			return nil, err
		}
		bind = net.JoinHostPort(host, "0")
	}
	host, _, err := net.SplitHostPort(bind)
	if err != nil {
		return nil, fmt.Errorf("client bind address %q: %w", bind, err)
	}
	hostname, _ := os.Hostname()
	name := "sluice-cli-" + hostname + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	g, err := gossip.Start(gossip.Config{Cluster: cfg.Cluster, Meta: gossip.Meta{WorkerID: name, Client: true},
		Bind: bind, Join: cfg.Join, Keys: cfg.GossipKeys, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	c := &Client{g: g}
	timeout := cfg.JoinTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		c.workers = c.workers[:0]
		for _, m := range g.Alive() {
			if !m.Client && m.Actor != "" {
				c.workers = append(c.workers, m)
			}
		}
		if len(c.workers) > 0 {
			if err := tlsMismatch(cfg, c.workers); err != nil {
				g.Leave()
				return nil, err
			}
			// The worker joined at answers first, as the user expects;
			// the others stand by should it not answer.
			slices.SortStableFunc(c.workers, func(a, b gossip.Meta) int {
				return boolToInt(!slices.Contains(cfg.Join, a.Addr)) - boolToInt(!slices.Contains(cfg.Join, b.Addr))
			})
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			g.Leave()
			return nil, fmt.Errorf("%w: no worker of cluster %q answered at %v within %s; check --join (a worker's --bind address, host:port), --cluster (the workers' cluster name) and --gossip-key (the workers' key, if their gossip is encrypted)",
				ErrNoWorker, cfg.Cluster, cfg.Join, timeout)
		}
		g.JoinAll(cfg.Join) // a seed that was down may be up now
		time.Sleep(50 * time.Millisecond)
	}
	level := slog.Level(100) // above every level: silent
	if cfg.ActorLogs {
		level = slog.LevelDebug
	}
	c.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: level}))
	}))
	logFailure := clustertls.LogFailures(cfg.Log)
	c.remote = remote.NewRemote(c.system, remote.Configure(host, 0, clustertls.RemoteOptions(cfg.TLS, func(f clustertls.HandshakeFailure) {
		logFailure(f)
		c.mu.Lock()
		c.handshake = &f
		c.mu.Unlock()
	})...))
	if err := startRemote(c.remote); err != nil {
		g.Leave()
		return nil, err
	}
	return c, nil
}

// tlsMismatch says, before any request times out, that the client and
// the workers disagree on cluster TLS.
func tlsMismatch(cfg ClientConfig, workers []gossip.Meta) error {
	for _, w := range workers {
		switch {
		case w.ActorTLS && cfg.TLS == nil:
			return fmt.Errorf("%w: worker %s speaks cluster TLS: give --cluster-tls-cert and --cluster-tls-key (and --cluster-tls-ca) as the workers have them", ErrNoWorker, w.WorkerID)
		case !w.ActorTLS && cfg.TLS != nil:
			return fmt.Errorf("%w: worker %s runs without cluster TLS: drop --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca", ErrNoWorker, w.WorkerID)
		}
	}
	return nil
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// startRemote starts protoactor's remote, which panics where it cannot
// listen.
func startRemote(r *remote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("admin client cannot listen for answers: %v", p)
		}
	}()
	r.Start()
	return nil
}

// localHostFor is the local address that routes to addr's host: loopback
// for a loopback worker, else the interface the kernel would use (a UDP
// "dial" sends nothing).
func localHostFor(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--join %q is not host:port: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		return "127.0.0.1", nil
	}
	conn, err := net.Dial("udp", net.JoinHostPort(host, port))
	if err != nil {
		return "", fmt.Errorf("no route to %s: %w", addr, err)
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP.String(), nil
}

// Workers are the workers the client knows of, by worker id.
func (c *Client) Workers() []gossip.Meta { return append([]gossip.Meta(nil), c.workers...) }

// Do sends req to a worker's admin actor and returns its answer. When a
// worker cannot be reached, the next one is tried: for any request if the
// message was not delivered, for reads also after a timeout (a write that
// timed out may have been carried out, and is not sent twice).
func (c *Client) Do(ctx context.Context, req *controlpb.AdminRequest) (*controlpb.AdminResponse, error) {
	var errs []error
	for _, w := range c.workers {
		timeout := 60 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		res, err := c.system.Root.RequestFuture(actor.NewPID(w.Actor, controlpb.AdminActorName), req, timeout).Result()
		if err == nil {
			ar, ok := res.(*controlpb.AdminResponse)
			if !ok {
				return nil, fmt.Errorf("worker %s answered %T: is it a Sluice worker of the same version?", w.WorkerID, res)
			}
			return ar, nil
		}
		errs = append(errs, fmt.Errorf("worker %s at %s: %w%s", w.WorkerID, w.Actor, err, c.handshakeHint()))
		if errors.Is(err, actor.ErrTimeout) && (!resendable(req) || ctx.Err() != nil) {
			break
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrNoWorker, errors.Join(errs...))
}

// handshakeHint is the last failed TLS handshake, to add to an error.
func (c *Client) handshakeHint() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handshake == nil {
		return ""
	}
	return fmt.Sprintf(" (cluster TLS handshake with %s failed: %v; check --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca against the workers')", c.handshake.Peer, c.handshake.Err)
}

// Close leaves the cluster's gossip and stops listening.
func (c *Client) Close() {
	c.remote.Shutdown(true)
	c.system.Shutdown()
	c.g.Leave()
}

// resendable tells the requests that may be sent to another worker after
// one timed out: reads. A write that timed out may have been carried out,
// and is not sent twice.
func resendable(req *controlpb.AdminRequest) bool {
	switch req.GetOp().(type) {
	case *controlpb.AdminRequest_ListConnectors, *controlpb.AdminRequest_GetConnector, *controlpb.AdminRequest_GetConfig,
		*controlpb.AdminRequest_GetStatus, *controlpb.AdminRequest_GetTasks, *controlpb.AdminRequest_GetTaskStatus,
		*controlpb.AdminRequest_GetOffsets, *controlpb.AdminRequest_ListPlugins, *controlpb.AdminRequest_PluginConfig,
		*controlpb.AdminRequest_Validate, *controlpb.AdminRequest_GetTopics, *controlpb.AdminRequest_ListWorkers,
		*controlpb.AdminRequest_ListLoggers, *controlpb.AdminRequest_GetLogger, *controlpb.AdminRequest_ClusterView:
		return true
	}
	return false
}
