package actors

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/offsets"
)

// sourcePipeline: Poll a batch -> convert -> produce asynchronously on the
// worker's idempotent acks=all producer (or the connector's own, with
// producer overrides) -> advance the per-partition watermark as acks
// arrive -> flush offsets every offset.flush.interval.ms -> the task's
// Commit.
type sourcePipeline struct {
	*taskRun
	task connectors.SourceTask
	// conn and connConfig are the task's connector instance and its
	// resolved config, which it answers exactly-once questions about.
	conn       connectors.Connector
	connConfig map[string]string
	codec
	keys connconfig.Runtime

	producer heldProducer
	admin    *kadm.Client // creates topics; nil when there is none
	// txn is the task's transactions when the worker runs sources exactly
	// once (source_eos.go); nil at least once.
	txn *transactions

	tracker *offsetTracker
	// bufferMemory bounds the bytes of the task's unacknowledged records
	// (Runtime.bufferMemory).
	bufferMemory int64
	scratch      connectors.Record // the record the transforms work on (stage.go)
	// transformed is the record the transforms made, until converted.
	transformed connectors.SourceRecord
	topics      map[string]bool // topics known to exist
	active      *taskTopics     // topics recorded as used (topics.go)
	// lastTopic is the topic of the last record sent, known to exist, and
	// lastActive its entry in active.
	lastTopic  string
	lastActive *topicEntry
	lastFlush  time.Time
	// writing is the offset flush under way, nil when there is none.
	writing *offsetWrite
	// onAck is p.acked, made once: the promise of every record.
	onAck func(*kgo.Record, error)
	// headerMemo shares one converted copy of headers that repeat from
	// record to record.
	headerMemo headerMemo
	// keyMemo shares one converted copy of a string key that repeats from
	// record to record.
	keyMemo keyMemo
	// clock stamps the records their source left without a timestamp.
	clock sendClock
	// values holds the values the value converter writes (chunks.go).
	values *valueChunks
	// keepsDeadline says that the task ends each Poll by its deadline on
	// its own (connectors.DeadlineKeeper): its Polls get no timer.
	keepsDeadline bool
	// naps says that the task's Poll returns at once when it has nothing
	// (connectors.IdleReturner): the loop then naps until the Poll's
	// deadline with no goroutine (nap.go).
	naps bool
	// lends says that the task writes over a Poll's records at its next
	// Poll (connectors.RecordLender): sendBatch is done with them when it
	// returns, and forgets the transaction boundaries asked on records it
	// did not send.
	lends bool
	// produceCtx is the context the producer honours for the task's
	// records: it outlives the task's, so that records already handed
	// to the producer are still acknowledged while the task drains.
	produceCtx  context.Context
	stopProduce context.CancelFunc
}

// pollContext is the context of one Poll that ends at deadline, and what
// ends it early. A task that keeps its deadline itself gets no timer
// (connectors.KeptDeadline): context.WithDeadline would start one per Poll,
// and its expiry a goroutine to cancel the context; at 500 idle tasks, 500
// goroutines a second whose dead stacks stayed until the next collection
// (ADR 0017, sixth round).
func (p *sourcePipeline) pollContext(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if p.keepsDeadline {
		return connectors.KeptDeadline(ctx, deadline), func() {}
	}
	return context.WithDeadline(ctx, deadline)
}

// sendClock stamps records whose source gave no timestamp with the time
// they are handed to the producer, in milliseconds, as Java's producer
// stamps them when Connect calls send. kgo would read the clock for each
// such record; on the VMs measured (issue 13, ADR 0021) that read, with
// kgo's truncation to milliseconds, was a twentieth of the worker's CPU
// under FileStreamSource and about a tenth of Sluice's side of
// BenchmarkThroughput. The pipeline reads it once per stampEvery records,
// a few microseconds of conversion apart, and again after anything that
// may have waited (a new poll, a wait for buffer.memory, a retry, a topic
// creation, a transaction's end): a stamp is never staler than a run of
// records converted back to back.
type sendClock struct {
	now  time.Time
	left int
}

// stampEvery is how many records, converted one after the other, share a
// reading of the clock: well under a millisecond of work.
const stampEvery = 64

func (c *sendClock) stamp() time.Time {
	if c.left == 0 {
		c.now = time.Now().Truncate(time.Millisecond)
		c.left = stampEvery
	}
	c.left--
	return c.now
}

// expire makes the next stamp read the clock: the pipeline may have
// waited since the last.
func (c *sendClock) expire() { c.left = 0 }

// outgoing is one polled record on its way to Kafka: its offset tracker
// token, the topic it counts as used for, and the Kafka record itself. The
// records of one poll share one slab (slabs.go). The one promise of the
// pipeline finds a record's outgoing from the record's address
// (outgoingOf), without a closure per record. The record's Context is the
// pipeline's produce context, not the outgoing: franz-go may read a
// record's Context on goroutines of its own after the promise (a new
// topic's metadata wait, a produce ID load that picks up a record's
// context), when the slab may already hold another poll's records.
type outgoing struct {
	pending
	active *topicEntry
	pin    *chunkPin // the chunk the value is in (chunks.go), or nil
	record kgo.Record
}

// outgoingOf is the outgoing whose record r is: r is the *kgo.Record the
// pipeline handed to Produce, &o.record of an outgoing in a slab, and
// franz-go gives its promise that same pointer.
func outgoingOf(r *kgo.Record) *outgoing {
	return (*outgoing)(unsafe.Add(unsafe.Pointer(r), -int(unsafe.Offsetof(outgoing{}.record))))
}

// pollTimeout bounds one Poll, so that a pause is never late by more than
// this (a stop cancels the Poll at once). An idle task wakes up once per
// pollTimeout, so it is as long as Connect's FileStreamSource waits for
// new lines: shorter would cost idle CPU and buy nothing. It is also the
// period of the grid the Polls of all tasks end on (pollDeadline).
const pollTimeout = time.Second

// pollDeadline is when a Poll that starts at now and may last at most
// bound ends: at the first tick of a process-wide grid (every pollTimeout,
// on the wall clock's whole seconds) after now, or at now+bound when that
// comes first. Idle tasks' Polls then all end at the same moment, and the
// Go runtime fires their timers in one pass and runs the tasks one after
// the other on threads already awake, instead of waking a thread for each
// task at a moment of its own (ADR 0017, round 3). A Poll never ends later
// than its bound; the first Poll of a task may end early, on the first
// tick, and the next ones follow the grid.
func pollDeadline(now time.Time, bound time.Duration) time.Time {
	latest := now.Add(bound)
	if tick := now.Truncate(pollTimeout).Add(pollTimeout); tick.Before(latest) {
		return tick
	}
	return latest
}

func (p *sourcePipeline) run(ctx context.Context) (err error) {
	if p.keys.OffsetsTopic != "" {
		if p.offsets, err = p.ownOffsets(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	if p.keys.ExactlyOnce.Enabled {
		// Its own producer, fenced before the offsets are read below.
		if p.txn, err = p.transactionalProducer(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		p.atEnd(p.txn.client.Close)
		// An exactly-once task never naps (loop), so run returns its
		// error at the run's end.
		defer func() {
			if isFenced(err) {
				err = &fencedError{txnID: p.txn.txnID, err: err}
				// Said here too: a task fenced while it stops
				// ends with no failure to report.
				p.log.Warn().Err(err).Msg("task fenced")
			}
		}()
		if p.keys.ExactlyOnce.Boundary == connconfig.BoundaryConnector {
			if !connconfig.CanDefineTransactionBoundaries(p.conn, p.connConfig) {
				return fmt.Errorf("%s=%s, but the connector cannot define transaction boundaries with its config",
					connconfig.TransactionBoundary, connconfig.BoundaryConnector)
			}
			p.txnContext = p.txn
		}
	} else {
		// Released last, after the drain below: the producer outlives
		// every record this task handed it.
		producer, release, err := p.rt.producerFor(p.id.Connector, p.producerClientID(), p.keys.Overrides.Producer)
		if err != nil {
			return err
		}
		p.producer = heldProducer{producer, release}
		p.atEnd(func() { p.producer.release() })
		// Before the first record (ADR 0032): franz-go delays the first
		// record to a topic new to the client by up to 250 ms while a
		// deleted topic it still knows fails each metadata refresh.
		p.producer.checkTopics(ctx)
		if p.producer.isStale() {
			if err := p.producer.renew(p.rt, p.id.Connector, p.producerClientID(), p.keys.Overrides.Producer); err != nil {
				return err
			}
		}
	}
	if p.keys.TopicCreation.Enabled {
		admin, closeAdmin, err := p.adminFor(p.keys.Overrides.Admin)
		if err != nil {
			return err
		}
		p.atEnd(closeAdmin)
		p.admin = admin
	}
	p.tracker = newOffsetTracker()
	p.bufferMemory = p.rt.bufferMemory(p.keys.Overrides.Producer)
	p.values = newValueChunks(p.value, p.bufferMemory)
	p.onAck = p.acked
	p.topics = map[string]bool{}
	p.active = p.newTaskTopics(ctx)
	if r, ok := p.offsets.(interface{ ReadToEnd(context.Context) error }); ok {
		// The offsets table is tailed in the background; a task that moved
		// here reads its predecessor's last flush first, as Connect's
		// offset reader does, rather than replaying from an older one.
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		err := r.ReadToEnd(rctx)
		rcancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read the offsets topic to its end: %w", err)
		}
	}
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	// A map of the task's own, as Connect hands each start a fresh one:
	// p.taskConfig may be the config log's shared map. Not kept here once
	// Open returns.
	err = p.task.Open(octx, taskContext{p.taskRun}, maps.Clone(p.taskConfig))
	cancel()
	p.atEnd(func() {
		if cerr := p.task.Close(); cerr != nil {
			p.log.Warn().Err(cerr).Msg("source task close failed")
		}
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("open source task: %w", err)
	}
	p.opened()
	if k, ok := p.task.(connectors.DeadlineKeeper); ok {
		p.keepsDeadline = k.KeepsPollDeadline()
	}
	if l, ok := p.task.(connectors.RecordLender); ok {
		p.lends = l.LendsRecords()
	}
	if k, ok := p.task.(connectors.IdleReturner); ok && p.txn == nil {
		// An exactly-once task's transaction and its error wrapping
		// (above) live on this goroutine: it does not nap.
		p.naps = k.ReturnsWhenIdle()
	}
	p.lastFlush = time.Now()

	// produceCtx outlives ctx: records already handed to the producer must
	// still be acknowledged while the task drains at shutdown.
	p.produceCtx, p.stopProduce = context.WithCancel(context.Background())
	p.atEnd(p.stopProduce)
	p.resume = p.pollOn
	return p.pollOn(ctx)
}

// pollOn runs the poll loop from its top to the pipeline's end, or until
// the task naps (errNapping): after a nap it is called again, on the nap
// room's goroutine or, for a stop, on one of its own (nap.go).
func (p *sourcePipeline) pollOn(ctx context.Context) error {
	loopErr := p.loop(ctx)
	if loopErr == errNapping {
		return loopErr
	}
	if p.txn != nil {
		return p.finishTransactions(ctx, loopErr)
	}

	// Drain: wait for the acks of what was produced, then flush what they
	// made committable. On a failure too (a record refused): the records
	// produced before it are still acknowledged, and the flush stores the
	// offsets of those before the failed one (never of unacknowledged
	// ones, nor of any after it: invariant 1).
	dctx, dcancel := context.WithTimeout(context.Background(), p.rt.opts.ShutdownTimeout)
	defer dcancel()
	if err := p.tracker.drain(dctx); err != nil {
		p.log.Warn().Int("in_flight", p.tracker.inFlight()).Msg("records still unacknowledged at shutdown; their offsets are not committed")
	}
	p.stopProduce()
	if err := p.flush(dctx); err != nil && loopErr == nil {
		loopErr = err
	}
	return loopErr
}

func (p *sourcePipeline) loop(ctx context.Context) error {
	flushEvery := p.rt.opts.OffsetFlushInterval
	for {
		if err := p.tracker.failure(); err != nil {
			return fmt.Errorf("produce failed: %w", err)
		}
		if err := p.finishFlush(ctx, false); err != nil {
			return err
		}
		if p.flushDue(flushEvery) {
			if p.txn != nil {
				if err := p.flush(ctx); err != nil {
					return err
				}
			} else {
				p.startFlush(ctx)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if p.gate.paused() {
			if p.txn != nil && p.txn.open {
				// A paused task keeps no transaction open.
				if err := p.flush(ctx); err != nil {
					return err
				}
			}
			// Paused: no polling, but offsets of acked records still flush.
			wctx, cancel := context.WithTimeout(ctx, flushEvery)
			p.waitResumed(wctx)
			cancel()
			continue
		}
		// Backpressure: the window of unacknowledged records is bounded.
		if err := p.tracker.waitAtMost(ctx, p.rt.opts.MaxInFlight-1); err != nil {
			return nil
		}
		if p.producer.isStale() {
			if err := p.moveProducer(ctx); err != nil {
				return err
			}
		}
		deadline := pollDeadline(time.Now(), p.pollTimeout())
		pctx, cancel := p.pollContext(ctx, deadline)
		var batch []*connectors.SourceRecord
		pollStart := time.Now()
		err := retryCall(ctx, p.log, p.rec, "poll", p.keys.RetryDelayMax, func() (err error) {
			batch, err = p.task.Poll(pctx)
			return err
		})
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, context.DeadlineExceeded) && pctx.Err() != nil {
				continue // a Poll that honoured its deadline returning its error
			}
			return fmt.Errorf("poll: %w", err)
		}
		if len(batch) > 0 {
			// Empty polls are not batches: they would drag the poll
			// time and batch size averages toward the poll timeout and 0.
			p.rec.Polled(len(batch), time.Since(pollStart))
		} else {
			// Idle: the values in flight keep their chunk alive until
			// they are acknowledged, the task no longer does, nor an
			// empty queue's array in its tracker.
			p.values.idle()
			p.tracker.idle()
		}
		if err := p.sendBatch(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return nil // stopping: the rest of the batch was not produced
			}
			return err
		}
		if err := p.batchBoundary(ctx, len(batch) > 0); err != nil {
			return err
		}
		if len(batch) == 0 && p.naps && ctx.Err() == nil && time.Now().Before(deadline) {
			// The task returned at once with nothing: it naps until
			// the Poll's deadline with no goroutine, and the loop goes
			// on from its top (nap.go, ADR 0027).
			p.napUntil = deadline
			return errNapping
		}
	}
}

// producerClientID is the client.id of a producer of the task's own.
func (p *sourcePipeline) producerClientID() string { return "connector-producer-" + p.id.Connector }

// moveProducer moves the task from its stale producer to the current one
// (ADR 0031) once every record it handed the old one was acknowledged, so
// that its records keep their order. A failure the wait ends at is left
// to the loop, which stops at it.
func (p *sourcePipeline) moveProducer(ctx context.Context) error {
	if err := p.tracker.waitAtMost(ctx, 0); err != nil || p.tracker.inFlight() > 0 {
		return nil
	}
	if err := p.producer.renew(p.rt, p.id.Connector, p.producerClientID(), p.keys.Overrides.Producer); err != nil {
		return fmt.Errorf("a new producer after a topic was deleted or recreated: %w", err)
	}
	// Each topic is looked at again, and told to the new producer
	// (producer.note), before the task's next record to it.
	clear(p.topics)
	p.lastTopic = ""
	return nil
}

// sendBatch hands a poll's records to the producer in order, one
// registration with the offset tracker and one slab (slabs.go) for all of
// them. When it returns early, the records it did not hand over leave the
// tracker's count without ever becoming committable, and the slab is
// never handed out again.
func (p *sourcePipeline) sendBatch(ctx context.Context, batch []*connectors.SourceRecord) error {
	recordsMoved.Add(uint64(len(batch)))
	p.clock.expire() // the Poll took its time
	if len(batch) == 0 {
		return nil // an idle task's poll takes no slab
	}
	slab := getSlab(len(batch))
	out := slab.out
	p.tracker.addBatch(batch, func(i int) *pending { return &out[i].pending }, slab)
	for i, rec := range batch {
		o := &out[i]
		if err := p.send(ctx, o, rec); err != nil {
			p.releaseAll(out[i+1:])
			return err
		}
		if p.txn != nil {
			end, commit, err := p.txn.boundaryAfter(rec)
			if err == nil && end {
				err = p.endBoundary(ctx, commit)
				p.clock.expire()
			}
			if err != nil {
				p.releaseAll(out[i+1:])
				return err
			}
		}
	}
	slab.filled()
	if p.txn != nil && p.lends {
		p.txn.forgetRecordBoundaries()
	}
	return nil
}

// releaseAll releases records of a poll that will not be produced.
func (p *sourcePipeline) releaseAll(out []outgoing) {
	for i := range out {
		p.tracker.release(&out[i].pending)
	}
}

// send converts one record into o and hands it to the producer; on an
// error the record is resolved (failed or skipped) in the tracker.
func (p *sourcePipeline) send(ctx context.Context, o *outgoing, rec *connectors.SourceRecord) error {
	if rec == nil {
		p.rec.Dropped()
		return nil
	}
	e := &o.pending
	if p.chain != nil {
		out, err := transformSource(p.chain, &p.scratch, &p.transformed, rec)
		if err != nil && connectors.IsRetriable(err) {
			// Only a retriable failure goes through the retries: the
			// common path allocates no closure.
			err = retryStageAfter(ctx, p.log, p.rec, "transformation", p.keys, err, func() (err error) {
				out, err = transformSource(p.chain, &p.scratch, &p.transformed, rec)
				return err
			})
			p.clock.expire()
		}
		if err != nil {
			return p.failed(ctx, e, rec, err)
		}
		if out == nil {
			// Dropped by a transform: nothing to produce, and its offset
			// commits like a produced record's.
			p.tracker.skip(e)
			p.rec.Dropped()
			return nil
		}
		rec = out
	}
	kr := &o.record
	err := p.convert(rec, kr)
	if err != nil && connectors.IsRetriable(err) {
		// As for the transforms: the retries only when needed.
		err = retryStageAfter(ctx, p.log, p.rec, "conversion", p.keys, err, func() error { return p.convert(rec, kr) })
		p.clock.expire()
	}
	if err != nil {
		return p.failed(ctx, e, rec, err)
	}
	if kr.Topic != p.lastTopic { // never "": convert refuses a record without a topic
		// Looked up once per run of records to one topic.
		if !p.topics[kr.Topic] {
			if err := p.ensureTopic(ctx, kr.Topic); err != nil {
				p.tracker.ack(e, err)
				p.rec.Dropped()
				return err
			}
			p.topics[kr.Topic] = true
			p.producer.noteTopic(kr.Topic)
			p.clock.expire()
		}
		p.lastTopic, p.lastActive = kr.Topic, p.active.entry(kr.Topic)
	}
	// As Connect, a topic counts as used once Kafka acknowledged a record
	// of it.
	o.active = p.lastActive
	if p.txn != nil {
		if err := p.txn.begin(); err != nil {
			p.tracker.ack(e, err)
			return err
		}
	}
	// Backpressure by bytes, as Connect's buffer.memory: the record waits
	// for the acknowledgements that make room for it.
	n := recordBytes(kr)
	if n > p.bufferMemory {
		// As Java's producer, which fails such a record in its send
		// callback rather than wait for room that can never be.
		return p.produceFailed(e, kr.Topic, recordTooLarge(n, p.bufferMemory), false)
	}
	// Stamped before the wait for room, as Java's producer stamps a record
	// before it waits for buffer.memory.
	if kr.Timestamp.IsZero() {
		kr.Timestamp = p.clock.stamp()
	}
	waited, err := p.tracker.reserve(ctx, e, n, p.bufferMemory)
	if err != nil {
		p.tracker.release(e) // stopping: not produced, its offset not committed
		p.rec.Dropped()
		return err
	}
	if waited {
		p.clock.expire()
	}
	kr.Context = p.produceCtx
	o.pin = p.values.produced()
	p.producer.Produce(p.produceCtx, kr, p.onAck)
	return nil
}

// recordTooLarge is the failure of a record of n bytes under a
// buffer.memory of budget, worded as Java's producer words it.
func recordTooLarge(n, budget int64) error {
	return fmt.Errorf("the record is %d bytes when serialized, which is larger than the total memory buffer "+
		"configured with buffer.memory (%d bytes): raise producer.override.buffer.memory or the worker's "+
		"producer.buffer.memory", n, budget)
}

// recordBytes is what a record counts against the task's buffer.memory:
// its key, value and headers, the bytes the pipeline holds until its ack
// (Java's producer also counts a few dozen bytes of framing per record).
func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// acked is the promise of every record the pipeline produces (send).
func (p *sourcePipeline) acked(r *kgo.Record, err error) {
	o := outgoingOf(r)
	if errors.Is(err, kerr.UnknownTopicOrPartition) && !p.keys.TopicCreation.Enabled {
		err = fmt.Errorf("%w: topic %q does not exist and the broker did not create it (auto.create.topics.enable); "+
			"set %s and %s to have the connector create the topics it writes to",
			err, r.Topic, connconfig.TopicCreationDefaultPartitions, connconfig.TopicCreationDefaultReplicationFactor)
	}
	if authErr := p.producer.security.AuthFailure(err); authErr != nil {
		// Said plainly in the task's status trace.
		err = fmt.Errorf("the task's producer: %w", authErr)
	}
	// The record's bytes are no longer needed, but the slab it lives in
	// stays until the tracker is done with every record of its poll: let
	// them go now, or a poll's worth of acknowledged values would be held
	// beyond buffer.memory. The value's chunk may be written into again
	// once the pin is released (ADR 0028).
	r.Key, r.Value, r.Headers = nil, nil, nil
	if o.pin != nil {
		o.pin.release(-1)
	}
	// Read before the tracker's ack, after which the record's slab may
	// be handed out again (slabs.go).
	active := o.active
	if err != nil {
		recreated, err := recreatedTopic(p.producer.producer, r.Topic, err)
		p.produceFailed(&o.pending, r.Topic, err, recreated)
		return
	}
	p.tracker.ack(&o.pending, nil)
	p.rec.Written(true)
	p.active.used(active)
}

// produceFailed resolves a record Kafka did not take, as Connect's
// WorkerSourceTask does since KIP-779 (Kafka 3.2): with errors.tolerance=all
// the failure is reported (errors.log.enable) and the record skipped, its
// offset committing like a produced one's; otherwise the task fails with
// it (the error it returns, and the tracker's failure, which the loop sees
// first). Exactly once, the failure always fails the task: the
// transaction the record was in cannot commit (as Connect's
// ExactlyOnceWorkerSourceTask, whose producer fails the commit). A record
// that failed because the task is stopping (its producer closed, its
// produce context canceled at the end of the drain) is never skipped: it
// was not refused, and invariant 1 keeps its offset uncommitted; nor is
// one whose topic was recreated under the task's producer (recreated,
// recreatedTopic): the task starts again with a producer that can send it.
func (p *sourcePipeline) produceFailed(e *pending, topic string, err error, recreated bool) error {
	stopping := errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled)
	if p.txn != nil || !p.keys.TolerateAll() || stopping || recreated {
		p.tracker.ack(e, err)
		p.rec.Written(false)
		return err
	}
	// Connect counts it as a failed record (executeFailed, stage
	// KAFKA_PRODUCE) that was tolerated.
	p.rec.RecordError(false)
	if p.keys.LogErrors {
		p.rec.ErrorLogged()
		p.log.Warn().Err(err).Str("topic", topic).Str("stage", stageKafkaProduce).
			Msg("skipping a record Kafka did not take (errors.tolerance=all)")
	}
	p.tracker.skip(e)
	p.rec.Written(false)
	p.rec.Skipped()
	return nil
}

// convert fills kr with rec converted by the task's converters.
func (p *sourcePipeline) convert(rec *connectors.SourceRecord, kr *kgo.Record) error {
	if rec.Topic == "" {
		return fmt.Errorf("source record has no topic")
	}
	k, err := p.keyMemo.convert(p.key, rec)
	if err != nil {
		return &stageError{stage: stageKeyConverter, err: fmt.Errorf("convert key for topic %q: %w", rec.Topic, err)}
	}
	v, err := p.values.convert(p.value, rec.Topic, rec.ValueSchema, rec.Value)
	if err != nil {
		return &stageError{stage: stageValueConverter, err: fmt.Errorf("convert value for topic %q: %w", rec.Topic, err)}
	}
	h, err := p.headerMemo.convert(p.headers, rec.Topic, rec.Headers)
	if err != nil {
		return &stageError{stage: stageHeaderConverter, err: err}
	}
	// Field by field: a composite literal of kgo.Record would be built
	// aside and copied in whole, write barriers and all. kr is a fresh
	// slab entry (sendBatch) that only this function fills, so the
	// fields it does not name are zero.
	kr.Topic, kr.Key, kr.Value, kr.Headers, kr.Timestamp, kr.Partition = rec.Topic, k, v, h, rec.Timestamp, -1
	if rec.KafkaPartition != nil {
		kr.Partition = *rec.KafkaPartition
	}
	return nil
}

// failed handles a record that failed to transform or convert, as
// errors.tolerance says: with none the task fails; with all the record is
// skipped (logged if asked) and its offset commits.
func (p *sourcePipeline) failed(ctx context.Context, e *pending, rec *connectors.SourceRecord, err error) error {
	if !p.keys.TolerateAll() || ctx.Err() != nil {
		// Invariant 1: the record was not produced, so its partition's
		// watermark stops before it; the task fails (or stops) and its
		// next instance reads it again.
		p.tracker.ack(e, err)
		p.rec.Dropped()
		if ctx.Err() == nil {
			p.rec.RecordError(true)
		}
		return err
	}
	p.rec.RecordError(false)
	if p.keys.LogErrors {
		p.rec.ErrorLogged()
		stage, _ := stageOf(err, "")
		ev := p.log.Warn().Err(err).Str("topic", rec.Topic).Str("stage", stage)
		if p.keys.LogMessages {
			ev = ev.Interface("offset", rec.SourceOffset())
		}
		ev.Msg("skipping a record that failed (errors.tolerance=all)")
	}
	p.tracker.skip(e)
	p.rec.Dropped()
	p.rec.Skipped()
	return nil
}

// ensureTopic creates a topic the task writes to when it is missing. With
// topic creation on for the connector (KIP-158) it uses the settings of the
// first topic creation group that takes the topic, as Connect's
// AbstractWorkerSourceTask.maybeCreateTopic does. Without topic.creation.*
// keys, Connect leaves a missing topic to the broker's auto-creation; Sluice
// creates it with the broker's defaults itself (unless the worker's
// topic.creation.enable is false), which is what auto-creation would give,
// without depending on the broker allowing it. (Relying on the producer's
// auto-creation instead was seen to lose a topic's tail on the embedded
// broker after a kill -9: a known difference, README.md.) With the
// worker's topic.creation.enable=false, the broker's auto-creation it is:
// the task's producer asks for it, once (autoCreate).
func (p *sourcePipeline) ensureTopic(ctx context.Context, topic string) error {
	if !p.keys.TopicCreation.Enabled {
		if p.rt.opts.Worker.TopicCreationDisabled || p.rt.opts.Admin == nil {
			autoCreate(ctx, p.producer.Client, topic)
			return nil
		}
		if err := createTopic(ctx, p.rt.opts.Admin, topic, -1, -1, nil); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	}
	if p.admin == nil {
		return nil
	}
	g := p.keys.TopicCreation.GroupFor(topic)
	err := createTopic(ctx, p.admin, topic, g.Partitions, g.ReplicationFactor, g.Configs)
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("%w (topic creation group %q); ensure the task may create topics or that the topic exists", err, g.Name)
	}
	return nil
}

// autoCreate asks the broker about topic with the client, letting it
// create the topic if auto.create.topics.enable allows: the request Java's
// producer makes before its first record to a topic it does not know.
// ProducerOpts' clients do not make it at each metadata refresh (ADR 0032).
// Whatever the answer, the task's first record tells: a topic the broker
// did not create fails it with UNKNOWN_TOPIC_OR_PARTITION (acked says why).
func autoCreate(ctx context.Context, cl *kgo.Client, topic string) {
	req := metadataRequest(topic)
	req.AllowAutoTopicCreation = true
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _ = req.RequestWith(cctx, cl)
}

// createTopic creates a topic unless it exists; -1 takes the broker's
// default partitions or replication factor; configs are the new topic's
// configs. As Connect, it looks first, so that a connector that may not
// create topics still runs against topics that exist.
func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, replication int16, configs map[string]string) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if details, err := adm.ListTopics(cctx, topic); err == nil && details.Has(topic) && details[topic].Err == nil {
		return nil
	}
	var cfg map[string]*string
	for k, v := range configs {
		if cfg == nil {
			cfg = map[string]*string{}
		}
		cfg[k] = kadm.StringPtr(v)
	}
	resp, err := adm.CreateTopic(cctx, partitions, replication, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %q: %w", topic, err)
	}
	return nil
}

// offsetWrite is an offset flush under way. The task goes on polling
// while Kafka acknowledges it, as Connect's offset committer thread writes
// a task's offsets beside the thread that polls it: a flush that waited in
// the loop stalled the task for a produce round trip behind its own
// records, a sixth of a busy task's time at a 100 ms interval (issue 13).
// The task's Commit still runs on the task's goroutine, after the write,
// never concurrently with Poll (connectors.SourceTask).
type offsetWrite struct {
	entries []offsets.PartitionOffset
	done    chan offsetWritten // buffered: the writer never waits for the loop
}

type offsetWritten struct {
	took time.Duration
	err  error
}

// startFlush starts writing the offsets that acks made committable
// (invariant 1: only offsets of acknowledged records), unless a write is
// under way: offsets flush one write at a time, in order.
func (p *sourcePipeline) startFlush(ctx context.Context) {
	if p.writing != nil {
		return
	}
	p.lastFlush = time.Now()
	entries := p.tracker.committable()
	if len(entries) == 0 {
		return
	}
	w := &offsetWrite{entries: entries, done: make(chan offsetWritten, 1)}
	// offset.flush.timeout.ms bounds the write; the task stopping does
	// not cut it short (the drain waits for it).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.rt.opts.OffsetFlushTimeout)
	start := time.Now()
	go func() {
		defer cancel()
		err := p.offsets.Write(wctx, p.id.Connector, entries)
		w.done <- offsetWritten{took: time.Since(start), err: err}
	}()
	p.writing = w
}

// finishFlush ends the write under way once Kafka answered it: waiting
// for the answer when wait is set, else only if it is already in. A
// stored write lets the task commit upstream.
func (p *sourcePipeline) finishFlush(ctx context.Context, wait bool) error {
	w := p.writing
	if w == nil {
		return nil
	}
	var res offsetWritten
	if wait {
		res = <-w.done // bounded by offset.flush.timeout.ms
	} else {
		select {
		case res = <-w.done:
		default:
			return nil
		}
	}
	p.writing = nil
	p.rec.OffsetCommit(res.took, res.err == nil)
	if res.err != nil {
		// Not fatal: the same offsets (or newer) are written next time.
		p.log.Warn().Err(res.err).Msg("offset flush failed; will retry")
		return nil
	}
	return p.stored(ctx, w.entries)
}

// flush stores the offsets that acks made committable and lets the task
// commit upstream, before it returns: the write under way first, then
// what is committable now. The drain at shutdown flushes so; an
// exactly-once task's flush commits its transaction.
func (p *sourcePipeline) flush(ctx context.Context) error {
	if p.txn != nil {
		return p.commitTransaction(ctx)
	}
	if err := p.finishFlush(ctx, true); err != nil {
		return err
	}
	p.startFlush(ctx)
	return p.finishFlush(ctx, true)
}

// stored records that entries are durably stored and lets the task commit
// upstream.
func (p *sourcePipeline) stored(ctx context.Context, entries []offsets.PartitionOffset) error {
	p.tracker.markFlushed(entries)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := p.task.Commit(cctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// flushDue says whether the offsets are due to be flushed: every
// offset.flush.interval.ms at least once, at an interval boundary exactly
// once (poll and connector boundaries end transactions where the batches
// end).
func (p *sourcePipeline) flushDue(flushEvery time.Duration) bool {
	if p.txn != nil {
		return p.txn.dueByInterval()
	}
	return time.Since(p.lastFlush) >= flushEvery
}

// pollTimeout bounds the next Poll: an interval boundary, or the next
// offset flush, must not wait for a slow Poll much past its time. A task
// with nothing in flight and nothing left to flush has no flush to be
// late for until it polls records again, so its Poll is not cut short at
// the flush time: that would end an idle task's Polls at a moment of its
// own (its last flush) instead of on the grid all tasks share (pollDeadline).
func (p *sourcePipeline) pollTimeout() time.Duration {
	if p.txn != nil {
		if p.txn.boundary == connconfig.BoundaryInterval {
			return min(pollTimeout, max(10*time.Millisecond, p.txn.interval-time.Since(p.txn.lastCommit)))
		}
		return pollTimeout
	}
	if p.tracker.settled() {
		return pollTimeout
	}
	return min(pollTimeout, max(10*time.Millisecond, p.rt.opts.OffsetFlushInterval-time.Since(p.lastFlush)))
}

// batchBoundary ends the transaction where a poll boundary or the
// connector says, once a batch was handed to the producer.
func (p *sourcePipeline) batchBoundary(ctx context.Context, polled bool) error {
	switch {
	case p.txn == nil:
	case p.txn.boundary == connconfig.BoundaryPoll:
		if polled {
			return p.commitTransaction(ctx)
		}
	case p.txn.boundary == connconfig.BoundaryConnector:
		end, commit, err := p.txn.boundaryNow()
		if err != nil {
			return err
		}
		if end {
			return p.endBoundary(ctx, commit)
		}
	}
	return nil
}

func (p *sourcePipeline) endBoundary(ctx context.Context, commit bool) error {
	if commit {
		return p.commitTransaction(ctx)
	}
	return p.abortTransaction(ctx)
}

// finishTransactions ends an exactly-once task: a task that stops commits
// what it has open (within task.shutdown.graceful.timeout.ms), a failing
// one aborts it, and its next instance resumes from the last commit. With
// transaction.boundary=connector a stopping task commits only when the
// connector asked for a commit, as Connect's CONNECTOR boundary manager
// does: the connector alone knows whether what is open is whole (a
// half-read snapshot committed would be read again by the next instance).
func (p *sourcePipeline) finishTransactions(ctx context.Context, loopErr error) error {
	if loopErr == nil {
		dctx, cancel := context.WithTimeout(context.Background(), p.rt.opts.ShutdownTimeout)
		if p.connectorWantsAbort() {
			loopErr = p.abortTransaction(dctx)
		} else {
			loopErr = p.commitTransaction(dctx)
		}
		cancel()
		if loopErr != nil && !isFenced(loopErr) {
			p.log.Warn().Err(loopErr).Msg("the last transaction did not commit; the next instance of the task resumes from the last commit")
		}
	}
	if loopErr != nil {
		p.abandonTransaction()
	}
	p.stopProduce()
	if ctx.Err() != nil && !isFenced(loopErr) {
		return nil // stopping: what did not commit is read again
	}
	return loopErr
}

// connectorWantsAbort reports whether a stopping task's open transaction
// is to be aborted: with transaction.boundary=connector, unless the
// connector asked to commit it.
func (p *sourcePipeline) connectorWantsAbort() bool {
	if p.txn.boundary != connconfig.BoundaryConnector {
		return false
	}
	end, commit, err := p.txn.boundaryNow()
	return err != nil || !end || !commit
}

// ownOffsets is the offsets of a connector with its own offsets topic
// (offsets.storage.topic), created if missing: read from it first and from
// the worker's topic where it has none, written to both, as Connect does.
func (p *sourcePipeline) ownOffsets(ctx context.Context) (OffsetStore, error) {
	worker, ok := p.rt.opts.Offsets.(*offsets.SourceStore)
	if !ok || p.rt.opts.OffsetTopics == nil {
		return nil, fmt.Errorf("%s=%s: this worker cannot open connector-specific offsets topics",
			connconfig.OffsetsStorageTopic, p.keys.OffsetsTopic)
	}
	if p.keys.OffsetsTopic == worker.Topic() {
		return worker, nil
	}
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	own, err := p.rt.opts.OffsetTopics.Open(octx, p.keys.OffsetsTopic)
	if err != nil {
		return nil, err
	}
	return offsets.Layered{Own: own, Worker: worker}, nil
}
