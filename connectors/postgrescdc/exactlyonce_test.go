package postgrescdc

import (
	"strings"
	"sync"
	"testing"

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
// the snapshot's last record only, and after the last record of each
// PostgreSQL transaction, which it queues only once the COMMIT is decoded.
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
	srv.Exec(t, `DELETE FROM items WHERE id = 1`)                          // a delete and its tombstone
	got := h.poll(5)
	if d := strings.Join(describe(got), "|"); d != "srv.public.items c 6|srv.public.items c 7|srv.public.items c 8|srv.public.items d 1|srv.public.items tombstone 1" {
		t.Fatalf("changes = %s", d)
	}
	if asked := bc.asked(); len(asked) != 2 || asked[0] != got[2] || asked[1] != got[4] {
		t.Fatalf("commits asked after %v, want after the last record of each transaction (c 8, tombstone 1)", describe(asked))
	}
	h.quiet()
}
