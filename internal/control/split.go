package control

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/configprovider"
	"github.com/sluice-io/sluice/internal/connconfig"
)

// splitTimeout bounds the leader's own run of a connector to split it: a
// connector that cannot start in time is split later by its assigned
// instance, as without this step.
const splitTimeout = 10 * time.Second

// split runs a connector once on the leader, as part of the write that
// creates or changes it: Start, TaskConfigs, Stop. Writing the task configs
// in the same batch as the connector's config means they travel through the
// config topic once per change and cause one rebalance, which places the
// connector and its tasks together. Without it, the connector would first be
// assigned alone, split on its worker, and cause a second rebalance for the
// tasks. The connector's assigned instance computes the same split and, as
// it equals the committed one, writes nothing (internal/actors supervisor).
//
// It returns nil when the connector cannot be split here (it failed to
// start, or took too long): then its assigned instance splits it, and the
// request does not fail for it, since the connector may well start on the
// worker it is assigned to.
func (c *Controller) split(ctx context.Context, p connectors.Plugin, cfg map[string]string) []map[string]string {
	log := c.o.Log.With().Str("connector", cfg[connconfig.Name]).Logger()
	raw := cfg
	cfg, err := c.o.Providers.Transform(raw)
	if err != nil {
		log.Info().Err(err).Msg("cannot resolve the connector's placeholders to split it on the leader; its assigned worker will")
		return nil
	}
	rt, err := connconfig.ParseRuntime(c.o.Worker, p.Type, cfg)
	if err != nil {
		return nil // validation refused it already
	}
	maxTasks := rt.TasksMax
	ctx, cancel := context.WithTimeout(ctx, splitTimeout)
	defer cancel()
	var tasks []map[string]string
	err = safelyErr(p.Class, "splitting into tasks", func() error {
		conn := p.New()
		cc := &splitContext{name: cfg[connconfig.Name], log: log}
		if err := conn.Start(ctx, cc, cfg); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		defer func() {
			if err := conn.Stop(); err != nil {
				log.Warn().Err(err).Msg("connector stop after splitting failed")
			}
		}()
		var err error
		if tasks, err = conn.TaskConfigs(ctx, maxTasks); err != nil {
			return fmt.Errorf("task configs: %w", err)
		}
		return cc.err()
	})
	if err != nil {
		log.Info().Err(err).Msg("could not split the connector on the leader; its assigned worker will")
		return nil
	}
	if len(tasks) > maxTasks {
		tasks = tasks[:maxTasks]
	}
	if tasks == nil {
		tasks = []map[string]string{}
	}
	// As the connector's own instance does: no resolved secret is stored.
	return configprovider.ReverseTransform(raw, tasks)
}

func safelyErr(class, doing string, f func() error) (err error) {
	if perr := safely(class, doing, func() { err = f() }); perr != nil {
		return perr
	}
	return err
}

// splitContext is the ConnectorContext of the leader's one-off run.
type splitContext struct {
	name   string
	log    zerolog.Logger
	mu     sync.Mutex // RaiseError may come from the connector's goroutines
	raised error
}

func (s *splitContext) Name() string                { return s.name }
func (s *splitContext) RequestTaskReconfiguration() {} // the assigned instance splits again
func (s *splitContext) RaiseError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raised = errors.Join(s.raised, err)
}

func (s *splitContext) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raised
}
func (s *splitContext) Logger() *zerolog.Logger { return &s.log }
