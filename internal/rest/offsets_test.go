package rest_test

import (
	"context"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/rest"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// offsetsServer serves the REST API over a control.API with the real
// offsets backend on one broker.
type offsetsServer struct {
	env *storetest.Env
	url string
}

func newOffsetsServer(t *testing.T) *offsetsServer {
	t.Helper()
	e := storetest.Start(t, "restoffs")
	ts := httptest.NewServer(rest.NewHandler(controltest.OffsetsController(t, e.Configs, e.Statuses, e.Offsets, e.Admin), zerolog.Nop()))
	t.Cleanup(ts.Close)
	return &offsetsServer{env: e, url: ts.URL}
}

// create makes a connector through the API and returns its offsets URL.
func (s *offsetsServer) create(t *testing.T, cfg map[string]string, initial string) (string, string) {
	t.Helper()
	name := kafkatest.Unique("c")
	body := mustJSON(map[string]any{"name": name, "config": cfg, "initial_state": initial})
	if r := do(t, "POST", s.url+"/connectors", body); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	return name, s.url + "/connectors/" + name + "/offsets"
}

func ctxT(t *testing.T) context.Context { return testutil.Context(t, 20*time.Second) }

func wantOK(t *testing.T, r response, want any) {
	t.Helper()
	if r.code != 200 {
		t.Fatalf("status %d, want 200; body %s", r.code, r.body)
	}
	if got := r.json(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("body %s, want %v", r.body, want)
	}
}

func message(verb string) map[string]any {
	return map[string]any{"message": "The Connect framework-managed offsets for this connector have been " + verb +
		" successfully. However, if this connector manages offsets externally, they will need to be manually " + verb +
		" in the system that the connector uses."}
}

func TestSourceOffsetsOverHTTP(t *testing.T) {
	s := newOffsetsServer(t)
	_, url := s.create(t, controltest.SourceConfig(), "STOPPED")
	wantOK(t, do(t, "GET", url, ""), map[string]any{"offsets": []any{}})

	wantOK(t, do(t, "PATCH", url, `{"offsets": [
		{"partition": {"filename": "/data/a.txt"}, "offset": {"position": 30}},
		{"partition": {"filename": "/data/b.txt"}, "offset": {"position": 9007199254740993}}
	]}`), message("altered"))
	r := do(t, "GET", url, "")
	// Every digit of a 64-bit offset survives the round trip.
	if r.code != 200 || !strings.Contains(string(r.body), `"position":9007199254740993`) {
		t.Fatalf("GET after alter: %d %s", r.code, r.body)
	}
	wantOK(t, r, map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"filename": "/data/a.txt"}, "offset": map[string]any{"position": 30.0}},
		map[string]any{"partition": map[string]any{"filename": "/data/b.txt"}, "offset": map[string]any{"position": 9007199254740993.0}},
	}})

	wantOK(t, do(t, "PATCH", url, `{"offsets": [{"partition": {"filename": "/data/a.txt"}, "offset": null}]}`), message("altered"))
	wantOK(t, do(t, "GET", url, ""), map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"filename": "/data/b.txt"}, "offset": map[string]any{"position": 9007199254740993.0}},
	}})

	wantOK(t, do(t, "DELETE", url, ""), message("reset"))
	wantOK(t, do(t, "GET", url, ""), map[string]any{"offsets": []any{}})
}

func TestSinkOffsetsOverHTTP(t *testing.T) {
	s := newOffsetsServer(t)
	topic := s.env.Topic("in")
	if _, err := s.env.Admin.CreateTopic(ctxT(t), 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// Apache Kafka answers CreateTopics once its controller has the topic;
	// the broker's own metadata, which the group coordinator checks an
	// offset commit against, catches up a moment later (an alter at once
	// failed with UNKNOWN_TOPIC_OR_PARTITION in CI once).
	testutil.Eventually(t, 20*time.Second, "the topic in the broker's metadata", func() error {
		td, err := s.env.Admin.ListTopics(ctxT(t), topic)
		if err != nil {
			return err
		}
		if err := td.Error(); err != nil {
			return err
		}
		return td[topic].Err
	})
	_, url := s.create(t, controltest.SinkConfig("topics", topic), "STOPPED")
	wantOK(t, do(t, "GET", url, ""), map[string]any{"offsets": []any{}})
	wantOK(t, do(t, "PATCH", url, `{"offsets": [{"partition": {"kafka_topic": "`+topic+`", "kafka_partition": 0}, "offset": {"kafka_offset": 0}}]}`),
		message("altered"))
	wantOK(t, do(t, "GET", url, ""), map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 0.0}, "offset": map[string]any{"kafka_offset": 0.0}},
	}})
	wantOK(t, do(t, "DELETE", url, ""), message("reset"))
	wantOK(t, do(t, "GET", url, ""), map[string]any{"offsets": []any{}})
}

func TestOffsetsChangeWhileRunningIs400(t *testing.T) {
	s := newOffsetsServer(t)
	name, url := s.create(t, controltest.SourceConfig(), "RUNNING")
	want := "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/" + name + "/stop' endpoint"
	if msg := wantError(t, do(t, "PATCH", url, `{"offsets": [{"partition": {"f": "x"}, "offset": {"p": 1}}]}`), 400); msg != want {
		t.Fatalf("PATCH message %q, want %q", msg, want)
	}
	if msg := wantError(t, do(t, "DELETE", url, ""), 400); msg != want {
		t.Fatalf("DELETE message %q, want %q", msg, want)
	}
	// Reading is allowed in any state.
	wantOK(t, do(t, "GET", url, ""), map[string]any{"offsets": []any{}})
}

func TestOffsetsOfUnknownConnectorIs404(t *testing.T) {
	s := newOffsetsServer(t)
	url := s.url + "/connectors/nope/offsets"
	for _, r := range []response{
		do(t, "GET", url, ""),
		do(t, "PATCH", url, `{"offsets": [{"partition": {"f": "x"}, "offset": null}]}`),
		do(t, "DELETE", url, ""),
	} {
		if msg := wantError(t, r, 404); !strings.Contains(msg, "nope") {
			t.Errorf("message %q does not name the connector", msg)
		}
	}
	r := do(t, "PUT", url, `{}`)
	wantError(t, r, 405)
	if allow := r.header.Get("Allow"); allow != "GET, DELETE, PATCH" {
		t.Errorf("Allow %q", allow)
	}
}

func TestAlterOffsetsBadBodiesAre400(t *testing.T) {
	s := newOffsetsServer(t)
	_, src := s.create(t, controltest.SourceConfig(), "STOPPED")
	_, sink := s.create(t, controltest.SinkConfig(), "STOPPED")
	for _, tc := range []struct {
		name, url, body string
		contain         []string
	}{
		{"malformed", src, `{"offsets": [}`, []string{"Malformed JSON", "line 1, column 14"}},
		{"not an object", src, `[]`, []string{"must be a JSON object", "array"}},
		{"missing offsets", src, `{"offset": []}`, []string{"Partitions / offsets need to be provided", `"offsets"`}},
		{"null offsets", src, `{"offsets": null}`, []string{"Partitions / offsets need to be provided"}},
		{"empty offsets", src, `{"offsets": []}`, []string{"Partitions / offsets need to be provided for an alter offsets request"}},
		{"offsets not an array", src, `{"offsets": {"partition": {}}}`, []string{`"offsets" must be a JSON array`, "object"}},
		{"entry not an object", src, `{"offsets": [5, {"partition": {"a": "b"}}]}`, []string{"offsets[0] must be a JSON object", "number"}},
		{"misspelt offset", src, `{"offsets": [{"partition": {"a": "b"}, "ofset": {"p": 1}}]}`, []string{"offsets[0]", `unknown field(s) "ofset"`}},
		{"partition not an object", src, `{"offsets": [{"partition": "a", "offset": null}, {"partition": {"a": 1}, "offset": [1]}]}`,
			[]string{"2 error(s)", "offsets[0].partition must be a JSON object or null, not a string", "offsets[1].offset must be a JSON object or null, not an array"}},
		{"nested source value", src, `{"offsets": [{"partition": {"a": {"b": 1}}, "offset": {"p": 1}}]}`,
			[]string{"offsets[0].partition.a: ", "primitive types"}},
		{"null source partition", src, `{"offsets": [{"offset": {"p": 1}}]}`, []string{"offsets[0].partition: "}},
		{"sink partition fields", sink, `{"offsets": [{"partition": {"kafka_topic": "t"}, "offset": null}]}`,
			[]string{"offsets[0].partition: ", "'kafka_topic' and 'kafka_partition'"}},
		{"sink topic type", sink, `{"offsets": [{"partition": {"kafka_topic": 3, "kafka_partition": 0}, "offset": null}]}`,
			[]string{"offsets[0].partition.kafka_topic: "}},
		{"sink partition value", sink, `{"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": "zero"}, "offset": null}]}`,
			[]string{"offsets[0].partition.kafka_partition: ", "'zero'"}},
		{"sink offset key", sink, `{"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"position": 1}}]}`,
			[]string{"offsets[0].offset: ", "'kafka_offset'"}},
		{"sink negative offset", sink, `{"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": -1}}]}`,
			[]string{"offsets[0].offset.kafka_offset: ", "negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := wantError(t, do(t, "PATCH", tc.url, tc.body), 400)
			for _, c := range tc.contain {
				if !strings.Contains(msg, c) {
					t.Errorf("message lacks %q:\n%s", c, msg)
				}
			}
		})
	}
	wantOK(t, do(t, "GET", src, ""), map[string]any{"offsets": []any{}})
	wantOK(t, do(t, "GET", sink, ""), map[string]any{"offsets": []any{}})
}

// TestSinkAlterOverHTTPWithLingeringTask: the stopped task's static member
// is still in the group when the PATCH arrives.
func TestSinkAlterOverHTTPWithLingeringTask(t *testing.T) {
	s := newOffsetsServer(t)
	e := s.env
	topic := e.Topic("in")
	if _, err := e.Admin.CreateTopic(ctxT(t), 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if err := e.Producer.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	name, url := s.create(t, controltest.SinkConfig("topics", topic), "STOPPED")
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.Opts...),
		kgo.ConsumerGroup(offsets.SinkGroup(name)), kgo.InstanceID(name+"-0"),
		kgo.SessionTimeout(45*time.Second), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())...)
	if err != nil {
		t.Fatal(err)
	}
	if fs := cl.PollFetches(ctxT(t)); fs.NumRecords() != 1 {
		t.Fatalf("task consumed %d records: %v", fs.NumRecords(), fs.Errors())
	}
	if err := cl.CommitUncommittedOffsets(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	wantOK(t, do(t, "GET", url, ""), map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 0.0}, "offset": map[string]any{"kafka_offset": 1.0}},
	}})
	wantOK(t, do(t, "PATCH", url, `{"offsets": [{"partition": {"kafka_topic": "`+topic+`", "kafka_partition": 0}, "offset": {"kafka_offset": 0}}]}`),
		message("altered"))
	wantOK(t, do(t, "GET", url, ""), map[string]any{"offsets": []any{
		map[string]any{"partition": map[string]any{"kafka_topic": topic, "kafka_partition": 0.0}, "offset": map[string]any{"kafka_offset": 0.0}},
	}})
}
