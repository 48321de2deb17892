package actors

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ProducerOpts are the options of the worker's shared source producer, and
// the base of a connector's own (producer overrides come after them):
// idempotent with acks=all (kgo's defaults, stated here so nobody loosens
// them by accident; invariant 1 rests on acks=all), records partitioned as
// by Kafka's Java client (newPartitioner: murmur2 of the key, so the same
// key lands on the same partition as with Connect), and a record whose
// source pinned a partition going there. Unlike Java's producer's, its
// metadata requests do not let the broker create a missing topic: franz-go
// asks about every topic a client ever produced to at each refresh, so a
// topic deleted after its connector was would come back at the shared
// producer's next refresh (ADR 0032). A task asks for the auto-creation
// Connect's producer would have asked for once, before its first record to
// a topic (ensureTopic). Batches are not compressed, Java's compression.type
// default (franz-go's own default is snappy): the worker's
// producer.compression.type and a connector's
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
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(newPartitioner()),
		kgo.MaxBufferedRecords(1 << 17),
		kgo.ProducerLinger(0),
	}
}

// stickyBatchBytes is how many bytes of unkeyed records go to one partition
// before the partitioner picks another: Java's batch.size default, which
// its built-in partitioner (KIP-794, Kafka 3.3) uses as its sticky size.
const stickyBatchBytes = 16384

// newPartitioner is the producer's partitioner, the one Connect's Java
// producer has by default since Kafka 3.3 (KIP-794): a keyed record goes to
// murmur2(key) mod partitions, the same partition as with Connect; unkeyed
// records stick to one partition for stickyBatchBytes, then move on,
// favouring partitions with less buffered (partitioner.adaptive.partitioning
// .enable's default). franz-go's older sticky partitioner (KIP-480) asks to
// hear of every new batch, for which franz-go holds the topic's partitioner
// lock while it buffers each record: the tasks producing to one topic then
// buffered their records one at a time (issue 13: the most contended lock
// of BenchmarkThroughput's block profile). This one does not ask.
func newPartitioner() kgo.Partitioner {
	return pinPartitioner{kgo.UniformBytesPartitioner(stickyBatchBytes, true, true, nil)}
}

// pinPartitioner sends records whose Partition is >= 0 there and leaves the
// rest (Partition -1) to the base partitioner, which partitions by the
// partitions' backlog (kgo.TopicBackupPartitioner).
type pinPartitioner struct{ base kgo.Partitioner }

func (p pinPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return pinTopic{
		base:     p.base.ForTopic(topic).(kgo.TopicBackupPartitioner),
		fallback: kgo.StickyKeyPartitioner(nil).ForTopic(topic),
	}
}

type pinTopic struct {
	base kgo.TopicBackupPartitioner
	// fallback partitions like base where franz-go would ask Partition
	// rather than PartitionByBackup, which it does not today: keys by
	// murmur2, unkeyed records sticky.
	fallback kgo.TopicPartitioner
}

func (p pinTopic) RequiresConsistency(r *kgo.Record) bool {
	return r.Partition >= 0 || p.base.RequiresConsistency(r)
}

func (p pinTopic) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 && int(r.Partition) < n {
		return int(r.Partition)
	}
	return p.fallback.Partition(r, n)
}

func (p pinTopic) PartitionByBackup(r *kgo.Record, n int, backup kgo.TopicBackupIter) int {
	if r.Partition >= 0 {
		if int(r.Partition) < n {
			return int(r.Partition)
		}
		// An out-of-range pin cannot be honoured; keying keeps it stable.
	}
	return p.base.PartitionByBackup(r, n, backup)
}
