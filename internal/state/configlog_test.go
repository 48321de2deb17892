package state

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/testutil"
	"github.com/sluice-io/sluice/internal/topics"
)

// rawValues reads the config topic with a plain tailer: key -> latest value.
func rawValues(t *testing.T, opts []kgo.Opt) map[string]string {
	t.Helper()
	got := map[string]string{}
	tl, err := topics.NewTailer(opts, configTopic, func(r *kgo.Record) { got[string(r.Key)] = string(r.Value) })
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if err := tl.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestConfigLogPutAndDelete(t *testing.T) {
	opts := newCluster(t)
	c := startConfigLog(t, opts, zerolog.Nop())
	ctx := testCtx(t)

	if s := c.Snapshot(); len(s.Connectors) != 0 || s.Offset != 0 {
		t.Fatalf("empty topic: %+v", s)
	}
	cfg := map[string]string{"connector.class": "FileStreamSource", "file": "/in.txt", "tasks.max": "2"}
	if err := c.PutConnectorConfig(ctx, "my-conn", cfg); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Changes():
	default:
		t.Fatal("no change signalled after a put")
	}
	s := c.Snapshot()
	conn := s.Connectors["my-conn"]
	if conn == nil || !reflect.DeepEqual(conn.Config, cfg) || conn.TargetState != TargetStarted || conn.Tasks != nil {
		t.Fatalf("after put: %+v", conn)
	}
	if s.Offset != 1 {
		t.Fatalf("Offset %d, want 1", s.Offset)
	}
	// Snapshots share the log's maps (read-only): a new config replaces
	// the map, so a snapshot taken before still reads the old config.
	cfg2 := map[string]string{"connector.class": "FileStreamSource", "file": "/in2.txt"}
	if err := c.PutConnectorConfig(ctx, "my-conn", cfg2); err != nil {
		t.Fatal(err)
	}
	if conn.Config["file"] != "/in.txt" {
		t.Fatalf("a later config changed an earlier snapshot's: %v", conn.Config)
	}
	if got := c.Snapshot().Connectors["my-conn"].Config; !reflect.DeepEqual(got, cfg2) {
		t.Fatalf("after a second put: %v", got)
	}
	if err := c.PutConnectorConfig(ctx, "my-conn", cfg); err != nil {
		t.Fatal(err)
	}
	<-c.Changes()

	if err := c.PutTargetState(ctx, "my-conn", TargetPaused); err != nil {
		t.Fatal(err)
	}
	if ts := c.Snapshot().Connectors["my-conn"].TargetState; ts != TargetPaused {
		t.Fatalf("target state %s, want PAUSED", ts)
	}
	if err := c.PutTargetState(ctx, "my-conn", TargetStopped); err != nil {
		t.Fatal(err)
	}
	if ts := c.Snapshot().Connectors["my-conn"].TargetState; ts != TargetStopped {
		t.Fatalf("target state %s, want STOPPED", ts)
	}
	if err := c.PutTargetState(ctx, "my-conn", "SLEEPING"); err == nil {
		t.Fatal("an unknown target state was accepted")
	}

	tasks := []map[string]string{{"task.id": "0", "file": "/in.txt"}, {"task.id": "1"}}
	if err := c.PutTaskConfigs(ctx, "my-conn", tasks); err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot().Connectors["my-conn"].Tasks; !reflect.DeepEqual(got, tasks) {
		t.Fatalf("tasks %v, want %v", got, tasks)
	}

	raw := rawValues(t, opts)
	wantRaw := map[string]string{
		"connector-my-conn":    `{"properties":{"connector.class":"FileStreamSource","file":"/in.txt","tasks.max":"2"}}`,
		"target-state-my-conn": `{"state":"PAUSED","state.v2":"STOPPED"}`,
		"task-my-conn-0":       `{"properties":{"file":"/in.txt","task.id":"0"}}`,
		"task-my-conn-1":       `{"properties":{"task.id":"1"}}`,
		"commit-my-conn":       `{"tasks":2}`,
	}
	if !reflect.DeepEqual(raw, wantRaw) {
		t.Fatalf("records in the topic:\n%v\nwant\n%v", raw, wantRaw)
	}

	// A commit of zero tasks stops the connector's tasks.
	if err := c.PutTaskConfigs(ctx, "my-conn", nil); err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot().Connectors["my-conn"].Tasks; len(got) != 0 {
		t.Fatalf("tasks after an empty commit: %v", got)
	}

	if err := c.DeleteConnector(ctx, "my-conn"); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Snapshot().Connectors["my-conn"]; ok {
		t.Fatal("deleted connector still in the snapshot")
	}
	// Re-created, it starts afresh: STARTED, no tasks.
	if err := c.PutConnectorConfig(ctx, "my-conn", cfg); err != nil {
		t.Fatal(err)
	}
	if conn := c.Snapshot().Connectors["my-conn"]; conn.TargetState != TargetStarted || len(conn.Tasks) != 0 {
		t.Fatalf("re-created connector: %+v", conn)
	}
}

// Invariant 6: task configs become visible only together with their commit.
func TestConfigLogTaskConfigsOnlyWithCommit(t *testing.T) {
	opts := newCluster(t)
	var logs testutil.LogBuffer
	c := startConfigLog(t, opts, zerolog.New(&logs))
	ctx := testCtx(t)
	if err := c.PutConnectorConfig(ctx, "x", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	raw := kafkatest.NewClient(t, opts)
	task := func(n int, v string) *kgo.Record {
		return &kgo.Record{Topic: configTopic, Key: []byte("task-x-" + string(rune('0'+n))), Value: []byte(`{"properties":{"v":"` + v + `"}}`)}
	}
	commit := func(n int) *kgo.Record {
		return &kgo.Record{Topic: configTopic, Key: []byte("commit-x"), Value: []byte(`{"tasks":` + string(rune('0'+n)) + `}`)}
	}

	kafkatest.Produce(t, raw, task(0, "a0"), task(1, "a1"))
	if err := c.t.WaitForEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot().Connectors["x"].Tasks; got != nil {
		t.Fatalf("uncommitted task configs are visible: %v", got)
	}
	// A second reader starting now must not see them either.
	if got := startConfigLog(t, opts, zerolog.Nop()).Snapshot().Connectors["x"].Tasks; got != nil {
		t.Fatalf("a fresh reader sees uncommitted task configs: %v", got)
	}

	kafkatest.Produce(t, raw, commit(2))
	if err := c.t.WaitForEnd(ctx); err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{{"v": "a0"}, {"v": "a1"}}
	if got := c.Snapshot().Connectors["x"].Tasks; !reflect.DeepEqual(got, want) {
		t.Fatalf("after commit: %v, want %v", got, want)
	}

	// A new generation whose task 1 never arrived: the commit is ignored
	// whole, the previous tasks stay, and no mix of old and new shows.
	kafkatest.Produce(t, raw, task(0, "b0"), commit(2))
	if err := c.t.WaitForEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot().Connectors["x"].Tasks; !reflect.DeepEqual(got, want) {
		t.Fatalf("after an incomplete commit: %v, want the previous %v", got, want)
	}
	if !strings.Contains(logs.String(), "inconsistent task configs") {
		t.Fatalf("incomplete commit not logged:\n%s", logs.String())
	}
	// Task records read before an ignored commit do not count for the
	// next one: this commit has task 1 but not task 0 since the last.
	kafkatest.Produce(t, raw, task(1, "c1"), commit(2))
	if err := c.t.WaitForEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot().Connectors["x"].Tasks; !reflect.DeepEqual(got, want) {
		t.Fatalf("commit completed by records from before the last commit: %v", got)
	}

	kafkatest.Produce(t, raw, task(0, "d0"), task(1, "d1"), task(2, "d2"), commit(3))
	if err := c.t.WaitForEnd(ctx); err != nil {
		t.Fatal(err)
	}
	want = []map[string]string{{"v": "d0"}, {"v": "d1"}, {"v": "d2"}}
	if got := c.Snapshot().Connectors["x"].Tasks; !reflect.DeepEqual(got, want) {
		t.Fatalf("complete commit after an ignored one: %v, want %v", got, want)
	}

	// Another reader replaying the whole history converges.
	c2 := startConfigLog(t, opts, zerolog.Nop())
	if a, b := c.Snapshot(), c2.Snapshot(); !reflect.DeepEqual(a, b) {
		t.Fatalf("second reader differs:\n%+v\n%+v", a, b)
	}
}

func TestConfigLogSecondInstanceConverges(t *testing.T) {
	opts := newCluster(t)
	a := startConfigLog(t, opts, zerolog.Nop())
	ctx := testCtx(t)
	for _, name := range []string{"a", "b-with-dashes", "c"} {
		if err := a.PutConnectorConfig(ctx, name, map[string]string{"name": name}); err != nil {
			t.Fatal(err)
		}
		if err := a.PutTaskConfigs(ctx, name, []map[string]string{{"t": name + "0"}, {"t": name + "1"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.PutTargetState(ctx, "b-with-dashes", TargetPaused); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteConnector(ctx, "c"); err != nil {
		t.Fatal(err)
	}

	b := startConfigLog(t, opts, zerolog.Nop())
	sa, sb := a.Snapshot(), b.Snapshot()
	if !reflect.DeepEqual(sa, sb) {
		t.Fatalf("snapshots differ:\n%+v\n%+v", sa, sb)
	}
	if len(sb.Connectors) != 2 || sb.Connectors["b-with-dashes"].TargetState != TargetPaused || len(sb.Connectors["b-with-dashes"].Tasks) != 2 {
		t.Fatalf("second reader: %+v", sb)
	}

	// Writes by one instance reach the other.
	if err := b.PutConnectorConfig(ctx, "d", map[string]string{"x": "y"}); err != nil {
		t.Fatal(err)
	}
	if err := a.t.WaitForEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Snapshot(), b.Snapshot()) {
		t.Fatal("snapshots differ after a write by the second instance")
	}
}

func TestConfigLogSkipsUnparseableRecords(t *testing.T) {
	opts := newCluster(t)
	raw := kafkatest.NewClient(t, opts)
	kafkatest.Produce(t, raw,
		&kgo.Record{Topic: configTopic, Key: []byte("connector-ok"), Value: []byte(`{"properties":{"a":"1","n":5,"b":true,"z":null}}`)},
		&kgo.Record{Topic: configTopic, Key: []byte("connector-bad"), Value: []byte(`{not json`)},
		&kgo.Record{Topic: configTopic, Key: []byte("target-state-ok"), Value: []byte(`{"state":"NAPPING"}`)},
		&kgo.Record{Topic: configTopic, Key: []byte("task-ok-x"), Value: []byte(`{"properties":{}}`)},
		&kgo.Record{Topic: configTopic, Key: []byte("commit-ok"), Value: []byte(`{"tasks":"two"}`)},
		&kgo.Record{Topic: configTopic, Key: []byte("something-else"), Value: []byte(`{}`)},
		&kgo.Record{Topic: configTopic, Key: []byte("session-key"), Value: []byte(`{"key":"abc"}`)},
		&kgo.Record{Topic: configTopic, Key: []byte("target-state-ok"), Value: []byte(`{"state":"PAUSED"}`)},
	)
	var logs testutil.LogBuffer
	c := startConfigLog(t, opts, zerolog.New(&logs))
	s := c.Snapshot()
	if s.Offset != 8 {
		t.Fatalf("Offset %d, want 8", s.Offset)
	}
	ok := s.Connectors["ok"]
	if len(s.Connectors) != 1 || ok == nil || ok.TargetState != TargetPaused ||
		!reflect.DeepEqual(ok.Config, map[string]string{"a": "1", "n": "5", "b": "true"}) {
		t.Fatalf("snapshot: %+v %+v", s, ok)
	}
	out := logs.String()
	for _, want := range []string{`"key":"connector-bad","partition":0,"offset":1`, `"key":"target-state-ok"`, `"key":"task-ok-x"`, `"key":"commit-ok"`, `"key":"something-else"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "session-key") {
		t.Errorf("Connect's session key was reported as unknown:\n%s", out)
	}
}

func TestConfigLogRestarts(t *testing.T) {
	opts := newCluster(t)
	a := startConfigLog(t, opts, zerolog.Nop())
	ctx := testCtx(t)
	if err := a.RequestRestart(ctx, RestartRequest{Connector: "old", IncludeTasks: true}); err != nil {
		t.Fatal(err)
	}
	recv := func(c *ConfigLog) RestartRequest {
		t.Helper()
		select {
		case r := <-c.Restarts():
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("no restart request delivered")
			return RestartRequest{}
		}
	}
	if r := recv(a); r != (RestartRequest{Connector: "old", IncludeTasks: true}) {
		t.Fatalf("got %+v", r)
	}

	// A worker starting later does not redo restarts made before it.
	b := startConfigLog(t, opts, zerolog.Nop())
	if err := b.RequestRestart(ctx, RestartRequest{Connector: "new-one", OnlyFailed: true}); err != nil {
		t.Fatal(err)
	}
	if r := recv(b); r != (RestartRequest{Connector: "new-one", OnlyFailed: true}) {
		t.Fatalf("second worker got %+v first, want only the new request", r)
	}
	if r := recv(a); r.Connector != "new-one" {
		t.Fatalf("first worker got %+v", r)
	}

	// Nobody reading: requests beyond the channel's capacity are kept,
	// merged per connector, never dropped.
	for i := range restartBuffer + 5 {
		name := "n" + string(rune('a'+i))
		if err := a.RequestRestart(ctx, RestartRequest{Connector: name}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.RequestRestart(ctx, RestartRequest{Connector: "nz", IncludeTasks: true, OnlyFailed: true}); err != nil {
		t.Fatal(err)
	}
	if err := a.RequestRestart(ctx, RestartRequest{Connector: "nz", OnlyFailed: false}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]RestartRequest{}
	for range restartBuffer + 5 + 1 {
		r := recv(a)
		seen[r.Connector] = r
	}
	if len(seen) != restartBuffer+6 {
		t.Fatalf("got %d distinct requests, want %d", len(seen), restartBuffer+6)
	}
	if r := seen["nz"]; !r.IncludeTasks || r.OnlyFailed {
		t.Fatalf("merged request %+v, want include-tasks and not only-failed", r)
	}
	a.Close()
	if _, open := <-a.Restarts(); open {
		t.Fatal("Restarts still open after Close")
	}
}

func TestConfigLogPutWaitsForReadBack(t *testing.T) {
	opts := newCluster(t)
	a := startConfigLog(t, opts, zerolog.Nop())
	b := startConfigLog(t, opts, zerolog.Nop())
	ctx := testCtx(t)
	// Interleaved writers: each Put must see its own write at once.
	for i := range 20 {
		w := a
		if i%2 == 1 {
			w = b
		}
		v := string(rune('a' + i))
		if err := w.PutConnectorConfig(ctx, "k", map[string]string{"v": v}); err != nil {
			t.Fatal(err)
		}
		if got := w.Snapshot().Connectors["k"].Config["v"]; got != v {
			t.Fatalf("write %d: snapshot right after shows %q", i, got)
		}
	}
}

func TestConfigLogUnreachableBroker(t *testing.T) {
	c, err := NewConfigLog([]kgo.Opt{kgo.SeedBrokers(testutil.ClosedAddr(t))}, configTopic, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = kafkatest.StartWithin(t, c, 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "config topic") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Start against a closed port: %v", err)
	}
	pctx, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if err := c.PutConnectorConfig(pctx, "x", nil); err == nil {
		t.Fatal("Put succeeded against a closed port")
	}
}

// The values Sluice writes parse as Kafka Connect writes them.
func TestConfigValueFormats(t *testing.T) {
	v := propertiesValue(map[string]string{"a": "b"})
	var m map[string]map[string]string
	if err := json.Unmarshal(v, &m); err != nil || m["properties"]["a"] != "b" {
		t.Fatalf("%s: %v", v, err)
	}
	for in, want := range map[string]TargetState{
		`{"state":"PAUSED","state.v2":"STOPPED"}`: TargetStopped,
		`{"state":"PAUSED"}`:                      TargetPaused,
		`{"state":"STARTED"}`:                     TargetStarted,
		`{"state":"STARTED","state.v2":"BOGUS"}`:  TargetStarted,
	} {
		if got, err := parseTargetState([]byte(in)); err != nil || got != want {
			t.Errorf("%s: %s, %v; want %s", in, got, err, want)
		}
	}
	if name, n, err := splitTaskKey("my-conn-12"); err != nil || name != "my-conn" || n != 12 {
		t.Errorf("splitTaskKey: %q %d %v", name, n, err)
	}
	for _, bad := range []string{"conn", "-1", "conn-", "conn-x", "conn-+1"} {
		if _, _, err := splitTaskKey(bad); err == nil {
			t.Errorf("splitTaskKey(%q) accepted", bad)
		}
	}
}

// Task-count records (tasks-fencing-<name>), as Connect and the leader of an
// exactly-once cluster write them, reach the snapshot; a bad one is
// reported and skipped, a deleted connector loses its count.
func TestConfigLogTaskCountRecords(t *testing.T) {
	opts := newCluster(t)
	raw := kafkatest.NewClient(t, opts)
	kafkatest.Produce(t, raw,
		&kgo.Record{Topic: configTopic, Key: []byte("connector-src"), Value: []byte(`{"properties":{"a":"1"}}`)},
		&kgo.Record{Topic: configTopic, Key: []byte("tasks-fencing-src"), Value: []byte(`{"task-count":3}`)},
		&kgo.Record{Topic: configTopic, Key: []byte("connector-gone"), Value: []byte(`{"properties":{}}`)},
		&kgo.Record{Topic: configTopic, Key: []byte("tasks-fencing-gone"), Value: []byte(`{"task-count":2}`)},
		&kgo.Record{Topic: configTopic, Key: []byte("connector-gone")},
		&kgo.Record{Topic: configTopic, Key: []byte("tasks-fencing-src"), Value: []byte(`{"task-count":"many"}`)},
	)
	var logs testutil.LogBuffer
	c := startConfigLog(t, opts, zerolog.New(&logs))
	s := c.Snapshot()
	if got := s.Connectors["src"].TaskCount; got != 3 {
		t.Fatalf("task count %d, want 3 (the bad record skipped)", got)
	}
	if !strings.Contains(logs.String(), `"key":"tasks-fencing-src"`) {
		t.Errorf("the bad task-count record was not reported:\n%s", logs.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, new(Batch).TaskCount("src", 1)); err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot().Connectors["src"].TaskCount; got != 1 {
		t.Fatalf("task count %d after writing 1", got)
	}
	if err := c.PutConnectorConfig(ctx, "gone", map[string]string{}); err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot().Connectors["gone"].TaskCount; got != 0 {
		t.Fatalf("a re-created connector kept the task count %d of its deleted namesake", got)
	}
}

// Connector and Names answer as Snapshot does, one connector at a time.
func TestConfigLogConnectorIsOneOfTheSnapshot(t *testing.T) {
	c := startConfigLog(t, newCluster(t), zerolog.Nop())
	ctx := testCtx(t)
	for _, err := range []error{
		c.PutConnectorConfig(ctx, "a", map[string]string{"connector.class": "X", "k": "v"}),
		c.PutTargetState(ctx, "a", TargetPaused),
		c.PutTaskConfigs(ctx, "a", []map[string]string{{"t": "0"}, {"t": "1"}}),
		c.PutConnectorConfig(ctx, "b", map[string]string{"connector.class": "Y"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	snap := c.Snapshot()
	for _, name := range []string{"a", "b"} {
		got, ok := c.Connector(name)
		if !ok || !reflect.DeepEqual(got, snap.Connectors[name]) {
			t.Errorf("Connector(%q) = %+v, %v; the snapshot has %+v", name, got, ok, snap.Connectors[name])
		}
	}
	if _, ok := c.Connector("none"); ok {
		t.Error("a connector without a config was found")
	}
	names := c.Names()
	sort.Strings(names)
	if !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Errorf("Names() = %v", names)
	}
	// The maps are shared and read-only (Snapshot); the Tasks slice is the
	// caller's, and later records replace maps rather than change them.
	got, _ := c.Connector("a")
	got.Tasks[0] = map[string]string{"t": "changed"}
	if err := c.PutConnectorConfig(ctx, "a", map[string]string{"connector.class": "X", "k": "v2"}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutTaskConfigs(ctx, "a", []map[string]string{{"t": "2"}}); err != nil {
		t.Fatal(err)
	}
	if again, _ := c.Connector("a"); again.Config["k"] != "v2" || len(again.Tasks) != 1 || again.Tasks[0]["t"] != "2" {
		t.Errorf("after new configs: %+v", again)
	}
	if got.Config["k"] != "v" || got.Tasks[1]["t"] != "1" {
		t.Errorf("new configs changed what an earlier Connector returned: %+v", got)
	}
}

// Snapshot is made once per change: calls between two records share one
// map, and a record about one connector remakes that connector alone. An
// earlier snapshot is left as it was (holders read it without a lock).
func TestConfigLogSnapshotsAreSharedUntilAChange(t *testing.T) {
	c := startConfigLog(t, newCluster(t), zerolog.Nop())
	ctx := testCtx(t)
	for _, err := range []error{
		c.PutConnectorConfig(ctx, "a", map[string]string{"k": "1"}),
		c.PutConnectorConfig(ctx, "b", map[string]string{"k": "1"}),
		c.PutTaskConfigs(ctx, "b", []map[string]string{{"t": "0"}}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	s1, s2 := c.Snapshot(), c.Snapshot()
	if reflect.ValueOf(s1.Connectors).UnsafePointer() != reflect.ValueOf(s2.Connectors).UnsafePointer() {
		t.Fatal("two snapshots with no record between them have maps of their own")
	}
	if c.Offset() != s1.Offset {
		t.Fatalf("Offset() %d, the snapshot's %d", c.Offset(), s1.Offset)
	}
	a1, b1 := s1.Connectors["a"], s1.Connectors["b"]

	// A record about a: b's view is kept, a's is new, s1 unchanged.
	if err := c.PutTargetState(ctx, "a", TargetPaused); err != nil {
		t.Fatal(err)
	}
	s3 := c.Snapshot()
	if s3.Connectors["b"] != b1 {
		t.Error("a record about a remade b")
	}
	if s3.Connectors["a"] == a1 || s3.Connectors["a"].TargetState != TargetPaused {
		t.Errorf("after pausing a: %+v", s3.Connectors["a"])
	}
	if a1.TargetState != TargetStarted || s1.Offset == s3.Offset {
		t.Errorf("the earlier snapshot changed: a %+v, offsets %d and %d", a1, s1.Offset, s3.Offset)
	}

	// Each kind of record about b remakes b: task configs (visible with
	// their commit), a task count, a config, and a tombstone removes it.
	prev := s3.Connectors["b"]
	for i, write := range []func() error{
		func() error { return c.PutTaskConfigs(ctx, "b", []map[string]string{{"t": "0"}, {"t": "1"}}) },
		func() error { return c.Write(ctx, new(Batch).TaskCount("b", 2)) },
		func() error { return c.PutConnectorConfig(ctx, "b", map[string]string{"k": "2"}) },
	} {
		if err := write(); err != nil {
			t.Fatal(err)
		}
		now := c.Snapshot().Connectors["b"]
		if now == prev {
			t.Fatalf("write %d about b left its view as it was", i)
		}
		prev = now
	}
	if b := prev; len(b.Tasks) != 2 || b.TaskCount != 2 || b.Config["k"] != "2" {
		t.Errorf("b after its records: %+v", b)
	}
	if len(b1.Tasks) != 1 || b1.Config["k"] != "1" {
		t.Errorf("the first snapshot's b changed: %+v", b1)
	}
	if err := c.DeleteConnector(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Snapshot().Connectors["b"]; ok {
		t.Error("b is in the snapshot after its tombstone")
	}
	if err := c.PutConnectorConfig(ctx, "b", map[string]string{"k": "3"}); err != nil {
		t.Fatal(err)
	}
	if b := c.Snapshot().Connectors["b"]; b == nil || b.Tasks != nil || b.Config["k"] != "3" {
		t.Errorf("b re-created: %+v", b)
	}
}
