package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/converters"
)

// countedRegistry is franz-go's in-memory Schema Registry behind a server
// that counts requests: the benchmark's records must cost one registration,
// not one request per record.
type countedRegistry struct {
	srv   *httptest.Server
	calls atomic.Int64
}

func newCountedRegistry(tb testing.TB) *countedRegistry {
	reg := srfake.New()
	c := &countedRegistry{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.calls.Add(1)
		reg.Handler().ServeHTTP(w, r)
	}))
	tb.Cleanup(func() {
		c.srv.Close()
		reg.Close()
	})
	return c
}

// avroConfig turns a Datagen config into the same connector writing its
// values with AvroConverter against the registry at url.
func avroConfig(c map[string]string, url string) map[string]string {
	delete(c, "value.converter.schemas.enable")
	c["value.converter"] = converters.AvroConverterClass
	c["value.converter.schema.registry.url"] = url
	return c
}

// avroPair is one run with JsonConverter (schemas disabled; "raw" here,
// the baseline) and one with AvroConverter, of the same records.
type avroPair = runTimes[sluiceTimes]

func runAvroPair(ctx context.Context, e *env, url string, run int, s throughputSpec, jsonFirst bool) (avroPair, error) {
	var r avroPair
	plain, avro := fmt.Sprintf("json-%d", run), fmt.Sprintf("avro-%d", run)
	plainTopic, avroTopic := e.k.Topic(plain), e.k.Topic(avro)
	for _, topic := range []string{plainTopic, avroTopic} {
		if err := e.createTopic(ctx, topic, int32(s.tasks)); err != nil {
			return r, err
		}
	}
	one := func(name, topic string, config map[string]string, into *sluiceTimes) func() error {
		return func() (err error) {
			*into, err = e.runAndDrop(ctx, name, topic, config, s)
			return err
		}
	}
	var plainT sluiceTimes
	err := inOrder(jsonFirst, runtime.GC,
		one(plain, plainTopic, datagenConfig(plain, plainTopic, s.tasks, s.perTask, s.valueSize), &plainT),
		one(avro, avroTopic, avroConfig(datagenConfig(avro, avroTopic, s.tasks, s.perTask, s.valueSize), url), &r.sluice))
	r.raw = plainT.committed
	return r, err
}

// BenchmarkAvroConverter measures Datagen -> Kafka with AvroConverter
// against the same connector with JsonConverter (schemas.enable=false), in
// one process on one broker, alternating which runs first. Reported: both
// rates, ratio-vs-json (Avro records/s over JSON records/s, committed; the
// target is 0.9 or more) and registry-calls (requests to the registry over
// all Avro runs: one per run, the registration, however many records).
func BenchmarkAvroConverter(b *testing.B) {
	s := throughputSpec{tasks: *flagTasks, perTask: int64(*flagRecords / *flagTasks), valueSize: *flagValueSize}
	e := newEnv(b)
	reg := newCountedRegistry(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rows := loopRuns(b, func(i int) (avroPair, error) { return runAvroPair(ctx, e, reg.srv.URL, i, s, i%2 == 0) })
	jsonT := sum(rows, func(r avroPair) time.Duration { return r.raw })
	avroT := sum(rows, func(r avroPair) time.Duration { return r.sluice.committed })
	n := s.total() * int64(len(rows))
	b.ReportMetric(rate(n, jsonT), "json-records/s")
	b.ReportMetric(rate(n, avroT), "avro-records/s")
	b.ReportMetric(jsonT.Seconds()/avroT.Seconds(), "ratio-vs-json")
	b.ReportMetric(float64(reg.calls.Load()), "registry-calls")
}

// TestAvroBenchSmoke goes through the benchmark's code with tiny sizes and
// checks that the records really are Avro: each decodes with AvroConverter
// to Datagen's struct, and the registry was asked once per task (each task
// configures its own converter) to register, not once per record.
func TestAvroBenchSmoke(t *testing.T) {
	s := throughputSpec{tasks: 2, perTask: 300, valueSize: 8}
	e := newEnv(t)
	reg := newCountedRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name, topic := "avro-smoke", e.k.Topic("avro-smoke")
	if err := e.createTopic(ctx, topic, int32(s.tasks)); err != nil {
		t.Fatal(err)
	}
	if err := e.createConnector(ctx, name, avroConfig(datagenConfig(name, topic, s.tasks, s.perTask, s.valueSize), reg.srv.URL)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.waitSluice(ctx, name, topic, s.total(), time.Now(), func() (bool, error) {
		return e.committedAll(name, s.tasks, s.perTask)
	}); err != nil {
		t.Fatal(err)
	}
	if n := reg.calls.Load(); n < 1 || n > int64(s.tasks) {
		t.Errorf("%d records made %d registry requests, want one per task at most (%d)", s.total(), n, s.tasks)
	}
	conv, err := converters.New("AvroConverter")
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.Configure(map[string]string{"schema.registry.url": reg.srv.URL}, false); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for seen := int64(0); seen < s.total(); {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", seen, s.total())
		}
		for _, r := range fs.Records() {
			_, v, err := conv.ToConnect(topic, r.Value)
			if err != nil {
				t.Fatalf("record %x: %v", r.Value, err)
			}
			sv, ok := v.(*connectors.StructValue)
			if !ok || !strings.HasPrefix(fmt.Sprint(sv.Get("pad")), "x") {
				t.Fatalf("record decodes to %#v, not Datagen's struct", v)
			}
			seen++
		}
	}
}
