// Package postgres holds the PostgreSQL source and sink connectors, ports of
// Confluent's JDBC connectors (io.confluent.connect.jdbc.JdbcSourceConnector
// and JdbcSinkConnector) configured with the same keys, built on pgx.
//
// This file is what both connectors share: connection URLs (JDBC style and
// libpq style), connecting, telling transient from permanent errors, and the
// mapping of PostgreSQL column types to Connect schemas.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluice-io/sluice/connectors"
)

// Connection keys, as Confluent's JDBC connectors name them.
const (
	ConnectionURLKey       = "connection.url"
	ConnectionUserKey      = "connection.user"
	ConnectionPasswordKey  = "connection.password"
	ConnectionAttemptsKey  = "connection.attempts"
	ConnectionBackoffMsKey = "connection.backoff.ms"

	// DefaultConnectionAttempts and DefaultConnectionBackoff are Confluent's
	// defaults for the two keys above.
	DefaultConnectionAttempts = 3
	DefaultConnectionBackoff  = 10 * time.Second

	// DefaultConnectTimeout bounds one connection attempt when neither the
	// URL (connect_timeout, connectTimeout) nor the caller's ctx sets less.
	DefaultConnectTimeout = 10 * time.Second
)

// ConnectionConfigDef defines the connection keys, for a connector's
// ConfigDef to Merge.
func ConnectionConfigDef() *connectors.ConfigDef {
	const group = "Database"
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{
			Name: ConnectionURLKey, Required: true, Importance: connectors.High, Group: group,
			DisplayName: "JDBC URL", Validate: validateURL,
			Doc: "The database to connect to: jdbc:postgresql://host:port/database?user=...&password=... " +
				"(as Confluent's JDBC connectors take it) or postgres://user:password@host:port/database.",
		}).
		Define(connectors.ConfigKey{
			Name: ConnectionUserKey, Importance: connectors.High, Group: group, DisplayName: "JDBC User",
			Doc: "The role to connect as; overrides a user given in the URL.",
		}).
		Define(connectors.ConfigKey{
			Name: ConnectionPasswordKey, Type: connectors.TypePassword, Importance: connectors.High, Group: group,
			DisplayName: "JDBC Password", Doc: "The role's password; overrides a password given in the URL.",
		}).
		Define(connectors.ConfigKey{
			Name: ConnectionAttemptsKey, Type: connectors.TypeInt, Default: strconv.Itoa(DefaultConnectionAttempts),
			Importance: connectors.Low, Group: group, DisplayName: "JDBC connection attempts",
			Validate: connectors.AtLeast(1),
			Doc:      "How many times to try to connect when the database is unreachable before reporting the error (which the runtime then retries with backoff).",
		}).
		Define(connectors.ConfigKey{
			Name: ConnectionBackoffMsKey, Type: connectors.TypeLong, Default: strconv.FormatInt(DefaultConnectionBackoff.Milliseconds(), 10),
			Importance: connectors.Low, Group: group, DisplayName: "JDBC connection backoff (millis)",
			Validate: connectors.AtLeast(0),
			Doc:      "Milliseconds to wait between connection attempts.",
		})
}

func validateURL(v string) error {
	_, err := ParseURL(v, "", "")
	return err
}

// ConnSettings is what Connect needs to reach a database. Attempts (at
// least 1) and Backoff apply to transient connection errors only.
type ConnSettings struct {
	URL, User, Password string
	Attempts            int
	Backoff             time.Duration
}

// ConnSettingsFrom reads the connection keys of a parsed config whose
// definition includes ConnectionConfigDef.
func ConnSettingsFrom(c *connectors.Config) ConnSettings {
	return ConnSettings{
		URL:      c.String(ConnectionURLKey),
		User:     c.String(ConnectionUserKey),
		Password: c.String(ConnectionPasswordKey),
		Attempts: c.Int(ConnectionAttemptsKey),
		Backoff:  c.Millis(ConnectionBackoffMsKey),
	}
}

// jdbcParams maps the PostgreSQL JDBC driver's URL parameters to libpq's.
// Parameters of the driver that mean nothing to pgx (loggerLevel,
// prepareThreshold, ...) are dropped, for pgx would send them to the server
// as run-time parameters and the server would refuse the connection.
var jdbcParams = map[string]string{
	"user":             "user",
	"password":         "password",
	"sslmode":          "sslmode",
	"sslcert":          "sslcert",
	"sslkey":           "sslkey",
	"sslrootcert":      "sslrootcert",
	"sslpassword":      "sslpassword",
	"ApplicationName":  "application_name",
	"applicationName":  "application_name",
	"connectTimeout":   "connect_timeout",
	"options":          "options",
	"targetServerType": "target_session_attrs",
}

// ParseURL parses a jdbc:postgresql:// URL (the JDBC driver's syntax,
// including jdbc:postgresql:database and jdbc:postgresql://host1,host2/db)
// or a postgres:// / postgresql:// URL or a key=value DSN. A non-empty
// user or password overrides the URL's, as connection.user and
// connection.password do in Confluent's connectors. Without an sslmode, a
// connection to a loopback address or a unix socket uses no TLS, others
// try TLS first and fall back to plain (libpq's and the driver's "prefer").
func ParseURL(raw, user, password string) (*pgx.ConnConfig, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("the connection URL is empty")
	}
	connString := raw
	sawSSLMode := false
	switch {
	case strings.HasPrefix(raw, "jdbc:postgresql:"):
		s, hasMode, err := jdbcToLibpq(raw)
		if err != nil {
			return nil, err
		}
		connString, sawSSLMode = s, hasMode
	case strings.HasPrefix(raw, "jdbc:"):
		return nil, fmt.Errorf("%q is not a PostgreSQL URL: only jdbc:postgresql:// is supported", redact(raw))
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("bad connection URL %q: %v", redact(raw), urlParseErr(err))
		}
		sawSSLMode = u.Query().Has("sslmode") || u.Query().Has("ssl")
	case strings.Contains(raw, "="):
		sawSSLMode = strings.Contains(raw, "sslmode=")
	default:
		return nil, fmt.Errorf("%q is not a connection URL: use jdbc:postgresql://host:port/database or postgres://host:port/database", redact(raw))
	}
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("bad connection URL %q: %v", redact(raw), unwrapParse(err))
	}
	if !sawSSLMode && isLocal(cfg.Host) {
		// "prefer" would first ask a local server for TLS, which it rarely
		// has; asking costs a round trip on every connection.
		cfg.TLSConfig = nil
		cfg.Fallbacks = nil
	}
	if user != "" {
		cfg.User = user
	}
	if password != "" {
		cfg.Password = password
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	return cfg, nil
}

// unwrapParse drops pgx's wrapping, which repeats the connection string,
// password included.
func unwrapParse(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) && pe.Unwrap() != nil {
		return pe.Unwrap()
	}
	return err
}

func isLocal(host string) bool {
	if strings.HasPrefix(host, "/") || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// jdbcToLibpq turns a JDBC URL into a postgres:// URL, and says whether it
// named an sslmode.
func jdbcToLibpq(raw string) (string, bool, error) {
	rest := strings.TrimPrefix(raw, "jdbc:postgresql:")
	if !strings.HasPrefix(rest, "//") {
		// jdbc:postgresql:database: localhost:5432, as the driver has it.
		if rest == "" || strings.HasPrefix(rest, "/") {
			rest = "//localhost/" + strings.TrimPrefix(rest, "/")
		} else {
			rest = "//localhost/" + rest
		}
	}
	u, err := url.Parse("postgres:" + rest)
	if err != nil {
		return "", false, fmt.Errorf("bad JDBC URL %q: %v", redact(raw), urlParseErr(err))
	}
	if u.Host == "" {
		u.Host = "localhost"
	}
	in := u.Query()
	out := url.Values{}
	sawSSLMode := false
	for k, vs := range in {
		if len(vs) == 0 {
			continue
		}
		v := vs[len(vs)-1]
		switch {
		case k == "ssl":
			// The driver's ssl=true verifies the server; sslmode wins when
			// both are given.
			if strings.EqualFold(v, "true") && !in.Has("sslmode") {
				out.Set("sslmode", "verify-full")
				sawSSLMode = true
			}
		case k == "currentSchema":
			out.Set("search_path", v)
		case jdbcParams[k] != "":
			out.Set(jdbcParams[k], v)
			if k == "sslmode" {
				sawSSLMode = true
			}
		}
	}
	u.RawQuery = out.Encode()
	return u.String(), sawSSLMode, nil
}

// urlParseErr drops url.Parse's wrapping, which repeats the URL, password
// included.
func urlParseErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redact hides passwords in a URL shown in an error message. It works on
// the text, for the URL may be one that does not parse.
func redact(raw string) string {
	raw = redactParam.ReplaceAllString(raw, "${1}xxxxx")
	return redactUserinfo.ReplaceAllString(raw, "${1}xxxxx@")
}

var (
	redactParam    = regexp.MustCompile(`((?:^|[?&\s])password=)[^&\s]*`)
	redactUserinfo = regexp.MustCompile(`(://[^/@:]*:)[^/@]*@`)
)

// Connect opens a connection. Each attempt is bounded by the URL's connect
// timeout (DefaultConnectTimeout when it has none) and by ctx. Transient
// failures are tried again s.Attempts times, s.Backoff apart, as long as
// ctx allows. The error is classified by ClassifyError: Retriable when the
// database may come back, plain when only a config change helps.
func Connect(ctx context.Context, s ConnSettings) (*pgx.Conn, error) {
	cfg, err := ParseURL(s.URL, s.User, s.Password)
	if err != nil {
		return nil, err
	}
	return ConnectConfig(ctx, cfg, s.Attempts, s.Backoff)
}

// ConnectConfig is Connect for a parsed config.
func ConnectConfig(ctx context.Context, cfg *pgx.ConnConfig, attempts int, backoff time.Duration) (*pgx.Conn, error) {
	attempts = max(attempts, 1)
	for i := 1; ; i++ {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			return conn, nil
		}
		err = ClassifyError(fmt.Errorf("connect to %s: %w", describeTarget(cfg), err))
		if !connectors.IsRetriable(err) || i >= attempts || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(backoff):
		}
	}
}

func describeTarget(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("database %q on %s as %q", cfg.Database, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), cfg.User)
}

// transientStates are SQLSTATEs after which the same statement may succeed
// later: the server is shutting down, starting, out of connections, or the
// transaction lost a race.
var transientStates = map[string]bool{
	"57P01": true, // admin_shutdown
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now (starting up, recovering)
	"57P05": true, // idle_session_timeout
	"53300": true, // too_many_connections
	"53400": true, // configuration_limit_exceeded
	"40001": true, // serialization_failure
	"40P01": true, // deadlock_detected
	"55P03": true, // lock_not_available
	"58000": true, // system_error
	"58030": true, // io_error
}

// ClassifyError marks err connectors.Retriable when it is transient: the
// database is unreachable or went away (connection refused or reset, a
// timeout, administrator shutdown, class 08 connection exceptions), or the
// transaction hit a serialization failure or deadlock. Errors that only a
// config or schema change fixes (bad password, missing database, table or
// column, syntax) are returned unchanged, so the task fails with them.
func ClassifyError(err error) error {
	if err == nil || connectors.IsRetriable(err) {
		return err
	}
	if IsTransient(err) {
		return connectors.Retriable(err)
	}
	return err
}

// IsTransient reports whether err is one ClassifyError marks Retriable.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return transientStates[pg.Code] || strings.HasPrefix(pg.Code, "08")
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENOENT} {
		// ENOENT: the unix socket of a stopped server is gone.
		if errors.Is(err, errno) {
			return true
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTemporary || dnsErr.IsTimeout
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	// pgx reports a connection it had to close mid-statement this way.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") ||
		pgconn.SafeToRetry(err)
}

// Column is a column of a table or query result, as the source maps it.
type Column struct {
	Name     string
	OID      uint32 // pg_type oid
	TypeMod  int32  // atttypmod; -1 when none
	Nullable bool
}

// Decimal precision and scale hide in numeric's typmod: ((p << 16) | s) + 4.
func numericScale(typmod int32) (int, bool) {
	if typmod < 4 {
		return 0, false
	}
	return int((typmod - 4) & 0xffff), true
}

// Schema is the column's Connect schema, optional when the column is
// nullable:
//
//	int2 -> int16, int4 -> int32, int8 -> int64, float4 -> float32,
//	float8 -> float64, bool -> boolean, text/varchar/char/name -> string,
//	bytea -> bytes, numeric(p,s) -> Decimal (scale s, *big.Rat),
//	timestamp/timestamptz -> Timestamp, date -> Date, time -> Time
//	(time.Time), everything else (json, jsonb, uuid, numeric without a
//	scale, arrays, intervals, enums, ...) -> string, read as ::text.
func (c Column) Schema() *connectors.Schema {
	var s connectors.Schema
	switch c.OID {
	case pgtype.Int2OID:
		s = connectors.Schema{Type: connectors.Int16}
	case pgtype.Int4OID:
		s = connectors.Schema{Type: connectors.Int32}
	case pgtype.Int8OID:
		s = connectors.Schema{Type: connectors.Int64}
	case pgtype.Float4OID:
		s = connectors.Schema{Type: connectors.Float32}
	case pgtype.Float8OID:
		s = connectors.Schema{Type: connectors.Float64}
	case pgtype.BoolOID:
		s = connectors.Schema{Type: connectors.Boolean}
	case pgtype.ByteaOID:
		s = connectors.Schema{Type: connectors.Bytes}
	case pgtype.NumericOID:
		if scale, ok := numericScale(c.TypeMod); ok {
			s = connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1,
				Parameters: map[string]string{"scale": strconv.Itoa(scale)}}
		} else {
			// An unconstrained numeric has no fixed scale, which a Connect
			// Decimal needs: its text keeps every digit.
			s = connectors.Schema{Type: connectors.String}
		}
	case pgtype.TimestampOID, pgtype.TimestamptzOID:
		s = connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical, Version: 1}
	case pgtype.DateOID:
		s = connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical, Version: 1}
	case pgtype.TimeOID:
		s = connectors.Schema{Type: connectors.Int32, Name: connectors.TimeLogical, Version: 1}
	default:
		s = connectors.Schema{Type: connectors.String}
	}
	s.Optional = c.Nullable
	return &s
}

// ReadsAsText reports whether the column is selected as ::text: the types
// Schema maps to a string although pgx would decode them otherwise.
func (c Column) ReadsAsText() bool {
	switch c.OID {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.Float4OID, pgtype.Float8OID,
		pgtype.BoolOID, pgtype.ByteaOID, pgtype.TimestampOID, pgtype.TimestamptzOID,
		pgtype.DateOID, pgtype.TimeOID, pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
		return false
	case pgtype.NumericOID:
		_, ok := numericScale(c.TypeMod)
		return !ok
	}
	return true
}

// SelectExpr is the column's expression in a select list, qualified by
// the relation alias when one is given.
func (c Column) SelectExpr(alias string) string {
	e := pgx.Identifier{c.Name}.Sanitize()
	if alias != "" {
		e = alias + "." + e
	}
	if c.ReadsAsText() {
		return e + "::text AS " + pgx.Identifier{c.Name}.Sanitize()
	}
	return e
}

// IsInteger reports whether the column holds integers (int2, int4, int8),
// as an incrementing column must.
func (c Column) IsInteger() bool {
	return c.OID == pgtype.Int2OID || c.OID == pgtype.Int4OID || c.OID == pgtype.Int8OID
}

// IsTimestamp reports whether the column is a timestamp, with or without
// time zone, or a date, as a timestamp column must be.
func (c Column) IsTimestamp() bool {
	return c.OID == pgtype.TimestampOID || c.OID == pgtype.TimestamptzOID || c.OID == pgtype.DateOID
}

// ConnectValue converts what pgx decoded for the column (rows.Values, with
// the column selected by SelectExpr) into the Go value of its Schema.
func (c Column) ConnectValue(v any) (any, error) {
	if v == nil {
		if !c.Nullable {
			return nil, fmt.Errorf("column %q is NOT NULL yet returned NULL", c.Name)
		}
		return nil, nil
	}
	switch x := v.(type) {
	case pgtype.Numeric:
		if !x.Valid {
			return nil, nil
		}
		if x.NaN || x.InfinityModifier != pgtype.Finite {
			return nil, fmt.Errorf("column %q: %v cannot be a Connect Decimal", c.Name, numericText(x))
		}
		r := new(big.Rat).SetInt(x.Int)
		if x.Exp > 0 {
			r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(x.Exp)), nil)))
		} else if x.Exp < 0 {
			r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-x.Exp)), nil)))
		}
		return r, nil
	case pgtype.Time:
		if !x.Valid {
			return nil, nil
		}
		return time.UnixMicro(x.Microseconds).UTC(), nil
	case pgtype.InfinityModifier:
		return nil, fmt.Errorf("column %q: %v cannot be a Connect %s", c.Name, x, c.Schema().Name)
	case time.Time:
		if c.OID == pgtype.DateOID {
			return time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, time.UTC), nil
		}
		return x, nil
	case int16, int32, int64, float32, float64, bool, string, []byte:
		return x, nil
	}
	return nil, fmt.Errorf("column %q: unexpected %T from the database", c.Name, v)
}

func numericText(n pgtype.Numeric) string {
	if n.NaN {
		return "NaN"
	}
	if n.InfinityModifier == pgtype.Infinity {
		return "Infinity"
	}
	return "-Infinity"
}
