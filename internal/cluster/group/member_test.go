package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/cluster/assign"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// fakeWorker is a Handler that runs nothing but records what it was told,
// in order.
type fakeWorker struct {
	mu     sync.Mutex
	work   assign.Work
	tasks  []connectors.TaskID
	events []string
	// revokeTakes makes Revoke slow, like a sink flushing before it stops.
	revokeTakes time.Duration
}

func (f *fakeWorker) Current() ([]string, []connectors.TaskID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return nil, slices.Clone(f.tasks)
}
func (f *fakeWorker) ConfigOffset() int64 { return 0 }
func (f *fakeWorker) Work(context.Context) (assign.Work, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.work, 0, nil
}
func (f *fakeWorker) Revoke(_ context.Context, _ []string, tasks []connectors.TaskID) error {
	time.Sleep(f.revokeTakes)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks = slices.DeleteFunc(f.tasks, func(t connectors.TaskID) bool { return slices.Contains(tasks, t) })
	f.events = append(f.events, "revoke")
	return nil
}
func (f *fakeWorker) Assigned(gen int32, a Assignment) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks = slices.Clone(a.Tasks)
	f.events = append(f.events, fmt.Sprintf("assigned:%d", len(a.Tasks)))
}
func (f *fakeWorker) Lost(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks = nil
	f.events = append(f.events, "lost")
	return nil
}

func (f *fakeWorker) snapshot() ([]connectors.TaskID, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.tasks), slices.Clone(f.events)
}

func tasksOf(n int) assign.Work {
	w := assign.Work{Connectors: []string{"c"}}
	for i := 0; i < n; i++ {
		w.Tasks = append(w.Tasks, connectors.TaskID{Connector: "c", Task: i})
	}
	return w
}

type running struct {
	m      *Member
	f      *fakeWorker
	cancel context.CancelFunc
	done   chan struct{}
}

func run(t *testing.T, broker []kgo.Opt, id string, work assign.Work) *running {
	t.Helper()
	return runWithSession(t, broker, id, work, 6*time.Second)
}

// runWithSession is run with another session timeout (kfake refuses one
// under its group.min.session.timeout.ms, 6 s unless the test lowers it).
func runWithSession(t *testing.T, broker []kgo.Opt, id string, work assign.Work, session time.Duration) *running {
	t.Helper()
	cl := kafkatest.NewClient(t, broker)
	f := &fakeWorker{work: work}
	m := New(Config{Group: "g", WorkerID: id, URL: "http://" + id, Client: cl,
		SessionTimeout: session, HeartbeatInterval: 100 * time.Millisecond, RebalanceTimeout: 10 * time.Second,
		Log: zerolog.Nop()}, f)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{m: m, f: f, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// twoEach is the condition that a and b run two tasks each.
func twoEach(a, b *running) func() error {
	return func() error {
		ta, _ := a.f.snapshot()
		tb, _ := b.f.snapshot()
		if len(ta) != 2 || len(tb) != 2 {
			return fmt.Errorf("%d and %d tasks", len(ta), len(tb))
		}
		return nil
	}
}

// Invariants 2 and 4: at each stable point exactly one member believes it
// leads (by the assignment it received), and every task runs on exactly one
// member.
func TestOneLeaderAndEachTaskOnce(t *testing.T) {
	_, broker := kafkatest.NewCluster(t)
	work := tasksOf(6)
	ms := []*running{run(t, broker, "a", work), run(t, broker, "b", work), run(t, broker, "c", work)}
	testutil.Eventually(t, 30*time.Second, "6 tasks 2-2-2 with one leader", func() error {
		leaders, owner := 0, map[connectors.TaskID]string{}
		for _, r := range ms {
			st := r.m.State()
			if st.Leader() {
				leaders++
			}
			tasks, _ := r.f.snapshot()
			if len(tasks) != 2 {
				return fmt.Errorf("member %s runs %d tasks", r.m.cfg.WorkerID, len(tasks))
			}
			for _, task := range tasks {
				if prev, dup := owner[task]; dup {
					return fmt.Errorf("task %v on %s and %s", task, prev, r.m.cfg.WorkerID)
				}
				owner[task] = r.m.cfg.WorkerID
			}
		}
		if leaders != 1 {
			return fmt.Errorf("%d members think they lead", leaders)
		}
		return nil
	})
}

// Invariant 3: a member removed from the group (as a survivor does for a
// worker gossip declared dead) stops everything before it rejoins.
func TestLostMembershipStopsEverythingBeforeRejoining(t *testing.T) {
	_, broker := kafkatest.NewCluster(t)
	work := tasksOf(4)
	a, b := run(t, broker, "a", work), run(t, broker, "b", work)
	testutil.Eventually(t, 30*time.Second, "2-2", twoEach(a, b))
	cl := kafkatest.NewClient(t, broker)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := LeaveByInstance(ctx, cl, "g", "b"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "b lost, then rejoined", func() error {
		tasks, events := b.f.snapshot()
		lost := slices.Index(events, "lost")
		if lost < 0 {
			return fmt.Errorf("events %v", events)
		}
		if !slices.ContainsFunc(events[lost+1:], func(e string) bool { return e != "lost" && e != "revoke" }) {
			return fmt.Errorf("not rejoined yet: %v", events)
		}
		if len(tasks) == 0 {
			return fmt.Errorf("b runs nothing after rejoining")
		}
		return nil
	})
	// Every task once, none lost.
	testutil.Eventually(t, 30*time.Second, "4 tasks once", func() error {
		ta, _ := a.f.snapshot()
		tb, _ := b.f.snapshot()
		set := map[connectors.TaskID]bool{}
		for _, task := range append(ta, tb...) {
			set[task] = true
		}
		if len(ta)+len(tb) != 4 || len(set) != 4 {
			return fmt.Errorf("a %v b %v", ta, tb)
		}
		return nil
	})
}

// A revocation that takes longer than the session timeout does not cost the
// member its membership: it keeps heartbeating while it stops tasks.
func TestSlowRevocationKeepsTheMembership(t *testing.T) {
	_, broker := kafkatest.NewCluster(t)
	work := tasksOf(4)
	a := run(t, broker, "a", work)
	a.f.mu.Lock()
	a.f.revokeTakes = 8 * time.Second // session timeout is 6 s
	a.f.mu.Unlock()
	testutil.Eventually(t, 30*time.Second, "a runs all 4", func() error {
		if tasks, _ := a.f.snapshot(); len(tasks) != 4 {
			return fmt.Errorf("%d tasks", len(tasks))
		}
		return nil
	})
	// Throughout, neither standing is unhealthy: the heartbeats that keep
	// a's membership alive while it revokes, and b's while its JoinGroup
	// waits for a, count as contact with the coordinator.
	var unhealthy atomic.Value
	sampling, sampled := make(chan struct{}), make(chan struct{})
	var b *running
	var bMu sync.Mutex
	go func() {
		defer close(sampled)
		for {
			select {
			case <-sampling:
				return
			case <-time.After(100 * time.Millisecond):
			}
			members := map[string]*Member{"a": a.m}
			bMu.Lock()
			if b != nil {
				members["b"] = b.m
			}
			bMu.Unlock()
			for id, m := range members {
				if u, _ := m.Standing().Problem(time.Now()); u != "" {
					unhealthy.Store(id + ": " + u)
				}
			}
		}
	}()
	bMu.Lock()
	b = run(t, broker, "b", work)
	bMu.Unlock()
	testutil.Eventually(t, 30*time.Second, "2-2 after a slow revocation", twoEach(a, b))
	close(sampling)
	<-sampled
	if _, events := a.f.snapshot(); slices.Contains(events, "lost") {
		t.Fatalf("a lost its membership during a slow revocation: %v", events)
	}
	if u := unhealthy.Load(); u != nil {
		t.Fatalf("a was unhealthy during a slow revocation: %v", u)
	}
}

// Standing says the member is rebalancing from the start of a round until
// its assignment is handed over, a slow revocation included, and records
// the coordinator's answers.
func TestStandingShowsARebalance(t *testing.T) {
	_, broker := kafkatest.NewCluster(t)
	work := tasksOf(4)
	before := time.Now()
	if st := New(Config{Group: "g", WorkerID: "idle"}, &fakeWorker{}).Standing(); st.Joined || !st.LastContact.IsZero() || st.SessionTimeout != 10*time.Second {
		t.Fatalf("a member that never ran: %+v", st)
	}
	a := run(t, broker, "a", work)
	testutil.Eventually(t, 30*time.Second, "a joined and settled", func() error {
		st := a.m.Standing()
		if !st.Joined || st.Rebalancing || st.Err != nil || st.LastContact.Before(before) {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	a.f.mu.Lock()
	a.f.revokeTakes = 3 * time.Second
	a.f.mu.Unlock()
	run(t, broker, "b", work) // a gives two tasks away, slowly
	testutil.Eventually(t, 30*time.Second, "a rebalancing while it revokes", func() error {
		if st := a.m.Standing(); !st.Rebalancing {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
	testutil.Eventually(t, 30*time.Second, "a settled again", func() error {
		if st := a.m.Standing(); !st.Joined || st.Rebalancing || time.Since(st.LastContact) > 6*time.Second {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})
}

// Problem tells a settled member from one that is joining or rebalancing
// (pending) and from one whose broker or membership has been gone for
// longer than the session timeout (unhealthy), and says why.
func TestStandingProblem(t *testing.T) {
	now := time.Now()
	const session = 10 * time.Second
	refused := errors.New("join group: COORDINATOR_NOT_AVAILABLE")
	for _, c := range []struct {
		name                     string
		st                       Standing
		unhealthyHas, pendingHas string
	}{
		{name: "settled", st: Standing{Joined: true, LastContact: now.Add(-time.Second)}},
		{name: "never reached the coordinator", st: Standing{Err: refused},
			pendingHas: `joining group "g": join group: COORDINATOR_NOT_AVAILABLE`},
		{name: "rebalancing", st: Standing{Joined: true, Rebalancing: true, LastContact: now},
			pendingHas: "rebalancing"},
		{name: "rejoining within the session timeout", st: Standing{LastContact: now, LostAt: now.Add(-session / 2)},
			pendingHas: "rebalancing"},
		{name: "broker silent past the session timeout", st: Standing{Joined: true, LastContact: now.Add(-session - time.Second), Err: refused},
			unhealthyHas: `no answer from the coordinator of group "g" for 11s, longer than session.timeout.ms (10s): join group: COORDINATOR_NOT_AVAILABLE`},
		{name: "out of the group past the session timeout", st: Standing{LastContact: now, LostAt: now.Add(-session - 2*time.Second), Err: refused},
			unhealthyHas: `out of group "g" for 12s, longer than session.timeout.ms (10s)`},
	} {
		c.st.Group, c.st.SessionTimeout = "g", session
		unhealthy, pending := c.st.Problem(now)
		if (c.unhealthyHas == "") != (unhealthy == "") || !strings.Contains(unhealthy, c.unhealthyHas) {
			t.Errorf("%s: unhealthy %q, want it to have %q", c.name, unhealthy, c.unhealthyHas)
		}
		if (c.pendingHas == "") != (pending == "") || !strings.Contains(pending, c.pendingHas) {
			t.Errorf("%s: pending %q, want it to have %q", c.name, pending, c.pendingHas)
		}
	}
}

// A member put out of its group and refused back in is unhealthy once the
// session timeout has passed, though the broker answers it, and settled
// again once it is let back in.
func TestStandingOutOfTheGroupTooLong(t *testing.T) {
	c, broker := kafkatest.NewCluster(t, kfake.BrokerConfigs(map[string]string{"group.min.session.timeout.ms": "1000"}))
	var refuse atomic.Bool
	c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !refuse.Load() {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.Version = req.GetVersion()
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil, true
	})
	const session = time.Second
	m := New(Config{Group: "g", WorkerID: "a", URL: "http://a", Client: kafkatest.NewClient(t, broker),
		SessionTimeout: session, HeartbeatInterval: 100 * time.Millisecond, RebalanceTimeout: 5 * time.Second,
		Log: zerolog.Nop()}, &fakeWorker{work: tasksOf(2)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	settled := func() error {
		if unhealthy, pending := m.Standing().Problem(time.Now()); unhealthy != "" || pending != "" {
			return fmt.Errorf("unhealthy %q, pending %q", unhealthy, pending)
		}
		return nil
	}
	testutil.Eventually(t, 30*time.Second, "settled", settled)

	refuse.Store(true)
	kicked := time.Now()
	lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer lcancel()
	if err := LeaveByInstance(lctx, kafkatest.NewClient(t, broker), "g", "a"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "unhealthy out of the group", func() error {
		unhealthy, _ := m.Standing().Problem(time.Now())
		if !strings.Contains(unhealthy, `out of group "g"`) || !strings.Contains(unhealthy, "GROUP_AUTHORIZATION_FAILED") {
			return fmt.Errorf("unhealthy %q", unhealthy)
		}
		return nil
	})
	if took := time.Since(kicked); took < session {
		t.Errorf("unhealthy %s after losing the membership, before the session timeout (%s)", took, session)
	}
	refuse.Store(false)
	testutil.Eventually(t, 30*time.Second, "settled again", settled)
}

// A member whose JoinGroup the coordinator holds for longer than the session
// timeout, waiting for another member that is still revoking, is not
// unhealthy: it heartbeats while it waits, and the answers are contact.
func TestStandingWhileJoinWaitsForASlowMember(t *testing.T) {
	_, broker := kafkatest.NewCluster(t, kfake.BrokerConfigs(map[string]string{"group.min.session.timeout.ms": "1000"}))
	const session = 2 * time.Second
	work := tasksOf(4)
	a := runWithSession(t, broker, "a", work, session)
	testutil.Eventually(t, 30*time.Second, "a runs all 4", func() error {
		if tasks, _ := a.f.snapshot(); len(tasks) != 4 {
			return fmt.Errorf("%d tasks", len(tasks))
		}
		return nil
	})
	a.f.mu.Lock()
	a.f.revokeTakes = 3 * session
	a.f.mu.Unlock()
	b := runWithSession(t, broker, "b", work, session)
	testutil.Eventually(t, 30*time.Second, "a revoking for b", func() error {
		if !a.m.Standing().Rebalancing || !b.m.Standing().Joined {
			return fmt.Errorf("a %+v, b %+v", a.m.Standing(), b.m.Standing())
		}
		return nil
	})
	// c's arrival starts a round that b joins at once and a only once it
	// has revoked: b's JoinGroup waits for a.
	c := runWithSession(t, broker, "c", work, session)
	deadline := time.Now().Add(4 * session)
	var sawBWaiting bool
	for time.Now().Before(deadline) {
		for id, m := range map[string]*Member{"a": a.m, "b": b.m, "c": c.m} {
			st := m.Standing()
			if u, _ := st.Problem(time.Now()); u != "" {
				t.Fatalf("%s unhealthy while a round waits for a slow member: %s", id, u)
			}
			sawBWaiting = sawBWaiting || id == "b" && st.Rebalancing
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !sawBWaiting {
		t.Fatal("b never waited in a round: the test did not make the case it is about")
	}
}

// joinAndHold makes a raw static member that joins group g, takes an empty
// assignment, and then neither heartbeats nor rejoins: a round started
// after it waits for it until the rebalance timeout.
func joinAndHold(t *testing.T, cl *kgo.Client, instance string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.InstanceID, join.ProtocolType = "g", &instance, ProtocolType
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 60_000, 30_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = protocolName, encode(Metadata{WorkerID: instance})
	join.Protocols = append(join.Protocols, p)
	jr, err := join.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(jr.ErrorCode)
	}
	if err != nil {
		t.Fatalf("%s joins: %v", instance, err)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID, sync.InstanceID = "g", jr.Generation, jr.MemberID, &instance
	pt, pn := ProtocolType, protocolName
	sync.ProtocolType, sync.Protocol = &pt, &pn
	sr, err := sync.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(sr.ErrorCode)
	}
	if err != nil {
		t.Fatalf("%s syncs: %v", instance, err)
	}
}

// A member removed from the group while its JoinGroup waits for the round
// (another worker's fast failover took it for its dead predecessor, see
// worker.removeGone) must notice and join again, not wait out its request
// timeout: kfake never answers the removed member's JoinGroup (Apache
// Kafka answers UNKNOWN_MEMBER_ID), and the chaos run saw a restarted
// worker stay out of the group for 65 s.
func TestRemovedWhileJoiningJoinsAgain(t *testing.T) {
	_, broker := kafkatest.NewCluster(t)
	adm := kafkatest.NewClient(t, broker)
	joinAndHold(t, adm, "x")

	cl := kafkatest.NewClient(t, broker)
	f := &fakeWorker{work: tasksOf(2)}
	// A request timeout (rebalance timeout + 5 s) far beyond the test's
	// deadline: only noticing the removal gets b in within it.
	m := New(Config{Group: "g", WorkerID: "b", URL: "http://b", Client: cl,
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 100 * time.Millisecond, RebalanceTimeout: 60 * time.Second,
		Log: zerolog.Nop()}, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// b's JoinGroup waits for x, which will not come.
	testutil.Eventually(t, 15*time.Second, "b waiting in a round held by x", func() error {
		d := kmsg.NewPtrDescribeGroupsRequest()
		d.Groups = []string{"g"}
		resp, err := d.RequestWith(context.Background(), adm)
		if err != nil {
			return err
		}
		g := resp.Groups[0]
		if g.State != "PreparingRebalance" || len(g.Members) != 2 {
			return fmt.Errorf("group %s with %d members", g.State, len(g.Members))
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	if err := LeaveByInstance(context.Background(), adm, "g", "b"); err != nil {
		t.Fatal(err)
	}
	// x goes too: a round b starts now completes at once.
	if err := LeaveByInstance(context.Background(), adm, "g", "x"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "b back in the group, running both tasks", func() error {
		if tasks, _ := f.snapshot(); len(tasks) != 2 {
			return fmt.Errorf("%d tasks; standing %+v", len(tasks), m.Standing())
		}
		return nil
	})
}
