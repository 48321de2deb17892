package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/proctest"
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
	// external: topic names carry the unique cluster name on either
	// broker, as they must on a shared Apache Kafka.
	c := &cluster{t: t, name: name, bootstrap: s.Bootstrap(t, client.Protocol), external: true, workers: map[string]*workerProc{}}
	return &secureCluster{cluster: c, secure: s, client: client, props: props}
}

// start starts a worker with the cluster's keys, configured by a
// properties file (--bind and --join, the gossip addresses, have no
// Connect key). Its worker id is Connect's, its REST address. It does not
// wait for the worker to be healthy.
func (c *secureCluster) start(join ...string) *workerProc {
	c.t.Helper()
	rest, bind := proctest.FreeAddr(c.t), proctest.FreeAddr(c.t)
	props := map[string]string{"listeners": "http://" + rest}
	for k, v := range c.props {
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
	w := c.start(join...)
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
// over SASL_SSL with SCRAM-SHA-512 copy a growing file with the FileStream
// connectors; the worker running the source task is killed with SIGKILL;
// the task runs again on a survivor, from its last committed offset, and
// every line written to the input reaches the output (duplicates from the
// replayed window are allowed, lost or invented lines are not).
func TestKafkaSecurityFailoverOverSASLSSL(t *testing.T) {
	s := kafkatest.NewSecure(t)
	c := newSecureCluster(t, s, "sasl-failover", kafkatest.Client{
		Protocol: kafkatest.SASLSSL, User: s.User(t, kafkatest.ScramSHA512, 0), Truststore: kafkatest.TruststorePEM,
	})
	w1 := c.add()
	c.add(w1.bind)
	c.add(w1.bind)
	var all []string
	for id := range c.workers {
		all = append(all, id)
	}

	dir := t.TempDir()
	in, out, topic := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt"), c.topic("growing")
	grow := appendLines(t, in)
	createOn(t, w1.rest, "file-sink", fileSink(out, topic))
	createOn(t, w1.rest, "file-source", fileSource(in, topic))
	before, _ := c.placement("file-source", 1, all, nil)
	c.placement("file-sink", 1, all, nil)
	waitFor(t, w1.FailIfExited, stateDeadline, 50*time.Millisecond, "lines flowing to the output", func() (bool, string) {
		n := countLines(readFile(t, out))
		return n >= 100, fmt.Sprintf("%d lines out", n)
	})

	victim := before[0]
	c.workers[victim].Kill9()
	t.Logf("SIGKILL to %s, which ran the source task, with %d lines written and %d copied", victim, grow.written(), countLines(readFile(t, out)))
	var survivors []string
	for _, id := range all {
		if id != victim {
			survivors = append(survivors, id)
		}
	}
	after, took := c.placement("file-source", 1, survivors, nil)
	c.placement("file-sink", 1, survivors, nil)
	t.Logf("the source task RUNNING on %s %v after the kill", after[0], took.Round(time.Millisecond))
	time.Sleep(time.Second) // the moved task reads lines written after the move
	n := grow.stop()

	want := map[string]bool{}
	for i := 1; i <= n; i++ {
		want[growingLine(i)] = true
	}
	var got []string
	waitFor(t, c.workers[survivors[0]].FailIfExited, stateDeadline, 250*time.Millisecond, "every input line in the output", func() (bool, string) {
		got = strings.Split(strings.TrimSuffix(string(readFile(t, out)), "\n"), "\n")
		seen := map[string]bool{}
		for _, l := range got {
			if want[l] {
				seen[l] = true
			}
		}
		return len(seen) == n, fmt.Sprintf("%d of %d lines present", len(seen), n)
	})
	for i, l := range got {
		if !want[l] {
			t.Fatalf("output line %d %q was never written to the input", i+1, l)
		}
	}
	t.Logf("%d lines written, %d output lines: %d duplicates", n, len(got), len(got)-n)
}

// growingFile appends numbered lines to a file until stopped.
type growingFile struct {
	count atomic.Int64
	done  chan struct{}
	quit  chan struct{}
}

// appendLines starts appending growingLine(1), growingLine(2), ... to
// path, about 200 a second, each line in one write so that a reader never
// sees half of one.
func appendLines(t *testing.T, path string) *growingFile {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	g := &growingFile{done: make(chan struct{}), quit: make(chan struct{})}
	go func() {
		defer close(g.done)
		defer f.Close()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 1; ; i++ {
			select {
			case <-g.quit:
				return
			case <-tick.C:
			}
			if _, err := f.WriteString(growingLine(i) + "\n"); err != nil {
				t.Errorf("appending to %s: %v", path, err)
				return
			}
			g.count.Store(int64(i))
		}
	}()
	t.Cleanup(func() { g.stop() })
	return g
}

func growingLine(i int) string { return fmt.Sprintf("growing line %07d", i) }

// written is how many lines have been appended so far.
func (g *growingFile) written() int { return int(g.count.Load()) }

// stop ends the appending and returns how many lines were written.
func (g *growingFile) stop() int {
	select {
	case <-g.quit:
	default:
		close(g.quit)
	}
	<-g.done
	return g.written()
}

// TestKafkaSecurityWrongPasswordIsAClearError starts a worker whose
// password is wrong: it stays up retrying, GET /health answers as
// Connect's does for an unhealthy worker (500, or 503 while starting) and
// says it cannot authenticate, and neither its logs nor any REST answer
// carry the password. (kfake drops the connection instead of answering
// SASL_AUTHENTICATION_FAILED, test/kafka/DIFFERENCES.md; Sluice names that
// an authentication failure too.)
func TestKafkaSecurityWrongPasswordIsAClearError(t *testing.T) {
	s := kafkatest.NewSecure(t)
	u := s.User(t, kafkatest.ScramSHA512, 0)
	u.Password = "Wr0ng-" + u.Password + "-pw"
	c := newSecureCluster(t, s, "sasl-wrong", kafkatest.Client{Protocol: kafkatest.SASLSSL, User: u, Truststore: kafkatest.TruststoreJKS})
	w := c.start()

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
		health = fmt.Sprintf("%d %s", code, body)
		if code != http.StatusInternalServerError && code != http.StatusServiceUnavailable {
			return false, health
		}
		return mentionsAuthentication(string(body)), health
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
	} {
		code, body := mustSend(t, req.method, "http://"+w.rest+req.path, req.body)
		answers[fmt.Sprintf("%s %s (%d)", req.method, req.path, code)] = string(body)
	}
	logs := w.StderrText() + string(readFile(t, w.Stdout))
	answers["the worker's log"] = logs
	if !mentionsAuthentication(logs) {
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
// none do, its task fails with a trace saying its producer cannot
// authenticate (and not the password), while the worker, as its own user,
// stays healthy: the connector's producer really authenticates with the
// override.
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
		// Records give up after 3 s rather than Connect's 2 minutes, so
		// the failure shows within the test.
		cfg["producer.override.request.timeout.ms"] = "1000"
		cfg["producer.override.delivery.timeout.ms"] = "3000"
		createOn(t, w.rest, x.name, cfg)
	}
	waitFor(t, w.FailIfExited, stateDeadline, 250*time.Millisecond, "100 records produced as the other user", func() (bool, string) {
		n := topicEnd(t, c.clientOpts(), c.topic("as-other"))
		return n == 100, fmt.Sprintf("%d records", n)
	})
	var status string
	waitFor(t, w.FailIfExited, stateDeadline, 250*time.Millisecond, "the task with the wrong password FAILED, saying why", func() (bool, string) {
		code, body, err := send("GET", "http://"+w.rest+"/connectors/as-wrong/status", "")
		if err != nil {
			return false, err.Error()
		}
		status = string(body)
		var st proctest.Status
		if code != http.StatusOK || json.Unmarshal(body, &st) != nil || len(st.Tasks) != 1 {
			return false, fmt.Sprintf("%d %s", code, body)
		}
		return st.Tasks[0].State == "FAILED" && mentionsAuthentication(st.Tasks[0].Trace), status
	})
	t.Logf("status of as-wrong: %s", status)
	if strings.Contains(status, wrong.Password) {
		t.Errorf("the status of the connector with the wrong password carries it: %s", status)
	}
	if n := topicEnd(t, c.clientOpts(), c.topic("as-wrong")); n != 0 {
		t.Fatalf("%d records produced with a wrong override password: the override is not used", n)
	}
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
