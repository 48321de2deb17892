package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// chainConfig adds to a Datagen config the three-transform chain of the
// benchmark: InsertField$Value (a static field), ReplaceField$Value (a
// rename) and RegexRouter (topic -> topic-routed), the chain issue 11 names.
func chainConfig(c map[string]string) map[string]string {
	for k, v := range map[string]string{
		"transforms":                     "insert,rename,route",
		"transforms.insert.type":         "org.apache.kafka.connect.transforms.InsertField$Value",
		"transforms.insert.static.field": "source",
		"transforms.insert.static.value": "datagen",
		"transforms.rename.type":         "org.apache.kafka.connect.transforms.ReplaceField$Value",
		"transforms.rename.renames":      "pad:padding",
		"transforms.route.type":          "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.route.regex":         "(.*)",
		"transforms.route.replacement":   "$1-routed",
	} {
		c[k] = v
	}
	return c
}

// chainPair is one run without transforms ("raw" here: the limit this
// benchmark compares with) and one with the chain, of the same records.
type chainPair = runTimes[sluiceTimes]

// runChainPair runs the plain connector and the one with the chain, on
// topics of their own, plainFirst choosing the order.
func runChainPair(ctx context.Context, e *env, run int, s throughputSpec, plainFirst bool) (chainPair, error) {
	var r chainPair
	plain, chained := fmt.Sprintf("plain-%d", run), fmt.Sprintf("chain-%d", run)
	plainTopic, chainTopic := e.k.Topic(plain), e.k.Topic(chained)
	for _, topic := range []string{plainTopic, chainTopic + "-routed"} {
		if err := e.createTopic(ctx, topic, int32(s.tasks)); err != nil {
			return r, err
		}
	}
	one := func(name, topic, wait string, config map[string]string, into *sluiceTimes) func() error {
		return func() (err error) {
			*into, err = e.runAndDrop(ctx, name, wait, config, s)
			return err
		}
	}
	var plainT sluiceTimes
	err := inOrder(plainFirst, runtime.GC,
		one(plain, plainTopic, plainTopic, datagenConfig(plain, plainTopic, s.tasks, s.perTask, s.valueSize), &plainT),
		one(chained, chainTopic, chainTopic+"-routed", chainConfig(datagenConfig(chained, chainTopic, s.tasks, s.perTask, s.valueSize)), &r.sluice))
	r.raw = plainT.committed
	return r, err
}

// BenchmarkTransformChain measures Datagen -> Kafka with the three-transform
// chain against the same connector without transforms, in one process on
// one broker, alternating which runs first. Reported: both rates and
// ratio-vs-plain (chain records/s over plain records/s, committed; the
// target is 0.85 or more).
func BenchmarkTransformChain(b *testing.B) {
	s := throughputSpec{tasks: *flagTasks, perTask: int64(*flagRecords / *flagTasks), valueSize: *flagValueSize}
	e := newEnv(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rows := loopRuns(b, func(i int) (chainPair, error) { return runChainPair(ctx, e, i, s, i%2 == 0) })
	plainT := sum(rows, func(r chainPair) time.Duration { return r.raw })
	chainT := sum(rows, func(r chainPair) time.Duration { return r.sluice.committed })
	n := s.total() * int64(len(rows))
	b.ReportMetric(rate(n, plainT), "plain-records/s")
	b.ReportMetric(rate(n, chainT), "chain-records/s")
	b.ReportMetric(plainT.Seconds()/chainT.Seconds(), "ratio-vs-plain")
}

// TestTransformChainBenchSmoke goes through the benchmark's code with tiny
// sizes and checks that the chain really ran: every record reached the
// routed topic with the inserted field and the renamed one.
func TestTransformChainBenchSmoke(t *testing.T) {
	s := throughputSpec{tasks: 2, perTask: 300, valueSize: 8}
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name, topic := "chain-smoke", e.k.Topic("chain-smoke")
	if err := e.createTopic(ctx, topic+"-routed", int32(s.tasks)); err != nil {
		t.Fatal(err)
	}
	if err := e.createConnector(ctx, name, chainConfig(datagenConfig(name, topic, s.tasks, s.perTask, s.valueSize))); err != nil {
		t.Fatal(err)
	}
	if _, err := e.waitSluice(ctx, name, topic+"-routed", s.total(), time.Now(), func() (bool, error) {
		return e.committedAll(name, s.tasks, s.perTask)
	}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, e.kopts...), kgo.ConsumeTopics(topic+"-routed"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for seen := int64(0); seen < s.total(); {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d routed records", seen, s.total())
		}
		for _, r := range fs.Records() {
			v := string(r.Value)
			if !strings.Contains(v, `"source":"datagen"`) || !strings.Contains(v, `"padding":`) || strings.Contains(v, `"pad":`) {
				t.Fatalf("record %s lacks the chain's changes", v)
			}
			seen++
		}
	}
	r, err := runChainPair(ctx, e, 0, s, true)
	if err != nil || r.raw <= 0 || r.sluice.committed <= 0 {
		t.Fatalf("pair %+v, %v", r, err)
	}
}
