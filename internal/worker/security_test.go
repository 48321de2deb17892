package worker

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/testutil"
	"github.com/sluice-io/sluice/internal/tlsconf/tlstest"
)

// saslSSLBroker is an embedded broker that requires TLS and SCRAM-SHA-512
// (user connect, password connect-secret), and the worker keys that reach
// it with the truststore as JKS.
func saslSSLBroker(t *testing.T, password string) (bootstrap string, props map[string]string) {
	c, props := saslSSLCluster(t, password)
	return c.ListenAddrs()[0], props
}

// saslSSLCluster is saslSSLBroker with the broker itself, for tests that
// make it misbehave.
func saslSSLCluster(t *testing.T, password string) (*kfake.Cluster, map[string]string) {
	p := tlstest.New(t)
	c, _ := kafkatest.NewCluster(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "connect", "connect-secret"),
		kfake.TLS(p.ServerTLS()), kfake.AllowAutoTopicCreation())
	return c, map[string]string{
		"security.protocol": "SASL_SSL",
		"sasl.mechanism":    "SCRAM-SHA-512",
		"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required
			username="connect" password="` + password + `";`,
		"ssl.truststore.location": tlstest.JKSTrustStore(t, "trust-pass", p.CA),
		"ssl.truststore.password": "trust-pass",
	}
}

func startSecureWorker(t *testing.T, bootstrap string, props map[string]string, log zerolog.Logger) *Worker {
	t.Helper()
	return startWorkerWith(t, Config{
		Cluster: kafkatest.Unique("sec"), Bootstrap: []string{bootstrap}, RESTAddr: "127.0.0.1:0",
		OffsetFlushInterval: 100 * time.Millisecond, Props: props, Log: log,
		RestartBackoffMin: 100 * time.Millisecond, RestartBackoffMax: time.Second,
	})
}

// readySecureWorker starts a worker with the right password against
// saslSSLBroker and waits until it is ready; it returns its REST URL and
// the deadline the test's waits share.
func readySecureWorker(t *testing.T) (base string, deadline time.Time) {
	t.Helper()
	bootstrap, props := saslSSLBroker(t, "connect-secret")
	w := startSecureWorker(t, bootstrap, props, zerolog.Nop())
	deadline = time.Now().Add(30 * time.Second)
	for !w.Ready() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return "http://" + w.RESTAddr(), deadline
}

func post(t *testing.T, url, body string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s: %d", url, resp.StatusCode)
	}
}

// A worker whose keys say SASL_SSL with SCRAM-SHA-512 and a JKS truststore
// runs a source and a sink connector through the secured broker: its own
// clients, the source's producer and the sink's consumer all authenticate.
func TestWorkerOverSASLSSLRunsConnectors(t *testing.T) {
	base, deadline := readySecureWorker(t)
	if code, body := get(t, base+"/health"); code != http.StatusOK {
		t.Fatalf("health %d %s", code, body)
	}
	out := filepath.Join(t.TempDir(), "out.txt")
	post(t, base+"/connectors", `{"name":"gen","config":{"connector.class":"Datagen","topic":"secure-gen","tasks.max":"1",
		"max.records":"20","value.converter":"org.apache.kafka.connect.storage.StringConverter"}}`)
	post(t, base+"/connectors", `{"name":"sink","config":{"connector.class":"FileStreamSink","topics":"secure-gen",
		"file":"`+out+`","value.converter":"org.apache.kafka.connect.storage.StringConverter"}}`)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(out); bytes.Count(b, []byte("\n")) >= 20 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, status := get(t, base+"/connectors?expand=status")
	t.Fatalf("the sink never wrote the source's 20 records through the SASL_SSL broker; status: %s", status)
}

// A wrong password is reported in GET /health and in the log, without the
// password; the worker keeps retrying instead of exiting.
func TestWorkerWithAWrongPasswordSaysSoAndStaysUp(t *testing.T) {
	const wrong = "Wrong-Password-Not-For-Logs"
	bootstrap, props := saslSSLBroker(t, wrong)
	var logs testutil.LogBuffer
	w := startSecureWorker(t, bootstrap, props, zerolog.New(&logs))
	base := "http://" + w.RESTAddr()

	var health struct{ Status, Message string }
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		code, body := get(t, base+"/health")
		if strings.Contains(body, wrong) {
			t.Fatalf("GET /health shows the password: %s", body)
		}
		_ = json.Unmarshal([]byte(body), &health)
		if code == http.StatusInternalServerError && health.Status == "unhealthy" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if health.Status != "unhealthy" || !strings.Contains(health.Message, "cannot authenticate to Kafka") ||
		!strings.Contains(health.Message, `SCRAM-SHA-512 as user "connect"`) {
		t.Fatalf("GET /health never said the worker cannot authenticate: %+v", health)
	}
	time.Sleep(2 * time.Second) // a few more rounds of retries
	select {
	case <-w.Done():
		t.Fatalf("the worker gave up: %v", w.Err())
	default:
	}
	captured := logs.String()
	if !strings.Contains(captured, "the worker cannot authenticate to Kafka; retrying") {
		t.Errorf("the log does not say the worker cannot authenticate:\n%s", captured)
	}
	if strings.Contains(captured, wrong) {
		t.Errorf("the log shows the password:\n%s", captured)
	}
	// Once per backoff round, not a flood: rounds start 0.5 s apart and double.
	if n := strings.Count(captured, "cannot authenticate to Kafka; retrying"); n > 8 {
		t.Errorf("%d authentication failure lines in about 4 s: a flood", n)
	}
}

// A connector whose producer override carries a wrong password fails its
// task with the reason in the status trace (the worker itself, with the
// right password, stays healthy); the password is in no trace.
func TestTaskWithAWrongOverridePasswordSaysSoInItsTrace(t *testing.T) {
	base, deadline := readySecureWorker(t)
	const wrong = "Override-Password-Not-For-Traces"
	post(t, base+"/connectors", `{"name":"gen","config":{"connector.class":"Datagen","topic":"override-gen","tasks.max":"1",
		"producer.override.sasl.jaas.config":"org.apache.kafka.common.security.scram.ScramLoginModule required username=\"connect\" password=\"`+wrong+`\";",
		"producer.override.request.timeout.ms":"1000","producer.override.delivery.timeout.ms":"2000"}}`)
	var status struct {
		Tasks []struct{ State, Trace string }
	}
	for time.Now().Before(deadline) {
		_, body := get(t, base+"/connectors/gen/status")
		_ = json.Unmarshal([]byte(body), &status)
		if len(status.Tasks) == 1 && status.Tasks[0].State == "FAILED" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(status.Tasks) != 1 || status.Tasks[0].State != "FAILED" {
		t.Fatalf("the task never failed: %+v", status)
	}
	trace := status.Tasks[0].Trace
	if !strings.Contains(trace, "cannot authenticate to Kafka") || !strings.Contains(trace, `SCRAM-SHA-512 as user "connect"`) {
		t.Errorf("the trace does not say the producer cannot authenticate:\n%s", trace)
	}
	if strings.Contains(trace, wrong) {
		t.Errorf("the trace shows the password:\n%s", trace)
	}
	if code, body := get(t, base+"/health"); code != http.StatusOK {
		t.Errorf("the worker, whose own password is right, is not healthy: %d %s", code, body)
	}
}
