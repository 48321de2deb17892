package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/postgres"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// These test conn.go, which source and sink share; they are named
// TestSource* so that the source's test run (-run Source) includes them.

func TestSourceConnParseURL(t *testing.T) {
	cases := []struct {
		url, user, password             string
		host                            string
		port                            uint16
		db, wantUser, wantPass, appName string
		tls                             bool
	}{
		{url: "jdbc:postgresql://db.example:6543/inventory?user=u&password=p&ApplicationName=app&loggerLevel=OFF",
			host: "db.example", port: 6543, db: "inventory", wantUser: "u", wantPass: "p", appName: "app", tls: true},
		{url: "jdbc:postgresql://127.0.0.1/inv?user=u&password=p", user: "over", password: "ride",
			host: "127.0.0.1", port: 5432, db: "inv", wantUser: "over", wantPass: "ride"},
		{url: "jdbc:postgresql:inventory", user: "x", host: "localhost", port: 5432, db: "inventory", wantUser: "x"},
		{url: "postgres://a:b@10.1.2.3:5433/d?sslmode=disable", host: "10.1.2.3", port: 5433, db: "d", wantUser: "a", wantPass: "b"},
		{url: "postgresql://a@localhost/d", password: "pw", host: "localhost", port: 5432, db: "d", wantUser: "a", wantPass: "pw"},
		{url: "jdbc:postgresql://h/d?sslmode=require&user=u", host: "h", port: 5432, db: "d", wantUser: "u", tls: true},
	}
	for _, c := range cases {
		cfg, err := postgres.ParseURL(c.url, c.user, c.password)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		got := fmt.Sprintf("%s %d %s %s %s %s %v", cfg.Host, cfg.Port, cfg.Database, cfg.User, cfg.Password, cfg.RuntimeParams["application_name"], cfg.TLSConfig != nil)
		want := fmt.Sprintf("%s %d %s %s %s %s %v", c.host, c.port, c.db, c.wantUser, c.wantPass, c.appName, c.tls)
		if got != want {
			t.Errorf("%s: got %s, want %s", c.url, got, want)
		}
		if _, ok := cfg.RuntimeParams["loggerLevel"]; ok {
			t.Errorf("%s: a JDBC-only parameter reaches the server", c.url)
		}
		if cfg.ConnectTimeout != postgres.DefaultConnectTimeout {
			t.Errorf("%s: connect timeout %v", c.url, cfg.ConnectTimeout)
		}
	}
	for _, bad := range []string{"", "jdbc:mysql://h/d", "http://h/d", "jdbc:postgresql://h:notaport/d"} {
		_, err := postgres.ParseURL(bad, "", "")
		if err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// Passwords stay out of error messages.
	for _, bad := range []string{"jdbc:postgresql://h:x/d?password=secret", "postgres://u:secret@h:x/d", "jdbc:oracle://h/d?password=secret"} {
		if _, err := postgres.ParseURL(bad, "", ""); err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}

func TestSourceConnClassifyError(t *testing.T) {
	retriable := []error{
		&pgconn.PgError{Code: "57P01"}, &pgconn.PgError{Code: "40001"}, &pgconn.PgError{Code: "08006"},
		fmt.Errorf("x: %w", syscall.ECONNREFUSED), io.ErrUnexpectedEOF, context.DeadlineExceeded,
	}
	for _, err := range retriable {
		if !connectors.IsRetriable(postgres.ClassifyError(err)) {
			t.Errorf("%v is not retriable", err)
		}
	}
	permanent := []error{
		&pgconn.PgError{Code: "28P01"}, &pgconn.PgError{Code: "3D000"}, &pgconn.PgError{Code: "42P01"},
		&pgconn.PgError{Code: "42703"}, errors.New("some bug"), context.Canceled,
	}
	for _, err := range permanent {
		if connectors.IsRetriable(postgres.ClassifyError(err)) {
			t.Errorf("%v is retriable", err)
		}
	}
	if postgres.ClassifyError(nil) != nil {
		t.Error("nil became an error")
	}
}

func TestSourceConnConnect(t *testing.T) {
	s := pgtest.StartPrivate(t)
	s.Exec(t, "CREATE ROLE app LOGIN PASSWORD 'right'")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := postgres.Connect(ctx, postgres.ConnSettings{URL: s.JDBCURL(), User: "app", Password: "right"})
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	_, err = postgres.Connect(ctx, postgres.ConnSettings{URL: s.JDBCURL(), User: "app", Password: "wrong", Attempts: 3, Backoff: time.Hour})
	if err == nil || connectors.IsRetriable(err) || !strings.Contains(err.Error(), "password authentication failed") {
		t.Fatalf("wrong password: %v (a permanent error must not wait for the hour of backoff)", err)
	}
	s.Stop()
	start := time.Now()
	_, err = postgres.Connect(ctx, postgres.ConnSettings{URL: s.JDBCURL(), Attempts: 3, Backoff: 200 * time.Millisecond})
	if !connectors.IsRetriable(err) {
		t.Fatalf("stopped server: %v is not retriable", err)
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Fatalf("3 attempts 200 ms apart took %v", took)
	}
	s.Start()
}
