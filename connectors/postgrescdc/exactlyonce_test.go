package postgrescdc

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/internal/pgtest"
)

func TestExactlyOnceDeclarations(t *testing.T) {
	var c connectors.Connector = &Connector{}
	eos, ok := c.(connectors.ExactlyOnceSource)
	if !ok || !eos.ExactlyOnceSupport(nil) {
		t.Error("the connector does not declare exactly-once support, which Debezium's does (SUPPORTED)")
	}
	tb, ok := c.(connectors.TransactionBoundaryDefiner)
	if !ok || !tb.CanDefineTransactionBoundaries(nil) {
		t.Error("the connector cannot define transaction boundaries")
	}
}

// boundaryContext is a SourceContext whose TransactionContext records the
// records the task asked to commit after.
type boundaryContext struct {
	*conformance.SourceContext
	mu          sync.Mutex
	commitAfter []*connectors.SourceRecord
}

func (b *boundaryContext) TransactionContext() connectors.TransactionContext { return b }
func (b *boundaryContext) CommitTransaction()                                { panic("not used by the connector") }
func (b *boundaryContext) AbortTransaction()                                 { panic("not used by the connector") }
func (b *boundaryContext) AbortTransactionAfter(*connectors.SourceRecord) {
	panic("not used by the connector")
}
func (b *boundaryContext) CommitTransactionAfter(rec *connectors.SourceRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.commitAfter = append(b.commitAfter, rec)
}

func (b *boundaryContext) asked() []*connectors.SourceRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.commitAfter
	b.commitAfter = nil
	return out
}

// With transaction.boundary=connector the task asks for a commit after
// the snapshot's last record only, and after the last record of a
// PostgreSQL transaction, which it queues only once the COMMIT is decoded:
// once per Poll, after the last whole transaction of its batch, so that a
// Kafka transaction holds one or more whole PostgreSQL transactions and a
// stream of small ones costs one commit per poll, not one each.
func TestConnectorDefinedTransactionsFollowThoseOfPostgreSQL(t *testing.T) {
	srv := pgtest.Start(t)
	srv.Exec(t, `CREATE TABLE items (id int PRIMARY KEY)`)
	srv.Exec(t, `INSERT INTO items SELECT g FROM generate_series(1, 5) g`)
	h := newHarness(t, cdcConfig(srv))
	bc := &boundaryContext{SourceContext: h.sc}
	h.tk = &Task{}
	if err := h.tk.Open(t.Context(), bc, h.cfg); err != nil {
		t.Fatal(err)
	}
	snap := h.poll(5)
	if asked := bc.asked(); len(asked) != 1 || asked[0] != snap[4] {
		t.Fatalf("commits asked after %v, want after the snapshot's last record only", describe(asked))
	}

	srv.Exec(t, `INSERT INTO items SELECT g FROM generate_series(6, 8) g`) // one transaction
	got := h.poll(3)
	if asked := bc.asked(); len(asked) != 1 || asked[0] != got[2] {
		t.Fatalf("commits asked after %v, want after the transaction's last record (c 8)", describe(asked))
	}
	srv.Exec(t, `DELETE FROM items WHERE id = 1`) // a delete and its tombstone
	got = h.poll(2)
	if asked := bc.asked(); len(asked) != 1 || asked[0] != got[1] {
		t.Fatalf("commits asked after %v, want after the tombstone", describe(asked))
	}

	// Three transactions of two rows, queued before the next Poll: one
	// request, after the last record (one per transaction before: tried).
	srv.Exec(t, `INSERT INTO items VALUES (9), (10)`)
	srv.Exec(t, `INSERT INTO items VALUES (11), (12)`)
	srv.Exec(t, `INSERT INTO items VALUES (13), (14)`)
	for deadline := time.Now().Add(30 * time.Second); len(h.tk.queue) < 6; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d records queued, want 6", len(h.tk.queue))
		}
	}
	var all []*connectors.SourceRecord
	polls := 0
	for deadline := time.Now().Add(30 * time.Second); len(all) < 6 && time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		recs, err := h.tk.Poll(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 0 {
			polls++
			all = append(all, recs...)
		}
	}
	if d := strings.Join(describe(all), "|"); d != "srv.public.items c 9|srv.public.items c 10|srv.public.items c 11|srv.public.items c 12|srv.public.items c 13|srv.public.items c 14" {
		t.Fatalf("changes = %s", d)
	}
	if asked := bc.asked(); polls != 1 || len(asked) != 1 || asked[0] != all[5] {
		t.Fatalf("commits asked after %v in %d polls, want one poll and one commit, after c 14", describe(asked), polls)
	}
	h.quiet()
}
