package connconfig

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
)

// The sink consumer's own settings, which consumer overrides replace. A
// session timeout of 10 s (Kafka's is 45 s) moves a dead task's partitions
// sooner; fetch.max.bytes bounds a task's memory. max.partition.fetch.bytes
// is Connect's consumer default, 1 MiB: a fetch of several partitions at
// 4 MiB each had to arrive and be decoded whole before the task's first
// record, which delayed a sink's start by over a second on a full topic
// (BenchmarkSinkThroughput's first-byte-ms), and smaller fetches keep the
// next one coming while the task writes.
const (
	SinkSessionTimeout         = 10 * time.Second
	SinkHeartbeatInterval      = time.Second
	SinkFetchMaxBytes          = 16 << 20
	SinkFetchMaxPartitionBytes = 1 << 20
)

// javaRequestTimeout is request.timeout.ms's default in Kafka's Java
// producer, against which Java checks delivery.timeout.ms.
const javaRequestTimeout = 30 * time.Second

// franz-go's bounds (kgo's config validation), checked here so that a
// value it would refuse is refused by name when the config is written.
const (
	kgoDefaultWriteBytes = 100 << 20 // BrokerMaxWriteBytes and BrokerMaxReadBytes
	kgoMaxBytes          = 1 << 30
	kgoMinBatchBytes     = 512
	kgoMaxLinger         = time.Minute
	kgoMinTimeout        = 100 * time.Millisecond
	kgoMaxOverhead       = 15 * time.Minute
	kgoMinRecordTimeout  = time.Second
	kgoMinFetchWait      = 10 * time.Millisecond
	kgoMaxClientID       = 256
	// kgoIdempotentInFlight is how many produce requests franz-go's
	// idempotent producer keeps in flight per broker, always.
	kgoIdempotentInFlight = 5
)

// The overrides Sluice honours, per client. Any other key is refused by
// name.
var (
	producerKeys = []string{"acks", bufferMemory, "client.id", "compression.type", "delivery.timeout.ms", "enable.idempotence",
		"linger.ms", "max.in.flight.requests.per.connection", "max.request.size", "request.timeout.ms"}
	consumerKeys = []string{"auto.offset.reset", "client.id", "fetch.max.bytes", "fetch.max.wait.ms", "fetch.min.bytes",
		"heartbeat.interval.ms", "isolation.level", "max.partition.fetch.bytes", "max.poll.records",
		"request.timeout.ms", "session.timeout.ms"}
	adminKeys = []string{"client.id", "request.timeout.ms"}
)

// bufferMemory is the producer's buffer.memory, which the runtime rather
// than franz-go honours (ProducerOverrides.BufferMemory).
const bufferMemory = "buffer.memory"

var producerRefused = map[string]string{
	"batch.size": "franz-go bounds a batch by one size only, max.request.size, which also bounds the largest record; " +
		"a batch.size below a record's size would make that record fail, where Kafka's Java producer sends it in a " +
		"batch of its own. franz-go's batches grow up to max.request.size while earlier requests are in flight; " +
		"linger.ms makes them wait to fill",
	"transactional.id": "the runtime names each exactly-once source task's transactional producer itself " +
		"(<group.id>-<connector>-<task>, as Kafka Connect does), so that the next generation of the task can fence it",
}

var consumerRefused = map[string]string{
	"group.id": "a sink's consumer group is connect-<connector name>, which the offsets API " +
		"(GET/PATCH/DELETE /connectors/{name}/offsets) reads and changes",
	"enable.auto.commit": "a sink commits the offsets of what its task wrote, and only those (invariant 1), as Kafka Connect does",
	"group.instance.id":  "each sink task is the static member <connector>-<task> of its group",
}

func (p *overrideParser) integer(key string, bits int, min int64) (int64, bool) {
	raw, set := p.keys[key]
	if !set {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, bits)
	if err != nil {
		p.invalid(key, fmt.Sprintf("not a %d-bit integer", bits))
		return 0, false
	}
	if n < min {
		p.invalid(key, fmt.Sprintf("value must be at least %d", min))
		return 0, false
	}
	return n, true
}

// millis reads key as Java's INT milliseconds (at least 0) that franz-go
// takes between lo and hi (0: no upper bound).
func (p *overrideParser) millis(key string, lo, hi time.Duration) (time.Duration, bool) {
	n, ok := p.integer(key, 32, 0)
	if !ok {
		return 0, false
	}
	d := time.Duration(n) * time.Millisecond
	if d < lo || (hi > 0 && d > hi) {
		bound := fmt.Sprintf("at least %d", lo.Milliseconds())
		if hi > 0 {
			bound = fmt.Sprintf("between %d and %d", lo.Milliseconds(), hi.Milliseconds())
		}
		p.invalid(key, fmt.Sprintf("franz-go, the %s Sluice uses, takes %s ms", p.client, bound))
		return 0, false
	}
	return d, true
}

// bytes reads key as Java's INT byte count that franz-go takes between lo
// and hi.
func (p *overrideParser) bytes(key string, lo, hi int64) (int32, bool) {
	n, ok := p.integer(key, 32, 0)
	if !ok {
		return 0, false
	}
	if n < lo || n > hi {
		p.invalid(key, fmt.Sprintf("franz-go, the %s Sluice uses, takes between %d and %d bytes", p.client, lo, hi))
		return 0, false
	}
	return int32(n), true
}

func (p *overrideParser) oneOf(key string, allowed ...string) (string, bool) {
	raw, set := p.keys[key]
	if !set {
		return "", false
	}
	v := strings.TrimSpace(raw)
	for _, a := range allowed {
		if v == a {
			return v, true
		}
	}
	p.invalid(key, "String must be one of: "+strings.Join(allowed, ", "))
	return "", false
}

func (p *overrideParser) clientID() {
	id, set := p.keys["client.id"]
	if !set {
		return
	}
	if len(id) > kgoMaxClientID {
		p.invalid("client.id", fmt.Sprintf("franz-go takes client ids of at most %d bytes", kgoMaxClientID))
		return
	}
	p.opts = append(p.opts, kgo.ClientID(id))
}

// requestTimeout maps request.timeout.ms onto how long franz-go waits for a
// response (RequestTimeoutOverhead, added to a request's own timeout).
func (p *overrideParser) requestTimeout() (time.Duration, bool) {
	d, ok := p.millis("request.timeout.ms", kgoMinTimeout, kgoMaxOverhead)
	if ok {
		p.opts = append(p.opts, kgo.RequestTimeoutOverhead(d))
	}
	return d, ok
}

// finish checks the options together as franz-go will and returns them;
// nil when a key was bad.
func (p *overrideParser) finish(base ...kgo.Opt) []kgo.Opt {
	if p.bad {
		return nil
	}
	all := append(append([]kgo.Opt{kgo.SeedBrokers("localhost:9092")}, base...), p.opts...)
	if err := kgo.ValidateOpts(all...); err != nil {
		for _, k := range sortedKeys(p.keys) {
			p.fail(k, "franz-go, the %s Sluice uses, refuses these %s overrides together: %v", p.client, p.prefix+"*", err)
		}
		return nil
	}
	return p.opts
}

// parseProducer maps producer.override.* (prefix; or a worker's
// producer.*) onto franz-go producer options.
// Sluice's producer is idempotent with acks=all; acks 0 or 1 turn
// idempotence off, as Kafka's Java producer does when enable.idempotence
// is not set. With acks=0 a record counts as acknowledged once written to
// the socket, and with acks=1 once the leader has it: its offset may then
// be committed for a record Kafka loses, which weakens invariant 1 exactly
// as the same setting weakens Connect's at-least-once delivery.
func parseProducer(prefix string, keys map[string]string, ce *connectors.ConfigError) ProducerOverrides {
	p := &overrideParser{prefix: prefix, client: "producer", keys: keys, ce: ce}
	p.refuseUnknown(producerKeys, producerRefused)
	var o ProducerOverrides
	// Java's LONG, at least 0; 0 would fail every record (larger than the
	// buffer), so Sluice refuses it up front rather than start a task that
	// can send nothing.
	if n, ok := p.integer(bufferMemory, 64, 1); ok {
		o.BufferMemory = n
	}
	p.clientID()
	p.idempotence()
	if c, ok := p.oneOf("compression.type", "none", "gzip", "snappy", "lz4", "zstd"); ok {
		codec := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
			"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}[c]
		p.opts = append(p.opts, kgo.ProducerBatchCompression(codec))
	}
	linger, ok := p.millis("linger.ms", 0, kgoMaxLinger)
	if ok {
		p.opts = append(p.opts, kgo.ProducerLinger(linger))
	}
	if n, ok := p.bytes("max.request.size", kgoMinBatchBytes, kgoMaxBytes); ok {
		// A record larger than this fails, as Java's RecordTooLargeException;
		// a request carries batches of several partitions up to the
		// broker's socket.request.max.bytes (franz-go: 100 MiB).
		p.opts = append(p.opts, kgo.ProducerBatchMaxBytes(n))
		if n > kgoDefaultWriteBytes {
			p.opts = append(p.opts, kgo.BrokerMaxWriteBytes(n))
		}
	}
	request, set := p.requestTimeout()
	if set {
		// Java sends request.timeout.ms as the produce request's timeout.
		p.opts = append(p.opts, kgo.ProduceRequestTimeout(request))
	} else {
		request = javaRequestTimeout
	}
	if d, ok := p.millis("delivery.timeout.ms", kgoMinRecordTimeout, 0); ok {
		// Checked as Java checks it, unless one of the two is bad already.
		if !p.bad && d < linger+request {
			p.fail("delivery.timeout.ms", "delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms")
		}
		p.opts = append(p.opts, kgo.RecordDeliveryTimeout(d))
	}
	o.ClientOverrides = ClientOverrides{Keys: keys, Opts: p.finish()}
	return o
}

// idempotence maps acks, enable.idempotence and
// max.in.flight.requests.per.connection, which Java checks together.
func (p *overrideParser) idempotence() {
	idem, explicit := true, false
	if raw, set := p.keys["enable.idempotence"]; set {
		switch strings.ToLower(strings.TrimSpace(raw)) {
		case "true":
			explicit = true
		case "false":
			idem, explicit = false, true
		default:
			p.invalid("enable.idempotence", "expected true or false")
		}
	}
	if acks, ok := p.oneOf("acks", "all", "-1", "0", "1"); ok {
		level := map[string]kgo.Acks{"all": kgo.AllISRAcks(), "-1": kgo.AllISRAcks(), "1": kgo.LeaderAck(), "0": kgo.NoAck()}[acks]
		p.opts = append(p.opts, kgo.RequiredAcks(level))
		if acks == "0" || acks == "1" {
			if explicit && idem {
				p.fail("acks", "Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence.")
			}
			idem = false
		}
	}
	if n, ok := p.integer("max.in.flight.requests.per.connection", 32, 1); ok {
		switch {
		case !idem:
			p.opts = append(p.opts, kgo.MaxProduceRequestsInflightPerBroker(int(n)))
		case n > kgoIdempotentInFlight:
			p.fail("max.in.flight.requests.per.connection", "Must set max.in.flight.requests.per.connection to at most 5 to use "+
				"the idempotent producer (Sluice's producer is idempotent unless enable.idempotence=false, or acks is 0 or 1).")
		case n < kgoIdempotentInFlight:
			p.fail("max.in.flight.requests.per.connection", "franz-go's idempotent producer, which Sluice's is unless "+
				"enable.idempotence=false (or acks is 0 or 1), keeps up to 5 requests in flight per broker and keeps their "+
				"order by sequence numbers; it cannot bound them to %d. Set enable.idempotence=false to bound them (Kafka "+
				"Connect's own producer is not idempotent and keeps 1 in flight), or remove the key.", n)
		}
	}
	if !idem {
		p.opts = append(p.opts, kgo.DisableIdempotentWrite())
	}
}

// parseConsumer maps consumer.override.* (prefix; or a worker's
// consumer.*) onto the options of a sink task's consumer, and
// max.poll.records onto the batch bound of its Write.
func parseConsumer(prefix string, keys map[string]string, ce *connectors.ConfigError) ConsumerOverrides {
	p := &overrideParser{prefix: prefix, client: "consumer", keys: keys, ce: ce}
	p.refuseUnknown(consumerKeys, consumerRefused)
	var c ConsumerOverrides
	p.clientID()
	if n, ok := p.integer("max.poll.records", 32, 1); ok {
		c.MaxPollRecords = int(n)
	}
	if n, ok := p.integer("fetch.min.bytes", 32, 0); ok {
		p.opts = append(p.opts, kgo.FetchMinBytes(int32(n)))
	}
	if n, ok := p.bytes("fetch.max.bytes", 1, kgoMaxBytes); ok {
		p.opts = append(p.opts, kgo.FetchMaxBytes(n))
		if n > kgoDefaultWriteBytes {
			p.opts = append(p.opts, kgo.BrokerMaxReadBytes(n))
		}
	}
	if n, ok := p.bytes("max.partition.fetch.bytes", 1, kgoMaxBytes); ok {
		p.opts = append(p.opts, kgo.FetchMaxPartitionBytes(n))
	}
	if d, ok := p.millis("fetch.max.wait.ms", kgoMinFetchWait, 0); ok {
		p.opts = append(p.opts, kgo.FetchMaxWait(d))
	}
	if v, ok := p.oneOf("isolation.level", "read_committed", "read_uncommitted"); ok {
		level := kgo.ReadUncommitted()
		if v == "read_committed" {
			level = kgo.ReadCommitted()
		}
		p.opts = append(p.opts, kgo.FetchIsolationLevel(level))
	}
	if v, ok := p.oneOf("auto.offset.reset", "latest", "earliest", "none"); ok {
		reset := map[string]kgo.Offset{"earliest": kgo.NewOffset().AtStart(), "latest": kgo.NewOffset().AtEnd(),
			"none": kgo.NewOffset().AtCommitted()}[v]
		p.opts = append(p.opts, kgo.ConsumeResetOffset(reset))
		c.NoReset = v == "none"
	}
	session, sessionSet := p.millis("session.timeout.ms", kgoMinTimeout, 0)
	heartbeat, heartbeatSet := p.millis("heartbeat.interval.ms", 0, 0)
	if sessionSet || heartbeatSet {
		if !sessionSet {
			session = SinkSessionTimeout
		}
		if !heartbeatSet {
			heartbeat = SinkHeartbeatInterval
		}
		if heartbeat >= session {
			key := "heartbeat.interval.ms"
			if !heartbeatSet {
				key = "session.timeout.ms"
			}
			p.fail(key, "Heartbeat must be set lower than the session timeout (heartbeat.interval.ms %d ms, session.timeout.ms %d ms)",
				heartbeat.Milliseconds(), session.Milliseconds())
		}
		p.opts = append(p.opts, kgo.SessionTimeout(session), kgo.HeartbeatInterval(heartbeat))
	}
	p.requestTimeout()
	c.ClientOverrides = ClientOverrides{Keys: keys, Opts: p.finish(kgo.ConsumerGroup("connect-validate"),
		kgo.ConsumeTopics("t"), kgo.FetchMaxBytes(SinkFetchMaxBytes), kgo.FetchMaxPartitionBytes(SinkFetchMaxPartitionBytes))}
	return c
}

// parseAdmin maps admin.override.* (prefix; or a worker's admin.*) onto
// the options of a connector's admin client.
func parseAdmin(prefix string, keys map[string]string, ce *connectors.ConfigError) AdminOverrides {
	p := &overrideParser{prefix: prefix, client: "admin client", keys: keys, ce: ce}
	p.refuseUnknown(adminKeys, nil)
	p.clientID()
	var a AdminOverrides
	if d, ok := p.requestTimeout(); ok {
		a.RequestTimeout = int32(d.Milliseconds())
	}
	a.ClientOverrides = ClientOverrides{Keys: keys, Opts: p.finish()}
	return a
}
