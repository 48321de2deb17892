package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// loggerClusterPrefix keys a cluster-wide log level in the config topic:
// logger-cluster-<namespace> -> {"level":"DEBUG"}, as Connect writes it for
// PUT /admin/loggers/<namespace>?scope=cluster (KIP-976).
const loggerClusterPrefix = "logger-cluster-"

// LoggerLevel is a cluster-wide log level read from the config topic. Level
// is as written; the reader validates it.
type LoggerLevel struct {
	Namespace string
	Level     string
}

// loggerLevels passes the logger-cluster records that applyLocked reads
// (under ConfigLog.mu) on to the handler after that lock is released, so
// that the handler runs no foreign code under the snapshot's lock.
type loggerLevels struct {
	mu      sync.Mutex
	handler func(LoggerLevel)
	pending []LoggerLevel
}

// OnLoggerLevel makes f receive every cluster-wide log level read after
// Start began, in the order written; call it before Start. f runs on the
// goroutine that reads the topic, before a write of the level returns, so
// it must be quick and must not call the ConfigLog.
//
// As in Connect, levels written before this worker started are not
// applied: run-time levels are temporary, and a compacted topic would keep
// an old DEBUG overriding a restarted worker's configured level forever.
func (c *ConfigLog) OnLoggerLevel(f func(LoggerLevel)) {
	c.loggers.mu.Lock()
	defer c.loggers.mu.Unlock()
	c.loggers.handler = f
}

// PutLoggerLevel writes logger-cluster-<namespace> -> {"level":level}; every
// worker, this one included, applies it when it reads it back.
func (c *ConfigLog) PutLoggerLevel(ctx context.Context, namespace, level string) error {
	if namespace == "" {
		return errors.New("cluster-wide log level without a logger namespace")
	}
	v, err := json.Marshal(map[string]string{"level": level})
	if err != nil {
		return err
	}
	return c.write(ctx, fmt.Sprintf("log level %s of logger namespace %q", level, namespace),
		&kgo.Record{Key: []byte(loggerClusterPrefix + namespace), Value: v})
}

// loggerLevelLocked reads a logger-cluster-<namespace> record and queues it
// for the handler if it was written after Start began.
func (c *ConfigLog) loggerLevelLocked(r *kgo.Record, namespace string) error {
	if r.Value == nil {
		return errors.New("cluster-wide log level tombstone")
	}
	var v struct {
		Level *string `json:"level"`
	}
	if err := json.Unmarshal(r.Value, &v); err != nil {
		return fmt.Errorf("cluster-wide log level value: %w", err)
	}
	if v.Level == nil {
		return errors.New(`cluster-wide log level value has no "level"`)
	}
	if from, known := c.newFrom[r.Partition]; !known || r.Offset < from {
		c.log.Trace().Str("namespace", namespace).Str("log_level", *v.Level).
			Msg("ignoring a cluster-wide log level written before this worker started")
		return nil
	}
	c.loggers.mu.Lock()
	c.loggers.pending = append(c.loggers.pending, LoggerLevel{Namespace: namespace, Level: *v.Level})
	c.loggers.mu.Unlock()
	return nil
}

// deliver hands the queued levels to the handler; apply calls it after
// releasing ConfigLog.mu, on the one goroutine that applies records, so
// they arrive in order.
func (l *loggerLevels) deliver() {
	l.mu.Lock()
	pending, f := l.pending, l.handler
	l.pending = nil
	l.mu.Unlock()
	if f == nil {
		return
	}
	for _, lv := range pending {
		f(lv)
	}
}
