package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/testutil"
)

// For comparison with Kafka Connect, only what its source says, no
// measured number (we found none published for an idle task): Connect runs
// each task on a thread of its own (Worker's class comment in apache/kafka,
// connect/runtime/.../Worker.java: "each task has a dedicated thread"), and
// Worker.buildWorkerTask gives every source task a KafkaProducer of its own,
// which starts its own "kafka-producer-network-thread" and may buffer up to
// buffer.memory, 32 MiB by default (ProducerConfig). A Sluice source task
// shares the worker's one producer; what it costs on its own is measured
// here.

// memSnap is the process's live memory after a full collection.
type memSnap struct {
	heapAlloc  uint64 // bytes of live heap objects
	heapInuse  uint64 // bytes in heap spans in use (live objects plus fragmentation)
	stackInuse uint64 // bytes of goroutine stacks
	goroutines int
}

func snapshot() memSnap {
	// Two collections: the first runs finalizers and frees what they
	// release only at the second, so the numbers are of live data.
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSnap{heapAlloc: m.HeapAlloc, heapInuse: m.HeapInuse, stackInuse: m.StackInuse, goroutines: runtime.NumGoroutine()}
}

// idleResult is what K idle tasks added to the worker, per task.
type idleResult struct {
	tasks      int
	heap       float64 // HeapAlloc bytes per task
	heapInuse  float64 // HeapInuse bytes per task
	stack      float64 // StackInuse bytes per task
	goroutines float64 // goroutines per task
	start      time.Duration
}

// runIdle creates a Datagen connector with k tasks that generate nothing
// (max.records 0: each Poll sleeps until its deadline and returns no
// records, as an idle source does), waits until every task is RUNNING and
// has been idle for settle, and measures what the process gained. The
// difference includes the worker's own per-task state (task configs in the
// config table, statuses) and, because the broker shares the process, the
// broker's copy of two small records per task (task config and status).
func runIdle(ctx context.Context, e *env, name string, k int, settle time.Duration) (idleResult, error) {
	r := idleResult{tasks: k}
	// What the previous run left (goroutines ending, status records in
	// flight) settles before the baseline.
	time.Sleep(settle / 2)
	before := snapshot()
	start := time.Now()
	if err := e.createConnector(ctx, name, datagenConfig(name, "idle-"+name, k, 0, 100)); err != nil {
		return r, err
	}
	err := testutil.Poll(ctx, 20*time.Millisecond, func() (bool, error) {
		if tr := e.failedTrace(name); tr != "" {
			return false, fmt.Errorf("connector %s: %s", name, tr)
		}
		return e.runningTasks(name) == k, nil
	})
	if err != nil {
		return r, fmt.Errorf("waiting for %d idle tasks of %s: %w", k, name, err)
	}
	r.start = time.Since(start)
	// At least one full idle Poll (pollTimeout is 500 ms) so every task
	// is in its steady state: polling, sleeping, flushing nothing.
	time.Sleep(settle)
	after := snapshot()
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(k) }
	r.heap = per(after.heapAlloc, before.heapAlloc)
	r.heapInuse = per(after.heapInuse, before.heapInuse)
	r.stack = per(after.stackInuse, before.stackInuse)
	r.goroutines = float64(after.goroutines-before.goroutines) / float64(k)
	if err := e.deleteConnector(ctx, name); err != nil {
		return r, err
	}
	return r, nil
}

func parseIdleCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-bench.idle-tasks: %q is not a positive task count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// BenchmarkIdleTaskMemory reports, per idle source task: live heap
// (heap-B/task, HeapAlloc), heap spans (heap-inuse-B/task, HeapInuse),
// goroutine stacks (stack-B/task), goroutines (goroutines/task), and how
// long the k tasks took from the connector's creation to all RUNNING
// (start-ms). Each iteration starts k tasks and stops them again; the
// metrics are means over the iterations.
func BenchmarkIdleTaskMemory(b *testing.B) {
	counts, err := parseIdleCounts(*flagIdleTasks)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range counts {
		b.Run("tasks="+strconv.Itoa(k), func(b *testing.B) {
			e := newEnv(b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			rows := loopRuns(b, func(i int) (idleResult, error) {
				return runIdle(ctx, e, fmt.Sprintf("idle-%d-%d", k, i), k, time.Second)
			})
			var sum idleResult
			for _, r := range rows {
				sum.heap += r.heap
				sum.heapInuse += r.heapInuse
				sum.stack += r.stack
				sum.goroutines += r.goroutines
				sum.start += r.start
			}
			n := float64(len(rows))
			b.ReportMetric(sum.heap/n, "heap-B/task")
			b.ReportMetric(sum.heapInuse/n, "heap-inuse-B/task")
			b.ReportMetric(sum.stack/n, "stack-B/task")
			b.ReportMetric(sum.goroutines/n, "goroutines/task")
			b.ReportMetric(float64(sum.start.Milliseconds())/n, "start-ms")
			b.Log("\n" + idleTable(rows))
		})
	}
}

func idleTable(rows []idleResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-6s %6s %12s %12s %12s %12s %10s\n", "run", "tasks", "heap B/task", "inuse B/task", "stack B/task", "goroutines", "start")
	for i, r := range rows {
		fmt.Fprintf(&b, "%-6d %6d %12.0f %12.0f %12.0f %12.2f %10s\n", i, r.tasks, r.heap, r.heapInuse, r.stack, r.goroutines,
			r.start.Round(time.Millisecond))
	}
	return b.String()
}
