package connectors

// ExactlyOnceSource is implemented by source connectors that can say
// whether their tasks deliver exactly once when the worker runs them with
// exactly.once.source.support=enabled (Connect's
// SourceConnector.exactlyOnceSupport). A connector that does not implement
// it is unknown: exactly.once.support=required is refused for it, as
// Connect refuses a connector whose exactlyOnceSupport returns null.
//
// A connector supports exactly once when a task resumed from the offsets
// of its records re-reads exactly the records after them: the runtime then
// writes records and offsets in one transaction.
type ExactlyOnceSource interface {
	ExactlyOnceSupport(config map[string]string) bool
}

// TransactionBoundaryDefiner is implemented by source connectors whose
// tasks can commit and abort transactions themselves through the
// TransactionContext (transaction.boundary=connector; Connect's
// SourceConnector.canDefineTransactionBoundaries). A connector that does
// not implement it, or answers false, is refused with that boundary.
type TransactionBoundaryDefiner interface {
	CanDefineTransactionBoundaries(config map[string]string) bool
}

// TransactionContext lets a source task define its transactions
// (transaction.boundary=connector), as Connect's TransactionContext. The
// runtime acts on a request once the records of the current Poll have been
// handed to the producer; a request naming a record acts once that record
// has been. A commit writes the offsets of every record of the transaction
// with it; an abort drops the records and their offsets (the task is
// responsible for what it skipped).
type TransactionContext interface {
	// CommitTransaction commits the transaction after the current batch.
	CommitTransaction()
	// CommitTransactionAfter commits the transaction right after rec.
	CommitTransactionAfter(rec *SourceRecord)
	// AbortTransaction aborts the transaction after the current batch.
	AbortTransaction()
	// AbortTransactionAfter aborts the transaction right after rec.
	AbortTransactionAfter(rec *SourceRecord)
}
