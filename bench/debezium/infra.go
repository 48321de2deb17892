package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluice-io/sluice/bench/internal/benchproc"
	"github.com/twmb/franz-go/pkg/kadm"
)

// procStat reads a process's resident set size (bytes) and CPU time
// (user + system).
func procStat(pid int) (rss int64, cpu time.Duration, err error) {
	if rss, err = benchproc.RSSBytes(pid); err != nil {
		return 0, 0, err
	}
	ticks, err := benchproc.CPUTicks(pid)
	return rss, time.Duration(ticks) * time.Second / benchproc.ClockTicks, err
}

// rssSampler records the peak RSS of a process, sampled every 200 ms.
type rssSampler struct {
	stop chan struct{}
	done chan int64
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan int64, 1)}
	go func() {
		var peak int64
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, _, err := procStat(pid); err == nil {
				peak = max(peak, rss)
			}
			select {
			case <-s.stop:
				s.done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) peak() int64 {
	close(s.stop)
	return <-s.done
}

// postgres is a PostgreSQL server of the harness's own (Debian's package),
// with wal_level=logical.
type postgres struct {
	bin, dir string
	port     int
	proc     *benchproc.Process
	version  string
}

// pgBinDir finds the newest /usr/lib/postgresql/N/bin.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(dirs) == 0 {
		return "", errors.New("no PostgreSQL in /usr/lib/postgresql/*/bin (apt-get install postgresql)")
	}
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	return dirs[len(dirs)-1], nil
}

func startPostgres(dir string) (*postgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	port, err := benchproc.FreePort()
	if err != nil {
		return nil, err
	}
	pg := &postgres{bin: bin, dir: dir, port: port}
	cred, err := serverUser(dir)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// fsync off: the benchmark measures the connectors, and the write load
	// must outrun them on a small machine. synchronous_commit stays on: a
	// walsender sends only WAL that is flushed, so with it off a change
	// would wait for the WAL writer (wal_writer_delay, 200 ms) and the lag
	// would be PostgreSQL's.
	pg.proc, err = benchproc.Start("postgres", filepath.Join(dir, "postgres.log"), benchproc.Options{Credential: cred}, filepath.Join(bin, "postgres"), "-D", data,
		"-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "wal_level=logical", "-c", "max_replication_slots=20", "-c", "max_wal_senders=20",
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=256MB", "-c", "max_wal_size=4GB")
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pg.connect(context.Background())
		if err == nil {
			err = conn.QueryRow(context.Background(), "SHOW server_version").Scan(&pg.version)
			conn.Close(context.Background())
			if err == nil {
				return pg, nil
			}
		}
		if aerr := pg.proc.Alive(); aerr != nil {
			return nil, aerr
		}
		if time.Now().After(deadline) {
			pg.proc.Stop(10 * time.Second)
			return nil, fmt.Errorf("PostgreSQL did not accept connections within 30 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// serverUser is who runs PostgreSQL, which refuses to run as root: as
// root, the OS user postgres (Debian's package creates it), who is given
// dir and may enter its parents.
func serverUser(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL must run as another user, and there is no OS user postgres: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	// The work directory is made 0700; its postgres directory must be
	// reachable.
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (pg *postgres) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pg.port)
}

func (pg *postgres) connect(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, pg.url())
}

// exec runs statements on a connection of its own.
func (pg *postgres) exec(ctx context.Context, sql ...string) error {
	conn, err := pg.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range sql {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func (pg *postgres) stop() { pg.proc.Stop(30 * time.Second) }

// broker is the one Apache Kafka node both systems write to.
type broker struct{ *benchproc.Kafka }

func startBroker(repo, dir string) (*broker, error) {
	k, err := benchproc.OpenKafka(context.Background(), repo, dir)
	if err != nil {
		return nil, err
	}
	return &broker{k}, nil
}

// records is the number of records in topic (its end offsets; 0 while it
// does not exist).
func (b *broker) records(ctx context.Context, topic string) (int64, error) {
	ends, err := b.Admin.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n, nil
}

// deleteTopics deletes the topics of a run, so that the broker's disk and
// page cache do not grow round after round.
func (b *broker) deleteTopics(ctx context.Context, prefix string) {
	topics, err := b.Admin.ListTopics(ctx)
	if err != nil {
		return
	}
	var del []string
	for _, t := range topics.Names() {
		if strings.HasPrefix(t, prefix) {
			del = append(del, t)
		}
	}
	if len(del) > 0 {
		_, _ = b.Admin.DeleteTopics(ctx, del...)
	}
}
