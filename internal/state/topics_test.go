package state

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// statusRecords reads every record of the status topic, in offset order
// per partition, up to the end it has now.
func statusRecords(t *testing.T, opts []kgo.Opt) []*kgo.Record {
	t.Helper()
	ends, err := kadm.NewClient(kafkatest.NewClient(t, opts)).ListEndOffsets(testCtx(t), statusTopic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	cl := kafkatest.NewClient(t, append(append([]kgo.Opt{}, opts...), kgo.ConsumeTopics(statusTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond)))
	var out []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(testCtx(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r)
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	return out
}

// topicRecords are the status-topic- records of the status topic: key ->
// values in the order written (nil for a tombstone).
func topicRecords(t *testing.T, opts []kgo.Opt) map[string][][]byte {
	t.Helper()
	out := map[string][][]byte{}
	for _, r := range statusRecords(t, opts) {
		if k := string(r.Key); strings.HasPrefix(k, statusTopicPrefix) {
			out[k] = append(out[k], r.Value)
		}
	}
	return out
}

func TestTopicStatusKeys(t *testing.T) {
	for _, tc := range []struct {
		key, topic, connector string
	}{
		{"status-topic-orders:connector-jdbc", "orders", "jdbc"},
		// Connector names may hold ':' and "-connector-"; topic names
		// cannot hold ':', so the first one ends the topic, as in Connect.
		{"status-topic-a.b_c-1:connector-my:conn-connector-x", "a.b_c-1", "my:conn-connector-x"},
	} {
		topic, conn, err := parseTopicStatusKey(tc.key)
		if err != nil || topic != tc.topic || conn != tc.connector {
			t.Errorf("%s: topic %q connector %q err %v", tc.key, topic, conn, err)
		}
		if k := topicStatusKey(tc.connector, tc.topic); k != tc.key {
			t.Errorf("key of %s/%s is %q, want %q", tc.connector, tc.topic, k, tc.key)
		}
	}
	for _, bad := range []string{
		"status-topic-orders",              // no separator
		"status-topic-orders:jdbc",         // wrong separator
		"status-topic-:connector-jdbc",     // empty topic
		"status-topic-orders:connector-",   // empty connector
		"status-task-orders:connector-c",   // not a topic key
		"status-topic-orders:xconnector-c", // separator must follow the ':'
	} {
		if topic, conn, err := parseTopicStatusKey(bad); err == nil {
			t.Errorf("%s parsed as topic %q connector %q", bad, topic, conn)
		}
	}
}

func TestParseTopicTracking(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  TopicTracking
	}{
		{nil, TopicTracking{Enabled: true, AllowReset: true}},
		{map[string]string{"topic.tracking.enable": " FALSE "}, TopicTracking{Enabled: false, AllowReset: true}},
		{map[string]string{"topic.tracking.allow.reset": "false", "topic.tracking.enable": "True"}, TopicTracking{Enabled: true, AllowReset: false}},
		{map[string]string{"topic.tracking.enable": ""}, TopicTracking{Enabled: true, AllowReset: true}},
	} {
		got, err := ParseTopicTracking(tc.props)
		if err != nil || got != tc.want {
			t.Errorf("%v: %+v %v, want %+v", tc.props, got, err, tc.want)
		}
	}
	_, err := ParseTopicTracking(map[string]string{"topic.tracking.allow.reset": "yes"})
	if err == nil || !strings.Contains(err.Error(), "topic.tracking.allow.reset") || !strings.Contains(err.Error(), `"yes"`) {
		t.Fatalf("bad value: %v", err)
	}
}

// A record has Connect's key and value, is written once per connector and
// topic whichever task finds it, and is visible at once to the writer and
// to other workers once read.
func TestRecordActiveTopic(t *testing.T) {
	opts := newCluster(t)
	a, b := twoStatusLogs(t, opts)

	before := time.Now().UnixMilli()
	a.RecordActiveTopic("c", 2, "orders")
	if got := a.ActiveTopics("c"); !reflect.DeepEqual(got, []string{"orders"}) {
		t.Fatalf("own record not visible at once: %v", got)
	}
	// Other tasks, and many goroutines at once, find it recorded.
	var wg sync.WaitGroup
	for task := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.RecordActiveTopic("c", task, "orders")
			a.RecordActiveTopic("c", task, "payments")
		}()
	}
	wg.Wait()
	a.RecordActiveTopic("other", 0, "orders")
	flushAndRead(t, a, b)

	for _, s := range []*StatusLog{a, b, startStatusLog(t, opts, zerolog.Nop())} {
		if got := s.ActiveTopics("c"); !reflect.DeepEqual(got, []string{"orders", "payments"}) {
			t.Fatalf("topics of c: %v", got)
		}
		if got := s.ActiveTopics("other"); !reflect.DeepEqual(got, []string{"orders"}) {
			t.Fatalf("topics of other: %v", got)
		}
		if got := s.ActiveTopics("none"); got == nil || len(got) != 0 {
			t.Fatalf("topics of an unknown connector: %#v, want an empty list", got)
		}
	}

	recs := topicRecords(t, opts)
	if len(recs) != 3 {
		t.Fatalf("records %v, want one per connector and topic", recs)
	}
	for key, vals := range recs {
		if len(vals) != 1 {
			t.Errorf("%s written %d times", key, len(vals))
		}
	}
	vals := recs["status-topic-orders:connector-c"]
	if len(vals) == 0 {
		t.Fatalf("no record under Connect's key: %v", recs)
	}
	var v map[string]map[string]any
	if err := json.Unmarshal(vals[0], &v); err != nil {
		t.Fatal(err)
	}
	st := v["topic"]
	ts, _ := st["discoverTimestamp"].(float64)
	if len(v) != 1 || len(st) != 4 || st["name"] != "orders" || st["connector"] != "c" || st["task"] != float64(2) ||
		int64(ts) < before || int64(ts) > time.Now().UnixMilli() {
		t.Fatalf("value %s, want Connect's {\"topic\":{\"name\",\"connector\",\"task\",\"discoverTimestamp\"}}", vals[0])
	}
}

// Records Connect wrote are read; a tombstone forgets the topic and moves
// the epoch, so tasks record it again; bad records are skipped, logged.
func TestActiveTopicsReadFromTheTopic(t *testing.T) {
	opts := newCluster(t)
	raw := kafkatest.NewClient(t, opts)
	kafkatest.Produce(t, raw,
		&kgo.Record{Topic: statusTopic, Key: []byte("status-topic-t1:connector-c"),
			Value: []byte(`{"topic":{"name":"t1","connector":"c","task":0,"discoverTimestamp":1700000000000}}`)},
		&kgo.Record{Topic: statusTopic, Key: []byte("status-topic-t2:connector-c"),
			Value: []byte(`{"topic":{"name":"t2","connector":"c","task":1,"discoverTimestamp":1700000000001}}`)},
		&kgo.Record{Topic: statusTopic, Key: []byte("status-topic-t3:connector-c"), Value: []byte(`garbage`)},
		&kgo.Record{Topic: statusTopic, Key: []byte("status-topic-t4:connector-c"), Value: []byte(`{"state":"RUNNING"}`)},
		&kgo.Record{Topic: statusTopic, Key: []byte("status-topic-t5-c"), Value: []byte(`{"topic":{}}`)},
	)
	var logs testutil.LogBuffer
	s := startStatusLog(t, opts, zerolog.New(&logs))
	if got := s.ActiveTopics("c"); !reflect.DeepEqual(got, []string{"t1", "t2"}) {
		t.Fatalf("topics read: %v", got)
	}
	s.topics.mu.Lock()
	st := s.topics.active["c"]["t2"]
	s.topics.mu.Unlock()
	if st != (TopicStatus{Topic: "t2", Connector: "c", Task: 1, DiscoverTimestamp: 1700000000001}) {
		t.Fatalf("status read: %+v", st)
	}
	out := logs.String()
	for _, key := range []string{"status-topic-t3:connector-c", "status-topic-t4:connector-c", "status-topic-t5-c"} {
		if !strings.Contains(out, key) {
			t.Errorf("bad record %s not logged:\n%s", key, out)
		}
	}

	epoch := s.ActiveTopicsEpoch()
	// A tombstone of a topic not recorded changes nothing.
	kafkatest.Produce(t, raw, &kgo.Record{Topic: statusTopic, Key: []byte("status-topic-nope:connector-c")})
	flushAndRead(t, s)
	if s.ActiveTopicsEpoch() != epoch {
		t.Fatal("a tombstone of an unknown topic moved the epoch")
	}
	kafkatest.Produce(t, raw, &kgo.Record{Topic: statusTopic, Key: []byte("status-topic-t1:connector-c")})
	flushAndRead(t, s)
	if got := s.ActiveTopics("c"); !reflect.DeepEqual(got, []string{"t2"}) {
		t.Fatalf("after a tombstone: %v", got)
	}
	if s.ActiveTopicsEpoch() == epoch {
		t.Fatal("a tombstone did not move the epoch: tasks would never record the topic again")
	}
}

func TestResetActiveTopics(t *testing.T) {
	opts := newCluster(t)
	a, b := twoStatusLogs(t, opts)
	for _, topic := range []string{"t1", "t2", "t3"} {
		a.RecordActiveTopic("c", 0, topic)
	}
	a.RecordActiveTopic("kept", 0, "t1")
	flushAndRead(t, a, b)

	epoch := b.ActiveTopicsEpoch()
	if err := b.ResetActiveTopics(testCtx(t), "c"); err != nil {
		t.Fatal(err)
	}
	// The worker that reset has read its tombstones back when it returns.
	if got := b.ActiveTopics("c"); len(got) != 0 {
		t.Fatalf("topics right after the reset: %v", got)
	}
	if b.ActiveTopicsEpoch() == epoch {
		t.Fatal("reset did not move the epoch")
	}
	flushAndRead(t, b, a)
	for _, s := range []*StatusLog{a, b, startStatusLog(t, opts, zerolog.Nop())} {
		if got := s.ActiveTopics("c"); len(got) != 0 {
			t.Fatalf("topics after the reset: %v", got)
		}
		if got := s.ActiveTopics("kept"); !reflect.DeepEqual(got, []string{"t1"}) {
			t.Fatalf("another connector's topics: %v", got)
		}
	}
	recs := topicRecords(t, opts)
	for _, topic := range []string{"t1", "t2", "t3"} {
		vals := recs["status-topic-"+topic+":connector-c"]
		if len(vals) != 2 || vals[1] != nil {
			t.Fatalf("%s: records %q, want the record then a tombstone", topic, vals)
		}
	}

	// A task that uses the topic again records it again.
	a.RecordActiveTopic("c", 1, "t2")
	flushAndRead(t, a, b)
	if got := b.ActiveTopics("c"); !reflect.DeepEqual(got, []string{"t2"}) {
		t.Fatalf("recorded again after the reset: %v", got)
	}
	// Resetting a connector without topics writes nothing.
	if err := a.ResetActiveTopics(testCtx(t), "none"); err != nil {
		t.Fatal(err)
	}
	if n := len(topicRecords(t, opts)["status-topic-t2:connector-c"]); n != 3 {
		t.Fatalf("t2 has %d records, want 3", n)
	}
}

// A deleted connector's topics are tombstoned with its statuses, as Connect
// resets the active topics of connectors gone from the config; only with
// tracking enabled, as in Connect.
func TestDeleteConnectorForgetsActiveTopics(t *testing.T) {
	opts := newCluster(t)
	a := startStatusLog(t, opts, zerolog.Nop())
	a.RecordActiveTopic("gone", 0, "t1")
	a.RecordActiveTopic("gone", 1, "t2")
	a.RecordActiveTopic("kept", 0, "t1")
	flushAndRead(t, a)

	a.DeleteConnector("gone", 2)
	flushAndRead(t, a)
	for _, s := range []*StatusLog{a, startStatusLog(t, opts, zerolog.Nop())} {
		if got := s.ActiveTopics("gone"); len(got) != 0 {
			t.Fatalf("deleted connector's topics: %v", got)
		}
		if got := s.ActiveTopics("kept"); !reflect.DeepEqual(got, []string{"t1"}) {
			t.Fatalf("other connector's topics: %v", got)
		}
	}

	// Tracking disabled: nothing recorded, nothing tombstoned.
	a.SetTopicTracking(TopicTracking{Enabled: false, AllowReset: true})
	if a.TopicTrackingEnabled() || !a.TopicTrackingResetAllowed() {
		t.Fatal("config not applied")
	}
	a.RecordActiveTopic("new", 0, "t1")
	if got := a.ActiveTopics("new"); len(got) != 0 {
		t.Fatalf("recorded with tracking disabled: %v", got)
	}
	a.DeleteConnector("kept", 1)
	flushAndRead(t, a)
	if got := a.ActiveTopics("kept"); !reflect.DeepEqual(got, []string{"t1"}) {
		t.Fatalf("tombstoned with tracking disabled: %v", got)
	}
	if _, ok := topicRecords(t, opts)["status-topic-t1:connector-new"]; ok {
		t.Fatal("a record was written with tracking disabled")
	}
}

// A record that cannot be written never blocks the caller, is dropped from
// the local view, and tasks are told to record again after a delay.
func TestRecordActiveTopicFailureIsForgottenAndRetried(t *testing.T) {
	s, err := NewStatusLog([]kgo.Opt{kgo.SeedBrokers(testutil.ClosedAddr(t))}, statusTopic, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.topics.retryDelay = 100 * time.Millisecond
	// Fill the producer's buffer: with no broker, the next write fails
	// at once.
	for n := range statusMaxBuffered {
		s.PutTask(connectors.TaskID{Connector: "c", Task: n}, Status{State: StateRunning, WorkerID: "w", Generation: 1})
	}
	epoch := s.ActiveTopicsEpoch()
	start := time.Now()
	s.RecordActiveTopic("c", 0, "orders")
	s.RecordActiveTopic("c", 0, "payments")
	if took := time.Since(start); took > time.Second {
		t.Fatalf("recording without a broker took %v", took)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(s.ActiveTopics("c")) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.ActiveTopics("c"); len(got) != 0 {
		t.Fatalf("unwritten topics still shown: %v", got)
	}
	for s.ActiveTopicsEpoch() == epoch && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.ActiveTopicsEpoch(); got != epoch+1 {
		t.Fatalf("epoch %d after two failures, want one move to %d", got, epoch+1)
	}
}

func TestResetActiveTopicsReportsFailure(t *testing.T) {
	opts := newCluster(t)
	s := startStatusLog(t, opts, zerolog.Nop())
	s.RecordActiveTopic("c", 0, "t1")
	flushAndRead(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.ResetActiveTopics(ctx, "c"); err == nil || !strings.Contains(err.Error(), "active topics of c") {
		t.Fatalf("reset with an ended context: %v", err)
	}
}
