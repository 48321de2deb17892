package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/testutil"
	"github.com/sluice-io/sluice/internal/worker"
)

// resolvedWorker parses a worker command line as runWorker does and
// returns the Config the worker would run with.
func resolvedWorker(t *testing.T, args ...string) (worker.Config, error) {
	t.Helper()
	fs := newFlags("worker", workerHelp, io.Discard)
	var f workerFlags
	f.register(fs, false)
	if err := parseFlags(fs, args); err != nil {
		return worker.Config{}, err
	}
	cfg, err := f.workerConfig(fs, zerolog.Nop())
	if err != nil {
		return worker.Config{}, err
	}
	return worker.Resolve(cfg)
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// For each setting: the --config file < a --prop key < the SLUICE_<FLAG>
// variable < the flag on the command line.
func TestWorkerSettingPrecedence(t *testing.T) {
	file := writeFile(t, "connect-distributed.properties", `
bootstrap.servers=file:9092
group.id : file-cluster
listeners http://127.0.0.1:1001
config.storage.topic=file-configs
offset.flush.interval.ms=1001
session.timeout.ms=11001
heartbeat.interval.ms=1001
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
`)
	for _, s := range []struct {
		name, key            string
		prop, env, flagValue string // the values given at each level
		got                  func(worker.Config) string
		// What the worker runs with, given each level in turn.
		wantFile, wantProp, wantEnv, wantFlag string
	}{
		{"cluster", "group.id", "prop-cluster", "env-cluster", "flag-cluster",
			func(c worker.Config) string { return c.Cluster }, "file-cluster", "prop-cluster", "env-cluster", "flag-cluster"},
		{"bootstrap", "bootstrap.servers", "prop:9092", "env:9092", "flag:9092",
			func(c worker.Config) string { return strings.Join(c.Bootstrap, ",") }, "file:9092", "prop:9092", "env:9092", "flag:9092"},
		{"rest-addr", "listeners", "http://127.0.0.1:1002", "127.0.0.1:1003", "127.0.0.1:1004",
			func(c worker.Config) string { return c.RESTAddr }, "127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003", "127.0.0.1:1004"},
		{"config-topic", "config.storage.topic", "prop-configs", "env-configs", "flag-configs",
			func(c worker.Config) string { return c.ConfigTopic }, "file-configs", "prop-configs", "env-configs", "flag-configs"},
		{"offset-flush-interval-ms", "offset.flush.interval.ms", "1002", "1003", "1004",
			func(c worker.Config) string { return c.OffsetFlushInterval.String() }, "1.001s", "1.002s", "1.003s", "1.004s"},
		{"session-timeout", "session.timeout.ms", "11002", "11.003s", "11.004s",
			func(c worker.Config) string { return c.SessionTimeout.String() }, "11.001s", "11.002s", "11.003s", "11.004s"},
		{"replication-factor", "config.storage.replication.factor", "1", "-1", "3",
			func(c worker.Config) string { return time.Duration(c.ReplicationFactor).String() }, "1ns", "1ns", "-1ns", "3ns"},
	} {
		t.Run(s.name, func(t *testing.T) {
			cleanEnv(t)
			props := []string{"--prop", s.key + "=" + s.prop}
			if s.name == "replication-factor" { // the three keys must agree
				props = []string{"--prop", "config.storage.replication.factor=1,offset.storage.replication.factor=1,status.storage.replication.factor=1"}
			}
			check := func(level, want string, args ...string) {
				t.Helper()
				c, err := resolvedWorker(t, append([]string{"--config", file}, args...)...)
				if err != nil {
					t.Fatalf("%s: %v", level, err)
				}
				if got := s.got(c); got != want {
					t.Errorf("%s: %s = %q, want %q", level, s.name, got, want)
				}
			}
			check("file", s.wantFile)
			check("--prop over the file", s.wantProp, props...)
			t.Setenv("SLUICE_"+strings.ToUpper(strings.ReplaceAll(s.name, "-", "_")), s.env)
			check("SLUICE_ variable over --prop", s.wantEnv, props...)
			check("flag over the variable", s.wantFlag, append(props, "--"+s.name, s.flagValue)...)
		})
	}
}

// The flag's value, not its default, is what wins; a flag left at its
// default yields to the file.
func TestWorkerFlagAtItsDefaultValueStillWins(t *testing.T) {
	cleanEnv(t)
	file := writeFile(t, "w.properties", "group.id=g\nlisteners=http://127.0.0.1:1001\noffset.flush.interval.ms=5000\n")
	c, err := resolvedWorker(t, "--config", file, "--rest-addr", ":8083", "--offset-flush-interval-ms", "1000")
	if err != nil {
		t.Fatal(err)
	}
	if c.RESTAddr != ":8083" || c.OffsetFlushInterval != time.Second {
		t.Fatalf("explicit flags at their default values lost to the file: rest %q, flush %v", c.RESTAddr, c.OffsetFlushInterval)
	}
}

// SLUICE_CONFIG names the file; without bootstrap.servers, Connect's
// default localhost:9092 applies, as in Connect.
func TestWorkerConfigFromEnvironment(t *testing.T) {
	cleanEnv(t)
	t.Setenv("SLUICE_CONFIG", writeFile(t, "w.properties", "group.id=from-env-file\n"))
	c, err := resolvedWorker(t)
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster != "from-env-file" || strings.Join(c.Bootstrap, ",") != "localhost:9092" || c.RESTAddr != ":8083" {
		t.Fatalf("cluster %q, bootstrap %v, rest %q", c.Cluster, c.Bootstrap, c.RESTAddr)
	}
}

// The whole chain, in the real command: the REST address the worker tries
// to listen on comes from the file, the variable or the flag. Each
// address is taken, so the worker fails at once naming the one it used.
func TestWorkerListensWhereFileEnvOrFlagSays(t *testing.T) {
	cleanEnv(t)
	fromFile, fromEnv, fromFlag := testutil.Occupied(t), testutil.Occupied(t), testutil.Occupied(t)
	file := writeFile(t, "w.properties", "group.id=c\nbootstrap.servers=127.0.0.1:1\nlisteners=http://"+fromFile+"\n")
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"worker", "--config", file}, fromFile},
		{fromEnv, []string{"worker", "--config", file}, fromEnv},
		{fromEnv, []string{"worker", "--config", file, "--rest-addr", fromFlag}, fromFlag},
	} {
		if tc.env != "" {
			t.Setenv("SLUICE_REST_ADDR", tc.env)
		}
		code, _, stderr := cli(t, tc.args...)
		if code != 1 || !strings.Contains(stderr, "REST API cannot listen on "+tc.want) {
			t.Errorf("SLUICE_REST_ADDR=%q sluice %s: exit %d, stderr %q; want a listen error naming %s",
				tc.env, strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// A file with keys Sluice cannot honour stops the worker before it
// starts, every such key named in one message.
func TestWorkerConfigRefusalsNameEveryKey(t *testing.T) {
	cleanEnv(t)
	file := writeFile(t, "w.properties", `group.id=c
bootstrap.servers=127.0.0.1:1
listeners=http://127.0.0.1:0
security.protocol=SASL_PLAINTEXT
sasl.mechanism=GSSAPI
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";
producer.batch.size=65536
exactly.once.source.support=sometimes
scheduled.rebalance.max.delay.ms=300000
plugin.path=/usr/share/java
`)
	code, _, stderr := cli(t, "worker", "--config", file)
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	for _, k := range []string{"sasl.mechanism: GSSAPI", "producer.batch.size",
		"exactly.once.source.support: invalid value \"sometimes\"", "scheduled.rebalance.max.delay.ms=300000"} {
		if !strings.Contains(stderr, k) {
			t.Errorf("the refusal does not name %s:\n%s", k, stderr)
		}
	}
	if strings.Contains(stderr, "password=") {
		t.Errorf("the refusal shows a secret's value:\n%s", stderr)
	}
}

func TestWorkerConfigFileErrors(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		what string
		args []string
		want []string
	}{
		{"a missing file", []string{"worker", "--config", filepath.Join(t.TempDir(), "missing.properties")}, []string{"--config", "missing.properties"}},
		{"a malformed escape", []string{"worker", "--config", writeFile(t, "bad.properties", "group.id=c\nk=\\u12G4\n")}, []string{"bad.properties", "line 2"}},
		{"no group.id", []string{"worker", "--config", writeFile(t, "nogroup.properties", "bootstrap.servers=127.0.0.1:1\n")}, []string{"--cluster", "group.id"}},
	} {
		code, _, stderr := cli(t, tc.args...)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2; stderr %q", tc.what, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr %q does not name %s", tc.what, stderr, w)
			}
		}
	}
}

func TestWorkerHelpTeachesConfigAndPrecedence(t *testing.T) {
	cleanEnv(t)
	code, stdout, stderr := cli(t, "worker", "--help")
	help := stdout + stderr
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"-config", "connect-distributed.properties", "Precedence", "SLUICE_CONFIG", "--prop", "refused", "ignored"} {
		if !strings.Contains(help, want) {
			t.Errorf("sluice worker --help does not mention %q:\n%s", want, help)
		}
	}
	// dev has no --config: it is the zero-config path.
	if _, _, stderr := cli(t, "dev", "--help"); strings.Contains(stderr, "  -config string") {
		t.Errorf("sluice dev --help offers --config:\n%s", stderr)
	}
}
