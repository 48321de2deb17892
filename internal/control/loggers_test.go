package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/loglevel"
	"github.com/sluice-io/sluice/internal/state"
)

// loggersBackend is a worker's registry over the real config log, as the
// worker wires them, with the cluster-wide writes recorded and optionally
// failing.
type loggersBackend struct {
	*loglevel.Registry
	configs *state.ConfigLog

	mu     sync.Mutex
	writes []state.LoggerLevel
	fail   error
}

func (b *loggersBackend) PutLoggerLevel(ctx context.Context, namespace, level string) error {
	b.mu.Lock()
	b.writes = append(b.writes, state.LoggerLevel{Namespace: namespace, Level: level})
	fail := b.fail
	b.mu.Unlock()
	if fail != nil {
		return fail
	}
	return b.configs.PutLoggerLevel(ctx, namespace, level)
}

func (b *loggersBackend) written() []state.LoggerLevel {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]state.LoggerLevel(nil), b.writes...)
}

type loggersEnv struct {
	*controltest.Env
	C       *control.Controller
	backend *loggersBackend
}

// loggersStart is the registry's clock: 2024-01-02T03:04:05Z.
var loggersStart = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func newLoggersEnv(t *testing.T) *loggersEnv {
	t.Helper()
	env := controltest.NewEnv(t)
	reg := loglevel.New(zerolog.Nop(), loglevel.Options{Root: zerolog.InfoLevel, Now: func() time.Time { return loggersStart }})
	b := &loggersBackend{Registry: reg, configs: env.Configs.ConfigLog}
	// As the worker does: every level read from the config topic is
	// applied to this worker's loggers.
	env.Configs.OnLoggerLevel(func(l state.LoggerLevel) {
		if lvl, err := loglevel.ParseLevel(l.Level); err == nil {
			reg.Set(l.Namespace, lvl)
		}
	})
	c, err := control.New(control.Options{
		Configs: env.Configs, Statuses: env.Statuses, Plugins: controltest.Registry(),
		Ready: env.Ready.Get, WriteTimeout: 10 * time.Second, Loggers: b,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &loggersEnv{Env: env, C: c, backend: b}
}

func ms(t time.Time) *int64 { v := t.UnixMilli(); return &v }

func TestLoggersWorkerScope(t *testing.T) {
	e := newLoggersEnv(t)
	e.backend.Logger("sluice.actors.source")
	e.backend.Logger("sluice.group")

	all := e.C.Loggers()
	if want := map[string]control.LoggerLevel{"root": {Level: "INFO"}}; !reflect.DeepEqual(all, want) {
		t.Fatalf("Loggers = %v; want only root", all)
	}
	b, _ := json.Marshal(all)
	if string(b) != `{"root":{"level":"INFO","last_modified":null}}` {
		t.Fatalf("JSON %s", b)
	}
	if l, err := e.C.Logger("sluice.group"); err != nil || l != (control.LoggerLevel{Level: "INFO"}) {
		t.Fatalf("Logger(sluice.group) = %+v, %v", l, err)
	}
	_, err := e.C.Logger("nope")
	if code(err) != http.StatusNotFound || err.Error() != "Logger nope not found." {
		t.Fatalf("unknown logger: %v (%d), want Connect's 404", err, code(err))
	}

	// Worker scope needs nothing from Kafka: it works while starting.
	e.Ready.Set(false)
	changed, err := e.C.SetLogger(ctx(t), "sluice.actors", "debug", "")
	if want := []string{"sluice.actors", "sluice.actors.source"}; err != nil || !reflect.DeepEqual(changed, want) {
		t.Fatalf("SetLogger = %v, %v; want %v", changed, err, want)
	}
	l, err := e.C.Logger("sluice.actors.source")
	if want := (control.LoggerLevel{Level: "DEBUG", LastModified: ms(loggersStart)}); err != nil || !reflect.DeepEqual(l, want) {
		t.Fatalf("Logger after set = %+v, %v", l, err)
	}
	all = e.C.Loggers()
	if len(all) != 3 || all["sluice.actors"].Level != "DEBUG" || all["root"].Level != "INFO" || all["sluice.group"].Level != "" {
		t.Fatalf("Loggers after set = %v", all)
	}

	// An unknown scope falls back to worker, as in Connect.
	changed, err = e.C.SetLogger(ctx(t), "ROOT", "Warn", "everywhere")
	if want := []string{"root", "sluice.actors", "sluice.actors.source", "sluice.group"}; err != nil || !reflect.DeepEqual(changed, want) {
		t.Fatalf("SetLogger(root, scope=everywhere) = %v, %v; want %v", changed, err, want)
	}
	if len(e.backend.written()) != 0 {
		t.Fatalf("worker scope wrote to the config topic: %v", e.backend.written())
	}
}

func TestLoggersBadRequests(t *testing.T) {
	e := newLoggersEnv(t)
	// An unknown level is Connect's 404 (its LoggingResource throws
	// NotFoundException); a missing one is 400.
	for _, tc := range []struct {
		name, level, scope, want string
		code                     int
	}{
		{"x", "", "worker", "'level'", http.StatusBadRequest},
		{"x", "  ", "cluster", "'level'", http.StatusBadRequest},
		{"x", "LOUD", "worker", `invalid log level 'LOUD' in field "level"`, http.StatusNotFound},
		{"x", "warning", "cluster", `invalid log level 'warning' in field "level"`, http.StatusNotFound},
		{"", "INFO", "worker", "name", http.StatusBadRequest},
	} {
		_, err := e.C.SetLogger(ctx(t), tc.name, tc.level, tc.scope)
		if code(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetLogger(%q, %q, %q) = %v (%d); want %d mentioning %s", tc.name, tc.level, tc.scope, err, code(err), tc.code, tc.want)
		}
	}
	if all := e.C.Loggers(); len(all) != 1 {
		t.Fatalf("a refused request changed levels: %v", all)
	}
	if w := e.backend.written(); len(w) != 0 {
		t.Fatalf("a refused request was written: %v", w)
	}
}

// Cluster scope goes through the config topic; this worker, like every
// other, applies the level when it reads the record back, before the write
// returns.
func TestLoggersClusterScope(t *testing.T) {
	e := newLoggersEnv(t)
	changed, err := e.C.SetLogger(ctx(t), "sluice.actors", "debug", "Cluster")
	if err != nil || changed != nil {
		t.Fatalf("SetLogger(cluster) = %v, %v; want nil, nil (204)", changed, err)
	}
	if w := e.backend.written(); !reflect.DeepEqual(w, []state.LoggerLevel{{Namespace: "sluice.actors", Level: "DEBUG"}}) {
		t.Fatalf("written %v", w)
	}
	if l, err := e.C.Logger("sluice.actors"); err != nil || l.Level != "DEBUG" {
		t.Fatalf("after the cluster-wide write this worker has %+v, %v", l, err)
	}

	e.backend.mu.Lock()
	e.backend.fail = errors.New("broker gone")
	e.backend.mu.Unlock()
	_, err = e.C.SetLogger(ctx(t), "sluice.actors", "INFO", "cluster")
	if code(err) != http.StatusInternalServerError || !strings.Contains(err.Error(), "broker gone") {
		t.Fatalf("failed write: %v (%d)", err, code(err))
	}

	e.Ready.Set(false)
	if _, err := e.C.SetLogger(ctx(t), "sluice.actors", "INFO", "cluster"); code(err) != http.StatusServiceUnavailable {
		t.Fatalf("cluster scope while starting: %v (%d), want 503", err, code(err))
	}
}

func TestLoggersWithoutBackend(t *testing.T) {
	e := controltest.NewEnv(t)
	if all := e.C.Loggers(); all == nil || len(all) != 0 {
		t.Fatalf("Loggers without a backend: %#v, want none", all)
	}
	if _, err := e.C.Logger("root"); code(err) != http.StatusNotImplemented {
		t.Fatalf("Logger without a backend: %v", err)
	}
	if _, err := e.C.SetLogger(ctx(t), "x", "INFO", ""); code(err) != http.StatusNotImplemented {
		t.Fatalf("SetLogger without a backend: %v", err)
	}
}
