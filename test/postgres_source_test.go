package test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// pgSourceTables are the inventory database's tables of the issue's
// done-when config.
var pgSourceTables = []string{"customers", "orders", "products"}

// TestPostgresSourceInventory runs the JDBC source config a Kafka Connect
// user would write, unchanged, in `sluice dev` against a database with three
// tables: exactly three tasks run, every row reaches inventory-<table>, rows
// inserted later follow, and after a SIGKILL and a restart on the same data
// directory every row is still there (duplicates allowed, none lost).
func TestPostgresSourceInventory(t *testing.T) {
	pg := pgtest.Start(t)
	for _, tb := range pgSourceTables {
		pg.Exec(t, "CREATE TABLE "+tb+" (id serial PRIMARY KEY, name text NOT NULL, created timestamptz NOT NULL DEFAULT now())")
	}
	insert := func(table string, n int) {
		pg.Exec(t, "INSERT INTO "+table+" (name) SELECT '"+table+"-' || g FROM generate_series(1, $1::int) g", n)
	}
	want := map[string]int{}
	for _, tb := range pgSourceTables {
		insert(tb, 100)
		want["inventory-"+tb] = 100
	}

	d := startDev(t, filepath.Join(t.TempDir(), "data"), "--offset-flush-interval-ms", "200")
	createConnector(t, d, "jdbc-source", map[string]string{
		"connector.class":          "JdbcSourceConnector",
		"tasks.max":                "5",
		"connection.url":           pg.JDBCURL(),
		"mode":                     "incrementing",
		"incrementing.column.name": "id",
		"topic.prefix":             "inventory-",
	})
	st := waitRunning(t, d, "jdbc-source")
	if len(st.Tasks) != 3 {
		t.Fatalf("3 tables with tasks.max 5: %d tasks, want 3: %+v", len(st.Tasks), st)
	}

	got := pgReadIDs(t, d, want)
	t.Logf("initial rows: %v", pgCounts(got))

	// Rows inserted later arrive within a poll interval (5 s by default).
	for _, tb := range pgSourceTables {
		insert(tb, 20)
		want["inventory-"+tb] += 20
	}
	start := time.Now()
	pgReadIDs(t, d, want)
	t.Logf("rows inserted later arrived after %v", time.Since(start))

	// Mid-stream: a large insert takes the task many batches of 100, and
	// the worker dies while it copies them.
	insert("orders", 5000)
	want["inventory-orders"] += 5000
	waitFor(t, d.Proc.FailIfExited, stateDeadline, 5*time.Millisecond, "part of the large insert copied", func() (bool, string) {
		n := pgTopicCount(t, d, "inventory-orders")
		return n > 130, fmt.Sprintf("%d records in inventory-orders", n)
	})
	atKill := pgTopicCount(t, d, "inventory-orders")
	d.Kill9()
	t.Logf("SIGKILL with about %d of %d records in inventory-orders", atKill, want["inventory-orders"])

	// Rows written while the worker is down arrive after the restart too.
	for _, tb := range pgSourceTables {
		insert(tb, 30)
		want["inventory-"+tb] += 30
	}
	d.restart()
	st = waitRunning(t, d, "jdbc-source")
	if len(st.Tasks) != 3 {
		t.Fatalf("after the restart: %d tasks, want 3", len(st.Tasks))
	}
	got = pgReadIDs(t, d, want)
	t.Logf("after the restart: %v", pgCounts(got))
}

// pgTopicCount is the number of records in a topic: the sum of its
// partitions' end offsets.
func pgTopicCount(t *testing.T, d *dev, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.kafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0 // not created yet
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// pgReadIDs reads the topics from the start until each holds every id from
// 1 to want[topic], failing at the deadline with what is missing. It
// returns how often each id was seen per topic.
func pgReadIDs(t *testing.T, d *dev, want map[string]int) map[string]map[int]int {
	t.Helper()
	topics := make([]string, 0, len(want))
	for tp := range want {
		topics = append(topics, tp)
	}
	cl := kafkatest.NewConsumer(t, []kgo.Opt{kgo.SeedBrokers(d.kafkaAddr)}, topics, kgo.AllowAutoTopicCreation())
	seen := map[string]map[int]int{}
	for _, tp := range topics {
		seen[tp] = map[int]int{}
	}
	complete := func() (bool, string) {
		var missing []string
		for tp, n := range want {
			if len(seen[tp]) < n {
				missing = append(missing, fmt.Sprintf("%s: %d of %d ids", tp, len(seen[tp]), n))
			}
		}
		return len(missing) == 0, strings.Join(missing, ", ")
	}
	deadline := time.Now().Add(2 * stateDeadline)
	for {
		if ok, _ := complete(); ok {
			break
		}
		if time.Now().After(deadline) {
			_, state := complete()
			t.Fatalf("rows missing in Kafka after %v: %s", 2*stateDeadline, state)
		}
		d.FailIfExited()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			id, err := pgRecordID(r.Value)
			if err != nil {
				t.Fatalf("record in %s: %v: %s", r.Topic, err, r.Value)
			}
			if id < 1 || id > want[r.Topic] {
				t.Fatalf("record in %s with id %d, beyond the %d rows inserted", r.Topic, id, want[r.Topic])
			}
			seen[r.Topic][id]++
		})
	}
	return seen
}

// pgRecordID reads the id of a JsonConverter value, with or without the
// schema envelope.
func pgRecordID(v []byte) (int, error) {
	var env struct {
		Schema  json.RawMessage `json:"schema"`
		Payload *struct {
			ID *int `json:"id"`
		} `json:"payload"`
		ID *int `json:"id"`
	}
	if err := json.Unmarshal(v, &env); err != nil {
		return 0, err
	}
	switch {
	case env.Payload != nil && env.Payload.ID != nil:
		if len(env.Schema) == 0 || string(env.Schema) == "null" {
			return 0, fmt.Errorf("value has a payload but no schema")
		}
		return *env.Payload.ID, nil
	case env.ID != nil:
		return *env.ID, nil
	}
	return 0, fmt.Errorf("value has no id")
}

// pgCounts summarises what pgReadIDs saw: distinct ids and records per topic.
func pgCounts(seen map[string]map[int]int) map[string]string {
	out := map[string]string{}
	for tp, ids := range seen {
		total := 0
		for _, n := range ids {
			total += n
		}
		out[tp] = fmt.Sprintf("%d ids in %d records", len(ids), total)
	}
	return out
}
