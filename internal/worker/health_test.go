package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/internal/testutil"
)

// healthOf is GET /health's code and KIP-1017 body.
func healthOf(t *testing.T, base string) (int, string, string) {
	t.Helper()
	code, body := get(t, base+"/health")
	var h struct{ Status, Message string }
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatalf("GET /health: %d %q is not KIP-1017's shape: %v", code, body, err)
	}
	return code, h.Status, h.Message
}

// A worker whose broker goes away stays healthy through a short outage,
// answers 500 "unhealthy" saying why once the coordinator has been silent
// for longer than the session timeout, and is healthy again once the
// broker is back and it has rejoined its group.
func TestHealthFollowsTheBrokerAwayAndBack(t *testing.T) {
	// A short session timeout keeps the test short; the broker's default
	// floor (group.min.session.timeout.ms, 6 s) would refuse it.
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(),
		kfake.BrokerConfigs(map[string]string{"group.min.session.timeout.ms": "1000"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	// down cuts every connection to the broker: each request closes its
	// connection unanswered, as a broker that died or a cut network does.
	var down atomic.Bool
	broker.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		if down.Load() {
			return nil, errors.New("broker cut off by the test"), true
		}
		return nil, nil, false
	})
	const session, heartbeat = 2 * time.Second, 200 * time.Millisecond
	w := startWorkerWith(t, Config{
		Cluster: "health", Bootstrap: broker.ListenAddrs(), RESTAddr: "127.0.0.1:0",
		OffsetFlushInterval: 100 * time.Millisecond,
		SessionTimeout:      session, HeartbeatInterval: heartbeat, RebalanceTimeout: 5 * time.Second,
		Log: zerolog.Nop(),
	})
	base := "http://" + w.RESTAddr()
	waitHealth := func(what string, wantCode int, wantStatus string, messageHas ...string) string {
		t.Helper()
		var msg string
		testutil.Eventually(t, 40*time.Second, what, func() error {
			code, status, m := healthOf(t, base)
			msg = m
			if code != wantCode || status != wantStatus {
				return fmt.Errorf("%d %s %q", code, status, m)
			}
			for _, s := range messageHas {
				if !strings.Contains(m, s) {
					return fmt.Errorf("message %q lacks %q", m, s)
				}
			}
			return nil
		})
		return msg
	}
	waitHealth("healthy after start", 200, "healthy", "ready to handle requests")

	cut := time.Now()
	down.Store(true)
	// Within the session timeout the group still counts the worker in.
	if code, status, msg := healthOf(t, base); code != 200 {
		t.Fatalf("right after the cut: %d %s %q, want still healthy", code, status, msg)
	}
	msg := waitHealth("unhealthy with the broker gone", 500, "unhealthy", "Worker is unhealthy", `no answer from the coordinator of group "health"`, "session.timeout.ms")
	if took := time.Since(cut); took < session-2*heartbeat {
		t.Errorf("unhealthy %s after the cut, before the session timeout (%s) passed: %q", took, session, msg)
	}

	down.Store(false)
	waitHealth("healthy with the broker back", 200, "healthy", "ready to handle requests")
}

// Credentials that stop working after the worker started (the broker now
// refuses them) make it unhealthy at once, saying so, without waiting out
// the session timeout; healthy again once the broker takes them back.
func TestHealthReportsCredentialsRefusedLater(t *testing.T) {
	broker, props := saslSSLCluster(t, "connect-secret")
	// refuse makes the broker refuse every SASL authentication and close
	// the connections authenticated before, so that the clients must
	// authenticate again.
	var refuse atomic.Bool
	broker.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		broker.KeepControl()
		if !refuse.Load() {
			return nil, nil, false
		}
		switch r := req.(type) {
		case *kmsg.SASLAuthenticateRequest:
			resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			resp.Version = r.GetVersion()
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := "the test's broker refuses user connect now"
			resp.ErrorMessage = &msg
			return resp, nil, true
		case *kmsg.SASLHandshakeRequest, *kmsg.ApiVersionsRequest:
			return nil, nil, false
		}
		return nil, errors.New("closed by the test to make the client authenticate again"), true
	})
	const session = 30 * time.Second // far longer than the test waits
	w := startWorkerWith(t, Config{
		Cluster: "health-auth", Bootstrap: broker.ListenAddrs(), RESTAddr: "127.0.0.1:0", Props: props,
		OffsetFlushInterval: 100 * time.Millisecond,
		SessionTimeout:      session, HeartbeatInterval: 200 * time.Millisecond, RebalanceTimeout: 5 * time.Second,
		Log: zerolog.Nop(),
	})
	base := "http://" + w.RESTAddr()
	wait := func(what string, wantCode int, messageHas string) string {
		t.Helper()
		var msg string
		testutil.Eventually(t, 20*time.Second, what, func() error {
			code, _, m := healthOf(t, base)
			msg = m
			if code != wantCode || !strings.Contains(m, messageHas) {
				return fmt.Errorf("%d %q", code, m)
			}
			return nil
		})
		return msg
	}
	wait("healthy", 200, "ready to handle requests")
	refused := time.Now()
	refuse.Store(true)
	msg := wait("unhealthy, credentials refused", 500, "cannot authenticate to Kafka")
	if took := time.Since(refused); took >= session {
		t.Errorf("took %s, the session timeout", took)
	}
	if strings.Contains(msg, "connect-secret") {
		t.Fatalf("the health message shows the password: %q", msg)
	}
	refuse.Store(false)
	wait("healthy with the credentials taken back", 200, "ready to handle requests")
}

// A worker whose start failed for good (internal topics the broker cannot
// create) answers 500 with the reason, not 503 as if it were still
// starting.
func TestHealthOfAWorkerThatCouldNotStart(t *testing.T) {
	broker, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	w := startWorkerWith(t, Config{
		Cluster: "health-nostart", Bootstrap: broker.ListenAddrs(), RESTAddr: "127.0.0.1:0",
		ReplicationFactor: 3, // one broker
		Log:               zerolog.Nop(),
	})
	select {
	case <-w.Done():
	case <-time.After(90 * time.Second):
		t.Fatal("the start did not fail")
	}
	if w.Err() == nil {
		t.Fatal("Done closed without a start error")
	}
	code, status, msg := healthOf(t, "http://"+w.RESTAddr())
	if code != 500 || status != "unhealthy" || !strings.Contains(msg, "the worker could not start: internal topics") {
		t.Fatalf("%d %s %q, want 500 unhealthy with the start error", code, status, msg)
	}
}
