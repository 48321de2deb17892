// Package postgrescdc is a port of Debezium's PostgreSQL connector
// (io.debezium.connector.postgresql.PostgresConnector): change data
// capture over logical replication with pgoutput, with Debezium's keys,
// change event format, topics and source offsets, so that Debezium
// configurations and the consumers of its topics work unchanged.
//
// The one task snapshots the captured tables in the snapshot a new
// replication slot exports, then streams the slot from the point the
// snapshot saw, so nothing is missed or repeated between the two. The
// slot's confirmed position advances only once the offsets of the
// records before it are stored (Task.Commit).
package postgrescdc

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// Class is Debezium's connector class.
const Class = "io.debezium.connector.postgresql.PostgresConnector"

// Plugin describes the connector for the registry.
func Plugin() connectors.Plugin {
	return connectors.Plugin{
		Class:   Class,
		Aliases: []string{"PostgresCdc", "DebeziumPostgres"},
		Type:    connectors.Source,
		Version: DebeziumVersion,
		New:     func() connectors.Connector { return &Connector{} },
	}
}

// Connector hands its config to its one task, as Debezium's does.
type Connector struct {
	config map[string]string
}

func (c *Connector) Config() *connectors.ConfigDef { return ConfigDef() }

func (c *Connector) NewTask() connectors.SourceTask { return &Task{} }

func (c *Connector) Start(_ context.Context, _ connectors.ConnectorContext, config map[string]string) error {
	if _, err := parseSettings(config); err != nil {
		return err
	}
	c.config = maps.Clone(config)
	return nil
}

// TaskConfigs returns one task: a replication slot has one reader.
func (c *Connector) TaskConfigs(context.Context, int) ([]map[string]string, error) {
	return []map[string]string{maps.Clone(c.config)}, nil
}

func (c *Connector) Stop() error { return nil }

// ExactlyOnceSupport says yes, as Debezium 3.6.1's PostgresConnector does
// (SUPPORTED, whatever the config): an offset names a position in the WAL
// exactly (lsn_commit, lsn and the message type), so a task resumed from
// the offsets committed with its records re-reads exactly the changes
// after them, and the slot is confirmed only once those offsets are
// committed.
func (c *Connector) ExactlyOnceSupport(map[string]string) bool { return true }

// CanDefineTransactionBoundaries says yes, where Debezium says no (Kafka's
// default): with transaction.boundary=connector the task commits the whole
// snapshot as one Kafka transaction and each PostgreSQL transaction as one
// (reader.go: put, commitHeld), so that a read_committed consumer never sees a
// part of either, and a snapshot interrupted by a crash leaves nothing
// visible to be read twice.
func (c *Connector) CanDefineTransactionBoundaries(map[string]string) bool { return true }

// ValidateConfig refuses the Debezium keys Sluice does not implement and,
// when the keys are otherwise valid, checks the database as Debezium's
// validation does: that it is reachable, has wal_level=logical, and that
// the role may replicate. (Not that the slot is free: a running
// connector's own task holds it while its config is updated.)
func (c *Connector) ValidateConfig(config map[string]string) map[string][]string {
	errs := validateRelations(config)
	if errs != nil {
		return errs
	}
	s, err := parseSettings(config)
	if err != nil {
		return nil // ConfigDef's own validation reports these
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := s.checkConnection(ctx); err != nil {
		key := HostnameKey
		var pe *preflightError
		if errors.As(err, &pe) {
			key = pe.key
		}
		return map[string][]string{key: {err.Error()}}
	}
	return nil
}
