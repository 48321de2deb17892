package actors

import (
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Backoff is the restart policy of failed connectors and tasks: the first
// restart waits Initial, each further consecutive failure doubles the wait up
// to Max, and a child that stayed up for ResetAfter starts again from Initial.
// Jitter spreads restarts of many failing tasks so they do not retry in step.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Jitter     float64 // fraction of the delay, e.g. 0.2 for ±20%
	ResetAfter time.Duration
}

// DefaultBackoff restarts after 1 s, doubling to 60 s.
var DefaultBackoff = Backoff{Initial: time.Second, Max: time.Minute, Jitter: 0.2, ResetAfter: 2 * time.Minute}

// Delay is the wait before restart number n (1-based) of a run of failures.
func (b Backoff) Delay(n int) time.Duration {
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	if b.Jitter > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * b.Jitter * float64(d))
	}
	if d < 0 {
		d = 0
	}
	return d
}

// failure is what a task or connector actor panics with when its pipeline
// reports an error, so the supervisor gets the error and its trace.
type failure struct {
	err   error
	trace string
}

func (f *failure) Error() string { return f.err.Error() }

// restartPolicy is protoactor's SupervisorStrategy for the children of a
// connector supervisor. protoactor's own NewExponentialBackoffStrategy grows
// linearly and without a cap, so this one is ours (invariant 5).
type restartPolicy struct {
	backoff Backoff
	// onFailure runs on the supervisor's goroutine before the wait starts,
	// to report FAILED with the trace and the delay.
	onFailure func(child *actor.PID, reason any, delay time.Duration)
}

func (p *restartPolicy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason any, _ any) {
	// Invariant 5: restart forever, with a capped exponential delay; a child
	// that stayed up for ResetAfter starts its count again.
	if rs.NumberOfFailures(p.backoff.ResetAfter) == 0 {
		rs.Reset()
	}
	rs.Fail()
	delay := p.backoff.Delay(rs.FailureCount())
	if p.onFailure != nil {
		p.onFailure(child, reason, delay)
	}
	time.AfterFunc(delay, func() { sup.RestartChildren(child) })
}
