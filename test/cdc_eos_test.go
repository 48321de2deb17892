package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/pgtest"
)

// TestCDCExactlyOnceKill9 runs Debezium's PostgreSQL connector in a worker
// with exactly.once.source.support=enabled and the connector at
// exactly.once.support=required, kills the worker with SIGKILL while it
// streams (and, with transaction.boundary=connector, also during the
// snapshot), with writes going on the whole time, and reads the topic as a
// read_committed consumer: every row's history must be there exactly once,
// in commit order. Each write adds one to a row's v (or inserts a row at
// v=0), so a key's events must be one read or create, then updates whose v
// climbs by exactly one up to the row's final value: a lost change leaves a
// gap, a doubled one a repeat.
//
// With the default transaction.boundary=poll the snapshot's batches commit
// as they are read: a snapshot interrupted then is redone and its reads come
// again, as Debezium's do, so that variant is killed only while streaming.
func TestCDCExactlyOnceKill9(t *testing.T) {
	t.Run("connector boundaries, kill during snapshot and streaming", func(t *testing.T) {
		cdcExactlyOnceKill(t, "connector", true)
	})
	t.Run("poll boundaries, kill during streaming", func(t *testing.T) {
		cdcExactlyOnceKill(t, "poll", false)
	})
}

func cdcExactlyOnceKill(t *testing.T, boundary string, killInSnapshot bool) {
	const rows = 20000
	src := pgtest.Start(t)
	src.Exec(t, `CREATE TABLE counters (id int PRIMARY KEY, v int NOT NULL)`)
	src.Exec(t, fmt.Sprintf(`INSERT INTO counters SELECT g, 0 FROM generate_series(1, %d) g`, rows))
	slot := fmt.Sprintf("cdc_eos_%s_%d", boundary, time.Now().UnixNano()%1e9)
	dropSlotAfter(t, src, slot)

	c := startCluster(t, "cdc-eos-"+boundary)
	prefix := c.topic("eos")
	topic := prefix + ".public.counters"
	w := c.addWith("w1", eosWorker)
	createOn(t, w.rest, "cdc", cdcConnector(src, prefix, slot, map[string]string{
		"exactly.once.support":           "required",
		"transaction.boundary":           boundary,
		"snapshot.fetch.size":            "50",
		"max.batch.size":                 "20",
		"max.queue.size":                 "40",
		"value.converter.schemas.enable": "false",
		"key.converter.schemas.enable":   "false",
	}))

	writes := startCounterWrites(t, src, rows)
	restart := func(why string) {
		t.Helper()
		t.Logf("kill -9 %s, %d records in the log", why, topicSize(t, c.bootstrap, topic))
		w.Kill9()
		w = c.addWith("w1", eosWorker)
	}
	if killInSnapshot {
		waitFor(t, w.FailIfExited, stateDeadline, 10*time.Millisecond, "the snapshot under way", func() (bool, string) {
			n := topicSize(t, c.bootstrap, topic)
			return n > 0 && n < rows, fmt.Sprintf("%d records in the log", n)
		})
		restart("during the snapshot")
	}
	waitFor(t, w.FailIfExited, 2*stateDeadline, 200*time.Millisecond, "the snapshot committed and streaming", func() (bool, string) {
		n := committedCount(t, c.bootstrap, topic)
		return n > rows+50, fmt.Sprintf("%d committed records", n)
	})
	restart("while streaming")
	time.Sleep(2 * time.Second) // writes go on while the worker starts again
	restart("while streaming, right after a restart")
	waitFor(t, w.FailIfExited, 2*stateDeadline, 200*time.Millisecond, "streaming again", func() (bool, string) {
		before := writes.count()
		time.Sleep(time.Second)
		return writes.count() > before, "no writes"
	})
	final := writes.stop()

	waitFor(t, w.FailIfExited, 2*stateDeadline, time.Second, "every change exactly once", func() (bool, string) {
		return checkCounterHistory(t, c.bootstrap, topic, final)
	})
}

// counterWrites bumps and inserts counters rows on a goroutine of its own
// until stopped.
type counterWrites struct {
	mu    sync.Mutex
	n     int
	done  chan struct{}
	ended chan map[int]int
}

func (w *counterWrites) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// stop ends the writes and returns every row's final v.
func (w *counterWrites) stop() map[int]int {
	close(w.done)
	return <-w.ended
}

// startCounterWrites updates rows 1..20 (one, or three in one transaction)
// and inserts new rows above existing, with no pause, until stopped.
func startCounterWrites(t *testing.T, src *pgtest.Server, existing int) *counterWrites {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, src.URL())
	if err != nil {
		t.Fatal(err)
	}
	w := &counterWrites{done: make(chan struct{}), ended: make(chan map[int]int, 1)}
	failed := make(chan error, 1)
	go func() {
		defer conn.Close(ctx)
		next := existing + 1
		for i := 0; ; i++ {
			select {
			case <-w.done:
				w.ended <- readCounters(t, conn)
				return
			default:
			}
			var err error
			switch i % 5 {
			case 0:
				_, err = conn.Exec(ctx, `INSERT INTO counters VALUES ($1, 0)`, next)
				next++
			case 1:
				err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					for j := 0; j < 3; j++ {
						if _, err := tx.Exec(ctx, `UPDATE counters SET v = v + 1 WHERE id = $1`, 1+(i+j)%20); err != nil {
							return err
						}
					}
					return nil
				})
			default:
				_, err = conn.Exec(ctx, `UPDATE counters SET v = v + 1 WHERE id = $1`, 1+i%20)
			}
			if err != nil {
				failed <- err
				w.ended <- nil
				return
			}
			w.mu.Lock()
			w.n++
			w.mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		select {
		case err := <-failed:
			t.Errorf("writes: %v", err)
		default:
		}
	})
	return w
}

func readCounters(t *testing.T, conn *pgx.Conn) map[int]int {
	rows, err := conn.Query(context.Background(), `SELECT id, v FROM counters`)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var id, v int
		if err := rows.Scan(&id, &v); err != nil {
			t.Error(err)
			return nil
		}
		out[id] = v
	}
	return out
}

// readCommitted reads topic from the start as a read_committed consumer
// until it is idle.
func readCommitted(t *testing.T, bootstrap, topic string, each func(*kgo.Record)) {
	t.Helper()
	cl := kafkatest.NewConsumer(t, []kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...)}, []string{topic},
		kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	kafkatest.ConsumeUntilIdle(cl, 2, time.Now().Add(time.Minute), each)
	cl.Close()
}

func committedCount(t *testing.T, bootstrap, topic string) int {
	n := 0
	readCommitted(t, bootstrap, topic, func(*kgo.Record) { n++ })
	return n
}

// checkCounterHistory says whether the committed events of topic are each
// row's whole history exactly once: a read or a create, then updates that
// add one each, ending at the row's final value.
func checkCounterHistory(t *testing.T, bootstrap, topic string, final map[int]int) (bool, string) {
	if final == nil {
		t.Fatal("the writes failed")
	}
	type row struct{ ID, V int }
	last := map[int]int{}
	var problems []string
	readCommitted(t, bootstrap, topic, func(r *kgo.Record) {
		var ev struct {
			Op     string `json:"op"`
			Before *row   `json:"before"`
			After  *row   `json:"after"`
		}
		if err := json.Unmarshal(r.Value, &ev); err != nil || ev.After == nil {
			t.Fatalf("event at offset %d: %s (%v)", r.Offset, r.Value, err)
		}
		id, v := ev.After.ID, ev.After.V
		prev, seen := last[id]
		switch {
		case !seen && (ev.Op == "r" || ev.Op == "c"):
		case seen && ev.Op == "u" && v == prev+1:
		default:
			if len(problems) < 10 {
				problems = append(problems, fmt.Sprintf("row %d: op %s v=%d at offset %d after v=%d (seen before: %v)", id, ev.Op, v, r.Offset, prev, seen))
			}
		}
		last[id] = v
	})
	if len(problems) > 0 {
		t.Fatalf("the committed history is not exact:\n%s", strings.Join(problems, "\n"))
	}
	for id, v := range final {
		if got, ok := last[id]; !ok || got != v {
			return false, fmt.Sprintf("row %d: the topic's last value is %d (present %v), the table's %d; %d of %d rows in the topic", id, got, ok, v, len(last), len(final))
		}
	}
	if len(last) != len(final) {
		return false, fmt.Sprintf("%d rows in the topic, %d in the table", len(last), len(final))
	}
	return true, ""
}
