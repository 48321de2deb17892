package connconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
)

// optValues builds a client with opts (it dials nothing until asked) and
// reads back the options named in want.
func optValues(t *testing.T, opts []kgo.Opt, want map[string]any) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, opts...)...)
	if err != nil {
		t.Fatalf("franz-go refuses the options: %v", err)
	}
	defer cl.Close()
	for name, v := range want {
		if got := cl.OptValue(name); !reflect.DeepEqual(got, v) {
			t.Errorf("%s = %#v, want %#v", name, got, v)
		}
	}
}

func mustParse(t *testing.T, w Worker, typ connectors.Type, config map[string]string) Runtime {
	t.Helper()
	if typ == connectors.Sink && config[Topics] == "" {
		config[Topics] = "in"
	}
	r, err := ParseRuntime(w, typ, config)
	if err != nil {
		t.Fatalf("%v: %v", config, err)
	}
	return r
}

// Each honoured override key lands on the franz-go option that honours it.
func TestProducerOverridesMapOntoFranzGo(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys map[string]string
		want map[string]any // kgo option name -> value
	}{
		{"acks all", map[string]string{"acks": "all"}, map[string]any{"RequiredAcks": kgo.AllISRAcks(), "DisableIdempotentWrite": false}},
		{"acks -1", map[string]string{"acks": "-1"}, map[string]any{"RequiredAcks": kgo.AllISRAcks(), "DisableIdempotentWrite": false}},
		// As Java when enable.idempotence is not set: acks 0 or 1 turn
		// idempotence off, and then one request is in flight (Connect's).
		{"acks 1", map[string]string{"acks": "1"}, map[string]any{"RequiredAcks": kgo.LeaderAck(), "DisableIdempotentWrite": true,
			"MaxProduceRequestsInflightPerBroker": 1}},
		{"acks 0", map[string]string{"acks": "0"}, map[string]any{"RequiredAcks": kgo.NoAck(), "DisableIdempotentWrite": true}},
		{"gzip", map[string]string{"compression.type": "gzip"}, map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.GzipCompression()}}},
		{"none", map[string]string{"compression.type": "none"}, map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.NoCompression()}}},
		{"zstd", map[string]string{"compression.type": "zstd"}, map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.ZstdCompression()}}},
		{"linger", map[string]string{"linger.ms": "25"}, map[string]any{"ProducerLinger": 25 * time.Millisecond}},
		{"max request", map[string]string{"max.request.size": "2097152"}, map[string]any{"ProducerBatchMaxBytes": int32(2 << 20),
			"BrokerMaxWriteBytes": int32(100 << 20)}},
		{"huge max request", map[string]string{"max.request.size": "209715200"}, map[string]any{"ProducerBatchMaxBytes": int32(200 << 20),
			"BrokerMaxWriteBytes": int32(200 << 20)}},
		{"idempotence off", map[string]string{"enable.idempotence": "false", "max.in.flight.requests.per.connection": "3"},
			map[string]any{"DisableIdempotentWrite": true, "MaxProduceRequestsInflightPerBroker": 3, "RequiredAcks": kgo.AllISRAcks()}},
		{"idempotent with 5", map[string]string{"enable.idempotence": "TRUE", "max.in.flight.requests.per.connection": "5"},
			map[string]any{"DisableIdempotentWrite": false}},
		{"request timeout", map[string]string{"request.timeout.ms": "15000"}, map[string]any{"ProduceRequestTimeout": 15 * time.Second,
			"RequestTimeoutOverhead": 15 * time.Second}},
		{"delivery timeout", map[string]string{"delivery.timeout.ms": "60000", "linger.ms": "5"},
			map[string]any{"RecordDeliveryTimeout": time.Minute}},
		{"client id", map[string]string{"client.id": "orders-producer"}, map[string]any{"ClientID": "orders-producer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := map[string]string{}
			for k, v := range tc.keys {
				config[ProducerOverridePrefix+k] = v
			}
			r := mustParse(t, Worker{}, connectors.Source, config)
			if !reflect.DeepEqual(r.Overrides.Producer.Keys, tc.keys) {
				t.Errorf("keys %v, want %v", r.Overrides.Producer.Keys, tc.keys)
			}
			optValues(t, r.Overrides.Producer.Opts, tc.want)
		})
	}
}

func TestConsumerOverridesMapOntoFranzGo(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys map[string]string
		want map[string]any
		poll int
		none bool
	}{
		{"max poll records", map[string]string{"max.poll.records": "1"}, nil, 1, false},
		{"fetch sizes", map[string]string{"fetch.min.bytes": "1024", "fetch.max.bytes": "1048576", "max.partition.fetch.bytes": "65536"},
			map[string]any{"FetchMinBytes": int32(1024), "FetchMaxBytes": int32(1 << 20), "FetchMaxPartitionBytes": int32(64 << 10)}, 0, false},
		{"huge fetch", map[string]string{"fetch.max.bytes": "209715200"},
			map[string]any{"FetchMaxBytes": int32(200 << 20), "BrokerMaxReadBytes": int32(200 << 20)}, 0, false},
		{"fetch wait", map[string]string{"fetch.max.wait.ms": "100"}, map[string]any{"FetchMaxWait": 100 * time.Millisecond}, 0, false},
		{"read committed", map[string]string{"isolation.level": "read_committed"}, map[string]any{"FetchIsolationLevel": int8(1)}, 0, false},
		{"read uncommitted", map[string]string{"isolation.level": "read_uncommitted"}, map[string]any{"FetchIsolationLevel": int8(0)}, 0, false},
		{"earliest", map[string]string{"auto.offset.reset": "earliest"}, map[string]any{"ConsumeResetOffset": kgo.NewOffset().AtStart()}, 0, false},
		{"latest", map[string]string{"auto.offset.reset": "latest"}, map[string]any{"ConsumeResetOffset": kgo.NewOffset().AtEnd()}, 0, false},
		{"none", map[string]string{"auto.offset.reset": "none"}, map[string]any{"ConsumeResetOffset": kgo.NewOffset().AtCommitted()}, 0, true},
		{"session", map[string]string{"session.timeout.ms": "30000", "heartbeat.interval.ms": "3000"},
			map[string]any{"SessionTimeout": 30 * time.Second, "HeartbeatInterval": 3 * time.Second}, 0, false},
		{"session alone", map[string]string{"session.timeout.ms": "45000"},
			map[string]any{"SessionTimeout": 45 * time.Second, "HeartbeatInterval": SinkHeartbeatInterval}, 0, false},
		{"request timeout", map[string]string{"request.timeout.ms": "40000"}, map[string]any{"RequestTimeoutOverhead": 40 * time.Second}, 0, false},
		{"client id", map[string]string{"client.id": "orders-sink"}, map[string]any{"ClientID": "orders-sink"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := map[string]string{}
			for k, v := range tc.keys {
				config[ConsumerOverridePrefix+k] = v
			}
			c := mustParse(t, Worker{}, connectors.Sink, config).Overrides.Consumer
			if c.MaxPollRecords != tc.poll || c.NoReset != tc.none {
				t.Errorf("max poll records %d, no reset %v; want %d, %v", c.MaxPollRecords, c.NoReset, tc.poll, tc.none)
			}
			optValues(t, append([]kgo.Opt{kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in")}, c.Opts...), tc.want)
		})
	}
}

func TestAdminOverridesMapOntoFranzGo(t *testing.T) {
	// A source's admin client creates its topics: it has one only with
	// topic creation, a sink only with a dead letter queue.
	src := map[string]string{TopicCreationDefaultPartitions: "1", TopicCreationDefaultReplicationFactor: "1",
		AdminOverridePrefix + "client.id": "adm", AdminOverridePrefix + "request.timeout.ms": "5000"}
	a := mustParse(t, Worker{}, connectors.Source, src).Overrides.Admin
	if a.RequestTimeout != 5000 {
		t.Errorf("request timeout %d, want 5000", a.RequestTimeout)
	}
	optValues(t, a.Opts, map[string]any{"ClientID": "adm", "RequestTimeoutOverhead": 5 * time.Second})
	sink := mustParse(t, Worker{}, connectors.Sink, map[string]string{DLQTopicName: "dlq", AdminOverridePrefix + "client.id": "dlq-adm"})
	optValues(t, sink.Overrides.Admin.Opts, map[string]any{"ClientID": "dlq-adm"})
}

// Overrides of a client the connector does not have are ignored, as
// Connect ignores them: a source has no consumer; a sink has a producer and
// an admin client only with a dead letter queue; a source without topic
// creation has no admin client.
func TestOverridesOfClientsAConnectorLacksAreIgnored(t *testing.T) {
	for _, tc := range []struct {
		typ connectors.Type
		key string
	}{
		{connectors.Source, ConsumerOverridePrefix + "max.poll.records"},
		{connectors.Sink, ProducerOverridePrefix + "acks"},
		{connectors.Sink, AdminOverridePrefix + "client.id"},
		{connectors.Source, AdminOverridePrefix + "client.id"},
	} {
		// Even under policy None, and with a value no client takes.
		config := map[string]string{tc.key: "bogus"}
		r := mustParse(t, Worker{OverridePolicy: PolicyNone}, tc.typ, config)
		if !reflect.DeepEqual(r.Overrides, Overrides{}) {
			t.Errorf("%s %s: overrides %+v, want none", tc.typ, tc.key, r.Overrides)
		}
		if ce := Validate(Worker{OverridePolicy: PolicyNone}, tc.typ, config); ce != nil {
			t.Errorf("%s %s: %v", tc.typ, tc.key, ce)
		}
	}
}

// Every key Sluice cannot honour, and every bad value, is refused naming
// the key: by ParseRuntime (the worker) and Validate (the control plane)
// alike.
func TestOverridesRefusedNamingTheKey(t *testing.T) {
	for _, tc := range []struct {
		typ        connectors.Type
		key, value string
		want       string
	}{
		{connectors.Source, "producer.override.acks", "2", "String must be one of: all, -1, 0, 1"},
		{connectors.Source, "producer.override.acks", "ALL", "String must be one of"},
		{connectors.Source, "producer.override.compression.type", "brotli", "none, gzip, snappy, lz4, zstd"},
		{connectors.Source, "producer.override.linger.ms", "-1", "at least 0"},
		{connectors.Source, "producer.override.linger.ms", "120000", "between 0 and 60000 ms"},
		{connectors.Source, "producer.override.linger.ms", "5s", "not a 32-bit integer"},
		{connectors.Source, "producer.override.max.request.size", "100", "between 512 and"},
		{connectors.Source, "producer.override.request.timeout.ms", "50", "between 100 and 900000 ms"},
		{connectors.Source, "producer.override.delivery.timeout.ms", "500", "at least 1000 ms"},
		{connectors.Source, "producer.override.delivery.timeout.ms", "20000", "should be equal to or larger than linger.ms + request.timeout.ms"},
		{connectors.Source, "producer.override.enable.idempotence", "yes", "expected true or false"},
		{connectors.Source, "producer.override.max.in.flight.requests.per.connection", "0", "at least 1"},
		{connectors.Source, "producer.override.max.in.flight.requests.per.connection", "1", "cannot bound them to 1"},
		{connectors.Source, "producer.override.max.in.flight.requests.per.connection", "6", "at most 5"},
		{connectors.Source, "producer.override.client.id", strings.Repeat("x", 300), "at most 256 bytes"},
		{connectors.Source, "producer.override.batch.size", "65536", "max.request.size"},
		{connectors.Source, "producer.override.buffer.memory", "0", "at least 1"},
		{connectors.Source, "producer.override.buffer.memory", "32MB", "not a 64-bit integer"},
		{connectors.Source, "producer.override.bootstrap.servers", "other:9092", "worker's Kafka cluster"},
		{connectors.Source, "producer.override.transactional.id", "t", "exactly-once"},
		{connectors.Source, "producer.override.security.protocol", "TLS", "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"},
		{connectors.Sink, "consumer.override.max.poll.records", "0", "at least 1"},
		{connectors.Sink, "consumer.override.fetch.max.bytes", "0", "between 1 and"},
		{connectors.Sink, "consumer.override.fetch.max.wait.ms", "5", "at least 10 ms"},
		{connectors.Sink, "consumer.override.isolation.level", "READ_COMMITTED", "read_committed, read_uncommitted"},
		{connectors.Sink, "consumer.override.auto.offset.reset", "smallest", "latest, earliest, none"},
		{connectors.Sink, "consumer.override.session.timeout.ms", "50", "at least 100 ms"},
		{connectors.Sink, "consumer.override.session.timeout.ms", "800", "Heartbeat must be set lower than the session timeout"},
		{connectors.Sink, "consumer.override.heartbeat.interval.ms", "10000", "Heartbeat must be set lower than the session timeout"},
		{connectors.Sink, "consumer.override.group.id", "mine", "connect-<connector name>"},
		{connectors.Sink, "consumer.override.enable.auto.commit", "true", "invariant 1"},
		{connectors.Sink, "consumer.override.security.protocol", "SASL_SSL", "sasl.jaas.config: required"},
		{connectors.Sink, "consumer.override.partition.assignment.strategy", "x", "consumer Sluice makes"},
		{connectors.Sink, "admin.override.retries", "3", "admin client Sluice makes"},
		{connectors.Sink, "admin.override.request.timeout.ms", "20", "between 100 and"},
	} {
		config := map[string]string{tc.key: tc.value}
		if tc.typ == connectors.Sink {
			config[Topics], config[DLQTopicName] = "in", "dlq"
		}
		_, err := ParseRuntime(Worker{}, tc.typ, config)
		var ce *connectors.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s=%q: error %v, want a *connectors.ConfigError", tc.key, tc.value, err)
			continue
		}
		// The key is named where the error is filed (the REST message is
		// "<key>: <error>"); Java's own wordings name the unprefixed key.
		msg := strings.Join(ce.Errors[tc.key], "|")
		if len(ce.Errors) != 1 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s=%q: errors %v, want one on the key, saying %q", tc.key, tc.value, ce.Errors, tc.want)
		}
		if v := Validate(Worker{}, tc.typ, config); v == nil || !reflect.DeepEqual(v.Errors, ce.Errors) {
			t.Errorf("%s=%q: Validate %v, want what ParseRuntime says", tc.key, tc.value, v)
		}
	}
}

// buffer.memory is the runtime's, not a client option: alone it needs no
// producer of the connector's own, and it does not tell two producers
// apart. The worker's producer.buffer.memory is read the same way.
func TestBufferMemory(t *testing.T) {
	r := mustParse(t, Worker{}, connectors.Source, map[string]string{"producer.override.buffer.memory": "1048576"})
	if p := r.Overrides.Producer; p.BufferMemory != 1<<20 || p.Set() {
		t.Fatalf("buffer.memory alone: BufferMemory %d, Set %v; want 1048576, false", p.BufferMemory, p.Set())
	}
	both := mustParse(t, Worker{}, connectors.Source, map[string]string{"producer.override.buffer.memory": "1048576",
		"producer.override.linger.ms": "5"}).Overrides.Producer
	linger := mustParse(t, Worker{}, connectors.Source, map[string]string{"producer.override.linger.ms": "5"}).Overrides.Producer
	if !both.Set() || both.Canonical() != linger.Canonical() {
		t.Fatalf("with linger.ms: Set %v, Canonical %q; want true and linger's alone %q", both.Set(), both.Canonical(), linger.Canonical())
	}
	if r := mustParse(t, Worker{}, connectors.Source, map[string]string{}); r.Overrides.Producer.BufferMemory != 0 {
		t.Fatalf("unset: BufferMemory %d, want 0 (the runtime's default)", r.Overrides.Producer.BufferMemory)
	}
	w, err := ParseWorker(map[string]string{"producer.buffer.memory": "67108864"})
	if err != nil || w.Clients.Producer.BufferMemory != 64<<20 {
		t.Fatalf("worker producer.buffer.memory: %d, %v; want 67108864", w.Clients.Producer.BufferMemory, err)
	}
	if _, err := ParseWorker(map[string]string{"producer.buffer.memory": "-1"}); err == nil || !strings.Contains(err.Error(), "buffer.memory") {
		t.Fatalf("worker producer.buffer.memory=-1: %v, want an error naming it", err)
	}
}

// Keys checked together, as Java's producer checks them.
func TestProducerIdempotenceRules(t *testing.T) {
	for _, tc := range []struct {
		keys    map[string]string
		badKey  string
		wantMsg string
	}{
		{map[string]string{"enable.idempotence": "true", "acks": "1"}, "acks",
			"Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence."},
		{map[string]string{"enable.idempotence": "true", "max.in.flight.requests.per.connection": "10"}, "max.in.flight.requests.per.connection",
			"Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent producer"},
		// Without enable.idempotence, acks=1 turns it off, and then any
		// bound is honoured.
		{map[string]string{"acks": "1", "max.in.flight.requests.per.connection": "10"}, "", ""},
		{map[string]string{"enable.idempotence": "false", "max.in.flight.requests.per.connection": "1"}, "", ""},
		{map[string]string{"delivery.timeout.ms": "35000", "linger.ms": "10000"}, "delivery.timeout.ms", "linger.ms + request.timeout.ms"},
		{map[string]string{"delivery.timeout.ms": "3000", "request.timeout.ms": "2000"}, "", ""},
	} {
		config := map[string]string{}
		for k, v := range tc.keys {
			config[ProducerOverridePrefix+k] = v
		}
		ce := Validate(Worker{}, connectors.Source, config)
		if tc.badKey == "" {
			if ce != nil {
				t.Errorf("%v: %v", tc.keys, ce)
			}
			continue
		}
		if ce == nil || len(ce.Errors) != 1 || !strings.Contains(strings.Join(ce.Errors[ProducerOverridePrefix+tc.badKey], "|"), tc.wantMsg) {
			t.Errorf("%v: %v, want %q on %s", tc.keys, ce, tc.wantMsg, tc.badKey)
		}
	}
}

// Each policy, with Connect's message for a key it does not allow.
func TestOverridePolicies(t *testing.T) {
	config := map[string]string{
		ProducerOverridePrefix + "acks":              "1",
		ProducerOverridePrefix + "sasl.mechanism":    "GSSAPI",
		ProducerOverridePrefix + "security.protocol": "SASL_PLAINTEXT",
		ConsumerOverridePrefix + "client.id":         "c",
		Topics:                                       "in", DLQTopicName: "dlq",
	}
	for _, tc := range []struct {
		policy OverridePolicy
		want   map[string]string // key -> part of its error; absent: no error
	}{
		{"", map[string]string{ProducerOverridePrefix + "sasl.mechanism": "GSSAPI (Kerberos) is not supported"}},
		{PolicyAll, map[string]string{ProducerOverridePrefix + "sasl.mechanism": "GSSAPI (Kerberos) is not supported"}},
		{PolicyNone, map[string]string{
			ProducerOverridePrefix + "acks":              "The 'None' policy does not allow 'acks' to be overridden in the connector configuration.",
			ProducerOverridePrefix + "sasl.mechanism":    "The 'None' policy does not allow 'sasl.mechanism' to be overridden",
			ProducerOverridePrefix + "security.protocol": "The 'None' policy does not allow 'security.protocol' to be overridden",
			ConsumerOverridePrefix + "client.id":         "The 'None' policy does not allow 'client.id' to be overridden",
		}},
		// Principal allows the SASL keys; GSSAPI is refused for itself.
		{PolicyPrincipal, map[string]string{
			ProducerOverridePrefix + "acks":           "The 'Principal' policy does not allow 'acks' to be overridden in the connector configuration.",
			ProducerOverridePrefix + "sasl.mechanism": "GSSAPI (Kerberos) is not supported",
			ConsumerOverridePrefix + "client.id":      "The 'Principal' policy does not allow 'client.id'",
		}},
	} {
		ce := Validate(Worker{OverridePolicy: tc.policy}, connectors.Sink, config)
		var got map[string][]string
		if ce != nil {
			got = ce.Errors
		}
		if len(got) != len(tc.want) {
			t.Errorf("policy %q: errors %v, want on %v", tc.policy, got, tc.want)
		}
		for k, sub := range tc.want {
			if !strings.Contains(strings.Join(got[k], "|"), sub) {
				t.Errorf("policy %q: %s: %v, want %q", tc.policy, k, got[k], sub)
			}
		}
	}
}

func TestParseWorker(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  Worker
		bad   string
	}{
		{nil, Worker{}, ""},
		{map[string]string{WorkerOverridePolicy: "None"}, Worker{OverridePolicy: PolicyNone}, ""},
		{map[string]string{WorkerOverridePolicy: "PrincipalConnectorClientConfigOverridePolicy"}, Worker{OverridePolicy: PolicyPrincipal}, ""},
		{map[string]string{WorkerOverridePolicy: "org.apache.kafka.connect.connector.policy.AllConnectorClientConfigOverridePolicy"},
			Worker{OverridePolicy: PolicyAll}, ""},
		{map[string]string{WorkerTopicCreationEnable: "FALSE"}, Worker{TopicCreationDisabled: true}, ""},
		{map[string]string{WorkerTopicCreationEnable: "true"}, Worker{}, ""},
		{map[string]string{WorkerOverridePolicy: "com.example.MyPolicy"}, Worker{}, WorkerOverridePolicy},
		{map[string]string{WorkerOverridePolicy: "all"}, Worker{}, WorkerOverridePolicy},
		{map[string]string{WorkerTopicCreationEnable: "yes"}, Worker{}, WorkerTopicCreationEnable},
	} {
		w, err := ParseWorker(tc.props)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%v: error %v, want one naming %s", tc.props, err, tc.bad)
			}
			continue
		}
		if err != nil || w.OverridePolicy != tc.want.OverridePolicy || w.TopicCreationDisabled != tc.want.TopicCreationDisabled {
			t.Errorf("%v: %+v, %v; want %+v", tc.props, w, err, tc.want)
		}
	}
}

// A connector's security overrides apply over the worker's security for
// that kind of client, and replace the worker's options for it.
func TestSecurityOverrides(t *testing.T) {
	w, err := ParseWorker(map[string]string{
		WorkerOverridePolicy: "Principal",
		"security.protocol":  "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
		"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="worker" password="w";`,
	})
	if err != nil {
		t.Fatal(err)
	}
	config := map[string]string{
		ProducerOverridePrefix + "sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="conn" password="Conn-Secret-3";`,
	}
	o, err := ParseRuntime(w, connectors.Source, config)
	if err != nil {
		t.Fatalf("a Principal-allowed jaas override was refused: %v", err)
	}
	if o.Overrides.Producer.Security == nil || !o.Overrides.Producer.Set() {
		t.Fatal("the producer's jaas override gave no security options of its own")
	}
	// Over the worker's SCRAM-SHA-512, a PLAIN login module still serves (as in Java).
	config[ProducerOverridePrefix+"sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required password="Conn-Secret-3";`
	_, err = ParseRuntime(w, connectors.Source, config)
	var ce *connectors.ConfigError
	if !errors.As(err, &ce) || len(ce.Errors[ProducerOverridePrefix+"sasl.jaas.config"]) == 0 {
		t.Fatalf("a jaas override without username gave %v, want an error on producer.override.sasl.jaas.config", err)
	}
	if strings.Contains(err.Error(), "Conn-Secret-3") {
		t.Errorf("the error shows the password: %v", err)
	}
	// Principal does not let a connector change the TLS settings.
	_, err = ParseRuntime(w, connectors.Source, map[string]string{ProducerOverridePrefix + "ssl.truststore.location": "/x"})
	if !errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Errors[ProducerOverridePrefix+"ssl.truststore.location"], ""), "Principal") {
		t.Errorf("an ssl override under Principal gave %v", err)
	}
}
