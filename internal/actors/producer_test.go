package actors

import (
	"reflect"
	"testing"
	"time"

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
