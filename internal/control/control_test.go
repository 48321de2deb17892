package control_test

import (
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/state"
)

func TestCreateThenRead(t *testing.T) {
	e := controltest.NewEnv(t)
	info, err := e.C.Create(ctx(t), "src", controltest.SourceConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	wantCfg := controltest.SourceConfig("name", "src")
	// The leader splits the connector as it creates it, so its first task
	// configs are written with its config (one rebalance places both).
	want := control.ConnectorInfo{Name: "src", Config: wantCfg, Tasks: []connectors.TaskID{{Connector: "src", Task: 0}}, Type: "source"}
	if !reflect.DeepEqual(info, want) {
		t.Fatalf("Create = %+v, want %+v", info, want)
	}
	if _, err := e.C.Create(ctx(t), "a-sink", controltest.SinkConfig(), control.InitialRunning); err != nil {
		t.Fatal(err)
	}
	names, err := e.C.Connectors()
	if err != nil || !reflect.DeepEqual(names, []string{"a-sink", "src"}) {
		t.Fatalf("Connectors = %v, %v; want sorted [a-sink src]", names, err)
	}
	got, err := e.C.Info("src")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Info = %+v, %v; want %+v", got, err, want)
	}
	cfg, err := e.C.Config("src")
	if err != nil || !reflect.DeepEqual(cfg, wantCfg) {
		t.Fatalf("Config = %v, %v", cfg, err)
	}
	tasks, err := e.C.Tasks("src")
	if err != nil || len(tasks) != 1 || tasks[0].ID != (connectors.TaskID{Connector: "src", Task: 0}) {
		t.Fatalf("Tasks = %#v, %v; want the one task the leader split", tasks, err)
	}
	st, err := e.C.Status("a-sink")
	if err != nil {
		t.Fatal(err)
	}
	wantSt := control.ConnectorStatus{Name: "a-sink", Connector: control.StateInfo{State: "UNASSIGNED"},
		Tasks: []control.TaskState{{ID: 0, State: "UNASSIGNED"}}, Type: "sink"}
	if !reflect.DeepEqual(st, wantSt) {
		t.Fatalf("Status = %+v, want %+v", st, wantSt)
	}
	if ts := e.Configs.Snapshot().Connectors["src"].TargetState; ts != state.TargetStarted {
		t.Fatalf("target state %s, want STARTED", ts)
	}
}

func TestReadsOfUnknownConnectorAre404(t *testing.T) {
	e := controltest.NewEnv(t)
	checks := map[string]error{}
	_, checks["Info"] = e.C.Info("nope")
	_, checks["Config"] = e.C.Config("nope")
	_, checks["Tasks"] = e.C.Tasks("nope")
	_, checks["Status"] = e.C.Status("nope")
	_, checks["TaskStatus"] = e.C.TaskStatus("nope", 0)
	checks["Delete"] = e.C.Delete(ctx(t), "nope")
	checks["Pause"] = e.C.Pause(ctx(t), "nope")
	checks["Resume"] = e.C.Resume(ctx(t), "nope")
	for op, err := range checks {
		if code(err) != http.StatusNotFound || !strings.Contains(err.Error(), "nope") {
			t.Errorf("%s: %v (code %d), want 404 naming the connector", op, err, code(err))
		}
	}
	if n := len(e.Configs.Calls()); n != 0 {
		t.Errorf("%d writes reached the store", n)
	}
}

// The target state must be in the topic before the config, or a connector
// created PAUSED or STOPPED would start running first. A RUNNING one has
// its first task configs written after its config, in the same batch; a
// PAUSED or STOPPED one none (Connect splits a paused connector only once
// it is resumed).
func TestCreateWritesTargetStateBeforeConfig(t *testing.T) {
	for _, tc := range []struct {
		initial control.InitialState
		want    state.TargetState
	}{
		{"PAUSED", state.TargetPaused},
		{"stopped", state.TargetStopped},
		{"RUNNING", state.TargetStarted},
	} {
		t.Run(string(tc.initial), func(t *testing.T) {
			e := controltest.NewEnv(t)
			if _, err := e.C.Create(ctx(t), "c", controltest.SourceConfig(), tc.initial); err != nil {
				t.Fatal(err)
			}
			calls := e.Configs.Calls()
			want := []controltest.Call{{Op: "target", Name: "c", Target: tc.want}, {Op: "config", Name: "c"}}
			if tc.want == state.TargetStarted {
				want = append(want, controltest.Call{Op: "tasks", Name: "c"})
			}
			if !reflect.DeepEqual(calls, want) {
				t.Fatalf("writes %+v, want %+v", calls, want)
			}
			if ts := e.Configs.Snapshot().Connectors["c"].TargetState; ts != tc.want {
				t.Fatalf("target state %s, want %s", ts, tc.want)
			}
		})
	}
}

func TestCreateRefusals(t *testing.T) {
	e := controltest.NewEnv(t)
	if _, err := e.C.Create(ctx(t), "dup", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	before := len(e.Configs.Calls())
	for _, tc := range []struct {
		name    string
		conn    string
		config  map[string]string
		initial control.InitialState
		code    int
		keys    []string // keys the message and Keys must name
		contain []string
	}{
		{name: "duplicate", conn: "dup", config: controltest.SourceConfig(), code: http.StatusConflict, contain: []string{"dup", "already exists"}},
		{name: "missing class", conn: "x", config: map[string]string{"topic": "t"}, code: 400, keys: []string{"connector.class"}},
		{name: "unknown class", conn: "x", config: controltest.SourceConfig("connector.class", "com.example.Nope"), code: 400,
			keys: []string{"connector.class"}, contain: []string{"com.example.Nope", controltest.SourceClass, controltest.SinkClass}},
		{name: "bad name", conn: "a/b", config: controltest.SourceConfig(), code: 400, keys: []string{"name"}, contain: []string{"'/'"}},
		{name: "empty name", conn: "", config: controltest.SourceConfig(), code: 400, keys: []string{"name"}},
		{name: "name mismatch", conn: "x", config: controltest.SourceConfig("name", "y"), code: 400, keys: []string{"name"}, contain: []string{"(y)", "(x)"}},
		{name: "bad initial state", conn: "x", config: controltest.SourceConfig(), initial: "RUNNIN", code: 400, contain: []string{"initial_state", "RUNNIN"}},
		{name: "many bad keys", conn: "x",
			config: controltest.SourceConfig("tasks.max", "0", "batch.size", "-3", "errors.tolerance", "some",
				"mode", "query", "key.converter", "com.example.NoConverter", "transforms", "t1"),
			code: 400,
			keys: []string{"tasks.max", "batch.size", "errors.tolerance", "query", "key.converter", "transforms.t1.type"}},
		// Connect keys this version would not honour are refused, each by
		// name, rather than accepted and ignored.
		{name: "keys not honoured", conn: "x",
			config: controltest.SourceConfig("producer.override.batch.size", "65536",
				"topic.creation.groups", "compacted", "topic.creation.default.cleanup.policy", "compact",
				"exactly.once.support", "required", "transaction.boundary", "interval", "offsets.storage.topic", " ",
				"predicates", "p", "predicates.p.type", "x"),
			code: 400,
			keys: []string{"producer.override.batch.size", "topic.creation.compacted.include",
				"topic.creation.default.partitions", "topic.creation.default.replication.factor", "exactly.once.support",
				"transaction.boundary", "offsets.storage.topic", "predicates.p.type"}},

		{name: "plugin key missing", conn: "x", config: map[string]string{"connector.class": controltest.SourceClass}, code: 400, keys: []string{"topic"}},
		{name: "sink without topics", conn: "x", config: map[string]string{"connector.class": controltest.SinkClass, "file": "f"}, code: 400,
			keys: []string{"topics", "topics.regex"}},
		{name: "sink dlq in topics", conn: "x", config: controltest.SinkConfig("topics", "in,dlq", "errors.deadletterqueue.topic.name", "dlq"),
			code: 400, keys: []string{"topics"}},
		{name: "panicking plugin", conn: "x", config: map[string]string{"connector.class": controltest.PanicClass}, code: 400,
			keys: []string{"connector.class"}, contain: []string{"panicked", "config is broken"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.C.Create(ctx(t), tc.conn, tc.config, tc.initial)
			if code(err) != tc.code {
				t.Fatalf("err %v (code %d), want code %d", err, code(err), tc.code)
			}
			var ce *control.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err %T, want *control.Error", err)
			}
			for _, k := range tc.keys {
				if !strings.Contains(ce.Message, "\n"+k+": ") {
					t.Errorf("message does not name key %s:\n%s", k, ce.Message)
				}
				if len(ce.Keys[k]) == 0 {
					t.Errorf("Keys lacks %s: %v", k, ce.Keys)
				}
			}
			if tc.keys != nil && len(ce.Keys) != len(tc.keys) {
				t.Errorf("Keys names %d keys, want %d: %v", len(ce.Keys), len(tc.keys), ce.Keys)
			}
			for _, s := range tc.contain {
				if !strings.Contains(ce.Message, s) {
					t.Errorf("message lacks %q:\n%s", s, ce.Message)
				}
			}
		})
	}
	if after := e.Configs.Calls(); len(after) != before {
		t.Fatalf("refused creates wrote to the store: %+v", after[before:])
	}
}

// The values of those keys that this version honours as Connect does are
// accepted: header bytes passed through (ByteArrayConverter), topic
// creation groups, client overrides, and the exactly-once keys a worker
// without exactly-once delivery ignores in Connect too.
func TestCreateAcceptsKeysHonouredAsConnectDoes(t *testing.T) {
	e := controltest.NewEnv(t)
	cfg := controltest.SourceConfig("header.converter", "org.apache.kafka.connect.converters.ByteArrayConverter",
		"topic.creation.default.partitions", "3", "topic.creation.default.replication.factor", "-1",
		"topic.creation.groups", "compacted", "topic.creation.compacted.include", "state.*",
		"topic.creation.compacted.cleanup.policy", "compact", "topic.creation.default.retention.ms", "60000",
		"producer.override.acks", "1", "producer.override.compression.type", "zstd", "admin.override.client.id", "a",
		"exactly.once.support", "requested", "transaction.boundary", "poll")
	if _, err := e.C.Create(ctx(t), "ok-keys", cfg, ""); err != nil {
		t.Fatalf("refused: %v", err)
	}
	// A sink ignores the source-only keys, as Connect does.
	sink := controltest.SinkConfig("exactly.once.support", "required", "offsets.storage.topic", "x")
	if _, err := e.C.Create(ctx(t), "ok-sink", sink, ""); err != nil {
		t.Fatalf("sink refused: %v", err)
	}
}

func TestPutConfigCreatesThenUpdates(t *testing.T) {
	e := controltest.NewEnv(t)
	info, created, err := e.C.PutConfig(ctx(t), "c", controltest.SourceConfig())
	if err != nil || !created || info.Type != "source" || info.Config["name"] != "c" {
		t.Fatalf("first PutConfig = %+v, created %v, %v", info, created, err)
	}
	if err := e.C.Pause(ctx(t), "c"); err != nil {
		t.Fatal(err)
	}
	if err := e.Configs.PutTaskConfigs(ctx(t), "c", []map[string]string{{"task": "0"}, {"task": "1"}}); err != nil {
		t.Fatal(err)
	}
	info, created, err = e.C.PutConfig(ctx(t), "c", controltest.SourceConfig("topic", "other", "name", "c"))
	if err != nil || created {
		t.Fatalf("second PutConfig: created %v, %v", created, err)
	}
	wantTasks := []connectors.TaskID{{Connector: "c", Task: 0}, {Connector: "c", Task: 1}}
	if info.Config["topic"] != "other" || !reflect.DeepEqual(info.Tasks, wantTasks) {
		t.Fatalf("second PutConfig = %+v", info)
	}
	snap := e.Configs.Snapshot().Connectors["c"]
	if snap.Config["topic"] != "other" || snap.TargetState != state.TargetPaused {
		t.Fatalf("after update: config %v, target %s; want topic=other, still PAUSED", snap.Config, snap.TargetState)
	}
	n := len(e.Configs.Calls())
	if _, _, err := e.C.PutConfig(ctx(t), "c", controltest.SourceConfig("batch.size", "x")); code(err) != 400 {
		t.Fatalf("invalid update: %v, want 400", err)
	}
	if len(e.Configs.Calls()) != n {
		t.Fatal("invalid update wrote to the store")
	}
}

func TestTasksAndStatuses(t *testing.T) {
	e := controltest.NewEnv(t)
	if _, err := e.C.Create(ctx(t), "c", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	if err := e.Configs.PutTaskConfigs(ctx(t), "c", []map[string]string{{"task": "0"}, {"task": "1"}}); err != nil {
		t.Fatal(err)
	}
	e.Statuses.PutConnector("c", state.Status{State: state.StateRunning, WorkerID: "w1:8083", Generation: 1})
	e.Statuses.PutTask(connectors.TaskID{Connector: "c", Task: 0}, state.Status{State: state.StateFailed, Trace: "boom", WorkerID: "w2:8083", Generation: 1})
	// A status for a task beyond the committed ones is stale and not shown.
	e.Statuses.PutTask(connectors.TaskID{Connector: "c", Task: 5}, state.Status{State: state.StateRunning, WorkerID: "w2:8083", Generation: 1})

	tasks, err := e.C.Tasks("c")
	wantTasks := []control.TaskInfo{
		{ID: connectors.TaskID{Connector: "c", Task: 0}, Config: map[string]string{"task": "0"}},
		{ID: connectors.TaskID{Connector: "c", Task: 1}, Config: map[string]string{"task": "1"}},
	}
	if err != nil || !reflect.DeepEqual(tasks, wantTasks) {
		t.Fatalf("Tasks = %+v, %v", tasks, err)
	}
	st, err := e.C.Status("c")
	if err != nil {
		t.Fatal(err)
	}
	want := control.ConnectorStatus{
		Name:      "c",
		Connector: control.StateInfo{State: "RUNNING", WorkerID: "w1:8083"},
		Tasks: []control.TaskState{
			{ID: 0, State: "FAILED", WorkerID: "w2:8083", Trace: "boom"},
			{ID: 1, State: "UNASSIGNED"},
		},
		Type: "source",
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("Status = %+v\nwant %+v", st, want)
	}
	ts, err := e.C.TaskStatus("c", 0)
	if err != nil || !reflect.DeepEqual(ts, want.Tasks[0]) {
		t.Fatalf("TaskStatus(0) = %+v, %v", ts, err)
	}
	for _, id := range []int{2, 5, -1} {
		if _, err := e.C.TaskStatus("c", id); code(err) != http.StatusNotFound {
			t.Errorf("TaskStatus(%d): %v, want 404", id, err)
		}
	}
	// A connector status left by a deleted connector of the same name
	// does not describe the new one.
	e.Statuses.PutConnector("c", state.Status{State: state.StateDestroyed, WorkerID: "w1:8083", Generation: 2})
	if st, _ := e.C.Status("c"); st.Connector != (control.StateInfo{State: "UNASSIGNED"}) {
		t.Fatalf("after DESTROYED: connector %+v, want UNASSIGNED", st.Connector)
	}
}

func TestDelete(t *testing.T) {
	e := controltest.NewEnv(t)
	if _, err := e.C.Create(ctx(t), "c", controltest.SourceConfig(), "PAUSED"); err != nil {
		t.Fatal(err)
	}
	if err := e.C.Delete(ctx(t), "c"); err != nil {
		t.Fatal(err)
	}
	if names, _ := e.C.Connectors(); len(names) != 0 {
		t.Fatalf("after delete: %v", names)
	}
	if err := e.C.Delete(ctx(t), "c"); code(err) != http.StatusNotFound {
		t.Fatalf("second delete: %v, want 404", err)
	}
	// Recreating with the default state runs it: no PAUSED left over.
	if _, err := e.C.Create(ctx(t), "c", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	if ts := e.Configs.Snapshot().Connectors["c"].TargetState; ts != state.TargetStarted {
		t.Fatalf("recreated connector: target %s, want STARTED", ts)
	}
}

func TestPauseResumeIdempotent(t *testing.T) {
	e := controltest.NewEnv(t)
	if _, err := e.C.Create(ctx(t), "c", controltest.SourceConfig(), "STOPPED"); err != nil {
		t.Fatal(err)
	}
	target := func() state.TargetState { return e.Configs.Snapshot().Connectors["c"].TargetState }
	if target() != state.TargetStopped {
		t.Fatalf("created STOPPED, target %s", target())
	}
	for _, step := range []struct {
		op   func() error
		want state.TargetState
	}{
		{func() error { return e.C.Resume(ctx(t), "c") }, state.TargetStarted},
		{func() error { return e.C.Resume(ctx(t), "c") }, state.TargetStarted},
		{func() error { return e.C.Pause(ctx(t), "c") }, state.TargetPaused},
		{func() error { return e.C.Pause(ctx(t), "c") }, state.TargetPaused},
		{func() error { return e.C.Resume(ctx(t), "c") }, state.TargetStarted},
	} {
		if err := step.op(); err != nil {
			t.Fatal(err)
		}
		if got := target(); got != step.want {
			t.Fatalf("target %s, want %s", got, step.want)
		}
	}
}

func TestStoreFailureIs500(t *testing.T) {
	e := controltest.NewEnv(t)
	e.Configs.SetFail(errors.New("broker unreachable"))
	_, err := e.C.Create(ctx(t), "c", controltest.SourceConfig(), "")
	if code(err) != http.StatusInternalServerError || !strings.Contains(err.Error(), "broker unreachable") {
		t.Fatalf("err %v, want 500 with the cause", err)
	}
	e.Configs.SetFail(&control.Error{Code: http.StatusConflict, Message: "rebalance in progress"})
	if _, err := e.C.Create(ctx(t), "c", controltest.SourceConfig(), ""); code(err) != http.StatusConflict {
		t.Fatalf("err %v, want the store's own 409", err)
	}
}

func TestNotReady(t *testing.T) {
	e := controltest.NewEnv(t)
	if h := e.C.Health(); h.Code != 200 || h.Status != "healthy" {
		t.Fatalf("ready: %+v", h)
	}
	e.Ready.Set(false)
	if h := e.C.Health(); h.Code != 503 || h.Status != "starting" {
		t.Fatalf("not ready: %+v", h)
	}
	_, err1 := e.C.Connectors()
	_, err2 := e.C.Create(ctx(t), "c", controltest.SourceConfig(), "")
	err3 := e.C.Pause(ctx(t), "c")
	for _, err := range []error{err1, err2, err3} {
		if code(err) != http.StatusServiceUnavailable {
			t.Errorf("not ready: %v, want 503", err)
		}
	}
	// Plugins do not depend on the state topics.
	if _, err := e.C.Validate(controltest.SourceClass, controltest.SourceConfig()); err != nil {
		t.Errorf("Validate while starting: %v", err)
	}
	if len(e.Configs.Calls()) != 0 {
		t.Error("a write reached the store while not ready")
	}
}

func TestServerInfo(t *testing.T) {
	e := controltest.NewEnv(t)
	want := control.ServerInfo{Version: "0.9.0", Commit: "abc123", KafkaClusterID: "kc-1"}
	if got := e.C.ServerInfo(); got != want {
		t.Fatalf("ServerInfo = %+v", got)
	}
}

func TestPlugins(t *testing.T) {
	e := controltest.NewEnv(t)
	want := []control.PluginInfo{
		{Class: controltest.PanicClass, Type: "source", Version: "0.9.0"},
		{Class: controltest.SinkClass, Type: "sink", Version: "0.1"},
		{Class: controltest.SourceClass, Type: "source", Version: "1.2.3"},
	}
	if got := e.C.Plugins(true); !reflect.DeepEqual(got, want) {
		t.Fatalf("Plugins(true) = %+v", got)
	}
	all := e.C.Plugins(false)
	want = append(want,
		control.PluginInfo{Class: controltest.JSONConverter, Type: "converter", Version: "0.9.0"},
		control.PluginInfo{Class: controltest.StringConverter, Type: "converter", Version: "0.9.0"},
		control.PluginInfo{Class: controltest.TransformClass, Type: "transformation", Version: "9.9"},
		control.PluginInfo{Class: controltest.PredicateClass, Type: "predicate", Version: "0.9.0"})
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("Plugins(false) = %+v", all)
	}
	// A transform's own keys, as GET /connector-plugins/{p}/config lists them.
	keys, err := e.C.PluginConfig(controltest.TransformClass)
	if err != nil || len(keys) != 1 || keys[0].Name != "topic" || !keys[0].Required {
		t.Fatalf("PluginConfig(transform) = %+v, %v", keys, err)
	}
	if keys, err := e.C.PluginConfig(controltest.PredicateClass); err != nil || len(keys) != 0 {
		t.Fatalf("PluginConfig(predicate) = %+v, %v", keys, err)
	}
}

// A config with transforms is validated as each task will build it: an
// unknown class lists the known ones, a missing key of the transform and
// an undeclared predicate are named, and a good chain is accepted.
func TestCreateValidatesTransforms(t *testing.T) {
	e := controltest.NewEnv(t)
	bad := controltest.SourceConfig("transforms", "r,u,p", "transforms.r.type", controltest.TransformClass,
		"transforms.u.type", "com.example.Nope", "transforms.p.type", controltest.TransformClass, "transforms.p.topic", "x",
		"transforms.p.predicate", "undeclared")
	_, err := e.C.Create(ctx(t), "bad", bad, "")
	var ce *control.Error
	if !errors.As(err, &ce) || ce.Code != 400 {
		t.Fatalf("bad transforms: %v, want 400", err)
	}
	for key, want := range map[string]string{
		"transforms.r.topic":     "Missing required configuration",
		"transforms.u.type":      controltest.TransformClass,
		"transforms.p.predicate": "not declared",
	} {
		if got := strings.Join(ce.Keys[key], "|"); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want one containing %q", key, got, want)
		}
	}
	good := controltest.SourceConfig("transforms", "r", "transforms.r.type", controltest.TransformClass, "transforms.r.topic", "renamed",
		"transforms.r.predicate", "all", "predicates", "all", "predicates.all.type", controltest.PredicateClass)
	if _, err := e.C.Create(ctx(t), "good", good, ""); err != nil {
		t.Fatalf("good transforms refused: %v", err)
	}
}

func TestPluginConfig(t *testing.T) {
	e := controltest.NewEnv(t)
	keys, err := e.C.PluginConfig("TestSource")
	if err != nil {
		t.Fatal(err)
	}
	// The runtime's keys come first, then the plugin's, as in Connect 3.5+.
	var names []string
	for _, k := range keys {
		names = append(names, k.Name)
	}
	own := []string{"topic", "batch.size", "mode", "query", "password"}
	if len(names) < len(own)+3 || !reflect.DeepEqual(names[len(names)-len(own):], own) ||
		!slices.Contains(names, "name") || !slices.Contains(names, "connector.class") || !slices.Contains(names, "tasks.max") {
		t.Fatalf("keys %v: want the runtime's keys (name, connector.class, tasks.max, ...) then %v", names, own)
	}
	keys = keys[len(names)-len(own):]
	topic, batch := keys[0], keys[1]
	if !topic.Required || topic.DefaultValue != nil || topic.Importance != "HIGH" || *topic.Group != "Source" || topic.Order != 1 {
		t.Errorf("topic = %+v", topic)
	}
	if batch.Required || batch.DefaultValue == nil || *batch.DefaultValue != "100" || batch.Type != "INT" || batch.Order != 2 {
		t.Errorf("batch.size = %+v", batch)
	}
	if keys[2].Group != nil || keys[2].Order != -1 {
		t.Errorf("mode has no group: %+v", keys[2])
	}
	_, err = e.C.PluginConfig("com.example.Nope")
	if code(err) != http.StatusNotFound || !strings.Contains(err.Error(), controltest.SourceClass) {
		t.Fatalf("unknown plugin: %v, want 404 listing the known ones", err)
	}
	if _, err := e.C.PluginConfig(controltest.PanicClass); code(err) != 500 {
		t.Fatalf("panicking plugin: %v, want 500", err)
	}
}

func TestValidate(t *testing.T) {
	e := controltest.NewEnv(t)
	res, err := e.C.Validate("TestSourceConnector", controltest.SourceConfig("name", "c", "mode", "query", "password", "secret",
		"tasks.max", "0", "transforms", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Name != controltest.SourceClass {
		t.Errorf("name %q", res.Name)
	}
	byName := map[string]control.ConfigInfo{}
	var order []string
	for _, c := range res.Configs {
		byName[c.Definition.Name] = c
		order = append(order, c.Definition.Name)
	}
	// Common keys first, then the plugin's, then each transform alias's
	// keys (type, predicate, negate, then its class's own), as Connect's
	// ConnectorConfig.enrich adds them.
	if order[0] != "name" || order[1] != "connector.class" || !slices.Contains(order, "topic") ||
		!slices.Equal(order[len(order)-3:], []string{"transforms.a.type", "transforms.a.predicate", "transforms.a.negate"}) {
		t.Errorf("order %v", order)
	}
	wantErrs := map[string]int{"tasks.max": 1, "query": 1, "transforms.a.type": 1}
	total := 0
	for _, c := range res.Configs {
		total += len(c.Value.Errors)
		if want := wantErrs[c.Definition.Name]; len(c.Value.Errors) != want {
			t.Errorf("%s: errors %v, want %d", c.Definition.Name, c.Value.Errors, want)
		}
		if c.Value.Errors == nil || c.Value.RecommendedValues == nil || c.Definition.Dependents == nil {
			t.Errorf("%s: nil list would encode as null", c.Definition.Name)
		}
	}
	if res.ErrorCount != total || total != 3 {
		t.Errorf("error_count %d, errors %d, want 3", res.ErrorCount, total)
	}
	if v := byName["password"].Value.Value; v == nil || *v != "[hidden]" {
		t.Errorf("password value %v, want hidden", v)
	}
	if v := byName["batch.size"].Value.Value; v == nil || *v != "100" {
		t.Errorf("batch.size value %v, want the default", v)
	}
	if v := byName["key.converter"].Value.Value; v != nil {
		t.Errorf("unset key without default: value %q, want null", *v)
	}
	if !reflect.DeepEqual(byName["mode"].Value.RecommendedValues, []string{"bulk", "query"}) {
		t.Errorf("mode recommended %v", byName["mode"].Value.RecommendedValues)
	}
	wantGroups := []string{"Common", "Transforms", "Predicates", "Error Handling", "Topic Creation", "Exactly Once Support", "offsets.storage", "Source", "Transforms: a"}
	if !reflect.DeepEqual(res.Groups, wantGroups) {
		t.Errorf("groups %v, want %v", res.Groups, wantGroups)
	}
	if c := byName["tasks.max"].Definition; c.Order != 3 || *c.Group != "Common" {
		t.Errorf("tasks.max definition %+v", c)
	}

	// A valid config has no errors; connector.class may be left out.
	res, err = e.C.Validate(controltest.SinkClass, map[string]string{"name": "s", "topics": "in", "file": "f"})
	if err != nil || res.ErrorCount != 0 {
		t.Fatalf("valid sink: %+v, %v", res, err)
	}
	if _, err := e.C.Validate("com.example.Nope", map[string]string{}); code(err) != 400 || !strings.Contains(err.Error(), controltest.SinkClass) {
		t.Errorf("unknown plugin: %v, want 400 listing the known ones", err)
	}
	if _, err := e.C.Validate(controltest.SinkClass, controltest.SourceConfig()); code(err) != 400 || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("config for another plugin: %v, want 400", err)
	}
	if _, err := e.C.Validate(controltest.SinkClass, controltest.SinkConfig()); err != nil {
		t.Errorf("config naming the same plugin by alias: %v", err)
	}
	res, err = e.C.Validate(controltest.SourceClass, controltest.SourceConfig("value.converter", "Nope"))
	if err != nil || res.ErrorCount != 2 { // name is missing, the converter unknown
		t.Errorf("converter check: %+v, %v", res, err)
	}
}

func TestNewRequiresStores(t *testing.T) {
	if _, err := control.New(control.Options{Plugins: connectors.NewRegistry()}); err == nil {
		t.Fatal("New without stores succeeded")
	}
}

// Header converters are listed once more with type header_converter, as
// Connect lists them.
func TestPluginsListHeaderConverters(t *testing.T) {
	e := controltest.NewEnv(t, func(o *control.Options) {
		o.HeaderConverters = []string{"org.apache.kafka.connect.storage.SimpleHeaderConverter", controltest.StringConverter}
	})
	var got []string
	for _, p := range e.C.Plugins(false) {
		if p.Type == "header_converter" {
			got = append(got, p.Class)
		}
	}
	if want := []string{"org.apache.kafka.connect.storage.SimpleHeaderConverter", controltest.StringConverter}; !slices.Equal(got, want) {
		t.Fatalf("header converters %v, want %v", got, want)
	}
}
