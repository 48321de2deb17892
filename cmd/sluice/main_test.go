package main

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/testutil"
)

// cli runs the command in-process and returns its exit code and output.
//
// None of these tests means to start a server: each argument list fails
// before anything listens for long. If a regression made one start a worker
// anyway (say, an environment variable ignored and the default address
// free), run would serve until a signal; the watchdog then sends SIGTERM,
// which run's own signal handler turns into a clean stop, and the test fails
// instead of hanging.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(args, &out, &errOut) }()
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		if self, err := os.FindProcess(os.Getpid()); err == nil {
			_ = self.Signal(syscall.SIGTERM)
		}
		code = <-done
		t.Fatalf("sluice %s was still running after 30s (it started serving); exit %d; stderr:\n%s",
			strings.Join(args, " "), code, errOut.String())
	}
	return code, out.String(), errOut.String()
}

// cleanEnv removes every SLUICE_* variable for the test, so that a
// developer's environment cannot change what the tests see.
func cleanEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SLUICE_") {
			t.Setenv(k, "") // restores the old value after the test
			os.Unsetenv(k)
		}
	}
}

func TestNoArgumentsPrintsUsage(t *testing.T) {
	cleanEnv(t)
	code, stdout, stderr := cli(t)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	for _, want := range []string{"Usage:", "sluice <command>", "dev", "broker", "worker", "SLUICE_"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("usage on stderr does not mention %q:\n%s", want, stderr)
		}
	}
	if stdout != "" {
		t.Errorf("usage error wrote to stdout: %q", stdout)
	}
}

func TestHelpCommandPrintsUsage(t *testing.T) {
	cleanEnv(t)
	for _, arg := range []string{"help", "--help", "-h"} {
		code, stdout, _ := cli(t, arg)
		if code != 0 || !strings.Contains(stdout, "Usage:") {
			t.Errorf("sluice %s: exit %d, stdout %q; want 0 and the usage", arg, code, stdout)
		}
	}
}

func TestUnknownCommand(t *testing.T) {
	cleanEnv(t)
	code, _, stderr := cli(t, "frobnicate")
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr, `unknown command "frobnicate"`) || !strings.Contains(stderr, "Usage:") {
		t.Errorf("stderr does not name the command and show the usage:\n%s", stderr)
	}
}

func TestWorkerRequiresClusterAndBootstrap(t *testing.T) {
	cleanEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"worker"}, "--cluster"},
		{[]string{"worker", "--bootstrap", "127.0.0.1:1"}, "--cluster"},
		{[]string{"worker", "--cluster", "c"}, "--bootstrap"},
	} {
		code, _, stderr := cli(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("sluice %s: exit %d, stderr %q; want 2 naming %s", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

func TestUnknownFlagAndStrayArgument(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{
		{"dev", "--no-such-flag"},
		{"broker", "stray"},
		{"worker", "--cluster", "c", "--bootstrap", "127.0.0.1:1", "stray"},
	} {
		if code, _, stderr := cli(t, args...); code != 2 {
			t.Errorf("sluice %s: exit %d, want 2; stderr:\n%s", strings.Join(args, " "), code, stderr)
		}
	}
}

func TestSubcommandHelp(t *testing.T) {
	cleanEnv(t)
	for cmd, flags := range map[string][]string{
		"dev":    {"-data-dir", "-kafka-addr", "-rest-addr"},
		"broker": {"-addr", "-data-dir"},
		"worker": {"-cluster", "-bootstrap", "-rest-addr", "-worker-id"},
	} {
		code, stdout, stderr := cli(t, cmd, "--help")
		text := stdout + stderr
		if code != 0 {
			t.Errorf("sluice %s --help: exit %d, want 0", cmd, code)
		}
		for _, want := range append([]string{"sluice " + cmd, "SLUICE_", "-log-level"}, flags...) {
			if !strings.Contains(text, want) {
				t.Errorf("sluice %s --help does not mention %q:\n%s", cmd, want, text)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	cleanEnv(t)
	for _, arg := range []string{"version", "--version"} {
		code, stdout, _ := cli(t, arg)
		if code != 0 || stdout != "sluice "+Version+"\n" {
			t.Errorf("sluice %s: exit %d, stdout %q; want 0 and %q", arg, code, stdout, "sluice "+Version+"\n")
		}
	}
}

// TestRestAddrFromEnvironment: the worker listens where SLUICE_REST_ADDR
// says, and --rest-addr on the command line wins over it. Both addresses
// are taken, so the worker fails at once naming the one it used.
func TestRestAddrFromEnvironment(t *testing.T) {
	cleanEnv(t)
	fromEnv, fromFlag := testutil.Occupied(t), testutil.Occupied(t)
	t.Setenv("SLUICE_REST_ADDR", fromEnv)

	code, _, stderr := cli(t, "worker", "--cluster", "c", "--bootstrap", "127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "REST API cannot listen on "+fromEnv) {
		t.Errorf("with SLUICE_REST_ADDR=%s: exit %d, stderr %q; want 1 and a listen error naming it", fromEnv, code, stderr)
	}

	code, _, stderr = cli(t, "worker", "--cluster", "c", "--bootstrap", "127.0.0.1:1", "--rest-addr", fromFlag)
	if code != 1 || !strings.Contains(stderr, "REST API cannot listen on "+fromFlag) || strings.Contains(stderr, fromEnv) {
		t.Errorf("with SLUICE_REST_ADDR=%s and --rest-addr %s: exit %d, stderr %q; want 1 and a listen error naming the flag's address",
			fromEnv, fromFlag, code, stderr)
	}
}

// TestLogLevelFromEnvironment: SLUICE_LOG_LEVEL is read (a bad value is
// refused, quoting it), a good one is accepted, and the command line wins.
// Each run then stops at the missing --cluster, before starting anything.
func TestLogLevelFromEnvironment(t *testing.T) {
	cleanEnv(t)

	t.Setenv("SLUICE_LOG_LEVEL", "chatty")
	code, _, stderr := cli(t, "worker")
	if code != 2 || !strings.Contains(stderr, `"chatty"`) {
		t.Errorf("SLUICE_LOG_LEVEL=chatty: exit %d, stderr %q; want 2 quoting the value", code, stderr)
	}

	code, _, stderr = cli(t, "worker", "--log-level", "warn")
	if code != 2 || strings.Contains(stderr, "chatty") || !strings.Contains(stderr, "--cluster") {
		t.Errorf("SLUICE_LOG_LEVEL=chatty with --log-level warn: exit %d, stderr %q; want the flag to win and only --cluster reported", code, stderr)
	}

	t.Setenv("SLUICE_LOG_LEVEL", "WARN")
	code, _, stderr = cli(t, "worker")
	if code != 2 || strings.Contains(stderr, "log-level") || !strings.Contains(stderr, "--cluster") {
		t.Errorf("SLUICE_LOG_LEVEL=WARN: exit %d, stderr %q; want it accepted and only --cluster reported", code, stderr)
	}
}

// TestBadEnvironmentValueNamesVariable: a user who set a bad SLUICE_*
// variable must be told which variable, whether the value fails to parse
// (an int or duration flag) or fails a later check (log level, format,
// replication factor). Each run has everything else valid, so the only
// error is the variable's; the listen addresses are taken, so that even a
// value wrongly accepted cannot start a server.
func TestBadEnvironmentValueNamesVariable(t *testing.T) {
	worker := []string{"worker", "--cluster", "c", "--bootstrap", "127.0.0.1:1", "--rest-addr", testutil.Occupied(t)}
	for _, tc := range []struct {
		env, value string
		args       []string
	}{
		{"SLUICE_OFFSET_FLUSH_INTERVAL_MS", "often", worker},
		{"SLUICE_RESTART_BACKOFF_MIN", "soon", worker},
		{"SLUICE_PROP", "novalue", worker},
		{"SLUICE_LOG_LEVEL", "chatty", worker},
		{"SLUICE_LOG_FORMAT", "xml", worker},
		{"SLUICE_REPLICATION_FACTOR", "0", worker},
		{"SLUICE_GC_HEADROOM_MIB", "-1", worker},
		{"SLUICE_GC_HEADROOM_MIB", "-1", []string{"dev", "--kafka-addr", testutil.Occupied(t), "--rest-addr", testutil.Occupied(t), "--data-dir", t.TempDir()}},
		{"SLUICE_LOG_LEVEL", "chatty", []string{"broker", "--addr", testutil.Occupied(t), "--data-dir", t.TempDir()}},
	} {
		t.Run(tc.env+"="+tc.value+"/"+tc.args[0], func(t *testing.T) {
			cleanEnv(t)
			t.Setenv(tc.env, tc.value)
			code, _, stderr := cli(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", code, stderr)
			}
			if !strings.Contains(stderr, tc.env) {
				t.Errorf("the error does not name %s: %q", tc.env, stderr)
			}
		})
	}
}
