package actors

import (
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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
}

// producer is a client a task produces with, and the security it was made
// with, which tells its authentication failures (Settings.AuthFailure).
type producer struct {
	*kgo.Client
	security *kafkasec.Settings
}

// producerFor returns the producer a task of connector produces with, and
// the function that releases it, which the task calls once it no longer
// produces (after its drain). clientID is the producer's client.id unless
// the overrides set one.
func (r *Runtime) producerFor(connector, clientID string, o connconfig.ProducerOverrides) (producer, func(), error) {
	if !o.Set() {
		return producer{r.opts.Producer, r.security(kafkasec.Producer, nil)}, func() {}, nil
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
		// closeAll may have closed it already.
		last := own.refs == 0 && p.m[key] == own
		if last {
			delete(p.m, key)
		}
		p.mu.Unlock()
		if last {
			// Records still buffered fail with ErrClientClosed: their
			// offsets are never committed (invariant 1).
			own.client.Close()
		}
	})
	return producer{own.client, own.security}, release, nil
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
