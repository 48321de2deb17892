package connconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

func TestParseRuntimeDefaults(t *testing.T) {
	common := Runtime{
		TasksMax: 1, Tolerance: ToleranceNone, RetryTimeout: 0, RetryDelayMax: time.Minute,
	}
	for _, tc := range []struct {
		typ    connectors.Type
		config map[string]string
		want   func(r *Runtime)
	}{
		// Without topic.creation.* keys a source creates no topics; its
		// transactions, on an enabled worker, end at each poll.
		{connectors.Source, map[string]string{}, func(r *Runtime) { r.ExactlyOnce.Boundary = BoundaryPoll }},
		{connectors.Sink, map[string]string{Topics: "in"}, func(r *Runtime) {
			r.Topics = []string{"in"}
			// Unset, the DLQ takes the broker's replication factor.
			r.DLQ = DLQ{ReplicationFactor: -1}
		}},
		{"", map[string]string{}, func(*Runtime) {}},
	} {
		got, err := ParseRuntime(Worker{}, tc.typ, tc.config)
		if err != nil {
			t.Fatalf("%q: %v", tc.typ, err)
		}
		want := common
		want.Type = tc.typ
		tc.want(&want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.typ, got, want)
		}
		if got.TolerateAll() || got.RetriesForever() {
			t.Errorf("%q: defaults tolerate all or retry forever: %+v", tc.typ, got)
		}
	}
}

func TestParseRuntimeEveryKey(t *testing.T) {
	sink, err := ParseRuntime(Worker{}, connectors.Sink, map[string]string{
		// Keys the runtime does not read are not its business.
		Name: "", ExactlyOnceSupport: "bogus",

		TasksMax: " 7 ", KeyConverter: "StringConverter", ValueConverter: " JsonConverter ",
		ErrorsTolerance: "all", ErrorsRetryTimeout: "-1", ErrorsRetryDelayMaxMs: "250",
		ErrorsLogEnable: "TRUE", ErrorsLogIncludeMessages: "true",
		Topics: "a, b,,c", DLQTopicName: " dlq ", DLQTopicReplicationFactor: "2", DLQContextHeadersEnable: "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Runtime{
		Type: connectors.Sink, TasksMax: 7, KeyConverter: "StringConverter", ValueConverter: "JsonConverter",
		Tolerance: ToleranceAll, RetryTimeout: -time.Millisecond, RetryDelayMax: 250 * time.Millisecond,
		LogErrors: true, LogMessages: true,
		Topics: []string{"a", "b", "c"},
		DLQ:    DLQ{Topic: "dlq", ReplicationFactor: 2, ContextHeaders: true},
	}
	if !reflect.DeepEqual(sink, want) {
		t.Errorf("sink:\n got %+v\nwant %+v", sink, want)
	}
	if !sink.TolerateAll() || !sink.RetriesForever() {
		t.Errorf("sink: TolerateAll %v, RetriesForever %v", sink.TolerateAll(), sink.RetriesForever())
	}

	regex, err := ParseRuntime(Worker{}, connectors.Sink, map[string]string{TopicsRegex: " orders-.* ", ErrorsRetryTimeout: "1500"})
	if err != nil {
		t.Fatal(err)
	}
	if regex.TopicsRegex != "orders-.*" || regex.Topics != nil || regex.RetryTimeout != 1500*time.Millisecond || regex.RetriesForever() {
		t.Errorf("regex sink: %+v", regex)
	}

	source, err := ParseRuntime(Worker{}, connectors.Source, map[string]string{
		TopicCreationDefaultPartitions: "6", TopicCreationDefaultReplicationFactor: "3",
		// Sink keys mean nothing to a source.
		Topics: "x", DLQTopicName: "dlq",
	})
	if err != nil {
		t.Fatal(err)
	}
	def := TopicCreationGroup{Name: "default", Partitions: 6, ReplicationFactor: 3}
	if !source.TopicCreation.Enabled || !reflect.DeepEqual(source.TopicCreation.Default, def) || source.Topics != nil || source.DLQ != (DLQ{}) {
		t.Errorf("source: %+v", source)
	}
}

// Every bad value fails the parse with a *connectors.ConfigError on its own
// key, worded as the control plane words it.
func TestParseRuntimeRejectsBadValuesNamingTheKey(t *testing.T) {
	for _, tc := range []struct {
		typ        connectors.Type
		key, value string
		want       string // substring of the key's error
	}{
		{connectors.Sink, TasksMax, "0", "at least 1"},
		{connectors.Sink, TasksMax, "many", "not a 32-bit integer"},
		{connectors.Source, TasksMax, "", "not a number"},
		{connectors.Sink, ErrorsTolerance, "some", "must be one of none, all"},
		{connectors.Sink, ErrorsTolerance, "", "must be one of"},
		{connectors.Sink, ErrorsRetryTimeout, "-2", "at least -1"},
		{connectors.Sink, ErrorsRetryTimeout, "1s", "not an integer"},
		{connectors.Source, ErrorsRetryDelayMaxMs, "-1", "at least 0"},
		{connectors.Sink, ErrorsLogEnable, "yes", "expected true or false"},
		{connectors.Source, ErrorsLogIncludeMessages, "1", "expected true or false"},
		{connectors.Sink, DLQTopicReplicationFactor, "0", "-1 (the broker's default) or at least 1"},
		{connectors.Sink, DLQTopicReplicationFactor, "40000", "not a 16-bit integer"},
		{connectors.Sink, DLQContextHeadersEnable, "on", "expected true or false"},
		{connectors.Sink, TopicsRegex, "a((", "Invalid value"},
	} {
		config := map[string]string{tc.key: tc.value}
		if tc.typ == connectors.Sink && tc.key != TopicsRegex {
			config[Topics] = "in"
		}
		_, err := ParseRuntime(Worker{}, tc.typ, config)
		var ce *connectors.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s %s=%q: error %v, want a *connectors.ConfigError", tc.typ, tc.key, tc.value, err)
			continue
		}
		if len(ce.Errors) != 1 || len(ce.Errors[tc.key]) != 1 {
			t.Errorf("%s %s=%q: errors %v, want exactly one, on the key", tc.typ, tc.key, tc.value, ce.Errors)
		}
		if msg := strings.Join(ce.Errors[tc.key], "|"); !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.key) {
			t.Errorf("%s %s=%q: %q does not name the key and say %q", tc.typ, tc.key, tc.value, msg, tc.want)
		}
		if !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s %s=%q: Error() %q does not name the key", tc.typ, tc.key, tc.value, err)
		}
	}
}

// A sink must say what it consumes, as Validate requires; every problem is
// reported at once.
func TestParseRuntimeSinkTopicRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config map[string]string
		want   []string // keys in error
	}{
		{"neither", map[string]string{}, []string{Topics, TopicsRegex}},
		{"both", map[string]string{Topics: "a", TopicsRegex: "a.*"}, []string{Topics, TopicsRegex}},
		{"dlq consumed", map[string]string{Topics: "a,dlq", DLQTopicName: "dlq"}, []string{Topics}},
		{"and a bad key", map[string]string{TasksMax: "x"}, []string{Topics, TopicsRegex, TasksMax}},
	} {
		_, err := ParseRuntime(Worker{}, connectors.Sink, tc.config)
		var ce *connectors.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: error %v, want a *connectors.ConfigError", tc.name, err)
			continue
		}
		if len(ce.Errors) != len(tc.want) {
			t.Errorf("%s: errors %v, want on %v", tc.name, ce.Errors, tc.want)
		}
		for _, k := range tc.want {
			if len(ce.Errors[k]) == 0 {
				t.Errorf("%s: no error on %s: %v", tc.name, k, ce.Errors)
			}
		}
	}
	// A source has no topics to name.
	if _, err := ParseRuntime(Worker{}, connectors.Source, map[string]string{}); err != nil {
		t.Errorf("source: %v", err)
	}
}
