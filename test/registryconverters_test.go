package test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// TestAvroPipelineThroughDevRegistry is the README's Avro pipeline: a JDBC
// source writes a PostgreSQL table as Avro through the Schema Registry
// `sluice dev` serves, and a JDBC sink writes it into another database,
// the same rows. Records on the topic that are not Avro of a registered
// schema (an unknown schema id, bytes without the frame) go to the sink's
// dead letter queue with errors.tolerance=all, with the reason in their
// headers, and the good rows still arrive. A schema the registry finds
// incompatible is refused with the subject named.
func TestAvroPipelineThroughDevRegistry(t *testing.T) {
	src := pgtest.Start(t)
	src.Exec(t, `CREATE TABLE accounts (id serial PRIMARY KEY, owner text NOT NULL, balance numeric(12,2), opened date, seen timestamp(3), active boolean)`)
	src.Exec(t, `INSERT INTO accounts (owner, balance, opened, seen, active) VALUES
		('Ann', 1234.50, '1980-02-29', '2024-01-02 03:04:05.678', true),
		('Bob O''Hara', -0.01, NULL, NULL, false)`)
	target := src.NewDatabase(t, "avro_target")

	d := startDev(t, filepath.Join(t.TempDir(), "data"))
	registry := "http://" + d.registryAddr
	topic, dlq := "avro-accounts", "avro-accounts-dlq"
	createOnePartitionTopic(t, d.kafkaAddr, topic)
	// Written before the source: a frame naming schema id 424242, which
	// the registry does not have, and bytes that are no frame at all.
	produceValues(t, d.kafkaAddr, topic, []string{"\x00\x00\x06\x79\x32\x02", "plain text"})

	avro := map[string]string{
		"value.converter":                     "io.confluent.connect.avro.AvroConverter",
		"value.converter.schema.registry.url": registry,
	}
	createConnector(t, d, "avro-source", with(avro, map[string]string{
		"connector.class": "JdbcSourceConnector", "connection.url": src.JDBCURL(), "table.whitelist": "accounts",
		"mode": "incrementing", "incrementing.column.name": "id", "topic.prefix": "avro-", "poll.interval.ms": "200",
	}))
	createConnector(t, d, "avro-sink", with(avro, map[string]string{
		"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": topic, "connection.url": target,
		"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id", "auto.create": "true", "table.name.format": "accounts",
		"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.context.headers.enable": "true",
	}))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srcConn, err := pgx.Connect(ctx, src.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer srcConn.Close(context.Background())
	dstConn, err := pgx.Connect(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer dstConn.Close(context.Background())
	cols := []string{"id", "owner", "balance", "opened", "seen", "active"}
	want, err := dumpTable(srcConn, "accounts", cols)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, d.FailIfExited, 2*stateDeadline, 200*time.Millisecond, "the accounts copied through Avro", func() (bool, string) {
		got, err := dumpTable(dstConn, "accounts", cols)
		if err != nil {
			return false, err.Error() + " " + failedTask(t, d, "avro-sink")
		}
		return got == want, "got\n" + got + "want\n" + want + failedTask(t, d, "avro-sink")
	})

	// The registry holds the source's schema under the topic's subject.
	code, body := mustSend(t, "GET", registry+"/subjects/"+topic+"-value/versions/1", "")
	if code != 200 || !strings.Contains(string(body), `"schemaType"`) && !strings.Contains(string(body), `\"type\":\"record\"`) {
		t.Errorf("subject %s-value: %d %s", topic, code, body)
	}

	// A schema the subject's compatibility (BACKWARD, the default) refuses:
	// a new required field without a default cannot read the old records.
	// AvroConverter reports the registry's 409 with the subject.
	conv, err := converters.New("AvroConverter")
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.Configure(map[string]string{"schema.registry.url": registry}, false); err != nil {
		t.Fatal(err)
	}
	changed := connectors.StructSchema("accounts", connectors.Field{Name: "id", Schema: connectors.Int32Schema},
		connectors.Field{Name: "iban", Schema: connectors.StringSchema})
	_, err = conv.FromConnect(topic, changed, connectors.NewStruct(changed).MustSet("id", int32(9)).MustSet("iban", "DE00"))
	if err == nil || !strings.Contains(err.Error(), topic+"-value") || !strings.Contains(err.Error(), "409") {
		t.Errorf("an incompatible schema for %s-value: %v", topic, err)
	}

	// Both bad records are in the dead letter queue, with the reason.
	cl := newKafkaClient(t, d.kafkaAddr, kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	reasons := map[string]string{}
	waitFor(t, d.FailIfExited, stateDeadline, 100*time.Millisecond, "two records in the dead letter queue", func() (bool, string) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "__connect.errors.exception.message" {
					reasons[string(r.Value)] = string(h.Value)
				}
			}
		})
		return len(reasons) == 2, strings.Join(keysOf(reasons), ", ")
	})
	if r := reasons["\x00\x00\x06\x79\x32\x02"]; !strings.Contains(r, "424242") {
		t.Errorf("the unknown id's record went to the DLQ with %q, which does not name id 424242", r)
	}
	if r := reasons["plain text"]; !strings.Contains(r, "magic byte") {
		t.Errorf("the unframed record went to the DLQ with %q", r)
	}
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

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
