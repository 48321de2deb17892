package actors

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// clientLog is a franz-go hook that records, by client id, the clients
// made from the runtime's Kafka options and those closed.
type clientLog struct {
	mu           sync.Mutex
	made, closed map[string]int
}

func newClientLog() *clientLog {
	return &clientLog{made: map[string]int{}, closed: map[string]int{}}
}

func clientID(cl *kgo.Client) string { id, _ := cl.OptValue(kgo.ClientID).(string); return id }

func (l *clientLog) OnNewClient(cl *kgo.Client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.made[clientID(cl)]++
}

func (l *clientLog) OnClientClosed(cl *kgo.Client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed[clientID(cl)]++
}

func (l *clientLog) counts(id string) (made, closed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.made[id], l.closed[id]
}

// withClientLog adds l's hooks to the options every client of the runtime
// is made from (not the shared producer, which the test env makes).
func withClientLog(l *clientLog) func(*Options) {
	return func(o *Options) { o.KafkaOpts = append(append([]kgo.Opt{}, o.KafkaOpts...), kgo.WithHooks(l)) }
}

// A source with producer overrides produces through a producer of its own,
// made with its settings (observable in the record batches Kafka stores:
// gzip, where the shared producer compresses nothing), shared by its tasks on the
// worker, and closed when the connector is deleted.
func TestSourceProducerOverridesUseAProducerOfItsOwn(t *testing.T) {
	log := newClientLog()
	e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, withClientLog(log))
	topic := e.topic("own-producer")
	hooksFor("own-prod").records = 300
	e.create("own-prod", withConv(map[string]string{"name": "own-prod", "connector.class": "test.TestSource",
		"topic": topic, "tasks.max": "2",
		"producer.override.compression.type": "gzip", "producer.override.client.id": "own-prod-producer",
		"producer.override.linger.ms": "20", "producer.override.acks": "all"}))
	e.waitTaskState("own-prod", 0, state.StateRunning)
	e.waitTaskState("own-prod", 1, state.StateRunning)

	recs := e.readTopic(topic, 600)
	if len(recs) != 600 {
		t.Fatalf("read %d records, want 600", len(recs))
	}
	codecs := map[uint8]int{}
	for _, r := range recs {
		codecs[r.Attrs.CompressionType()]++
	}
	// franz-go sends a batch uncompressed when compressing would not make
	// it smaller (a lone small record); none may be in another codec.
	if codecs[1] == 0 || len(codecs) > 2 || (len(codecs) == 2 && codecs[0] == 0) {
		t.Fatalf("compression codecs of the records %v, want gzip (1) and perhaps none (0)", codecs)
	}
	if made, closed := log.counts("own-prod-producer"); made != 1 || closed != 0 {
		t.Fatalf("own producer made %d, closed %d times; want made once, for both tasks, and open", made, closed)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.configs.DeleteConnector(ctx, "own-prod"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "the connector's producer closed", func() error {
		if made, closed := log.counts("own-prod-producer"); closed != made {
			return fmt.Errorf("made %d, closed %d", made, closed)
		}
		if n := len(e.rt.producers.m); n != 0 {
			return fmt.Errorf("%d producers still registered", n)
		}
		return nil
	})
}

// A sink's consumer takes consumer overrides: max.poll.records=1 gives
// Write batches of one, and client.id names the group member.
func TestSinkConsumerOverrides(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("one-by-one")
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("0:%d", i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := createTopic(ctx, e.adm, topic, 1, -1, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.create("one-by-one", withConv(map[string]string{"name": "one-by-one", "connector.class": "test.TestSink", "topics": topic,
		"consumer.override.max.poll.records": "1", "consumer.override.client.id": "one-by-one-consumer"}))
	h := hooksFor("one-by-one")
	testutil.Eventually(t, 20*time.Second, "all records written", func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.written) < 30 {
			return fmt.Errorf("%d written", len(h.written))
		}
		return nil
	})
	h.mu.Lock()
	batches := slices.Clone(h.batches)
	h.mu.Unlock()
	if slices.ContainsFunc(batches, func(n int) bool { return n != 1 }) {
		t.Fatalf("batch sizes %v, want 1 each", batches)
	}
	groups, err := e.adm.DescribeGroups(ctx, "connect-one-by-one")
	if err != nil {
		t.Fatal(err)
	}
	g := groups["connect-one-by-one"]
	if len(g.Members) != 1 || g.Members[0].ClientID != "one-by-one-consumer" {
		t.Fatalf("group members %+v, want one with client id one-by-one-consumer", g.Members)
	}
}

// With auto.offset.reset=none a partition without a committed offset fails
// the task, as Connect's consumer throws from poll.
func TestSinkWithoutResetFailsWithoutCommittedOffsets(t *testing.T) {
	e := newEnv(t)
	topic := e.topic("no-reset")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := createTopic(ctx, e.adm, topic, 1, -1, nil); err != nil {
		t.Fatal(err)
	}
	e.create("no-reset", withConv(map[string]string{"name": "no-reset", "connector.class": "test.TestSink", "topics": topic,
		"consumer.override.auto.offset.reset": "none"}))
	e.waitTaskState("no-reset", 0, state.StateFailed)
	if tr := e.taskState("no-reset", 0).Trace; !strings.Contains(tr, "auto.offset.reset=none") {
		t.Fatalf("trace %q does not say why", tr)
	}
}

// Topic creation groups (KIP-158): each topic is created with the settings
// of the first group that takes it, else of the default group.
func TestSourceTopicCreationGroups(t *testing.T) {
	e := newEnv(t)
	state1, orders, other := e.topic("state-users"), e.topic("orders-eu"), e.topic("misc")
	base := map[string]string{
		"topic.creation.groups":                     "compacted,orders",
		"topic.creation.default.partitions":         "2",
		"topic.creation.default.replication.factor": "1",
		"topic.creation.default.retention.ms":       "3600000",
		"topic.creation.compacted.include":          regexp.QuoteMeta(state1) + ",never",
		"topic.creation.compacted.partitions":       "1",
		"topic.creation.compacted.cleanup.policy":   "compact",
		"topic.creation.orders.include":             "orders.*",
		"topic.creation.orders.exclude":             regexp.QuoteMeta(e.topic("orders-tmp")),
		"topic.creation.orders.replication.factor":  "1",
	}
	want := map[string]struct {
		partitions int
		configs    map[string]string
	}{
		state1: {1, map[string]string{"cleanup.policy": "compact"}},
		orders: {2, nil}, // partitions from the default group
		other:  {2, map[string]string{"retention.ms": "3600000"}},
	}
	for i, topic := range []string{state1, orders, other} {
		name := fmt.Sprintf("creator-%d", i)
		hooksFor(name).records = 5
		cfg := withConv(map[string]string{"name": name, "connector.class": "test.TestSource", "topic": topic})
		for k, v := range base {
			cfg[k] = v
		}
		e.create(name, cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testutil.Eventually(t, 20*time.Second, "topics created", func() error {
		details, err := e.adm.ListTopics(ctx, state1, orders, other)
		if err != nil {
			return err
		}
		for topic, w := range want {
			if !details.Has(topic) {
				return fmt.Errorf("%s missing", topic)
			}
			if n := len(details[topic].Partitions); n != w.partitions {
				t.Errorf("%s: %d partitions, want %d", topic, n, w.partitions)
			}
		}
		return nil
	})
	configs, err := e.adm.DescribeTopicConfigs(ctx, state1, orders, other)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range configs {
		set := topicConfigsSet(rc)
		for k, v := range want[rc.Name].configs {
			if set[k] != v {
				t.Errorf("%s: %s=%q, want %q (configs %v)", rc.Name, k, set[k], v, set)
			}
		}
		if rc.Name == orders && (set["cleanup.policy"] == "compact" || set["retention.ms"] == "3600000") {
			t.Errorf("%s took another group's configs: %v", orders, set)
		}
	}
	for i := range 3 {
		e.waitTaskState(fmt.Sprintf("creator-%d", i), 0, state.StateRunning)
	}
}

// topicConfigsSet are the configs set on the topic itself.
func topicConfigsSet(rc kadm.ResourceConfig) map[string]string {
	out := map[string]string{}
	for _, c := range rc.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
			out[c.Key] = *c.Value
		}
	}
	return out
}

// On a broker that does not create topics itself, a source without topic
// creation keys still gets its topic, created with the broker's defaults
// (Connect's would wait forever for the broker to create it: a documented
// difference); with them, the topic gets its group's settings.
func TestSourceCreatesItsTopicWithOrWithoutTopicCreationKeys(t *testing.T) {
	e := newFakeEnv(t)
	// The broker does not auto-create: every metadata request loses its
	// allow_auto_topic_creation, as with auto.create.topics.enable=false.
	e.broker.ControlKey(int16(kmsg.Metadata), func(r kmsg.Request) (kmsg.Response, error, bool) {
		r.(*kmsg.MetadataRequest).AllowAutoTopicCreation = false
		return nil, nil, false
	})
	hooksFor("no-create").records = 5
	e.create("no-create", withConv(map[string]string{"name": "no-create", "connector.class": "test.TestSource", "topic": "absent"}))
	if got := e.readTopic("absent", 5); len(got) != 5 {
		t.Fatalf("read %d records of the topic the source made, want 5", len(got))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	hooksFor("creates").records = 5
	e.create("creates", withConv(map[string]string{"name": "creates", "connector.class": "test.TestSource", "topic": "made",
		"topic.creation.default.partitions": "4", "topic.creation.default.replication.factor": "-1"}))
	e.waitTaskState("creates", 0, state.StateRunning)
	if got := e.readTopic("made", 5); len(got) != 5 {
		t.Fatalf("read %d records, want 5", len(got))
	}
	// kadm answers from a metadata cache for a few seconds: the task's own
	// check before it created the topic may still be there.
	testutil.Eventually(t, 20*time.Second, "made has 4 partitions", func() error {
		details, err := e.adm.ListTopics(ctx, "made")
		if err != nil || len(details["made"].Partitions) != 4 {
			return fmt.Errorf("made: %+v, %v", details["made"], err)
		}
		return nil
	})
}

// With the worker's topic.creation.enable=false the connector's topic
// creation keys are ignored, as Connect ignores them: the broker's
// auto-creation makes the topic, with its defaults.
func TestWorkerTopicCreationDisabled(t *testing.T) {
	e := newEnvOn(t, storetest.StartFake(t, "t", ProducerOpts()...), false, func(o *Options) {
		o.Worker.TopicCreationDisabled = true
	})
	hooksFor("disabled").records = 5
	e.create("disabled", withConv(map[string]string{"name": "disabled", "connector.class": "test.TestSource", "topic": "auto",
		"topic.creation.default.partitions": "4", "topic.creation.default.replication.factor": "1"}))
	if got := e.readTopic("auto", 5); len(got) != 5 {
		t.Fatalf("read %d records, want 5", len(got))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testutil.Eventually(t, 20*time.Second, "auto made with the broker's defaults", func() error {
		details, err := e.adm.ListTopics(ctx, "auto")
		if n := len(details["auto"].Partitions); err != nil || n == 0 || n == 4 {
			return fmt.Errorf("auto: %d partitions (%v); want the broker's default, not 4", n, err)
		}
		return nil
	})
}

// A sink's dead letter queue goes through a producer of the connector's own
// when it has producer overrides, and its topic is created by an admin
// client with its admin overrides, closed once the topic exists.
func TestDeadLetterQueueClientsTakeOverrides(t *testing.T) {
	log := newClientLog()
	e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, withClientLog(log))
	in, dlq := e.topic("dlq-own-in"), e.topic("dlq-own")
	good := produceMixed(t, e, in)
	e.create("dlq-own", jsonSink("dlq-own", in, map[string]string{
		"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
		"producer.override.client.id": "dlq-own-producer", "producer.override.acks": "1",
		"admin.override.client.id": "dlq-own-admin"}))
	h := hooksFor("dlq-own")
	testutil.Eventually(t, 20*time.Second, "good records written", func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.written) < good {
			return fmt.Errorf("%d written", len(h.written))
		}
		return nil
	})
	if got := e.readTopic(dlq, 10); len(got) != 10 {
		t.Fatalf("dead letter queue has %d records, want 10", len(got))
	}
	if made, closed := log.counts("dlq-own-producer"); made != 1 || closed != 0 {
		t.Errorf("dead letter queue producer made %d, closed %d times; want one, open", made, closed)
	}
	if made, closed := log.counts("dlq-own-admin"); made != 1 || closed != 1 {
		t.Errorf("admin client made %d, closed %d times; want one, closed", made, closed)
	}
}
