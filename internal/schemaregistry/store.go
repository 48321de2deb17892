package schemaregistry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/topics"
)

// DefaultTopic is Confluent's kafkastore.topic default, so that Sluice and
// Confluent registries (and Karapace) can share one store.
const DefaultTopic = "_schemas"

// Config configures a Registry.
type Config struct {
	// Kafka holds the options that reach the cluster: seed brokers, TLS,
	// SASL. The registry adds its own consumer and producer options.
	Kafka []kgo.Opt
	// Topic is the compacted topic that holds the registry; DefaultTopic
	// when empty.
	Topic string
	// ReplicationFactor of the topic when the registry creates it; 0 or -1
	// is the broker's default.
	ReplicationFactor int16
	// TransactionalID is the id every instance sharing Topic writes under;
	// "sluice-schema-registry-<topic>" when empty. Instances that share a
	// topic must share it: it is what orders their writes (see write).
	TransactionalID string
	// Timeout bounds one request's reads and writes of the topic; 30s when
	// zero.
	Timeout time.Duration
	Log     zerolog.Logger
}

// Registry is a Schema Registry whose state is the Kafka topic it tails.
type Registry struct {
	cfg    Config
	tailer *topics.Tailer

	mu sync.RWMutex // guards st, which only apply writes
	st *state

	writeMu  sync.Mutex  // one write at a time in this process
	producer *kgo.Client // transactional; nil until the first write, or after it was fenced
}

// Open creates the topic if it is missing, reads it to its end and
// returns the registry, ready to serve.
func Open(ctx context.Context, cfg Config) (*Registry, error) {
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.ReplicationFactor == 0 {
		cfg.ReplicationFactor = -1
	}
	if cfg.TransactionalID == "" {
		cfg.TransactionalID = "sluice-schema-registry-" + cfg.Topic
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	r := &Registry{cfg: cfg, st: newState()}
	t, err := topics.NewTailer(cfg.Kafka, cfg.Topic, r.apply)
	if err != nil {
		return nil, err
	}
	r.tailer = t
	err = ensureTopic(ctx, kadm.NewClient(t.Client()), topics.TopicSpec{
		Name: cfg.Topic, Partitions: 1, ReplicationFactor: cfg.ReplicationFactor, Compact: true,
	})
	if err == nil {
		err = t.Start(ctx)
	}
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("schema registry store: %w", err)
	}
	return r, nil
}

// ensureTopic creates or checks the topic, waiting for a broker that is
// not reachable yet (started at the same time, restarting) until ctx ends,
// as a worker waits for its broker. A topic that exists with the wrong
// partition count or cleanup policy is an error at once.
func ensureTopic(ctx context.Context, adm *kadm.Client, spec topics.TopicSpec) error {
	for {
		err := topics.EnsureTopics(ctx, adm, spec)
		var wrong *topics.TopicError
		if err == nil || errors.As(err, &wrong) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (waiting for the broker: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Close stops tailing and producing.
func (r *Registry) Close() {
	r.writeMu.Lock()
	if r.producer != nil {
		r.producer.Close()
		r.producer = nil
	}
	r.writeMu.Unlock()
	r.tailer.Close()
}

func (r *Registry) apply(rec *kgo.Record) {
	r.mu.Lock()
	err := r.st.apply(rec.Key, rec.Value)
	r.mu.Unlock()
	if err != nil {
		r.cfg.Log.Warn().Err(err).Int64("offset", rec.Offset).Str("topic", rec.Topic).Msg("a record of the schemas topic was not read whole")
	}
}

// read runs f on the current state. When f answers "not found", the
// registry first reads the topic to its end and asks again, so that a
// schema another instance registered a moment ago is found.
func (r *Registry) read(ctx context.Context, f func(*state) error) error {
	r.mu.RLock()
	err := f(r.st)
	r.mu.RUnlock()
	var ae *apiError
	if !errors.As(err, &ae) || ae.status != 404 {
		return err
	}
	if err := r.catchUp(ctx); err != nil {
		return err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return f(r.st)
}

func (r *Registry) catchUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	if err := r.tailer.WaitForEnd(ctx); err != nil {
		return storeError(err)
	}
	return nil
}

// plan computes the records of one write from the state it is given, which
// holds every write made before, by any instance. No records: nothing to
// write.
type plan func(*state) ([]*kgo.Record, error)

// conflictBackoff caps the random wait before a write that lost to
// another instance starts over: two instances that fence each other
// immediately could otherwise take turns failing.
const conflictBackoff = 200 * time.Millisecond

// write runs p against the whole topic and appends its records so that no
// other write lands between the read and the append: every instance writes
// in transactions under one transactional id, and a producer that starts
// (InitProducerID) fences the one before it. A write reads the topic to its
// end only after its producer holds the id, so if another instance wrote
// since, this producer was fenced and the commit fails; the write then
// starts over, after a short random wait, with a new producer on the newer
// state, until the request's timeout. On return the registry's state
// includes the write.
func (r *Registry) write(ctx context.Context, p plan) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	for attempt := 0; ; attempt++ {
		err := r.writeOnce(ctx, p)
		var ae *apiError
		if err == nil || errors.As(err, &ae) {
			return err // written, or refused by the plan
		}
		// Any Kafka failure inside a transaction leaves the producer
		// in a state only a new one gets out of.
		r.producer.Close()
		r.producer = nil
		if !conflict(err) {
			return storeError(err)
		}
		r.cfg.Log.Debug().Err(err).Int("attempt", attempt+1).Msg("another schema registry instance wrote first; reading its write and trying again")
		wait := time.Duration(rand.Int64N(int64(min(conflictBackoff, 10*time.Millisecond<<min(attempt, 5))) + 1))
		select {
		case <-ctx.Done():
			return storeError(fmt.Errorf("%w (after %d attempts that other instances' writes overtook: %v)", ctx.Err(), attempt+1, err))
		case <-time.After(wait):
		}
	}
}

// conflict reports whether err says another instance took the
// transactional id while this write was under way.
//
// UNKNOWN_SERVER_ERROR is among them: Apache Kafka 4.1's coordinator
// answers an EndTxn that races with another producer's InitProducerID on
// the same id (the epoch fence is pending) with an IllegalStateException,
// which reaches the client as UNKNOWN_SERVER_ERROR; the fence then aborts
// the transaction. Starting over is safe whatever the broker did: the next
// attempt plans from the topic as it is, so a write that did land is found
// there and never written twice. A registration or a setting then answers
// as if this attempt had written it (same id, same level); a delete that
// did land answers as a second delete would (already deleted).
func conflict(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.InvalidTxnState) ||
		errors.Is(err, kerr.ConcurrentTransactions) || errors.Is(err, kerr.UnknownServerError)
}

// writeOnce is one attempt of write. It returns an *apiError when the plan
// refused the write, and a Kafka error otherwise.
func (r *Registry) writeOnce(ctx context.Context, p plan) error {
	if r.producer == nil {
		cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), r.cfg.Kafka...),
			kgo.TransactionalID(r.cfg.TransactionalID),
			kgo.DefaultProduceTopic(r.cfg.Topic),
			kgo.TransactionTimeout(r.cfg.Timeout),
		)...)
		if err != nil {
			return &apiError{500, 50001, "Error in the backend data store: " + err.Error()}
		}
		r.producer = cl
		// Take the transactional id now, before reading: from here on
		// any other instance's write fences this producer.
		if _, _, err := cl.ProducerID(ctx); err != nil {
			return fmt.Errorf("initializing the transactional producer %q: %w", r.cfg.TransactionalID, err)
		}
	}
	cl := r.producer
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	if err := r.tailer.WaitForEnd(ctx); err != nil {
		return err
	}
	r.mu.RLock()
	recs, planErr := p(r.st)
	r.mu.RUnlock()
	if planErr != nil || len(recs) == 0 {
		if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
			return err
		}
		return planErr
	}
	results := cl.ProduceSync(ctx, recs...)
	if err := results.FirstErr(); err != nil {
		return err
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return err
	}
	// Read our own write back before answering. Not by the end offsets:
	// Kafka may answer the commit before its markers are written, and
	// until then the last stable offset stays before the records.
	last := results[len(results)-1].Record
	return r.tailer.WaitPosition(ctx, last.Partition, last.Offset)
}

// storeError is a failure of the Kafka store: Confluent's 50001.
func storeError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &apiError{status: 500, code: 50002, msg: "Operation timed out: " + err.Error()}
	}
	return &apiError{status: 500, code: 50001, msg: "Error in the backend data store: " + err.Error()}
}

func record(key, value []byte) *kgo.Record { return &kgo.Record{Key: key, Value: value} }
