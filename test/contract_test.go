package test

// The contract test: Kafka Connect's REST API as Apache Kafka's own source
// defines it (connect/runtime/.../rest/resources/ConnectorsResource.java,
// ConnectorPluginsResource.java, LoggingResource.java, RootResource.java,
// rest/entities/*.java, AbstractHerder.java, DistributedHerder.java,
// Worker.java), checked endpoint by endpoint and error path by error path
// against three real `sluice worker` processes. Every write goes to a worker
// that is not the group leader, so forwarding is exercised; reads go to each
// worker in turn and are polled where the local view may lag.
//
// Where Connect's answer is not obvious, the comment names the line of
// Connect that decides it.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/proctest"
)

// contractSource is a FileStreamSource config with one task.
func contractSource(file, topic string) map[string]string {
	cfg := fileSource(file, topic)
	cfg["tasks.max"] = "1"
	return cfg
}

func contractSink(file, topic string) map[string]string {
	cfg := fileSink(file, topic)
	cfg["tasks.max"] = "1"
	return cfg
}

// writeContractFile writes n lines (each ending in \n) and returns them.
func writeContractFile(t *testing.T, path, prefix string, n int) []string {
	t.Helper()
	var b strings.Builder
	var lines []string
	for i := 1; i <= n; i++ {
		l := fmt.Sprintf("%s line %04d", prefix, i)
		lines = append(lines, l)
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return lines
}

// contractFixture is what the steps of TestContractRESTAPI share: one
// cluster of three workers, started once, and two long-lived connectors
// that many steps read: src, a FileStreamSource that has read its 3-line
// file into srcTopic, and sink, a FileStreamSink of srcTopic. Every other
// source writes to miscTopic, so that srcTopic keeps its 3 records.
type contractFixture struct {
	k                   *contract
	dir                 string
	bootstrap           string
	srcTopic, miscTopic string
	srcFile, sinkFile   string
	src, sink           string
	srcCfg, sinkCfg     map[string]string
}

func newContractFixture(t *testing.T) *contractFixture {
	t.Helper()
	k := startContract(t, "contract")
	f := &contractFixture{k: k, dir: t.TempDir(), bootstrap: k.c.bootstrap}
	f.srcTopic = k.onePartitionTopic(t, "contract-src")
	f.srcFile, f.sinkFile = filepath.Join(f.dir, "src.txt"), filepath.Join(f.dir, "sink.txt")
	writeContractFile(t, f.srcFile, "src", 3)
	f.src, f.sink = k.name("src"), k.name("sink")
	f.srcCfg = contractSource(f.srcFile, f.srcTopic)
	f.sinkCfg = contractSink(f.sinkFile, f.srcTopic)
	f.miscTopic = k.onePartitionTopic(t, "contract-misc")
	return f
}

// sourceFile writes a file of n lines for a connector named after base,
// and returns the connector's name and the file.
func (f *contractFixture) sourceFile(t *testing.T, base string, n int) (name, file string) {
	t.Helper()
	name = f.k.name(base)
	file = filepath.Join(f.dir, name+".txt")
	writeContractFile(t, file, name, n)
	return name, file
}

// runningSource creates a FileStreamSource named after base, of a file of
// n lines, writing to miscTopic, and waits until it and its task run.
func (f *contractFixture) runningSource(t *testing.T, base string, n int) (name, file string) {
	t.Helper()
	name, file = f.sourceFile(t, base, n)
	f.k.create(t, name, contractSource(file, f.miscTopic))
	f.k.waitRunning(t, name)
	return name, file
}

// contractStep is one subtest of TestContractRESTAPI.
type contractStep struct {
	name string
	run  func(t *testing.T)
}

// TestContractRESTAPI checks the REST API endpoint family by endpoint
// family against one cluster, started once: the processes are what takes
// time. The families, and the steps within each, run in the order listed,
// and some steps use what an earlier one left: each step's comment says
// what it relies on. Steps that need a connector of their own create it
// (on miscTopic), so that they leave src and sink alone.
func TestContractRESTAPI(t *testing.T) {
	f := newContractFixture(t)
	loggers := &contractLoggers{k: f.k, ns: "sluice.contract.worker"}
	for _, family := range []struct {
		name  string
		start func() // runs when the family starts; nil: nothing to do
		steps []contractStep
	}{
		{"server", nil, []contractStep{
			{"GET / is ServerInfo", f.serverInfo},
			{"GET /health is healthy", f.health},
		}},
		// The first step creates src and sink, which the later steps of
		// this family and of most families below read.
		{"connector", nil, []contractStep{
			{"POST /connectors is 201 with Location and ConnectorInfo", f.postConnector},
			{"GET /connectors/{c} is ConnectorInfo on every worker", f.connectorInfo},
			{"GET /connectors/{c}/config is the config map", f.connectorConfig},
			{"GET /connectors/{c}/status is ConnectorStateInfo", f.connectorStatus},
		}},
		{"tasks", nil, []contractStep{
			{"GET /connectors/{c}/tasks is [{id:{connector,task},config}]", f.connectorTasks},
			{"GET /connectors/{c}/tasks/{t}/status", f.taskStatus},
		}},
		{"connectors", nil, []contractStep{
			{"GET /connectors lists names and expands status and info", f.listConnectors},
			{"POST /connectors honours initial_state", f.initialState},
			{"POST /connectors errors", f.postErrors},
		}},
		{"config", nil, []contractStep{
			{"PUT /connectors/{c}/config creates (201) then updates (200)", f.putConfig},
			{"PATCH /connectors/{c}/config merges; null removes a key", f.patchConfig},
		}},
		{"lifecycle", nil, []contractStep{
			{"POST /connectors/{c}/restart", f.restartConnector},
			{"POST /connectors/{c}/tasks/{t}/restart", f.restartTask},
			{"PUT pause and resume are 202 and idempotent", f.pauseResume},
			{"PUT stop is 204; STOPPED empties the tasks; resume starts it", f.stop},
		}},
		{"offsets", nil, []contractStep{
			{"offsets of a source: GET shape; PATCH and DELETE only when STOPPED", f.sourceOffsets},
			{"offsets of a sink: kafka_topic, kafka_partition, kafka_offset", f.sinkOffsets},
		}},
		{"topics", nil, []contractStep{
			{"GET /connectors/{c}/topics and PUT topics/reset", f.activeTopics},
		}},
		{"connector-plugins", nil, []contractStep{
			{"GET /connector-plugins", f.plugins},
			{"GET /connector-plugins?connectorsOnly=false lists the transformations a config can use", f.transformationPlugins},
			{"GET /connector-plugins/{p}/config is a list of ConfigKeyInfo", f.pluginConfig},
			{"PUT /connector-plugins/{p}/config/validate is ConfigInfos", f.validate},
		}},
		// The steps ask one follower, chosen when the family starts.
		{"admin/loggers", loggers.chooseWorker, []contractStep{
			{"GET lists LoggerLevels, root included", loggers.list},
			{"PUT (worker scope) is 200 with the changed loggers; GET shows the level", loggers.setWorkerScope},
			{"PUT without level is 400", loggers.setWithoutLevel},
			{"PUT with a level log4j does not know is 404", loggers.setUnknownLevel},
			{"GET an unknown logger is 404", loggers.getUnknown},
			{"PUT ?scope=cluster is 204 and reaches every worker", loggers.setClusterScope},
		}},
		{"delete and unknown", nil, []contractStep{
			{"DELETE /connectors/{c} is 204, then 404 everywhere", f.deleteConnector},
			{"an unknown connector is a 404 on every endpoint", f.unknownConnector},
			{"unknown path is 404 and wrong method 405, as JSON", f.unknownPath},
		}},
	} {
		t.Run(family.name, func(t *testing.T) {
			if family.start != nil {
				family.start()
			}
			for _, s := range family.steps {
				t.Run(s.name, s.run)
			}
		})
	}
	for _, w := range f.k.workers {
		w.FailIfExited()
	}
}

// serverInfo relies on nothing.
func (f *contractFixture) serverInfo(t *testing.T) {
	// entities/ServerInfo.java: version, commit, kafka_cluster_id.
	f.k.objectOnEach(t, "/", map[string]string{"version": "string", "commit": "string", "kafka_cluster_id": "string"},
		func(w *workerProc, m map[string]any, body []byte) {
			if m["kafka_cluster_id"] == "" {
				t.Errorf("GET / on %s: empty kafka_cluster_id: %s", w.id, body)
			}
		})
}

// health relies on nothing.
func (f *contractFixture) health(t *testing.T) {
	// entities/WorkerStatus.java: {"status":"healthy","message":...}.
	f.k.objectOnEach(t, "/health", map[string]string{"status": "string", "message": "string"},
		func(w *workerProc, m map[string]any, body []byte) {
			if m["status"] != "healthy" {
				t.Errorf("GET /health on %s: status %v, want healthy: %s", w.id, m["status"], body)
			}
		})
}

// postConnector creates src and sink, and waits until both run.
func (f *contractFixture) postConnector(t *testing.T) {
	k := f.k
	src, sink, srcCfg, sinkCfg := f.src, f.sink, f.srcCfg, f.sinkCfg
	code, hdr, body := k.write(t, "POST", "/connectors", connectorJSON(t, src, srcCfg))
	expectJSON(t, "POST /connectors", code, hdr, body, http.StatusCreated)
	// Response.created(UriBuilder.fromUri("/connectors").path(name)):
	// the Location names the new connector.
	if loc := hdr.Get("Location"); !strings.HasSuffix(loc, "/connectors/"+src) {
		t.Errorf("POST /connectors: Location %q, want one ending in /connectors/%s", loc, src)
	}
	cfg, _ := checkInfo(t, "POST /connectors body", body, src, "source")
	for key, v := range srcCfg {
		if cfg[key] != v {
			t.Errorf("POST /connectors body: config[%q] = %q, want %q: %s", key, cfg[key], v, body)
		}
	}
	k.create(t, sink, sinkCfg)
	k.waitRunning(t, src)
	k.waitRunning(t, sink)
}

// connectorInfo relies on src and sink (postConnector).
func (f *contractFixture) connectorInfo(t *testing.T) {
	k := f.k
	src, sink := f.src, f.sink
	for _, w := range k.workers {
		var body []byte
		k.poll(t, "GET /connectors/"+src+" on "+w.id+" with its task", func() (bool, string) {
			code, _, b := k.on(t, w, "GET", "/connectors/"+src, "")
			body = b
			var info struct {
				Tasks []any `json:"tasks"`
			}
			return code == http.StatusOK && json.Unmarshal(b, &info) == nil && len(info.Tasks) == 1, fmt.Sprintf("%d %s", code, b)
		})
		checkInfo(t, "GET /connectors/"+src+" on "+w.id, body, src, "source")
	}
	code, _, body := k.read(t, "GET", "/connectors/"+sink)
	expectCode(t, "GET /connectors/"+sink, code, body, http.StatusOK)
	checkInfo(t, "GET /connectors/"+sink, body, sink, "sink")
}

// connectorConfig relies on src (postConnector).
func (f *contractFixture) connectorConfig(t *testing.T) {
	k := f.k
	src, srcCfg := f.src, f.srcCfg
	want := map[string]string{"name": src}
	for key, v := range srcCfg {
		want[key] = v
	}
	body := k.pollGET(t, "/connectors/"+src+"/config", "config", func(code int, _ []byte) bool { return code == http.StatusOK })
	got := stringMap(t, "GET config", jsonObject(t, "GET config", body))
	if compactJSON(got) != compactJSON(want) {
		t.Errorf("GET /connectors/%s/config = %s, want %s", src, compactJSON(got), compactJSON(want))
	}
}

// connectorStatus relies on src and sink (postConnector).
func (f *contractFixture) connectorStatus(t *testing.T) {
	k := f.k
	src, sink := f.src, f.sink
	for _, w := range k.workers {
		code, hdr, body := k.on(t, w, "GET", "/connectors/"+src+"/status", "")
		expectJSON(t, "GET status on "+w.id, code, hdr, body, http.StatusOK)
		st := checkStatus(t, "GET /connectors/"+src+"/status on "+w.id, body, src, "source")
		if len(st.Tasks) != 1 || st.Tasks[0].ID != 0 {
			t.Errorf("status on %s: want exactly task 0: %s", w.id, body)
		}
	}
	code, _, body := k.read(t, "GET", "/connectors/"+sink+"/status")
	expectCode(t, "GET sink status", code, body, http.StatusOK)
	checkStatus(t, "GET /connectors/"+sink+"/status", body, sink, "sink")
}

// connectorTasks relies on src (postConnector).
func (f *contractFixture) connectorTasks(t *testing.T) {
	k := f.k
	src := f.src
	body := k.getJSON(t, "/connectors/"+src+"/tasks")
	tasks := jsonArray(t, "GET tasks", body)
	if len(tasks) != 1 {
		t.Fatalf("GET /connectors/%s/tasks: %d tasks, want 1: %s", src, len(tasks), body)
	}
	task, ok := tasks[0].(map[string]any)
	if !ok {
		t.Fatalf("GET tasks: element is not an object: %s", body)
	}
	// entities/TaskInfo.java: {"id": ConnectorTaskId, "config": map}.
	requireFields(t, "GET tasks[0]", task, map[string]string{"id": "object", "config": "object"})
	if id, ok := task["id"].(map[string]any); ok {
		requireFields(t, "GET tasks[0].id", id, map[string]string{"connector": "string", "task": "int"})
		if id["connector"] != src || id["task"] != 0.0 {
			t.Errorf("GET tasks[0].id = %s, want {connector:%s, task:0}", compactJSON(id), src)
		}
	}
	if cfg := stringMap(t, "GET tasks[0].config", task["config"]); len(cfg) == 0 {
		t.Errorf("GET tasks[0].config is empty: %s", body)
	}
}

// taskStatus relies on src (postConnector), RUNNING.
func (f *contractFixture) taskStatus(t *testing.T) {
	k := f.k
	src := f.src
	body := k.getJSON(t, "/connectors/"+src+"/tasks/0/status")
	m := jsonObject(t, "GET task status", body)
	// ConnectorStateInfo.TaskState: {"id","state","worker_id"[,"trace"]}.
	requireFields(t, "GET task status", m, map[string]string{"id": "int", "state": "string", "worker_id": "string", "trace": "?string"})
	if m["id"] != 0.0 || m["state"] != "RUNNING" {
		t.Errorf("GET task 0 status = %s, want id 0 RUNNING", body)
	}
	// AbstractHerder.taskStatus: "No status found for task ..." is a
	// NotFoundException, 404; so is a task id that is not an Integer
	// (Jersey cannot bind the path parameter).
	for _, p := range []string{
		"/connectors/" + src + "/tasks/5/status",
		"/connectors/" + src + "/tasks/abc/status",
		"/connectors/no-such-connector/tasks/0/status",
	} {
		code, hdr, body := k.read(t, "GET", p)
		requireErrorBody(t, "GET "+p, code, hdr, body, http.StatusNotFound)
	}
}

// listConnectors relies on src and sink (postConnector).
func (f *contractFixture) listConnectors(t *testing.T) {
	k := f.k
	src, sink := f.src, f.sink
	for _, w := range k.workers {
		k.poll(t, "GET /connectors on "+w.id+" lists "+src+" and "+sink, func() (bool, string) {
			code, _, body := k.on(t, w, "GET", "/connectors", "")
			var names []string
			if code != http.StatusOK || json.Unmarshal(body, &names) != nil {
				return false, fmt.Sprintf("%d %s", code, body)
			}
			return slices.Contains(names, src) && slices.Contains(names, sink), string(body)
		})
	}
	for _, c := range []struct {
		query string
		keys  []string
	}{
		{"?expand=status", []string{"status"}},
		{"?expand=info", []string{"info"}},
		{"?expand=status&expand=info", []string{"status", "info"}},
		{"?expand=info&expand=status", []string{"status", "info"}},
	} {
		body := k.getJSON(t, "/connectors"+c.query)
		m := jsonObject(t, "GET /connectors"+c.query, body)
		entry, ok := m[src].(map[string]any)
		if !ok {
			t.Errorf("GET /connectors%s: no object for %s: %s", c.query, src, body)
			continue
		}
		if len(entry) != len(c.keys) {
			t.Errorf("GET /connectors%s: entry of %s has keys %s, want exactly %v", c.query, src, compactJSON(entry), c.keys)
		}
		for _, key := range c.keys {
			b, _ := json.Marshal(entry[key])
			switch key {
			case "status":
				checkStatus(t, "GET /connectors"+c.query+" status", b, src, "source")
			case "info":
				checkInfo(t, "GET /connectors"+c.query+" info", b, src, "source")
			}
		}
	}
}

// initialState creates connectors of its own.
func (f *contractFixture) initialState(t *testing.T) {
	k := f.k
	dir, miscTopic := f.dir, f.miscTopic
	// CreateConnectorRequest.InitialState.forValue upper-cases the value.
	// DistributedHerder.startConnector asks for task configs only when
	// the target state is STARTED, so a connector created PAUSED or
	// STOPPED has no tasks until it is resumed
	// (ConnectWorkerIntegrationTest.testCreateConnectorWithPausedInitialState).
	for _, initial := range []string{"RUNNING", "PAUSED", "STOPPED", "stopped"} {
		want := strings.ToUpper(initial)
		name := k.name("initial-" + strings.ToLower(initial))
		if initial == "stopped" {
			name = k.name("initial-lower-stopped")
		}
		file := filepath.Join(dir, name+".txt")
		writeContractFile(t, file, name, 2)
		b, _ := json.Marshal(map[string]any{"name": name, "config": contractSource(file, miscTopic), "initial_state": initial})
		code, hdr, body := k.write(t, "POST", "/connectors", string(b))
		expectJSON(t, "POST /connectors initial_state "+initial, code, hdr, body, http.StatusCreated)
		checkInfo(t, "POST /connectors initial_state "+initial, body, name, "source")
		if want == "RUNNING" {
			k.waitRunning(t, name)
			continue
		}
		k.waitState(t, name, "connector "+want, func(s proctest.Status) bool { return s.Connector.State == want })
		// Tasks never appear (so one look per worker, a while later, is
		// enough, even on a lagging view).
		time.Sleep(2 * time.Second)
		for _, w := range k.workers {
			code, _, body = k.on(t, w, "GET", "/connectors/"+name+"/status", "")
			if st := checkStatus(t, "status of a connector created "+want, body, name, "source"); code != http.StatusOK || st.Connector.State != want || len(st.Tasks) != 0 {
				t.Errorf("connector created %s, on %s: want state %s and no tasks: %d %s", want, w.id, want, code, body)
			}
			code, _, body = k.on(t, w, "GET", "/connectors/"+name+"/tasks", "")
			if code != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
				t.Errorf("connector created %s, on %s: GET tasks = %d %s, want []", want, w.id, code, body)
			}
		}
		code, _, body = k.write(t, "PUT", "/connectors/"+name+"/resume", "")
		expectEmpty(t, "PUT resume of a connector created "+want, code, body, http.StatusAccepted)
		k.waitRunning(t, name)
	}
	// KIP-980: "If the value of the initial_state field is invalid, a 400
	// Bad Request response will be returned."
	b, _ := json.Marshal(map[string]any{"name": k.name("initial-bogus"), "config": contractSource(filepath.Join(dir, "x.txt"), miscTopic), "initial_state": "SLEEPING"})
	code, hdr, body := k.write(t, "POST", "/connectors", string(b))
	requireErrorBody(t, "POST /connectors initial_state SLEEPING", code, hdr, body, http.StatusBadRequest)
}

// postErrors relies on src (postConnector) for the 409; the other
// cases rely on nothing.
func (f *contractFixture) postErrors(t *testing.T) {
	k := f.k
	dir, src, srcCfg := f.dir, f.src, f.srcCfg
	t.Run("409 when it exists", func(t *testing.T) {
		code, hdr, body := k.write(t, "POST", "/connectors", connectorJSON(t, src, srcCfg))
		// DistributedHerder.doPutConnectorConfig: AlreadyExistsException -> 409.
		requireErrorBody(t, "duplicate POST", code, hdr, body, http.StatusConflict)
	})
	t.Run("400 on malformed JSON", func(t *testing.T) {
		code, hdr, body := k.write(t, "POST", "/connectors", `{"name": "broken", "config": {"connector.class": `)
		requireErrorBody(t, "malformed JSON", code, hdr, body, http.StatusBadRequest)
	})
	t.Run("400 when config is missing", func(t *testing.T) {
		code, hdr, body := k.write(t, "POST", "/connectors", `{"name": "no-config"}`)
		requireErrorBody(t, "missing config", code, hdr, body, http.StatusBadRequest)
	})
	t.Run("400 on an invalid config, naming every bad key", func(t *testing.T) {
		name := k.name("invalid")
		cfg := contractSource(filepath.Join(dir, "x.txt"), "x")
		cfg["tasks.max"] = "many"
		cfg["batch.size"] = "lots"
		delete(cfg, "topic")
		code, hdr, body := k.write(t, "POST", "/connectors", connectorJSON(t, name, cfg))
		// AbstractHerder.maybeAddConfigErrors: BadRequestException
		// "Connector configuration is invalid and contains the following
		// N error(s): ..." with one line per error.
		msg := requireErrorBody(t, "invalid config", code, hdr, body, http.StatusBadRequest)
		for _, key := range []string{"tasks.max", "batch.size", "topic"} {
			if !strings.Contains(msg, key) {
				t.Errorf("invalid config: message does not name %q: %s", key, msg)
			}
		}
		code, _, body = k.read(t, "GET", "/connectors/"+name)
		if code != http.StatusNotFound {
			t.Errorf("a refused connector was stored: GET answers %d %s", code, body)
		}
	})
	t.Run("400 on a bad name", func(t *testing.T) {
		// ConnectorConfig: name has nonEmptyStringWithoutControlChars().
		for _, name := range []string{"bad\nname", "bad\u0007bell", ""} {
			cfg := contractSource(filepath.Join(dir, "x.txt"), "x")
			code, hdr, body := k.write(t, "POST", "/connectors", connectorJSON(t, name, cfg))
			requireErrorBody(t, fmt.Sprintf("name %q", name), code, hdr, body, http.StatusBadRequest)
		}
		// '/' is a Sluice rule (internal/connconfig.ValidName): Connect
		// dropped its own '/' check in KAFKA-4930 (KIP-212). A refusal
		// must still be Connect's 400 error body.
		code, hdr, body := k.write(t, "POST", "/connectors", connectorJSON(t, "a/b", contractSource(filepath.Join(dir, "x.txt"), "x")))
		requireErrorBody(t, `name "a/b"`, code, hdr, body, http.StatusBadRequest)
	})
	t.Run("400 when config name differs from the name", func(t *testing.T) {
		cfg := contractSource(filepath.Join(dir, "x.txt"), "x")
		cfg["name"] = "other"
		code, hdr, body := k.write(t, "POST", "/connectors", connectorJSON(t, k.name("mismatch"), cfg))
		// ConnectorsResource.checkAndPutConnectorConfigName.
		requireErrorBody(t, "name mismatch", code, hdr, body, http.StatusBadRequest)
	})
	t.Run("400 on an unknown connector.class, listing the known ones", func(t *testing.T) {
		cfg := contractSource(filepath.Join(dir, "x.txt"), "x")
		cfg["connector.class"] = "com.example.NoSuchConnector"
		code, hdr, body := k.write(t, "POST", "/connectors", connectorJSON(t, k.name("no-such-class"), cfg))
		msg := requireErrorBody(t, "unknown class", code, hdr, body, http.StatusBadRequest)
		for _, want := range []string{"com.example.NoSuchConnector", "FileStreamSourceConnector"} {
			if !strings.Contains(msg, want) {
				t.Errorf("unknown class: message does not mention %q: %s", want, msg)
			}
		}
	})
}

// putConfig creates a connector of its own.
func (f *contractFixture) putConfig(t *testing.T) {
	k := f.k
	name, file := f.sourceFile(t, "put-config", 2)
	cfg := contractSource(file, f.miscTopic)
	b, _ := json.Marshal(cfg)
	code, hdr, body := k.write(t, "PUT", "/connectors/"+name+"/config", string(b))
	expectJSON(t, "PUT config (create)", code, hdr, body, http.StatusCreated)
	if loc := hdr.Get("Location"); !strings.HasSuffix(loc, "/connectors/"+name) {
		t.Errorf("PUT config (create): Location %q, want one ending in /connectors/%s", loc, name)
	}
	checkInfo(t, "PUT config (create)", body, name, "source")
	k.waitRunning(t, name)

	cfg["batch.size"] = "7"
	b, _ = json.Marshal(cfg)
	code, hdr, body = k.write(t, "PUT", "/connectors/"+name+"/config", string(b))
	expectJSON(t, "PUT config (update)", code, hdr, body, http.StatusOK)
	got, _ := checkInfo(t, "PUT config (update)", body, name, "source")
	if got["batch.size"] != "7" {
		t.Errorf("PUT config (update): body config has batch.size %q, want 7: %s", got["batch.size"], body)
	}
	k.pollGET(t, "/connectors/"+name+"/config", "updated config visible", func(code int, body []byte) bool {
		var m map[string]string
		return code == http.StatusOK && json.Unmarshal(body, &m) == nil && m["batch.size"] == "7"
	})

	cfg["name"] = "someone-else"
	b, _ = json.Marshal(cfg)
	code, hdr, body = k.write(t, "PUT", "/connectors/"+name+"/config", string(b))
	requireErrorBody(t, "PUT config with a different name", code, hdr, body, http.StatusBadRequest)

	delete(cfg, "name")
	cfg["tasks.max"] = "zero"
	b, _ = json.Marshal(cfg)
	code, hdr, body = k.write(t, "PUT", "/connectors/"+name+"/config", string(b))
	msg := requireErrorBody(t, "PUT an invalid config", code, hdr, body, http.StatusBadRequest)
	if !strings.Contains(msg, "tasks.max") {
		t.Errorf("PUT an invalid config: message does not name tasks.max: %s", msg)
	}
	code, hdr, body = k.write(t, "PUT", "/connectors/"+name+"/config", `{"file": `)
	requireErrorBody(t, "PUT malformed JSON", code, hdr, body, http.StatusBadRequest)
}

// patchConfig creates a connector of its own.
func (f *contractFixture) patchConfig(t *testing.T) {
	k := f.k
	name, file := f.sourceFile(t, "patch-config", 2)
	cfg := contractSource(file, f.miscTopic)
	cfg["batch.size"] = "100"
	k.create(t, name, cfg)
	// DistributedHerder.patchConnectorConfig + ConnectUtils.patchConfig:
	// a null value removes the key, others are put; the answer is
	// always 200 with the ConnectorInfo.
	code, hdr, body := k.write(t, "PATCH", "/connectors/"+name+"/config", `{"batch.size": null, "errors.log.enable": "true"}`)
	expectJSON(t, "PATCH config", code, hdr, body, http.StatusOK)
	got, _ := checkInfo(t, "PATCH config", body, name, "source")
	want := map[string]string{"name": name, "errors.log.enable": "true"}
	for key, v := range cfg {
		if key != "batch.size" {
			want[key] = v
		}
	}
	if compactJSON(got) != compactJSON(want) {
		t.Errorf("PATCH config: body config %s, want %s", compactJSON(got), compactJSON(want))
	}
	k.pollGET(t, "/connectors/"+name+"/config", "patched config visible", func(code int, body []byte) bool {
		var m map[string]string
		return code == http.StatusOK && json.Unmarshal(body, &m) == nil && compactJSON(m) == compactJSON(want)
	})

	code, hdr, body = k.write(t, "PATCH", "/connectors/"+name+"/config", `{"tasks.max": "abc"}`)
	msg := requireErrorBody(t, "PATCH to an invalid config", code, hdr, body, http.StatusBadRequest)
	if !strings.Contains(msg, "tasks.max") {
		t.Errorf("PATCH to an invalid config: message does not name tasks.max: %s", msg)
	}
	code, hdr, body = k.write(t, "PATCH", "/connectors/no-such-connector/config", `{"batch.size": "1"}`)
	// "Connector ... not found" is a NotFoundException: 404.
	requireErrorBody(t, "PATCH config of an unknown connector", code, hdr, body, http.StatusNotFound)
}

// restartConnector creates a connector of its own.
func (f *contractFixture) restartConnector(t *testing.T) {
	k := f.k
	name, _ := f.runningSource(t, "restart", 2)

	// ConnectorsResource.restartConnector: with both flags false
	// (RestartRequest.forceRestartConnectorOnly) it restarts the
	// connector and answers Response.noContent(): 204, no body.
	for _, q := range []string{"", "?includeTasks=false&onlyFailed=false"} {
		code, _, body := k.write(t, "POST", "/connectors/"+name+"/restart"+q, "")
		expectEmpty(t, "POST restart"+q, code, body, http.StatusNoContent)
		k.waitRunning(t, name)
	}

	// Otherwise Response.accepted().entity(stateInfo): 202 with the
	// ConnectorStateInfo of AbstractHerder.buildRestartPlan, in which
	// what restarts shows RESTARTING (onlyFailed=false: the connector
	// and, with includeTasks, every task).
	code, hdr, body := k.write(t, "POST", "/connectors/"+name+"/restart?includeTasks=true", "")
	expectJSON(t, "POST restart?includeTasks=true", code, hdr, body, http.StatusAccepted)
	st := checkStatus(t, "POST restart?includeTasks=true", body, name, "source")
	if st.Connector.State != "RESTARTING" || !st.AllTasks("RESTARTING") {
		t.Errorf("POST restart?includeTasks=true: want the connector and every (>= 1) task RESTARTING: %s", body)
	}
	k.waitRunning(t, name)

	// onlyFailed=true on a healthy connector: 202, nothing restarts.
	for _, q := range []string{"?onlyFailed=true", "?includeTasks=true&onlyFailed=true"} {
		k.waitRunning(t, name)
		code, hdr, body := k.write(t, "POST", "/connectors/"+name+"/restart"+q, "")
		expectJSON(t, "POST restart"+q, code, hdr, body, http.StatusAccepted)
		st := checkStatus(t, "POST restart"+q, body, name, "source")
		if st.Connector.State == "RESTARTING" || len(st.Tasks) == 0 {
			t.Errorf("POST restart%s on a healthy connector: want it not RESTARTING, with its tasks: %s", q, body)
		}
		for _, x := range st.Tasks {
			if x.State == "RESTARTING" {
				t.Errorf("POST restart%s on a healthy connector: task %d RESTARTING: %s", q, x.ID, body)
			}
		}
	}
	k.waitRunning(t, name)

	code, hdr, body = k.write(t, "POST", "/connectors/no-such-connector/restart", "")
	requireErrorBody(t, "POST restart of an unknown connector", code, hdr, body, http.StatusNotFound)
	code, hdr, body = k.write(t, "POST", "/connectors/no-such-connector/restart?includeTasks=true", "")
	requireErrorBody(t, "POST restart?includeTasks=true of an unknown connector", code, hdr, body, http.StatusNotFound)
}

// restartTask creates a connector of its own.
func (f *contractFixture) restartTask(t *testing.T) {
	k := f.k
	name, _ := f.runningSource(t, "task-restart", 2)
	// restartTask is a void resource method: 204, no body.
	code, _, body := k.write(t, "POST", "/connectors/"+name+"/tasks/0/restart", "")
	expectEmpty(t, "POST tasks/0/restart", code, body, http.StatusNoContent)
	k.waitRunning(t, name)
	// DistributedHerder.restartTask: "Unknown task" and "Unknown
	// connector" are NotFoundExceptions.
	code, hdr, body := k.write(t, "POST", "/connectors/"+name+"/tasks/7/restart", "")
	requireErrorBody(t, "POST tasks/7/restart (out of range)", code, hdr, body, http.StatusNotFound)
	code, hdr, body = k.write(t, "POST", "/connectors/no-such-connector/tasks/0/restart", "")
	requireErrorBody(t, "POST tasks/0/restart of an unknown connector", code, hdr, body, http.StatusNotFound)
}

// pauseResume creates a connector of its own.
func (f *contractFixture) pauseResume(t *testing.T) {
	k := f.k
	name, _ := f.runningSource(t, "pause-resume", 2)
	for i := 0; i < 2; i++ {
		code, _, body := k.write(t, "PUT", "/connectors/"+name+"/pause", "")
		expectEmpty(t, fmt.Sprintf("PUT pause #%d", i+1), code, body, http.StatusAccepted)
	}
	k.waitState(t, name, "connector and tasks PAUSED", func(s proctest.Status) bool {
		return s.Connector.State == "PAUSED" && s.AllTasks("PAUSED")
	})
	for i := 0; i < 2; i++ {
		code, _, body := k.write(t, "PUT", "/connectors/"+name+"/resume", "")
		expectEmpty(t, fmt.Sprintf("PUT resume #%d", i+1), code, body, http.StatusAccepted)
	}
	k.waitRunning(t, name)
}

// stop creates a connector of its own.
func (f *contractFixture) stop(t *testing.T) {
	k := f.k
	name, _ := f.runningSource(t, "stop", 2)
	// stopConnector is a void resource method (JAX-RS: 204 No Content),
	// idempotent per its @Operation description.
	for i := 0; i < 2; i++ {
		code, _, body := k.write(t, "PUT", "/connectors/"+name+"/stop", "")
		if code/100 != 2 {
			t.Fatalf("PUT stop #%d: %d %s", i+1, code, body)
		}
		// Not fatal, so that what follows is checked too.
		if code != http.StatusNoContent || len(body) != 0 {
			t.Errorf("PUT stop #%d: %d %q, Connect answers 204 with no body", i+1, code, body)
		}
	}
	k.waitStopped(t, name)
	// DistributedHerder.stopConnector writes an empty task config list
	// before the STOPPED target state.
	k.pollGET(t, "/connectors/"+name+"/tasks", "GET tasks of a STOPPED connector is []", func(code int, body []byte) bool {
		return code == http.StatusOK && strings.TrimSpace(string(body)) == "[]"
	})
	body := k.pollGET(t, "/connectors/"+name, "info of a STOPPED connector has no tasks", func(code int, body []byte) bool {
		var info struct {
			Tasks []any `json:"tasks"`
		}
		return code == http.StatusOK && json.Unmarshal(body, &info) == nil && info.Tasks != nil && len(info.Tasks) == 0
	})
	checkInfo(t, "GET info of a STOPPED connector", body, name, "source")
	_, _, body = k.read(t, "GET", "/connectors/"+name+"/status")
	checkStatus(t, "status of a STOPPED connector", body, name, "source")

	code, _, body := k.write(t, "PUT", "/connectors/"+name+"/resume", "")
	expectEmpty(t, "PUT resume of a STOPPED connector", code, body, http.StatusAccepted)
	k.waitRunning(t, name)
	k.pollGET(t, "/connectors/"+name+"/tasks", "GET tasks after resume lists a task", func(code int, body []byte) bool {
		var tasks []any
		return code == http.StatusOK && json.Unmarshal(body, &tasks) == nil && len(tasks) == 1
	})
}

// sourceOffsets creates a connector of its own.
func (f *contractFixture) sourceOffsets(t *testing.T) {
	k := f.k
	name, file := f.runningSource(t, "offsets-source", 5)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	path := "/connectors/" + name + "/offsets"
	// entities/ConnectorOffsets: {"offsets":[{"partition":{...},"offset":{...}}]};
	// FileStreamSourceTask: partition {"filename"}, offset {"position"}.
	body := k.pollGET(t, path, "source offset at the end of the file", func(code int, body []byte) bool {
		p, o, ok := oneOffset(code, body)
		return ok && p["filename"] == file && o["position"] == float64(fi.Size())
	})
	checkOffsets(t, "GET source offsets", body)

	alter := fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":0}}]}`, file)
	// DistributedHerder.modifyConnectorOffsetsChecks: 400 unless the
	// target state is STOPPED (PAUSED is not enough).
	code, hdr, body := k.write(t, "PATCH", path, alter)
	msg := requireErrorBody(t, "PATCH offsets of a RUNNING connector", code, hdr, body, http.StatusBadRequest)
	if !strings.Contains(msg, "STOPPED") {
		t.Errorf("PATCH offsets of a RUNNING connector: message does not say it must be STOPPED: %s", msg)
	}
	code, hdr, body = k.write(t, "DELETE", path, "")
	requireErrorBody(t, "DELETE offsets of a RUNNING connector", code, hdr, body, http.StatusBadRequest)
	// ConnectorsResource.alterConnectorOffsets: no offsets is a 400
	// before anything else.
	for _, b := range []string{`{"offsets":[]}`, `{}`} {
		code, hdr, body = k.write(t, "PATCH", path, b)
		requireErrorBody(t, "PATCH offsets "+b, code, hdr, body, http.StatusBadRequest)
	}
	code, _, body = k.write(t, "PUT", "/connectors/"+name+"/pause", "")
	expectCode(t, "PUT pause", code, body, http.StatusAccepted)
	k.waitState(t, name, "PAUSED", func(s proctest.Status) bool { return s.Connector.State == "PAUSED" && s.AllTasks("PAUSED") })
	code, hdr, body = k.write(t, "PATCH", path, alter)
	requireErrorBody(t, "PATCH offsets of a PAUSED connector", code, hdr, body, http.StatusBadRequest)

	k.stopConnector(t, name)
	// Worker.completeModifyOffsetsCallback: 200 {"message": "The offsets
	// for this connector have been altered successfully"} (FileStream
	// connectors' alterOffsets return true).
	code, hdr, body = k.writeRetrying409(t, "PATCH", path, alter)
	expectJSON(t, "PATCH offsets of a STOPPED connector", code, hdr, body, http.StatusOK)
	requireMessage(t, "PATCH offsets", body, "The offsets for this connector have been altered successfully")
	k.pollGET(t, path, "altered offset visible", func(code int, body []byte) bool {
		return code == http.StatusOK && strings.Contains(string(body), `"position":0`)
	})

	code, hdr, body = k.writeRetrying409(t, "DELETE", path, "")
	expectJSON(t, "DELETE offsets of a STOPPED connector", code, hdr, body, http.StatusOK)
	requireMessage(t, "DELETE offsets", body, "The offsets for this connector have been reset successfully")
	body = k.pollGET(t, path, "no offsets after the reset", func(code int, body []byte) bool {
		var out struct {
			Offsets []any `json:"offsets"`
		}
		return code == http.StatusOK && json.Unmarshal(body, &out) == nil && out.Offsets != nil && len(out.Offsets) == 0
	})
	checkOffsets(t, "GET offsets after reset", body)

	for _, req := range []struct{ method, body string }{{"GET", ""}, {"PATCH", alter}, {"DELETE", ""}} {
		code, hdr, body := k.write(t, req.method, "/connectors/no-such-connector/offsets", req.body)
		requireErrorBody(t, req.method+" offsets of an unknown connector", code, hdr, body, http.StatusNotFound)
	}
}

// sinkOffsets relies on src having copied its 3 lines into srcTopic and
// sink having consumed them (postConnector), and on nothing else writing
// to srcTopic.
func (f *contractFixture) sinkOffsets(t *testing.T) {
	k := f.k
	srcTopic, sinkFile, sink := f.srcTopic, f.sinkFile, f.sink
	// The sink has copied the source's 3 records.
	k.poll(t, "sink output has the 3 source lines", func() (bool, string) {
		b := readFile(t, sinkFile)
		return countLines(b) == 3, fmt.Sprintf("%q", b)
	})
	body := k.pollGET(t, "/connectors/"+sink+"/offsets", "sink offset 3 on partition 0", func(code int, body []byte) bool {
		p, o, ok := oneOffset(code, body)
		return ok && p["kafka_topic"] == srcTopic && p["kafka_partition"] == 0.0 && o["kafka_offset"] == 3.0
	})
	checkOffsets(t, "GET sink offsets", body)
}

// activeTopics relies on src and sink (postConnector) using srcTopic (it
// polls until they show it); it resets src's active topics.
func (f *contractFixture) activeTopics(t *testing.T) {
	k := f.k
	srcTopic, src, sink := f.srcTopic, f.src, f.sink
	// ConnectorsResource.getConnectorActiveTopics:
	// Collections.singletonMap(connector, ActiveTopicsInfo) ->
	// {"<connector>":{"topics":[...]}}.
	for _, c := range []string{src, sink} {
		want := fmt.Sprintf(`{%q:{"topics":[%q]}}`, c, srcTopic)
		k.pollGET(t, "/connectors/"+c+"/topics", c+" uses "+srcTopic, func(code int, body []byte) bool {
			var m map[string]any
			return code == http.StatusOK && json.Unmarshal(body, &m) == nil && compactJSON(m) == want
		})
	}
	// resetConnectorActiveTopics: Response.accepted(), 202, no body.
	code, _, body := k.write(t, "PUT", "/connectors/"+src+"/topics/reset", "")
	expectEmpty(t, "PUT topics/reset", code, body, http.StatusAccepted)
	want := fmt.Sprintf(`{%q:{"topics":[]}}`, src)
	k.pollGET(t, "/connectors/"+src+"/topics", "no topics after the reset", func(code int, body []byte) bool {
		var m map[string]any
		return code == http.StatusOK && json.Unmarshal(body, &m) == nil && compactJSON(m) == want
	})
}

// plugins relies on nothing.
func (f *contractFixture) plugins(t *testing.T) {
	k := f.k
	body := k.getJSON(t, "/connector-plugins")
	types := checkPlugins(t, "GET /connector-plugins", body)
	if types[fileSourceClass] != "source" || types[fileSinkClass] != "sink" {
		t.Errorf("GET /connector-plugins: FileStream connectors missing or mistyped: %s", body)
	}
	for class, typ := range types {
		// connectorsOnly defaults to true: only source and sink.
		if typ != "source" && typ != "sink" {
			t.Errorf("GET /connector-plugins lists %s of type %q; connectorsOnly defaults to true", class, typ)
		}
	}
	body = k.getJSON(t, "/connector-plugins?connectorsOnly=false")
	types = checkPlugins(t, "GET /connector-plugins?connectorsOnly=false", body)
	// A converter is listed twice, as converter and header_converter: the
	// types come from the list, not from the map by class.
	seen := map[string]bool{}
	for _, x := range jsonArray(t, "GET /connector-plugins?connectorsOnly=false", body) {
		if p, ok := x.(map[string]any); ok {
			typ, _ := p["type"].(string)
			seen[typ] = true
		}
	}
	// PluginType.toString(): lower case names.
	for _, typ := range []string{"source", "sink", "converter", "header_converter", "transformation", "predicate"} {
		if !seen[typ] {
			t.Errorf("GET /connector-plugins?connectorsOnly=false has no plugin of type %q: %s", typ, body)
		}
	}
	if types[stringConverter] != "converter" && types[stringConverter] != "header_converter" {
		t.Errorf("GET /connector-plugins?connectorsOnly=false does not list %s: %s", stringConverter, body)
	}
}

// transformationPlugins relies on nothing.
func (f *contractFixture) transformationPlugins(t *testing.T) {
	k := f.k
	// Connect adds herder.plugins().transformations() and predicates() to
	// the full list; a config can use every one listed, and a bad one is a
	// 400 that names the key.
	body := k.getJSON(t, "/connector-plugins?connectorsOnly=false")
	types := checkPlugins(t, "GET /connector-plugins?connectorsOnly=false", body)
	for class, want := range map[string]string{
		"org.apache.kafka.connect.transforms.RegexRouter":                 "transformation",
		"org.apache.kafka.connect.transforms.Cast$Value":                  "transformation",
		"org.apache.kafka.connect.transforms.predicates.TopicNameMatches": "predicate",
		"org.apache.kafka.connect.storage.SimpleHeaderConverter":          "header_converter",
	} {
		if types[class] != want {
			t.Errorf("GET /connector-plugins?connectorsOnly=false: %s has type %q, want %q", class, types[class], want)
		}
	}
	cfg := map[string]string{"connector.class": "FileStreamSource", "file": "/tmp/x", "topic": "t",
		"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter"}
	code, hdr, body := k.write(t, "POST", "/connectors", connectorJSON(t, k.name("smt"), cfg))
	expectJSON(t, "POST /connectors with a RegexRouter lacking its regex", code, hdr, body, http.StatusBadRequest)
	if !strings.Contains(string(body), "transforms.r.regex") {
		t.Errorf("POST /connectors with a RegexRouter lacking its regex: the 400 does not name the key: %s", body)
	}
}

// pluginConfig relies on nothing.
func (f *contractFixture) pluginConfig(t *testing.T) {
	k := f.k
	for _, p := range []string{fileSourceClass, "FileStreamSource", "FileStreamSourceConnector"} {
		body := k.getJSON(t, "/connector-plugins/"+p+"/config")
		defs := map[string]map[string]any{}
		for i, x := range jsonArray(t, "GET plugin config "+p, body) {
			d, ok := x.(map[string]any)
			if !ok {
				t.Fatalf("GET plugin config %s: [%d] is not an object: %s", p, i, body)
			}
			checkConfigKey(t, fmt.Sprintf("GET plugin config %s [%d]", p, i), d)
			name, _ := d["name"].(string)
			defs[name] = d
		}
		// AbstractHerder.connectorPluginConfig: the plugin's CONFIG_DEF,
		// then (since Kafka 3.5, KAFKA-14843) the framework's
		// SourceConnectorConfig keys: name, connector.class, tasks.max...
		for key, want := range map[string]struct {
			typ      string
			required bool
		}{"file": {"STRING", false}, "topic": {"STRING", true}, "batch.size": {"INT", false},
			"name": {"STRING", true}, "connector.class": {"STRING", true}, "tasks.max": {"INT", false}} {
			d, ok := defs[key]
			if !ok {
				t.Errorf("GET plugin config %s: no definition of %q", p, key)
				continue
			}
			if d["type"] != want.typ || d["required"] != want.required {
				t.Errorf("GET plugin config %s: %q is %s, want type %s required %v", p, key, compactJSON(d), want.typ, want.required)
			}
		}
	}
	code, hdr, body := k.read(t, "GET", "/connector-plugins/com.example.NoSuchPlugin/config")
	// AbstractHerder.connectorPluginConfig: "Unknown plugin" is a 404.
	requireErrorBody(t, "GET config of an unknown plugin", code, hdr, body, http.StatusNotFound)
}

// validate relies on nothing.
func (f *contractFixture) validate(t *testing.T) {
	k := f.k
	dir := f.dir
	cfg := map[string]string{
		"connector.class": fileSourceClass, "name": "validate-me", "file": filepath.Join(dir, "v.txt"),
		"topic": "v", "batch.size": "lots", "tasks.max": "1",
	}
	b, _ := json.Marshal(cfg)
	code, hdr, body := k.write(t, "PUT", "/connector-plugins/FileStreamSourceConnector/config/validate", string(b))
	expectJSON(t, "validate", code, hdr, body, http.StatusOK)
	values := checkConfigInfos(t, "validate", body)
	m := jsonObject(t, "validate", body)
	if n, _ := m["error_count"].(float64); n < 1 {
		t.Errorf("validate: error_count %v, want >= 1 for batch.size=lots: %s", m["error_count"], body)
	}
	if groups, _ := m["groups"].([]any); !slices.Contains(groups, any("Common")) {
		t.Errorf(`validate: groups %s lack Connect's "Common"`, compactJSON(m["groups"]))
	}
	if v := values["batch.size"]; v == nil || v["value"] != "lots" || len(v["errors"].([]any)) == 0 {
		t.Errorf("validate: batch.size=lots has no error: %s", compactJSON(v))
	}
	if v := values["topic"]; v == nil || v["value"] != "v" || len(v["errors"].([]any)) != 0 {
		t.Errorf("validate: topic=v has errors or is missing: %s", compactJSON(v))
	}

	cfg["batch.size"] = "10"
	b, _ = json.Marshal(cfg)
	code, hdr, body = k.write(t, "PUT", "/connector-plugins/"+fileSourceClass+"/config/validate", string(b))
	expectJSON(t, "validate (valid)", code, hdr, body, http.StatusOK)
	checkConfigInfos(t, "validate (valid)", body)
	if m := jsonObject(t, "validate (valid)", body); m["error_count"] != 0.0 {
		t.Errorf("validate of a valid config: error_count %v, want 0: %s", m["error_count"], body)
	}

	// ConnectorPluginsResource.validateConfigs: "Included connector type
	// ... does not match request type ..." is a 400.
	code, hdr, body = k.write(t, "PUT", "/connector-plugins/FileStreamSinkConnector/config/validate", string(b))
	requireErrorBody(t, "validate with a connector.class of another plugin", code, hdr, body, http.StatusBadRequest)
	code, hdr, body = k.write(t, "PUT", "/connector-plugins/FileStreamSourceConnector/config/validate", `{"topic": `)
	requireErrorBody(t, "validate malformed JSON", code, hdr, body, http.StatusBadRequest)
}

// contractLoggers is what the admin/loggers steps share: the worker w they
// ask, the others, and the namespace ns whose worker-scoped level they set.
type contractLoggers struct {
	k      *contract
	w      *workerProc
	others []*workerProc
	ns     string
}

// chooseWorker makes a follower w, the others the other workers.
func (l *contractLoggers) chooseWorker() {
	l.w = l.k.follower()
	l.others = nil
	for _, x := range l.k.workers {
		if x != l.w {
			l.others = append(l.others, x)
		}
	}
}

// list relies on nothing.
func (l *contractLoggers) list(t *testing.T) {
	k, w := l.k, l.w
	code, hdr, body := k.on(t, w, "GET", "/admin/loggers", "")
	expectJSON(t, "GET /admin/loggers", code, hdr, body, http.StatusOK)
	all := jsonObject(t, "GET /admin/loggers", body)
	// LoggingResource.listLoggers -> Loggers.allLevels(): a map
	// name -> LoggerLevel {"level","last_modified"}, root included
	// (last_modified is a Long, null until changed; Jackson writes
	// the null).
	if _, ok := all["root"]; !ok {
		t.Errorf("GET /admin/loggers has no root logger: %s", body)
	}
	for name, v := range all {
		if o, ok := v.(map[string]any); ok {
			requireFields(t, "GET /admin/loggers "+name, o, map[string]string{"level": "string", "last_modified": "int|null"})
		} else {
			t.Errorf("GET /admin/loggers: %s is not an object: %s", name, compactJSON(v))
		}
	}
	code, hdr, body = k.on(t, w, "GET", "/admin/loggers/root", "")
	expectJSON(t, "GET /admin/loggers/root", code, hdr, body, http.StatusOK)
	requireFields(t, "GET /admin/loggers/root", jsonObject(t, "root", body), map[string]string{"level": "string", "last_modified": "int|null"})
}

// setWorkerScope sets ns to TRACE on w; it relies on nothing.
func (l *contractLoggers) setWorkerScope(t *testing.T) {
	k, w, ns := l.k, l.w, l.ns
	// Loggers.setLevel: the sorted names of the loggers it changed,
	// the namespace itself included; AbstractHerder.setWorkerLoggerLevel
	// takes the level case-insensitively; LoggerLevel reports log4j's
	// upper-case name and the time of the change in ms.
	began := time.Now().UnixMilli()
	code, hdr, body := k.on(t, w, "PUT", "/admin/loggers/"+ns, `{"level": "trace"}`)
	expectJSON(t, "PUT /admin/loggers/"+ns, code, hdr, body, http.StatusOK)
	var changed []string
	if err := json.Unmarshal(body, &changed); err != nil || !slices.Contains(changed, ns) {
		t.Errorf("PUT /admin/loggers/%s: want a list of logger names with %s: %s", ns, ns, body)
	}
	for _, n := range changed {
		if !strings.HasPrefix(n, ns) {
			t.Errorf("PUT /admin/loggers/%s changed %s, outside the namespace: %s", ns, n, body)
		}
	}
	code, hdr, body = k.on(t, w, "GET", "/admin/loggers/"+ns, "")
	expectJSON(t, "GET /admin/loggers/"+ns, code, hdr, body, http.StatusOK)
	lvl := jsonObject(t, "GET logger", body)
	requireFields(t, "GET /admin/loggers/"+ns, lvl, map[string]string{"level": "string", "last_modified": "int"})
	if lvl["level"] != "TRACE" {
		t.Errorf("GET /admin/loggers/%s after setting trace: %s, want level TRACE", ns, body)
	}
	if lm, ok := lvl["last_modified"].(float64); !ok || int64(lm) < began-60_000 || int64(lm) > time.Now().UnixMilli()+60_000 {
		t.Errorf("GET /admin/loggers/%s: last_modified %v is not the time of the change in ms (about %d): %s", ns, lvl["last_modified"], began, body)
	}
	code, _, body = k.on(t, w, "GET", "/admin/loggers", "")
	if m := jsonObject(t, "GET /admin/loggers", body); code != http.StatusOK || !strings.Contains(compactJSON(m[ns]), `"level":"TRACE"`) {
		t.Errorf("GET /admin/loggers does not list %s at TRACE: %d %s", ns, code, body)
	}
	// Worker scope changes this worker only.
	for _, o := range l.others {
		code, _, body := k.on(t, o, "GET", "/admin/loggers/"+ns, "")
		if code == http.StatusOK && strings.Contains(string(body), "TRACE") {
			t.Errorf("a worker-scoped level reached %s: %s", o.id, body)
		}
	}
}

// setWithoutLevel relies on nothing.
func (l *contractLoggers) setWithoutLevel(t *testing.T) {
	// LoggingResource.setLevel: BadRequestException.
	code, hdr, body := l.k.on(t, l.w, "PUT", "/admin/loggers/"+l.ns, `{}`)
	requireErrorBody(t, "PUT logger without level", code, hdr, body, http.StatusBadRequest)
}

// setUnknownLevel relies on nothing.
func (l *contractLoggers) setUnknownLevel(t *testing.T) {
	// LoggingResource.setLevel: Level.toLevel(..., null) == null ->
	// throw new NotFoundException("invalid log level '...'.") with
	// org.apache.kafka.connect.errors.NotFoundException: 404.
	code, hdr, body := l.k.on(t, l.w, "PUT", "/admin/loggers/"+l.ns, `{"level": "LOUD"}`)
	requireErrorBody(t, "PUT logger with an unknown level", code, hdr, body, http.StatusNotFound)
}

// getUnknown relies on nothing.
func (l *contractLoggers) getUnknown(t *testing.T) {
	// LoggingResource.getLogger: Loggers.level returns null for a
	// logger that does not exist -> "Logger ... not found.", 404.
	code, hdr, body := l.k.on(t, l.w, "GET", "/admin/loggers/no.such.logger.anywhere", "")
	requireErrorBody(t, "GET an unknown logger", code, hdr, body, http.StatusNotFound)
}

// setClusterScope writes through a follower, not through w; it relies on
// nothing.
func (l *contractLoggers) setClusterScope(t *testing.T) {
	k := l.k
	// LoggingResource.setLevel, CLUSTER_SCOPE: Response.noContent();
	// DistributedHerder.setClusterLoggerLevel writes it to the config
	// topic, from which every worker applies it.
	cns := "sluice.contract.cluster"
	code, _, body := k.write(t, "PUT", "/admin/loggers/"+cns+"?scope=cluster", `{"level": "ERROR"}`)
	expectEmpty(t, "PUT /admin/loggers?scope=cluster", code, body, http.StatusNoContent)
	for _, x := range k.workers {
		k.poll(t, "cluster-scoped level on "+x.id, func() (bool, string) {
			code, _, body := k.on(t, x, "GET", "/admin/loggers/"+cns, "")
			state := fmt.Sprintf("%d %s", code, body)
			if hopeless(code, body) && code != http.StatusNotFound {
				return false, errPollFatal + state
			}
			return code == http.StatusOK && strings.Contains(string(body), `"level":"ERROR"`), state
		})
	}
}

// deleteConnector creates a connector of its own.
func (f *contractFixture) deleteConnector(t *testing.T) {
	k := f.k
	name, _ := f.runningSource(t, "delete-me", 2)
	code, _, body := k.write(t, "DELETE", "/connectors/"+name, "")
	expectEmpty(t, "DELETE", code, body, http.StatusNoContent)
	for _, w := range k.workers {
		k.poll(t, "deleted connector gone on "+w.id, func() (bool, string) {
			code, _, body := k.on(t, w, "GET", "/connectors/"+name, "")
			return code == http.StatusNotFound, fmt.Sprintf("%d %s", code, body)
		})
		code, hdr, body := k.on(t, w, "GET", "/connectors/"+name, "")
		requireErrorBody(t, "GET deleted connector on "+w.id, code, hdr, body, http.StatusNotFound)
	}
	code, hdr, body := k.write(t, "DELETE", "/connectors/"+name, "")
	requireErrorBody(t, "DELETE again", code, hdr, body, http.StatusNotFound)
}

// unknownConnector relies on nothing.
func (f *contractFixture) unknownConnector(t *testing.T) {
	k := f.k
	for _, r := range []struct{ method, path string }{
		{"GET", "/connectors/nope"},
		{"GET", "/connectors/nope/config"},
		{"PUT", "/connectors/nope/pause"},
		{"PUT", "/connectors/nope/resume"},
		{"PUT", "/connectors/nope/stop"},
		{"GET", "/connectors/nope/status"},
		{"GET", "/connectors/nope/tasks"},
		{"DELETE", "/connectors/nope"},
	} {
		code, hdr, body := k.request(t, r.method, r.path)
		requireErrorBody(t, r.method+" "+r.path, code, hdr, body, http.StatusNotFound)
	}
}

// unknownPath names src (postConnector) in its paths; the answers do
// not depend on it existing.
func (f *contractFixture) unknownPath(t *testing.T) {
	k := f.k
	src := f.src
	// ConnectExceptionMapper turns Jersey's NotFoundException and
	// NotAllowedException into {"error_code","message"} with Jersey's
	// messages.
	for _, r := range []struct {
		method, path string
		code         int
		msg          string
	}{
		{"GET", "/no-such-path", 404, "HTTP 404 Not Found"},
		{"GET", "/connectors/" + src + "/no-such-thing", 404, "HTTP 404 Not Found"},
		{"DELETE", "/connectors", 405, "HTTP 405 Method Not Allowed"},
		{"POST", "/connectors/" + src + "/config", 405, "HTTP 405 Method Not Allowed"},
		{"GET", "/connectors/" + src + "/pause", 405, "HTTP 405 Method Not Allowed"},
		{"POST", "/connectors/" + src + "/status", 405, "HTTP 405 Method Not Allowed"},
	} {
		code, hdr, body := k.request(t, r.method, r.path)
		msg := requireErrorBody(t, r.method+" "+r.path, code, hdr, body, r.code)
		if msg != r.msg {
			t.Errorf("%s %s: message %q, Connect's is %q", r.method, r.path, msg, r.msg)
		}
	}
}

// stopConnector is PUT stop as a step of a scenario (the status code is the
// point of its own subtest): any 2xx, then STOPPED with no tasks.
func (k *contract) stopConnector(t *testing.T, name string) {
	t.Helper()
	code, _, body := k.write(t, "PUT", "/connectors/"+name+"/stop", "")
	if code/100 != 2 {
		t.Fatalf("PUT /connectors/%s/stop: %d %s", name, code, body)
	}
	k.waitStopped(t, name)
}

// writeRetrying409 repeats a write that answers 409, which Connect sends
// while a rebalance is under way (DistributedHerder.checkRebalanceNeeded).
func (k *contract) writeRetrying409(t *testing.T, method, path, body string) (int, http.Header, []byte) {
	t.Helper()
	deadline := time.Now().Add(stateDeadline)
	for {
		code, hdr, b := k.write(t, method, path, body)
		if code != http.StatusConflict || time.Now().After(deadline) {
			return code, hdr, b
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// requireMessage checks Connect's entities/Message {"message": ...}.
func requireMessage(t *testing.T, what string, body []byte, want string) {
	t.Helper()
	m := jsonObject(t, what, body)
	requireFields(t, what, m, map[string]string{"message": "string"})
	if m["message"] != want {
		t.Errorf("%s: message %q, Connect's is %q", what, m["message"], want)
	}
}

// oneOffset decodes a 200 answer with a ConnectorOffsets of exactly one
// partition and returns that partition and its offset; ok is false for any
// other answer.
func oneOffset(code int, body []byte) (partition, offset map[string]any, ok bool) {
	var out struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &out) != nil || len(out.Offsets) != 1 {
		return nil, nil, false
	}
	return out.Offsets[0].Partition, out.Offsets[0].Offset, true
}

// checkOffsets checks ConnectorOffsets: {"offsets":[{"partition":{},"offset":{}}]}.
func checkOffsets(t *testing.T, what string, body []byte) {
	t.Helper()
	m := jsonObject(t, what, body)
	requireFields(t, what, m, map[string]string{"offsets": "array"})
	offs, _ := m["offsets"].([]any)
	for i, x := range offs {
		o, ok := x.(map[string]any)
		if !ok {
			t.Errorf("%s: offsets[%d] is not an object: %s", what, i, body)
			continue
		}
		requireFields(t, fmt.Sprintf("%s: offsets[%d]", what, i), o, map[string]string{"partition": "object", "offset": "object"})
		p, _ := o["partition"].(map[string]any)
		if _, sink := p["kafka_topic"]; sink {
			// SinkUtils: kafka_topic string, kafka_partition and kafka_offset numbers.
			requireFields(t, fmt.Sprintf("%s: offsets[%d].partition", what, i), p, map[string]string{"kafka_topic": "string", "kafka_partition": "int"})
			off, _ := o["offset"].(map[string]any)
			requireFields(t, fmt.Sprintf("%s: offsets[%d].offset", what, i), off, map[string]string{"kafka_offset": "int"})
		}
	}
}

// checkPlugins checks a list of PluginInfo {"class","type"[,"version"]}
// and returns class -> type (the last seen).
func checkPlugins(t *testing.T, what string, body []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, x := range jsonArray(t, what, body) {
		p, ok := x.(map[string]any)
		if !ok {
			t.Errorf("%s: [%d] is not an object: %s", what, i, compactJSON(x))
			continue
		}
		// PluginInfo: version is left out when undefined (NoVersionFilter).
		requireFields(t, fmt.Sprintf("%s [%d]", what, i), p, map[string]string{"class": "string", "type": "string", "version": "?string"})
		c, _ := p["class"].(string)
		typ, _ := p["type"].(string)
		out[c] = typ
	}
	return out
}

var (
	configTypes  = map[string]bool{"BOOLEAN": true, "STRING": true, "INT": true, "SHORT": true, "LONG": true, "DOUBLE": true, "LIST": true, "CLASS": true, "PASSWORD": true}
	importances  = map[string]bool{"HIGH": true, "MEDIUM": true, "LOW": true}
	configWidths = map[string]bool{"NONE": true, "SHORT": true, "MEDIUM": true, "LONG": true}
)

// checkConfigKey checks entities/ConfigKeyInfo. Its getter for the order is
// @JsonProperty("order"), so that is the key Connect writes.
func checkConfigKey(t *testing.T, what string, d map[string]any) {
	t.Helper()
	requireFields(t, what, d, map[string]string{
		"name": "string", "type": "string", "required": "bool", "default_value": "string|null",
		"importance": "string", "documentation": "string|null", "group": "string|null", "order": "int",
		"width": "string", "display_name": "string", "dependents": "array",
	})
	if s, _ := d["type"].(string); !configTypes[s] {
		t.Errorf("%s: type %v is not a ConfigDef.Type name", what, d["type"])
	}
	if s, _ := d["importance"].(string); !importances[s] {
		t.Errorf("%s: importance %v is not HIGH, MEDIUM or LOW", what, d["importance"])
	}
	if s, _ := d["width"].(string); !configWidths[s] {
		t.Errorf("%s: width %v is not NONE, SHORT, MEDIUM or LONG", what, d["width"])
	}
}

// checkConfigInfos checks entities/ConfigInfos and returns the values by
// name. error_count is the number of error messages in all values
// (AbstractHerder.generateResult).
func checkConfigInfos(t *testing.T, what string, body []byte) map[string]map[string]any {
	t.Helper()
	m := jsonObject(t, what, body)
	requireFields(t, what, m, map[string]string{"name": "string", "error_count": "int", "groups": "array", "configs": "array"})
	values := map[string]map[string]any{}
	errs := 0
	configs, _ := m["configs"].([]any)
	for i, x := range configs {
		ci, ok := x.(map[string]any)
		if !ok {
			t.Errorf("%s: configs[%d] is not an object", what, i)
			continue
		}
		w := fmt.Sprintf("%s: configs[%d]", what, i)
		// A key the definition does not know has "definition": null; a
		// defined key nobody set may have "value": null.
		requireFields(t, w, ci, map[string]string{"definition": "object|null", "value": "object|null"})
		if d, ok := ci["definition"].(map[string]any); ok {
			checkConfigKey(t, w+".definition", d)
		}
		if v, ok := ci["value"].(map[string]any); ok {
			requireFields(t, w+".value", v, map[string]string{
				"name": "string", "value": "string|null", "recommended_values": "array", "errors": "array", "visible": "bool",
			})
			if e, ok := v["errors"].([]any); ok {
				errs += len(e)
			}
			if n, ok := v["name"].(string); ok {
				values[n] = v
			}
		}
	}
	if m["error_count"] != float64(errs) {
		t.Errorf("%s: error_count %v, but the values carry %d errors", what, m["error_count"], errs)
	}
	return values
}

// TestContractSourceOffsetsRewind: a FileStreamSource has copied a file of N
// lines into topic T; it is stopped, its offset set back to position 0 with
// PATCH /offsets, and resumed: T then holds every line exactly twice.
func TestContractSourceOffsetsRewind(t *testing.T) {
	k := startContract(t, "rewind-source")
	dir := t.TempDir()
	const n = 200
	topic := k.onePartitionTopic(t, "rewind-src")
	file := filepath.Join(dir, "in.txt")
	lines := writeContractFile(t, file, "rewind", n)
	name := k.name("rewind-source")
	k.create(t, name, map[string]string{
		"connector.class": "FileStreamSource", "file": file, "topic": topic, "tasks.max": "1",
		"value.converter": stringConverter,
	})
	k.waitRunning(t, name)
	topicHolds := func(times int) {
		t.Helper()
		k.poll(t, fmt.Sprintf("topic holds every line %d time(s)", times), func() (bool, string) {
			return everyTimes(readTopicValues(t, k.c.bootstrap, topic), lines, times)
		})
	}
	topicHolds(1)

	k.stopConnector(t, name)
	alter := fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":0}}]}`, file)
	code, hdr, body := k.writeRetrying409(t, "PATCH", "/connectors/"+name+"/offsets", alter)
	expectJSON(t, "PATCH offsets", code, hdr, body, http.StatusOK)
	requireMessage(t, "PATCH offsets", body, "The offsets for this connector have been altered successfully")
	code, _, body = k.write(t, "PUT", "/connectors/"+name+"/resume", "")
	expectCode(t, "PUT resume", code, body, http.StatusAccepted)
	k.waitRunning(t, name)
	topicHolds(2)
	// And no more than that once it has settled.
	time.Sleep(2 * time.Second)
	if ok, why := everyTimes(readTopicValues(t, k.c.bootstrap, topic), lines, 2); !ok {
		t.Fatalf("after settling: %s", why)
	}
}

// TestContractSinkOffsetsRewind: a FileStreamSink has copied topic T into a
// file; it is stopped, its offset for partition 0 set to kafka_offset 0, and
// resumed: the file then holds every record twice. Then DELETE /offsets on
// the stopped sink: resumed, it reads T from the start again
// (auto.offset.reset=earliest), three times in all.
func TestContractSinkOffsetsRewind(t *testing.T) {
	k := startContract(t, "rewind-sink")
	dir := t.TempDir()
	const n = 100
	topic := k.onePartitionTopic(t, "rewind-sink")
	var values []string
	for i := 1; i <= n; i++ {
		values = append(values, fmt.Sprintf("record %04d", i))
	}
	produceValues(t, k.c.bootstrap, topic, values)
	out := filepath.Join(dir, "out.txt")
	name := k.name("rewind-sink")
	k.create(t, name, contractSink(out, topic))
	k.waitRunning(t, name)
	outHolds := func(times int) {
		t.Helper()
		k.poll(t, fmt.Sprintf("output holds every record %d time(s)", times), func() (bool, string) {
			b := strings.TrimSuffix(string(readFile(t, out)), "\n")
			var got []string
			if b != "" {
				got = strings.Split(b, "\n")
			}
			return everyTimes(got, values, times)
		})
	}
	outHolds(1)

	path := "/connectors/" + name + "/offsets"
	stop := func() {
		t.Helper()
		k.stopConnector(t, name)
	}
	resume := func() {
		t.Helper()
		code, _, body := k.write(t, "PUT", "/connectors/"+name+"/resume", "")
		expectCode(t, "PUT resume", code, body, http.StatusAccepted)
		k.waitRunning(t, name)
	}
	stop()
	want := fmt.Sprintf(`{"offsets":[{"offset":{"kafka_offset":%d},"partition":{"kafka_partition":0,"kafka_topic":%q}}]}`, n, topic)
	body := k.pollGET(t, path, "sink offsets of the stopped sink", func(code int, body []byte) bool {
		var m map[string]any
		return code == http.StatusOK && json.Unmarshal(body, &m) == nil && compactJSON(m) == want
	})
	checkOffsets(t, "GET sink offsets", body)

	// SinkUtils.parseSinkConnectorOffsets: a partition without kafka_topic
	// and kafka_partition, or an offset without kafka_offset, is a
	// BadRequestException.
	for _, bad := range []string{
		fmt.Sprintf(`{"offsets":[{"partition":{"topic":%q,"partition":0},"offset":{"kafka_offset":0}}]}`, topic),
		fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%q,"kafka_partition":0},"offset":{"position":0}}]}`, topic),
	} {
		code, hdr, body := k.writeRetrying409(t, "PATCH", path, bad)
		requireErrorBody(t, "PATCH sink offsets "+bad, code, hdr, body, http.StatusBadRequest)
	}
	alter := fmt.Sprintf(`{"offsets":[{"partition":{"kafka_topic":%q,"kafka_partition":0},"offset":{"kafka_offset":0}}]}`, topic)
	code, hdr, body := k.writeRetrying409(t, "PATCH", path, alter)
	expectJSON(t, "PATCH sink offsets", code, hdr, body, http.StatusOK)
	requireMessage(t, "PATCH sink offsets", body, "The offsets for this connector have been altered successfully")
	resume()
	outHolds(2)

	stop()
	code, hdr, body = k.writeRetrying409(t, "DELETE", path, "")
	expectJSON(t, "DELETE sink offsets", code, hdr, body, http.StatusOK)
	requireMessage(t, "DELETE sink offsets", body, "The offsets for this connector have been reset successfully")
	k.pollGET(t, path, "no sink offsets after the reset", func(code int, body []byte) bool {
		var m map[string]any
		return code == http.StatusOK && json.Unmarshal(body, &m) == nil && compactJSON(m) == `{"offsets":[]}`
	})
	resume()
	outHolds(3)
}
