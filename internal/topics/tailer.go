package topics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrClosed is returned by waits on a closed Tailer or store.
var ErrClosed = errors.New("closed")

// Tailer reads one topic from the start of every partition and keeps
// following it, calling apply for each record in partition order on a single
// goroutine.
//
// It consumes read_committed and keeps control records (without passing them
// to apply) so that its position moves past transaction markers: a
// partition whose last entry is a commit marker is then still read "to the
// end", which WaitForEnd measures against the last stable offset.
type Tailer struct {
	topic string
	apply func(*kgo.Record)
	cl    *kgo.Client
	adm   *kadm.Client
	dial  *dialHook

	startOnce sync.Once
	closeOnce sync.Once
	cancel    context.CancelFunc // set under mu by Start
	done      chan struct{}      // closed when the poll loop has exited
	closed    chan struct{}      // closed by Close

	mu       sync.Mutex
	pos      map[int32]int64 // next offset to read per partition
	progress chan struct{}   // closed and replaced whenever pos advances
	lastErr  error           // latest fetch error or recovered apply panic
}

// NewTailer creates a tailer of topic. opts carry the connection settings
// (seed brokers, TLS, SASL, ...); they may also carry producer settings, as
// stores produce through Client.
func NewTailer(opts []kgo.Opt, topic string, apply func(*kgo.Record)) (*Tailer, error) {
	if topic == "" {
		return nil, errors.New("tailer: empty topic name")
	}
	if apply == nil {
		return nil, errors.New("tailer: nil apply function")
	}
	dial := &dialHook{}
	all := append(cloneOpts(opts),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		// A fetch returns as soon as records or a committed transaction's
		// markers arrive, so this bounds only a wait the broker does not
		// end early (kfake does not for an aborted transaction's
		// marker), and how often an idle tailer asks: every worker tails
		// three topics, and at 100 ms their fetches were a third of an
		// idle worker's CPU (ADR 0017, round 3). 500 ms is the consumer
		// default that Connect's KafkaBasedLog tails with.
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.WithHooks(dial),
	)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("tailer for topic %q: %w", topic, err)
	}
	return &Tailer{
		topic:    topic,
		apply:    apply,
		cl:       cl,
		adm:      kadm.NewClient(cl),
		dial:     dial,
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
		pos:      make(map[int32]int64),
		progress: make(chan struct{}),
	}, nil
}

func cloneOpts(opts []kgo.Opt) []kgo.Opt { return append([]kgo.Opt(nil), opts...) }

// Client is the tailer's Kafka client, for producing to the same cluster
// without a second set of connections. It is closed by Close.
func (t *Tailer) Client() *kgo.Client { return t.cl }

// Topic is the topic being tailed.
func (t *Tailer) Topic() string { return t.topic }

// Start begins tailing and returns once every record that existed when it
// was called has been applied, or with an error when ctx ends first. The
// tailer keeps running after an error; Close stops it.
func (t *Tailer) Start(ctx context.Context) error {
	t.startOnce.Do(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		select {
		case <-t.closed:
			return // WaitForEnd below reports the closed tailer
		default:
		}
		loopCtx, cancel := context.WithCancel(context.Background())
		t.cancel = cancel
		go t.loop(loopCtx)
	})
	return t.WaitForEnd(ctx)
}

func (t *Tailer) loop(ctx context.Context) {
	defer close(t.done)
	for {
		fs := t.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		var fetchErr error
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			fetchErr = fmt.Errorf("fetching %s[%d]: %w", topic, p, err)
		})
		if fetchErr != nil {
			t.mu.Lock()
			t.lastErr = fetchErr
			t.mu.Unlock()
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				if !r.Attrs.IsControl() {
					t.safeApply(r)
				}
				t.advance(r.Partition, r.Offset+1)
			}
		})
		if fetchErr != nil && fs.NumRecords() == 0 {
			// Errors kgo hands back are not retried by it with
			// backoff; avoid spinning on them.
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// safeApply keeps the tailer alive when apply panics on one record: the
// panic is kept as LastError and the record counts as read, so that one bad
// record cannot stall every waiter.
func (t *Tailer) safeApply(r *kgo.Record) {
	defer func() {
		if v := recover(); v != nil {
			t.mu.Lock()
			t.lastErr = fmt.Errorf("applying %s[%d]@%d (key %q) panicked: %v", r.Topic, r.Partition, r.Offset, r.Key, v)
			t.mu.Unlock()
		}
	}()
	t.apply(r)
}

func (t *Tailer) advance(p int32, next int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if next > t.pos[p] {
		t.pos[p] = next
		close(t.progress)
		t.progress = make(chan struct{})
	}
}

// LastError is the most recent fetch error or apply panic, for diagnostics.
func (t *Tailer) LastError() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastErr
}

// EndOffsets lists, per partition, the offset up to which the topic must be
// read to have seen every record that exists now: the last stable offset,
// or 0 for a partition whose records have all been deleted. Retriable
// failures (a broker not up yet, a topic another worker is creating) are
// retried until ctx ends; the error then names the last cause.
func (t *Tailer) EndOffsets(ctx context.Context) (map[int32]int64, error) {
	const what = "listing end offsets"
	var last error
	for {
		targets, err := t.endOffsets(ctx)
		if err == nil {
			return targets, nil
		}
		if ctx.Err() != nil && last != nil {
			return nil, fmt.Errorf("topic %q: %s: %w (last error: %v)", t.topic, what, ctx.Err(), last)
		}
		if ctx.Err() != nil || !retriable(err) {
			return nil, t.explain(what, err)
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("topic %q: %s: %w (last error: %v)", t.topic, what, ctx.Err(), last)
		case <-t.closed:
			return nil, fmt.Errorf("reading topic %q: tailer %w", t.topic, ErrClosed)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func retriable(err error) bool {
	var netErr net.Error
	return kerr.IsRetriable(err) || errors.As(err, &netErr)
}

func (t *Tailer) endOffsets(ctx context.Context) (map[int32]int64, error) {
	ends, err := t.adm.ListCommittedOffsets(ctx, t.topic)
	if err != nil {
		return nil, err
	}
	starts, err := t.adm.ListStartOffsets(ctx, t.topic)
	if err != nil {
		return nil, err
	}
	targets := make(map[int32]int64)
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Topic != t.topic {
			return
		}
		if o.Err != nil {
			lerr = fmt.Errorf("partition %d: %w", o.Partition, o.Err)
			return
		}
		// Nothing to wait for where retention or DeleteRecords left
		// the partition empty: no record would ever move pos there.
		if s, ok := starts.Lookup(t.topic, o.Partition); ok && s.Err == nil && s.Offset >= o.Offset {
			targets[o.Partition] = 0
			return
		}
		targets[o.Partition] = o.Offset
	})
	if lerr != nil {
		return nil, lerr
	}
	if len(targets) == 0 {
		return nil, kerr.UnknownTopicOrPartition
	}
	return targets, nil
}

// WaitForEnd returns once every record that existed in the topic when it was
// called has been applied, or an error once ctx ends or the tailer closes.
func (t *Tailer) WaitForEnd(ctx context.Context) error {
	targets, err := t.EndOffsets(ctx)
	if err != nil {
		return err
	}
	return t.WaitFor(ctx, targets)
}

// WaitFor returns once the tailer's position reaches targets (partition ->
// next offset to read) in every partition.
func (t *Tailer) WaitFor(ctx context.Context, targets map[int32]int64) error {
	for {
		t.mu.Lock()
		behind := 0
		for p, off := range targets {
			if t.pos[p] < off {
				behind++
			}
		}
		ch := t.progress
		t.mu.Unlock()
		if behind == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-t.closed:
			return fmt.Errorf("reading topic %q: tailer %w", t.topic, ErrClosed)
		case <-ctx.Done():
			return t.explain(fmt.Sprintf("reading to the end (%d partition(s) behind)", behind), ctx.Err())
		}
	}
}

// Position is the next offset the tailer will read in partition p.
func (t *Tailer) Position(p int32) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pos[p]
}

// WaitPosition returns once the tailer has read partition p past offset, so
// that a record produced at offset has been applied.
func (t *Tailer) WaitPosition(ctx context.Context, p int32, offset int64) error {
	return t.WaitFor(ctx, map[int32]int64{p: offset + 1})
}

// explain prefixes err with the topic and what was being done, and adds to
// a timeout the reason the broker could not be reached, which kgo keeps
// retrying silently.
func (t *Tailer) explain(what string, err error) error {
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("topic %q: %s: %w", t.topic, what, err)
	}
	cause := t.dial.last()
	if cause == nil {
		cause = t.LastError()
	}
	if cause != nil {
		return fmt.Errorf("topic %q: %s: %w (broker: %v)", t.topic, what, err, cause)
	}
	return fmt.Errorf("topic %q: %s: %w", t.topic, what, err)
}

// Close stops tailing and closes the client; waits return ErrClosed.
func (t *Tailer) Close() {
	t.closeOnce.Do(func() {
		close(t.closed)
		t.mu.Lock()
		cancel := t.cancel
		t.mu.Unlock()
		if cancel != nil {
			cancel()
			<-t.done
		}
		t.cl.Close()
	})
}

// dialHook remembers the latest failed connection attempt, cleared by a
// successful one, so that a timeout can say "connection refused".
type dialHook struct {
	mu  sync.Mutex
	err error
}

func (h *dialHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.err = fmt.Errorf("connecting to %s:%d: %w", meta.Host, meta.Port, err)
	} else {
		h.err = nil
	}
}

func (h *dialHook) last() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}
