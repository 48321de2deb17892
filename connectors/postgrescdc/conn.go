package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/postgres"
)

// sessionParams fix the output formats the connector parses, whatever
// the server's or the role's defaults: pgoutput writes values with the
// walsender session's settings, the snapshot with its own session's.
var sessionParams = map[string]string{
	"DateStyle":          "ISO, YMD",
	"TimeZone":           "UTC",
	"IntervalStyle":      "iso_8601",
	"extra_float_digits": "3",
	"bytea_output":       "hex",
	"lc_monetary":        "C",
	"application_name":   "sluice-postgres-cdc",
}

// connConfig builds the pgx config of the database.* keys. The password is
// set on the config, never put in a string that an error could repeat.
func (s *settings) connConfig() (*pgx.ConnConfig, error) {
	dsn := "host=" + quoteDSN(s.host) + " port=" + strconv.Itoa(s.port) + " dbname=" + quoteDSN(s.dbname) +
		" user=" + quoteDSN(s.user) + " sslmode=" + s.sslmode + " connect_timeout=10"
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			err = pe.Unwrap()
		}
		return nil, fmt.Errorf("bad database settings: %v", err)
	}
	cfg.Password = s.password
	for k, v := range sessionParams {
		cfg.RuntimeParams[k] = v
	}
	return cfg, nil
}

func quoteDSN(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// connect opens the connection for catalog queries and the snapshot.
func (s *settings) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := s.connConfig()
	if err != nil {
		return nil, err
	}
	return postgres.ConnectConfig(ctx, cfg, 1, 0)
}

// connectReplication opens a logical replication connection
// (replication=database), which runs CREATE_REPLICATION_SLOT and
// START_REPLICATION.
func (s *settings) connectReplication(ctx context.Context) (*pgconn.PgConn, error) {
	cfg, err := s.connConfig()
	if err != nil {
		return nil, err
	}
	pc := cfg.Config.Copy()
	pc.RuntimeParams["replication"] = "database"
	conn, err := pgconn.ConnectConfig(ctx, pc)
	if err != nil {
		return nil, postgres.ClassifyError(fmt.Errorf("open a replication connection to database %q on %s:%d as %q: %w", s.dbname, s.host, s.port, s.user, err))
	}
	return conn, nil
}

// Preflight errors name what to change; the key they belong to is the one
// validation reports them under.
type preflightError struct {
	key string
	err error
}

func (e *preflightError) Error() string { return e.err.Error() }
func (e *preflightError) Unwrap() error { return e.err }

// preflight checks what logical replication needs of the server and the
// role and, when checkSlot, that the slot is not in use elsewhere (not
// during validation: a running connector's own task holds its slot).
func (s *settings) preflight(ctx context.Context, conn *pgx.Conn, checkSlot bool) error {
	var walLevel string
	if err := conn.QueryRow(ctx, "SHOW wal_level").Scan(&walLevel); err != nil {
		return postgres.ClassifyError(fmt.Errorf("read wal_level: %w", err))
	}
	if walLevel != "logical" {
		return &preflightError{PluginNameKey, fmt.Errorf("the server's wal_level is %q, but change data capture needs wal_level=logical: "+
			"run ALTER SYSTEM SET wal_level = logical and restart PostgreSQL", walLevel)}
	}
	var replication, super bool
	if err := conn.QueryRow(ctx, "SELECT rolreplication, rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&replication, &super); err != nil {
		return postgres.ClassifyError(fmt.Errorf("read the role's attributes: %w", err))
	}
	if !replication && !super {
		return &preflightError{UserKey, fmt.Errorf("role %q may not use logical replication: it needs the REPLICATION attribute "+
			"(ALTER ROLE %s REPLICATION) or to be a superuser", s.user, pgx.Identifier{s.user}.Sanitize())}
	}
	if checkSlot {
		if err := s.slotFree(ctx, conn); err != nil {
			return err
		}
	}
	if s.pubMode == "disabled" {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", s.publication).Scan(&exists); err != nil {
			return postgres.ClassifyError(fmt.Errorf("look up publication %q: %w", s.publication, err))
		}
		if !exists {
			return &preflightError{PublicationNameKey, fmt.Errorf("publication %q does not exist and publication.autocreate.mode is disabled: "+
				"create it (CREATE PUBLICATION %s FOR TABLE ...) or set publication.autocreate.mode to all_tables or filtered",
				s.publication, pgx.Identifier{s.publication}.Sanitize())}
		}
	}
	return nil
}

// slotState is the slot as pg_replication_slots shows it.
type slotState struct {
	exists   bool
	database string
	plugin   string
	active   bool
	pid      int32
}

func (s *settings) slotState(ctx context.Context, conn *pgx.Conn) (slotState, error) {
	var st slotState
	var db, plugin *string
	var pid *int32
	err := conn.QueryRow(ctx, "SELECT database, plugin, active, active_pid FROM pg_replication_slots WHERE slot_name = $1", s.slot).
		Scan(&db, &plugin, &st.active, &pid)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return st, postgres.ClassifyError(fmt.Errorf("look up replication slot %q: %w", s.slot, err))
	}
	st.exists = true
	if db != nil {
		st.database = *db
	}
	if plugin != nil {
		st.plugin = *plugin
	}
	if pid != nil {
		st.pid = *pid
	}
	return st, nil
}

// slotFree fails when the slot is streaming to another process (retried:
// that process may be a predecessor of this task that is stopping), or
// belongs to another database or plugin (not retried).
func (s *settings) slotFree(ctx context.Context, conn *pgx.Conn) error {
	st, err := s.slotState(ctx, conn)
	if err != nil || !st.exists {
		return err
	}
	if st.database != s.dbname || st.plugin != "pgoutput" {
		return &preflightError{SlotNameKey, fmt.Errorf("replication slot %q exists for database %q with plugin %q; "+
			"this connector needs one for database %q with pgoutput: choose another slot.name", s.slot, st.database, st.plugin, s.dbname)}
	}
	if st.active {
		return connectors.Retriable(&preflightError{SlotNameKey, fmt.Errorf("replication slot %q is in use by another process (PID %d): "+
			"another connector (or a stopping task) streams from it; give each connector its own slot.name", s.slot, st.pid)})
	}
	return nil
}

// ensurePublication creates (all_tables, filtered) or checks (disabled)
// the publication, as publication.autocreate.mode says.
func (s *settings) ensurePublication(ctx context.Context, conn *pgx.Conn) error {
	var exists, allTables bool
	err := conn.QueryRow(ctx, "SELECT true, puballtables FROM pg_publication WHERE pubname = $1", s.publication).Scan(&exists, &allTables)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return postgres.ClassifyError(fmt.Errorf("look up publication %q: %w", s.publication, err))
	}
	name := pgx.Identifier{s.publication}.Sanitize()
	with := ""
	if s.publish != "" {
		with = " WITH (publish = '" + s.publish + "')"
	}
	switch s.pubMode {
	case "disabled":
		if !exists {
			return &preflightError{PublicationNameKey, fmt.Errorf("publication %q does not exist and publication.autocreate.mode is disabled", s.publication)}
		}
		return nil
	case "all_tables":
		if exists {
			return nil
		}
		_, err = conn.Exec(ctx, "CREATE PUBLICATION "+name+" FOR ALL TABLES"+with)
	case "filtered":
		tables, lerr := s.capturedTables(ctx, conn)
		if lerr != nil {
			return lerr
		}
		if len(tables) == 0 {
			return &preflightError{TableIncludeKey, fmt.Errorf("publication.autocreate.mode is filtered, but no table matches the include and exclude lists")}
		}
		list := make([]string, len(tables))
		for i, t := range tables {
			list[i] = pgx.Identifier{t[0], t[1]}.Sanitize()
		}
		switch {
		case !exists:
			_, err = conn.Exec(ctx, "CREATE PUBLICATION "+name+" FOR TABLE "+strings.Join(list, ", ")+with)
		case allTables:
			return &preflightError{PublicationNameKey, fmt.Errorf("publication %q is FOR ALL TABLES, but publication.autocreate.mode is filtered: "+
				"drop it or use all_tables", s.publication)}
		default:
			_, err = conn.Exec(ctx, "ALTER PUBLICATION "+name+" SET TABLE "+strings.Join(list, ", "))
		}
	}
	if err != nil {
		return postgres.ClassifyError(fmt.Errorf("create publication %q: %w", s.publication, err))
	}
	return nil
}

// capturedTables lists the ordinary tables (partitions included: pgoutput
// streams a partition's changes under its own name) the include and
// exclude lists select, as (schema, table) pairs in the order Debezium
// snapshots them (snapshotOrder).
func (s *settings) capturedTables(ctx context.Context, conn *pgx.Conn) ([][2]string, error) {
	rows, err := conn.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' ORDER BY n.nspname, c.relname`)
	if err != nil {
		return nil, postgres.ClassifyError(fmt.Errorf("list tables: %w", err))
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var sch, tbl string
		if err := rows.Scan(&sch, &tbl); err != nil {
			return nil, err
		}
		if s.capturesTable(sch, tbl) {
			out = append(out, [2]string{sch, tbl})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, postgres.ClassifyError(err)
	}
	return s.snapshotOrder(out), nil
}

// snapshotOrder orders tables as Debezium's snapshot does: for each
// regular expression of table.include.list in turn, the tables it matches
// that no earlier one did, sorted by "schema.table"; without the list, all
// of them sorted so.
func (s *settings) snapshotOrder(tables [][2]string) [][2]string {
	sorted := slices.Clone(tables)
	slices.SortFunc(sorted, func(a, b [2]string) int { return strings.Compare(a[0]+"."+a[1], b[0]+"."+b[1]) })
	if len(s.tableInclude) == 0 {
		return sorted
	}
	out := make([][2]string, 0, len(sorted))
	taken := make([]bool, len(sorted))
	for _, re := range s.tableInclude {
		for i, t := range sorted {
			if !taken[i] && re.MatchString(t[0]+"."+t[1]) {
				taken[i] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// checkConnection runs the preflight on a new connection: what validation
// reports about the database itself.
func (s *settings) checkConnection(ctx context.Context) error {
	conn, err := s.connect(ctx)
	if err != nil {
		return &preflightError{HostnameKey, err}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	return s.preflight(ctx, conn, false)
}
