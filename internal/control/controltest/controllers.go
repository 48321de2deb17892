package controltest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/loglevel"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/twmb/franz-go/pkg/kadm"
)

// The Controllers below each add one backend to the plain one NewEnv
// builds, wired as a worker wires it.

// TopicsController is a Controller over e's logs whose topic tracking is
// e's status log, configured with tracking like a worker's.
func (e *Env) TopicsController(t testing.TB, tracking state.TopicTracking) *control.Controller {
	t.Helper()
	e.Statuses.SetTopicTracking(tracking)
	return newController(t, control.Options{
		Configs: e.Configs, Statuses: e.Statuses, Plugins: Registry(),
		WorkerID: "w1:8083", Ready: e.Ready.Get, WriteTimeout: 10 * time.Second,
		Topics: e.Statuses,
	})
}

// LoggersBackend is a worker's log level registry over the real config
// log, with the cluster-wide writes recorded and optionally failing.
type LoggersBackend struct {
	*loglevel.Registry
	configs *state.ConfigLog

	mu     sync.Mutex
	writes []state.LoggerLevel
	fail   error
}

// PutLoggerLevel records the write and, unless SetFail says otherwise,
// writes the level to the config topic.
func (b *LoggersBackend) PutLoggerLevel(ctx context.Context, namespace, level string) error {
	b.mu.Lock()
	b.writes = append(b.writes, state.LoggerLevel{Namespace: namespace, Level: level})
	fail := b.fail
	b.mu.Unlock()
	if fail != nil {
		return fail
	}
	return b.configs.PutLoggerLevel(ctx, namespace, level)
}

// Written returns the cluster-wide writes so far, failed ones included.
func (b *LoggersBackend) Written() []state.LoggerLevel {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]state.LoggerLevel(nil), b.writes...)
}

// SetFail makes every later cluster-wide write fail with err (nil:
// succeed).
func (b *LoggersBackend) SetFail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail = err
}

// LoggersController is a Controller over e's logs whose loggers are reg's,
// behind a LoggersBackend. As a worker does, every level read from the
// config topic is applied to reg.
func (e *Env) LoggersController(t testing.TB, reg *loglevel.Registry) (*control.Controller, *LoggersBackend) {
	t.Helper()
	b := &LoggersBackend{Registry: reg, configs: e.Configs.ConfigLog}
	e.Configs.OnLoggerLevel(func(l state.LoggerLevel) {
		if lvl, err := loglevel.ParseLevel(l.Level); err == nil {
			reg.Set(l.Namespace, lvl)
		}
	})
	return newController(t, control.Options{
		Configs: e.Configs, Statuses: e.Statuses, Plugins: Registry(),
		Ready: e.Ready.Get, WriteTimeout: 10 * time.Second, Loggers: b,
	}), b
}

// OffsetsController is a Controller with the real offsets backend over a
// worker's config, status and offset stores (storetest.Start's) and an
// admin client of their broker; each of with may change its options.
func OffsetsController(t testing.TB, configs *state.ConfigLog, statuses *state.StatusLog, store *offsets.SourceStore, adm *kadm.Client, with ...func(*control.Options)) *control.Controller {
	t.Helper()
	o := control.Options{
		Configs: configs, Statuses: statuses, Plugins: Registry(),
		Offsets:      offsets.NewConnectorOffsets(store, nil, adm),
		WriteTimeout: 15 * time.Second,
	}
	for _, f := range with {
		f(&o)
	}
	return newController(t, o)
}

func newController(t testing.TB, o control.Options) *control.Controller {
	t.Helper()
	c, err := control.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
