// Package pgtest gives tests and benchmarks a private PostgreSQL database.
//
// With SLUICE_TEST_PG_URL set, every Start creates a fresh database on that
// server and drops it in cleanup. Otherwise the package runs a server of its
// own: initdb (once per machine and PostgreSQL version, kept as a template
// that each server copies) and postgres on a free 127.0.0.1 port, with its
// unix socket inside its temporary directory. One server process is shared by
// all callers of Start in a test binary, each with its own database; it stops
// and its directory is removed when the last caller's test has finished.
//
// When no PostgreSQL is installed and SLUICE_TEST_PG_URL is unset, Start
// skips the test, unless SLUICE_REQUIRE_PG=1 (CI sets it), which fails it.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables the package reads.
const (
	// EnvURL names an existing server (postgres://user:pass@host:port/db) to
	// use instead of starting one; its user must be allowed to create databases.
	EnvURL = "SLUICE_TEST_PG_URL"
	// EnvRequire=1 turns "no PostgreSQL found" from a skip into a failure.
	EnvRequire = "SLUICE_REQUIRE_PG"
)

// Server is one test's database on a PostgreSQL server.
type Server struct {
	tb       testing.TB
	inst     *instance // nil when the server is SLUICE_TEST_PG_URL's
	external *url.URL  // SLUICE_TEST_PG_URL, parsed
	host     string
	port     int
	user     string
	password string
	db       string
}

// Start returns a fresh, empty database, dropped when tb's test ends. It
// shares the server process with the other callers in the test binary; see
// StartPrivate for a test that stops the server.
func Start(tb testing.TB) *Server {
	tb.Helper()
	if raw := os.Getenv(EnvURL); raw != "" {
		return startExternal(tb, raw)
	}
	inst := acquireShared(tb)
	s := inst.server(tb)
	s.db = s.createDatabase(tb, tb.Name())
	return s
}

// StartPrivate is Start with a server process of the caller's own, so that
// Stop and Start cannot disturb other tests running in parallel. With
// SLUICE_TEST_PG_URL set it skips the test: that server cannot be stopped.
func StartPrivate(tb testing.TB) *Server {
	tb.Helper()
	return StartPrivateWith(tb)
}

// StartPrivateWith is StartPrivate with server settings of the test's own
// ("wal_level=replica"), for a test of how code meets a server configured
// otherwise than the default one.
func StartPrivateWith(tb testing.TB, settings ...string) *Server {
	tb.Helper()
	if os.Getenv(EnvURL) != "" {
		tb.Skipf("pgtest: %s is set; a test that stops the server needs a server of its own", EnvURL)
	}
	bin := findBinaries(tb)
	inst, err := newInstance(bin)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	inst.settings = settings
	tb.Cleanup(inst.destroy)
	if err := inst.start(); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	s := inst.server(tb)
	s.db = s.createDatabase(tb, tb.Name())
	return s
}

// URL is the database's postgres:// URL.
func (s *Server) URL() string { return s.urlFor(s.db) }

// JDBCURL is the database's jdbc:postgresql:// URL, as a Kafka Connect user
// would write it. For the local server it names no user: the server's
// superuser is named after the OS user running the test, which is the
// default user of pgx and of the JDBC driver alike.
func (s *Server) JDBCURL() string {
	u := fmt.Sprintf("jdbc:postgresql://%s/%s", net.JoinHostPort(s.host, strconv.Itoa(s.port)), s.db)
	if s.external == nil {
		return u
	}
	q := url.Values{}
	q.Set("user", s.user)
	if s.password != "" {
		q.Set("password", s.password)
	}
	if m := s.external.Query().Get("sslmode"); m != "" {
		q.Set("sslmode", m)
	}
	return u + "?" + q.Encode()
}

// User is the role the URLs connect as (a superuser on the local server).
func (s *Server) User() string { return s.user }

// Password is that role's password; empty on the local server, which
// trusts its superuser on loopback.
func (s *Server) Password() string { return s.password }

// Host is the server's address (127.0.0.1 for the local server).
func (s *Server) Host() string { return s.host }

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Database is the name of this Server's database.
func (s *Server) Database() string { return s.db }

// NewDatabase creates another empty database, dropped when tb's test ends,
// and returns its URL. Its name starts with name (made safe and unique), so
// that tests sharing the server never collide.
func (s *Server) NewDatabase(tb testing.TB, name string) string {
	tb.Helper()
	return s.urlFor(s.createDatabase(tb, name))
}

// Exec runs one statement in this Server's database.
func (s *Server) Exec(tb testing.TB, sql string, args ...any) {
	tb.Helper()
	if err := execOn(s.URL(), sql, args...); err != nil {
		tb.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// execOn runs one statement on a connection of its own to url, within a
// minute.
func execOn(url, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// Conn opens a connection to this Server's database, closed in tb.Cleanup.
func (s *Server) Conn(tb testing.TB) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Stop shuts the server process down (fast shutdown: sessions are
// terminated), so that a test can see the database go away; it fails the
// test when the fast shutdown does not finish within 30 seconds. Start brings it
// back on the same port and data. On a server from Start this affects every
// test of the binary that uses it; tests that call Stop should use
// StartPrivate or not run in parallel.
func (s *Server) Stop() {
	s.tb.Helper()
	if s.inst == nil {
		s.tb.Skipf("pgtest: the server of %s cannot be stopped", EnvURL)
	}
	if err := s.inst.stop(syscall.SIGINT); err != nil {
		s.tb.Fatalf("pgtest: stop: %v", err)
	}
}

// Start restarts a server that Stop shut down; it returns when the server
// accepts connections again.
func (s *Server) Start() {
	s.tb.Helper()
	if s.inst == nil {
		s.tb.Skipf("pgtest: the server of %s cannot be restarted", EnvURL)
	}
	if err := s.inst.start(); err != nil {
		s.tb.Fatalf("pgtest: start: %v", err)
	}
}

func (s *Server) urlFor(db string) string {
	if s.external != nil {
		u := *s.external
		u.Path = "/" + db
		return u.String()
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(s.user),
		Host:     net.JoinHostPort(s.host, strconv.Itoa(s.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// adminURL is a database that always exists, to create and drop others from.
func (s *Server) adminURL() string {
	if s.external != nil {
		return s.external.String()
	}
	return s.urlFor("postgres")
}

var dbSeq struct {
	sync.Mutex
	n int
}

// dbName makes a database name from a test name: lower case, [a-z0-9_], at
// most 63 bytes, unique in this process (sequence number) and among
// processes sharing a server (pid).
func dbName(hint string) string {
	dbSeq.Lock()
	dbSeq.n++
	n := dbSeq.n
	dbSeq.Unlock()
	var b strings.Builder
	for _, r := range strings.ToLower(hint) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	prefix := fmt.Sprintf("t%d_%d_", os.Getpid(), n)
	name := b.String()
	if max := 63 - len(prefix); len(name) > max {
		name = name[len(name)-max:] // the end of a subtest name is its most specific part
	}
	return prefix + name
}

func (s *Server) createDatabase(tb testing.TB, hint string) string {
	tb.Helper()
	name := dbName(hint)
	if err := execOn(s.adminURL(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() { s.dropDatabase(tb, name) })
	return name
}

func (s *Server) dropDatabase(tb testing.TB, name string) {
	if s.inst != nil && !s.inst.running() {
		// The test left the server stopped; its data directory goes with it
		// (shared servers are restarted for the next test without it).
		return
	}
	// WITH (FORCE) ends sessions a test left open (PostgreSQL 13 and later).
	if err := execOn(s.adminURL(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		tb.Logf("pgtest: drop database %s: %v", name, err)
	}
}

func startExternal(tb testing.TB, raw string) *Server {
	tb.Helper()
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		tb.Fatalf("pgtest: %s must be a postgres:// URL, got %q", EnvURL, raw)
	}
	cfg, err := pgx.ParseConfig(raw)
	if err != nil {
		tb.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	s := &Server{tb: tb, external: u, host: cfg.Host, port: int(cfg.Port), user: cfg.User, password: cfg.Password}
	s.db = s.createDatabase(tb, tb.Name())
	return s
}

// binaries are the PostgreSQL programs of one installation.
type binaries struct {
	dir     string // holds initdb and postgres
	version string // `postgres --version`
}

var (
	binOnce  sync.Once
	binFound binaries
	binErr   error
)

// findBinaries looks for initdb in PATH, then in Debian's
// /usr/lib/postgresql/<version>/bin (newest first), and skips or fails the
// test when there is none.
func findBinaries(tb testing.TB) binaries {
	tb.Helper()
	binOnce.Do(func() { binFound, binErr = lookBinaries() })
	if binErr != nil {
		msg := fmt.Sprintf("pgtest: no PostgreSQL server found (%v); install PostgreSQL (initdb and postgres in PATH or /usr/lib/postgresql/*/bin) or set %s=postgres://user:password@host:port/db", binErr, EnvURL)
		if os.Getenv(EnvRequire) == "1" {
			tb.Fatalf("%s (%s=1 requires it)", msg, EnvRequire)
		}
		tb.Skip(msg)
	}
	return binFound
}

func lookBinaries() (binaries, error) {
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		candidates = append(candidates, p)
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool { return pgVersionOf(found[i]) > pgVersionOf(found[j]) })
	candidates = append(candidates, found...)
	for _, c := range candidates {
		// Debian links initdb into PATH; postgres lives beside the real file.
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		dir := filepath.Dir(real)
		pg := filepath.Join(dir, "postgres")
		out, err := exec.Command(pg, "--version").Output()
		if err != nil {
			continue
		}
		return binaries{dir: dir, version: strings.TrimSpace(string(out))}, nil
	}
	return binaries{}, errors.New("no initdb with a postgres beside it")
}

// pgVersionOf extracts the major version of /usr/lib/postgresql/<v>/bin/initdb.
func pgVersionOf(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

var shared struct {
	sync.Mutex
	inst *instance
	refs int
}

// acquireShared returns the binary's shared instance, started, and releases
// it when tb's test ends; the last release stops it and removes its files.
func acquireShared(tb testing.TB) *instance {
	tb.Helper()
	bin := findBinaries(tb)
	shared.Lock()
	defer shared.Unlock()
	if shared.inst == nil {
		inst, err := newInstance(bin)
		if err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
		shared.inst = inst
	}
	inst := shared.inst
	// A test may have left the shared server stopped; start it again.
	if !inst.running() {
		if err := inst.start(); err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
	}
	shared.refs++
	tb.Cleanup(func() {
		shared.Lock()
		defer shared.Unlock()
		shared.refs--
		if shared.refs == 0 && shared.inst == inst {
			inst.destroy()
			shared.inst = nil
		}
	})
	return inst
}

// instance is one postgres process and its directory.
type instance struct {
	bin   binaries
	dir   string // data/ and the socket
	port  int
	super string              // superuser role: the OS user running the test
	cred  *syscall.Credential // set when running as root: postgres refuses root
	// settings are extra name=value server settings (StartPrivateWith),
	// given after the defaults, so they win.
	settings []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

func (in *instance) server(tb testing.TB) *Server {
	return &Server{tb: tb, inst: in, host: "127.0.0.1", port: in.port, user: in.super}
}

func (in *instance) dataDir() string { return filepath.Join(in.dir, "data") }
func (in *instance) logFile() string { return filepath.Join(in.dir, "postgres.log") }

func newInstance(bin binaries) (*instance, error) {
	me, err := user.Current()
	if err != nil {
		return nil, err
	}
	in := &instance{bin: bin, super: me.Username}
	if os.Geteuid() == 0 {
		pgUser, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, PostgreSQL must run as another user, and there is no OS user \"postgres\": %v", err)
		}
		uid, _ := strconv.Atoi(pgUser.Uid)
		gid, _ := strconv.Atoi(pgUser.Gid)
		in.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	base, err := baseDir(in.cred)
	if err != nil {
		return nil, err
	}
	removeStale(base)
	tmpl, err := template(base, in)
	if err != nil {
		return nil, err
	}
	if in.dir, err = os.MkdirTemp(base, fmt.Sprintf("sluice-pgtest-%d-", os.Getpid())); err != nil {
		return nil, err
	}
	if err := in.chown(in.dir); err != nil {
		os.RemoveAll(in.dir)
		return nil, err
	}
	if err := copyTree(tmpl, in.dataDir(), in.cred); err != nil {
		os.RemoveAll(in.dir)
		return nil, fmt.Errorf("copy template data directory: %v", err)
	}
	if in.port, err = freePort(); err != nil {
		os.RemoveAll(in.dir)
		return nil, err
	}
	return in, nil
}

// baseDir is where data directories go: the temp dir when the postgres user
// can reach it, else /tmp (a root-only TMPDIR would lock postgres out).
func baseDir(cred *syscall.Credential) (string, error) {
	for _, d := range []string{os.TempDir(), "/tmp"} {
		if cred == nil || traversable(d, cred) {
			return d, nil
		}
	}
	return "", fmt.Errorf("neither %s nor /tmp can be entered by uid %d; set TMPDIR to a directory every user can traverse", os.TempDir(), cred.Uid)
}

// traversable reports whether uid cred.Uid can enter dir and its parents.
func traversable(dir string, cred *syscall.Credential) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return false
		}
		st := fi.Sys().(*syscall.Stat_t)
		mode := fi.Mode().Perm()
		ok := mode&0o001 != 0 ||
			(st.Uid == cred.Uid && mode&0o100 != 0) ||
			(st.Gid == cred.Gid && mode&0o010 != 0)
		if !ok {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// removeStale deletes directories of test binaries that died without
// cleaning up (killed by `go test -timeout`, say): their postgres got
// SIGQUIT from the kernel (Pdeathsig), their files stayed.
func removeStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "sluice-pgtest-*-*"))
	for _, d := range dirs {
		parts := strings.SplitN(filepath.Base(d), "-", 4)
		if len(parts) < 4 {
			continue
		}
		pid, err := strconv.Atoi(parts[2])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// template returns a data directory made by initdb for this PostgreSQL
// version and user, creating it once per machine: initdb takes half a
// second, a copy a tenth of that, and tests start many servers.
func template(base string, in *instance) (string, error) {
	key := fmt.Sprintf("v2|%s|%s|%s|%v", in.bin.dir, in.bin.version, in.super, in.cred != nil)
	var h uint32 = 2166136261 // FNV-1a, to keep the name short
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	final := filepath.Join(base, fmt.Sprintf("sluice-pgtemplate-%d-%08x", os.Geteuid(), h))
	if _, err := os.Stat(filepath.Join(final, "PG_VERSION")); err == nil {
		return final, nil
	}
	work, err := os.MkdirTemp(base, "sluice-pgtemplate-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if err := in.chown(work); err != nil {
		return "", err
	}
	data := filepath.Join(work, "data")
	cmd := exec.Command(filepath.Join(in.bin.dir, "initdb"),
		"-D", data, "-U", in.super, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync",
		// 1 MB WAL segments instead of 16: every server copies the template.
		"--wal-segsize=1")
	cmd.Dir = work
	cmd.Env = pgEnv()
	if in.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: in.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb: %v: %s", err, out)
	}
	// The superuser is trusted on loopback (URLs need no password); every
	// other role must give its password, so that tests can check how a
	// connector reports wrong credentials.
	hba := fmt.Sprintf("local all all trust\nhost all %s 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n",
		pgx.Identifier{in.super}.Sanitize())
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return "", err
	}
	// Another binary may have built the same template meanwhile: either
	// rename wins and both copies are equal.
	if err := os.Rename(data, final); err != nil {
		if _, statErr := os.Stat(filepath.Join(final, "PG_VERSION")); statErr == nil {
			return final, nil
		}
		return "", err
	}
	return final, nil
}

// pgEnv is the environment without PG* variables, which would otherwise
// redirect initdb and postgres (PGDATA, PGPORT, ...).
func pgEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return append(env, "LC_ALL=C")
}

func (in *instance) chown(path string) error {
	if in.cred == nil {
		return nil
	}
	return os.Chown(path, int(in.cred.Uid), int(in.cred.Gid))
}

// copyTree copies a data directory, owned by cred's user when given.
// PostgreSQL insists that the data directory is private (0700).
func copyTree(src, dst string, cred *syscall.Credential) error {
	return filepath.Walk(src, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := copyFile(path, target, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: unexpected file type %v", path, fi.Mode().Type())
		}
		if cred != nil {
			return os.Chown(target, int(cred.Uid), int(cred.Gid))
		}
		return nil
	})
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (in *instance) running() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.cmd != nil
}

// start runs postgres and waits until it accepts connections. When the
// first start finds the port taken (freePort raced with another process),
// it moves to another port: nothing has been told the old one yet.
func (in *instance) start() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd != nil {
		return nil
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = in.startLocked(); err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "already in use") {
			break
		}
		if in.port, err = freePort(); err != nil {
			return err
		}
	}
	return err
}

func (in *instance) startLocked() error {
	logf, err := os.OpenFile(in.logFile(), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(in.bin.dir, "postgres"),
		"-D", in.dataDir(),
		"-p", strconv.Itoa(in.port),
		"-k", in.dir,
		"-c", "listen_addresses=127.0.0.1",
		// A test database need not survive a machine crash: skip the syncs.
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "shared_buffers=32MB",
		"-c", "logging_collector=off",
		// Logical replication, for the change data capture connector:
		// it costs a little more WAL per change, nothing at start-up.
		"-c", "wal_level=logical",
		"-c", "max_replication_slots=50",
		"-c", "max_wal_senders=50",
	)
	for _, kv := range in.settings {
		cmd.Args = append(cmd.Args, "-c", kv)
	}
	cmd.Dir = in.dir
	cmd.Env = pgEnv()
	cmd.Stdout = logf
	cmd.Stderr = logf
	// postgres runs as our child rather than daemonized by pg_ctl so that
	// the kernel sends it SIGQUIT (immediate shutdown) when the test binary
	// dies without running its cleanups: no server outlives a killed test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: in.cred, Pdeathsig: syscall.SIGQUIT}
	if err := spawn(cmd); err != nil {
		return fmt.Errorf("start postgres: %v", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	in.cmd, in.done = cmd, done
	if err := in.waitReady(done); err != nil {
		cmd.Process.Signal(syscall.SIGQUIT)
		<-done
		in.cmd, in.done = nil, nil
		out, _ := os.ReadFile(in.logFile())
		return fmt.Errorf("postgres did not start: %v\n%s", err, out)
	}
	return nil
}

func (in *instance) waitReady(done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connURL := fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", url.PathEscape(in.super), in.port)
	for {
		conn, err := pgx.Connect(ctx, connURL)
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		select {
		case <-done:
			return errors.New("postgres exited")
		case <-ctx.Done():
			return fmt.Errorf("not accepting connections after 60s: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop signals postgres (SIGINT: fast shutdown, SIGQUIT: immediate) and
// waits for it to exit. A fast shutdown that takes over 30 seconds (it
// waits for logical replication clients to confirm the last WAL) is made
// immediate, and a postmaster that ignores that is killed after 10 more:
// killing it at once would leave its children running, among them a
// walsender that keeps its client's stream open. It then reports that
// the shutdown was not the one asked for.
func (in *instance) stop(sig syscall.Signal) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil {
		return nil
	}
	in.cmd.Process.Signal(sig)
	var err error
	select {
	case <-in.done:
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("postgres did not stop within 30s of %v (is a logical replication client not confirming the last WAL?); stopped it with SIGQUIT", sig)
		in.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-in.done:
		case <-time.After(10 * time.Second):
			in.cmd.Process.Kill()
			<-in.done
		}
	}
	in.cmd, in.done = nil, nil
	return err
}

// destroy stops the server for good and removes its files.
func (in *instance) destroy() {
	in.stop(syscall.SIGQUIT)
	os.RemoveAll(in.dir)
}

// spawner starts processes from one goroutine locked to its OS thread, for
// Pdeathsig fires when the thread that started a child exits, and the Go
// runtime may retire any other thread (https://go.dev/issue/27505).
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func spawn(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawner.reqs {
				r.errc <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd, errc}
	return <-errc
}
