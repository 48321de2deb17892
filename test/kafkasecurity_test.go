package test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/proctest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// The tests of this file run `sluice worker` processes that reach a broker
// requiring SASL (and TLS) through Kafka Connect's worker keys alone, in a
// connect-distributed.properties file: on Apache Kafka's SASL_SSL and
// SASL_PLAINTEXT listeners when test/kafka/kafka.sh's secure.env is in the
// environment (CI), otherwise on embedded kfake brokers that require the
// same (kafkatest.NewSecure). They never skip.

// secureCluster is a cluster of workers that all reach the secure broker
// as client says.
type secureCluster struct {
	*cluster
	secure *kafkatest.Secure
	client kafkatest.Client
	// props are the worker keys every worker of the cluster shares.
	props map[string]string
}

// newSecureCluster is a cluster on s whose workers' clients authenticate
// as client says.
func newSecureCluster(t *testing.T, s *kafkatest.Secure, name string, client kafkatest.Client) *secureCluster {
	t.Helper()
	name = kafkatest.Unique(name)
	props := s.WorkerProps(t, client)
	for k, v := range map[string]string{
		"group.id":                          name,
		"config.storage.topic":              name + "-configs",
		"offset.storage.topic":              name + "-offsets",
		"status.storage.topic":              name + "-status",
		"config.storage.replication.factor": "1",
		"offset.storage.replication.factor": "1",
		"status.storage.replication.factor": "1",
		"offset.flush.interval.ms":          "200",
		"session.timeout.ms":                "6000",
	} {
		props[k] = v
	}
	c := &cluster{t: t, name: name, bootstrap: s.Bootstrap(t, client.Protocol), external: true, workers: map[string]*workerProc{}}
	return &secureCluster{cluster: c, secure: s, client: client, props: props}
}

// start starts a worker with the cluster's keys and extra ones, configured
// by a properties file (--bind and --join, the gossip addresses, have no
// Connect key). Its worker id is Connect's, its REST address. It does not
// wait for the worker to be healthy.
func (c *secureCluster) start(extra map[string]string, join ...string) *workerProc {
	c.t.Helper()
	rest, bind := proctest.FreeAddr(c.t), proctest.FreeAddr(c.t)
	props := map[string]string{"listeners": "http://" + rest}
	for k, v := range c.props {
		props[k] = v
	}
	for k, v := range extra {
		props[k] = v
	}
	file := filepath.Join(c.t.TempDir(), "connect-distributed.properties")
	writeProperties(c.t, file, props)
	args := []string{"worker", "--config", file, "--bind", bind}
	if len(join) > 0 {
		args = append(args, "--join", strings.Join(join, ","))
	}
	w := &workerProc{id: rest, rest: rest, bind: bind}
	w.Proc = startProc(c.t, "secure-worker", nil, args...)
	c.workers[w.id] = w
	return w
}

// add starts a worker and waits until it is healthy: it has reached the
// broker, authenticated, and joined the group.
func (c *secureCluster) add(join ...string) *workerProc {
	c.t.Helper()
	w := c.start(nil, join...)
	waitHealthy(c.t, w.Proc, w.rest)
	return w
}

// clientOpts reach the secure broker as the cluster's workers do, for the
// test's own reads.
func (c *secureCluster) clientOpts() []kgo.Opt { return c.secure.ClientOpts(c.t, c.client) }

// writeProperties writes props as a Java properties file, keys sorted.
func writeProperties(t *testing.T, path string, props map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Written by test/kafkasecurity_test.go\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fileRoundTrip copies a file through topic with the FileStream connectors
// on the worker w and requires the output to be the input, byte for byte.
func fileRoundTrip(t *testing.T, c *secureCluster, w *workerProc, lines int) {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	want := writeLines(t, in, lines)
	topic := c.topic("lines")
	createOn(t, w.rest, "file-source", fileSource(in, topic))
	createOn(t, w.rest, "file-sink", fileSink(out, topic))
	waitFor(t, w.FailIfExited, stateDeadline, 100*time.Millisecond, "output as long as the input", func() (bool, string) {
		n := len(readFile(t, out))
		return n >= len(want), fmt.Sprintf("%d of %d bytes", n, len(want))
	})
	requireSameBytes(t, readFile(t, out), want)
}

// TestKafkaSecurityFileRoundTripOverSASLSSL copies a file through Kafka
// over SASL_SSL with SCRAM-SHA-512, the broker's CA given in each
// truststore format Connect takes: JKS, PKCS12 and PEM. The test reads the
// topic back as the worker's user, which proves the records went through
// the secure listener.
func TestKafkaSecurityFileRoundTripOverSASLSSL(t *testing.T) {
	for _, truststore := range []string{kafkatest.TruststoreJKS, kafkatest.TruststorePEM, kafkatest.TruststorePKCS12} {
		t.Run("truststore "+truststore, func(t *testing.T) {
			s := kafkatest.NewSecure(t)
			c := newSecureCluster(t, s, "sasl-ssl-"+strings.ToLower(truststore), kafkatest.Client{
				Protocol: kafkatest.SASLSSL, User: s.User(t, kafkatest.ScramSHA512, 0), Truststore: truststore,
			})
			w := c.add()
			fileRoundTrip(t, c, w, 2000)
			requireTopicRecords(t, c.clientOpts(), c.topic("lines"), 2000)
		})
	}
}

// TestKafkaSecuritySASLPlaintextWithPlain copies a file through Kafka over
// SASL_PLAINTEXT with the PLAIN mechanism.
func TestKafkaSecuritySASLPlaintextWithPlain(t *testing.T) {
	s := kafkatest.NewSecure(t)
	c := newSecureCluster(t, s, "sasl-plain", kafkatest.Client{Protocol: kafkatest.SASLPlaintext, User: s.User(t, kafkatest.Plain, 0)})
	w := c.add()
	fileRoundTrip(t, c, w, 500)
	requireTopicRecords(t, c.clientOpts(), c.topic("lines"), 500)
}

// requireTopicRecords reads topic to its end and requires n records.
func requireTopicRecords(t *testing.T, opts []kgo.Opt, topic string, n int) {
	t.Helper()
	got := 0
	readTopic(t, opts, topic, func(*kgo.Record) { got++ })
	if got != n {
		t.Fatalf("%s holds %d records, want %d", topic, got, n)
	}
}

// readTopic calls each for every record of topic, up to the end offsets
// it has when called.
func readTopic(t *testing.T, opts []kgo.Opt, topic string, each func(*kgo.Record)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stateDeadline)
	defer cancel()
	ends, err := kafkatest.NewAdmin(t, opts).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	end := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s[%d]: %v", topic, o.Partition, o.Err)
		}
		end[o.Partition] = o.Offset
	})
	if len(end) == 0 {
		t.Fatalf("topic %s has no partitions", topic)
	}
	if _, err := kafkatest.ConsumeTo(ctx, kafkatest.NewConsumer(t, opts, []string{topic}), end, each, nil); err != nil {
		t.Fatalf("reading %s to offsets %v: %v", topic, end, err)
	}
}

// TestKafkaSecuritySinkDeadLetterQueueOverSASLSSL: a sink whose transform
// fails on a record, with errors.tolerance=all and a dead letter queue,
// over SASL_SSL: the good records are written, the bad one lands in the
// dead letter queue (which the worker creates and produces to as its
// user), as consumed.
func TestKafkaSecuritySinkDeadLetterQueueOverSASLSSL(t *testing.T) {
	s := kafkatest.NewSecure(t)
	c := newSecureCluster(t, s, "sasl-dlq", kafkatest.Client{
		Protocol: kafkatest.SASLSSL, User: s.User(t, kafkatest.ScramSHA512, 0), Truststore: kafkatest.TruststoreJKS,
	})
	w := c.add()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	if err := os.WriteFile(in, []byte("1\n2\nx\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topic, dlq := c.topic("nums"), c.topic("nums-dlq")
	createOn(t, w.rest, "nums-source", fileSource(in, topic))
	sink := fileSink(out, topic)
	for k, v := range map[string]string{
		"transforms":                                      "cast",
		"transforms.cast.type":                            "org.apache.kafka.connect.transforms.Cast$Value",
		"transforms.cast.spec":                            "int32",
		"errors.tolerance":                                "all",
		"errors.deadletterqueue.topic.name":               dlq,
		"errors.deadletterqueue.topic.replication.factor": "1",
		"errors.deadletterqueue.context.headers.enable":   "true",
	} {
		sink[k] = v
	}
	createOn(t, w.rest, "nums-sink", sink)
	waitFor(t, w.FailIfExited, stateDeadline, 100*time.Millisecond, "the three numbers written", func() (bool, string) {
		got := string(readFile(t, out))
		return got == "1\n2\n4\n", got
	})
	var dead []*kgo.Record
	waitFor(t, w.FailIfExited, stateDeadline, 250*time.Millisecond, "a record in the dead letter queue", func() (bool, string) {
		dead = nil
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err := kafkatest.NewAdmin(t, c.clientOpts()).ListEndOffsets(ctx, dlq)
		if err != nil {
			return false, err.Error()
		}
		if o, ok := ends.Lookup(dlq, 0); !ok || o.Err != nil || o.Offset < 1 {
			return false, fmt.Sprintf("%s end offset %+v", dlq, o)
		}
		readTopic(t, c.clientOpts(), dlq, func(r *kgo.Record) { dead = append(dead, r) })
		return true, ""
	})
	if len(dead) != 1 {
		t.Fatalf("dead letter queue holds %d records, want 1", len(dead))
	}
	headers := map[string]string{}
	for _, h := range dead[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	if string(dead[0].Value) != "x" || headers["__connect.errors.stage"] != "TRANSFORMATION" || headers["__connect.errors.topic"] != topic {
		t.Fatalf("dead letter record %q with headers %v; want \"x\" from %s's TRANSFORMATION stage", dead[0].Value, headers, topic)
	}
}

// TestKafkaSecurityFailoverOverSASLSSL: three `sluice worker` processes
// over SASL_SSL with SCRAM-SHA-512; the worker running Datagen's task 0 is
// killed with SIGKILL; the task runs again on a survivor, and no sequence
// number of any task is missing from the topic.
func TestKafkaSecurityFailoverOverSASLSSL(t *testing.T) {
	s := kafkatest.NewSecure(t)
	c := newSecureCluster(t, s, "sasl-failover", kafkatest.Client{
		Protocol: kafkatest.SASLSSL, User: s.User(t, kafkatest.ScramSHA512, 0), Truststore: kafkatest.TruststorePEM,
	})
	w1 := c.add()
	c.add(w1.bind)
	c.add(w1.bind)
	all := []string{}
	for id := range c.workers {
		all = append(all, id)
	}
	const tasks = 3
	topic := c.topic("gen")
	createOn(t, w1.rest, "gen", map[string]string{
		"connector.class": "Datagen", "topic": topic, "tasks.max": fmt.Sprint(tasks), "records.per.second": "50",
		"key.converter": stringConverter, "value.converter.schemas.enable": "false",
	})
	before, _ := c.placement("gen", tasks, all, nil)
	victim := before[0]
	time.Sleep(time.Second) // every task produces a while before the kill
	c.workers[victim].Kill9()
	var survivors []string
	for _, id := range all {
		if id != victim {
			survivors = append(survivors, id)
		}
	}
	after, took := c.placement("gen", tasks, survivors, nil)
	t.Logf("task 0 ran on %s, killed; after %v the tasks run on %v", victim, took.Round(time.Millisecond), after)
	time.Sleep(time.Second) // the moved task produces after the move
	if code, body := mustSend(t, "PUT", "http://"+c.any()+"/connectors/gen/pause", ""); code != http.StatusAccepted {
		t.Fatalf("pause: %d %s", code, body)
	}
	waitPaused(t, c.cluster, "gen")
	time.Sleep(time.Second) // the last sends of the paused tasks land

	seen := make([]map[int64]bool, tasks)
	for i := range seen {
		seen[i] = map[int64]bool{}
	}
	readTopic(t, c.clientOpts(), topic, func(r *kgo.Record) {
		task, seq, err := datagen.ParseValue(r.Value)
		if err != nil || task < 0 || task >= tasks {
			t.Fatalf("unexpected record %q: %v", r.Value, err)
		}
		seen[task][seq] = true
	})
	for task, seqs := range seen {
		highest, missing, first := testutil.Gaps(seqs, 10)
		if highest < 0 {
			t.Fatalf("task %d produced nothing", task)
		}
		if missing > 0 {
			t.Fatalf("task %d: %d sequence numbers missing below %d, first %v", task, missing, highest, first)
		}
	}
}

// TestKafkaSecurityWrongPasswordIsAClearError starts a worker whose
// password is wrong: it stays up retrying, GET /health answers 503 and
// says why, and neither its logs nor any REST answer carry the password.
// kfake cannot say why (it drops the connection; test/kafka/DIFFERENCES.md),
// so there the test requires the retries and the 503 but not the words.
func TestKafkaSecurityWrongPasswordIsAClearError(t *testing.T) {
	s := kafkatest.NewSecure(t)
	u := s.User(t, kafkatest.ScramSHA512, 0)
	u.Password = "Wr0ng-" + u.Password + "-pw"
	c := newSecureCluster(t, s, "sasl-wrong", kafkatest.Client{Protocol: kafkatest.SASLSSL, User: u, Truststore: kafkatest.TruststoreJKS})
	w := c.start(nil)

	// Two retries logged prove a retry loop, not one attempt.
	waitFor(t, w.FailIfExited, stateDeadline, 250*time.Millisecond, "two logged retries", func() (bool, string) {
		n := strings.Count(strings.ToLower(w.StderrText()), "retry")
		return n >= 2, fmt.Sprintf("%d retries logged", n)
	})
	var health string
	waitFor(t, w.FailIfExited, stateDeadline, 250*time.Millisecond, "GET /health saying the worker cannot authenticate", func() (bool, string) {
		code, body, err := send("GET", "http://"+w.rest+"/health", "")
		if err != nil {
			return false, err.Error()
		}
		health = string(body)
		if code != http.StatusServiceUnavailable {
			return false, fmt.Sprintf("%d %s", code, body)
		}
		return !s.External || mentionsAuthentication(health), health
	})
	t.Logf("GET /health: %s", health)
	// Still up a while later: a wrong password is not a crash loop.
	time.Sleep(2 * time.Second)
	w.FailIfExited()

	answers := map[string]string{"GET /health": health}
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/", ""},
		{"GET", "/health", ""},
		{"GET", "/connectors", ""},
		{"GET", "/connectors/x/status", ""},
		{"POST", "/connectors", connectorJSON(t, "x", fileSource(filepath.Join(t.TempDir(), "in.txt"), "x"))},
	} {
		code, body := mustSend(t, req.method, "http://"+w.rest+req.path, req.body)
		answers[fmt.Sprintf("%s %s (%d)", req.method, req.path, code)] = string(body)
	}
	logs := w.StderrText() + string(readFile(t, w.Stdout))
	answers["the worker's log"] = logs
	if s.External && !mentionsAuthentication(logs) {
		t.Errorf("the worker's log does not say it cannot authenticate:\n%s", proctest.Tail(w.Stderr, 20))
	}
	for where, text := range answers {
		if strings.Contains(text, u.Password) {
			t.Errorf("%s carries the password", where)
		}
	}
	if code := w.Terminate(); code != 0 {
		t.Errorf("worker exited %d on SIGTERM, want 0", code)
	}
}

// mentionsAuthentication reports whether text says authentication failed,
// in Sluice's words or Kafka's error name.
func mentionsAuthentication(text string) bool {
	lower := strings.ToLower(text)
	return strings.Contains(lower, "authenticat")
}

// TestKafkaSecurityProducerOverrideUsesAnotherUser: a source connector's
// producer.override.sasl.jaas.config names another user than the worker's.
// With that user's password its records arrive; with a wrong password
// none do, while the worker, as its own user, stays healthy: the
// connector's producer really authenticates with the override.
func TestKafkaSecurityProducerOverrideUsesAnotherUser(t *testing.T) {
	s := kafkatest.NewSecure(t)
	c := newSecureCluster(t, s, "sasl-override", kafkatest.Client{
		Protocol: kafkatest.SASLSSL, User: s.User(t, kafkatest.ScramSHA512, 0), Truststore: kafkatest.TruststoreJKS,
	})
	c.props["connector.client.config.override.policy"] = "All"
	w := c.add()
	other := s.User(t, kafkatest.ScramSHA512, 1)
	wrong := other
	wrong.Password = "Wr0ng-" + other.Password + "-pw"

	dir := t.TempDir()
	for _, x := range []struct {
		name string
		user kafkatest.SASLUser
	}{{"as-other", other}, {"as-wrong", wrong}} {
		in := filepath.Join(dir, x.name+".txt")
		writeLines(t, in, 100)
		cfg := fileSource(in, c.topic(x.name))
		cfg["producer.override.sasl.jaas.config"] = kafkatest.JAASConfig(x.user)
		createOn(t, w.rest, x.name, cfg)
	}
	waitFor(t, w.FailIfExited, stateDeadline, 250*time.Millisecond, "100 records produced as the other user", func() (bool, string) {
		n := topicEnd(t, c.clientOpts(), c.topic("as-other"))
		return n == 100, fmt.Sprintf("%d records", n)
	})
	// The connector with the wrong password has had as long, and more.
	time.Sleep(2 * time.Second)
	if n := topicEnd(t, c.clientOpts(), c.topic("as-wrong")); n != 0 {
		t.Fatalf("%d records produced with a wrong override password: the override is not used", n)
	}
	code, body := mustSend(t, "GET", "http://"+w.rest+"/connectors/as-wrong/status", "")
	if strings.Contains(string(body), wrong.Password) {
		t.Errorf("the status of the connector with the wrong password carries it: %s", body)
	}
	t.Logf("status of as-wrong: %d %s", code, body)
	if logs := w.StderrText(); strings.Contains(logs, wrong.Password) || strings.Contains(logs, other.Password) {
		t.Errorf("the worker's log carries an override's password")
	}
	if code, body := mustSend(t, "GET", "http://"+w.rest+"/health", ""); code != http.StatusOK {
		t.Errorf("GET /health: %d %s; the worker's own clients are fine", code, body)
	}
}

// topicEnd is the number of records of a one-partition topic, 0 if it
// does not exist yet.
func topicEnd(t *testing.T, opts []kgo.Opt, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kafkatest.NewAdmin(t, opts).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil {
		return 0
	}
	return o.Offset
}
