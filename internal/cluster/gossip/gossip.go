// Package gossip runs memberlist among the workers of one cluster: fast
// failure detection (sub-second on a LAN when tuned) that lets a survivor
// remove a dead worker from the Kafka group at once instead of waiting out
// the session timeout. Kafka group membership stays the authority on who
// runs what; gossip only speeds up noticing a death.
package gossip

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/hashicorp/memberlist"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/cluster/peerwarn"
)

// Meta is what a worker tells the others about itself (memberlist node
// metadata, at most 512 bytes).
type Meta struct {
	WorkerID string `json:"id"`
	URL      string `json:"url"`
	// ActorID and Actor are the worker's actor system id and remote
	// address, once its actor cluster runs.
	ActorID string `json:"aid,omitempty"`
	Actor   string `json:"actor,omitempty"`
	// ActorTLS tells that the actor remote speaks cluster TLS, so that a
	// member dialing it without (or with TLS to one without) can say so
	// rather than time out.
	ActorTLS bool `json:"tls,omitempty"`
	// Client marks an admin client (`sluice connectors ...`) that joins
	// only to learn the workers' actor addresses: workers neither count it
	// as a worker nor act when it goes.
	Client bool `json:"client,omitempty"`
	// Addr is the member's gossip address, from memberlist (not sent).
	Addr string `json:"-"`
}

// metaOf reads a node's metadata; a node without any is a worker known by
// its name.
func metaOf(n *memberlist.Node) Meta {
	var m Meta
	if json.Unmarshal(n.Meta, &m) != nil || m.WorkerID == "" {
		m = Meta{WorkerID: n.Name}
	}
	return m
}

// Config configures gossip.
type Config struct {
	// Cluster is memberlist's Label: workers of other clusters cannot join.
	Cluster string
	Meta    Meta
	// Bind is host:port to listen on (UDP and TCP); port 0 picks one.
	Bind string
	// Advertise is host:port others reach this worker at; empty means Bind.
	Advertise string
	// Join lists other workers' gossip addresses.
	Join []string
	// Failure detection; zero values take the LAN tuning of docs/design.md
	// (a kill -9 is noticed in well under a second on loopback).
	ProbeInterval, ProbeTimeout, GossipInterval time.Duration
	SuspicionMult                               int
	// Keys encrypt and authenticate every gossip packet and stream
	// (memberlist's keyring, AES-GCM): the first key encrypts, every key
	// decrypts, so a key is rotated in three steps, each of which
	// interworks with the one before: OLD,NEW everywhere, then NEW,OLD,
	// then NEW. Each key is 16,
	// 24 or 32 bytes (AES-128/192/256; ParseKeys checks). With keys set,
	// traffic that is not encrypted with one of them is refused. Empty
	// means plaintext gossip.
	Keys [][]byte
	// OnGone is called (never under memberlist's lock) with the worker id of
	// a member that memberlist declared dead or that left. memberlist's
	// event does not tell the two apart (its Node.State is stale there);
	// callers act the same either way, since a leaving worker has already
	// left the Kafka group itself.
	OnGone func(workerID string)
	Log    zerolog.Logger
}

// Gossip is this worker's memberlist.
type Gossip struct {
	ml   *memberlist.Memberlist
	cfg  Config
	gone chan string
	done chan struct{}

	mu       sync.Mutex
	known    map[string]bool // addresses joined or seen
	meta     *metaDelegate
	peers    map[string]Meta // from memberlist's events: its Members() hands out nodes it keeps writing
	onChange []func()
	changed  chan struct{}
}

// Start listens and joins the given seeds (failing seeds are logged: the
// others may come up later, and the Kafka group tells us about them too).
func Start(cfg Config) (*Gossip, error) {
	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.Meta.WorkerID
	mc.Label = cfg.Cluster
	host, port, err := splitHostPort(cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("gossip bind %q: %w", cfg.Bind, err)
	}
	mc.BindAddr, mc.BindPort = host, port
	// Without an advertise address memberlist advertises the bind address
	// (a private one for 0.0.0.0) and the port it really bound, which
	// matters for port 0.
	mc.AdvertiseAddr, mc.AdvertisePort = "", 0
	if cfg.Advertise != "" {
		if mc.AdvertiseAddr, mc.AdvertisePort, err = splitHostPort(cfg.Advertise); err != nil {
			return nil, fmt.Errorf("gossip advertise %q: %w", cfg.Advertise, err)
		}
	}
	mc.ProbeInterval = or(cfg.ProbeInterval, 200*time.Millisecond)
	mc.ProbeTimeout = or(cfg.ProbeTimeout, 100*time.Millisecond)
	mc.GossipInterval = or(cfg.GossipInterval, 50*time.Millisecond)
	mc.SuspicionMult = cfg.SuspicionMult
	if mc.SuspicionMult <= 0 {
		mc.SuspicionMult = 2
	}
	// A worker restarted with the same id may take its name back at once.
	mc.DeadNodeReclaimTime = time.Second
	if len(cfg.Keys) > 0 {
		if mc.Keyring, err = memberlist.NewKeyring(cfg.Keys[1:], cfg.Keys[0]); err != nil {
			return nil, fmt.Errorf("gossip key: %w", err)
		}
		// An encrypted cluster refuses plaintext packets and streams, and
		// never sends any: a worker without the key cannot join or
		// listen in.
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	mc.Logger = log.New(newFilterWriter(cfg.Log, len(cfg.Keys) > 0), "", 0)
	meta, err := json.Marshal(cfg.Meta)
	if err != nil || len(meta) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("gossip: node metadata too large (%d bytes, at most %d)", len(meta), memberlist.MetaMaxSize)
	}
	g := &Gossip{cfg: cfg, gone: make(chan string, 64), done: make(chan struct{}), known: map[string]bool{},
		meta: &metaDelegate{b: meta}, changed: make(chan struct{}, 1), peers: map[string]Meta{}}
	mc.Delegate = g.meta
	mc.Events = &events{g: g}
	if g.ml, err = memberlist.Create(mc); err != nil {
		return nil, fmt.Errorf("gossip cannot listen on %s: %w", cfg.Bind, err)
	}
	go g.deliver()
	g.JoinAll(cfg.Join)
	return g, nil
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func splitHostPort(hp string) (string, int, error) {
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("port %q is not a number", p)
	}
	if h == "" {
		h = "0.0.0.0"
	}
	return h, n, nil
}

// Addr is the address other workers join this one at.
func (g *Gossip) Addr() string {
	n := g.ml.LocalNode()
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// JoinAll joins the addresses not joined before; failures are logged.
func (g *Gossip) JoinAll(addrs []string) {
	var fresh []string
	self := g.Addr() // before g.mu: memberlist calls track with its lock held
	g.mu.Lock()
	for _, a := range addrs {
		if a != "" && a != self && !g.known[a] {
			g.known[a] = true
			fresh = append(fresh, a)
		}
	}
	g.mu.Unlock()
	if len(fresh) == 0 {
		return
	}
	if n, err := g.ml.Join(fresh); err != nil {
		msg := "gossip: some workers could not be reached"
		if len(g.cfg.Keys) > 0 {
			// A peer with another key closes the stream without a word;
			// its own log names this worker as the one it cannot decrypt.
			msg += " (if they run, their gossip key may differ from this worker's)"
		}
		g.cfg.Log.Warn().Err(err).Strs("seeds", fresh).Int("joined", n).Msg(msg)
		if n == 0 {
			g.mu.Lock() // try again next time
			for _, a := range fresh {
				delete(g.known, a)
			}
			g.mu.Unlock()
		}
	}
}

// Alive lists the members memberlist considers alive, this one included.
func (g *Gossip) Alive() []Meta {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Meta, 0, len(g.peers))
	for _, m := range g.peers {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkerID < out[j].WorkerID })
	return out
}

// IsAlive reports whether a worker id is alive in gossip now.
func (g *Gossip) IsAlive(workerID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.peers[workerID]
	return ok
}

// track copies a node's metadata while memberlist holds its lock.
func (g *Gossip) track(n *memberlist.Node, alive bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !alive {
		delete(g.peers, n.Name)
		return
	}
	if m := metaOf(n); !m.Client || g.cfg.Meta.Client {
		m.Addr = n.Address()
		g.peers[n.Name] = m
	}
}

// Leave tells the others this worker leaves (not dies), then stops.
func (g *Gossip) Leave() {
	if err := g.ml.Leave(time.Second); err != nil {
		g.cfg.Log.Debug().Err(err).Msg("gossip leave")
	}
	_ = g.ml.Shutdown()
	close(g.done)
}

// deliver calls OnGone outside memberlist's lock (EventDelegate callbacks
// run under it; calling back into memberlist there would deadlock).
func (g *Gossip) deliver() {
	for {
		select {
		case <-g.done:
			return
		case id := <-g.gone:
			if g.cfg.OnGone != nil {
				g.cfg.OnGone(id)
			}
		case <-g.changed:
			g.mu.Lock()
			fs := append([]func(){}, g.onChange...)
			g.mu.Unlock()
			for _, f := range fs {
				f()
			}
		}
	}
}

type events struct{ g *Gossip }

func (e *events) NotifyJoin(n *memberlist.Node) {
	if metaOf(n).Client && !e.g.cfg.Meta.Client {
		e.g.cfg.Log.Debug().Str("client", n.Name).Str("addr", n.Address()).Msg("gossip: admin client joined")
		return
	}
	e.g.cfg.Log.Info().Str("peer", n.Name).Str("addr", n.Address()).Msg("gossip: worker joined")
	e.g.track(n, true)
	e.g.signal()
}

func (e *events) NotifyUpdate(n *memberlist.Node) {
	e.g.track(n, true)
	e.g.signal()
}

func (e *events) NotifyLeave(n *memberlist.Node) {
	if metaOf(n).Client && !e.g.cfg.Meta.Client {
		e.g.cfg.Log.Debug().Str("client", n.Name).Msg("gossip: admin client left")
		return
	}
	e.g.cfg.Log.Warn().Str("peer", n.Name).Str("addr", n.Address()).Msg("gossip: worker gone (dead or left)")
	e.g.track(n, false)
	e.g.signal()
	select {
	case e.g.gone <- n.Name:
	default: // a burst of deaths: the session timeout is the fallback
	}
}

// signal notes a membership change; coalesced, delivered off the lock.
func (g *Gossip) signal() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// OnChange registers f to run (off memberlist's lock) after members join,
// leave or change their metadata.
func (g *Gossip) OnChange(f func()) {
	g.mu.Lock()
	g.onChange = append(g.onChange, f)
	g.mu.Unlock()
	g.signal()
}

// SetActor publishes this worker's actor system id and remote address.
func (g *Gossip) SetActor(id, addr string) error {
	m := g.cfg.Meta
	m.ActorID, m.Actor = id, addr
	b, err := json.Marshal(m)
	if err != nil || len(b) > memberlist.MetaMaxSize {
		return fmt.Errorf("gossip: node metadata too large (%d bytes, at most %d)", len(b), memberlist.MetaMaxSize)
	}
	g.meta.set(b)
	g.cfg.Meta = m
	if err := g.ml.UpdateNode(5 * time.Second); err != nil {
		return fmt.Errorf("gossip: publish actor address: %w", err)
	}
	g.signal()
	return nil
}

// metaDelegate serves this node's metadata, which changes once when the
// actor cluster starts.
type metaDelegate struct {
	mu sync.Mutex
	b  []byte
}

func (m *metaDelegate) set(b []byte) {
	m.mu.Lock()
	m.b = b
	m.mu.Unlock()
}

func (m *metaDelegate) NodeMeta(int) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.b
}
func (*metaDelegate) NotifyMsg([]byte)                {}
func (*metaDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (*metaDelegate) LocalState(bool) []byte          { return nil }
func (*metaDelegate) MergeRemoteState([]byte, bool)   {}

// filterWriter sends memberlist's own log lines to zerolog at debug, its
// warnings and errors at warn. Lines that say a peer's traffic could not
// be decrypted (or was not encrypted) become one clear warning per peer
// and minute: a worker with the wrong gossip key is retried every probe
// interval, and the raw lines would flood the log without saying why.
type filterWriter struct {
	log       zerolog.Logger
	encrypted bool
	mismatch  *peerwarn.Limiter
}

func newFilterWriter(log zerolog.Logger, encrypted bool) filterWriter {
	return filterWriter{log: log, encrypted: encrypted, mismatch: peerwarn.New(time.Minute)}
}

// keyMismatchSigns are memberlist's words for traffic sealed with another
// key, or sealed on one side only, in lower case: memberlist capitalises
// them differently on its packet and stream paths.
var keyMismatchSigns = []string{
	"no installed keys could decrypt",
	"decrypt packet failed",
	"remote state is encrypted and encryption is not configured",
	"encryption is configured but remote state is not encrypted",
}

func (f filterWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if f.keyMismatch(line) {
		peer := peerOf(line)
		if f.mismatch.Allow(peer) {
			f.log.Warn().Str("component", "memberlist").Str("peer_host", peer).Str("detail", line).
				Msg(f.mismatchAdvice())
		} else {
			f.log.Debug().Str("component", "memberlist").Msg(line)
		}
		return len(p), nil
	}
	switch {
	case strings.Contains(line, "[ERR]"), strings.Contains(line, "[WARN]"):
		f.log.Warn().Str("component", "memberlist").Msg(line)
	default:
		f.log.Debug().Str("component", "memberlist").Msg(line)
	}
	return len(p), nil
}

func (f filterWriter) keyMismatch(line string) bool {
	lower := strings.ToLower(line)
	if !f.encrypted && strings.Contains(lower, "type (") && strings.Contains(lower, "not supported") {
		// A keyless worker reads an encrypted packet as an unknown
		// message type.
		return true
	}
	return slices.ContainsFunc(keyMismatchSigns, func(s string) bool { return strings.Contains(lower, s) })
}

func (f filterWriter) mismatchAdvice() string {
	if f.encrypted {
		return "gossip: refused traffic from a peer that does not use this worker's gossip key (a wrong --gossip-key / sluice.gossip.key, or none): it cannot join this cluster until the keys match"
	}
	return "gossip: a peer sends encrypted gossip and this worker has no gossip key: give it the cluster's --gossip-key / sluice.gossip.key to join"
}

// peerOf is the host of the peer memberlist names as from=host:port
// (a stream comes from a new port each time), or "unknown".
func peerOf(line string) string {
	_, rest, ok := strings.Cut(line, "from=")
	if !ok {
		return "unknown"
	}
	addr, _, _ := strings.Cut(rest, " ")
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

var _ io.Writer = filterWriter{}

// ParseKeys decodes gossip keys given as base64 (as `head -c 32
// /dev/urandom | base64` prints them), each value possibly a list
// separated by commas or spaces, in order: the first encrypts. Errors say
// which key is wrong, never what it is.
func ParseKeys(values []string) ([][]byte, error) {
	var keys [][]byte
	for _, v := range values {
		for _, k := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			n := len(keys) + 1
			key, err := base64.StdEncoding.DecodeString(k)
			if err != nil {
				return nil, fmt.Errorf("key %d is not base64 (generate one with: head -c 32 /dev/urandom | base64)", n)
			}
			switch len(key) {
			case 16, 24, 32:
			default:
				return nil, fmt.Errorf("key %d is %d bytes; a gossip key is 16, 24 or 32 bytes (AES-128, AES-192 or AES-256) before base64", n, len(key))
			}
			keys = append(keys, key)
		}
	}
	return keys, nil
}
