package test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/pgtest"
	"github.com/sluice-io/sluice/internal/proctest"
)

const fileProviderClass = "org.apache.kafka.common.config.provider.FileConfigProvider"

// TestConfigProviderKeepsThePostgresPasswordSecret is issue 15's proof for
// config providers: a JdbcSourceConnector whose connection.password is
// ${file:<secrets.properties>:pg.password} copies a table out of
// PostgreSQL as a role that must give that password (pgtest's server
// trusts only its superuser), so the test fails if the placeholder
// reached the database as written. Then the secret must appear nowhere:
// not in the config topic, read whole (connector and task configs keep the
// placeholder), not in any REST answer (config, info, tasks, status, the
// expanded list, validate) or admin command, not in the worker's log.
func TestConfigProviderKeepsThePostgresPasswordSecret(t *testing.T) {
	pg := pgtest.Start(t)
	secret := "pw-" + randomHex(t, 12)
	role := "sluice_provider_" + randomHex(t, 4)
	pg.Exec(t, "CREATE ROLE "+role+" LOGIN PASSWORD '"+secret+"'")
	t.Cleanup(func() {
		pg.Exec(t, "DROP OWNED BY "+role)
		pg.Exec(t, "DROP ROLE "+role)
	})
	pg.Exec(t, "CREATE TABLE accounts (id serial PRIMARY KEY, name text NOT NULL)")
	pg.Exec(t, "INSERT INTO accounts (name) SELECT 'account-' || g FROM generate_series(1, 25) g")
	pg.Exec(t, "GRANT SELECT ON accounts TO "+role)

	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	secretsFile := filepath.Join(secrets, "secrets.properties")
	writeTestFile(t, secretsFile, "# the database role's password\npg.password = "+secret+"\n")
	workerProps := filepath.Join(dir, "worker.properties")
	writeTestFile(t, workerProps, strings.Join([]string{
		"config.providers=file",
		"config.providers.file.class=" + fileProviderClass,
		"config.providers.file.param.allowed.paths=" + secrets,
	}, "\n")+"\n")

	c := startCluster(t, "providers")
	rest, bind := proctest.FreeAddr(t), proctest.FreeAddr(t)
	w := startProc(t, "worker", nil, "worker", "--config", workerProps, "--cluster", c.name, "--bootstrap", c.bootstrap,
		"--rest-addr", rest, "--bind", bind, "--offset-flush-interval-ms", "200")
	waitHealthy(t, w, rest)
	base := "http://" + rest

	placeholder := "${file:" + secretsFile + ":pg.password}"
	topic := c.topic("secret-")
	config := map[string]string{
		"connector.class":          "io.confluent.connect.jdbc.JdbcSourceConnector",
		"tasks.max":                "1",
		"connection.url":           fmt.Sprintf("jdbc:postgresql://%s:%d/%s", pg.Host(), pg.Port(), pg.Database()),
		"connection.user":          role,
		"connection.password":      placeholder,
		"table.whitelist":          "accounts",
		"mode":                     "incrementing",
		"incrementing.column.name": "id",
		"topic.prefix":             topic,
		"poll.interval.ms":         "200",
	}
	// Validation resolves the placeholder (the password is checked as the
	// connector will get it) and hides the password.
	withName := maps.Clone(config)
	withName["name"] = "pg-secret"
	code, body := mustSend(t, "PUT", base+"/connector-plugins/JdbcSourceConnector/config/validate", compactJSON(withName))
	validate := string(body)
	if code != http.StatusOK || validatedValue(t, body, "connection.password") != "[hidden]" || validateErrors(t, body) != 0 {
		t.Fatalf("validate: %d %s; want no errors and the password [hidden]", code, body)
	}

	createOn(t, rest, "pg-secret", config)
	waitFor(t, w.FailIfExited, stateDeadline, 200*time.Millisecond, "25 rows copied as the role", func() (bool, string) {
		_, status, _ := send("GET", base+"/connectors/pg-secret/status", "")
		n := len(readTopicValues(t, c.bootstrap, topic+"accounts"))
		return n == 25, fmt.Sprintf("%d records; status %s", n, status)
	})

	// GET /connectors/{c}/config shows the config as written, as Connect
	// does: the placeholder, not the value.
	code, body = mustSend(t, "GET", base+"/connectors/pg-secret/config", "")
	var shown map[string]string
	if err := json.Unmarshal(body, &shown); code != http.StatusOK || err != nil || shown["connection.password"] != placeholder {
		t.Errorf("GET config: %d %s; want connection.password %q", code, body, placeholder)
	}
	answers := map[string]string{"validate": validate}
	for _, path := range []string{"/connectors/pg-secret", "/connectors/pg-secret/config", "/connectors/pg-secret/tasks",
		"/connectors/pg-secret/status", "/connectors/pg-secret/tasks/0/status", "/connectors?expand=info&expand=status"} {
		code, body := mustSend(t, "GET", base+path, "")
		if code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
		answers[path] = string(body)
	}
	if !strings.Contains(answers["/connectors/pg-secret/tasks"], `${file:`) {
		t.Errorf("the task config lost its placeholder: %s", answers["/connectors/pg-secret/tasks"])
	}
	for what, text := range answers {
		if strings.Contains(text, secret) {
			t.Errorf("REST %s shows the secret: %s", what, text)
		}
	}

	// The admin commands read the same configs, over the actor cluster.
	cli := admin{t: t, join: bind, cluster: c.name}
	for _, args := range [][]string{{"connectors", "get", "pg-secret", "-o", "json"}, {"connectors", "status", "pg-secret", "-o", "json"},
		{"connectors", "list", "--expand", "-o", "json"}} {
		out := cli.must(args...)
		if strings.Contains(out, secret) {
			t.Errorf("sluice %s shows the secret: %s", strings.Join(args, " "), out)
		}
		if args[1] == "get" && !strings.Contains(out, "${file:") {
			t.Errorf("sluice %s does not show the placeholder: %s", strings.Join(args, " "), out)
		}
	}

	configs := strings.Join(readTopicValues(t, c.bootstrap, c.name+"-configs"), "\n")
	if strings.Count(configs, placeholder) < 2 {
		t.Errorf("the config topic should hold the placeholder in the connector's and the task's configs:\n%s", configs)
	}
	if strings.Contains(configs, secret) {
		t.Errorf("the config topic holds the secret:\n%s", configs)
	}
	if logs := w.StderrText(); strings.Contains(logs, secret) {
		t.Errorf("the worker's log shows the secret:\n%s", logs)
	}

	// A placeholder naming a provider the worker does not configure stays
	// as written, as in Connect: the validation shows it unresolved.
	unknown := map[string]string{"connector.class": "JdbcSourceConnector", "connection.url": config["connection.url"],
		"connection.user": "${vault:secret/db:user}", "mode": "bulk"}
	_, body = mustSend(t, "PUT", base+"/connector-plugins/JdbcSourceConnector/config/validate", compactJSON(unknown))
	if got := validatedValue(t, body, "connection.user"); got != "${vault:secret/db:user}" {
		t.Errorf("an undefined provider's placeholder became %q, want it as written", got)
	}
	// A file the provider cannot read is an error on the key, naming the
	// provider and the path.
	missing := maps.Clone(config)
	missing["connection.password"] = "${file:" + filepath.Join(secrets, "missing.properties") + ":pg.password}"
	_, body = mustSend(t, "PUT", base+"/connector-plugins/JdbcSourceConnector/config/validate", compactJSON(missing))
	if errs := validatedErrors(t, body, "connection.password"); !strings.Contains(errs, `config provider "file"`) || !strings.Contains(errs, "missing.properties") {
		t.Errorf("an unreadable secrets file: errors %q, want the provider and the path named", errs)
	}
	if logs := w.StderrText(); strings.Contains(logs, secret) {
		t.Errorf("the worker's log shows the secret:\n%s", logs)
	}
}

// TestConfigProviderBadWorkerKeysStopTheWorker: an unknown provider class
// and a bad allowed.paths end `sluice worker` at start, naming the key.
func TestConfigProviderBadWorkerKeysStopTheWorker(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		props, want []string
	}{
		{[]string{"config.providers=vault", "config.providers.vault.class=io.confluent.VaultConfigProvider"},
			[]string{"config.providers.vault.class", "unknown config provider class", fileProviderClass}},
		{[]string{"config.providers=file", "config.providers.file.class=" + fileProviderClass,
			"config.providers.file.param.allowed.paths=" + filepath.Join(dir, "absent")},
			[]string{"config.providers.file.param.allowed.paths", "does not exist"}},
	} {
		file := filepath.Join(dir, "worker.properties")
		writeTestFile(t, file, strings.Join(append(tc.props, "group.id=bad", "bootstrap.servers=127.0.0.1:1",
			"listeners=http://"+proctest.FreeAddr(t)), "\n")+"\n")
		ctx, cancel := context.WithTimeout(context.Background(), exitDeadline)
		out, err := exec.CommandContext(ctx, sluiceBin, "worker", "--config", file).CombinedOutput()
		cancel()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("%v: %v, want exit 1\n%s", tc.props, err, out)
		}
		for _, want := range tc.want {
			if !strings.Contains(string(out), want) {
				t.Errorf("%v: the output does not say %q:\n%s", tc.props, want, out)
			}
		}
	}
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// validation is the part of a validate answer the tests read.
type validation struct {
	ErrorCount int `json:"error_count"`
	Configs    []struct {
		Value struct {
			Name   string   `json:"name"`
			Value  *string  `json:"value"`
			Errors []string `json:"errors"`
		} `json:"value"`
	} `json:"configs"`
}

func parseValidation(t *testing.T, body []byte) validation {
	t.Helper()
	var v validation
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("validate answer %s: %v", body, err)
	}
	return v
}

func validateErrors(t *testing.T, body []byte) int { return parseValidation(t, body).ErrorCount }

func validatedValue(t *testing.T, body []byte, key string) string {
	for _, c := range parseValidation(t, body).Configs {
		if c.Value.Name == key && c.Value.Value != nil {
			return *c.Value.Value
		}
	}
	return ""
}

func validatedErrors(t *testing.T, body []byte, key string) string {
	for _, c := range parseValidation(t, body).Configs {
		if c.Value.Name == key {
			return strings.Join(c.Value.Errors, "; ")
		}
	}
	return ""
}
