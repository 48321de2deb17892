package control_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/loglevel"
	"github.com/sluice-io/sluice/internal/state"
)

type loggersEnv struct {
	*controltest.Env
	C       *control.Controller
	backend *controltest.LoggersBackend
}

// loggersStart is the registry's clock: 2024-01-02T03:04:05Z.
var loggersStart = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func newLoggersEnv(t *testing.T) *loggersEnv {
	t.Helper()
	env := controltest.NewEnv(t)
	reg := loglevel.New(zerolog.Nop(), loglevel.Options{Root: zerolog.InfoLevel, Now: func() time.Time { return loggersStart }})
	c, b := env.LoggersController(t, reg)
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
	if len(e.backend.Written()) != 0 {
		t.Fatalf("worker scope wrote to the config topic: %v", e.backend.Written())
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
	if w := e.backend.Written(); len(w) != 0 {
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
	if w := e.backend.Written(); !reflect.DeepEqual(w, []state.LoggerLevel{{Namespace: "sluice.actors", Level: "DEBUG"}}) {
		t.Fatalf("written %v", w)
	}
	if l, err := e.C.Logger("sluice.actors"); err != nil || l.Level != "DEBUG" {
		t.Fatalf("after the cluster-wide write this worker has %+v, %v", l, err)
	}

	e.backend.SetFail(errors.New("broker gone"))
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
