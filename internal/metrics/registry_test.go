package metrics

import (
	"sync"
	"testing"
	"time"
)

// clock is a settable time for the registry.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newTestRegistry() (*Registry, *clock) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	r := NewRegistry()
	r.now = c.now
	return r, c
}

func TestTaskRatesSortedWithWindowedRates(t *testing.T) {
	r, c := newTestRegistry()
	sink := r.StartTask("b-sink", 0, KindSink)
	src1 := r.StartTask("a-source", 1, KindSource)
	src0 := r.StartTask("a-source", 0, KindSource)

	// 10 s at 100 records/s for the source task 0, then 20 s at 10/s.
	for i := 0; i < 10; i++ {
		c.advance(time.Second)
		src0.Polled(100, time.Millisecond)
		for j := 0; j < 100; j++ {
			src0.Written(true)
		}
		r.TaskRates() // a reader once a second, as `sluice top`
	}
	for i := 0; i < 20; i++ {
		c.advance(time.Second)
		src0.Polled(10, time.Millisecond)
		for j := 0; j < 10; j++ {
			src0.Written(true)
		}
		r.TaskRates()
	}
	sink.Read(50)
	sink.Put(50, time.Millisecond)
	sink.Lag("t", 0, 7)
	sink.Lag("t", 1, 42)
	src1.Polled(3, time.Millisecond) // polled, never written

	got := r.TaskRates()
	if len(got) != 3 {
		t.Fatalf("got %d tasks, want 3: %+v", len(got), got)
	}
	wantOrder := []struct {
		c string
		t int
	}{{"a-source", 0}, {"a-source", 1}, {"b-sink", 0}}
	for i, w := range wantOrder {
		if got[i].Connector != w.c || got[i].Task != w.t {
			t.Fatalf("task %d is %s/%d, want %s/%d", i, got[i].Connector, got[i].Task, w.c, w.t)
		}
	}
	if g := got[0]; g.Kind != KindSource || g.Total != 1200 || g.Lag != -1 {
		t.Errorf("source task 0 = %+v, want kind source, total 1200, lag -1", g)
	}
	// The last 10 s ran at 10/s: a lifetime average (40/s) would be wrong.
	if g := got[0].RecordsPerSec; g < 9 || g > 11 {
		t.Errorf("source task 0 rate = %v/s, want ~10/s over the last window", g)
	}
	if g := got[1]; g.Total != 0 || g.RecordsPerSec != 0 {
		t.Errorf("source task 1 = %+v, want nothing written", g)
	}
	if g := got[2]; g.Kind != KindSink || g.Total != 50 || g.Lag != 42 {
		t.Errorf("sink task = %+v, want kind sink, total 50, lag 42", g)
	}
	sink.Revoked("t", []int32{1})
	if g := r.TaskRates()[2].Lag; g != 7 {
		t.Errorf("lag after revoking the laggiest partition = %d, want 7", g)
	}
}

func TestStopTaskKeepsANewerInstance(t *testing.T) {
	r, _ := newTestRegistry()
	old := r.StartTask("c", 0, KindSource)
	old.Written(true)
	fresh := r.StartTask("c", 0, KindSource) // restarted before the old one stopped
	r.StopTask(old)
	got := r.TaskRates()
	if len(got) != 1 || got[0].Total != 0 {
		t.Fatalf("after stopping the old instance: %+v, want the fresh instance with total 0", got)
	}
	r.StopTask(fresh)
	r.TaskLeft("c", 0)
	if got := r.TaskRates(); len(got) != 0 {
		t.Fatalf("after stopping both and the task leaving: %+v, want none", got)
	}
}

// A failed instance's metrics stay in view while the supervisor waits to
// restart it, with its totals and errors, and its running ratio falls from
// its end; the restart replaces them, and the task leaving removes them.
func TestAFailedInstanceStaysInViewUntilItsRestart(t *testing.T) {
	r, c := newTestRegistry()
	failed := r.StartTask("c", 0, KindSource)
	failed.Written(true)
	failed.RecordError(true)
	c.advance(10 * time.Second)
	r.StopTask(failed) // failed: the restart comes after a backoff
	c.advance(10 * time.Second)
	got := r.TaskRates()
	if len(got) != 1 || got[0].Total != 1 {
		t.Fatalf("during the restart's backoff: %+v, want the failed instance with its 1 record", got)
	}
	if n := failed.recordFailures.Load(); n != 1 {
		t.Fatalf("record failures %d, want 1", n)
	}
	if running, paused := failed.ratios(c.now()); running < 0.499 || running > 0.501 || paused != 0 {
		t.Fatalf("running ratio %v, paused %v, want 0.5 (10 s running of 20) and 0", running, paused)
	}
	next := r.StartTask("c", 0, KindSource)
	if got := r.TaskRates(); len(got) != 1 || got[0].Total != 0 {
		t.Fatalf("after the restart: %+v, want the new instance alone, total 0", got)
	}
	if n := next.recordFailures.Load(); n != 1 {
		t.Fatalf("the restarted instance shows %d record failures, want the failed one's 1", n)
	}
	r.StopTask(next)
	r.TaskLeft("c", 0)
	if got := r.TaskRates(); len(got) != 0 || r.errors[taskKey{"c", 0}] != nil {
		t.Fatalf("after the task left: %+v, errors kept %v", got, r.errors[taskKey{"c", 0}] != nil)
	}
}

func TestNilRecordsNothing(t *testing.T) {
	var r *Registry
	task := r.StartTask("c", 0, KindSink)
	task.Read(1)
	task.Put(1, time.Second)
	task.Lag("t", 0, 1)
	task.OffsetCommit(time.Second, true)
	r.TaskRestarted("c", 0)
	if r.TaskRates() != nil {
		t.Fatal("a nil registry returned rates")
	}
}

// TestRecorderRace runs the record path from many goroutines while readers
// compute rates; go test -race checks it, and the totals must add up.
func TestRecorderRace(t *testing.T) {
	r := NewRegistry()
	src := r.StartTask("s", 0, KindSource)
	sink := r.StartTask("k", 0, KindSink)
	const writers, each = 8, 2000
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				src.Polled(1, time.Microsecond)
				src.Written(true)
				sink.Read(1)
				sink.Put(1, time.Microsecond)
				sink.Lag("t", int32(w), int64(i))
				sink.OffsetCommit(time.Duration(i), i%2 == 0)
				src.RecordError(false)
				if i%100 == 0 {
					src.Paused(i%200 == 0)
				}
			}
		}(w)
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
				r.TaskRates()
				collectAll(t, r)
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	if got := src.written.Load(); got != writers*each {
		t.Errorf("written = %d, want %d", got, writers*each)
	}
	if got := src.activeCount(); got != 0 {
		t.Errorf("active = %d, want 0 after every polled record was written", got)
	}
	if got := sink.commitMaxNanos.Load(); got != each-1 {
		t.Errorf("max commit time = %d ns, want %d", got, each-1)
	}
}

// TestRecordPathDoesNotAllocate holds the recorder to its promise.
func TestRecordPathDoesNotAllocate(t *testing.T) {
	r := NewRegistry()
	src := r.StartTask("s", 0, KindSource)
	sink := r.StartTask("k", 0, KindSink)
	sink.Lag("t", 0, 1) // the first sight of a partition allocates its slot
	allocs := testing.AllocsPerRun(1000, func() {
		src.Polled(10, time.Millisecond)
		src.Written(true)
		src.Dropped()
		sink.Read(10)
		sink.Put(10, time.Millisecond)
		sink.Lag("t", 0, 5)
		sink.OffsetCommit(time.Millisecond, true)
		sink.RecordError(true)
		sink.Skipped()
		sink.ErrorLogged()
		sink.DeadLetter(false)
		sink.Retry()
	})
	if allocs != 0 {
		t.Fatalf("the record path allocated %v times per run", allocs)
	}
}

func TestRatiosFollowPauses(t *testing.T) {
	task := newTask("c", 0, KindSource, time.Unix(0, 0), &taskErrors{})
	task.setPaused(true, time.Unix(30, 0))
	task.setPaused(false, time.Unix(40, 0))
	running, paused := task.ratios(time.Unix(100, 0))
	if running < 0.899 || running > 0.901 || paused < 0.099 || paused > 0.101 {
		t.Fatalf("running %v paused %v, want 0.9 and 0.1", running, paused)
	}
}

// collectAll gathers every metric, as a scrape does.
func collectAll(t *testing.T, r *Registry) {
	if _, err := r.Gatherer().Gather(); err != nil {
		t.Error(err)
	}
}

// BenchmarkRecordPath is what a source record costs the recorder: one
// Written per record and one Polled per batch of 100, with the producer's
// acks and the task's polls on different goroutines as in the pipeline.
func BenchmarkRecordPath(b *testing.B) {
	task := NewRegistry().StartTask("c", 0, KindSource)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if i%100 == 0 {
				task.Polled(100, time.Millisecond)
			}
			task.Written(true)
			i++
		}
	})
}

// Error counts and restarts outlive a restarted instance, and go once the
// task leaves the worker, also when its last instance stops after that.
func TestErrorsAndRestartsOutliveInstancesUntilTheTaskLeaves(t *testing.T) {
	r, _ := newTestRegistry()
	first := r.StartTask("c", 0, KindSink)
	first.RecordError(true)
	first.Put(5, time.Millisecond)
	r.TaskRestarted("c", 0)
	r.StopTask(first)
	second := r.StartTask("c", 0, KindSink)
	if got := second.recordFailures.Load(); got != 1 {
		t.Fatalf("the restarted instance sees %d record failures, want the first instance's 1", got)
	}
	if got := second.put.Load(); got != 0 {
		t.Fatalf("the restarted instance starts with %d records put, want 0", got)
	}
	r.TaskLeft("c", 0) // the actor stopped while the second instance drains
	if r.errors[taskKey{"c", 0}] == nil || r.restarts[taskKey{"c", 0}] != 1 {
		t.Fatal("a draining instance's counts went before it stopped")
	}
	r.StopTask(second)
	if r.errors[taskKey{"c", 0}] != nil || r.restarts[taskKey{"c", 0}] != 0 {
		t.Fatal("the counts of a task that left the worker stayed")
	}
	third := r.StartTask("c", 0, KindSink)
	if got := third.recordFailures.Load(); got != 0 {
		t.Fatalf("a task back on the worker sees %d old record failures, want 0", got)
	}
}
