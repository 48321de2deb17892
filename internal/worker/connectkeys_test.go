package worker

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
)

// resolve applies defaults and Connect's keys to a Config with props.
func resolve(t *testing.T, c Config) (Config, error) {
	t.Helper()
	err := c.defaults()
	return c, err
}

// A connect-distributed.properties file's keys set the worker's settings.
func TestConnectKeysSetTheWorkersSettings(t *testing.T) {
	c, err := resolve(t, Config{Props: map[string]string{
		"bootstrap.servers": "k1:9092, k2:9092", "group.id": "connect-cluster",
		"listeners": "HTTP://0.0.0.0:8090", "rest.advertised.host.name": "w1.example", "rest.advertised.port": "18090",
		"rest.advertised.listener": "http", "admin.listeners": "http://0.0.0.0:8090",
		"config.storage.topic": "connect-configs", "offset.storage.topic": "connect-offsets", "status.storage.topic": "connect-status",
		"offset.storage.partitions": "10", "status.storage.partitions": "3",
		"config.storage.replication.factor": "1", "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
		"offset.flush.interval.ms": "10000", "offset.flush.timeout.ms": "7000", "task.shutdown.graceful.timeout.ms": "9000",
		"session.timeout.ms": "30000", "heartbeat.interval.ms": "3000", "rebalance.timeout.ms": "120000",
		"client.id": "my-worker", "exactly.once.source.support": "DISABLED", "scheduled.rebalance.max.delay.ms": "0",
		"security.protocol": "PLAINTEXT", "client.dns.lookup": "use_all_dns_ips", "config.providers": "",
		"key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
		"topic.tracking.enable": "false",
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"Cluster", c.Cluster, "connect-cluster"},
		{"Bootstrap", strings.Join(c.Bootstrap, ","), "k1:9092,k2:9092"},
		{"RESTAddr", c.RESTAddr, "0.0.0.0:8090"},
		{"RESTAdvertisedHost", c.RESTAdvertisedHost, "w1.example"},
		{"RESTAdvertisedPort", c.RESTAdvertisedPort, 18090},
		{"ConfigTopic", c.ConfigTopic, "connect-configs"},
		{"OffsetsTopic", c.OffsetsTopic, "connect-offsets"},
		{"StatusTopic", c.StatusTopic, "connect-status"},
		{"OffsetsPartitions", c.OffsetsPartitions, int32(10)},
		{"StatusPartitions", c.StatusPartitions, int32(3)},
		{"ReplicationFactor", c.ReplicationFactor, int16(1)},
		{"OffsetFlushInterval", c.OffsetFlushInterval, 10 * time.Second},
		{"OffsetFlushTimeout", c.OffsetFlushTimeout, 7 * time.Second},
		{"ShutdownTimeout", c.ShutdownTimeout, 9 * time.Second},
		{"SessionTimeout", c.SessionTimeout, 30 * time.Second},
		{"HeartbeatInterval", c.HeartbeatInterval, 3 * time.Second},
		{"RebalanceTimeout", c.RebalanceTimeout, 2 * time.Minute},
		{"ClientID", c.ClientID, "my-worker"},
		{"advertised", c.restAdvertised("0.0.0.0:8090"), "w1.example:18090"},
	} {
		if f.got != f.want {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
}

// A typed field (a flag, or an embedding program's field) wins over the
// Connect key for the same setting.
func TestTypedFieldsWinOverConnectKeys(t *testing.T) {
	c, err := resolve(t, Config{
		Cluster: "flag-cluster", Bootstrap: []string{"flag:9092"}, RESTAddr: "127.0.0.1:0", ConfigTopic: "flag-configs",
		ReplicationFactor: -1, OffsetFlushInterval: time.Second, SessionTimeout: 6 * time.Second, RESTAdvertisedPort: 1,
		Props: map[string]string{
			"group.id": "file-cluster", "bootstrap.servers": "file:9092", "listeners": "http://:8083", "admin.listeners": "http://:8083",
			"config.storage.topic": "file-configs", "config.storage.replication.factor": "3",
			"offset.flush.interval.ms": "60000", "session.timeout.ms": "45000", "rest.advertised.port": "2",
		}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster != "flag-cluster" || c.Bootstrap[0] != "flag:9092" || c.RESTAddr != "127.0.0.1:0" || c.ConfigTopic != "flag-configs" ||
		c.ReplicationFactor != -1 || c.OffsetFlushInterval != time.Second || c.SessionTimeout != 6*time.Second || c.RESTAdvertisedPort != 1 {
		t.Fatalf("a Connect key won over a typed field: %+v", c)
	}
}

// Keys Sluice cannot honour are refused at start, all named in one error;
// the same keys with the values Sluice implements are taken.
func TestRefusedKeysAreAllNamedAtOnce(t *testing.T) {
	bad := map[string]string{
		"scheduled.rebalance.max.delay.ms": "300000",
		"security.protocol":                "KERBEROS",
		"producer.batch.size":              "65536", "consumer.partition.assignment.strategy": "x", "admin.retries": "3",
		"offset.storage.file.filename":       "/tmp/offsets",
		"status.storage.min.insync.replicas": "2",
		"client.dns.lookup":                  "resolve_canonical_bootstrap_servers_only",
	}
	_, err := resolve(t, Config{Cluster: "x", Bootstrap: []string{"b"}, Props: bad})
	if err == nil {
		t.Fatal("accepted")
	}
	for k, v := range bad {
		want := k
		if _, ok := fixedKeys[k]; ok {
			want = k + "=" + v
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s:\n%v", want, err)
		}
	}
	for _, why := range []string{"PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", "at once", "standalone"} {
		if !strings.Contains(err.Error(), why) {
			t.Errorf("the error does not say %q:\n%v", why, err)
		}
	}
}

// Bad values and keys that cannot agree are refused, also all at once.
func TestBadConnectValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  []string
	}{
		{map[string]string{"offset.storage.partitions": "many", "session.timeout.ms": "-1", "rest.advertised.port": "70000"},
			[]string{"offset.storage.partitions", "session.timeout.ms", "rest.advertised.port"}},
		{map[string]string{"config.storage.replication.factor": "3", "offset.storage.replication.factor": "1"}, []string{"replication.factor", "differ"}},
		{map[string]string{"status.storage.replication.factor": "0"}, []string{"status.storage.replication.factor"}},
		{map[string]string{"session.timeout.ms": "1000", "heartbeat.interval.ms": "3000"}, []string{"heartbeat.interval.ms"}},
		{map[string]string{"listeners": " , "}, []string{"listeners: the list is empty"}},
		{map[string]string{"listeners": "http://:8083,ftp://:21"}, []string{"listeners", `"ftp://:21": the protocol must be http or https`}},
		{map[string]string{"listeners": "https://:8443"}, []string{"https listeners (from the ssl.* keys)", "ssl.keystore.location"}},
		{map[string]string{"listeners": "https://:8443", "ssl.keystore.location": "/k", "listeners.https.ssl.keystore.type": "PEM"},
			[]string{"https listeners (from the listeners.https.ssl.* keys)", "ssl.keystore.location"}},
		{map[string]string{"admin.listeners": "https://:9093", "admin.listeners.https.ssl.client.auth": "always"},
			[]string{"https admin.listeners (from the admin.listeners.https.ssl.* keys)", "ssl.client.auth"}},
		{map[string]string{"admin.listeners": "http://h"}, []string{"admin.listeners", "not protocol://host:port"}},
		{map[string]string{"rest.advertised.listener": "https"}, []string{"rest.advertised.listener: https, but listeners has no https listener"}},
		{map[string]string{"rest.advertised.listener": "ftp"}, []string{"rest.advertised.listener", "give http or https"}},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent/ts.jks"}, []string{"ssl.truststore.location"}},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, []string{"sasl.mechanism", "GSSAPI"}},
		{map[string]string{"producer.security.protocol": "SASL_PLAINTEXT"}, []string{"producer", "sasl.jaas.config"}},
		{map[string]string{"consumer.max.poll.records": "0", "producer.acks": "2"}, []string{"consumer.max.poll.records", "producer.acks"}},
		{map[string]string{"consumer.sasl.kerberos.service.name": "kafka", "consumer.security.protocol": "SASL_PLAINTEXT",
			"consumer.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required username=u password=p;"},
			[]string{"consumer", "sasl.kerberos.service.name"}},
		{map[string]string{"topic.tracking.enable": "maybe"}, []string{"topic.tracking.enable"}},
		{map[string]string{"exactly.once.source.support": "sometimes"}, []string{"exactly.once.source.support", "disabled, preparing or enabled"}},
	} {
		_, err := resolve(t, Config{Cluster: "x", Bootstrap: []string{"b"}, Props: tc.props})
		if err == nil {
			t.Errorf("%v: accepted", tc.props)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %s", tc.props, err, w)
			}
		}
	}
}

func TestParseListeners(t *testing.T) {
	for in, want := range map[string]string{
		"http://:8083": "http://:8083", "http://0.0.0.0:8083": "http://0.0.0.0:8083", "HTTP://localhost:8083": "http://localhost:8083",
		"http://[::1]:8083": "http://[::1]:8083", " http://127.0.0.1:0 ": "http://127.0.0.1:0", "http://h:8083/": "http://h:8083",
		"http://:8083,HTTPS://h:8443": "http://:8083,https://h:8443", "": "", " , ": "",
	} {
		if got, err := parseListenerList("listeners", in); err != nil || listenerList(got) != want {
			t.Errorf("%q: %q, %v; want %q", in, listenerList(got), err, want)
		}
	}
	for _, in := range []string{"localhost:8083", "ftp://:21", "http://:8083,ftps://:8443", "http://h", "http://h:port", "http://h:70000"} {
		if got, err := parseListenerList("listeners", in); err == nil {
			t.Errorf("%q: accepted as %q", in, listenerList(got))
		}
	}
}

// rest.advertised.listener picks the advertised protocol as Connect does,
// and admin.listeners splits the /admin endpoints off, or turns them off.
func TestListenerResolution(t *testing.T) {
	for _, tc := range []struct {
		props            map[string]string
		restAddr         string
		advertised, main string
		adminSplit       bool
		admin            string
	}{
		{map[string]string{}, "", "http", "http://:8083", false, ""},
		{map[string]string{"listeners": "http://:1,http://:2"}, "", "http", "http://:1,http://:2", false, ""},
		{map[string]string{"listeners": "http://:1", "admin.listeners": ""}, "", "http", "http://:1", true, ""},
		{map[string]string{"listeners": "http://:1", "admin.listeners": "http://127.0.0.1:9"}, "", "http", "http://:1", true, "http://127.0.0.1:9"},
		{map[string]string{"listeners": "http://:1"}, "127.0.0.1:0", "http", "http://127.0.0.1:0", false, ""},
	} {
		c := Config{Cluster: "x", Bootstrap: []string{"b"}, Props: tc.props, RESTAddr: tc.restAddr}
		if err := c.defaults(); err != nil {
			t.Fatalf("%v: %v", tc.props, err)
		}
		r := c.listeners
		if r.advertised != tc.advertised || listenerList(r.main) != tc.main || r.adminSplit != tc.adminSplit || listenerList(r.admin) != tc.admin {
			t.Errorf("%v: advertised %s, main %s, split %v, admin %s", tc.props, r.advertised, listenerList(r.main), r.adminSplit, listenerList(r.admin))
		}
	}
}

// Every key of Kafka Connect's distributed worker config (WorkerConfig,
// DistributedConfig, RestServerConfig) is classified: honoured, ignored
// with a reason, or refused; none falls through as unknown.
func TestEveryConnectWorkerKeyIsClassified(t *testing.T) {
	keys := []string{
		"bootstrap.servers", "client.dns.lookup", "key.converter", "value.converter", "header.converter",
		"task.shutdown.graceful.timeout.ms", "offset.flush.interval.ms", "offset.flush.timeout.ms",
		"plugin.path", "plugin.discovery", "metrics.sample.window.ms", "metrics.num.samples", "metrics.recording.level",
		"metric.reporters", "auto.include.jmx.reporter", "config.providers", "connector.client.config.override.policy",
		"topic.creation.enable", "topic.tracking.enable", "topic.tracking.allow.reset",
		"listeners", "rest.advertised.host.name", "rest.advertised.port", "rest.advertised.listener",
		"access.control.allow.origin", "access.control.allow.methods", "response.http.headers.config", "ssl.client.auth",
		"rest.extension.classes", "admin.listeners",
		"group.id", "session.timeout.ms", "rebalance.timeout.ms", "heartbeat.interval.ms", "exactly.once.source.support",
		"metadata.max.age.ms", "client.id", "send.buffer.bytes", "receive.buffer.bytes", "reconnect.backoff.ms",
		"reconnect.backoff.max.ms", "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms",
		"retry.backoff.ms", "retry.backoff.max.ms", "request.timeout.ms", "connections.max.idle.ms", "security.protocol",
		"sasl.mechanism", "sasl.jaas.config", "ssl.truststore.location", "ssl.keystore.password",
		"worker.sync.timeout.ms", "worker.unsync.backoff.ms",
		"offset.storage.topic", "offset.storage.partitions", "offset.storage.replication.factor",
		"config.storage.topic", "config.storage.replication.factor",
		"status.storage.topic", "status.storage.partitions", "status.storage.replication.factor",
		"connect.protocol", "scheduled.rebalance.max.delay.ms", "inter.worker.key.ttl.ms",
		"inter.worker.key.generation.algorithm", "inter.worker.key.size", "inter.worker.signature.algorithm",
		"inter.worker.verification.algorithms", "metadata.recovery.strategy",
		// Removed in Connect 3.0, still in older files.
		"rest.host.name", "rest.port", "internal.key.converter", "internal.value.converter", "internal.value.converter.schemas.enable",
	}
	props := map[string]string{}
	for _, k := range keys {
		props[k] = "x"
	}
	r := classifyKeys(props)
	if len(r.unknown) > 0 {
		t.Fatalf("Connect worker keys left unclassified: %v", r.unknown)
	}
	// rest.port would change where the REST API listens in Connect 2.x;
	// Connect 3 ignores it, and so does Sluice, saying so.
	if !strings.Contains(r.ignored["rest.port"], "listeners") {
		t.Errorf("rest.port: %q", r.ignored["rest.port"])
	}
}

// Keys without effect here and unknown keys are logged once each, at
// start, and do not stop the worker.
func TestIgnoredAndUnknownKeysAreLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	w, err := Start(Config{
		Cluster: "wt", Bootstrap: []string{"127.0.0.1:1"}, RESTAddr: "127.0.0.1:0",
		Props: map[string]string{"plugin.path": "/usr/share/java", "worker.sync.timeout.ms": "3000", "no.such.key": "1",
			"value.converter": "StringConverter"},
		Log: zerolog.New(&buf),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	logs := buf.String()
	for key, want := range map[string]string{"plugin.path": "no effect", "worker.sync.timeout.ms": "no effect", "no.such.key": "unknown"} {
		if n := strings.Count(logs, `"key":"`+key+`"`); n != 1 {
			t.Errorf("%s logged %d times, want once:\n%s", key, n, logs)
		}
		if !strings.Contains(logs, want) {
			t.Errorf("no %q line in the logs:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, `"key":"value.converter"`) {
		t.Errorf("a key the worker takes is logged as ignored:\n%s", logs)
	}
}

// rest.advertised.* make the URL the worker gives out, and its id, as in
// Connect.
func TestAdvertisedRESTURL(t *testing.T) {
	w, err := Start(Config{
		Cluster: "wt", Bootstrap: []string{"127.0.0.1:1"}, RESTAddr: "127.0.0.1:0", Log: zerolog.Nop(),
		Props: map[string]string{"rest.advertised.host.name": "w1.example", "rest.advertised.port": "18083"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	}()
	if w.ID() != "w1.example:18083" || w.restURL != "http://w1.example:18083" || w.members.info().RestUrl != w.restURL {
		t.Fatalf("id %q, URL %q, worker info %q", w.ID(), w.restURL, w.members.info().RestUrl)
	}
	// Without them: the listener's address.
	c := Config{}
	if got := c.restAdvertised("0.0.0.0:8083"); got != "127.0.0.1:8083" {
		t.Fatalf("advertised %q", got)
	}
}

// The worker's producer.*, consumer.* and admin.* settings that a
// connector could override are honoured at worker level too, and reach
// the connectors' clients through connconfig.Worker.
func TestWorkerClientSettingsAreHonoured(t *testing.T) {
	c, err := resolve(t, Config{Cluster: "x", Bootstrap: []string{"b"}, Props: map[string]string{
		"producer.compression.type": "lz4", "producer.linger.ms": "5",
		"consumer.max.poll.records": "50", "consumer.auto.offset.reset": "none",
		"admin.request.timeout.ms": "20000",
	}})
	if err != nil {
		t.Fatalf("worker-level client settings refused: %v", err)
	}
	if r := classifyKeys(c.Props); len(r.refused) > 0 || len(r.unknown) > 0 {
		t.Fatalf("classified as refused %v or unknown %v", r.refused, r.unknown)
	}
	w, err := connconfig.ParseWorker(c.Props)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Clients.Producer.Opts) != 2 || w.Clients.Consumer.MaxPollRecords != 50 || !w.Clients.Consumer.NoReset ||
		w.Clients.Admin.RequestTimeout != 20000 {
		t.Fatalf("worker client settings: %+v", w.Clients)
	}
	// A connector's sink inherits what it does not override.
	rt, err := connconfig.ParseRuntime(w, connectors.Sink, map[string]string{"topics": "in", "consumer.override.max.poll.records": "7"})
	if err != nil {
		t.Fatal(err)
	}
	if rt.Overrides.Consumer.MaxPollRecords != 7 || !rt.Overrides.Consumer.NoReset {
		t.Fatalf("the sink's consumer: max.poll.records %d (want the override's 7), no reset %v (want the worker's)",
			rt.Overrides.Consumer.MaxPollRecords, rt.Overrides.Consumer.NoReset)
	}
}
