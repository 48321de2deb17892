package control_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
)

// offsetsEnv is a Controller with the real offsets backend, over the real
// config, status and offset stores of one broker.
type offsetsEnv struct {
	*storetest.Env
	C *control.Controller
}

func newOffsetsEnv(t *testing.T) *offsetsEnv {
	t.Helper()
	e := storetest.Start(t, "ctloffs")
	return &offsetsEnv{Env: e, C: controltest.OffsetsController(t, e.Configs, e.Statuses, e.Offsets, e.Admin)}
}

func (e *offsetsEnv) create(t *testing.T, cfg map[string]string, initial control.InitialState) string {
	t.Helper()
	name := kafkatest.Unique("conn")
	if _, err := e.C.Create(ctx(t), name, cfg, initial); err != nil {
		t.Fatal(err)
	}
	return name
}

func (e *offsetsEnv) offsets(t *testing.T, name string) []control.ConnectorOffset {
	t.Helper()
	got, err := e.C.Offsets(ctx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	if got.Offsets == nil {
		t.Fatal("Offsets is nil; it must encode as [] when there are none")
	}
	return got.Offsets
}

// reset resets name's offsets, requiring Connect's message and no offsets
// afterwards.
func (e *offsetsEnv) reset(t *testing.T, name string) {
	t.Helper()
	msg, err := e.C.ResetOffsets(ctx(t), name)
	if err != nil || msg.Message != resetMsg {
		t.Fatalf("ResetOffsets = %q, %v", msg.Message, err)
	}
	if got := e.offsets(t, name); len(got) != 0 {
		t.Fatalf("after reset: %v", got)
	}
}

// roundTrip makes v look as JSON decoding makes a response body look.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func wantCode(t *testing.T, err error, want int, contains ...string) {
	t.Helper()
	if code(err) != want {
		t.Fatalf("error %v (code %d), want code %d", err, code(err), want)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("message lacks %q:\n%s", c, err)
		}
	}
}

const (
	alteredMsg = "The Connect framework-managed offsets for this connector have been altered successfully. However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses."
	resetMsg   = "The Connect framework-managed offsets for this connector have been reset successfully. However, if this connector manages offsets externally, they will need to be manually reset in the system that the connector uses."
)

func TestSourceOffsetsAlterReadReset(t *testing.T) {
	e := newOffsetsEnv(t)
	name := e.create(t, controltest.SourceConfig(), control.InitialStopped)
	if got := e.offsets(t, name); len(got) != 0 {
		t.Fatalf("offsets of a new connector: %v", got)
	}
	msg, err := e.C.AlterOffsets(ctx(t), name, []control.ConnectorOffset{
		{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": json.Number("30")}},
		{Partition: map[string]any{"filename": "/b"}, Offset: map[string]any{"position": json.Number("9007199254740993")}},
	})
	if err != nil || msg.Message != alteredMsg {
		t.Fatalf("AlterOffsets = %q, %v", msg.Message, err)
	}
	want := []control.ConnectorOffset{
		{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": int64(30)}},
		// Beyond float64's precision: every digit must survive.
		{Partition: map[string]any{"filename": "/b"}, Offset: map[string]any{"position": int64(9007199254740993)}},
	}
	if got := e.offsets(t, name); !reflect.DeepEqual(got, want) {
		t.Fatalf("after alter: %v, want %v", got, want)
	}

	if _, err := e.C.AlterOffsets(ctx(t), name, []control.ConnectorOffset{{Partition: map[string]any{"filename": "/a"}}}); err != nil {
		t.Fatal(err)
	}
	if got := e.offsets(t, name); !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("after a null offset for /a: %v, want %v", got, want[1:])
	}

	e.reset(t, name)
}

func TestOffsetsChangesNeedStoppedWithoutTasks(t *testing.T) {
	e := newOffsetsEnv(t)
	name := e.create(t, controltest.SourceConfig(), control.InitialRunning)
	change := []control.ConnectorOffset{{Partition: map[string]any{"f": "x"}, Offset: map[string]any{"p": 1}}}
	stopMsg := "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/" + name + "/stop' endpoint"

	_, err := e.C.AlterOffsets(ctx(t), name, change)
	wantCode(t, err, http.StatusBadRequest, stopMsg)
	_, err = e.C.ResetOffsets(ctx(t), name)
	wantCode(t, err, http.StatusBadRequest, stopMsg)
	// Reading is allowed in any state.
	if got := e.offsets(t, name); len(got) != 0 {
		t.Fatalf("offsets: %v", got)
	}

	if err := e.Configs.PutTargetState(ctx(t), name, state.TargetPaused); err != nil {
		t.Fatal(err)
	}
	_, err = e.C.AlterOffsets(ctx(t), name, change)
	wantCode(t, err, http.StatusBadRequest, stopMsg)

	// Stopped, but the task configs are not emptied yet: the tasks may
	// still be running.
	if err := e.Configs.PutTaskConfigs(ctx(t), name, []map[string]string{{"task": "0"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Configs.PutTargetState(ctx(t), name, state.TargetStopped); err != nil {
		t.Fatal(err)
	}
	_, err = e.C.AlterOffsets(ctx(t), name, change)
	wantCode(t, err, http.StatusBadRequest, stopMsg)
	_, err = e.C.ResetOffsets(ctx(t), name)
	wantCode(t, err, http.StatusBadRequest, stopMsg)
	if got := e.offsets(t, name); len(got) != 0 {
		t.Fatalf("a refused change was written: %v", got)
	}

	if err := e.Configs.PutTaskConfigs(ctx(t), name, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.C.AlterOffsets(ctx(t), name, change); err != nil {
		t.Fatal(err)
	}
	if got := e.offsets(t, name); len(got) != 1 {
		t.Fatalf("after alter: %v", got)
	}
}

func TestOffsetsOfUnknownConnectorAre404(t *testing.T) {
	e := newOffsetsEnv(t)
	_, err := e.C.Offsets(ctx(t), "nope")
	wantCode(t, err, http.StatusNotFound, "nope")
	_, err = e.C.AlterOffsets(ctx(t), "nope", []control.ConnectorOffset{{Partition: map[string]any{"a": "b"}}})
	wantCode(t, err, http.StatusNotFound, "nope")
	_, err = e.C.ResetOffsets(ctx(t), "nope")
	wantCode(t, err, http.StatusNotFound, "nope")
}

func TestOffsetsWithoutBackendAre501(t *testing.T) {
	e := controltest.NewEnv(t)
	if _, err := e.C.Create(ctx(t), "src", controltest.SourceConfig(), control.InitialStopped); err != nil {
		t.Fatal(err)
	}
	_, err := e.C.Offsets(ctx(t), "src")
	wantCode(t, err, http.StatusNotImplemented, "offsets")
	_, err = e.C.AlterOffsets(ctx(t), "src", []control.ConnectorOffset{{Partition: map[string]any{"a": "b"}}})
	wantCode(t, err, http.StatusNotImplemented)
	_, err = e.C.ResetOffsets(ctx(t), "src")
	wantCode(t, err, http.StatusNotImplemented)
}

func TestAlterOffsetsRefusesBadEntries(t *testing.T) {
	e := newOffsetsEnv(t)
	src := e.create(t, controltest.SourceConfig(), control.InitialStopped)
	sink := e.create(t, controltest.SinkConfig(), control.InitialStopped)

	_, err := e.C.AlterOffsets(ctx(t), src, nil)
	wantCode(t, err, http.StatusBadRequest, "Partitions / offsets need to be provided")

	_, err = e.C.AlterOffsets(ctx(t), src, []control.ConnectorOffset{
		{Partition: map[string]any{"f": "ok"}, Offset: map[string]any{"p": json.Number("1")}},
		{Offset: map[string]any{"p": 1}},
		{Partition: map[string]any{"f": map[string]any{"nested": true}}, Offset: map[string]any{"p": []any{1}}},
	})
	wantCode(t, err, http.StatusBadRequest, "3 error(s)",
		"offsets[1].partition: ", "offsets[2].partition.f: ", "offsets[2].offset.p: ", "primitive types")

	_, err = e.C.AlterOffsets(ctx(t), sink, []control.ConnectorOffset{
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": json.Number("0")}, Offset: map[string]any{"kafka_offset": json.Number("5")}},
		{Offset: map[string]any{"kafka_offset": 1}},
		{Partition: map[string]any{"kafka_topic": "t"}},
		{Partition: map[string]any{"kafka_topic": 5, "kafka_partition": json.Number("1.5")}},
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": json.Number("-1")}},
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": 0}, Offset: map[string]any{"offset": 3}},
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": 0}, Offset: map[string]any{"kafka_offset": json.Number("-3")}},
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": 0}, Offset: map[string]any{"kafka_offset": "x"}},
		// As JSON decoding without UseNumber gives them.
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": 2.5}},
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": json.Number("2147483648")}},
		{Partition: map[string]any{"kafka_topic": "t", "kafka_partition": 1.0}, Offset: map[string]any{"kafka_offset": 1e19}},
	})
	wantCode(t, err, http.StatusBadRequest, "11 error(s)",
		"offsets[1].partition: The partition for a sink connector offset cannot be null or missing",
		"offsets[2].partition: The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'",
		"offsets[3].partition.kafka_topic: Kafka topic names must be valid strings",
		"offsets[3].partition.kafka_partition: Failed to parse the following Kafka partition value in the provided offsets: '1.5'",
		"offsets[4].partition.kafka_partition: ", "must not be negative",
		"offsets[5].offset: The offset for a sink connector should either be null or contain the key 'kafka_offset'",
		"offsets[6].offset.kafka_offset: ",
		"offsets[7].offset.kafka_offset: Failed to parse the following Kafka offset value in the provided offsets: 'x'",
		"offsets[8].partition.kafka_partition: ", "(not an integer)",
		"offsets[9].partition.kafka_partition: ", "(must be at most 2147483647)",
		"offsets[10].offset.kafka_offset: ", "(must be at most 9223372036854775807)")

	if got := e.offsets(t, src); len(got) != 0 {
		t.Fatalf("a refused request wrote source offsets: %v", got)
	}
	if got := e.offsets(t, sink); len(got) != 0 {
		t.Fatalf("a refused request wrote sink offsets: %v", got)
	}
}

func TestSinkOffsetsAlterReadResetWithLingeringTask(t *testing.T) {
	e := newOffsetsEnv(t)
	topic := e.Topic("in")
	if _, err := e.Admin.CreateTopic(ctx(t), 2, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	pr, err := kgo.NewClient(append(append([]kgo.Opt{}, e.Opts...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 3; i++ {
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}
			if err := pr.ProduceSync(ctx(t), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	name := e.create(t, controltest.SinkConfig("topics", topic), control.InitialStopped)
	e.StoppedSinkTask(t, name, topic, 6)

	got, err := e.C.Offsets(ctx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 0.0}, "offset": map[string]any{"kafka_offset": 3.0}},
		map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 1.0}, "offset": map[string]any{"kafka_offset": 3.0}},
	}}
	if j := roundTrip(t, got); !reflect.DeepEqual(j, wantJSON) {
		t.Fatalf("GET offsets = %v, want %v", j, wantJSON)
	}

	// The stopped task's static member is still in the group: the alter
	// must remove it rather than fail. Numbers may come as strings, as
	// Connect accepts.
	msg, err := e.C.AlterOffsets(ctx(t), name, []control.ConnectorOffset{
		{Partition: map[string]any{"kafka_topic": topic, "kafka_partition": json.Number("0")}, Offset: map[string]any{"kafka_offset": "1"}},
		{Partition: map[string]any{"kafka_topic": topic, "kafka_partition": "1"}},
	})
	if err != nil || msg.Message != alteredMsg {
		t.Fatalf("AlterOffsets = %q, %v", msg.Message, err)
	}
	wantJSON = map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 0.0}, "offset": map[string]any{"kafka_offset": 1.0}},
	}}
	if got, err := e.C.Offsets(ctx(t), name); err != nil || !reflect.DeepEqual(roundTrip(t, got), wantJSON) {
		t.Fatalf("GET after alter = %v, %v; want %v", roundTrip(t, got), err, wantJSON)
	}

	_, err = e.C.AlterOffsets(ctx(t), name, []control.ConnectorOffset{
		{Partition: map[string]any{"kafka_topic": e.Topic("missing"), "kafka_partition": 0}, Offset: map[string]any{"kafka_offset": 1}},
	})
	wantCode(t, err, http.StatusBadRequest, "missing")

	e.StoppedSinkTask(t, name, topic, 5)
	e.reset(t, name)
}

// TestSinkOffsetsRefusedWhileConsumerRuns: a member that is not a stopped
// task of the connector keeps the group busy; the answer is Connect's.
func TestSinkOffsetsRefusedWhileConsumerRuns(t *testing.T) {
	e := newOffsetsEnv(t)
	topic := e.Topic("busy")
	if _, err := e.Admin.CreateTopic(ctx(t), 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if err := e.Producer.ProduceSync(ctx(t), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	name := e.create(t, controltest.SinkConfig("topics", topic), control.InitialStopped)
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.Opts...),
		kgo.ConsumerGroup(offsets.SinkGroup(name)), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if fs := cl.PollFetches(ctx(t)); fs.NumRecords() == 0 {
		t.Fatalf("consumer got nothing: %v", fs.Errors())
	}
	_, err = e.C.ResetOffsets(ctx(t), name)
	wantCode(t, err, http.StatusInternalServerError, "Failed to reset consumer group offsets for connector "+name+" either because its tasks haven't stopped completely yet")
	_, err = e.C.AlterOffsets(ctx(t), name, []control.ConnectorOffset{
		{Partition: map[string]any{"kafka_topic": topic, "kafka_partition": 0}, Offset: map[string]any{"kafka_offset": 0}},
	})
	wantCode(t, err, http.StatusInternalServerError, "Failed to alter consumer group offsets for connector "+name+" either because")
}

func TestOffsetsWaitForReadiness(t *testing.T) {
	e := storetest.Start(t, "ctlready")
	c, err := control.New(control.Options{
		Configs: e.Configs, Statuses: e.Statuses, Plugins: controltest.Registry(),
		Offsets: offsets.NewConnectorOffsets(e.Offsets, nil, e.Admin),
		Ready:   func() bool { return false },
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Offsets(context.Background(), "x")
	wantCode(t, err, http.StatusServiceUnavailable)
	_, err = c.ResetOffsets(context.Background(), "x")
	wantCode(t, err, http.StatusServiceUnavailable)
}
