package postgrescdc

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// Debezium's keys, with Debezium's defaults.
const (
	HostnameKey          = "database.hostname"
	PortKey              = "database.port"
	UserKey              = "database.user"
	PasswordKey          = "database.password"
	DBNameKey            = "database.dbname"
	SSLModeKey           = "database.sslmode"
	TopicPrefixKey       = "topic.prefix"
	PluginNameKey        = "plugin.name"
	SlotNameKey          = "slot.name"
	SlotDropOnStopKey    = "slot.drop.on.stop"
	PublicationNameKey   = "publication.name"
	PublicationAutoKey   = "publication.autocreate.mode"
	SchemaIncludeKey     = "schema.include.list"
	SchemaExcludeKey     = "schema.exclude.list"
	TableIncludeKey      = "table.include.list"
	TableExcludeKey      = "table.exclude.list"
	ColumnIncludeKey     = "column.include.list"
	ColumnExcludeKey     = "column.exclude.list"
	SnapshotModeKey      = "snapshot.mode"
	SnapshotFetchSizeKey = "snapshot.fetch.size"
	HeartbeatIntervalKey = "heartbeat.interval.ms"
	TombstonesKey        = "tombstones.on.delete"
	DecimalModeKey       = "decimal.handling.mode"
	TimePrecisionKey     = "time.precision.mode"
	BinaryModeKey        = "binary.handling.mode"
	HstoreModeKey        = "hstore.handling.mode"
	MessageKeyColumnsKey = "message.key.columns"
	SkippedOpsKey        = "skipped.operations"
	MaxBatchSizeKey      = "max.batch.size"
	MaxQueueSizeKey      = "max.queue.size"
	PollIntervalKey      = "poll.interval.ms"
	ExtendedHeadersKey   = "extended.headers.enabled"
)

// snapshot.mode values.
const (
	SnapshotInitial     = "initial"
	SnapshotInitialOnly = "initial_only"
	SnapshotNoData      = "no_data"
	SnapshotNever       = "never"
	SnapshotAlways      = "always"
	SnapshotWhenNeeded  = "when_needed"
)

// pinnedKeys are Debezium keys Sluice accepts only at the value that is
// Sluice's behaviour (Debezium's default): any other value is refused by
// name, so that no setting is silently ignored.
var pinnedKeys = map[string]string{
	"provide.transaction.metadata":  "false",
	"include.unknown.datatypes":     "false",
	"interval.handling.mode":        "numeric",
	"unavailable.value.placeholder": "__debezium_unavailable_value",
	"topic.delimiter":               ".",
	"topic.heartbeat.prefix":        "__debezium-heartbeat",
	"money.fraction.digits":         "2",
	"schema.name.adjustment.mode":   "none",
	"field.name.adjustment.mode":    "none",
	"flush.lsn.source":              "true",
	"xmin.fetch.interval.ms":        "0",
	"table.ignore.builtin":          "true",
	// Relation messages refresh a table's schema when its columns change.
	"schema.refresh.mode":     "columns_diff",
	"max.queue.size.in.bytes": "0",
	"query.fetch.size":        "0",
}

// refusedKeys are Debezium keys Sluice does not implement; a config that
// sets one is refused with the reason, rather than run without it.
var refusedKeys = map[string]string{
	"snapshot.select.statement.overrides":    "snapshot query overrides are not implemented",
	"snapshot.include.collection.list":       "a snapshot of a subset of the captured tables is not implemented",
	"snapshot.locking.mode":                  "the snapshot takes no table locks: it reads the slot's exported snapshot",
	"snapshot.isolation.mode":                "the snapshot always reads the slot's exported snapshot in REPEATABLE READ",
	"snapshot.lock.timeout.ms":               "the snapshot takes no table locks",
	"snapshot.delay.ms":                      "a snapshot delay is not implemented",
	"snapshot.max.threads":                   "the snapshot reads tables one at a time",
	"snapshot.mode.class":                    "custom snapshot modes are not implemented",
	"snapshot.query.mode":                    "custom snapshot queries are not implemented",
	"incremental.snapshot.chunk.size":        "incremental snapshots are not implemented",
	"signal.data.collection":                 "signals (incremental snapshots) are not implemented",
	"signal.enabled.channels":                "signals are not implemented",
	"column.propagate.source.type":           "source type parameters are not implemented",
	"datatype.propagate.source.type":         "source type parameters are not implemented",
	"converters":                             "custom converters are not implemented",
	"slot.stream.params":                     "extra pgoutput parameters are not implemented",
	"slot.max.retries":                       "slot retries follow the runtime's task retry",
	"slot.retry.delay.ms":                    "slot retries follow the runtime's task retry",
	"status.update.interval.ms":              "the slot is acknowledged after each offset commit",
	"publish.via.partition.root":             "partitioned tables are captured per partition only",
	"database.initial.statements":            "initial statements are not implemented",
	"database.sslcert":                       "client certificates are not implemented",
	"database.sslkey":                        "client certificates are not implemented",
	"database.sslpassword":                   "client certificates are not implemented",
	"database.sslrootcert":                   "custom root certificates are not implemented",
	"database.sslfactory":                    "custom SSL factories are not implemented",
	"database.tcpKeepAlive":                  "TCP keepalive settings are not implemented",
	"event.processing.failure.handling.mode": "a change that cannot be converted always fails the task",
	"topic.naming.strategy":                  "topics are always <topic.prefix>.<schema>.<table>",
	"topic.transaction":                      "transaction metadata topics are not implemented",
	"heartbeat.action.query":                 "heartbeat action queries are not implemented",
	"notification.enabled.channels":          "notifications are not implemented",
	"custom.metric.tags":                     "custom metric tags are not implemented",
	"replica.identity.autoset.values":        "setting replica identities is not implemented",
	"message.prefix.include.list":            "logical decoding messages are not captured",
	"message.prefix.exclude.list":            "logical decoding messages are not captured",
	"skip.messages.without.change":           "filtering unchanged updates is not implemented",
	"lsn.flush.mode":                         "the slot is always flushed after offsets are committed",
	"read.only":                              "read-only incremental snapshots are not implemented",
	"errors.max.retries":                     "retries follow the runtime's task retry",
	"retriable.restart.connector.wait.ms":    "retries follow the runtime's task retry",
	"schema.history.internal.kafka.topic":    "PostgreSQL needs no schema history",
	"openlineage.integration.enabled":        "OpenLineage is not implemented",
	"database.server.name":                   "Debezium 2.0 replaced it with topic.prefix",
	"heartbeat.topics.prefix":                "Debezium 2.0 replaced it with topic.heartbeat.prefix",
	"sanitize.field.names":                   "field name sanitizing is not implemented",
	"snapshot.custom.class":                  "custom snapshot modes are not implemented",
	"database.history.kafka.topic":           "PostgreSQL needs no schema history",
	"include.schema.changes":                 "PostgreSQL emits no schema change events",
}

// refusedPrefixes are families of Debezium keys refused as refusedKeys.
var refusedPrefixes = map[string]string{
	"column.mask.":                       "column masking is not implemented",
	"column.truncate.":                   "column truncation is not implemented",
	"incremental.snapshot.":              "incremental snapshots are not implemented",
	"snapshot.select.statement.":         "snapshot query overrides are not implemented",
	"driver.":                            "JDBC driver settings do not apply",
	"database.history.":                  "PostgreSQL needs no schema history",
	"transaction.metadata.":              "transaction metadata is not implemented",
	"post.processors":                    "post processors are not implemented",
	"custom.sanitize.pattern":            "field name sanitizing is not implemented",
	"streaming.delay.ms":                 "a streaming delay is not implemented",
	"database.query.timeout.ms":          "query timeouts are not implemented",
	"snapshot.tables.order.by.row.count": "table ordering is not implemented",
}

// ConfigDef defines every key the connector accepts.
func ConfigDef() *connectors.ConfigDef {
	const db, conn, snap, types = "Database", "Connector", "Snapshot", "Types"
	d := connectors.NewConfigDef()
	def := func(k connectors.ConfigKey) { d.Define(k) }
	def(connectors.ConfigKey{Name: HostnameKey, Required: true, Importance: connectors.High, Group: db, Validate: connectors.NonEmpty,
		Doc: "The PostgreSQL server's host."})
	def(connectors.ConfigKey{Name: PortKey, Type: connectors.TypeInt, Default: "5432", Importance: connectors.High, Group: db,
		Validate: inRange(1, 65535), Doc: "The PostgreSQL server's port."})
	def(connectors.ConfigKey{Name: UserKey, Required: true, Importance: connectors.High, Group: db, Validate: connectors.NonEmpty,
		Doc: "The role to connect as; it needs the REPLICATION attribute (or to be a superuser)."})
	def(connectors.ConfigKey{Name: PasswordKey, Type: connectors.TypePassword, Importance: connectors.High, Group: db,
		Doc: "The role's password."})
	def(connectors.ConfigKey{Name: DBNameKey, Required: true, Importance: connectors.High, Group: db, Validate: connectors.NonEmpty,
		Doc: "The database to capture."})
	def(connectors.ConfigKey{Name: SSLModeKey, Default: "prefer", Importance: connectors.Medium, Group: db,
		Validate: connectors.OneOf("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
		Doc:      "libpq's sslmode: disable, allow, prefer, require, verify-ca or verify-full."})
	def(connectors.ConfigKey{Name: TopicPrefixKey, Required: true, Importance: connectors.High, Group: conn, Validate: validTopicPrefix,
		Doc: "The logical name of the server: the prefix of every topic (<prefix>.<schema>.<table>), the source partition and the schemas' names."})
	def(connectors.ConfigKey{Name: PluginNameKey, Default: "pgoutput", Importance: connectors.Medium, Group: conn,
		Validate: connectors.OneOf("pgoutput"),
		Doc:      "The logical decoding plugin. Only pgoutput, built into PostgreSQL 10+, is supported (Debezium's default is decoderbufs)."})
	def(connectors.ConfigKey{Name: SlotNameKey, Default: "debezium", Importance: connectors.Medium, Group: conn, Validate: validSlotName,
		Doc: "The replication slot to create or reuse."})
	def(connectors.ConfigKey{Name: SlotDropOnStopKey, Type: connectors.TypeBoolean, Default: "false", Importance: connectors.Low, Group: conn,
		Doc: "Drop the slot when the task stops gracefully (tests and development only: changes made while stopped are lost)."})
	def(connectors.ConfigKey{Name: PublicationNameKey, Default: "dbz_publication", Importance: connectors.Medium, Group: conn, Validate: connectors.NonEmpty,
		Doc: "The publication that pgoutput streams."})
	def(connectors.ConfigKey{Name: PublicationAutoKey, Default: "all_tables", Importance: connectors.Medium, Group: conn,
		Validate: connectors.OneOf("all_tables", "disabled", "filtered"),
		Doc:      "all_tables: create the publication FOR ALL TABLES if it is missing; filtered: create or alter it to hold exactly the captured tables; disabled: it must exist."})
	for _, k := range []struct{ name, doc string }{
		{SchemaIncludeKey, "Regular expressions (comma-separated, matched case-insensitively against the whole name) of the schemas to capture."},
		{SchemaExcludeKey, "Regular expressions of the schemas not to capture."},
		{TableIncludeKey, "Regular expressions of the tables (schema.table) to capture."},
		{TableExcludeKey, "Regular expressions of the tables (schema.table) not to capture."},
		{ColumnIncludeKey, "Regular expressions of the columns (schema.table.column) to capture."},
		{ColumnExcludeKey, "Regular expressions of the columns (schema.table.column) not to capture."},
	} {
		def(connectors.ConfigKey{Name: k.name, Type: connectors.TypeList, Importance: connectors.Medium, Group: conn, Validate: validRegexList, Doc: k.doc})
	}
	def(connectors.ConfigKey{Name: SnapshotModeKey, Default: SnapshotInitial, Importance: connectors.Medium, Group: snap,
		Validate: connectors.OneOf(SnapshotInitial, SnapshotInitialOnly, SnapshotNoData, SnapshotNever, SnapshotAlways, SnapshotWhenNeeded),
		Doc: "initial: snapshot when no offset exists (or the last snapshot did not finish), then stream; initial_only: snapshot, then stream nothing; " +
			"no_data (never): stream only; always: snapshot at every start; when_needed: snapshot when no offset exists or the slot is gone."})
	def(connectors.ConfigKey{Name: SnapshotFetchSizeKey, Type: connectors.TypeInt, Default: "10240", Importance: connectors.Medium, Group: snap,
		Validate: connectors.AtLeast(1), Doc: "Rows fetched per round trip while snapshotting a table."})
	def(connectors.ConfigKey{Name: HeartbeatIntervalKey, Type: connectors.TypeInt, Default: "0", Importance: connectors.Medium, Group: conn,
		Validate: connectors.AtLeast(0),
		Doc:      "When positive, milliseconds between heartbeat records on __debezium-heartbeat.<prefix>; their offsets let the slot advance while the captured tables are idle."})
	def(connectors.ConfigKey{Name: TombstonesKey, Type: connectors.TypeBoolean, Default: "true", Importance: connectors.Medium, Group: conn,
		Doc: "Follow each delete event with a tombstone (same key, null value) so that log compaction can remove the key."})
	def(connectors.ConfigKey{Name: ExtendedHeadersKey, Type: connectors.TypeBoolean, Default: "true", Importance: connectors.Low, Group: conn,
		Doc: "Put Debezium's context headers on each change event and tombstone: __debezium.context.connectorLogicalName (the topic prefix), " +
			"__debezium.context.taskId, __debezium.context.connectorName (postgresql) and __debezium.context.runId (a UUID new at each task start)."})
	def(connectors.ConfigKey{Name: DecimalModeKey, Default: "precise", Importance: connectors.Medium, Group: types,
		Validate: connectors.OneOf("precise", "double", "string"),
		Doc:      "numeric and money as Connect Decimal (or io.debezium.data.VariableScaleDecimal without a fixed scale), as double, or as string."})
	def(connectors.ConfigKey{Name: TimePrecisionKey, Default: "adaptive", Importance: connectors.Medium, Group: types,
		Validate: connectors.OneOf("adaptive", "adaptive_time_microseconds", "connect"),
		Doc:      "adaptive: io.debezium.time types by the column's precision; adaptive_time_microseconds: time always io.debezium.time.MicroTime; connect: Connect's Date, Time and Timestamp (milliseconds)."})
	def(connectors.ConfigKey{Name: BinaryModeKey, Default: "bytes", Importance: connectors.Medium, Group: types,
		Validate: connectors.OneOf("bytes", "base64", "base64-url-safe", "hex"),
		Doc:      "bytea as bytes, or as a base64, base64-url-safe or hex string."})
	def(connectors.ConfigKey{Name: HstoreModeKey, Default: "json", Importance: connectors.Low, Group: types,
		Validate: connectors.OneOf("json", "map"),
		Doc:      "hstore as a JSON object in a string (io.debezium.data.Json), or as a Connect map of strings."})
	def(connectors.ConfigKey{Name: MessageKeyColumnsKey, Importance: connectors.Medium, Group: conn, Validate: validKeyColumns,
		Doc: "Key columns per table instead of the primary key: <table regex>:<column>,<column>;<table regex>:<column>..."})
	def(connectors.ConfigKey{Name: SkippedOpsKey, Type: connectors.TypeList, Default: "t", Importance: connectors.Low, Group: conn,
		Validate: validSkippedOps,
		Doc:      "Operations not to emit: c (insert), u (update), d (delete), t (truncate), or none."})
	def(connectors.ConfigKey{Name: MaxBatchSizeKey, Type: connectors.TypeInt, Default: "2048", Importance: connectors.Low, Group: conn,
		Validate: connectors.AtLeast(1), Doc: "Most records one poll returns."})
	def(connectors.ConfigKey{Name: MaxQueueSizeKey, Type: connectors.TypeInt, Default: "8192", Importance: connectors.Low, Group: conn,
		Validate: connectors.AtLeast(1), Doc: "Most records read ahead of the poll; must exceed max.batch.size."})
	def(connectors.ConfigKey{Name: PollIntervalKey, Type: connectors.TypeLong, Default: "500", Importance: connectors.Low, Group: conn,
		Validate: connectors.AtLeast(0), Doc: "Milliseconds a poll waits for a first record."})
	return d
}

func inRange(lo, hi int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}

var topicPrefixRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func validTopicPrefix(v string) error {
	if !topicPrefixRE.MatchString(v) {
		return fmt.Errorf("must be letters, digits, '.', '_' or '-' (it begins every topic name)")
	}
	return nil
}

var slotNameRE = regexp.MustCompile(`^[a-z0-9_]{1,63}$`)

func validSlotName(v string) error {
	if !slotNameRE.MatchString(v) {
		return fmt.Errorf("a replication slot name is 1 to 63 lower-case letters, digits or underscores")
	}
	return nil
}

func validRegexList(v string) error {
	_, err := compileList(v)
	return err
}

// compileList compiles a Debezium include/exclude list: each expression
// matches a whole identifier, case-insensitively.
func compileList(v string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range connectors.SplitList(v) {
		re, err := regexp.Compile(`(?i)^(?:` + p + `)$`)
		if err != nil {
			return nil, fmt.Errorf("bad regular expression %q: %v", p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func validSkippedOps(v string) error {
	for _, op := range connectors.SplitList(v) {
		switch op {
		case "c", "u", "d", "t", "none":
		default:
			return fmt.Errorf("unknown operation %q: use c, u, d, t or none", op)
		}
	}
	return nil
}

// keyColumnsRule is one table's entry of message.key.columns.
type keyColumnsRule struct {
	table   *regexp.Regexp
	columns []string
}

func validKeyColumns(v string) error {
	_, err := parseKeyColumns(v)
	return err
}

// parseKeyColumns reads message.key.columns: entries separated by ';',
// each a fully-qualified table regex, ':', and comma-separated columns.
func parseKeyColumns(v string) ([]keyColumnsRule, error) {
	var out []keyColumnsRule
	for _, entry := range strings.Split(v, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		i := strings.LastIndex(entry, ":")
		if i <= 0 || i == len(entry)-1 {
			return nil, fmt.Errorf("entry %q is not <table regex>:<column>[,<column>...]", entry)
		}
		re, err := regexp.Compile(`(?i)^(?:` + strings.TrimSpace(entry[:i]) + `)$`)
		if err != nil {
			return nil, fmt.Errorf("bad table regular expression in %q: %v", entry, err)
		}
		cols := connectors.SplitList(entry[i+1:])
		if len(cols) == 0 {
			return nil, fmt.Errorf("entry %q names no column", entry)
		}
		out = append(out, keyColumnsRule{table: re, columns: cols})
	}
	return out, nil
}

// validateRelations checks what ConfigDef alone cannot: keys Sluice does
// not implement, and pairs Debezium makes exclusive.
func validateRelations(config map[string]string) map[string][]string {
	errs := map[string][]string{}
	for k, v := range config {
		if want, ok := pinnedKeys[k]; ok && strings.TrimSpace(v) != want {
			errs[k] = append(errs[k], fmt.Sprintf("Sluice's Debezium PostgreSQL connector supports only %s=%q", k, want))
		}
		if reason, ok := refusedKeys[k]; ok {
			errs[k] = append(errs[k], fmt.Sprintf("%s is not supported by Sluice's Debezium PostgreSQL connector: %s", k, reason))
			continue
		}
		for p, reason := range refusedPrefixes {
			if strings.HasPrefix(k, p) {
				errs[k] = append(errs[k], fmt.Sprintf("%s is not supported by Sluice's Debezium PostgreSQL connector: %s", k, reason))
				break
			}
		}
	}
	for _, pair := range [][2]string{{SchemaIncludeKey, SchemaExcludeKey}, {TableIncludeKey, TableExcludeKey}, {ColumnIncludeKey, ColumnExcludeKey}} {
		if strings.TrimSpace(config[pair[0]]) != "" && strings.TrimSpace(config[pair[1]]) != "" {
			errs[pair[1]] = append(errs[pair[1]], fmt.Sprintf("%s and %s cannot both be set", pair[0], pair[1]))
		}
	}
	if mb, mq := atoi(config[MaxBatchSizeKey], 2048), atoi(config[MaxQueueSizeKey], 8192); mq <= mb {
		errs[MaxQueueSizeKey] = append(errs[MaxQueueSizeKey], fmt.Sprintf("max.queue.size (%d) must be larger than max.batch.size (%d)", mq, mb))
	}
	if len(errs) == 0 {
		return nil
	}
	for k := range errs {
		sort.Strings(errs[k])
	}
	return errs
}

func atoi(v string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return def
	}
	return n
}

// settings is a parsed, validated config.
type settings struct {
	host, user, password, dbname, sslmode string
	port                                  int
	prefix                                string
	slot                                  string
	dropSlotOnStop                        bool
	publication, pubMode                  string
	schemaInclude, schemaExclude          []*regexp.Regexp
	tableInclude, tableExclude            []*regexp.Regexp
	columnInclude, columnExclude          []*regexp.Regexp
	snapshotMode                          string
	fetchSize                             int
	heartbeatMs                           int
	tombstones                            bool
	extendedHeaders                       bool
	modes                                 typeModes
	keyColumns                            []keyColumnsRule
	skipped                               map[string]bool
	// publish is the publish option of a publication the connector
	// creates ("" for PostgreSQL's default, every operation).
	publish            string
	maxBatch, maxQueue int
	pollMs             int64
}

func parseSettings(config map[string]string) (*settings, error) {
	c, err := ConfigDef().Parse(config)
	if err != nil {
		return nil, err
	}
	if errs := validateRelations(config); errs != nil {
		return nil, &connectors.ConfigError{Errors: errs}
	}
	s := &settings{
		host: c.String(HostnameKey), port: c.Int(PortKey), user: c.String(UserKey), password: c.String(PasswordKey),
		dbname: c.String(DBNameKey), sslmode: c.String(SSLModeKey), prefix: c.String(TopicPrefixKey),
		slot: c.String(SlotNameKey), dropSlotOnStop: c.Bool(SlotDropOnStopKey),
		publication: c.String(PublicationNameKey), pubMode: c.String(PublicationAutoKey),
		snapshotMode: c.String(SnapshotModeKey), fetchSize: c.Int(SnapshotFetchSizeKey),
		heartbeatMs: c.Int(HeartbeatIntervalKey), tombstones: c.Bool(TombstonesKey),
		extendedHeaders: c.Bool(ExtendedHeadersKey),
		modes:           typeModes{decimal: c.String(DecimalModeKey), time: c.String(TimePrecisionKey), binary: c.String(BinaryModeKey), hstore: c.String(HstoreModeKey)},
		maxBatch:        c.Int(MaxBatchSizeKey), maxQueue: c.Int(MaxQueueSizeKey), pollMs: c.Long(PollIntervalKey),
		skipped: map[string]bool{},
	}
	// Already validated by ConfigDef, so these cannot fail.
	s.schemaInclude, _ = compileList(c.String(SchemaIncludeKey))
	s.schemaExclude, _ = compileList(c.String(SchemaExcludeKey))
	s.tableInclude, _ = compileList(c.String(TableIncludeKey))
	s.tableExclude, _ = compileList(c.String(TableExcludeKey))
	s.columnInclude, _ = compileList(c.String(ColumnIncludeKey))
	s.columnExclude, _ = compileList(c.String(ColumnExcludeKey))
	s.keyColumns, _ = parseKeyColumns(c.String(MessageKeyColumnsKey))
	for _, op := range c.List(SkippedOpsKey) {
		if op != "none" {
			s.skipped[op] = true
		}
	}
	if _, set := config[SkippedOpsKey]; set {
		s.publish = publishOption(s.skipped)
	}
	return s, nil
}

// publishOption is the publish option Debezium gives the publications it
// creates when skipped.operations is set: the operations not skipped, so
// that PostgreSQL does not even send the others ("" when none is
// skipped). Left at its default (t), Debezium sets no publish option, and
// PostgreSQL sends truncates that the connector then drops.
func publishOption(skipped map[string]bool) string {
	var ops []string
	for _, op := range []struct{ code, name string }{{"c", "insert"}, {"u", "update"}, {"d", "delete"}, {"t", "truncate"}} {
		if !skipped[op.code] {
			ops = append(ops, op.name)
		}
	}
	if len(ops) == 4 {
		return ""
	}
	return strings.Join(ops, ", ")
}

// builtinSchemas are never captured, as Debezium's table.ignore.builtin.
var builtinSchemas = map[string]bool{"pg_catalog": true, "information_schema": true, "pg_toast": true}

// capturesTable reports whether schema.table passes the include/exclude lists.
func (s *settings) capturesTable(schema, table string) bool {
	if builtinSchemas[schema] || strings.HasPrefix(schema, "pg_temp") || strings.HasPrefix(schema, "pg_toast") {
		return false
	}
	if len(s.schemaInclude) > 0 && !anyMatch(s.schemaInclude, schema) {
		return false
	}
	if anyMatch(s.schemaExclude, schema) {
		return false
	}
	id := schema + "." + table
	if len(s.tableInclude) > 0 && !anyMatch(s.tableInclude, id) {
		return false
	}
	return !anyMatch(s.tableExclude, id)
}

// capturesColumn reports whether schema.table.column passes the column lists.
func (s *settings) capturesColumn(schema, table, column string) bool {
	id := schema + "." + table + "." + column
	if len(s.columnInclude) > 0 && !anyMatch(s.columnInclude, id) {
		return false
	}
	return !anyMatch(s.columnExclude, id)
}

// keyColumnsFor returns the message.key.columns of schema.table, or nil.
func (s *settings) keyColumnsFor(schema, table string) []string {
	id := schema + "." + table
	for _, r := range s.keyColumns {
		if r.table.MatchString(id) {
			return r.columns
		}
	}
	return nil
}

func anyMatch(res []*regexp.Regexp, v string) bool {
	for _, re := range res {
		if re.MatchString(v) {
			return true
		}
	}
	return false
}
