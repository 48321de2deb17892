//go:build confluent

package confluent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/pgtest"
	"github.com/sluice-io/sluice/internal/proctest"
)

// confluentKafka is the client the test installs: the version whose
// serializers Sluice's converters are checked against.
const confluentKafka = "confluent-kafka[avro,schemaregistry,protobuf,json]==2.16.1"

var sluiceBin string

func TestMain(m *testing.M) { os.Exit(proctest.Main(m, "sluice-confluent-bin-", &sluiceBin)) }

const (
	startDeadline = 90 * time.Second
	dataDeadline  = 2 * time.Minute
)

var httpClient = &http.Client{Timeout: 15 * time.Second}

func TestConfluentSerializers(t *testing.T) {
	seeds := kafkatest.Bootstrap()
	if len(seeds) == 0 {
		t.Fatalf("%s is not set: this test needs Apache Kafka (test/kafka/kafka.sh start PORT DIR)", kafkatest.BootstrapEnv)
	}
	bootstrap := strings.Join(seeds, ",")
	python := virtualenv(t)
	pg := pgtest.Start(t)

	registryAddr := proctest.FreeAddr(t)
	registry := "http://" + registryAddr
	reg := proctest.Start(t, sluiceBin, "schema-registry", proctest.Options{ExitDeadline: time.Minute, LogTailOnFailure: true},
		"schema-registry", "--bootstrap", bootstrap, "--addr", registryAddr)
	waitFor(t, "the schema registry answering", startDeadline, reg.FailIfExited, func() (bool, string) {
		code, body, err := proctest.Send(httpClient, "GET", registry+"/subjects", "")
		return err == nil && code == 200, fmt.Sprintf("%d %s %v", code, body, err)
	})
	rest, bind := proctest.FreeAddr(t), proctest.FreeAddr(t)
	worker := proctest.Start(t, sluiceBin, "worker", proctest.Options{ExitDeadline: time.Minute, LogTailOnFailure: true},
		"worker", "--cluster", kafkatest.Unique("confluent"), "--bootstrap", bootstrap, "--rest-addr", rest,
		"--worker-id", "w1", "--bind", bind, "--offset-flush-interval-ms", "200")
	if err := proctest.WaitHealthy(httpClient, rest, startDeadline, 100*time.Millisecond, worker.FailIfExited); err != nil {
		t.Fatal(err)
	}
	w := &sluice{t: t, rest: rest, proc: worker}

	t.Run("ConfluentProducesSluiceSinks", func(t *testing.T) {
		w.t = t
		sinksDecodeConfluent(t, w, python, bootstrap, registry, pg)
	})
	t.Run("SluiceSourceConfluentReads", func(t *testing.T) {
		w.t = t
		confluentReadsSluice(t, w, python, bootstrap, registry, pg)
	})
}

// produced is one record as produce.py wrote it.
type produced struct {
	ID     int64   `json:"id"`
	Name   string  `json:"name"`
	Amount float64 `json:"amount"`
	Active bool    `json:"active"`
	Small  int32   `json:"small"`
	Price  string  `json:"price"`
	Born   string  `json:"born"`
	At     int64   `json:"at"`
	Note   *string `json:"note"`
}

func sinksDecodeConfluent(t *testing.T, w *sluice, python, bootstrap, registry string, pg *pgtest.Server) {
	avroTopic, jsonTopic, protoTopic := kafkatest.Unique("cf-avro"), kafkatest.Unique("cf-json"), kafkatest.Unique("cf-proto")
	out := runPython(t, python, "produce.py", "--bootstrap", bootstrap, "--registry", registry,
		"--avro-topic", avroTopic, "--json-topic", jsonTopic, "--proto-topic", protoTopic)
	var rows []produced
	for _, line := range nonEmptyLines(out) {
		var r produced
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("produce.py printed %q: %v", line, err)
		}
		rows = append(rows, r)
	}
	if len(rows) != 3 {
		t.Fatalf("produce.py produced %d records, want 3:\n%s", len(rows), out)
	}

	dir := t.TempDir()
	target := pg.NewDatabase(t, "cf_target")
	for _, c := range []struct{ topic, converter string }{
		{avroTopic, "io.confluent.connect.avro.AvroConverter"},
		{jsonTopic, "io.confluent.connect.json.JsonSchemaConverter"},
		{protoTopic, "io.confluent.connect.protobuf.ProtobufConverter"},
	} {
		conv := map[string]string{"value.converter": c.converter, "value.converter.schema.registry.url": registry,
			"key.converter": "org.apache.kafka.connect.storage.StringConverter"}
		w.create(c.topic+"-file", with(conv, map[string]string{
			"connector.class": "FileStreamSink", "topics": c.topic, "file": filepath.Join(dir, c.topic+".txt"),
		}))
		w.create(c.topic+"-jdbc", with(conv, map[string]string{
			"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": c.topic, "connection.url": target,
			"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id", "auto.create": "true",
			"table.name.format": strings.ReplaceAll(c.topic, "-", "_"),
		}))
	}

	// FileStream: one JSON object per record, fields as the converters
	// decoded them.
	for _, topic := range []string{avroTopic, jsonTopic, protoTopic} {
		lines := w.waitLines(filepath.Join(dir, topic+".txt"), len(rows))
		for i, line := range lines {
			var got map[string]any
			dec := json.NewDecoder(strings.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("%s line %d %q: %v", topic, i, line, err)
			}
			r := rows[i]
			want := map[string]string{"id": fmt.Sprint(r.ID), "name": r.Name, "amount": jsonFloat(r.Amount), "active": fmt.Sprint(r.Active), "note": noteText(r.Note)}
			switch topic {
			case avroTopic:
				want["small"] = fmt.Sprint(r.Small)
				want["price"] = r.Price
				want["born"] = r.Born + "T00:00:00Z"
				want["at"] = time.UnixMilli(r.At).UTC().Format(time.RFC3339Nano)
			case protoTopic:
				want["at"] = time.UnixMilli(r.At).UTC().Format(time.RFC3339Nano)
				if r.Note == nil {
					want["note"] = "" // proto3 strings have no null
				}
			}
			if len(got) != len(want) {
				t.Errorf("%s line %d has fields %v, want %v", topic, i, keys(got), keys(want))
			}
			for k, v := range want {
				if g := fmt.Sprint(got[k]); g != v && !(got[k] == nil && v == "<nil>") {
					t.Errorf("%s line %d field %s = %q, want %q (line %s)", topic, i, k, g, v, line)
				}
			}
		}
	}

	// JDBC sink: the rows in PostgreSQL, each column as PostgreSQL's text.
	ctx, cancel := context.WithTimeout(context.Background(), dataDeadline)
	defer cancel()
	conn, err := pgx.Connect(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	avroTable, jsonTable, protoTable := strings.ReplaceAll(avroTopic, "-", "_"), strings.ReplaceAll(jsonTopic, "-", "_"), strings.ReplaceAll(protoTopic, "-", "_")
	avroRows := w.waitRows(conn, fmt.Sprintf(`SELECT id::text, name, amount::text, active::text, small::text, price::text, born::text, at::text, coalesce(note, '<nil>') FROM %q ORDER BY id`, avroTable), len(rows))
	jsonRows := w.waitRows(conn, fmt.Sprintf(`SELECT id::text, name, amount::text, active::text, coalesce(note, '<nil>') FROM %q ORDER BY id`, jsonTable), len(rows))
	protoRows := w.waitRows(conn, fmt.Sprintf(`SELECT id::text, name, amount::text, active::text, at::text, coalesce(note, '<nil>') FROM %q ORDER BY id`, protoTable), len(rows))
	for i, r := range rows {
		at := time.UnixMilli(r.At).UTC().Format("2006-01-02 15:04:05.999")
		wantAvro := []string{fmt.Sprint(r.ID), r.Name, pgFloat(r.Amount), fmt.Sprint(r.Active), fmt.Sprint(r.Small), r.Price, r.Born, at, noteText(r.Note)}
		if fmt.Sprint(avroRows[i]) != fmt.Sprint(wantAvro) {
			t.Errorf("avro row %d in PostgreSQL: %q, want %q", i, avroRows[i], wantAvro)
		}
		wantJSON := []string{fmt.Sprint(r.ID), r.Name, pgFloat(r.Amount), fmt.Sprint(r.Active), noteText(r.Note)}
		if fmt.Sprint(jsonRows[i]) != fmt.Sprint(wantJSON) {
			t.Errorf("json row %d in PostgreSQL: %q, want %q", i, jsonRows[i], wantJSON)
		}
		protoNote := noteText(r.Note)
		if r.Note == nil {
			protoNote = ""
		}
		wantProto := []string{fmt.Sprint(r.ID), r.Name, pgFloat(r.Amount), fmt.Sprint(r.Active), at, protoNote}
		if fmt.Sprint(protoRows[i]) != fmt.Sprint(wantProto) {
			t.Errorf("protobuf row %d in PostgreSQL: %q, want %q", i, protoRows[i], wantProto)
		}
	}
}

// sourceTable is what the JDBC source reads, with a column of each type
// all three formats carry through to Confluent's deserializers.
var sourceRows = []string{
	`('Ann', true, '2024-01-02 03:04:05.678', 'first', 9007199254740993)`,
	`('Bob O''Hara', false, '1969-12-31 23:59:59.999', NULL, -1)`,
	`('Çé 名前', true, '1970-01-01 00:00:00', '', 0)`,
}

func confluentReadsSluice(t *testing.T, w *sluice, python, bootstrap, registry string, pg *pgtest.Server) {
	pg.Exec(t, `CREATE TABLE cf_rows (id serial PRIMARY KEY, name text NOT NULL, flag boolean NOT NULL, at timestamp(3) NOT NULL, note text, big bigint NOT NULL)`)
	for _, r := range sourceRows {
		pg.Exec(t, `INSERT INTO cf_rows (name, flag, at, note, big) VALUES `+r)
	}
	type want struct {
		id   int64
		name string
		flag bool
		at   int64
		note *string
		big  int64
	}
	var wants []want
	conn := pg.Conn(t)
	rs, err := conn.Query(context.Background(), `SELECT id, name, flag, (extract(epoch from at) * 1000)::bigint, note, big FROM cf_rows ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var x want
		var id int32
		if err := rs.Scan(&id, &x.name, &x.flag, &x.at, &x.note, &x.big); err != nil {
			t.Fatal(err)
		}
		x.id = int64(id)
		wants = append(wants, x)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}

	for _, f := range []struct {
		format, converter string
	}{
		{"avro", "io.confluent.connect.avro.AvroConverter"},
		{"json", "io.confluent.connect.json.JsonSchemaConverter"},
		{"protobuf", "io.confluent.connect.protobuf.ProtobufConverter"},
	} {
		prefix := kafkatest.Unique("cf-src-"+f.format) + "-"
		w.create(prefix+"source", map[string]string{
			"connector.class": "JdbcSourceConnector", "connection.url": pg.JDBCURL(), "table.whitelist": "cf_rows",
			"mode": "incrementing", "incrementing.column.name": "id", "topic.prefix": prefix, "poll.interval.ms": "200",
			"value.converter": f.converter, "value.converter.schema.registry.url": registry,
		})
		// The Protobuf message ProtobufConverter registers for the table:
		// the columns in order, numbered from 1 (see ProtobufData).
		protoFields := `[["id","int32",1],["name","string",2],["flag","bool",3],["at","google.protobuf.Timestamp",4],["note","string",5],["big","int64",6]]`
		out := runPython(t, python, "consume.py", "--bootstrap", bootstrap, "--registry", registry, "--topic", prefix+"cf_rows",
			"--format", f.format, "--count", fmt.Sprint(len(wants)), "--proto-fields", protoFields)
		lines := nonEmptyLines(out)
		if len(lines) != len(wants) {
			t.Fatalf("%s: Confluent's deserializer read %d records, want %d:\n%s", f.format, len(lines), len(wants), out)
		}
		for i, line := range lines {
			var got map[string]any
			dec := json.NewDecoder(strings.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("%s: consume.py printed %q: %v", f.format, line, err)
			}
			x := wants[i]
			note := "<nil>"
			if x.note != nil {
				note = *x.note
			} else if f.format == "protobuf" {
				note = "" // proto3 strings have no null: unset reads as ""
			}
			fields := map[string]string{"id": fmt.Sprint(x.id), "name": x.name, "flag": fmt.Sprint(x.flag), "at": fmt.Sprint(x.at), "note": note, "big": fmt.Sprint(x.big)}
			if len(got) != len(fields) {
				t.Errorf("%s record %d has fields %v, want %v", f.format, i, keys(got), keys(fields))
			}
			for k, v := range fields {
				g := fmt.Sprint(got[k])
				if got[k] == nil {
					g = "<nil>"
				}
				if g != v {
					t.Errorf("%s record %d field %s = %s, want %s (record %s)", f.format, i, k, g, v, line)
				}
			}
		}
	}
}

// virtualenv creates (once per machine: it is kept in the user cache
// directory, or SLUICE_CONFLUENT_VENV) a Python virtualenv with
// confluent-kafka installed, and returns its python.
func virtualenv(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SLUICE_CONFLUENT_VENV")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir = filepath.Join(cache, "sluice", "confluent-kafka-2.16.1")
	}
	python := filepath.Join(dir, "bin", "python")
	marker := filepath.Join(dir, "installed")
	if _, err := os.Stat(marker); err == nil {
		return python
	}
	if out, err := exec.Command("python3", "-m", "venv", "--clear", dir).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv %s: %v\n%s", dir, err, out)
	}
	if out, err := exec.Command(python, "-m", "pip", "install", "-q", confluentKafka).CombinedOutput(); err != nil {
		t.Fatalf("pip install %s: %v\n%s", confluentKafka, err, out)
	}
	if err := os.WriteFile(marker, []byte(confluentKafka+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return python
}

func runPython(t *testing.T, python, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command(python, append([]string{filepath.Join("testdata", script)}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", script, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// sluice is the worker under test.
type sluice struct {
	t    *testing.T
	rest string
	proc *proctest.Proc
}

func (w *sluice) create(name string, config map[string]string) {
	w.t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "config": config})
	code, resp, err := proctest.Send(httpClient, "POST", "http://"+w.rest+"/connectors", string(body))
	if err != nil || code != http.StatusCreated {
		w.t.Fatalf("POST /connectors %s: %d %s %v", name, code, resp, err)
	}
}

// failedTasks returns the traces of failed connectors and tasks, so that a
// wait that times out says why.
func (w *sluice) failedTasks() string {
	code, body, err := proctest.Send(httpClient, "GET", "http://"+w.rest+"/connectors?expand=status", "")
	if err != nil || code != 200 {
		return fmt.Sprintf("status: %d %v", code, err)
	}
	if bytes.Contains(body, []byte(`"FAILED"`)) {
		return string(body)
	}
	return ""
}

func (w *sluice) waitLines(path string, n int) []string {
	w.t.Helper()
	var lines []string
	waitFor(w.t, fmt.Sprintf("%d lines in %s", n, path), dataDeadline, w.proc.FailIfExited, func() (bool, string) {
		b, _ := os.ReadFile(path)
		lines = nonEmptyLines(string(b))
		return len(lines) >= n, fmt.Sprintf("%d lines; %s", len(lines), w.failedTasks())
	})
	return lines
}

func (w *sluice) waitRows(conn *pgx.Conn, query string, n int) [][]string {
	w.t.Helper()
	var rows [][]string
	waitFor(w.t, fmt.Sprintf("%d rows of %s", n, query), dataDeadline, w.proc.FailIfExited, func() (bool, string) {
		rows = nil
		rs, err := conn.Query(context.Background(), query)
		if err != nil {
			return false, err.Error() + "; " + w.failedTasks()
		}
		defer rs.Close()
		for rs.Next() {
			vals, err := rs.Values()
			if err != nil {
				return false, err.Error()
			}
			row := make([]string, len(vals))
			for i, v := range vals {
				row[i] = fmt.Sprint(v)
			}
			rows = append(rows, row)
		}
		return len(rows) >= n, fmt.Sprintf("%d rows; %s", len(rows), w.failedTasks())
	})
	return rows
}

func waitFor(t *testing.T, what string, timeout time.Duration, alive func(), cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		alive()
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no %s within %v; last: %s", what, timeout, last)
}

func nonEmptyLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			out = append(out, line)
		}
	}
	return out
}

func with(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func noteText(n *string) string {
	if n == nil {
		return "<nil>"
	}
	return *n
}

// jsonFloat is a double as the FileStream sink's JSON writes it.
func jsonFloat(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// pgFloat is a double precision column's text in PostgreSQL.
func pgFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
