package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
)

// SourceClass is the class name of Confluent's JDBC source, so that a
// Connect config for it runs on Sluice unchanged.
const SourceClass = "io.confluent.connect.jdbc.JdbcSourceConnector"

const sourceVersion = "1.0.0"

// Source config keys, as Confluent's JdbcSourceConnector names them.
const (
	SourceModeKey              = "mode"
	SourceIncrementingColumn   = "incrementing.column.name"
	SourceTimestampColumn      = "timestamp.column.name"
	SourceTableWhitelistKey    = "table.whitelist"
	SourceTableBlacklistKey    = "table.blacklist"
	SourceTableIncludeKey      = "table.include.list"
	SourceTableExcludeKey      = "table.exclude.list"
	SourceTableTypesKey        = "table.types"
	SourceSchemaPatternKey     = "schema.pattern"
	SourceQueryKey             = "query"
	SourceTopicPrefixKey       = "topic.prefix"
	SourcePollIntervalKey      = "poll.interval.ms"
	SourceBatchMaxRowsKey      = "batch.max.rows"
	SourceTablePollIntervalKey = "table.poll.interval.ms"
	SourceTimestampDelayKey    = "timestamp.delay.interval.ms"
	SourceValidateNonNullKey   = "validate.non.null"

	// sourceTablesKey is the task config key holding the task's tables, a
	// JSON array of [schema, table] pairs (names may hold commas and dots).
	sourceTablesKey = "tables"
)

// Modes of the source.
const (
	ModeBulk                  = "bulk"
	ModeIncrementing          = "incrementing"
	ModeTimestamp             = "timestamp"
	ModeTimestampIncrementing = "timestamp+incrementing"
)

// Keys and values of source partitions and offsets, Confluent's: a table's
// partition is {"protocol":"1","table":"<db>.<schema>.<table>"}, a query's
// {"query":"query"}; offsets hold "incrementing", "timestamp" (epoch
// millis) and "timestamp_nanos" (nanoseconds of that second), as the mode
// needs.
const (
	PartitionTableField    = "table"
	PartitionProtocolField = "protocol"
	PartitionProtocolV1    = "1"
	PartitionQueryField    = "query"
	PartitionQueryValue    = "query"
	OffsetIncrementing     = "incrementing"
	OffsetTimestamp        = "timestamp"
	OffsetTimestampNanos   = "timestamp_nanos"
)

// sourceCheckTimeout bounds the database checks of ValidateConfig, which a
// user waits for.
const sourceCheckTimeout = 10 * time.Second

// SourcePlugin describes the JDBC source for PostgreSQL. Its names are the
// class, JdbcSourceConnector, JdbcSource and PostgresSource.
func SourcePlugin() connectors.Plugin {
	return connectors.Plugin{
		Class:   SourceClass,
		Aliases: []string{"PostgresSource"},
		Type:    connectors.Source,
		Version: sourceVersion,
		New:     func() connectors.Connector { return &JdbcSourceConnector{} },
	}
}

// SourceConfigDef defines every key the source accepts.
func SourceConfigDef() *connectors.ConfigDef {
	const mode, tables, conn = "Mode", "Database", "Connector"
	return ConnectionConfigDef().Merge(connectors.NewConfigDef().
		Define(connectors.ConfigKey{
			Name: SourceModeKey, Required: true, Importance: connectors.High, Group: mode, DisplayName: "Table Loading Mode",
			Validate:    connectors.OneOf(ModeBulk, ModeIncrementing, ModeTimestamp, ModeTimestampIncrementing),
			Recommended: []string{ModeBulk, ModeIncrementing, ModeTimestamp, ModeTimestampIncrementing},
			Doc: "How each poll finds new rows: bulk (the whole table, every poll), incrementing (rows whose " +
				"incrementing column is above the last one seen), timestamp (rows whose timestamp column is newer), " +
				"timestamp+incrementing (both: new and updated rows, exactly once per change).",
		}).
		Define(connectors.ConfigKey{
			Name: SourceIncrementingColumn, Importance: connectors.Medium, Group: mode, DisplayName: "Incrementing Column Name",
			Doc: "The strictly increasing integer column of incrementing modes. Empty: the table's identity or serial column.",
		}).
		Define(connectors.ConfigKey{
			Name: SourceTimestampColumn, Type: connectors.TypeList, Importance: connectors.Medium, Group: mode, DisplayName: "Timestamp Column Name",
			Doc: "The timestamp column(s) of timestamp modes. With several, the first non-null one of each row counts (COALESCE).",
		}).
		Define(connectors.ConfigKey{
			Name: SourceValidateNonNullKey, Type: connectors.TypeBoolean, Default: "true", Importance: connectors.Low, Group: mode,
			DisplayName: "Validate Non Null",
			Doc:         "Refuse an incrementing or (single) timestamp column that is nullable: rows with NULL there would never be read.",
		}).
		Define(connectors.ConfigKey{
			Name: SourceQueryKey, Importance: connectors.Medium, Group: mode, DisplayName: "Query",
			Doc: "Read the result of this SELECT instead of tables; the mode's conditions apply to its columns. Excludes the table.* keys.",
		}).
		Define(connectors.ConfigKey{
			Name: SourceTableWhitelistKey, Type: connectors.TypeList, Importance: connectors.Medium, Group: tables, DisplayName: "Table Whitelist",
			Doc: "Tables to copy (name, schema.name or database.schema.name); no others. Excludes table.blacklist.",
		}).
		Define(connectors.ConfigKey{
			Name: SourceTableBlacklistKey, Type: connectors.TypeList, Importance: connectors.Medium, Group: tables, DisplayName: "Table Blacklist",
			Doc: "Tables not to copy; all others are copied. Excludes table.whitelist.",
		}).
		Define(connectors.ConfigKey{
			Name: SourceTableIncludeKey, Type: connectors.TypeList, Importance: connectors.Medium, Group: tables, DisplayName: "Table Include List",
			Doc:      "Regular expressions; a table is copied when one matches its whole name, schema.name or database.schema.name. Excludes the other table lists.",
			Validate: srcValidRegexps,
		}).
		Define(connectors.ConfigKey{
			Name: SourceTableExcludeKey, Type: connectors.TypeList, Importance: connectors.Medium, Group: tables, DisplayName: "Table Exclude List",
			Doc:      "Regular expressions; a table is not copied when one matches its whole name, schema.name or database.schema.name. Excludes the other table lists.",
			Validate: srcValidRegexps,
		}).
		Define(connectors.ConfigKey{
			Name: SourceTableTypesKey, Type: connectors.TypeList, Default: "TABLE", Importance: connectors.Low, Group: tables, DisplayName: "Table Types",
			Doc:      "Kinds of relations to copy: TABLE, PARTITIONED TABLE, VIEW, MATERIALIZED VIEW, FOREIGN TABLE.",
			Validate: srcValidTableTypes,
		}).
		Define(connectors.ConfigKey{
			Name: SourceSchemaPatternKey, Default: "public", Importance: connectors.Medium, Group: tables, DisplayName: "Schema pattern",
			Doc: "LIKE pattern of the schemas whose tables are copied.",
		}).
		Define(connectors.ConfigKey{
			Name: SourceTopicPrefixKey, Required: true, Importance: connectors.High, Group: conn, DisplayName: "Topic Prefix",
			Doc: "A table's rows go to the topic <prefix><table>; a query's to <prefix> itself.",
		}).
		Define(connectors.ConfigKey{
			Name: SourcePollIntervalKey, Type: connectors.TypeInt, Default: "5000", Importance: connectors.High, Group: conn,
			DisplayName: "Poll Interval (ms)", Validate: connectors.AtLeast(1),
			Doc: "Milliseconds between two queries of a table that has no more new rows.",
		}).
		Define(connectors.ConfigKey{
			Name: SourceBatchMaxRowsKey, Type: connectors.TypeInt, Default: "100", Importance: connectors.Low, Group: conn,
			DisplayName: "Max Rows Per Batch", Validate: connectors.AtLeast(1),
			Doc: "At most this many rows per query and per poll.",
		}).
		Define(connectors.ConfigKey{
			Name: SourceTablePollIntervalKey, Type: connectors.TypeLong, Default: "60000", Importance: connectors.Low, Group: conn,
			DisplayName: "Metadata Change Monitoring Interval (ms)", Validate: connectors.AtLeast(1),
			Doc: "Milliseconds between two listings of the tables; a changed set reconfigures the tasks.",
		}).
		Define(connectors.ConfigKey{
			Name: SourceTimestampDelayKey, Type: connectors.TypeLong, Default: "0", Importance: connectors.High, Group: mode,
			DisplayName: "Delay Interval (ms)", Validate: connectors.AtLeast(0),
			Doc: "Rows are read only once their timestamp is this many milliseconds old, so that transactions " +
				"that commit late with an earlier timestamp are not skipped.",
		}))
}

func srcValidRegexps(v string) error {
	for _, p := range connectors.SplitList(v) {
		if _, err := regexp.Compile("^(?:" + p + ")$"); err != nil {
			return fmt.Errorf("bad regular expression %q: %v", p, err)
		}
	}
	return nil
}

// srcRelkinds maps table.types to pg_class.relkind.
var srcRelkinds = map[string]string{
	"TABLE": "r", "PARTITIONED TABLE": "p", "VIEW": "v", "MATERIALIZED VIEW": "m", "FOREIGN TABLE": "f",
}

func srcValidTableTypes(v string) error {
	for _, t := range connectors.SplitList(v) {
		if srcRelkinds[strings.ToUpper(t)] == "" {
			return fmt.Errorf("unknown table type %q: use TABLE, PARTITIONED TABLE, VIEW, MATERIALIZED VIEW or FOREIGN TABLE", t)
		}
	}
	return nil
}

// sourceConfig is a parsed, checked source config.
type sourceConfig struct {
	raw          map[string]string
	conn         ConnSettings
	mode         string
	incColumn    string
	tsColumns    []string
	validateNull bool
	query        string
	whitelist    []string
	blacklist    []string
	include      []*regexp.Regexp
	exclude      []*regexp.Regexp
	relkinds     []string
	schema       string
	prefix       string
	pollInterval time.Duration
	batch        int
	tablePoll    time.Duration
	delay        time.Duration
}

func (c *sourceConfig) usesIncrementing() bool {
	return c.mode == ModeIncrementing || c.mode == ModeTimestampIncrementing
}

func (c *sourceConfig) usesTimestamp() bool {
	return c.mode == ModeTimestamp || c.mode == ModeTimestampIncrementing
}

// parseSourceConfig validates props against the definition and the
// relations between keys, naming every bad key at once.
func parseSourceConfig(props map[string]string) (*sourceConfig, error) {
	ce := &connectors.ConfigError{}
	cfg, err := SourceConfigDef().Parse(props)
	if err != nil {
		return nil, err
	}
	c := &sourceConfig{
		raw:          props,
		conn:         ConnSettingsFrom(cfg),
		mode:         cfg.String(SourceModeKey),
		incColumn:    strings.TrimSpace(cfg.String(SourceIncrementingColumn)),
		tsColumns:    cfg.List(SourceTimestampColumn),
		validateNull: cfg.Bool(SourceValidateNonNullKey),
		query:        strings.TrimSpace(cfg.String(SourceQueryKey)),
		whitelist:    cfg.List(SourceTableWhitelistKey),
		blacklist:    cfg.List(SourceTableBlacklistKey),
		schema:       cfg.String(SourceSchemaPatternKey),
		prefix:       cfg.String(SourceTopicPrefixKey),
		pollInterval: time.Duration(cfg.Int(SourcePollIntervalKey)) * time.Millisecond,
		batch:        cfg.Int(SourceBatchMaxRowsKey),
		tablePoll:    cfg.Millis(SourceTablePollIntervalKey),
		delay:        cfg.Millis(SourceTimestampDelayKey),
	}
	for _, p := range cfg.List(SourceTableIncludeKey) {
		c.include = append(c.include, regexp.MustCompile("^(?:"+p+")$")) // validated by the definition
	}
	for _, p := range cfg.List(SourceTableExcludeKey) {
		c.exclude = append(c.exclude, regexp.MustCompile("^(?:"+p+")$"))
	}
	for _, t := range cfg.List(SourceTableTypesKey) {
		c.relkinds = append(c.relkinds, srcRelkinds[strings.ToUpper(t)])
	}
	if c.schema == "" {
		c.schema = "%"
	}
	c.check(ce)
	if err := ce.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *sourceConfig) check(ce *connectors.ConfigError) {
	if c.usesTimestamp() && len(c.tsColumns) == 0 {
		ce.Add(SourceTimestampColumn, fmt.Sprintf("Mode %s needs %s", c.mode, SourceTimestampColumn))
	}
	if c.mode == ModeBulk || c.mode == ModeTimestamp {
		if c.incColumn != "" {
			ce.Add(SourceIncrementingColumn, fmt.Sprintf("%s is used only by modes incrementing and timestamp+incrementing, not %s", SourceIncrementingColumn, c.mode))
		}
	}
	if c.mode == ModeBulk || c.mode == ModeIncrementing {
		if len(c.tsColumns) > 0 {
			ce.Add(SourceTimestampColumn, fmt.Sprintf("%s is used only by modes timestamp and timestamp+incrementing, not %s", SourceTimestampColumn, c.mode))
		}
	}
	set := map[string]bool{
		SourceTableWhitelistKey: len(c.whitelist) > 0, SourceTableBlacklistKey: len(c.blacklist) > 0,
		SourceTableIncludeKey: len(c.include) > 0, SourceTableExcludeKey: len(c.exclude) > 0,
	}
	var given []string
	for _, k := range []string{SourceTableWhitelistKey, SourceTableBlacklistKey, SourceTableIncludeKey, SourceTableExcludeKey} {
		if set[k] {
			given = append(given, k)
		}
	}
	if c.query != "" {
		for _, k := range given {
			ce.Add(k, fmt.Sprintf("%s cannot be combined with %s: a query names its own tables", k, SourceQueryKey))
		}
		if c.usesIncrementing() && c.incColumn == "" {
			ce.Add(SourceIncrementingColumn, fmt.Sprintf("Mode %s with a query needs %s", c.mode, SourceIncrementingColumn))
		}
	} else if len(given) > 1 {
		for _, k := range given {
			ce.Add(k, fmt.Sprintf("Only one of %s may be set; got %s", strings.Join([]string{SourceTableWhitelistKey, SourceTableBlacklistKey, SourceTableIncludeKey, SourceTableExcludeKey}, ", "), strings.Join(given, " and ")))
		}
	}
}

// srcTable names one table.
type srcTable struct{ Schema, Name string }

func (t srcTable) String() string { return t.Schema + "." + t.Name }

func (t srcTable) sql() string { return pgx.Identifier{t.Schema, t.Name}.Sanitize() }

// selected reports whether the filters of c select table t of database db.
func (c *sourceConfig) selected(db string, t srcTable) bool {
	names := []string{t.Name, t.Schema + "." + t.Name, db + "." + t.Schema + "." + t.Name}
	matchList := func(list []string) bool {
		for _, w := range list {
			if slices.Contains(names, w) {
				return true
			}
		}
		return false
	}
	matchRe := func(list []*regexp.Regexp) bool {
		for _, re := range list {
			for _, n := range names {
				if re.MatchString(n) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case len(c.whitelist) > 0:
		return matchList(c.whitelist)
	case len(c.blacklist) > 0:
		return !matchList(c.blacklist)
	case len(c.include) > 0:
		return matchRe(c.include)
	case len(c.exclude) > 0:
		return !matchRe(c.exclude)
	}
	return true
}

// listTables returns the selected tables, sorted by schema.name.
func (c *sourceConfig) listTables(ctx context.Context, conn *pgx.Conn) ([]srcTable, error) {
	rows, err := conn.Query(ctx, `
		SELECT n.nspname, c.relname
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = ANY($1) AND n.nspname LIKE $2
		  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%'
		ORDER BY 1, 2`, c.relkinds, c.schema)
	if err != nil {
		return nil, ClassifyError(fmt.Errorf("list tables: %w", err))
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (srcTable, error) {
		var t srcTable
		err := r.Scan(&t.Schema, &t.Name)
		return t, err
	})
	if err != nil {
		return nil, ClassifyError(fmt.Errorf("list tables: %w", err))
	}
	db := conn.Config().Database
	var out []srcTable
	for _, t := range all {
		if c.selected(db, t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b srcTable) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// connect opens a connection whose session time zone is UTC: timestamps
// without time zone then read and compare as UTC, as pgx decodes them.
func (c *sourceConfig) connect(ctx context.Context) (*pgx.Conn, error) {
	pc, err := ParseURL(c.conn.URL, c.conn.User, c.conn.Password)
	if err != nil {
		return nil, err
	}
	pc.RuntimeParams["timezone"] = "UTC"
	return ConnectConfig(ctx, pc, c.conn.Attempts, c.conn.Backoff)
}

// JdbcSourceConnector copies PostgreSQL tables, or a query's result, into
// Kafka. It lists the tables at Start, splits them over at most tasks.max
// tasks, and lists them again every table.poll.interval.ms, asking for new
// task configs when the set changed.
type JdbcSourceConnector struct {
	cfg *sourceConfig
	cc  connectors.ConnectorContext

	mu     sync.Mutex
	tables []srcTable

	stop chan struct{}
	done chan struct{}
}

var (
	_ connectors.SourceConnector = (*JdbcSourceConnector)(nil)
	_ connectors.ConfigValidator = (*JdbcSourceConnector)(nil)
)

func (c *JdbcSourceConnector) Config() *connectors.ConfigDef { return SourceConfigDef() }

// ExactlyOnceSupport is true in the modes whose offsets name a row exactly
// (incrementing and timestamp+incrementing): a task resumes with the rows
// after the last committed one, so rows committed with their offsets are
// neither lost nor read again. Bulk copies every table again at each poll,
// and timestamp alone cannot tell apart rows of the same timestamp that a
// transaction boundary split.
func (c *JdbcSourceConnector) ExactlyOnceSupport(config map[string]string) bool {
	mode := strings.TrimSpace(config[SourceModeKey])
	return mode == ModeIncrementing || mode == ModeTimestampIncrementing
}

func (c *JdbcSourceConnector) NewTask() connectors.SourceTask { return &SourceTask{} }

func (c *JdbcSourceConnector) Start(ctx context.Context, cc connectors.ConnectorContext, config map[string]string) error {
	cfg, err := parseSourceConfig(config)
	if err != nil {
		return err
	}
	c.cfg, c.cc = cfg, cc
	if cfg.query != "" {
		return nil
	}
	conn, err := cfg.connect(ctx)
	if err != nil {
		return err
	}
	tables, err := cfg.listTables(ctx, conn)
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	if len(tables) == 0 {
		c.logger().Warn().Msg("no table matches the config yet; the connector runs no task until one does")
	}
	c.tables = tables
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go c.monitor()
	return nil
}

func (c *JdbcSourceConnector) logger() *zerolog.Logger {
	if l := c.cc.Logger(); l != nil {
		return l
	}
	nop := zerolog.Nop()
	return &nop
}

// monitor lists the tables every table.poll.interval.ms and asks for a
// reconfiguration when the set changed. A failed listing (the database may
// be restarting) is logged and tried again at the next tick.
func (c *JdbcSourceConnector) monitor() {
	defer close(c.done)
	tick := time.NewTicker(c.cfg.tablePoll)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		tables, err := c.relist(c.stop)
		if err != nil {
			c.logger().Warn().Err(err).Msg("listing tables failed; trying again at the next table poll")
			continue
		}
		c.mu.Lock()
		changed := !slices.Equal(tables, c.tables)
		if changed {
			c.tables = tables
		}
		c.mu.Unlock()
		if changed {
			c.logger().Info().Int("tables", len(tables)).Msg("the set of tables changed; reconfiguring the tasks")
			c.cc.RequestTaskReconfiguration()
		}
	}
}

func (c *JdbcSourceConnector) relist(stop <-chan struct{}) ([]srcTable, error) {
	ctx, cancel := context.WithTimeout(context.Background(), min(max(c.cfg.tablePoll, 5*time.Second), 30*time.Second))
	defer cancel()
	// Stop must not wait for a slow listing.
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := c.cfg.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	return c.cfg.listTables(ctx, conn)
}

// TaskConfigs gives each task the connector's config plus its tables: one
// table per task while there are at most maxTasks tables, else the sorted
// tables dealt round-robin, so task loads differ by at most one table.
func (c *JdbcSourceConnector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	if c.cfg.query != "" {
		return []map[string]string{maps.Clone(c.cfg.raw)}, nil
	}
	c.mu.Lock()
	tables := slices.Clone(c.tables)
	c.mu.Unlock()
	n := min(maxTasks, len(tables))
	groups := make([][][2]string, n)
	for i, t := range tables {
		groups[i%n] = append(groups[i%n], [2]string{t.Schema, t.Name})
	}
	out := make([]map[string]string, 0, n)
	for _, g := range groups {
		b, err := json.Marshal(g)
		if err != nil {
			return nil, err
		}
		tc := maps.Clone(c.cfg.raw)
		tc[sourceTablesKey] = string(b)
		out = append(out, tc)
	}
	return out, nil
}

func (c *JdbcSourceConnector) Stop() error {
	if c.stop != nil {
		close(c.stop)
		<-c.done
		c.stop = nil
	}
	return nil
}

// ValidateConfig checks what the definition cannot: relations between keys,
// and, with a short timeout, the database itself: that it is reachable with
// the credentials, that listed tables exist, that the mode's columns exist
// with usable types, and that a query prepares.
func (c *JdbcSourceConnector) ValidateConfig(config map[string]string) map[string][]string {
	errs := map[string][]string{}
	add := func(k, msg string) { errs[k] = append(errs[k], msg) }
	if _, err := SourceConfigDef().Parse(config); err != nil {
		// The definition's own errors are reported by the runtime already;
		// without a parsable config there is nothing more to check.
		return nil
	}
	ce := &connectors.ConfigError{}
	cfg, err := parseSourceConfig(config)
	if err != nil {
		if errors.As(err, &ce) {
			return ce.Errors
		}
		add(ConnectionURLKey, err.Error())
		return errs
	}
	ctx, cancel := context.WithTimeout(context.Background(), sourceCheckTimeout)
	defer cancel()
	one := cfg.conn
	one.Attempts = 1 // a user is waiting: report rather than retry
	checkCfg := *cfg
	checkCfg.conn = one
	conn, err := checkCfg.connect(ctx)
	if err != nil {
		add(srcConnErrorKey(err), err.Error())
		return errs
	}
	defer conn.Close(context.Background())
	if cfg.query != "" {
		cols, err := srcDescribeQuery(ctx, conn, cfg.query)
		if err != nil {
			add(SourceQueryKey, fmt.Sprintf("the query does not prepare: %v", err))
			return errs
		}
		if _, err := srcResolveColumns(cfg, "the query", cols, nil); err != nil {
			add(err.key, err.Error())
		}
		return errs
	}
	tables, err := cfg.listTables(ctx, conn)
	if err != nil {
		add(ConnectionURLKey, err.Error())
		return errs
	}
	if len(cfg.whitelist) > 0 {
		for _, w := range cfg.whitelist {
			found := false
			for _, t := range tables {
				if slices.Contains([]string{t.Name, t.String(), conn.Config().Database + "." + t.String()}, w) {
					found = true
				}
			}
			if !found {
				add(SourceTableWhitelistKey, fmt.Sprintf("table %q does not exist in schemas matching %q (or is not a %s)", w, cfg.schema, strings.Join(connectors.SplitList(config[SourceTableTypesKey]), "/")))
			}
		}
	}
	for _, t := range tables {
		cols, auto, err := srcDescribeTable(ctx, conn, t)
		if err != nil {
			add(ConnectionURLKey, err.Error())
			continue
		}
		if _, err := srcResolveColumns(cfg, "table "+t.String(), cols, auto); err != nil {
			add(err.key, err.Error())
		}
	}
	return errs
}

// srcConnErrorKey names the key to blame for a failed connection.
func srcConnErrorKey(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "28P01": // invalid_password
			return ConnectionPasswordKey
		case "28000": // invalid_authorization_specification: unknown role, no pg_hba entry
			return ConnectionUserKey
		}
	}
	return ConnectionURLKey
}

// srcKeyedError is a config problem found in the database, with its key.
type srcKeyedError struct {
	key string
	msg string
}

func (e *srcKeyedError) Error() string { return e.msg }

// srcColumns are a relation's columns as the mode uses them.
type srcColumns struct {
	cols   []Column
	inc    int   // index of the incrementing column, -1 when none
	ts     []int // indexes of the timestamp columns
	schema *connectors.Schema
}

// srcResolveColumns finds the mode's columns among cols and checks them. auto
// is the identity or serial column, used when incrementing.column.name is
// empty (Confluent detects the auto-increment column the same way).
func srcResolveColumns(cfg *sourceConfig, what string, cols []Column, auto *Column) (*srcColumns, *srcKeyedError) {
	r := &srcColumns{cols: cols, inc: -1}
	find := func(name string) int {
		return slices.IndexFunc(cols, func(c Column) bool { return c.Name == name })
	}
	if cfg.usesIncrementing() {
		name := cfg.incColumn
		if name == "" {
			if auto == nil {
				return nil, &srcKeyedError{SourceIncrementingColumn, fmt.Sprintf("%s has no identity or serial column; set %s", what, SourceIncrementingColumn)}
			}
			name = auto.Name
		}
		if r.inc = find(name); r.inc < 0 {
			return nil, &srcKeyedError{SourceIncrementingColumn, fmt.Sprintf("%s has no column %q", what, name)}
		}
		c := cols[r.inc]
		if !c.IsInteger() {
			return nil, &srcKeyedError{SourceIncrementingColumn, fmt.Sprintf("column %q of %s is not an integer column (smallint, integer, bigint)", name, what)}
		}
		// A query's columns say nothing about NULLs: only tables are checked.
		if cfg.validateNull && c.Nullable && cfg.query == "" {
			return nil, &srcKeyedError{SourceIncrementingColumn, fmt.Sprintf("column %q of %s is nullable; make it NOT NULL or set %s=false", name, what, SourceValidateNonNullKey)}
		}
	}
	if cfg.usesTimestamp() {
		for _, name := range cfg.tsColumns {
			i := find(name)
			if i < 0 {
				return nil, &srcKeyedError{SourceTimestampColumn, fmt.Sprintf("%s has no column %q", what, name)}
			}
			if !cols[i].IsTimestamp() {
				return nil, &srcKeyedError{SourceTimestampColumn, fmt.Sprintf("column %q of %s is not a timestamp or date column", name, what)}
			}
			r.ts = append(r.ts, i)
		}
		if cfg.validateNull && len(r.ts) == 1 && cols[r.ts[0]].Nullable && cfg.query == "" {
			return nil, &srcKeyedError{SourceTimestampColumn, fmt.Sprintf("column %q of %s is nullable; make it NOT NULL or set %s=false", cfg.tsColumns[0], what, SourceValidateNonNullKey)}
		}
	}
	return r, nil
}

// srcDescribeTable reads a table's columns and its identity or serial column
// from the catalogs. A missing table is an error that names it.
func srcDescribeTable(ctx context.Context, conn *pgx.Conn, t srcTable) ([]Column, *Column, error) {
	rows, err := conn.Query(ctx, `
		SELECT a.attname, a.atttypid, a.atttypmod, NOT a.attnotnull,
		       a.attidentity <> '' OR coalesce(pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%', false)
		FROM pg_catalog.pg_attribute a
		LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = (SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		                    WHERE n.nspname = $1 AND c.relname = $2)
		  AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, t.Schema, t.Name)
	if err != nil {
		return nil, nil, ClassifyError(fmt.Errorf("describe table %s: %w", t, err))
	}
	var cols []Column
	var auto *Column
	for rows.Next() {
		var c Column
		var isAuto bool
		if err := rows.Scan(&c.Name, &c.OID, &c.TypeMod, &c.Nullable, &isAuto); err != nil {
			rows.Close()
			return nil, nil, ClassifyError(fmt.Errorf("describe table %s: %w", t, err))
		}
		cols = append(cols, c)
		if isAuto && auto == nil && c.IsInteger() {
			auto = &cols[len(cols)-1]
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, ClassifyError(fmt.Errorf("describe table %s: %w", t, err))
	}
	if len(cols) == 0 {
		return nil, nil, fmt.Errorf("table %s does not exist (or has no columns)", t)
	}
	if auto != nil {
		a := *auto // cols may not move again, but a copy is safer than a pointer into it
		auto = &a
	}
	return cols, auto, nil
}

// srcDescribeQuery prepares SELECT * FROM (query) and returns its columns;
// nothing says whether they are nullable, so all are.
func srcDescribeQuery(ctx context.Context, conn *pgx.Conn, query string) ([]Column, error) {
	sd, err := conn.Prepare(ctx, "", "SELECT * FROM ("+query+") AS q")
	if err != nil {
		return nil, ClassifyError(err)
	}
	cols := make([]Column, len(sd.Fields))
	for i, f := range sd.Fields {
		cols[i] = Column{Name: f.Name, OID: f.DataTypeOID, TypeMod: f.TypeModifier, Nullable: true}
	}
	return cols, nil
}

// timestampOffset and the helpers below convert offsets as they come back
// from the offsets store (json.Number), the conformance context (float64)
// or memory (int64).
func srcOffsetInt(v any) (int64, bool, error) {
	switch x := v.(type) {
	case nil:
		return 0, false, nil
	case int64:
		return x, true, nil
	case int:
		return int64(x), true, nil
	case int32:
		return int64(x), true, nil
	case float64:
		if x != float64(int64(x)) {
			return 0, false, fmt.Errorf("%v is not an integer", x)
		}
		return int64(x), true, nil
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil, err
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil, err
	}
	return 0, false, fmt.Errorf("%v (%T) is not an integer", v, v)
}

// srcOffsetTime rebuilds a timestamp from Confluent's pair: epoch millis (of
// java.sql.Timestamp, whose seconds part this is) and nanoseconds of the
// second.
func srcOffsetTime(ms, nanos int64) time.Time {
	sec := ms / 1000
	if ms%1000 < 0 {
		sec--
	}
	return time.Unix(sec, nanos).UTC()
}
