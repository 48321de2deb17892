package actors

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/kafkasec"
)

// ownProducers are the producers of connectors with producer overrides
// (producer.override.*). Every other connector's tasks share the worker's
// producer (Options.Producer); such a connector cannot, since its settings
// are the client's. Its tasks on this worker share one producer instead,
// made from the worker's Kafka options and the overrides when the first of
// them starts, and closed when the last of them has drained (Connect makes
// one per task; one per connector and worker keeps the connection count of
// the shared producer's design). A config change that changes the overrides
// gets a producer of its own, so tasks of the old and the new config never
// share one.
type ownProducers struct {
	mu sync.Mutex
	m  map[string]*ownProducer
}

type ownProducer struct {
	client   *kgo.Client
	security *kafkasec.Settings
	refs     int
	// stale says a topic it produced to was deleted and recreated
	// (ADR 0031), or deleted (ADR 0032): it is out of the map, and its last
	// release closes it.
	stale  atomic.Bool
	topics producedTopics
}

// producer is a client a task produces with, and the security it was made
// with, which tells its authentication failures (Settings.AuthFailure).
// recreated, when not nil, is called with a topic the client refused with
// UNKNOWN_TOPIC_ID (recreatedTopic); stale, when not nil, says that tasks
// should no longer produce with the client (recreatedTopic, heldProducer);
// topics, when not nil, are the topics the client's tasks produce to, and
// check makes the client stale if one of them was deleted (ADR 0032).
type producer struct {
	*kgo.Client
	security  *kafkasec.Settings
	recreated func(topic string)
	stale     func() bool
	topics    *producedTopics
	check     func(ctx context.Context)
}

// noteTopic tells the runtime that the task is about to produce to topic.
func (p producer) noteTopic(topic string) {
	if p.topics != nil {
		p.topics.note(topic)
	}
}

// checkTopics makes the producer stale if a topic it produced to was
// deleted: a task checks when it starts, before its first record, as
// franz-go's client delays the first record to a topic new to it by up to
// 250 ms while another topic it knows fails each metadata refresh.
func (p producer) checkTopics(ctx context.Context) {
	if p.check != nil {
		p.check(ctx)
	}
}

// producedTopics are the topics the tasks of one client said they produce
// to (producer.note): the topics franz-go asks the brokers about at each
// of the client's metadata refreshes.
type producedTopics struct {
	mu     sync.Mutex
	topics map[string]struct{}
	// checking holds a token while a check is under way (made on first
	// use, under mu); checked, touched only by the token's holder, is when
	// the last check began.
	checking chan struct{}
	checked  time.Time
}

func (t *producedTopics) note(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.topics == nil {
		t.topics = map[string]struct{}{}
	}
	t.topics[topic] = struct{}{}
}

// take returns the topics and forgets them.
func (t *producedTopics) take() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	topics := slices.Collect(maps.Keys(t.topics))
	t.topics = nil
	return topics
}

// deleted returns one of the topics that the brokers say does not exist,
// asking with cl, or "" if there is none, they could not be asked, or a
// check that began after asked already ran (tasks starting together ask
// once; what the check found was acted on).
func (t *producedTopics) deleted(ctx context.Context, cl *kgo.Client, asked time.Time) string {
	t.mu.Lock()
	if t.checking == nil {
		t.checking = make(chan struct{}, 1)
	}
	checking := t.checking
	t.mu.Unlock()
	select {
	case checking <- struct{}{}:
	case <-ctx.Done(): // a task stopping while another's check waits
		return ""
	}
	defer func() { <-checking }()
	if t.checked.After(asked) {
		return ""
	}
	t.checked = time.Now()
	t.mu.Lock()
	topics := slices.Collect(maps.Keys(t.topics))
	t.mu.Unlock()
	return deletedTopic(ctx, cl, topics)
}

// heldProducer is the producer a task produces with and the release of
// it. A task moves to the current one (producerFor) at a moment it has
// nothing in flight once its own is stale, so that a worker whose tasks
// run for long does not keep a client for each topic recreation it met.
type heldProducer struct {
	producer
	release func()
}

// isStale says the task should move (renew).
func (h *heldProducer) isStale() bool { return h.stale != nil && h.stale() }

// renew takes the current producer of connector in place of the held one,
// which it releases. The caller has nothing in flight with the held one.
func (h *heldProducer) renew(r *Runtime, connector, clientID string, o connconfig.ProducerOverrides) error {
	p, release, err := r.producerFor(connector, clientID, o)
	if err != nil {
		return err
	}
	old := h.release
	h.producer, h.release = p, release
	old()
	return nil
}

// recreatedTopic reports whether err says that topic was deleted and
// recreated while the client produced to it, and if so has the runtime
// renew the client (producer.recreated) and explains err. franz-go keeps
// producing to the first instance of a topic it knows (by topic ID) and
// fails every record for a new one with UNKNOWN_TOPIC_ID until the topic
// is purged from the client; a purge would start the partitions'
// idempotent sequence numbers again under the same producer ID, which a
// broker that already took records of it for the new instance can take
// for duplicates and drop. A task that meets it fails instead, whatever
// errors.tolerance says (its records were not refused, the client can no
// longer send them), and starts again with a client that never produced
// to the topic: a new producer ID. Connect's producers are per task and
// follow the new instance (KIP-516).
func recreatedTopic(p producer, topic string, err error) (bool, error) {
	if !errors.Is(err, kerr.UnknownTopicID) {
		return false, err
	}
	if p.recreated != nil {
		p.recreated(topic)
	}
	return true, fmt.Errorf("%w: topic %q was deleted and recreated while this worker produced to it; "+
		"the task starts again with a new producer", err, topic)
}

// sharedProducers are the generations of the producer that the tasks
// without producer overrides share: the worker's (Options.Producer), then
// a client of the same settings made each time one of them produced to a
// topic that was deleted and recreated (renewShared, ADR 0031), or a topic
// it produced to was deleted (dropDeletedTopics, ADR 0032). A task produces
// with the generation it took until it has nothing in flight with it, so
// its records keep their order; it then moves to the current one
// (heldProducer). A generation the runtime made is closed once it is stale
// and its last task released it; the worker's stays the worker's to close
// (it also fences exactly-once tasks' transactional IDs), and forgets the
// topics it produced to instead.
type sharedProducers struct {
	mu      sync.Mutex
	current *sharedProducer
	// made are the generations the runtime made and has not closed.
	made   map[*sharedProducer]struct{}
	closed bool
}

type sharedProducer struct {
	client *kgo.Client
	refs   int
	stale  atomic.Bool
	topics producedTopics
}

// takeShared returns the current generation for a task, and its release.
func (r *Runtime) takeShared(security *kafkasec.Settings) (producer, func()) {
	s := &r.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		s.current = &sharedProducer{client: r.opts.Producer}
	}
	g := s.current
	g.refs++
	release := sync.OnceFunc(func() {
		s.mu.Lock()
		g.refs--
		done := s.left(g)
		s.mu.Unlock()
		done()
	})
	renew := func(topic string) { r.renewShared(g, security, topic, topicRecreated) }
	return producer{g.client, security, renew, g.stale.Load, &g.topics, func(ctx context.Context) { r.checkShared(ctx, g, time.Now()) }}, release
}

// left is called with s.mu held when a task leaves generation g or g
// becomes stale. Once g is stale and no task holds it, it returns what
// becomes of it, to be done after s.mu is released: a generation the
// runtime made is closed; the worker's forgets the topics it produced to,
// since no task produces with it again (their sequence numbers no longer
// matter), and a deleted one would otherwise be asked about every second.
func (s *sharedProducers) left(g *sharedProducer) (done func()) {
	if g.refs > 0 || !g.stale.Load() || s.closed {
		return func() {}
	}
	if _, made := s.made[g]; made {
		delete(s.made, g)
		return g.client.Close
	}
	forget := g.topics.take()
	return func() {
		if len(forget) > 0 {
			g.client.PurgeTopicsFromProducing(forget...)
		}
	}
}

// Why a generation of the shared producer is renewed.
const (
	topicRecreated = "recreated" // ADR 0031
	topicDeleted   = "deleted"   // ADR 0032
)

// renewShared makes a new generation of the shared producer if g is still
// the current one (the first of its tasks to meet a recreated topic asks;
// the others find it done).
func (r *Runtime) renewShared(g *sharedProducer, security *kafkasec.Settings, topic, why string) {
	s := &r.shared
	s.mu.Lock()
	done := func() {}
	defer func() {
		s.mu.Unlock()
		done()
	}()
	if s.current != g || s.closed {
		return
	}
	opts := append(r.clientOpts(security), ProducerOpts()...)
	opts = append(append(opts, kgo.ClientID("sluice-"+r.opts.WorkerID)), r.opts.Worker.Clients.Producer.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		r.opts.Log.Error().Err(err).Str("topic", topic).Msg("cannot make a new shared producer after a topic was recreated; tasks that produce to it keep failing")
		return
	}
	g.stale.Store(true)
	s.current = &sharedProducer{client: cl}
	if s.made == nil {
		s.made = map[*sharedProducer]struct{}{}
	}
	s.made[s.current] = struct{}{}
	// No task may hold g any more (a deleted topic's last connector
	// stopped): no release will come to retire it.
	done = s.left(g)
	if why == topicDeleted {
		r.opts.Log.Info().Str("topic", topic).Msg("a topic the shared producer wrote to was deleted: tasks move to a new producer, each once it has no record in flight, so that the old one stops asking about the topic")
		return
	}
	r.opts.Log.Warn().Str("topic", topic).Msg("a topic the shared producer wrote to was deleted and recreated: tasks move to a new producer, each once it has no record in flight")
}

// DefaultTopicCheckInterval is how often the runtime looks for deleted
// topics among those of the shared producer (dropDeletedTopics).
const DefaultTopicCheckInterval = 30 * time.Second

// watchDeletedTopics runs dropDeletedTopics every interval until ctx ends.
func (r *Runtime) watchDeletedTopics(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.dropDeletedTopics(ctx)
	}
}

// dropDeletedTopics renews a producer when a topic it produced to no
// longer exists (ADR 0032): the shared producer's current generation, and
// the connectors' own producers. franz-go asks the brokers about every
// topic a client ever produced to at each metadata refresh, for the
// client's life: a deleted one fails each refresh, and franz-go then
// refreshes again within a second, for as long as the client lives (the
// producer no longer lets those requests create topics, which brought the
// topic back). Purging the topic from the client would start its sequence
// numbers again under the same producer ID, which a topic of that name
// created again later could take for duplicates; a new client has a new
// producer ID. It costs each producer with topics one metadata request per
// interval.
func (r *Runtime) dropDeletedTopics(ctx context.Context) {
	asked := time.Now()
	s := &r.shared
	s.mu.Lock()
	g := s.current
	s.mu.Unlock()
	if g != nil {
		r.checkShared(ctx, g, asked)
	}
	type own struct {
		key string
		p   *ownProducer
	}
	var owns []own
	p := &r.producers
	p.mu.Lock()
	for key, o := range p.m {
		owns = append(owns, own{key, o})
	}
	p.mu.Unlock()
	for _, o := range owns {
		r.checkOwn(ctx, o.key, o.p, asked)
	}
}

// checkOwn retires a connector's own producer if a topic it produced to no
// longer exists.
func (r *Runtime) checkOwn(ctx context.Context, key string, own *ownProducer, asked time.Time) {
	if t := own.topics.deleted(ctx, own.client, asked); t != "" {
		r.retireOwn(key, own, t, topicDeleted)
	}
}

// checkShared renews the shared producer if a topic generation g produced
// to no longer exists.
func (r *Runtime) checkShared(ctx context.Context, g *sharedProducer, asked time.Time) {
	if t := g.topics.deleted(ctx, g.client, asked); t != "" {
		r.renewShared(g, r.security(kafkasec.Producer, nil), t, topicDeleted)
	}
}

// metadataRequest asks about topics, without letting the broker create
// them unless the caller says so (AllowAutoTopicCreation).
func metadataRequest(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// deletedTopic returns one of topics that the brokers say does not exist,
// asking with cl, or "" if there is none or they could not be asked. The
// request is sent as it is: kadm's lookups answer from a cache of up to 5
// s, which can still hold a topic's absence from before it was created.
func deletedTopic(ctx context.Context, cl *kgo.Client, topics []string) string {
	if len(topics) == 0 {
		return ""
	}
	req := metadataRequest(topics...)
	// A task's start waits for it: a broker that does not answer soon is
	// asked again at the next interval.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		return ""
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == kerr.UnknownTopicOrPartition.Code {
			return *t.Topic
		}
	}
	return ""
}

// closeAll closes every generation the runtime made and has not closed,
// stale ones that a task still running past the runtime's stop holds
// included: no client outlives the runtime.
func (s *sharedProducers) closeAll() {
	s.mu.Lock()
	s.closed = true
	made := s.made
	s.made = nil
	s.mu.Unlock()
	for g := range made {
		g.client.Close()
	}
}

// producerFor returns the producer a task of connector produces with, and
// the function that releases it, which the task calls once it no longer
// produces (after its drain). clientID is the producer's client.id unless
// the overrides set one.
func (r *Runtime) producerFor(connector, clientID string, o connconfig.ProducerOverrides) (producer, func(), error) {
	if !o.Set() {
		p, release := r.takeShared(r.security(kafkasec.Producer, nil))
		return p, release, nil
	}
	key := connector + "\x00" + clientID + "\x00" + o.Canonical()
	p := &r.producers
	p.mu.Lock()
	defer p.mu.Unlock()
	own := p.m[key]
	if own == nil {
		security := r.security(kafkasec.Producer, o.Security)
		opts := append(r.clientOpts(security), ProducerOpts()...)
		// The worker's producer.* keys, then the connector's overrides.
		opts = append(append(opts, kgo.ClientID(clientID)), r.opts.Worker.Clients.Producer.Opts...)
		cl, err := kgo.NewClient(append(opts, o.Opts...)...)
		if err != nil {
			return producer{}, nil, fmt.Errorf("%s*: %w", connconfig.ProducerOverridePrefix, err)
		}
		if p.m == nil {
			p.m = map[string]*ownProducer{}
		}
		own = &ownProducer{client: cl, security: security}
		p.m[key] = own
		r.opts.Log.Info().Str("connector", connector).Str("client_id", clientID).Msg("made the connector's own producer (producer overrides)")
	}
	own.refs++
	release := sync.OnceFunc(func() {
		p.mu.Lock()
		own.refs--
		// closeAll may have closed it already (unless it was stale,
		// and out of the map).
		last := own.refs == 0 && (p.m[key] == own || own.stale.Load())
		if last && p.m[key] == own {
			delete(p.m, key)
		}
		p.mu.Unlock()
		if last {
			// Records still buffered fail with ErrClientClosed: their
			// offsets are never committed (invariant 1).
			own.client.Close()
		}
	})
	recreated := func(topic string) { r.retireOwn(key, own, topic, topicRecreated) }
	check := func(ctx context.Context) { r.checkOwn(ctx, key, own, time.Now()) }
	return producer{own.client, own.security, recreated, own.stale.Load, &own.topics, check}, release, nil
}

// retireOwn takes a connector's own producer out of the map, stale, when a
// topic it produced to was recreated or deleted: the next task of the
// connector to ask makes a new one, and the old one's last release closes
// it.
func (r *Runtime) retireOwn(key string, own *ownProducer, topic, why string) {
	p := &r.producers
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[key] != own {
		return
	}
	delete(p.m, key)
	own.stale.Store(true)
	connector, _, _ := strings.Cut(key, "\x00")
	if why == topicDeleted {
		r.opts.Log.Info().Str("connector", connector).Str("topic", topic).
			Msg("a topic the connector's producer wrote to was deleted: its tasks move to a new producer, each once it has no record in flight")
		return
	}
	r.opts.Log.Warn().Str("connector", connector).Str("topic", topic).
		Msg("a topic the connector's producer wrote to was deleted and recreated: its tasks move to a new producer, each once it has no record in flight")
}

// security is the TLS and SASL of a client of kind: the connector's
// security overrides if it has any (overridden), else the worker's.
func (r *Runtime) security(kind string, overridden *kafkasec.Settings) *kafkasec.Settings {
	switch {
	case overridden != nil:
		return overridden
	case r.opts.Security[kind] != nil:
		return r.opts.Security[kind]
	}
	return &kafkasec.Settings{Protocol: "PLAINTEXT"}
}

// clientOpts are the options every client starts from: the worker's Kafka
// options, then its security.
func (r *Runtime) clientOpts(security *kafkasec.Settings) []kgo.Opt {
	return append(append([]kgo.Opt{}, r.opts.KafkaOpts...), security.Options()...)
}

// closeAll closes every producer still open.
func (p *ownProducers) closeAll() {
	p.mu.Lock()
	m := p.m
	p.m = nil
	p.mu.Unlock()
	for _, own := range m {
		own.client.Close()
	}
}

// adminFor returns the admin client a task creates topics with, and the
// function that closes it: the worker's, or with admin overrides
// (admin.override.*) one of the task's own, as Connect makes one per task.
// It returns nil when the runtime has no admin client at all.
func (r *taskRun) adminFor(o connconfig.AdminOverrides) (*kadm.Client, func(), error) {
	if r.rt.opts.Admin == nil || !o.Set() {
		return r.rt.opts.Admin, func() {}, nil
	}
	id := fmt.Sprintf("connector-adminclient-%s-%d", r.id.Connector, r.id.Task)
	opts := append(r.rt.clientOpts(r.rt.security(kafkasec.Admin, o.Security)), kgo.ClientID(id))
	opts = append(opts, r.rt.opts.Worker.Clients.Admin.Opts...)
	cl, err := kgo.NewClient(append(opts, o.Opts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("%s*: %w", connconfig.AdminOverridePrefix, err)
	}
	adm := kadm.NewClient(cl)
	if o.RequestTimeout > 0 {
		adm.SetTimeoutMillis(o.RequestTimeout)
	}
	return adm, cl.Close, nil
}
