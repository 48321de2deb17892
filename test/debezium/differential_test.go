//go:build debezium

// The differential test of Sluice's PostgreSQL CDC connector against the
// real Debezium (issue 16). It needs Java 17, Maven (connect.sh fetches
// Apache Kafka Connect and Debezium) and Apache Kafka at
// SLUICE_TEST_BOOTSTRAP, hence the build tag: .ci/run runs it after the
// integration suite, and `just debezium-diff` runs it on a developer's
// machine. README.md in this directory says what it proves.
package debezium

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/pgtest"
	"github.com/sluice-io/sluice/internal/proctest"
)

// Generous deadlines: Connect and Debezium start a JVM on a two-core
// machine that may be busy with other suites.
const (
	runningDeadline = 3 * time.Minute
	eventsDeadline  = 2 * time.Minute
	// settle is how long the topics must stay quiet after the expected
	// events arrived, so that an extra event (a duplicate, a stray
	// heartbeat) is seen and compared too.
	settle = 3 * time.Second
)

var httpClient = &http.Client{Timeout: 15 * time.Second}

// TestDebeziumDifferential runs the scripted workload (workload_test.go)
// through Debezium 3.6.1.Final in Apache Kafka Connect and through
// Sluice's connector in a `sluice worker`, on the same database and broker
// (each connector with a slot and a publication of its own), once for
// each variant of the type-mapping keys. It checks that Debezium's topics
// hold the events the workload must make, that a second Debezium
// connector's events compare equal to the first's, and then that Sluice's
// do: topic by topic, the same keys, op sequence, payloads, schemas,
// source fields and headers, once normalised (events_test.go).
func TestDebeziumDifferential(t *testing.T) {
	seeds := kafkatest.Bootstrap()
	if len(seeds) == 0 {
		t.Fatalf("%s is not set: this test (build tag debezium) runs against Apache Kafka; start one with test/kafka/kafka.sh or run `just debezium-diff`", kafkatest.BootstrapEnv)
	}
	bootstrap := strings.Join(seeds, ",")

	pg := startLogicalPostgres(t)
	runSQL(t, pg.URL(), [][]string{schemaSQL, snapshotSQL})

	// Topic prefixes, slot and publication names unique to this run: the
	// broker is shared with other tests and earlier runs. Underscores only,
	// as replication slot names allow.
	run := strings.ReplaceAll(kafkatest.Unique("cdcdiff"), "-", "_")
	var pairs []pair
	var dbzSides, sluiceSides []*side
	for i, v := range variants {
		name := func(who string) string {
			if v.name == "" {
				return who
			}
			return who + "-" + v.name
		}
		p := pair{
			debezium: &side{name: name("debezium"), prefix: fmt.Sprintf("dbz%d_%s", i, run), overrides: v.overrides},
			sluice:   &side{name: name("sluice"), prefix: fmt.Sprintf("sl%d_%s", i, run), overrides: v.overrides, candidate: true},
		}
		pairs = append(pairs, p)
		dbzSides = append(dbzSides, p.debezium)
		sluiceSides = append(sluiceSides, p.sluice)
	}
	// control is a second Debezium connector with the defaults: Debezium
	// compared with itself must show no difference, or the normalisation
	// misses something two correct connectors legitimately differ in, and
	// a difference reported against Sluice would not be Sluice's.
	control := &side{name: "control", prefix: "ctl_" + run}
	dbzSides = append(dbzSides, control)
	sides := append(append([]*side{}, dbzSides...), sluiceSides...)

	startDebezium(t, bootstrap, dbzSides, pg)
	startSluice(t, bootstrap, sluiceSides, pg)
	// Each connector creates its slot before it reads the snapshot, and
	// its stream starts at that slot: once the slots exist and the
	// snapshots' events are there, every later change is captured.
	waitSlots(t, pg, sides)
	readSides(t, seeds, sides, func(s *side) int { return countOps(expectedFor(s.overrides), "r") })
	runSQL(t, pg.URL(), workload)
	readSides(t, seeds, sides, func(s *side) int { return countOps(expectedFor(s.overrides)) })
	for _, s := range sides {
		s.save(t)
	}

	for _, s := range dbzSides {
		s.checkExpectedOps(t)
	}
	dbz := pairs[0].debezium
	dbz.checkWorkloadShapes(t)
	if report := compareTopics(dbz.name, normalise(dbz.events, dbz.prefix), control.name, normalise(control.events, control.prefix)); report != "" {
		t.Fatalf("Debezium differs from a second Debezium connector on the same workload: the normalisation misses what two correct connectors may differ in, fix it before blaming Sluice:\n%s", report)
	}
	conn := pg.Conn(t)
	for _, p := range pairs {
		a, b := p.debezium, p.sluice
		// The publication each connector created (publication.autocreate.mode
		// filtered) decides what PostgreSQL sends it, and so what its
		// source.sequence counts as the last commit.
		if pa, pb := publication(t, conn, a.prefix), publication(t, conn, b.prefix); pa != pb {
			t.Errorf("%s's publication differs from %s's (%s):\n  %-30s %s\n  %-30s %s", b.name, a.name, describeOverrides(a.overrides), a.name, pa, b.name, pb)
		}
		if report := compareTopics(a.name, normalise(a.events, a.prefix), b.name, normalise(b.events, b.prefix)); report != "" {
			t.Errorf("%s's events differ from %s's (%s; with %s=DIR the test writes every side's events to DIR):\n%s", b.name, a.name, describeOverrides(a.overrides), saveDirEnv, report)
		}
	}
}

// variants are the settings that each run both connectors: the defaults
// (decimal.handling.mode precise, time.precision.mode adaptive,
// binary.handling.mode bytes, tombstones after deletes, every column),
// then every other value of each type-mapping key at least once, with a
// column filter, no tombstones, skipped truncates and no snapshot besides.
var variants = []struct {
	name      string // "" for the defaults
	overrides map[string]string
}{
	{"", nil},
	{"string-connect-hex", map[string]string{"decimal.handling.mode": "string", "time.precision.mode": "connect", "binary.handling.mode": "hex",
		"column.exclude.list": "public.kinds.code,public.full_ident.tag", "hstore.handling.mode": "map"}},
	{"double-micros-base64", map[string]string{"decimal.handling.mode": "double", "time.precision.mode": "adaptive_time_microseconds", "binary.handling.mode": "base64",
		"tombstones.on.delete": "false", "skipped.operations": "t", "snapshot.mode": "no_data"}},
}

// waitSlots waits until every side's replication slot (named after its
// prefix) exists: a connector without a snapshot writes nothing that
// would tell.
func waitSlots(t *testing.T, pg *pgtest.Server, sides []*side) {
	t.Helper()
	var names []string
	for _, s := range sides {
		names = append(names, s.prefix)
	}
	conn := pg.Conn(t)
	deadline := time.Now().Add(runningDeadline)
	for {
		var missing []string
		err := conn.QueryRow(context.Background(),
			"SELECT coalesce(array_agg(n ORDER BY n), '{}') FROM unnest($1::text[]) n WHERE n NOT IN (SELECT slot_name FROM pg_replication_slots)", names).Scan(&missing)
		if err != nil {
			t.Fatal(err)
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replication slot %v within %v", missing, runningDeadline)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// publication describes a publication as pg_publication and
// pg_publication_tables have it: what it publishes and which tables.
func publication(t *testing.T, conn *pgx.Conn, name string) string {
	t.Helper()
	var desc string
	err := conn.QueryRow(context.Background(), `
		SELECT format('all tables %s, insert %s, update %s, delete %s, truncate %s, via root %s, tables %s',
			p.puballtables, p.pubinsert, p.pubupdate, p.pubdelete, p.pubtruncate, p.pubviaroot,
			(SELECT coalesce(string_agg(schemaname || '.' || tablename, ',' ORDER BY schemaname, tablename), '')
			   FROM pg_publication_tables WHERE pubname = p.pubname))
		FROM pg_publication p WHERE p.pubname = $1`, name).Scan(&desc)
	if err != nil {
		return fmt.Sprintf("(none: %v)", err)
	}
	return desc
}

// describeOverrides is a variant's keys for a message.
func describeOverrides(overrides map[string]string) string {
	if len(overrides) == 0 {
		return "the defaults"
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(overrides)) {
		kv = append(kv, k+"="+overrides[k])
	}
	return strings.Join(kv, ", ")
}

// pair is Debezium's and Sluice's run of one variant.
type pair struct{ debezium, sluice *side }

// saveDirEnv names a directory where each side's events are written, as
// they were read (<side>.raw.jsonl) and normalised (<side>.jsonl), one
// event a line: to read a difference whole, or diff the files.
const saveDirEnv = "SLUICE_CDCDIFF_DIR"

func (s *side) save(t *testing.T) {
	t.Helper()
	dir := os.Getenv(saveDirEnv)
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%s: %v", saveDirEnv, err)
	}
	write := func(name string, events []event) {
		var b strings.Builder
		for _, e := range events {
			line, err := json.Marshal(map[string]any{"topic": e.Topic, "offset": e.Offset, "key": e.Key, "value": e.Value, "headers": e.Headers})
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatalf("%s: %v", saveDirEnv, err)
		}
	}
	normalised := normalise(s.events, s.prefix)
	sortEvents(normalised)
	write(s.name+".raw.jsonl", s.events)
	write(s.name+".jsonl", normalised)
	t.Logf("%s's events in %s", s.name, filepath.Join(dir, s.name+".jsonl"))
}

// sortEvents orders events by topic, then offset: the order in which the
// sides are compared.
func sortEvents(es []event) {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Topic != es[j].Topic {
			return es[i].Topic < es[j].Topic
		}
		return es[i].Offset < es[j].Offset
	})
}

// side is one connector's run: its topic prefix and the events read back.
type side struct {
	name   string
	prefix string
	// overrides are keys set on top of cdcConfig.
	overrides map[string]string
	// candidate marks Sluice's sides: too few events from one of them are a
	// difference like any other, where too few from Debezium end the test
	// (the workload or the harness is broken).
	candidate bool
	events    []event
	// failure, when set, reports why the connector's task failed (empty
	// while it has not): reading its topics then stops waiting for the
	// events it will not write.
	failure func() string
}

// topics are the side's topics of the captured tables.
func (s *side) topics() []string {
	var out []string
	for _, table := range capturedTables {
		out = append(out, s.prefix+"."+table)
	}
	return out
}

// cdcConfig is the connector config a side runs, Debezium's keys: the
// same database, each side with a slot and a publication of its own
// (named after its prefix), and the side's overrides. tombstones.on.delete
// is left at its default (true).
func cdcConfig(pg *pgtest.Server, s *side) map[string]string {
	prefix := s.prefix
	config := map[string]string{
		"connector.class":             "io.debezium.connector.postgresql.PostgresConnector",
		"tasks.max":                   "1",
		"database.hostname":           pg.Host(),
		"database.port":               fmt.Sprint(pg.Port()),
		"database.user":               pg.User(),
		"database.password":           pg.Password(),
		"database.dbname":             pg.Database(),
		"topic.prefix":                prefix,
		"plugin.name":                 "pgoutput",
		"slot.name":                   prefix,
		"publication.name":            prefix,
		"publication.autocreate.mode": "filtered",
		"table.include.list":          strings.Join(capturedTables, ","),
		"snapshot.mode":               "initial",
		"skipped.operations":          "none", // Debezium skips truncates by default
		"slot.drop.on.stop":           "false",
	}
	maps.Copy(config, s.overrides)
	return config
}

// startLogicalPostgres starts a PostgreSQL server of the test's own with
// wal_level=logical (pgtest's default, said here because the test needs
// it).
func startLogicalPostgres(t *testing.T) *pgtest.Server {
	t.Helper()
	pg := pgtest.StartPrivateWith(t, "wal_level=logical")
	// The connectors' slots would keep pgtest from dropping the database.
	// This runs after the connectors have stopped (cleanups run last
	// first); a slot stays active until the server has noticed that its
	// connection is gone, so it is tried again for a while. The server is
	// the test's own and goes anyway: a slot left is only logged.
	t.Cleanup(func() {
		drop := func() (left int, err error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, pg.URL())
			if err != nil {
				return 0, err
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database() AND NOT active"); err != nil {
				return 0, err
			}
			err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()").Scan(&left)
			return left, err
		}
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			left, err := drop()
			if err == nil && left == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Logf("replication slots left in the test database (%d, %v); the server goes with the test", left, err)
				return
			}
		}
	})
	// Before 15, pgoutput also sends transactions without a captured
	// change, and each slot, created at its own moment, would see another
	// set of them: Debezium's source.sequence would differ between two
	// Debezium connectors.
	var version int
	if err := pg.Conn(t).QueryRow(context.Background(), "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < 150000 {
		t.Fatalf("PostgreSQL %d: the differential test needs PostgreSQL 15 or later", version)
	}
	var level string
	if err := pg.Conn(t).QueryRow(context.Background(), "SHOW wal_level").Scan(&level); err != nil {
		t.Fatal(err)
	}
	if level != "logical" {
		t.Fatalf("wal_level is %q, want logical", level)
	}
	return pg
}

// startDebezium runs Apache Kafka Connect standalone (connect.sh run)
// with a Debezium connector for each side, named after it and configured
// by cdcConfig, as a child process that the test stops when it ends (and
// the kernel kills if the test binary dies), and waits until their tasks
// run.
func startDebezium(t *testing.T, bootstrap string, sides []*side, pg *pgtest.Server) {
	t.Helper()
	dir := t.TempDir()
	var propsFiles []string
	for _, s := range sides {
		config := cdcConfig(pg, s)
		var props strings.Builder
		fmt.Fprintf(&props, "name=%s\n", s.name)
		for _, k := range slices.Sorted(maps.Keys(config)) {
			fmt.Fprintf(&props, "%s=%s\n", k, config[k])
		}
		f := filepath.Join(dir, s.name+".properties")
		if err := os.WriteFile(f, []byte(props.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		propsFiles = append(propsFiles, f)
	}
	rest := proctest.FreeAddr(t)
	_, port, _ := strings.Cut(rest, ":")
	logPath := filepath.Join(dir, "connect.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command("bash", append([]string{"connect.sh", "run", dir, bootstrap, port}, propsFiles...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("connect.sh run: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Apache Kafka Connect's log, warnings and errors (all of it in %s):\n%s", logPath, connectLogProblems(logPath))
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Logf("Apache Kafka Connect still runs 30 s after SIGTERM: SIGKILL")
			cmd.Process.Kill()
			<-exited
		}
	})
	alive := func() {
		select {
		case <-exited:
			t.Fatalf("Apache Kafka Connect exited (%v); its log:\n%s", cmd.ProcessState, proctest.Tail(logPath, 40))
		default:
		}
	}
	for _, s := range sides {
		if failure := waitConnectRunning(t, "http://"+rest+"/connectors/"+s.name+"/status", alive); failure != "" {
			t.Fatalf("Debezium's %s: %s", s.name, failure)
		}
	}
	t.Logf("Debezium's tasks run in Apache Kafka Connect (%v after start)", time.Since(start).Round(time.Millisecond))
}

// waitConnectRunning polls a connector's status until the connector and
// its task run, or until either has failed, and then returns the trace of
// the failure. It ends the test when alive finds the worker gone or at
// the deadline.
func waitConnectRunning(t *testing.T, statusURL string, alive func()) (failure string) {
	t.Helper()
	deadline := time.Now().Add(runningDeadline)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		alive()
		code, body, err := proctest.Send(httpClient, "GET", statusURL, "")
		switch {
		case err != nil:
			last = err.Error()
		case code != http.StatusOK:
			last = fmt.Sprintf("%d %s", code, body)
		default:
			last = string(body)
			var st proctest.Status
			if err := json.Unmarshal(body, &st); err != nil {
				t.Fatalf("status is not JSON: %v: %s", err, body)
			}
			if st.Connector.State == "FAILED" {
				return "connector FAILED: " + st.Connector.Trace
			}
			for _, task := range st.Tasks {
				if task.State == "FAILED" {
					return fmt.Sprintf("task %d FAILED: %s", task.ID, task.Trace)
				}
			}
			if st.Running() {
				return ""
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not RUNNING within %v; last: %s", statusURL, runningDeadline, last)
	return ""
}

// connectLogProblems is the WARN and ERROR lines of a Connect log, and
// the lines of the stack traces after them, the last 80. The producers'
// warnings about topics that do not exist yet are left out: the broker
// creates each topic on its first record, and they say only that.
func connectLogProblems(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var out []string
	inTrace := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(line, "UNKNOWN_TOPIC_OR_PARTITION"):
			inTrace = false
		case strings.Contains(line, " WARN ") || strings.Contains(line, " ERROR "):
			out = append(out, line)
			inTrace = true
		case inTrace && (strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "Caused by")):
			out = append(out, line)
		default:
			inTrace = false
		}
	}
	if len(out) > 80 {
		out = out[len(out)-80:]
	}
	return strings.Join(out, "\n")
}

// readSides reads the sides' topics from their start until each side
// has at least want(side) events, or its task failed, and the topics have
// been quiet for settle; or until eventsDeadline. It keeps each side's events
// in its events. A Debezium side with fewer events than wanted ends the
// test; a Sluice side fails it, and the comparison shows what it wrote.
func readSides(t *testing.T, seeds []string, sides []*side, want func(*side) int) {
	t.Helper()
	var topics []string
	for _, s := range sides {
		s.events = nil
		topics = append(topics, s.topics()...)
	}
	sideOf := func(topic string) *side {
		for _, s := range sides {
			if strings.HasPrefix(topic, s.prefix+".") {
				return s
			}
		}
		t.Fatalf("record in topic %s, which no side writes", topic)
		return nil
	}
	cl := kafkatest.NewConsumer(t, []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(250 * time.Millisecond)}, topics)
	defer cl.Close()
	failed := map[*side]string{}
	// done: every side has its events or, for a failed task, no more to
	// wait for; after a failure what the topics hold is still read until
	// they are quiet, and compared.
	done := func() bool {
		for _, s := range sides {
			if len(s.events) < want(s) && failed[s] == "" {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(eventsDeadline)
	var quietSince time.Time
	for {
		for _, s := range sides {
			if s.failure != nil && failed[s] == "" {
				failed[s] = s.failure()
			}
		}
		quiet := !quietSince.IsZero() && time.Since(quietSince) >= settle
		if (quiet && done()) || time.Now().After(deadline) {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded {
				t.Logf("fetch %s[%d]: %v", topic, p, err)
			}
		})
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			headers := make([]string, len(r.Headers))
			for i, h := range r.Headers {
				headers[i] = h.Key + "=" + string(h.Value)
			}
			e, err := decodeEvent(r.Topic, r.Offset, r.Key, r.Value, headers)
			if err != nil {
				t.Fatal(err)
			}
			s := sideOf(r.Topic)
			s.events = append(s.events, e)
		})
		switch {
		case n > 0:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		}
	}
	for _, s := range sides {
		var problem string
		switch {
		case failed[s] != "":
			problem = fmt.Sprintf("%s: the task failed, after %d events of %d: %s", s.name, len(s.events), want(s), failed[s])
		case len(s.events) < want(s):
			problem = fmt.Sprintf("%s: %d events within %v, want %d", s.name, len(s.events), eventsDeadline, want(s))
		default:
			continue
		}
		problem += "; read:\n" + opSequences(normalise(s.events, s.prefix))
		if !s.candidate {
			t.Fatal(problem)
		}
		t.Error(problem)
	}
}

// opSequences lists normalised events' summaries topic by topic.
func opSequences(events []event) string {
	var b strings.Builder
	topics := byTopic(events)
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		fmt.Fprintf(&b, "  %s: %s\n", name, strings.Join(summaries(topics[name]), ", "))
	}
	return b.String()
}

// checkExpectedOps checks that each topic holds the ops expectedFor says,
// in that order and nothing else: the workload did what it is meant to.
func (s *side) checkExpectedOps(t *testing.T) {
	t.Helper()
	got := byTopic(normalise(s.events, s.prefix))
	expected := expectedFor(s.overrides)
	for _, table := range capturedTables {
		if g, w := strings.Join(summaries(got[table]), ", "), strings.Join(expected[table], ", "); g != w {
			t.Errorf("%s: topic %s holds\n  %s\nwant\n  %s", s.name, table, g, w)
		}
	}
	for topic := range got {
		if _, ok := expectedOps[topic]; !ok {
			t.Errorf("%s: events in topic %s, which captures no table of the workload", s.name, topic)
		}
	}
}

// checkWorkloadShapes checks, on Debezium's events, that the workload
// exercised what it is meant to: a TOASTed value left out of an update
// (Debezium's placeholder), the whole old row of a FULL-identity table
// (and the TOASTed value taken from it), a column added mid-way, a key
// change's headers. Were one of these not so,
// the comparison would prove less than it claims.
func (s *side) checkWorkloadShapes(t *testing.T) {
	t.Helper()
	topics := byTopic(normalise(s.events, s.prefix))
	find := func(topic, sum string, nth int) map[string]any {
		for _, e := range topics[topic] {
			if summary(e) == sum {
				if nth == 0 {
					return payloadOf(e.Value)
				}
				nth--
			}
		}
		t.Fatalf("%s: no event %q in %s", s.name, sum, topic)
		return nil
	}
	field := func(p map[string]any, part, col string) any {
		row, _ := p[part].(map[string]any)
		return row[col]
	}
	const placeholder = "__debezium_unavailable_value"
	// The first update of row 1 leaves its TOASTed long_text alone.
	if v := field(find("public.kinds", `u {"id":1}`, 0), "after", "long_text"); v != placeholder {
		t.Errorf("%s: update of kinds row 1: long_text is %s, want the unavailable-value placeholder", s.name, render(v))
	}
	if v := field(find("public.kinds", `c {"id":3}`, 0), "after", "long_text"); v != strings.Repeat("toast-", 2000) {
		t.Errorf("%s: insert of kinds row 3: long_text is %s, want the 12000-byte value", s.name, render(v))
	}
	if v := field(find("public.full_ident", `u {"id":1}`, 0), "before", "name"); v != "one" {
		t.Errorf("%s: update on the FULL-identity table: before.name is %s, want \"one\"", s.name, render(v))
	}
	// With REPLICA IDENTITY FULL the old row holds the TOASTed notes that
	// the update left alone, and Debezium takes them from there.
	if v := field(find("public.full_ident", `u {"id":1}`, 0), "after", "notes"); v != strings.Repeat("toast-", 2000) {
		t.Errorf("%s: update on the FULL-identity table: after.notes is %s, want the 12000-byte value of the old row", s.name, render(v))
	}
	if v := field(find("public.full_ident", `d {"id":1}`, 0), "before", "notes"); v != strings.Repeat("toast-", 2000) {
		t.Errorf("%s: delete on the FULL-identity table: before.notes is %s, want the 12000-byte value", s.name, render(v))
	}
	if v := field(find("public.kinds", `u {"id":1}`, 2), "after", "long_text"); v != strings.Repeat("again-", 1500) {
		t.Errorf("%s: update of the TOASTed long_text: after.long_text is %s, want the new 9000-byte value", s.name, render(v))
	}
	if v := field(find("public.full_ident", `d {"id":2}`, 0), "before", "qty"); render(v) != "20" {
		t.Errorf("%s: delete on the FULL-identity table: before.qty is %s, want 20", s.name, render(v))
	}
	if v := field(find("public.kinds", `u {"id":1}`, 1), "after", "note"); v != "later" {
		t.Errorf("%s: update after ADD COLUMN: after.note is %s, want \"later\"", s.name, render(v))
	}
	// A key change: the delete names the new key, the create the old one.
	for _, e := range topics["public.kinds"] {
		switch summary(e) {
		case `d {"id":2}`:
			if !hasHeader(e, "__debezium.newkey") {
				t.Errorf("%s: delete of the old key of a key change without the __debezium.newkey header: %q", s.name, e.Headers)
			}
		case `c {"id":10}`:
			if !hasHeader(e, "__debezium.oldkey") {
				t.Errorf("%s: create of the new key of a key change without the __debezium.oldkey header: %q", s.name, e.Headers)
			}
		}
	}
}

func hasHeader(e event, name string) bool {
	for _, h := range e.Headers {
		if strings.HasPrefix(h, name+"=") {
			return true
		}
	}
	return false
}
