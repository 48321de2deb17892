package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluice-io/sluice/connectors"
)

// SinkClass is the class name of Confluent's JDBC sink, so that a Connect
// config for it runs on Sluice unchanged.
const SinkClass = "io.confluent.connect.jdbc.JdbcSinkConnector"

// sinkValidateConnTimeout bounds the connection check of ValidateConfig, which
// runs while a user waits for the answer to a create request.
const sinkValidateConnTimeout = 10 * time.Second

// SinkPlugin describes the JDBC sink for PostgreSQL. Its names are the
// class, JdbcSinkConnector, JdbcSink and PostgresSink.
func SinkPlugin() connectors.Plugin {
	return connectors.Plugin{
		Class:   SinkClass,
		Aliases: []string{"PostgresSink"},
		Type:    connectors.Sink,
		Version: sinkVersion,
		New:     func() connectors.Connector { return &JdbcSinkConnector{} },
	}
}

const sinkVersion = "1.0.0"

// JdbcSinkConnector writes topics into PostgreSQL tables. Every task gets the
// connector's config: the runtime spreads the topics' partitions over the
// tasks through the consumer group.
type JdbcSinkConnector struct {
	config map[string]string
}

var (
	_ connectors.SinkConnector   = (*JdbcSinkConnector)(nil)
	_ connectors.ConfigValidator = (*JdbcSinkConnector)(nil)
	_ connectors.SinkTask        = (*SinkTask)(nil)
)

func (c *JdbcSinkConnector) Config() *connectors.ConfigDef { return SinkConfigDef() }

func (c *JdbcSinkConnector) Start(_ context.Context, _ connectors.ConnectorContext, config map[string]string) error {
	if _, err := parseSinkConfig(config); err != nil {
		return err
	}
	c.config = maps.Clone(config)
	return nil
}

// TaskConfigs returns maxTasks copies of the config, as Confluent's sink.
func (c *JdbcSinkConnector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	if c.config == nil {
		return nil, errors.New("postgres sink: task configs before start")
	}
	out := make([]map[string]string, max(maxTasks, 1))
	for i := range out {
		out[i] = maps.Clone(c.config)
	}
	return out, nil
}

func (c *JdbcSinkConnector) Stop() error { return nil }

func (c *JdbcSinkConnector) NewTask() connectors.SinkTask { return &SinkTask{} }

// ValidateConfig checks the relations between keys, then, when the config
// is otherwise valid, connects once so that a wrong URL, user or password
// is reported on its key before the connector is created.
func (c *JdbcSinkConnector) ValidateConfig(config map[string]string) map[string][]string {
	cfg, err := parseSinkConfig(config)
	if err != nil {
		var ce *connectors.ConfigError
		if errors.As(err, &ce) {
			return ce.Errors
		}
		return map[string][]string{ConnectionURLKey: {err.Error()}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), sinkValidateConnTimeout)
	defer cancel()
	one := cfg.conn
	one.Attempts = 1 // a user is waiting: report rather than retry
	conn, err := Connect(ctx, one)
	if err != nil {
		return map[string][]string{sinkConnErrorKey(err): {fmt.Sprintf("cannot connect to the database: %v", err)}}
	}
	cctx, ccancel := context.WithTimeout(context.Background(), sinkCloseTimeout)
	defer ccancel()
	_ = conn.Close(cctx)
	return nil
}

// sinkConnErrorKey names the key a connection error is about: the
// credentials for an authentication failure, else the URL.
func sinkConnErrorKey(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "28P01": // invalid_password
			return ConnectionPasswordKey
		case "28000": // invalid_authorization_specification (no such role, pg_hba)
			return ConnectionUserKey
		}
	}
	return ConnectionURLKey
}
