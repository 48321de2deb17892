package test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors/datagen"
	"github.com/sluice-io/sluice/internal/basicauth"
	"github.com/sluice-io/sluice/internal/proctest"
	"github.com/sluice-io/sluice/internal/tlsconf/tlstest"
)

// secureWorker is a worker process whose REST API listens over HTTPS with
// basic authentication, and has an HTTP admin listener of its own.
type secureWorker struct {
	*proctest.Proc
	id, rest, admin, bind string
}

// restSecurity is what the REST security tests share: the PKI, the users
// and JAAS files, and clients.
type restSecurity struct {
	t        *testing.T
	dir      string
	pki      *tlstest.PKI
	keystore string // PEM: the server's key and chain
	trust    string // PEM: the CA
	jaas     string
	// client trusts the CA and has no certificate; mtls also presents the
	// client certificate.
	client, mtls *http.Client
}

func newRESTSecurity(t *testing.T) *restSecurity {
	t.Helper()
	dir := t.TempDir()
	s := &restSecurity{t: t, dir: dir, pki: tlstest.New(t)}
	write := func(name, text string) string { return writeTemp(t, dir, name, text) }
	s.keystore = write("server.pem", tlstest.KeyPEM(t, s.pki.ServerKey)+tlstest.CertPEM(s.pki.ServerCert, s.pki.CA))
	s.trust = write("ca.pem", tlstest.CertPEM(s.pki.CA))
	users := write("users.properties", "# Connect's PropertyFileLoginModule format\nalice: s3cret-pw\nbob: other\n")
	s.jaas = write("connect.jaas", "KafkaConnect {\n  "+basicauth.LoginModule+" required\n  file=\""+users+"\";\n};\n")
	pool := x509.NewCertPool()
	pool.AddCert(s.pki.CA)
	s.client = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	clientCert := tls.Certificate{Certificate: [][]byte{s.pki.ClientCert.Raw}, PrivateKey: s.pki.ClientKey}
	s.mtls = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}}}}
	return s
}

// start starts a worker of cluster c with a properties file: HTTPS on its
// REST address with basic authentication, the admin endpoints on an HTTP
// listener of their own, CORS for one origin, and extra keys. The client
// certificate is required when mtls is set.
func (s *restSecurity) start(c *cluster, id string, mtls bool, join ...string) *secureWorker {
	s.t.Helper()
	w := &secureWorker{id: id, rest: proctest.FreeAddr(s.t), admin: proctest.FreeAddr(s.t), bind: proctest.FreeAddr(s.t)}
	props := []string{
		"group.id=" + c.name, "bootstrap.servers=" + c.bootstrap,
		"listeners=https://" + w.rest, "admin.listeners=http://" + w.admin,
		"listeners.https.ssl.keystore.type=PEM", "listeners.https.ssl.keystore.location=" + s.keystore,
		"listeners.https.ssl.truststore.type=PEM", "listeners.https.ssl.truststore.location=" + s.trust,
		"rest.extension.classes=" + basicauth.ExtensionClass, "java.security.auth.login.config=" + s.jaas,
		"access.control.allow.origin=https://ui.example.com",
		"response.http.headers.config=set X-Frame-Options: DENY, add Cache-Control: no-store",
	}
	if mtls {
		props = append(props, "listeners.https.ssl.client.auth=required")
	}
	file := writeTemp(s.t, s.dir, id+".properties", strings.Join(props, "\n")+"\n")
	// Debug logs include the authentication failures: the test checks
	// that no password reaches them.
	args := []string{"worker", "--config", file, "--worker-id", id, "--bind", w.bind, "--session-timeout", "6s", "--log-level", "debug"}
	if len(join) > 0 {
		args = append(args, "--join", strings.Join(join, ","))
	}
	w.Proc = startProc(s.t, "worker-"+id, nil, args...)
	client := s.client
	if mtls {
		client = s.mtls
	}
	waitFor(s.t, w.FailIfExited, startDeadline, 200*time.Millisecond, id+" healthy over HTTPS", func() (bool, string) {
		code, body, err := s.do(client, "GET", "https://"+w.rest+"/health", "", "alice", "s3cret-pw")
		if err != nil {
			return false, err.Error()
		}
		return code == 200, string(body)
	})
	return w
}

// do sends a request with basic credentials (none when user is empty).
func (s *restSecurity) do(client *http.Client, method, url, body, user, password string, header ...string) (int, []byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

func (s *restSecurity) must(client *http.Client, method, url, body, user, password string) (int, []byte) {
	s.t.Helper()
	code, b, err := s.do(client, method, url, body, user, password)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, url, err)
	}
	return code, b
}

// TestRESTSecurity runs two workers whose REST API is HTTPS with Connect's
// basic authentication, one of them requiring client certificates, and
// checks what Connect's RestServer and BasicAuthSecurityRestExtension do:
// 401 without credentials and 200 with; a follower forwards an
// authenticated write to the leader; mTLS refuses a client without a
// certificate; the admin endpoints live on admin.listeners only; 413 past
// 1 MiB; CORS preflight; and the admin CLI needs credentials too.
func TestRESTSecurity(t *testing.T) {
	s := newRESTSecurity(t)
	c := startCluster(t, "restsec")
	w1 := s.start(c, "w1", false)
	w2 := s.start(c, "w2", true, w1.bind)
	clientOf := map[string]*http.Client{"w1": s.client, "w2": s.mtls}
	byID := map[string]*secureWorker{"w1": w1, "w2": w2}

	// 401 without credentials or with wrong ones, Connect's body; 200 with.
	for _, creds := range [][2]string{{"", ""}, {"alice", "wrong"}, {"mallory", "s3cret-pw"}} {
		code, body := s.must(s.client, "GET", "https://"+w1.rest+"/connectors", "", creds[0], creds[1])
		if code != 401 || string(body) != basicauth.Unauthorized {
			t.Fatalf("GET /connectors as %q: %d %q, want 401 %q", creds[0], code, body, basicauth.Unauthorized)
		}
	}
	if code, body := s.must(s.client, "GET", "https://"+w1.rest+"/connectors", "", "alice", "s3cret-pw"); code != 200 {
		t.Fatalf("GET /connectors with credentials: %d %s", code, body)
	}
	// response.http.headers.config reaches every answer, a 401 included.
	res, err := s.client.Get("https://" + w1.rest + "/connectors")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 || res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("401 answer: %d, headers %v", res.StatusCode, res.Header)
	}

	// mTLS: w2 refuses a client without a certificate at the handshake.
	if _, _, err := s.do(s.client, "GET", "https://"+w2.rest+"/", "", "alice", "s3cret-pw"); err == nil {
		t.Fatal("w2 (ssl.client.auth=required) served a client without a certificate")
	}
	if code, _ := s.must(s.mtls, "GET", "https://"+w2.rest+"/", "", "alice", "s3cret-pw"); code != 200 {
		t.Fatalf("w2 with a client certificate: %d", code)
	}

	// Both workers advertise their https URL; find the leader.
	var leader, follower string
	waitFor(t, func() { w1.FailIfExited(); w2.FailIfExited() }, stateDeadline, 200*time.Millisecond, "two workers and a leader", func() (bool, string) {
		code, body := s.must(s.client, "GET", "https://"+w1.rest+"/workers", "", "alice", "s3cret-pw")
		var ws struct {
			Workers []struct {
				ID     string `json:"worker_id"`
				URL    string `json:"url"`
				Leader bool   `json:"leader"`
			} `json:"workers"`
		}
		if code != 200 || json.Unmarshal(body, &ws) != nil || len(ws.Workers) != 2 {
			return false, string(body)
		}
		for _, w := range ws.Workers {
			if w.URL != "https://"+byID[w.ID].rest {
				return false, "advertised " + w.URL
			}
			if w.Leader {
				leader = w.ID
			} else {
				follower = w.ID
			}
		}
		return leader != "" && follower != "", string(body)
	})
	t.Logf("leader %s, follower %s", leader, follower)

	// The follower forwards an authenticated write to the leader (through
	// the actor cluster), which accepts it.
	fw := byID[follower]
	spec := connectorJSON(t, "secured", map[string]string{"connector.class": datagen.Class, "topic": c.topic("restsec"), "tasks.max": "1"})
	if code, body := s.must(clientOf[follower], "POST", "https://"+fw.rest+"/connectors", spec, "alice", "s3cret-pw"); code != 201 {
		t.Fatalf("create through the follower %s: %d %s", follower, code, body)
	}
	if code, body := s.must(clientOf[leader], "GET", "https://"+byID[leader].rest+"/connectors/secured/config", "", "bob", "other"); code != 200 {
		t.Fatalf("the connector on the leader: %d %s", code, body)
	}
	if code, _ := s.must(clientOf[follower], "POST", "https://"+fw.rest+"/connectors", spec, "", ""); code != 401 {
		t.Fatalf("create through the follower without credentials: %d, want 401", code)
	}

	// admin.listeners: /admin on the admin listener only (without the REST
	// extensions, as in Connect), and nothing else there.
	if code, _ := s.must(s.client, "GET", "https://"+w1.rest+"/admin/loggers", "", "alice", "s3cret-pw"); code != 404 {
		t.Fatalf("/admin/loggers on the main listener: %d, want 404", code)
	}
	if code, body := s.must(httpClient, "GET", "http://"+w1.admin+"/admin/loggers", "", "", ""); code != 200 || !strings.Contains(string(body), "root") {
		t.Fatalf("/admin/loggers on the admin listener: %d %s", code, body)
	}
	if code, _ := s.must(httpClient, "GET", "http://"+w1.admin+"/connectors", "", "", ""); code != 404 {
		t.Fatalf("/connectors on the admin listener: %d, want 404", code)
	}

	// 413 past 1 MiB, with Connect's error shape.
	big := connectorJSON(t, "big", map[string]string{"connector.class": datagen.Class, "pad": strings.Repeat("x", 1<<20)})
	if code, body := s.must(s.client, "POST", "https://"+w1.rest+"/connectors", big, "alice", "s3cret-pw"); code != 413 || !strings.Contains(string(body), `"error_code":413`) {
		t.Fatalf("a body past 1 MiB: %d %.200s", code, body)
	}

	// CORS: a preflight from the allowed origin is answered without
	// credentials (browsers send none with it); another origin gets no
	// CORS headers.
	for origin, want := range map[string]string{"https://ui.example.com": "https://ui.example.com", "https://evil.example": ""} {
		req, _ := http.NewRequest("OPTIONS", "https://"+w1.rest+"/connectors", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		res, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != want {
			t.Fatalf("preflight from %s: %d, Access-Control-Allow-Origin %q, want %q", origin, res.StatusCode, got, want)
		}
	}

	// The admin CLI reaches the workers through the actor system: it
	// needs the same credentials.
	a := admin{t: t, join: w1.bind, cluster: c.name}
	code, _, stderr := a.run("connectors", "list", "-o", "json")
	if code != 1 || !strings.Contains(stderr, basicauth.Unauthorized) || !strings.Contains(stderr, "--user") {
		t.Fatalf("connectors list without credentials: exit %d, stderr %s; want 1 naming --user", code, stderr)
	}
	wrong := writeTemp(t, s.dir, "wrong-password", "nope\n")
	if code, _, stderr := a.run("connectors", "list", "--user", "alice", "--password-file", wrong); code != 1 || strings.Contains(stderr, "nope") {
		t.Fatalf("connectors list with a wrong password: exit %d, stderr %s", code, stderr)
	}
	good := writeTemp(t, s.dir, "password", "s3cret-pw\n")
	if out := a.must("connectors", "list", "-o", "json", "--user", "alice", "--password-file", good); !strings.Contains(out, `"secured"`) {
		t.Fatalf("connectors list with credentials: %s", out)
	}
	// A write through the CLI at the follower is forwarded to the leader.
	a.join = fw.bind
	a.must("connectors", "pause", "secured", "--user", "bob", "--password-file", writeTemp(t, s.dir, "bob-password", "other"))
	waitFor(t, func() { w1.FailIfExited(); w2.FailIfExited() }, stateDeadline, 200*time.Millisecond, "secured PAUSED", func() (bool, string) {
		_, body := s.must(s.client, "GET", "https://"+w1.rest+"/connectors/secured/status", "", "alice", "s3cret-pw")
		return strings.Contains(string(body), `"PAUSED"`), string(body)
	})
	for _, w := range []*secureWorker{w1, w2} {
		if logs := w.StderrText(); strings.Contains(logs, "s3cret-pw") || strings.Contains(logs, "nope") || !strings.Contains(logs, "failed authentication") {
			t.Errorf("%s's log shows a password, or no authentication failure at debug", w.id)
		}
	}
}

func writeTemp(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRESTSecurityRefusesBadKeys: a worker refuses at start, naming the
// key, a REST extension it cannot load, a JAAS file without the users
// file, and an https listener without a keystore.
func TestRESTSecurityRefusesBadKeys(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		props []string
		want  string
	}{
		{[]string{"rest.extension.classes=com.example.MyExtension"}, "rest.extension.classes: com.example.MyExtension"},
		{[]string{"rest.extension.classes=" + basicauth.ExtensionClass}, "needs java.security.auth.login.config"},
		{[]string{"listeners=https://127.0.0.1:0"}, "ssl.keystore.location"},
		{[]string{"listeners=http://127.0.0.1:0", "rest.advertised.listener=https"}, "rest.advertised.listener"},
	} {
		file := writeTemp(t, dir, "w.properties", strings.Join(append([]string{"group.id=g", "bootstrap.servers=127.0.0.1:1"}, tc.props...), "\n")+"\n")
		p := startProc(t, "worker-bad", nil, "worker", "--config", file)
		p.WaitExit()
		if code := p.Cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(p.StderrText(), tc.want) {
			t.Errorf("%v: exit %d, stderr %s; want an error naming %q", tc.props, code, p.StderrText(), tc.want)
		}
	}
}
