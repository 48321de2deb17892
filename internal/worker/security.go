package worker

import (
	"fmt"
	"maps"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/kafkasec"
)

// clientSecurity is the TLS and SASL of each kind of Kafka client the
// worker makes, from its security keys (kafkasec.ClientProps): its own
// clients take the unprefixed keys, its connectors' producers, consumers
// and admin clients the producer., consumer. and admin. keys over those.
type clientSecurity struct {
	own   *kafkasec.Settings
	kinds map[string]*kafkasec.Settings
	// adminDiffers is whether admin.* security keys give the connectors'
	// admin client other settings than the worker's own admin client.
	adminDiffers bool

	mu      sync.Mutex
	problem error // the latest authentication failure of the worker's own clients
}

func loadSecurity(props map[string]string) (*clientSecurity, error) {
	s := &clientSecurity{kinds: map[string]*kafkasec.Settings{}}
	var err error
	if s.own, err = kafkasec.Load(kafkasec.ClientProps(props, kafkasec.Worker)); err != nil {
		return nil, err
	}
	for _, kind := range kafkasec.ClientKinds {
		if s.kinds[kind], err = kafkasec.Load(kafkasec.ClientProps(props, kind)); err != nil {
			return nil, fmt.Errorf("the %s keys (%s.* over the unprefixed ones): %w", kind, kind, err)
		}
	}
	s.adminDiffers = !maps.Equal(kafkasec.ClientProps(props, kafkasec.Admin), kafkasec.ClientProps(props, kafkasec.Worker))
	return s, nil
}

// actorSecurity is the security of the clients the actors make, by kind.
func (s *clientSecurity) actorSecurity() map[string]*kafkasec.Settings { return s.kinds }

// observe records the outcome of a request of the worker's own clients:
// an authentication failure becomes the worker's Kafka problem (GET
// /health), a success clears it. It returns the failure, if err is one.
func (s *clientSecurity) observe(err error) error {
	authErr := s.own.AuthFailure(err)
	if authErr == nil && err != nil {
		return nil // another failure (an unreachable broker) leaves the state as it was
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problem = authErr
	return authErr
}

// Problem is the worker's current authentication failure, or nil.
func (s *clientSecurity) Problem() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.problem
}

// connectorAdmin returns the admin client the connectors use: the
// worker's own, unless admin.* keys (security ones, or settings) ask for
// another, which is then made with clientOpts and closed by the returned
// function.
func (s *clientSecurity) connectorAdmin(own *kadm.Client, settings connconfig.AdminOverrides, clientOpts []kgo.Opt) (*kadm.Client, func(), error) {
	if !s.adminDiffers && !settings.Set() {
		return own, func() {}, nil
	}
	opts := append(append(clientOpts, s.kinds[kafkasec.Admin].Options()...), settings.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("the connectors' admin client: %w", err)
	}
	adm := kadm.NewClient(cl)
	if settings.RequestTimeout > 0 {
		adm.SetTimeoutMillis(settings.RequestTimeout)
	}
	return adm, cl.Close, nil
}
