package pgtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStartGivesEachCallerItsOwnDatabase(t *testing.T) {
	a := Start(t)
	b := Start(t)
	if a.Database() == b.Database() {
		t.Fatalf("both callers got database %s", a.Database())
	}
	a.Exec(t, "CREATE TABLE t (id int)")
	a.Exec(t, "INSERT INTO t VALUES ($1)", 7)
	var n int
	if err := a.Conn(t).QueryRow(context.Background(), "SELECT id FROM t").Scan(&n); err != nil || n != 7 {
		t.Fatalf("read back %d, %v", n, err)
	}
	// b's database is empty: the table exists only in a's.
	var exists bool
	if err := b.Conn(t).QueryRow(context.Background(), "SELECT to_regclass('t') IS NOT NULL").Scan(&exists); err != nil || exists {
		t.Fatalf("table t visible in b's database: %v %v", exists, err)
	}
	if !strings.HasPrefix(a.URL(), "postgres://") || !strings.HasPrefix(a.JDBCURL(), "jdbc:postgresql://") {
		t.Fatalf("urls %s %s", a.URL(), a.JDBCURL())
	}
}

func TestJDBCURLConnectsWithDefaultUser(t *testing.T) {
	s := Start(t)
	// pgx reads the URL without the jdbc: prefix; with no user in it, it
	// connects as the OS user, as the JDBC driver would.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, strings.TrimPrefix(s.JDBCURL(), "jdbc:")+sslDisable(s.JDBCURL()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != s.Database() {
		t.Fatalf("connected to %q (%v), want %q", db, err, s.Database())
	}
}

func sslDisable(u string) string {
	if strings.Contains(u, "?") {
		return "&sslmode=disable"
	}
	return "?sslmode=disable"
}

func TestNewDatabaseIsSeparateAndDropped(t *testing.T) {
	s := Start(t)
	var second string
	t.Run("inner", func(t *testing.T) {
		u := s.NewDatabase(t, "second")
		cfg, err := pgx.ParseConfig(u)
		if err != nil {
			t.Fatal(err)
		}
		second = cfg.Database
		if second == s.Database() || !strings.Contains(second, "second") {
			t.Fatalf("second database %q", second)
		}
	})
	// The subtest's cleanup dropped its database.
	var n int
	if err := s.Conn(t).QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", second).Scan(&n); err != nil || n != 0 {
		t.Fatalf("database %s still exists (%d, %v)", second, n, err)
	}
}

func TestStopAndStartKeepDataAndPort(t *testing.T) {
	s := StartPrivate(t)
	s.Exec(t, "CREATE TABLE t (id int)")
	s.Exec(t, "INSERT INTO t VALUES (1)")
	url := s.URL()
	s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, url); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	s.Start()
	if s.URL() != url {
		t.Fatalf("url changed from %s to %s", url, s.URL())
	}
	var n int
	if err := s.Conn(t).QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after restart: %d rows, %v", n, err)
	}
}

func TestSharedServerIsRemovedAfterLastUser(t *testing.T) {
	var inst *instance
	t.Run("user", func(t *testing.T) {
		if Start(t).inst == nil {
			t.Skip("external server")
		}
		shared.Lock()
		inst = shared.inst
		shared.Unlock()
	})
	if inst == nil {
		t.Skip("external server")
	}
	shared.Lock()
	still := shared.inst == inst
	shared.Unlock()
	if still || inst.running() {
		t.Fatal("shared server still running after its last user finished")
	}
}

func TestDBNameIsSafeAndBounded(t *testing.T) {
	n := dbName(strings.Repeat("TestSome/Very-Long Name", 10))
	if len(n) > 63 || strings.ContainsAny(n, "/- ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		t.Fatalf("bad name %q", n)
	}
	if dbName("x") == dbName("x") {
		t.Fatal("names repeat")
	}
}

func TestExternalURLGetsFreshDatabases(t *testing.T) {
	if os.Getenv(EnvURL) != "" {
		t.Skip("already running against an external server")
	}
	host := StartPrivate(t)
	var made string
	t.Run("external", func(t *testing.T) {
		t.Setenv(EnvURL, host.URL())
		s := Start(t)
		if s.inst != nil || s.Database() == host.Database() {
			t.Fatalf("not an external database: %+v", s)
		}
		made = s.Database()
		s.Exec(t, "CREATE TABLE t (id int)")
		if !strings.Contains(s.JDBCURL(), "user=") {
			t.Errorf("external JDBC URL without its user: %s", s.JDBCURL())
		}
	})
	var n int
	if err := host.Conn(t).QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", made).Scan(&n); err != nil || n != 0 {
		t.Fatalf("external database %s not dropped (%d, %v)", made, n, err)
	}
}
