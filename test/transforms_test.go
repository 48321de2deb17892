package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/pgtest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A FileStreamSource with a chain of Connect's own transforms, end to end
// through a real `sluice dev`: HoistField makes each line a struct field,
// InsertField adds a static field, RegexRouter renames the topic, and a
// Filter negated on TopicNameMatches keeps what reached the renamed topic.
// A FileStreamSink of the renamed topic writes every record, transformed.
func TestFileSourceTransformChain(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	writeLines(t, in, 200)
	d := startDev(t, filepath.Join(dir, "data"))
	src := fileSource(in, "fs-lines")
	for k, v := range map[string]string{
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "false",
		"transforms":                     "hoist,insert,route,keep",
		"transforms.hoist.type":          "org.apache.kafka.connect.transforms.HoistField$Value",
		"transforms.hoist.field":         "line",
		"transforms.insert.type":         "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.insert.static.field": "origin",
		"transforms.insert.static.value": "file",
		"transforms.route.type":          "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.route.regex":         "fs-(.*)",
		"transforms.route.replacement":   "renamed-$1",
		"transforms.keep.type":           "org.apache.kafka.connect.transforms.Filter",
		"transforms.keep.predicate":      "renamed",
		"transforms.keep.negate":         "true",
		"predicates":                     "renamed",
		"predicates.renamed.type":        "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
		"predicates.renamed.pattern":     "renamed-.*",
	} {
		src[k] = v
	}
	createConnector(t, d, "chain-source", src)
	createConnector(t, d, "chain-sink", fileSink(out, "renamed-lines"))
	waitFor(t, d.Proc.FailIfExited, stateDeadline, 100*time.Millisecond, "200 transformed lines", func() (bool, string) {
		n := countLines(readFile(t, out))
		return n >= 200, strings.TrimSpace(string(readFile(t, out)))
	})
	lines := strings.Split(strings.TrimSpace(string(readFile(t, out))), "\n")
	if len(lines) != 200 {
		t.Fatalf("%d lines in the sink's file, want 200", len(lines))
	}
	for i, l := range lines {
		var v map[string]string
		if err := json.Unmarshal([]byte(l), &v); err != nil || v["origin"] != "file" || !strings.HasPrefix(v["line"], "line ") {
			t.Fatalf("line %d: %s (%v): want the hoisted line and the inserted field", i, l, err)
		}
	}
}

// A sink's transform that fails on a record (Cast of "x" to int32) sends
// that record to the dead letter queue, as it was consumed, with Connect's
// headers naming the stage TRANSFORMATION and the transform's class; the
// other records are cast and written.
func TestSinkTransformFailureGoesToDeadLetterQueue(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	if err := os.WriteFile(in, []byte("1\n2\nx\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDev(t, filepath.Join(dir, "data"))
	createConnector(t, d, "nums-source", fileSource(in, "nums"))
	sink := fileSink(out, "nums")
	for k, v := range map[string]string{
		"transforms":                                    "cast",
		"transforms.cast.type":                          "org.apache.kafka.connect.transforms.Cast$Value",
		"transforms.cast.spec":                          "int32",
		"errors.tolerance":                              "all",
		"errors.deadletterqueue.topic.name":             "nums-dlq",
		"errors.deadletterqueue.context.headers.enable": "true",
	} {
		sink[k] = v
	}
	createConnector(t, d, "nums-sink", sink)
	waitFor(t, d.Proc.FailIfExited, stateDeadline, 100*time.Millisecond, "the three numbers written", func() (bool, string) {
		got := string(readFile(t, out))
		return got == "1\n2\n4\n", got
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.kafkaAddr), kgo.ConsumeTopics("nums-dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), stateDeadline)
	defer cancel()
	var rec *kgo.Record
	for rec == nil {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("no record in the dead letter queue")
		}
		if recs := fs.Records(); len(recs) > 0 {
			rec = recs[0]
		}
	}
	headers := map[string]string{}
	for _, h := range rec.Headers {
		headers[h.Key] = string(h.Value)
	}
	if string(rec.Value) != "x" || headers["__connect.errors.stage"] != "TRANSFORMATION" ||
		headers["__connect.errors.class.name"] != "org.apache.kafka.connect.transforms.Cast$Value" || headers["__connect.errors.topic"] != "nums" {
		t.Fatalf("dead letter record %q with headers %v", rec.Value, headers)
	}
}

// A JDBC sink with ReplaceField (drop a field, rename another) and
// ValueToKey (the id becomes the key) upserts by the new key on a real
// PostgreSQL: a second version of a row replaces the first, and the
// dropped field never reaches the table.
func TestJdbcSinkTransformsUpsertByTheNewKey(t *testing.T) {
	pg := pgtest.Start(t)
	d := startDev(t, filepath.Join(t.TempDir(), "data"))
	envelope := func(id int, name, secret string) string {
		return fmt.Sprintf(`{"schema":{"type":"struct","name":"person","optional":false,"fields":[`+
			`{"field":"id","type":"int32","optional":false},{"field":"name","type":"string","optional":false},`+
			`{"field":"secret","type":"string","optional":true}]},"payload":{"id":%d,"name":%q,"secret":%q}}`, id, name, secret)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.kafkaAddr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), stateDeadline)
	defer cancel()
	for _, v := range []string{envelope(1, "ann", "s1"), envelope(2, "bob", "s2"), envelope(1, "anna", "s3")} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "people", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	createConnector(t, d, "people-sink", map[string]string{
		"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": "people",
		"connection.url": pg.JDBCURL(), "insert.mode": "upsert", "pk.mode": "record_key", "pk.fields": "id",
		"auto.create": "true", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "true",
		"transforms":                     "fields,key",
		"transforms.fields.type":         "org.apache.kafka.connect.transforms.ReplaceField$Value",
		"transforms.fields.exclude":      "secret",
		"transforms.fields.renames":      "name:full_name",
		"transforms.key.type":            "org.apache.kafka.connect.transforms.ValueToKey",
		"transforms.key.fields":          "id",
	})
	conn := pg.Conn(t)
	waitFor(t, d.Proc.FailIfExited, stateDeadline, 200*time.Millisecond, "the people table upserted by id", func() (bool, string) {
		rows, err := conn.Query(ctx, `SELECT id, full_name FROM people ORDER BY id`)
		if err != nil {
			return false, err.Error()
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var id int
			var name string
			if err := rows.Scan(&id, &name); err != nil {
				return false, err.Error()
			}
			got = append(got, fmt.Sprintf("%d=%s", id, name))
		}
		s := strings.Join(got, ",")
		return s == "1=anna,2=bob", s
	})
	var secretCols int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'people' AND column_name = 'secret'`).Scan(&secretCols); err != nil || secretCols != 0 {
		t.Fatalf("the excluded field reached the table: %d columns named secret, %v", secretCols, err)
	}
}
