package control

import (
	"context"
	"net/http"
	"strings"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/loglevel"
)

// LoggersBackend is what the log-level endpoints need: this worker's
// loggers (*loglevel.Registry) and the writer of cluster-wide levels to
// the config topic (*state.ConfigLog).
type LoggersBackend interface {
	Levels() map[string]loglevel.Setting
	Level(name string) (loglevel.Setting, bool)
	Set(namespace string, level zerolog.Level) []string
	PutLoggerLevel(ctx context.Context, namespace, level string) error
}

// LoggerLevel is Connect's view of a logger: its level and when it was
// last changed at run time, in ms since the epoch (null: never).
type LoggerLevel struct {
	Level        string `json:"level"`
	LastModified *int64 `json:"last_modified"`
}

// Scopes of a level change (?scope=, KIP-976).
const (
	ScopeWorker  = "worker"
	ScopeCluster = "cluster"
)

// ParseLoggerScope reads ?scope= as Connect does: worker (also when
// empty) or cluster, in any case; anything else falls back to worker, with
// ok false so that the caller can warn as Connect does.
func ParseLoggerScope(s string) (scope string, ok bool) {
	switch strings.ToLower(s) {
	case "", ScopeWorker:
		return ScopeWorker, true
	case ScopeCluster:
		return ScopeCluster, true
	}
	return ScopeWorker, false
}

func loggerLevel(s loglevel.Setting) LoggerLevel {
	out := LoggerLevel{Level: loglevel.LevelName(s.Level)}
	if !s.LastModified.IsZero() {
		ms := s.LastModified.UnixMilli()
		out.LastModified = &ms
	}
	return out
}

func (c *Controller) loggers() (LoggersBackend, error) {
	if c.o.Loggers == nil {
		return nil, errorf(http.StatusNotImplemented, "Log levels cannot be read or changed on this worker")
	}
	return c.o.Loggers, nil
}

// Loggers answers GET /admin/loggers: the root logger and every logger
// whose level was set explicitly; none without a backend. Like the other
// log-level requests it works while the worker is starting, when debugging
// its start may be what is wanted.
func (c *Controller) Loggers() map[string]LoggerLevel {
	out := map[string]LoggerLevel{}
	if c.o.Loggers == nil {
		return out
	}
	for name, s := range c.o.Loggers.Levels() {
		out[name] = loggerLevel(s)
	}
	return out
}

// Logger answers GET /admin/loggers/{name}: a known logger's effective
// level; 404 with Connect's message for a name no logger has.
func (c *Controller) Logger(name string) (LoggerLevel, error) {
	b, err := c.loggers()
	if err != nil {
		return LoggerLevel{}, err
	}
	s, ok := b.Level(name)
	if !ok {
		return LoggerLevel{}, errorf(http.StatusNotFound, "Logger %s not found.", name)
	}
	return loggerLevel(s), nil
}

// SetLogger answers PUT /admin/loggers/{name}. Scope worker sets the level
// of name and its descendants on this worker at once and returns their
// names. Scope cluster writes logger-cluster-<name> to the config topic,
// which every worker applies when it reads it (Connect answers 204 without
// waiting for them); changed is then nil. An unknown scope is worker, as in
// Connect. A bad level is refused before anything changes.
func (c *Controller) SetLogger(ctx context.Context, name, level, scope string) (changed []string, err error) {
	b, err := c.loggers()
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, errorf(http.StatusBadRequest, "Logger name must not be empty")
	}
	if strings.TrimSpace(level) == "" {
		return nil, errorf(http.StatusBadRequest, "Desired 'level' parameter was not specified in request.")
	}
	lvl, err := loglevel.ParseLevel(level)
	if err != nil {
		// Connect answers 404 here; a bad field is a bad request
		// (invariant 7), and the message keeps Connect's words.
		// 404, not 400: Connect's LoggingResource answers an unknown level
		// with its NotFoundException, and clients may rely on the code.
		return nil, errorf(http.StatusNotFound, "invalid log level '%s' in field \"level\": valid levels are %s (any case).", level, loglevel.LevelNames)
	}
	if s, _ := ParseLoggerScope(scope); s == ScopeCluster {
		wctx, done, err := c.begin(ctx)
		if err != nil {
			return nil, err
		}
		defer done()
		if err := b.PutLoggerLevel(wctx, name, loglevel.LevelName(lvl)); err != nil {
			return nil, storeError("writing the cluster-wide log level of "+name+" to the config topic", err)
		}
		return nil, nil
	}
	changed = b.Set(name, lvl)
	if changed == nil {
		changed = []string{}
	}
	return changed, nil
}
