package datagen_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/connectors/datagen"
)

// txnRecorder is a TransactionContext that records the seq of each record
// a commit is asked after.
type txnRecorder struct{ after []int64 }

func (r *txnRecorder) CommitTransaction() { panic("datagen commits after a record") }
func (r *txnRecorder) AbortTransaction()  { panic("datagen never aborts") }
func (r *txnRecorder) CommitTransactionAfter(rec *connectors.SourceRecord) {
	r.after = append(r.after, rec.SourceOffset()[datagen.SeqField].(int64))
}
func (r *txnRecorder) AbortTransactionAfter(*connectors.SourceRecord) { panic("datagen never aborts") }

type txnContext struct {
	*conformance.SourceContext
	txn *txnRecorder
}

func (c txnContext) TransactionContext() connectors.TransactionContext { return c.txn }

// With transaction.boundary=connector a Datagen task commits after every
// transaction.size records, across polls, and after its last record.
func TestDatagenDefinesTransactionsOfTransactionSize(t *testing.T) {
	c := &datagen.Connector{}
	cfg := map[string]string{datagen.TopicKey: "t", datagen.MaxRecordsKey: "150", datagen.BatchSizeKey: "100", datagen.TransactionSizeKey: "70"}
	if !c.ExactlyOnceSupport(cfg) || !c.CanDefineTransactionBoundaries(cfg) {
		t.Fatal("datagen does not declare exactly once and boundaries")
	}
	task := c.NewTask()
	rec := &txnRecorder{}
	if err := task.Open(context.Background(), txnContext{conformance.NewSourceContext(t, "dg", 0), rec}, cfg); err != nil {
		t.Fatal(err)
	}
	defer task.Close()
	for range 3 {
		if _, err := task.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if want := []int64{69, 139, 149}; !reflect.DeepEqual(rec.after, want) {
		t.Fatalf("commits after seq %v, want %v", rec.after, want)
	}
}
