package actors

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
)

// compressionOf is the codec preference of a client made with opts.
func compressionOf(t *testing.T, opts ...kgo.Opt) []kgo.CompressionCodec {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return cl.OptValue(kgo.ProducerBatchCompression).([]kgo.CompressionCodec)
}

// Connect's producer compresses nothing unless compression.type says so;
// franz-go would use snappy. The worker's producer.compression.type, then
// a connector's override, come after ProducerOpts and win.
func TestProducerCompressionIsConnectsDefault(t *testing.T) {
	if got := compressionOf(t, ProducerOpts()...); !reflect.DeepEqual(got, []kgo.CompressionCodec{kgo.NoCompression()}) {
		t.Fatalf("the shared producer compresses with %v, want none", got)
	}
	w, err := connconfig.ParseWorker(map[string]string{"producer.compression.type": "lz4"})
	if err != nil {
		t.Fatal(err)
	}
	opts := append(ProducerOpts(), w.Clients.Producer.Opts...)
	if got := compressionOf(t, opts...); !reflect.DeepEqual(got, []kgo.CompressionCodec{kgo.Lz4Compression()}) {
		t.Fatalf("with the worker's producer.compression.type=lz4 the producer compresses with %v", got)
	}
	o, err := connconfig.ParseRuntime(w, connectors.Source, map[string]string{"producer.override.compression.type": "zstd"})
	if err != nil {
		t.Fatal(err)
	}
	if got := compressionOf(t, append(opts, o.Overrides.Producer.Opts...)...); !reflect.DeepEqual(got, []kgo.CompressionCodec{kgo.ZstdCompression()}) {
		t.Fatalf("with producer.override.compression.type=zstd the producer compresses with %v", got)
	}
}

// A partition without a known leader is looked up again within Java's
// retry.backoff.max.ms (1 s), not franz-go's 5 s.
func TestProducerMetadataBackoffIsJavas(t *testing.T) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, ProducerOpts()...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := cl.OptValue(kgo.MetadataMinAge); got != time.Second {
		t.Fatalf("metadata min age %v, want 1s", got)
	}
}

// The producer partitions as Connect's Java producer does by default
// (KIP-794): a keyed record goes to murmur2(key) mod the partition count,
// so that a key lands where Connect would put it; a record whose source
// pinned a partition goes there; unkeyed records stick to a partition for
// 16 KiB, then move on, so that over many records every partition gets
// some, in runs.
func TestProducerPartitionsAsJavasDefault(t *testing.T) {
	const partitions = 7
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, "p"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, ProducerOpts()...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	partitionOf := func(r *kgo.Record) int32 {
		t.Helper()
		res := cl.ProduceSync(ctx, r)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		return res[0].Record.Partition
	}

	// Kafka's own murmur2 test vectors (UtilsTest.testMurmur2), signed as
	// Java returns them; the partition is the hash's positive part mod n.
	for key, hash := range map[string]int32{
		"21": -973932308, "foobar": -790332482, "a-little-bit-long-string": -985981536,
		"a-little-bit-longer-string": -1486304829, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		want := int32(hash&0x7fffffff) % partitions
		for range 3 {
			if got := partitionOf(&kgo.Record{Topic: "p", Key: []byte(key), Value: []byte("v"), Partition: -1}); got != want {
				t.Fatalf("key %q went to partition %d, want %d (murmur2 %d)", key, got, want, hash)
			}
		}
	}
	for _, pin := range []int32{0, 4, 6} {
		if got := partitionOf(&kgo.Record{Topic: "p", Key: []byte("abc"), Value: []byte("v"), Partition: pin}); got != pin {
			t.Fatalf("a record pinned to partition %d went to %d", pin, got)
		}
	}

	// Unkeyed: 100-byte values, produced together so that they batch.
	value := make([]byte, 100)
	const n = 7000
	got := make([]int32, n)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: "p", Value: value, Partition: -1}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
			}
			got[i] = r.Partition
		})
	}
	wg.Wait()
	per := map[int32]int{}
	runs := 1
	for i, p := range got {
		per[p]++
		if i > 0 && p != got[i-1] {
			runs++
		}
	}
	if len(per) != partitions {
		t.Fatalf("unkeyed records reached %d partitions of %d: %v", len(per), partitions, per)
	}
	// About 16 KiB of records (some 140 of these) per run.
	if runs > n/50 {
		t.Fatalf("unkeyed records changed partition %d times in %d records: not sticky", runs-1, n)
	}
}
