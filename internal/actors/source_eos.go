package actors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/kafkasec"
	"github.com/sluice-io/sluice/internal/offsets"
)

// TransactionalOffsets is what an exactly-once source task needs of the
// offset store besides OffsetStore: the records of its offsets, to write in
// its own transaction, and a way to show them once it committed.
type TransactionalOffsets interface {
	OffsetRecords(connector string, entries []offsets.PartitionOffset) ([]*kgo.Record, error)
	Committed(connector string, recs []*kgo.Record)
}

// secondaryOffsets is an offset store that copies what the task committed
// to a second topic (offsets.Layered: the worker's, after the connector's).
type secondaryOffsets interface {
	WriteSecondary(ctx context.Context, connector string, entries []offsets.PartitionOffset) error
}

// TransactionalID is the transactional id of a source task's producer, as
// Connect names it: <group.id>-<connector>-<task>. The next generation of
// the task takes the same id, which fences this one.
func TransactionalID(groupID string, id connectors.TaskID) string {
	return fmt.Sprintf("%s-%s-%d", groupID, id.Connector, id.Task)
}

// FenceProducers fences the transactional producers of ids, as Kafka's
// Admin.fenceProducers does: InitProducerID with each id bumps its epoch at
// its transaction coordinator, which aborts the transaction it has open,
// so a producer of the old epoch can never commit again. It retries the
// coordinator's retriable answers (a transaction being aborted answers
// CONCURRENT_TRANSACTIONS) until ctx ends.
func FenceProducers(ctx context.Context, cl *kgo.Client, ids []string) error {
	for _, id := range ids {
		for {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID = kmsg.StringPtr(id)
			req.TransactionTimeoutMillis = int32(connconfig.TransactionTimeout.Milliseconds())
			req.ProducerID, req.ProducerEpoch = -1, -1
			resp, err := req.RequestWith(ctx, cl)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			if err == nil {
				break
			}
			// CONCURRENT_TRANSACTIONS: the coordinator is still ending the
			// id's last transaction (aborting what the fenced producer had
			// open); Kafka marks it not retriable, but Java's producer and
			// admin client retry it, as here.
			if ctx.Err() != nil || (!kerr.IsRetriable(err) && !errors.Is(err, kerr.ConcurrentTransactions)) {
				return fmt.Errorf("fencing the transactional producer %q: %w", id, err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("fencing the transactional producer %q: %w (last error: %v)", id, ctx.Err(), err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// fencedError ends a task whose producer a newer generation of the task
// fenced: nothing it had not committed will ever be visible. Its status
// trace says so. Its supervisor restarts it as any failed task (invariant
// 5): if the task runs elsewhere now, the restarted instance fences that
// one in turn, which aborts an open transaction but loses and repeats
// nothing, until this worker's next assignment stops it.
type fencedError struct {
	txnID string
	err   error
}

func (e *fencedError) Error() string {
	return fmt.Sprintf("the task's transactional producer %q was fenced by a newer generation of the task "+
		"(another worker runs it now, or a newer config does): this instance stopped, and what it had not "+
		"committed is never visible: %v", e.txnID, e.err)
}

func (e *fencedError) Unwrap() error { return e.err }

// isFenced reports whether err says the producer lost its transactional id
// to a newer producer (or may not use it at all).
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}

// transactions is an exactly-once source task's side of its transactions:
// its own transactional producer, whether a transaction is open, and the
// boundaries the connector asked for (transaction.boundary=connector).
type transactions struct {
	client   *kgo.Client
	txnID    string
	store    TransactionalOffsets
	boundary string
	interval time.Duration

	open       bool
	lastCommit time.Time

	mu                  sync.Mutex // the task may call its TransactionContext from any goroutine
	commitNow, abortNow bool
	// commitAfter and abortAfter are the records the connector asked to
	// end a transaction after, each until the pipeline sends it: sets, as
	// Connect's WorkerTransactionContext keeps them, so that a batch may
	// hold many boundaries (a CDC task's source transactions, Datagen's
	// transaction.size). Keyed by the record's address: Go records have no
	// equality of their own, and the pointer is what the task hands over.
	commitAfter, abortAfter map[*connectors.SourceRecord]struct{}
}

// transactionalProducer makes the task's own transactional producer: the
// worker's producer settings, the connector's overrides, then the
// transactional id, which the settings cannot change. Before it returns
// the producer takes its epoch (takeEpoch), which fences every earlier
// instance of the task, so that none can commit after this task reads its
// offsets (invariant 10).
func (p *sourcePipeline) transactionalProducer(ctx context.Context) (*transactions, error) {
	store, ok := p.offsets.(TransactionalOffsets)
	if !ok {
		return nil, errors.New("exactly-once delivery needs an offset store that writes offsets in the task's transactions")
	}
	eos := p.keys.ExactlyOnce
	t := &transactions{
		txnID: TransactionalID(p.rt.opts.GroupID, p.id), store: store,
		boundary: eos.Boundary, interval: eos.Interval, lastCommit: time.Now(),
	}
	if t.interval <= 0 {
		t.interval = p.rt.opts.OffsetFlushInterval
	}
	o := p.keys.Overrides.Producer
	security := p.rt.security(kafkasec.Producer, o.Security)
	opts := append(p.rt.clientOpts(security), ProducerOpts()...)
	opts = append(opts, kgo.ClientID(fmt.Sprintf("connector-producer-%s-%d", p.id.Connector, p.id.Task)))
	opts = append(append(opts, p.rt.opts.Worker.Clients.Producer.Opts...), o.Opts...)
	opts = append(opts, kgo.TransactionalID(t.txnID), kgo.TransactionTimeout(connconfig.TransactionTimeout))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("the task's transactional producer: %w", err)
	}
	t.client = cl
	p.producer = heldProducer{producer: producer{Client: cl, security: security}}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := takeEpoch(fctx, cl, t.txnID); err != nil {
		cl.Close()
		return nil, err
	}
	return t, nil
}

// takeEpoch has the task's own producer run InitProducerID now, as Java's
// initTransactions does, instead of at its first transaction as franz-go
// would: the epoch it gets fences every earlier instance of the task, and
// it is the epoch all of this instance's transactions use. The fencing must
// be done by this producer: had a separate request fenced the id (as
// FenceProducers does for the leader), the producer would take a newer
// epoch only at its first transaction, after the offsets were read, and an
// instance started in between (a zombie's restart) could commit records
// this one would then produce again from the offsets it read before.
// The chaos run's exactly-once mode found that on Apache Kafka: six
// sequence numbers committed twice. Later epoch changes (franz-go's
// KIP-360 recovery, KIP-890's bump at each EndTxn) name the epoch they
// replace, which the coordinator refuses once a newer instance fenced it.
func takeEpoch(ctx context.Context, cl *kgo.Client, txnID string) error {
	for {
		_, _, err := cl.ProducerID(ctx)
		if err == nil {
			return nil
		}
		// franz-go retries CONCURRENT_TRANSACTIONS (the coordinator
		// still aborting what the fenced instance had open) in place;
		// a coordinator not ready yet or a lost connection leaves the
		// id to load again on the next call. Anything else (fenced,
		// not authorized) is for good.
		var netErr net.Error
		if ctx.Err() != nil || !(kerr.IsRetriable(err) || errors.Is(err, kerr.ConcurrentTransactions) || errors.As(err, &netErr)) {
			return fmt.Errorf("initializing the transactional producer %q: %w", txnID, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("initializing the transactional producer %q: %w (last error: %v)", txnID, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// begin opens a transaction unless one is open.
func (t *transactions) begin() error {
	if t.open {
		return nil
	}
	if err := t.client.BeginTransaction(); err != nil {
		return fmt.Errorf("begin a transaction: %w", err)
	}
	t.open = true
	return nil
}

// dueByInterval reports whether an interval boundary has come.
func (t *transactions) dueByInterval() bool {
	return t.boundary == connconfig.BoundaryInterval && time.Since(t.lastCommit) >= t.interval
}

// The TransactionContext a task with transaction.boundary=connector gets.
func (t *transactions) CommitTransaction() { t.mu.Lock(); t.commitNow = true; t.mu.Unlock() }
func (t *transactions) AbortTransaction()  { t.mu.Lock(); t.abortNow = true; t.mu.Unlock() }
func (t *transactions) CommitTransactionAfter(rec *connectors.SourceRecord) {
	t.ask(&t.commitAfter, rec)
}
func (t *transactions) AbortTransactionAfter(rec *connectors.SourceRecord) {
	t.ask(&t.abortAfter, rec)
}

func (t *transactions) ask(set *map[*connectors.SourceRecord]struct{}, rec *connectors.SourceRecord) {
	if rec == nil {
		return // Connect refuses a null record with an exception the task may swallow; nothing to end after
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if *set == nil {
		*set = map[*connectors.SourceRecord]struct{}{}
	}
	(*set)[rec] = struct{}{}
}

// boundaryAfter says whether the connector asked to end the transaction
// right after rec, and how. A connector that asked both to commit and to
// abort after the same record fails its task, as Connect's
// WorkerTransactionContext.checkRecordRequestConsistency does.
func (t *transactions) boundaryAfter(rec *connectors.SourceRecord) (end, commit bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rec == nil || len(t.commitAfter)+len(t.abortAfter) == 0 {
		return false, false, nil
	}
	_, c := t.commitAfter[rec]
	_, a := t.abortAfter[rec]
	if c && a {
		return false, false, fmt.Errorf("connector requested both commit and abort of same record against topic/partition %s/%s",
			rec.Topic, kafkaPartitionName(rec))
	}
	delete(t.commitAfter, rec)
	delete(t.abortAfter, rec)
	return c || a, c, nil
}

// kafkaPartitionName is rec's Kafka partition as Connect prints it.
func kafkaPartitionName(rec *connectors.SourceRecord) string {
	if rec.KafkaPartition == nil {
		return "null"
	}
	return strconv.Itoa(int(*rec.KafkaPartition))
}

// forgetRecordBoundaries drops the boundaries asked on records the batch
// just sent did not hold. A task that lends its records (RecordLender)
// writes over them at its next Poll, and a request left on one would end a
// transaction at whatever record later takes its place.
func (t *transactions) forgetRecordBoundaries() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.commitAfter)
	clear(t.abortAfter)
}

// boundaryNow says whether the connector asked to end the transaction after
// the current batch, and how. A connector that asked both fails its task,
// as Connect's checkBatchRequestsConsistency does.
func (t *transactions) boundaryNow() (end, commit bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.commitNow && t.abortNow {
		err = errors.New("connector requested both commit and abort of same transaction")
	}
	end, commit = t.commitNow != t.abortNow, t.commitNow
	t.commitNow, t.abortNow = false, false
	return end, commit, err
}

// commitTransaction ends the open transaction with the offsets of its
// records (invariant 9): it waits for every record's ack, writes the
// offsets they made committable in the same transaction, and commits.
// Only then do the offsets become visible, to read_committed readers and
// to this worker's view, and does the task's Commit run. Any error leaves
// the transaction to be aborted: the task fails and its next instance
// resumes from the last committed offsets.
func (p *sourcePipeline) commitTransaction(ctx context.Context) error {
	t := p.txn
	t.lastCommit = time.Now()
	if err := p.waitAcked(ctx); err != nil {
		return err
	}
	entries := p.tracker.committable()
	if !t.open && len(entries) == 0 {
		return nil
	}
	start := time.Now()
	recs, err := t.store.OffsetRecords(p.id.Connector, entries)
	if err != nil {
		return err
	}
	if len(recs) > 0 {
		if err := t.begin(); err != nil {
			return err
		}
		wctx, cancel := p.transactionStep(ctx)
		defer cancel()
		if err := t.client.ProduceSync(wctx, recs...).FirstErr(); err != nil {
			p.rec.OffsetCommit(time.Since(start), false)
			return fmt.Errorf("write the offsets in the transaction: %w", err)
		}
	}
	if err := p.endTransaction(ctx, kgo.TryCommit); err != nil {
		p.rec.OffsetCommit(time.Since(start), false)
		return fmt.Errorf("commit the transaction: %w", err)
	}
	p.rec.OffsetCommit(time.Since(start), true)
	t.store.Committed(p.id.Connector, recs)
	if second, ok := t.store.(secondaryOffsets); ok {
		// The worker's topic too, after the connector's own, as Connect
		// does; the connector's topic is the one tasks resume from.
		wctx, cancel := p.transactionStep(ctx)
		err := second.WriteSecondary(wctx, p.id.Connector, entries)
		cancel()
		if err != nil {
			p.log.Warn().Err(err).Msg("offsets committed to the connector's offsets topic, but not copied to the worker's")
		}
	}
	return p.stored(ctx, entries)
}

// abortTransaction aborts the open transaction as the connector asked: its
// records are never visible to read_committed readers and their offsets
// are dropped, never committed (the connector answers for what it
// skipped, as in Connect).
func (p *sourcePipeline) abortTransaction(ctx context.Context) error {
	t := p.txn
	t.lastCommit = time.Now()
	if err := p.waitAcked(ctx); err != nil {
		return err
	}
	p.tracker.markFlushed(p.tracker.committable())
	if err := p.endTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("abort the transaction: %w", err)
	}
	return nil
}

// waitAcked waits for the ack of every record handed to the producer; a
// failed record fails the transaction.
func (p *sourcePipeline) waitAcked(ctx context.Context) error {
	fctx, cancel := p.transactionStep(ctx)
	defer cancel()
	if err := p.txn.client.Flush(fctx); err != nil {
		return fmt.Errorf("wait for the transaction's records: %w", err)
	}
	if err := p.tracker.failure(); err != nil {
		return fmt.Errorf("produce failed: %w", err)
	}
	return nil
}

// transactionStep bounds one step of ending a transaction (waiting for the
// acks, writing the offsets, EndTxn) by offset.flush.timeout.ms, and by
// ctx's deadline if it has one (a stopping task's graceful shutdown
// timeout), but not by ctx ending otherwise: a task that is told to stop
// while it commits finishes the commit, for a cancelled EndTxn would leave
// its outcome unknown. (Either way nothing is lost or doubled: the records
// and their offsets commit together or not at all.)
func (p *sourcePipeline) transactionStep(ctx context.Context) (context.Context, context.CancelFunc) {
	d := p.rt.opts.OffsetFlushTimeout
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(deadline))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// endTransaction ends the open transaction, if any (transactionStep).
func (p *sourcePipeline) endTransaction(ctx context.Context, how kgo.TransactionEndTry) error {
	if !p.txn.open {
		return nil
	}
	p.txn.open = false
	ectx, cancel := p.transactionStep(ctx)
	defer cancel()
	return p.txn.client.EndTransaction(ectx, how)
}

// abandonTransaction aborts what a failing task had open, so readers need
// not wait for the transaction timeout; a fenced producer cannot, and its
// successor's fencing already aborted it.
func (p *sourcePipeline) abandonTransaction() {
	if !p.txn.open {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.txn.client.AbortBufferedRecords(ctx); err != nil {
		p.log.Debug().Err(err).Msg("dropping the failed transaction's buffered records")
	}
	if err := p.endTransaction(ctx, kgo.TryAbort); err != nil {
		p.log.Debug().Err(err).Msg("aborting the failed transaction")
	}
}
