package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluice-io/sluice/bench/internal/benchproc"
)

// The two systems, in the order the first round runs them.
const (
	connectName = "Connect"
	sluiceName  = "Sluice"
)

var systems = []string{connectName, sluiceName}

// launcher starts the workers of both systems from one description: the
// same Kafka Connect worker properties, the same broker.
type launcher struct {
	ctx         context.Context // canceled on Ctrl-C: every wait then ends
	bootstrap   string
	connectCP   string // the classpath file Maven wrote for bench/connect/pom.xml
	connectHeap string // -Xmx of every Connect worker
	sluiceBin   string
	runDir      string
	pprof       bool // Sluice workers serve /debug/pprof/ (--pprof)
}

// worker is one running worker process and its REST API.
type worker struct {
	system string
	group  string
	id     string // host:port, the worker_id its status answers carry
	bind   string // a Sluice worker's gossip address, which the others of its cluster join
	base   string // http://host:port
	proc   *proc
	ctx    context.Context
}

// alive returns an error once the worker has exited or the run was
// interrupted; every wait on a worker checks it.
func (w *worker) alive() error {
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("interrupted: %w", err)
	}
	return w.proc.Alive()
}

// workerProps are the worker keys both systems get: the distribution's
// connect-distributed.properties reduced to what a single-broker run
// needs. Everything else stays at each system's default.
func (l *launcher) workerProps(group string, port int) map[string]string {
	return map[string]string{
		"bootstrap.servers":                 l.bootstrap,
		"group.id":                          group,
		"config.storage.topic":              group + "-configs",
		"offset.storage.topic":              group + "-offsets",
		"status.storage.topic":              group + "-status",
		"config.storage.replication.factor": "1",
		"offset.storage.replication.factor": "1",
		"status.storage.replication.factor": "1",
		// The converters of connect-distributed.properties.
		"key.converter":                  "org.apache.kafka.connect.json.JsonConverter",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":   "true",
		"value.converter.schemas.enable": "true",
		"listeners":                      fmt.Sprintf("http://127.0.0.1:%d", port),
		"rest.advertised.host.name":      "127.0.0.1",
		"rest.advertised.port":           fmt.Sprint(port),
	}
}

// start launches one worker of system in group. extra adds worker keys
// (Connect's scheduled.rebalance.max.delay.ms); join is the gossip address
// (bind) of a Sluice worker of the same group to join, "" for the first.
func (l *launcher) start(system, group, name string, extra map[string]string, join string) (*worker, error) {
	port, err := benchproc.FreePort()
	if err != nil {
		return nil, err
	}
	props := l.workerProps(group, port)
	maps.Copy(props, extra)
	dir := filepath.Join(l.runDir, "workers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	propsPath := filepath.Join(dir, name+".properties")
	if err := writeProps(propsPath, props); err != nil {
		return nil, err
	}
	id := fmt.Sprintf("127.0.0.1:%d", port)
	var argv, env []string
	var bind string
	switch system {
	case connectName:
		cp, err := os.ReadFile(l.connectCP)
		if err != nil {
			return nil, err
		}
		// The JVM options of bin/connect-distributed.sh and
		// kafka-run-class.sh (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS).
		argv = []string{"java", "-Xms256M", "-Xmx" + l.connectHeap,
			"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
			"-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
			"-cp", strings.TrimSpace(string(cp)),
			"org.apache.kafka.connect.cli.ConnectDistributed", propsPath}
	case sluiceName:
		// A port of its own rather than --bind's port 0, because the
		// other workers of a cluster must know it to join.
		gossip, err := benchproc.FreePort()
		if err != nil {
			return nil, err
		}
		bind = fmt.Sprintf("127.0.0.1:%d", gossip)
		argv = []string{l.sluiceBin, "worker", "--config", propsPath, "--worker-id", id, "--bind", bind}
		if join != "" {
			argv = append(argv, "--join", join)
		}
		if l.pprof {
			argv = append(argv, "--pprof")
		}
		// No SLUICE_* setting from the caller's environment may change
		// the worker the harness measures.
		env = []string{"SLUICE_PROP="}
	default:
		return nil, fmt.Errorf("unknown system %q", system)
	}
	p, err := startProc(system+" "+name, filepath.Join(dir, name+".log"), env, argv...)
	if err != nil {
		return nil, err
	}
	return &worker{system: system, group: group, id: id, bind: bind, base: "http://" + id, proc: p, ctx: l.ctx}, nil
}

// startHealthy starts a worker and waits until GET /health answers 200,
// returning when it first did. A port is picked free and then bound by
// the worker, and on a busy machine another process may take it in
// between: a worker that exits for "Address already in use" is started
// again on new ports, up to three times.
func (l *launcher) startHealthy(system, group, name string, extra map[string]string, join string) (*worker, time.Time, error) {
	for attempt := 1; ; attempt++ {
		w, err := l.start(system, group, name, extra, join)
		if err != nil {
			return nil, time.Time{}, err
		}
		up, err := w.waitHealthy(3 * time.Minute)
		if err == nil {
			if l.pprof && system == sluiceName {
				fmt.Fprintf(os.Stderr, "%s: profiles at %s/debug/pprof/\n", w.proc.Name, w.base)
			}
			return w, up, nil
		}
		w.proc.Stop(60 * time.Second)
		log, _ := os.ReadFile(w.proc.LogPath)
		if attempt == 3 || l.ctx.Err() != nil || !bytes.Contains(log, []byte("Address already in use")) {
			return nil, time.Time{}, err
		}
		fmt.Fprintf(os.Stderr, "%s: a port it was given was taken meanwhile; starting it again on others\n", w.proc.Name)
	}
}

func writeProps(path string, props map[string]string) error {
	var b bytes.Buffer
	b.WriteString("# Written by bench/connect for one worker of the side-by-side benchmark.\n")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

var client = &http.Client{Timeout: 30 * time.Second}

// waitHealthy polls GET /health (Connect has it since 3.9, KIP-1017: 200
// once the worker has started and joined its group) every 50 ms and
// returns when it first answered 200. Not faster: Connect logs every
// request at INFO, and the polling must not be what slows its start.
func (w *worker) waitHealthy(timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		if err := w.alive(); err != nil {
			return time.Time{}, err
		}
		resp, err := client.Get(w.base + "/health")
		seen := time.Now()
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return seen, nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("%s: GET /health not 200 within %v; last answer: %s", w.proc.Name, timeout, last)
}

// do sends one REST request and returns the status code and body.
func (w *worker) do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, w.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// retryable are the answers of a worker that is rebalancing or not yet
// in its group: both systems answer them while a request cannot be
// served yet, and a later one succeeds.
func retryable(code int) bool {
	return code == http.StatusConflict || code == http.StatusServiceUnavailable || code == http.StatusInternalServerError
}

// send retries a request answered with a retryable code until it gets
// want, for up to timeout.
func (w *worker) send(method, path string, body any, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := w.alive(); err != nil {
			return err
		}
		code, b, err := w.do(method, path, body)
		if err == nil && code == want {
			return nil
		}
		if err == nil && !retryable(code) {
			return fmt.Errorf("%s %s %s: %d %s", w.proc.Name, method, path, code, b)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s %s: no %d within %v; last: %d %s %v", w.proc.Name, method, path, want, timeout, code, b, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (w *worker) createConnector(name string, config map[string]string, timeout time.Duration) error {
	return w.send("POST", "/connectors", map[string]any{"name": name, "config": config}, http.StatusCreated, timeout)
}

func (w *worker) deleteConnector(name string, timeout time.Duration) error {
	return w.send("DELETE", "/connectors/"+name, nil, http.StatusNoContent, timeout)
}

// taskState is one task of GET /connectors?expand=status.
type taskState struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
}

// statuses reads every connector's status in one request.
func (w *worker) statuses() (map[string][]taskState, error) {
	code, b, err := w.do("GET", "/connectors?expand=status", nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s GET /connectors?expand=status: %d %s", w.proc.Name, code, b)
	}
	var all map[string]struct {
		Status struct {
			Tasks []taskState `json:"tasks"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("%s GET /connectors?expand=status: %v: %.200s", w.proc.Name, err, b)
	}
	out := make(map[string][]taskState, len(all))
	for name, c := range all {
		out[name] = c.Status.Tasks
	}
	return out, nil
}

// waitRunning polls the status of the named connectors (each with one
// task) until every task is RUNNING on a worker ok accepts (nil: any),
// and returns when that was first seen and the task placement.
func (w *worker) waitRunning(names []string, ok func(workerID string) bool, timeout, every time.Duration) (time.Time, map[string]string, error) {
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		if err := w.alive(); err != nil {
			return time.Time{}, nil, err
		}
		st, err := w.statuses()
		seen := time.Now()
		if err != nil {
			last = err.Error()
		} else if place, missing := placed(st, names, ok); missing == "" {
			return seen, place, nil
		} else {
			last = missing
		}
		time.Sleep(every)
	}
	return time.Time{}, nil, fmt.Errorf("%s: tasks not all RUNNING within %v; first missing: %s", w.proc.Name, timeout, last)
}

// placed returns connector -> worker id of the one task of each named
// connector, or a description of the first one not RUNNING where wanted.
func placed(st map[string][]taskState, names []string, ok func(string) bool) (map[string]string, string) {
	place := make(map[string]string, len(names))
	for _, n := range names {
		tasks := st[n]
		if len(tasks) != 1 {
			return nil, fmt.Sprintf("%s has %d tasks", n, len(tasks))
		}
		t := tasks[0]
		if t.State != "RUNNING" || (ok != nil && !ok(t.WorkerID)) {
			return nil, fmt.Sprintf("%s task %s on %s", n, t.State, t.WorkerID)
		}
		place[n] = t.WorkerID
	}
	return place, ""
}

// fileSourceConfig is a FileStreamSource connector's config; the same
// class name runs Connect's connector and Sluice's.
func fileSourceConfig(file, topic string) map[string]string {
	return map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"tasks.max":       "1",
		"file":            file,
		"topic":           topic,
	}
}

func fileSinkConfig(file, topic string) map[string]string {
	return map[string]string{
		"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"tasks.max":       "1",
		"file":            file,
		"topics":          topic,
	}
}
