package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-io/sluice/bench/internal/benchproc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// broker is the one Apache Kafka node both systems run on.
type broker struct{ *benchproc.Kafka }

func startBroker(ctx context.Context, repo, dir string) (*broker, error) {
	// A deleted topic's files go within a second rather than 60 s later,
	// the first ones too (the broker's first run of its deletions waits
	// log.initial.task.delay.ms, 30 s). The harness deletes each round's
	// topic so that the rounds do not pile up on the disk and in the page
	// cache; with the delays, up to a minute of rounds' data (about 100 MB
	// a round) stayed dirty in the page cache until it passed the kernel's
	// dirty_background_ratio (about 2.2 GB on the 24 GiB machine), and
	// from then on the kernel's background writeback slowed the broker's
	// writes three to five times for whichever system's round it fell in
	// (bench/README, "two speeds").
	k, err := benchproc.OpenKafka(ctx, repo, dir, "log.segment.delete.delay.ms=1000", "log.initial.task.delay.ms=1000")
	if err != nil {
		return nil, err
	}
	return &broker{k}, nil
}

// pid is the broker JVM's, from the pid file kafka.sh writes.
func (b *broker) pid() (int, error) {
	s, err := os.ReadFile(filepath.Join(b.Dir, "kafka.pid"))
	if err != nil {
		return 0, err
	}
	var pid int
	_, err = fmt.Sscan(strings.TrimSpace(string(s)), &pid)
	return pid, err
}

// deleteTopic deletes a run's topic, so that the broker's disk and page
// cache do not grow with every round.
func (b *broker) deleteTopic(ctx context.Context, topic string) error {
	resps, err := b.Admin.DeleteTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	return resps.Error()
}

// records is the number of records in a topic: the sum of its partitions'
// end offsets. The topics the harness reads are fresh and written without
// transactions, so offsets count records one for one.
func (b *broker) records(ctx context.Context, topic string) (int64, error) {
	offs, err := b.Admin.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	if err := offs.Error(); err != nil {
		return 0, err
	}
	var n int64
	offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n, nil
}

// waitRecords polls the topic every 20 ms until it holds want records and
// returns when that was first seen. More than want is an error: a
// duplicate would make the run look faster than it was.
func (b *broker) waitRecords(ctx context.Context, topic string, want int64, timeout time.Duration, alive func() error) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	var last int64
	for time.Now().Before(deadline) {
		if err := alive(); err != nil {
			return time.Time{}, err
		}
		n, err := b.records(ctx, topic)
		seen := time.Now()
		if err == nil {
			last = n
			if n == want {
				return seen, nil
			}
			if n > want {
				return time.Time{}, fmt.Errorf("topic %s holds %d records, more than the %d written to the file", topic, n, want)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("topic %s holds %d of %d records after %v", topic, last, want, timeout)
}

// produceLines writes each line of the file as one record's value to a
// topic, encoded as both workers' JsonConverter (schemas.enable=true)
// encodes a string: the sink scenario's input.
func (b *broker) produceLines(ctx context.Context, topic string, lines [][]byte) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100000))
	if err != nil {
		return err
	}
	defer cl.Close()
	errc := make(chan error, 1)
	for _, line := range lines {
		v := jsonStringEnvelope(line)
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return fmt.Errorf("produce to %s: %w", topic, err)
	default:
		return nil
	}
}

// jsonStringEnvelope is JsonConverter's encoding of a STRING value with
// schemas.enable=true. The lines are ASCII letters, digits and spaces,
// which JSON takes unescaped; anything else would need escaping.
func jsonStringEnvelope(s []byte) []byte {
	for _, c := range s {
		if c == '"' || c == '\\' || c < 0x20 || c >= 0x7f {
			panic(errors.New("jsonStringEnvelope: the generated lines must be plain ASCII"))
		}
	}
	out := make([]byte, 0, len(s)+64)
	out = append(out, `{"schema":{"type":"string","optional":false},"payload":"`...)
	out = append(out, s...)
	return append(out, `"}`...)
}
