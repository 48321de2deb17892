package actors

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProducerOpts are the options of the worker's shared source producer, and
// the base of a connector's own (producer overrides come after them):
// idempotent with acks=all (kgo's defaults, stated here so nobody loosens
// them by accident; invariant 1 rests on acks=all), records keyed like
// Kafka's Java client (murmur2, so the same key lands on the same partition
// as with Connect), and a record whose source pinned a partition going
// there. Its metadata requests let the broker create a missing topic (if
// auto.create.topics.enable allows it), as Java's producer's do: a source
// without topic creation keys relies on that, as in Connect. Batches are
// not compressed, Java's compression.type default (franz-go's own default
// is snappy): the worker's producer.compression.type and a connector's
// producer.override.compression.type, which come after these options,
// choose a codec as they do in Connect. A partition whose leader is not
// known (a topic created a moment ago on a busy broker) is looked up again
// within a second, as Java's producer backs off at most retry.backoff.max.ms
// (1 s) between metadata requests: franz-go, after 2 s of quick retries,
// waits its MetadataMinAge, 5 s by default: the likely cause of the
// bench/connect runs on a loaded machine that took about 5 s longer for
// the same CPU (bench/results/throughput/README.md).
func ProducerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MetadataMinAge(time.Second),
		kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(pinPartitioner{kgo.StickyKeyPartitioner(nil)}),
		kgo.MaxBufferedRecords(1 << 17),
		kgo.ProducerLinger(0),
	}
}

// pinPartitioner sends records whose Partition is >= 0 there and leaves the
// rest (Partition -1) to the base partitioner.
type pinPartitioner struct{ base kgo.Partitioner }

func (p pinPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return pinTopic{p.base.ForTopic(topic)}
}

type pinTopic struct{ base kgo.TopicPartitioner }

func (p pinTopic) RequiresConsistency(r *kgo.Record) bool {
	return r.Partition >= 0 || p.base.RequiresConsistency(r)
}

func (p pinTopic) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		if int(r.Partition) < n {
			return int(r.Partition)
		}
		// An out-of-range pin cannot be honoured; keying keeps it stable.
	}
	return p.base.Partition(r, n)
}

// OnNewBatch keeps the base's sticky behaviour for unkeyed records.
func (p pinTopic) OnNewBatch() {
	if nb, ok := p.base.(kgo.TopicPartitionerOnNewBatch); ok {
		nb.OnNewBatch()
	}
}
