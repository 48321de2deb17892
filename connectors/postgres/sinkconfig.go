package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// Keys of the JDBC sink, named as Confluent's JdbcSinkConnector names them so
// that a Connect config runs unchanged. The connection keys are shared with
// the source (conn.go).
const (
	SinkInsertModeKey      = "insert.mode"
	SinkPKModeKey          = "pk.mode"
	SinkPKFieldsKey        = "pk.fields"
	SinkAutoCreateKey      = "auto.create"
	SinkAutoEvolveKey      = "auto.evolve"
	SinkTableNameFormatKey = "table.name.format"
	SinkBatchSizeKey       = "batch.size"
	SinkDeleteEnabledKey   = "delete.enabled"
	SinkFieldsWhitelistKey = "fields.whitelist"
	SinkMaxRetriesKey      = "max.retries"
	SinkRetryBackoffMsKey  = "retry.backoff.ms"
	SinkDBTimezoneKey      = "db.timezone"
)

// Values of insert.mode and pk.mode.
const (
	InsertModeInsert = "insert"
	InsertModeUpsert = "upsert"
	InsertModeUpdate = "update"

	PKModeNone        = "none"
	PKModeRecordKey   = "record_key"
	PKModeRecordValue = "record_value"
	PKModeKafka       = "kafka"
)

// DefaultKafkaPKFields are the columns pk.mode=kafka writes the record's
// coordinates to when pk.fields is empty, as Confluent's sink names them.
var DefaultKafkaPKFields = []string{"__connect_topic", "__connect_partition", "__connect_offset"}

const (
	defaultSinkBatchSize = 3000
	sinkTopicPlaceholder = "${topic}"
)

// SinkConfigDef returns the keys the JDBC sink accepts: the connection keys
// shared with the source, then the sink's own. The runtime owns topics,
// topics.regex, converters and error handling.
func SinkConfigDef() *connectors.ConfigDef {
	const (
		writes = "Writes"
		ddl    = "DDL Support"
		fields = "Data Mapping"
		retry  = "Retries"
	)
	return ConnectionConfigDef().Merge(connectors.NewConfigDef().
		Define(connectors.ConfigKey{
			Name: SinkInsertModeKey, Default: InsertModeInsert, Importance: connectors.High, Group: writes,
			Doc: "The insertion mode to use: insert (plain INSERT), upsert (INSERT ... ON CONFLICT (pk) DO UPDATE, " +
				"idempotent, needs a pk.mode other than none) or update (UPDATE ... WHERE pk, needs a pk.mode other than none).",
			Validate:    connectors.OneOf(InsertModeInsert, InsertModeUpsert, InsertModeUpdate),
			Recommended: []string{InsertModeInsert, InsertModeUpsert, InsertModeUpdate},
		}).
		Define(connectors.ConfigKey{
			Name: SinkBatchSizeKey, Type: connectors.TypeInt, Default: fmt.Sprint(defaultSinkBatchSize), Importance: connectors.Medium, Group: writes,
			Doc:      "Largest number of rows one statement writes; all rows of one delivered batch are written in one transaction whatever this is.",
			Validate: connectors.AtLeast(1),
		}).
		Define(connectors.ConfigKey{
			Name: SinkDeleteEnabledKey, Type: connectors.TypeBoolean, Default: "false", Importance: connectors.Medium, Group: writes,
			Doc: "Whether to treat a null record value (a tombstone) as a delete of the row with the record's key. Requires pk.mode record_key.",
		}).
		Define(connectors.ConfigKey{
			Name: SinkTableNameFormatKey, Default: sinkTopicPlaceholder, Importance: connectors.Medium, Group: writes,
			Doc: "A format string for the destination table name, which may contain '${topic}' for the record's topic. " +
				"A name with dots is schema.table (or catalog.schema.table, whose catalog is ignored).",
			Validate: connectors.NonEmpty,
		}).
		Define(connectors.ConfigKey{
			Name: SinkPKModeKey, Default: PKModeNone, Importance: connectors.High, Group: fields,
			Doc: "The primary key mode: none (no key), kafka (the record's topic, partition and offset), " +
				"record_key (fields of the record key, or the key itself when it is a primitive) or record_value (fields of the record value).",
			Validate:    connectors.OneOf(PKModeNone, PKModeKafka, PKModeRecordKey, PKModeRecordValue),
			Recommended: []string{PKModeNone, PKModeKafka, PKModeRecordKey, PKModeRecordValue},
		}).
		Define(connectors.ConfigKey{
			Name: SinkPKFieldsKey, Type: connectors.TypeList, Importance: connectors.Medium, Group: fields,
			Doc: "List of primary key column names, by pk.mode: kafka, three names for topic, partition and offset " +
				"(default __connect_topic,__connect_partition,__connect_offset); record_key, the key fields to use (empty: all), " +
				"or the one column name of a primitive key; record_value, the value fields to use (empty: all).",
		}).
		Define(connectors.ConfigKey{
			Name: SinkFieldsWhitelistKey, Type: connectors.TypeList, Importance: connectors.Medium, Group: fields,
			Doc: "List of record value field names to write as columns besides the primary key; empty means all fields.",
		}).
		Define(connectors.ConfigKey{
			Name: SinkDBTimezoneKey, Default: "UTC", Importance: connectors.Medium, Group: fields,
			Doc:      "Name of the time zone in which Timestamp values are written to columns without a time zone.",
			Validate: sinkValidTimezone,
		}).
		Define(connectors.ConfigKey{
			Name: SinkAutoCreateKey, Type: connectors.TypeBoolean, Default: "false", Importance: connectors.Medium, Group: ddl,
			Doc: "Whether to create a missing destination table (CREATE TABLE) from the record schema and pk.mode.",
		}).
		Define(connectors.ConfigKey{
			Name: SinkAutoEvolveKey, Type: connectors.TypeBoolean, Default: "false", Importance: connectors.Medium, Group: ddl,
			Doc: "Whether to add columns the record schema has and the table lacks (ALTER TABLE ADD COLUMN, nullable).",
		}).
		Define(connectors.ConfigKey{
			Name: SinkMaxRetriesKey, Type: connectors.TypeInt, Default: "10", Importance: connectors.Medium, Group: retry,
			Doc: "Accepted for compatibility with Confluent's sink. Sluice retries sinkTransient database errors " +
				"(connection lost, serialization failure, deadlock) with backoff for as long as errors.retry.timeout allows.",
			Validate: connectors.AtLeast(0),
		}).
		Define(connectors.ConfigKey{
			Name: SinkRetryBackoffMsKey, Type: connectors.TypeInt, Default: "3000", Importance: connectors.Medium, Group: retry,
			Doc: "Accepted for compatibility with Confluent's sink. The runtime's backoff (errors.retry.delay.max.ms) applies " +
				"to retries of sinkTransient database errors.",
			Validate: connectors.AtLeast(0),
		}))
}

func sinkValidTimezone(v string) error {
	if _, err := time.LoadLocation(strings.TrimSpace(v)); err != nil {
		return fmt.Errorf("unknown time zone")
	}
	return nil
}

// sinkConfig is a parsed, validated sink config.
type sinkConfig struct {
	conn          ConnSettings
	insertMode    string
	pkMode        string
	pkFields      []string
	autoCreate    bool
	autoEvolve    bool
	tableFormat   string
	batchSize     int
	deleteEnabled bool
	whitelist     map[string]bool // nil: every field
	tz            *time.Location
}

// parseSinkConfig validates every key and the relations between keys, and
// returns every error at once.
func parseSinkConfig(props map[string]string) (*sinkConfig, error) {
	cfg, err := SinkConfigDef().Parse(props)
	if err != nil {
		return nil, err
	}
	c := &sinkConfig{
		conn:          ConnSettingsFrom(cfg),
		insertMode:    strings.TrimSpace(cfg.String(SinkInsertModeKey)),
		pkMode:        strings.TrimSpace(cfg.String(SinkPKModeKey)),
		pkFields:      cfg.List(SinkPKFieldsKey),
		autoCreate:    cfg.Bool(SinkAutoCreateKey),
		autoEvolve:    cfg.Bool(SinkAutoEvolveKey),
		tableFormat:   strings.TrimSpace(cfg.String(SinkTableNameFormatKey)),
		batchSize:     cfg.Int(SinkBatchSizeKey),
		deleteEnabled: cfg.Bool(SinkDeleteEnabledKey),
	}
	if wl := cfg.List(SinkFieldsWhitelistKey); len(wl) > 0 {
		c.whitelist = map[string]bool{}
		for _, f := range wl {
			c.whitelist[f] = true
		}
	}
	c.tz, _ = time.LoadLocation(strings.TrimSpace(cfg.String(SinkDBTimezoneKey)))
	ce := &connectors.ConfigError{}
	c.check(ce)
	if err := ce.Err(); err != nil {
		return nil, err
	}
	if c.pkMode == PKModeKafka && len(c.pkFields) == 0 {
		c.pkFields = DefaultKafkaPKFields
	}
	return c, nil
}

// check adds the errors ConfigDef cannot see: relations between keys.
func (c *sinkConfig) check(ce *connectors.ConfigError) {
	if (c.insertMode == InsertModeUpsert || c.insertMode == InsertModeUpdate) && c.pkMode == PKModeNone {
		ce.Add(SinkPKModeKey, fmt.Sprintf("insert.mode %s needs the primary key to match rows by: set pk.mode to record_key, record_value or kafka", c.insertMode))
	}
	if c.deleteEnabled && c.pkMode != PKModeRecordKey {
		ce.Add(SinkDeleteEnabledKey, fmt.Sprintf("deletes match rows by the record key: delete.enabled=true needs pk.mode record_key, not %s", c.pkMode))
	}
	switch c.pkMode {
	case PKModeNone:
		if len(c.pkFields) > 0 {
			ce.Add(SinkPKFieldsKey, "pk.fields must be empty when pk.mode is none")
		}
	case PKModeKafka:
		if n := len(c.pkFields); n != 0 && n != 3 {
			ce.Add(SinkPKFieldsKey, fmt.Sprintf("pk.mode kafka needs exactly 3 names (for topic, partition and offset), got %d", n))
		}
	}
	seen := map[string]bool{}
	for _, f := range c.pkFields {
		if seen[f] {
			ce.Add(SinkPKFieldsKey, fmt.Sprintf("%q is listed twice", f))
		}
		seen[f] = true
	}
	if strings.Count(c.tableFormat, ".") > 2 {
		ce.Add(SinkTableNameFormatKey, "at most catalog.schema.table: more than two dots")
	}
}
