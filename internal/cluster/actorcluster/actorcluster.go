// Package actorcluster makes the workers of a Sluice cluster one
// protoactor-go cluster, with a cluster provider fed by the workers'
// memberlist gossip (package gossip): discovery and failure detection come
// from memberlist, addressing and protobuf control messages from
// protoactor's remote. Each worker runs an admin actor that answers control
// requests (package controlpb) about itself.
package actorcluster

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/cluster/clustertls"
	"github.com/sluice-io/sluice/internal/cluster/gossip"
	"github.com/sluice-io/sluice/internal/cluster/peerwarn"
	"github.com/sluice-io/sluice/internal/controlpb"
)

// Config configures a worker's actor cluster node.
type Config struct {
	System  *actor.ActorSystem
	Cluster string
	// Host is the interface the remote listens on (a free port is picked);
	// it should be the gossip bind host, so that what reaches gossip reaches
	// actors too.
	Host   string
	Gossip *gossip.Gossip
	// TLS carries the remote over TLS, mutual (package clustertls); nil
	// is plaintext gRPC.
	TLS *clustertls.Config
	// Info describes this worker for the admin actor.
	Info func() *controlpb.WorkerInfo
	// Rates measures the throughput of this worker's tasks for the admin
	// actor (TaskRatesRequest); nil answers an empty list.
	Rates func() *controlpb.TaskRates
	// Admin answers control requests (package admin); it may block, so
	// the admin actor calls it on a goroutine of its own (invariant 8).
	Admin func(ctx context.Context, req *controlpb.AdminRequest) *controlpb.AdminResponse
	Log   zerolog.Logger
}

// Node is this worker in the actor cluster.
type Node struct {
	cfg      Config
	cluster  *cluster.Cluster
	provider *provider
}

// Start starts remoting and the cluster member, spawns the admin actor and
// publishes the actor address through gossip.
func Start(cfg Config) (n *Node, err error) {
	host := cfg.Host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	// Port 0: the remote picks one and gossip tells the others.
	rc := remote.Configure(host, 0, clustertls.RemoteOptions(cfg.TLS, clustertls.LogFailures(cfg.Log))...)
	p := &provider{g: cfg.Gossip, log: cfg.Log, tls: cfg.TLS != nil, mismatch: peerwarn.New(time.Minute)}
	cc := cluster.Configure(cfg.Cluster, p, disthash.New(), rc,
		// docs/adr/0002: protoactor's gossip heartbeat expiration blocks a
		// stalled member for good without telling it; membership is
		// memberlist's and Kafka's job here, so keep it out of the way.
		cluster.WithHeartbeatExpiration(24*time.Hour))
	c := cluster.New(cfg.System, cc)
	defer func() {
		if r := recover(); r != nil { // protoactor panics where it cannot start
			err = fmt.Errorf("actor cluster: %v", r)
		}
	}()
	c.StartMember()
	if _, err := cfg.System.Root.SpawnNamed(actor.PropsFromFunc(adminReceive(cfg)), controlpb.AdminActorName); err != nil {
		c.Shutdown(false)
		return nil, fmt.Errorf("admin actor: %w", err)
	}
	if err := cfg.Gossip.SetActor(cfg.System.ID, cfg.System.Address()); err != nil {
		c.Shutdown(false)
		return nil, err
	}
	cfg.Log.Info().Str("actor_address", cfg.System.Address()).Msg("actor cluster member started")
	return &Node{cfg: cfg, cluster: c, provider: p}, nil
}

func adminReceive(cfg Config) actor.ReceiveFunc {
	return func(c actor.Context) {
		switch m := c.Message().(type) {
		case *controlpb.WorkerInfoRequest:
			c.Respond(cfg.Info())
		case *controlpb.TaskRatesRequest:
			if cfg.Rates == nil {
				c.Respond(&controlpb.TaskRates{WorkerId: cfg.Info().GetWorkerId()})
				return
			}
			c.Respond(cfg.Rates())
		case *controlpb.AdminRequest:
			sender := c.Sender()
			if sender == nil || cfg.Admin == nil {
				return // nobody to answer, or nothing to answer with
			}
			root := c.ActorSystem().Root
			go func() {
				res := cfg.Admin(context.Background(), m)
				root.Send(sender, res)
			}()
		}
	}
}

// Ask sends msg to the admin actor at a member's actor address and waits
// for its answer until ctx ends.
func (n *Node) Ask(ctx context.Context, address string, msg any) (any, error) {
	timeout := 60 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	return n.cfg.System.Root.RequestFuture(actor.NewPID(address, controlpb.AdminActorName), msg, timeout).Result()
}

// Workers asks every member's admin actor about its worker, in parallel,
// each with the deadline of ctx; members that do not answer are reported
// in errs.
func (n *Node) Workers(ctx context.Context) (infos []*controlpb.WorkerInfo, errs []error) {
	infos, errs = askAll[*controlpb.WorkerInfo](ctx, n, &controlpb.WorkerInfoRequest{})
	sort.Slice(infos, func(i, j int) bool { return infos[i].WorkerId < infos[j].WorkerId })
	return infos, errs
}

// TaskRates asks every member's admin actor for the throughput of the
// tasks its worker runs, as Workers does.
func (n *Node) TaskRates(ctx context.Context) (rates []*controlpb.TaskRates, errs []error) {
	rates, errs = askAll[*controlpb.TaskRates](ctx, n, &controlpb.TaskRatesRequest{})
	sort.Slice(rates, func(i, j int) bool { return rates[i].WorkerId < rates[j].WorkerId })
	return rates, errs
}

// askAll sends msg to every member's admin actor in parallel and collects
// the answers of type T; a member that does not answer within the
// deadline of ctx (2 s without one), or answers otherwise, is an error.
func askAll[T any](ctx context.Context, n *Node, msg any) (answers []T, errs []error) {
	timeout := 2 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	// The provider's copy: protoactor's MemberList.Members reads the
	// topology without its lock.
	members := n.provider.current()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := actor.NewPID(m.Address(), controlpb.AdminActorName)
			res, err := n.cfg.System.Root.RequestFuture(pid, msg, timeout).Result()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("worker at %s: %w", m.Address(), err))
				return
			}
			if a, ok := res.(T); ok {
				answers = append(answers, a)
			} else {
				errs = append(errs, fmt.Errorf("worker at %s answered %T", m.Address(), res))
			}
		}()
	}
	wg.Wait()
	return answers, errs
}

// Shutdown stops remoting. It leaves the actor system alone: the worker's
// runtime owns it and shuts it down after its tasks drained
// (protoactor's Cluster.Shutdown would shut the system down too, and a
// second shutdown panics).
func (n *Node) Shutdown() { n.cluster.Remote.Shutdown(false) }

// provider is a protoactor ClusterProvider whose topology is memberlist's:
// members whose gossip metadata carries an actor address.
type provider struct {
	g   *gossip.Gossip
	log zerolog.Logger
	// tls tells whether this member's remote speaks cluster TLS; a member
	// that differs is warned about, for without the wrapper of package
	// clustertls a plaintext member never hears why its dials fail.
	tls      bool
	mismatch *peerwarn.Limiter

	mu      sync.Mutex
	members *cluster.MemberList
	last    []*cluster.Member
}

func (p *provider) current() []*cluster.Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (p *provider) StartMember(c *cluster.Cluster) error {
	p.mu.Lock()
	p.members = c.MemberList
	p.mu.Unlock()
	p.g.OnChange(p.publish)
	return nil
}

func (p *provider) StartClient(c *cluster.Cluster) error { return p.StartMember(c) }

func (p *provider) Shutdown(bool) error { return nil }

func (p *provider) publish() {
	var ms []*cluster.Member
	for _, m := range p.g.Alive() {
		if m.ActorID == "" || m.Actor == "" {
			continue // its actor cluster has not started yet
		}
		if m.ActorTLS != p.tls && p.mismatch.Allow(m.WorkerID) {
			p.log.Warn().Str("peer", m.WorkerID).Bool("peer_cluster_tls", m.ActorTLS).Bool("cluster_tls", p.tls).
				Msg("a worker of this cluster differs from this one in cluster TLS (--cluster-tls-cert, --cluster-tls-key, --cluster-tls-ca): the two cannot exchange control messages")
		}
		host, port, err := net.SplitHostPort(m.Actor)
		if err != nil {
			p.log.Warn().Str("peer", m.WorkerID).Str("actor", m.Actor).Msg("ignoring a bad actor address")
			continue
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			continue
		}
		ms = append(ms, &cluster.Member{Id: m.ActorID, Host: host, Port: int32(n)})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = ms
	if p.members != nil {
		p.members.UpdateClusterTopology(ms)
	}
}
