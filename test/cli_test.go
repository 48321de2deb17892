package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/proctest"
)

// admin runs one `sluice` admin command against the cluster through the
// actor system (--join a worker's gossip address) and returns its exit
// code and output.
type admin struct {
	t       *testing.T
	join    string
	cluster string
}

func (a admin) run(args ...string) (code int, stdout, stderr string) {
	a.t.Helper()
	return a.runCtx(context.Background(), args...)
}

func (a admin) runCtx(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	full := append(append([]string{}, args...), "--join", a.join, "--cluster", a.cluster)
	cmd := exec.CommandContext(ctx, sluiceBin, full...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		a.t.Fatalf("sluice %s: %v", strings.Join(full, " "), err)
	}
	return code, out.String(), errOut.String()
}

// must runs a command that has to succeed.
func (a admin) must(args ...string) string {
	a.t.Helper()
	code, out, errOut := a.run(args...)
	if code != 0 {
		a.t.Fatalf("sluice %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// eventually repeats a command until check accepts its output.
func (a admin) eventually(what string, check func(code int, out string) bool, args ...string) string {
	a.t.Helper()
	deadline := time.Now().Add(stateDeadline)
	var code int
	var out, errOut string
	for time.Now().Before(deadline) {
		code, out, errOut = a.run(args...)
		if check(code, out) {
			return out
		}
		time.Sleep(300 * time.Millisecond)
	}
	a.t.Fatalf("%s: sluice %s never satisfied the check; last exit %d\nstdout: %s\nstderr: %s", what, strings.Join(args, " "), code, out, errOut)
	return ""
}

func jsonOf(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("not JSON (%v): %s", err, s)
	}
}

// Everything the REST API can do, the admin commands do through the admin
// actor, against a three-worker cluster, joined at a worker that is not
// necessarily the leader; exit codes say what went wrong. The steps run in
// order on one cluster: each uses the connectors the ones before it made.
func TestAdminCommandsDriveTheCluster(t *testing.T) {
	c, ws := startWorkers(t, "cli", 3)
	r := &cliRun{t: t, c: c, a: admin{t: t, join: ws[1].bind, cluster: c.name}}
	r.joinAtFollower()
	dir := t.TempDir()
	r.in, r.out, r.topic = filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt"), c.topic("cli-lines")
	if err := os.WriteFile(r.in, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r.writeServedByLeader(dir)
	r.plugins()
	r.create(dir)
	r.listAndStatus()
	r.sinkCopies()
	r.watch()
	r.restarts()
	r.rewind()
	r.updateValidateTopicsWorkersLoggers()

	// Delete; then it is gone.
	r.a.must("connectors", "delete", "snk")
	if code, _, _ := r.a.run("connectors", "get", "snk"); code != 4 {
		t.Fatalf("get after delete: exit %d, want 4", code)
	}
}

// cliRun is TestAdminCommandsDriveTheCluster's cluster and what its steps
// share: the source src reads in into topic, the sink snk copies topic
// into out.
type cliRun struct {
	t              *testing.T
	c              *cluster
	a              admin
	leader         string
	in, out, topic string
}

// joinAtFollower waits for a leader among the 3 workers and joins the
// admin commands at a follower, so that writes must travel to the
// leader's admin actor.
func (r *cliRun) joinAtFollower() {
	r.t.Helper()
	r.a.eventually("a leader among 3 workers", func(code int, out string) bool {
		var ws struct {
			Workers []struct {
				WorkerID string `json:"worker_id"`
				Leader   bool   `json:"leader"`
			} `json:"workers"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &ws) != nil || len(ws.Workers) != 3 {
			return false
		}
		for _, w := range ws.Workers {
			if w.Leader {
				r.leader = w.WorkerID
			}
		}
		return r.leader != ""
	}, "workers", "-o", "json")
	for id, w := range r.c.workers {
		if id != r.leader {
			r.a.join = w.bind
			break
		}
	}
	r.t.Logf("leader %s; the admin commands join at %s", r.leader, r.a.join)
}

// writeServedByLeader: a write through the follower is carried out by the
// leader.
func (r *cliRun) writeServedByLeader(dir string) {
	t, a := r.t, r.a
	t.Helper()
	code, _, errOut := a.run("connectors", "create", "probe", "connector.class=FileStreamSink", "file="+filepath.Join(dir, "probe.txt"),
		"topics="+r.c.topic("probe"), "--log-level", "debug", "--log-format", "json")
	if code != 0 || !strings.Contains(errOut, `"served_by":"`+r.leader+`"`) {
		t.Fatalf("create through a follower: exit %d, want it served by leader %s; stderr:\n%s", code, r.leader, errOut)
	}
	a.must("connectors", "delete", "probe")
}

// plugins lists the plugins, in both formats.
func (r *cliRun) plugins() {
	t, a := r.t, r.a
	t.Helper()
	if out := a.must("plugins"); !strings.Contains(out, "FileStreamSourceConnector") || !strings.Contains(out, "CLASS") {
		t.Fatalf("plugins table: %s", out)
	}
	var plugins []map[string]string
	jsonOf(t, a.must("plugins", "--all", "-o", "json"), &plugins)
	if len(plugins) < 6 {
		t.Fatalf("plugins --all -o json: %v", plugins)
	}
	if out := a.must("plugins", "config", "FileStreamSource"); !strings.Contains(out, "file") {
		t.Fatalf("plugins config: %s", out)
	}
}

// create makes src from key=value arguments and snk from a properties
// file, and checks the refusals.
func (r *cliRun) create(dir string) {
	t, a := r.t, r.a
	t.Helper()
	a.must("connectors", "create", "src", "connector.class=FileStreamSource", "file="+r.in, "topic="+r.topic,
		"value.converter=org.apache.kafka.connect.storage.StringConverter")
	props := filepath.Join(dir, "sink.properties")
	if err := os.WriteFile(props, []byte(fmt.Sprintf("# a Connect standalone config\nname=snk\nconnector.class=FileStreamSink\nfile=%s\ntopics=%s\nvalue.converter=org.apache.kafka.connect.storage.StringConverter\n", r.out, r.topic)), 0o644); err != nil {
		t.Fatal(err)
	}
	var info struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	jsonOf(t, a.must("connectors", "create", "-f", props, "-o", "json"), &info)
	if info.Name != "snk" || info.Type != "sink" {
		t.Fatalf("create -f: %+v", info)
	}
	if code, _, errOut := a.run("connectors", "create", "snk", "connector.class=FileStreamSink", "file=/tmp/x", "topics=t"); code != 5 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("duplicate create: exit %d (%s), want 5 (conflict) saying it exists", code, errOut)
	}
	code, _, errOut := a.run("connectors", "create", "bad", "connector.class=NoSuchConnector")
	if code != 1 || !strings.Contains(errOut, "FileStreamSource") {
		t.Fatalf("unknown class: exit %d, stderr %q; want 1 listing the known classes", code, errOut)
	}
	if code, _, errOut := a.run("connectors", "create", "bad/name", "connector.class=FileStreamSource", "file=/x", "topic=t"); code != 1 {
		t.Fatalf("bad name: exit %d (%s), want 1", code, errOut)
	}
}

// listAndStatus waits for src to run, then lists and shows it.
func (r *cliRun) listAndStatus() {
	t, a := r.t, r.a
	t.Helper()
	a.eventually("src running", func(code int, out string) bool {
		var st struct {
			Connector struct{ State string }   `json:"connector"`
			Tasks     []struct{ State string } `json:"tasks"`
		}
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.Connector.State == "RUNNING" &&
			len(st.Tasks) == 1 && st.Tasks[0].State == "RUNNING"
	}, "connectors", "status", "src", "-o", "json")
	if out := a.must("connectors", "list"); out != "snk\nsrc\n" {
		t.Fatalf("list: %q", out)
	}
	if out := a.must("connectors", "list", "--expand"); !strings.Contains(out, "RUNNING") || !strings.Contains(out, "TASKS RUNNING") {
		t.Fatalf("list --expand: %s", out)
	}
	if out := a.must("connectors", "status", "src"); !strings.Contains(out, "TASK") || !strings.Contains(out, "RUNNING") {
		t.Fatalf("status table: %s", out)
	}
	if out := a.must("connectors", "get", "src"); !strings.Contains(out, "file") || !strings.Contains(out, "source") {
		t.Fatalf("get: %s", out)
	}
	if out := a.must("tasks", "list", "src"); !strings.Contains(out, "TASK") {
		t.Fatalf("tasks list: %s", out)
	}
	if code, _, _ := a.run("connectors", "status", "nope"); code != 4 {
		t.Fatalf("status of an unknown connector: exit %d, want 4", code)
	}
	if code, _, _ := a.run("tasks", "restart", "src", "7"); code != 4 {
		t.Fatalf("restart of a task out of range: exit %d, want 4", code)
	}
}

// sinkCopies waits until the sink has copied the file.
func (r *cliRun) sinkCopies() {
	r.t.Helper()
	deadline := time.Now().Add(stateDeadline)
	for countLines(readFileIfAny(r.out)) < 3 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if n := countLines(readFileIfAny(r.out)); n != 3 {
		r.t.Fatalf("sink wrote %d lines, want 3", n)
	}
}

// watch: --watch prints the status more than once, and ends cleanly on
// Ctrl-C.
func (r *cliRun) watch() {
	r.t.Helper()
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	code, wout, _ := r.a.runCtx(wctx, "connectors", "status", "src", "--watch", "--interval", "500ms")
	cancel()
	if code != 0 || strings.Count(wout, "Connector src") < 2 {
		r.t.Fatalf("--watch: exit %d, output %q", code, wout)
	}
}

// restarts restarts src with its tasks, then its task 0.
func (r *cliRun) restarts() {
	t, a := r.t, r.a
	t.Helper()
	var st struct {
		Connector struct{ State string }   `json:"connector"`
		Tasks     []struct{ State string } `json:"tasks"`
	}
	jsonOf(t, a.must("connectors", "restart", "src", "--include-tasks", "-o", "json"), &st)
	if st.Connector.State != "RESTARTING" || len(st.Tasks) != 1 || st.Tasks[0].State != "RESTARTING" {
		t.Fatalf("restart --include-tasks: %+v", st)
	}
	a.eventually("task restart accepted", func(code int, _ string) bool { return code == 0 }, "tasks", "restart", "src", "0")
	if out := a.must("tasks", "status", "src", "0"); !strings.Contains(out, "task 0 of connector src") {
		t.Fatalf("tasks status: %s", out)
	}
}

// rewind pauses and resumes src; stops it, rewinds it to the start and
// resumes it: the file is read again, so the sink holds every line twice.
func (r *cliRun) rewind() {
	t, a := r.t, r.a
	t.Helper()
	a.must("connectors", "pause", "src")
	a.eventually("paused", func(code int, out string) bool { return code == 0 && strings.Contains(out, "PAUSED") }, "connectors", "status", "src")
	a.must("connectors", "resume", "src")
	a.eventually("resumed", func(code int, out string) bool {
		return code == 0 && !strings.Contains(out, "PAUSED") && strings.Contains(out, "RUNNING")
	}, "connectors", "status", "src")
	if code, _, errOut := a.run("connectors", "offsets", "reset", "src"); code != 1 || !strings.Contains(errOut, "STOPPED") {
		t.Fatalf("offsets reset while running: exit %d (%s), want 1 saying it must be STOPPED", code, errOut)
	}
	a.must("connectors", "stop", "src")
	a.eventually("stopped", func(code int, out string) bool { return code == 0 && strings.Contains(out, "STOPPED") }, "connectors", "status", "src")
	var offs struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	jsonOf(t, a.eventually("source offsets flushed", func(code int, out string) bool {
		return code == 0 && strings.Contains(out, `"position"`)
	}, "connectors", "offsets", "get", "src", "-o", "json"), &offs)
	if len(offs.Offsets) != 1 || offs.Offsets[0].Partition["filename"] != r.in {
		t.Fatalf("offsets get: %+v", offs)
	}
	rewind := fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":0}}]}`, r.in)
	if out := a.must("connectors", "offsets", "set", "src", rewind); !strings.Contains(out, "altered successfully") {
		t.Fatalf("offsets set: %s", out)
	}
	a.must("connectors", "resume", "src")
	deadline := time.Now().Add(stateDeadline)
	for countLines(readFileIfAny(r.out)) < 6 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if got := string(readFileIfAny(r.out)); got != "a\nb\nc\na\nb\nc\n" {
		t.Fatalf("after rewinding the source, the sink holds %q, want the file twice", got)
	}
}

// updateValidateTopicsWorkersLoggers: update (replace and merge),
// validate, topics, workers, loggers.
func (r *cliRun) updateValidateTopicsWorkersLoggers() {
	t, a := r.t, r.a
	t.Helper()
	a.must("connectors", "update", "snk", "--merge", "errors.tolerance=all")
	var snk struct {
		Config map[string]string `json:"config"`
	}
	jsonOf(t, a.must("connectors", "get", "snk", "-o", "json"), &snk)
	if cfg := snk.Config; cfg["errors.tolerance"] != "all" || cfg["file"] != r.out {
		t.Fatalf("after update --merge: %v", cfg)
	}
	if code, vout, _ := a.run("connectors", "validate", "connector.class=FileStreamSink", "tasks.max=0"); code != 1 || !strings.Contains(vout, "tasks.max") {
		t.Fatalf("validate of a bad config: exit %d, output %q; want 1 naming tasks.max", code, vout)
	}
	a.must("connectors", "validate", "name=v", "connector.class=FileStreamSink", "file=/tmp/x", "topics=t")
	a.eventually("topics recorded", func(code int, out string) bool { return code == 0 && strings.Contains(out, r.topic) },
		"connectors", "topics", "src")
	wout2 := a.eventually("workers", func(code int, out string) bool {
		return code == 0 && strings.Count(out, "\n") == 4 && strings.Contains(out, "*")
	}, "workers")
	if !strings.Contains(wout2, "src-0") || !strings.Contains(wout2, "snk-0") {
		t.Fatalf("workers does not show which worker runs which task:\n%s", wout2)
	}
	if out := a.must("loggers", "set", "sluice", "DEBUG", "--scope", "cluster"); !strings.Contains(out, "every worker") {
		t.Fatalf("loggers set --scope cluster: %s", out)
	}
	a.eventually("cluster-wide level", func(code int, out string) bool { return code == 0 && strings.Contains(out, "DEBUG") },
		"loggers", "get", "sluice")
	a.must("loggers")
}

func readFileIfAny(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

// Errors that happen before the cluster answers say what to do.
func TestAdminCommandErrors(t *testing.T) {
	a := admin{t: t, join: proctest.FreeAddr(t), cluster: "nobody"}
	code, _, errOut := a.run("connectors", "list", "--timeout", "5s")
	if code != 3 || !strings.Contains(errOut, "--join") {
		t.Fatalf("nobody at --join: exit %d, stderr %q; want 3 naming --join", code, errOut)
	}
	if code, _, errOut := a.run("connectors", "frobnicate"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("unknown verb: exit %d, stderr %q; want 2", code, errOut)
	}
	if code, _, errOut := a.run("connectors", "create"); code != 2 || !strings.Contains(errOut, "name") {
		t.Fatalf("create without anything: exit %d, stderr %q; want 2 asking for the name", code, errOut)
	}
	if code, _, errOut := a.run("tasks", "restart", "c", "x"); code != 2 || !strings.Contains(errOut, "task id") {
		t.Fatalf("bad task id: exit %d, stderr %q; want 2", code, errOut)
	}
	if code, _, errOut := a.run("connectors", "list", "-o", "yaml"); code != 2 || !strings.Contains(errOut, "yaml") {
		t.Fatalf("bad -o: exit %d, stderr %q; want 2", code, errOut)
	}
}
