package actors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
	"github.com/sluice-io/sluice/connectors/transforms"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/kafkasec"
)

// sinkPipeline: one member of the consumer group connect-<name> (cooperative
// sticky) -> fetch -> convert -> Write -> commit consumer offsets only for
// what Write (or PreCommit) declared durable (invariant 1).
type sinkPipeline struct {
	*taskRun
	task connectors.SinkTask
	codec
	keys connconfig.Runtime

	client *kgo.Client
	// fetchLog logs fetch errors, a few every 10 s: an error kgo returns
	// at every poll would otherwise be a line per poll.
	fetchLog zerolog.Logger
	active   *taskTopics // topics recorded as used (topics.go)
	// dlq produces to the dead letter queue: the worker's producer, or the
	// connector's own with producer overrides; nil without a queue.
	dlq heldProducer

	mu        sync.Mutex
	written   map[connectors.TopicPartition]int64 // next offset to consume, per partition, of written data
	committed map[connectors.TopicPartition]int64
	// backlog is what the last take from the consumer holds that Write has
	// not had yet, in fetch order (takeAll). Guarded by mu: revocations
	// drop their partitions' records from it.
	backlog []*kgo.Record
	// takeArr is the array backlog is a window of, which takeAll fills
	// again (a new array per take, a pointer per record, was a tenth of
	// a busy sink's allocation).
	takeArr   []*kgo.Record
	lastFlush time.Time
	// lastTake is how many records the last take from the consumer
	// brought: the backlog takes another fetch only while it holds fewer.
	lastTake int
	// arena holds the bytes of the strings the converters read, for those
	// that take them from one (StringConverter, JSONConverter): one
	// allocation per chunk of values rather than one per string.
	arena converters.Arena
	// keyArena and valueArena are the key and value converters when they
	// take their strings from the arena (arenaConverterOf).
	keyArena, valueArena arenaConverter
	// borrows says that the task only borrows its batches
	// (connectors.RecordBorrower): slab and batch are then filled again
	// for each Write, and the arena's strings share the fetched bytes.
	borrows bool
	// recycles says that the consumer decodes fetches into sinkFetches
	// and each batch's records are recycled once written (deliver; ADR 0026).
	recycles bool
	slab     []connectors.SinkRecord
	batch    []*connectors.SinkRecord
}

// arenaConverter is a converter that uses a task's arena (converters.Arena),
// by its concrete type: a sink's reads its strings through it, a source's
// writes its values into it (chunks.go). At most one field is set, and
// none when the converter is of another type. The type itself, not an
// interface: a converter embedding StringConverter or JSONConverter to
// override ToConnect or FromConnect must have its override called, and an
// interface would be satisfied by the embedded type's arena methods.
type arenaConverter struct {
	str  *converters.StringConverter
	json *converters.JSONConverter
}

func arenaConverterOf(c converters.Converter) arenaConverter {
	switch c := c.(type) {
	case *converters.StringConverter:
		return arenaConverter{str: c}
	case *converters.JSONConverter:
		return arenaConverter{json: c}
	}
	return arenaConverter{}
}

// takenNow is a context that has ended: a poll with it returns at once,
// taking nothing, once any rebalance under way has run its callbacks.
var takenNow = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// sinkFetches is the memory the worker's recycling sink tasks decode their
// fetches into (fetchpool.go).
var sinkFetches fetchPool

// maxPollRecords is Connect's consumer max.poll.records default: the
// largest batch one Write gets (consumer.override.max.poll.records changes
// it).
const maxPollRecords = 500

func (p *sinkPipeline) run(ctx context.Context) (err error) {
	p.written = map[connectors.TopicPartition]int64{}
	p.committed = map[connectors.TopicPartition]int64{}
	p.keyArena, p.valueArena = arenaConverterOf(p.key), arenaConverterOf(p.value)
	p.active = p.newTaskTopics(ctx)
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	err = p.task.Open(octx, taskContext{p.taskRun}, p.taskConfig)
	cancel()
	if err == nil {
		p.takePromise()
	}
	defer func() {
		if cerr := p.task.Close(); cerr != nil {
			p.log.Warn().Err(cerr).Msg("sink task close failed")
		}
	}()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("open sink task: %w", err)
	}
	if p.keys.DLQ.Topic != "" {
		release, err := p.openDLQ(ctx)
		defer release()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	if err := p.connect(); err != nil {
		return err
	}
	defer func() {
		// With BlockRebalanceOnPoll, a client that last returned from a
		// poll holds rebalances back; leaving the group needs them.
		p.client.AllowRebalance()
		p.client.Close()
	}()
	p.opened()
	p.lastFlush = time.Now()

	loopErr := p.loop(ctx)
	// Commit what was written before leaving the group, so the next owner
	// of these partitions starts right after it.
	cctx, ccancel := context.WithTimeout(context.Background(), p.rt.opts.ShutdownTimeout)
	defer ccancel()
	if err := p.commit(cctx, nil, true); err != nil && loopErr == nil && !errors.Is(err, context.DeadlineExceeded) {
		loopErr = err
	}
	return loopErr
}

// dlqClientID is the client.id of a dead letter queue producer of the
// task's own.
func (p *sinkPipeline) dlqClientID() string { return "connector-dlq-producer-" + p.id.Connector }

// openDLQ makes the dead letter queue ready, as Connect's
// DeadLetterQueueReporter does before the first bad record needs it: its
// topic (one partition) created by the connector's admin client, and the
// producer that writes to it. The returned function releases what it
// opened.
func (p *sinkPipeline) openDLQ(ctx context.Context) (func(), error) {
	producer, release, err := p.rt.producerFor(p.id.Connector, p.dlqClientID(), p.keys.Overrides.Producer)
	if err != nil {
		return func() {}, err
	}
	p.dlq = heldProducer{producer, release}
	release = func() { p.dlq.release() }
	if err := p.makeDLQTopic(ctx); err != nil {
		return release, err
	}
	p.dlq.noteTopic(p.keys.DLQ.Topic)
	return release, nil
}

// makeDLQTopic creates the dead letter queue's topic, of one partition,
// with the connector's admin client, unless it exists. The task does it
// when it opens the queue, and again when the topic was deleted while the
// task ran (ADR 0032): Connect's producer would have the broker create it
// at its next write, with the broker's defaults; Sluice's producers never
// let metadata requests create topics.
func (p *sinkPipeline) makeDLQTopic(ctx context.Context) error {
	admin, closeAdmin, err := p.adminFor(p.keys.Overrides.Admin)
	if err != nil {
		return err
	}
	defer closeAdmin()
	if admin != nil {
		if err := createTopic(ctx, admin, p.keys.DLQ.Topic, 1, p.keys.DLQ.ReplicationFactor, nil); err != nil {
			return fmt.Errorf("errors.deadletterqueue.topic.name: %w", err)
		}
	}
	return nil
}

func (p *sinkPipeline) connect() error {
	p.fetchLog = p.log.Sample(&zerolog.BurstSampler{Burst: 5, Period: 10 * time.Second})
	opts := p.rt.clientOpts(p.rt.security(kafkasec.Consumer, p.keys.Overrides.Consumer.Security))
	opts = append(opts,
		kgo.ConsumerGroup("connect-"+p.id.Connector),
		// Static membership per task: invariant 4 keeps one instance of a
		// task running, so when the task moves (a worker died), its new
		// consumer takes the dead one's place at once instead of waiting
		// out the session; an old instance still alive is fenced.
		kgo.InstanceID(fmt.Sprintf("%s-%d", p.id.Connector, p.id.Task)),
		kgo.SessionTimeout(connconfig.SinkSessionTimeout),
		kgo.HeartbeatInterval(connconfig.SinkHeartbeatInterval),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.BlockRebalanceOnPoll(),
		kgo.ClientID(fmt.Sprintf("sluice-%s-%s-%d", p.rt.opts.WorkerID, p.id.Connector, p.id.Task)),
		kgo.FetchMaxBytes(connconfig.SinkFetchMaxBytes),
		kgo.FetchMaxPartitionBytes(connconfig.SinkFetchMaxPartitionBytes),
		// Connect's consumer default (fetch.max.wait.ms 500 ms): a fetch
		// returns as soon as records are there, so this bounds only how
		// often an idle task's consumer asks the broker, twice a second.
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(p.assigned),
		kgo.OnPartitionsRevoked(p.revoked),
		kgo.OnPartitionsLost(p.lost),
	)
	if p.recycles {
		opts = append(opts, kgo.WithPools(&sinkFetches))
	}
	// The worker's consumer.* keys, then consumer.override.*, after
	// Sluice's own settings, so they win in that order.
	opts = append(opts, p.rt.opts.Worker.Clients.Consumer.Opts...)
	opts = append(opts, p.keys.Overrides.Consumer.Opts...)
	// ParseRuntime made sure exactly one of them is set.
	if re := p.keys.TopicsRegex; re != "" {
		// Connect's topics.regex must match the whole topic name; kgo
		// matches anywhere in it, so anchor it (a regex "orders" must not
		// also consume "orders-dlq").
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics("^(?:"+re+")$"))
	} else {
		opts = append(opts, kgo.ConsumeTopics(p.keys.Topics...))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("sink consumer: %w", err)
	}
	p.client = cl
	return nil
}

func (p *sinkPipeline) loop(ctx context.Context) error {
	flushEvery := p.rt.opts.OffsetFlushInterval
	pausedFetching := false
	for {
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(p.lastFlush) >= flushEvery {
			if err := p.commit(ctx, nil, false); err != nil && ctx.Err() == nil {
				p.log.Warn().Err(err).Msg("offset commit failed; will retry")
			}
		}
		paused := p.gate.paused()
		if paused != pausedFetching {
			// Paused sinks stay in the group (kgo heartbeats on its own),
			// they only stop fetching.
			if paused {
				p.client.PauseFetchTopics(p.client.GetConsumeTopics()...)
			} else {
				p.client.ResumeFetchTopics(p.client.GetConsumeTopics()...)
			}
			pausedFetching = paused
		}
		p.client.AllowRebalance()
		var fetches kgo.Fetches
		if backlog := p.backlogLen(); backlog > 0 && !paused &&
			(backlog >= p.lastTake || p.client.BufferedFetchRecords() == 0) {
			// Records are still to be written, and either the backlog
			// holds a take's worth or the consumer has nothing buffered:
			// this poll only lets a rebalance that waits run first (kgo
			// runs its callbacks before a poll returns, and revocations
			// drop their records from the backlog); it takes nothing.
			fetches = p.client.PollRecords(takenNow, -1)
		} else {
			// With an empty backlog this waits for the next fetch. With
			// records still to write and a fetch buffered, it returns
			// that fetch at once, so that the consumer's next fetch runs
			// while the task writes both: a fetch taken only once the
			// backlog was empty started the one after it only then, and
			// the task waited for that one (200-250 ms of a 1 s run of
			// BenchmarkSinkThroughput). The backlog stays under two
			// takes' worth of records.
			//
			// As Connect's WorkerSinkTask, a poll waits no longer than
			// until the next commit is due: what was written is flushed
			// and its offsets committed on time rather than after a poll
			// that waited out its timeout on a topic with nothing more.
			wait := min(pollTimeout, max(0, flushEvery-time.Since(p.lastFlush)))
			pctx, cancel := context.WithTimeout(ctx, wait)
			fetches = p.client.PollRecords(pctx, -1)
			cancel()
		}
		if fetches.IsClientClosed() {
			return nil
		}
		if err := p.fetchErrors(fetches); err != nil {
			return err
		}
		p.takeAll(fetches)
		if paused {
			continue
		}
		if batch := p.nextBatch(); len(batch) > 0 {
			if err := p.deliver(ctx, batch); err != nil {
				return err
			}
		} else if fetches.NumRecords() == 0 {
			p.idle()
		}
	}
}

// idle lets go of what the task holds only for the batches it writes, to
// be made again when records come: a borrowing task's slab and batch, and
// the arena's chunk and the slab of its boxed strings, which may share the
// last fetch's bytes and would keep that fetch in memory (ADR 0024, 0026).
func (p *sinkPipeline) idle() {
	p.slab, p.batch = nil, nil
	p.arena.Drop()
	p.mu.Lock()
	if len(p.backlog) == 0 {
		p.takeArr, p.backlog = nil, nil
	}
	p.mu.Unlock()
}

// takeAll adds a poll's records to the backlog. The sink takes whatever
// the consumer has fetched at once, and hands it to Write max.poll.records
// at a time: franz-go fetches from a broker again only once the previous
// fetch was taken whole, so a take of max.poll.records would leave the
// next fetch waiting until the task had written all but the last of
// them; taken whole, the next fetch runs while the task writes. Java's
// consumer likewise fetches a partition again once its buffered records
// are all returned, while the task writes the others.
func (p *sinkPipeline) takeAll(fetches kgo.Fetches) {
	n := fetches.NumRecords()
	if n == 0 {
		return
	}
	p.recordFetch(fetches)
	p.lastTake = n
	p.mu.Lock()
	defer p.mu.Unlock()
	// The records before the backlog's window in its array were written
	// (the loop takes again only once deliver returned, and nothing keeps
	// a batch's slice), so the array is filled again from its start with
	// what remains of the backlog and the new records; a new one only
	// when it is too small. The slots past them are cleared, so that the
	// array holds no record alive.
	buf := p.takeArr
	if need := len(p.backlog) + n; cap(buf) < need {
		buf = make([]*kgo.Record, 0, need+need/4)
	}
	buf = append(buf[:0], p.backlog...)
	for _, f := range fetches {
		for _, t := range f.Topics {
			for _, fp := range t.Partitions {
				buf = append(buf, fp.Records...)
			}
		}
	}
	clear(buf[len(buf):cap(buf)])
	p.takeArr, p.backlog = buf, buf
}

// nextBatch takes what the next Write gets off the backlog: at most
// max.poll.records, the most Connect's consumer returns from one poll.
func (p *sinkPipeline) nextBatch() []*kgo.Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := min(len(p.backlog), p.maxPollRecords())
	batch := p.backlog[:n:n]
	p.backlog = p.backlog[n:]
	return batch
}

func (p *sinkPipeline) backlogLen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.backlog)
}

func (p *sinkPipeline) maxPollRecords() int {
	if n := p.keys.Overrides.Consumer.MaxPollRecords; n > 0 {
		return n
	}
	return maxPollRecords
}

// fetchErrors logs the errors of a poll; kgo retries fetches itself. With
// auto.offset.reset=none, a partition without a committed offset or whose
// offset is out of range fails the task, as Connect's consumer throws from
// poll then. So does a consumer that cannot authenticate, so that the
// task's status says why it consumes nothing, and it is retried with the
// restart backoff.
func (p *sinkPipeline) fetchErrors(fetches kgo.Fetches) error {
	var fatal error
	fetches.EachError(func(t string, part int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		p.fetchLog.Warn().Err(err).Str("topic", t).Int32("partition", part).Msg("fetch error")
		if errors.Is(err, kerr.UnknownTopicID) {
			// franz-go consumes the first instance of a topic it knows
			// and refuses a new one for good, returning this at every
			// poll (ADR 0031): a new consumer reads the new instance.
			// The offsets written from the old one are never committed:
			// by name, they would land on the new instance and have its
			// first records skipped.
			p.dropOffsets(t, part)
			if fatal == nil {
				fatal = fmt.Errorf("%s-%d: %w: the topic was deleted and recreated while this task consumed it; "+
					"the task starts again with a new consumer", t, part, err)
			}
		}
		if fatal == nil && kafkasec.IsAuthError(err) {
			fatal = fmt.Errorf("the task's consumer cannot authenticate to Kafka: %w", err)
		}
		if p.keys.Overrides.Consumer.NoReset && fatal == nil && noOffset(err) {
			fatal = fmt.Errorf("%s-%d: %w (consumer.override.auto.offset.reset=none: there is no offset to reset to)", t, part, err)
		}
	})
	return fatal
}

// noOffset reports whether a fetch error says a partition has no offset to
// consume from: kgo's error for a partition without a committed offset
// (unexported, hence the text) or an offset out of range.
func noOffset(err error) bool {
	return errors.Is(err, kerr.OffsetOutOfRange) || strings.Contains(err.Error(), "no prior committed offset")
}

// dropOffsets forgets the written and committed offsets of a topic's
// partitions, so that no commit carries them.
func (p *sinkPipeline) dropOffsets(topic string, partitions ...int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, part := range partitions {
		tp := connectors.TopicPartition{Topic: topic, Partition: part}
		delete(p.written, tp)
		delete(p.committed, tp)
	}
}

// deliver converts a batch of consumed records and writes it.
func (p *sinkPipeline) deliver(ctx context.Context, records []*kgo.Record) error {
	recordsMoved.Add(uint64(len(records)))
	batch, slab := p.batchFor(len(records))
	if p.borrows {
		// Nothing of the batch outlives this call: the records, and the
		// fetched bytes their strings share, are let go as it returns,
		// also when an idle sink writes nothing more for long.
		defer func() { clear(slab); clear(batch[:cap(batch)]) }()
	}
	var convErr error
	var used string // the topic last recorded as used in this batch
	for i, r := range records {
		sr, err := p.prepare(ctx, r, &slab[i])
		if err != nil {
			if !p.keys.TolerateAll() || ctx.Err() != nil {
				if ctx.Err() == nil {
					p.rec.RecordError(true)
				}
				convErr = err
				break
			}
			p.rec.RecordError(false)
			p.rec.Skipped()
			if dlqErr := p.deadLetter(ctx, r, err); dlqErr != nil {
				convErr = dlqErr
				break
			}
		} else {
			// As Connect, a topic counts as used once a record of it
			// was consumed and converted; once a batch is enough.
			if r.Topic != used {
				p.active.use(r.Topic)
				used = r.Topic
			}
			if sr != nil { // nil: a transform dropped it; its offset commits
				batch = append(batch, sr)
			}
		}
	}
	if convErr != nil {
		if ctx.Err() != nil {
			return nil // stopping: nothing of this batch is committed
		}
		return convErr
	}
	if len(batch) > 0 {
		start := time.Now()
		err := retryCall(ctx, p.log, p.rec, "write", p.keys.RetryDelayMax, func() error { return p.task.Write(ctx, batch) })
		if err == nil {
			p.rec.Put(len(batch), time.Since(start))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopping: nothing of this batch is committed
			}
			return fmt.Errorf("write: %w", err)
		}
	}
	p.mu.Lock()
	// A partition's records follow each other in offset order: the last
	// of each run of them moves its next offset.
	for i, r := range records {
		if i+1 < len(records) && records[i+1].Partition == r.Partition && records[i+1].Topic == r.Topic {
			continue
		}
		p.written[connectors.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = r.Offset + 1
	}
	p.mu.Unlock()
	if p.recycles {
		// Written, and the last reads of them are above: nothing reads
		// these records or their bytes again, nor the strings the
		// converters boxed for them.
		for _, r := range records {
			r.Recycle()
		}
		p.arena.ReuseBoxes()
	}
	return nil
}

// recordFetch records the records fetched and each fetched partition's lag:
// the records from the last one fetched to the partition's high watermark.
func (p *sinkPipeline) recordFetch(fetches kgo.Fetches) {
	if p.rec == nil {
		return
	}
	p.rec.Read(fetches.NumRecords())
	fetches.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if n := len(ftp.Records); n > 0 {
			p.rec.Lag(ftp.Topic, ftp.Partition, ftp.HighWatermark-(ftp.Records[n-1].Offset+1))
		}
	})
}

// takePromise asks an opened task whether it only borrows its batches
// (connectors.RecordBorrower) and, if it does, has its batches filled
// again and its arena's strings share the fetched bytes.
func (p *sinkPipeline) takePromise() {
	if rb, ok := p.task.(connectors.RecordBorrower); ok && rb.BorrowsRecords() {
		p.borrows = true
		p.arena.Share()
		p.recycles = p.retainsNoInput()
	}
}

// retainsNoInput reports whether the pipeline's converters and transforms
// keep nothing of the records they read once a call returns, so that with
// a borrowing task a written record's memory can be reused (recycles,
// ADR 0026): each is one of Sluice's own that is known not to. A plugin
// of another package may keep what it reads, as Connect lets it; its
// fetches are then left to the collector.
func (p *sinkPipeline) retainsNoInput() bool {
	return converters.RetainsNoInput(p.key) && converters.RetainsNoInput(p.value) &&
		converters.RetainsNoInput(p.headers) && p.chain.Every(transforms.RetainsNoInput)
}

// batchFor returns an empty batch and a slab of n records to fill: one
// allocation for a batch's records rather than one each, and none at all
// for a task that only borrows its batches (the last ones are filled
// again).
func (p *sinkPipeline) batchFor(n int) ([]*connectors.SinkRecord, []connectors.SinkRecord) {
	if !p.borrows {
		return make([]*connectors.SinkRecord, 0, n), make([]connectors.SinkRecord, n)
	}
	if cap(p.slab) < n {
		p.slab, p.batch = make([]connectors.SinkRecord, n), make([]*connectors.SinkRecord, 0, n)
	}
	return p.batch[:0], p.slab[:n]
}

// prepare converts a consumed record into sr and runs it through the
// transforms, each stage retried as errors.retry.timeout says; nil when a
// transform dropped it.
func (p *sinkPipeline) prepare(ctx context.Context, r *kgo.Record, sr *connectors.SinkRecord) (*connectors.SinkRecord, error) {
	err := p.convert(r, sr)
	if err != nil && connectors.IsRetriable(err) {
		// Only a retriable failure goes through the retries: the common
		// path allocates no closure.
		err = retryStageAfter(ctx, p.log, p.rec, "conversion", p.keys, err, func() error { return p.convert(r, sr) })
	}
	if err != nil {
		return nil, err
	}
	if p.chain == nil {
		return sr, nil
	}
	// Only a retriable failure goes through the retries: the common path
	// allocates no closure.
	out, err := transformSink(p.chain, sr)
	if err != nil && connectors.IsRetriable(err) {
		err = retryStageAfter(ctx, p.log, p.rec, "transformation", p.keys, err, func() (err error) {
			out, err = transformSink(p.chain, sr)
			return err
		})
	}
	return out, err
}

// convert fills sr with r converted by the task's converters.
func (p *sinkPipeline) convert(r *kgo.Record, sr *connectors.SinkRecord) error {
	ks, k, err := p.toConnect(p.keyArena, p.key, r.Topic, r.Key)
	if err != nil {
		return &stageError{stage: stageKeyConverter, class: p.keys.KeyConverter,
			err: fmt.Errorf("convert key of %s-%d@%d: %w", r.Topic, r.Partition, r.Offset, err)}
	}
	vs, v, err := p.toConnect(p.valueArena, p.value, r.Topic, r.Value)
	if err != nil {
		return &stageError{stage: stageValueConverter, class: p.keys.ValueConverter,
			err: fmt.Errorf("convert value of %s-%d@%d: %w", r.Topic, r.Partition, r.Offset, err)}
	}
	h, err := headersFromKafka(p.headers, r)
	if err != nil {
		return &stageError{stage: stageHeaderConverter, err: err}
	}
	// Field by field: a composite literal is built aside and then copied
	// in whole, write barriers and all, which cost as much as the rest of
	// this function for a small record.
	sr.Topic, sr.Partition, sr.Offset, sr.Timestamp = r.Topic, r.Partition, r.Offset, r.Timestamp
	sr.KeySchema, sr.Key, sr.ValueSchema, sr.Value, sr.Headers = ks, k, vs, v, h
	return nil
}

// toConnect converts data with c, through ac (c itself, when it reads
// through the arena) if it has a converter.
func (p *sinkPipeline) toConnect(ac arenaConverter, c converters.Converter, topic string, data []byte) (*connectors.Schema, any, error) {
	switch {
	case ac.json != nil:
		return ac.json.ToConnectArena(topic, data, &p.arena)
	case ac.str != nil:
		return ac.str.ToConnectArena(topic, data, &p.arena)
	}
	return c.ToConnect(topic, data)
}

// deadLetter handles a record that cannot be converted or transformed under
// errors.tolerance=all: logged if asked, sent to the dead letter queue if one
// is configured, and in any case not written (invariant 7).
func (p *sinkPipeline) deadLetter(ctx context.Context, r *kgo.Record, cause error) error {
	if p.keys.LogErrors {
		p.rec.ErrorLogged()
		ev := p.log.Warn().Err(cause).Str("topic", r.Topic).Int32("partition", r.Partition).Int64("offset", r.Offset)
		if p.keys.LogMessages {
			ev = ev.Bytes("value", r.Value)
		}
		ev.Msg("skipping a record that failed (errors.tolerance=all)")
	}
	if p.keys.DLQ.Topic == "" {
		return nil
	}
	dr := &kgo.Record{Topic: p.keys.DLQ.Topic, Key: r.Key, Value: r.Value, Partition: -1, Headers: append([]kgo.RecordHeader(nil), r.Headers...)}
	if p.keys.DLQ.ContextHeaders {
		h := func(k, v string) {
			dr.Headers = append(dr.Headers, kgo.RecordHeader{Key: "__connect.errors." + k, Value: []byte(v)})
		}
		h("topic", r.Topic)
		h("partition", strconv.Itoa(int(r.Partition)))
		h("offset", strconv.FormatInt(r.Offset, 10))
		h("connector.name", p.id.Connector)
		h("task.id", strconv.Itoa(p.id.Task))
		stage, class := stageOf(cause, p.keys.ValueConverter)
		h("stage", stage)
		h("class.name", class)
		h("exception.class.name", fmt.Sprintf("%T", cause))
		h("exception.message", cause.Error())
		h("exception.stacktrace", cause.Error())
	}
	var err error
	if n, budget := recordBytes(dr), p.rt.bufferMemory(p.keys.Overrides.Producer); n > budget {
		// One record at a time is always within buffer.memory, unless it
		// is larger than all of it: Java's producer fails it.
		err = recordTooLarge(n, budget)
	} else {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		renewed := false
		if p.dlq.isStale() {
			// Produced synchronously: nothing is in flight (ADR 0031).
			err = p.dlq.renew(p.rt, p.id.Connector, p.dlqClientID(), p.keys.Overrides.Producer)
			renewed = err == nil
		}
		// Synchronous: the record's offset may be committed only once
		// the dead letter queue has it.
		write := func() error {
			_, err := recreatedTopic(p.dlq.producer, dr.Topic, p.dlq.ProduceSync(pctx, dr).FirstErr())
			return err
		}
		if err == nil {
			err = write()
		}
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			// The topic was deleted while the task ran: made again, the
			// record is written once more.
			p.log.Info().Str("topic", dr.Topic).Msg("the dead letter queue's topic no longer exists: creating it again")
			if err = p.makeDLQTopic(pctx); err == nil {
				err = write()
			}
		}
		if renewed {
			// Noted once the write is done: a check meanwhile would
			// find the topic missing while this write makes it again.
			p.dlq.noteTopic(p.keys.DLQ.Topic)
		}
	}
	p.rec.DeadLetter(err == nil)
	if err != nil {
		return fmt.Errorf("dead letter queue %q: %w", p.keys.DLQ.Topic, err)
	}
	return nil
}

// commit commits consumer offsets of durably written data. only, when not
// nil, restricts it to some partitions (those being revoked). leaving says
// the partitions leave the task after it (a revocation, the task's stop).
func (p *sinkPipeline) commit(ctx context.Context, only map[string][]int32, leaving bool) (err error) {
	p.lastFlush = time.Now()
	p.mu.Lock()
	pending := map[connectors.TopicPartition]int64{}
	for tp, off := range p.written {
		if only != nil && !containsPartition(only, tp) {
			continue
		}
		if p.committed[tp] != off {
			pending[tp] = off
		}
	}
	p.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	start := time.Now()
	defer func() { p.rec.OffsetCommit(time.Since(start), err == nil) }()
	safe := pending
	if pc, ok := p.task.(connectors.PreCommitter); ok {
		// A buffering sink says what is durable; only that is committed.
		if safe, err = pc.PreCommit(ctx, pending); err != nil {
			return fmt.Errorf("pre-commit: %w", err)
		}
		if leaving && !coversAll(safe, pending) {
			// A task that makes what it was given durable in the
			// background (FileStreamSink's fsync) declares it at its
			// next PreCommit: ask again before the partitions leave,
			// so that their next owner does not write it all again.
			if safe, err = pc.PreCommit(ctx, pending); err != nil {
				return fmt.Errorf("pre-commit: %w", err)
			}
		}
	}
	// Invariant 1: these offsets are of records Write (or PreCommit)
	// declared durable.
	toCommit := map[string]map[int32]kgo.EpochOffset{}
	for tp, off := range safe {
		if w, ok := pending[tp]; !ok || off > w {
			continue // never beyond what was written
		}
		if toCommit[tp.Topic] == nil {
			toCommit[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		toCommit[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	if len(toCommit) == 0 {
		return nil
	}
	var commitErr error
	dropped := map[connectors.TopicPartition]bool{}
	// offset.flush.timeout.ms bounds the commit, as in Connect; PreCommit
	// above is the connector's own business, unbounded as there.
	cctx, cancel := context.WithTimeout(ctx, p.rt.opts.OffsetFlushTimeout)
	defer cancel()
	p.client.CommitOffsetsSync(cctx, toCommit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			commitErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, pt := range t.Partitions {
				switch code := pt.ErrorCode; {
				case code == kerr.UnknownTopicOrPartition.Code || code == kerr.UnknownTopicID.Code:
					// The topic is gone (deleted, or recreated under
					// a new ID): its offset is not retried, which
					// would commit it to a topic of the same name
					// created meanwhile and skip that topic's first
					// records (ADR 0031). A partition that is still
					// there commits again once the task writes more
					// of it; the records are written, never skipped.
					p.dropOffsets(t.Topic, pt.Partition)
					dropped[connectors.TopicPartition{Topic: t.Topic, Partition: pt.Partition}] = true
					p.log.Warn().Str("topic", t.Topic).Int32("partition", pt.Partition).Err(kerr.ErrorForCode(code)).
						Msg("offset commit refused: the partition no longer exists; its offset is dropped")
				case code != 0 && commitErr == nil:
					commitErr = fmt.Errorf("commit %s-%d: %w", t.Topic, pt.Partition, kerr.ErrorForCode(code))
				}
			}
		}
	})
	if commitErr != nil {
		return commitErr
	}
	p.mu.Lock()
	for t, parts := range toCommit {
		for part, eo := range parts {
			if tp := (connectors.TopicPartition{Topic: t, Partition: part}); !dropped[tp] {
				p.committed[tp] = eo.Offset
			}
		}
	}
	p.mu.Unlock()
	return nil
}

// coversAll reports whether safe declares every offset of pending durable.
func coversAll(safe, pending map[connectors.TopicPartition]int64) bool {
	for tp, off := range pending {
		if safe[tp] < off {
			return false
		}
	}
	return true
}

func containsPartition(m map[string][]int32, tp connectors.TopicPartition) bool {
	for _, p := range m[tp.Topic] {
		if p == tp.Partition {
			return true
		}
	}
	return false
}

func toTopicPartitions(m map[string][]int32) []connectors.TopicPartition {
	var out []connectors.TopicPartition
	for t, ps := range m {
		for _, p := range ps {
			out = append(out, connectors.TopicPartition{Topic: t, Partition: p})
		}
	}
	return out
}

func (p *sinkPipeline) assigned(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	p.log.Info().Interface("partitions", m).Msg("partitions assigned")
	for _, parts := range m {
		p.rec.Assigned(len(parts))
	}
	if pa, ok := p.task.(connectors.PartitionAware); ok {
		if err := pa.Assigned(ctx, toTopicPartitions(m)); err != nil {
			p.log.Error().Err(err).Msg("sink task refused assigned partitions")
		}
	}
}

// revoked runs before partitions move to another member: commit what was
// written for them, so the next owner does not redo it.
func (p *sinkPipeline) revoked(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	p.log.Info().Interface("partitions", m).Msg("partitions revoked")
	if err := p.commit(ctx, m, true); err != nil {
		p.log.Warn().Err(err).Msg("commit before revocation failed; the next owner redelivers")
	}
	p.forget(m)
	if pa, ok := p.task.(connectors.PartitionAware); ok {
		if err := pa.Revoked(ctx, toTopicPartitions(m)); err != nil {
			p.log.Warn().Err(err).Msg("sink task revoke failed")
		}
	}
}

// lost partitions cannot be committed any more: someone else owns them.
func (p *sinkPipeline) lost(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	p.log.Warn().Interface("partitions", m).Msg("partitions lost")
	p.forget(m)
	if pa, ok := p.task.(connectors.PartitionAware); ok {
		_ = pa.Revoked(ctx, toTopicPartitions(m))
	}
}

// forget drops what the task knows of partitions it no longer owns: their
// written and committed offsets, and their records still in the backlog,
// which their next owner reads again from the last commit.
func (p *sinkPipeline) forget(m map[string][]int32) {
	for t, parts := range m {
		p.rec.Revoked(t, parts)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tp := range toTopicPartitions(m) {
		delete(p.written, tp)
		delete(p.committed, tp)
	}
	kept := p.backlog[:0]
	for _, r := range p.backlog {
		if !containsPartition(m, connectors.TopicPartition{Topic: r.Topic, Partition: r.Partition}) {
			kept = append(kept, r)
		}
	}
	clear(p.backlog[len(kept):])
	p.backlog = kept
}
