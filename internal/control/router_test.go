package control_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
)

// membership is a worker's group membership as the router sees it: whether
// this worker leads (it may change while a request waits) and how many
// times a read synced the config topic.
type membership struct {
	mu     sync.Mutex
	self   bool
	leader control.LeaderWrites
	syncs  atomic.Int32
}

func (m *membership) Leader() (bool, control.LeaderWrites) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.self, m.leader
}

func (m *membership) lead() {
	m.mu.Lock()
	m.self = true
	m.mu.Unlock()
}

func (m *membership) Sync(context.Context) error {
	m.syncs.Add(1)
	return nil
}

// A write sent while the worker is still starting waits for it to be
// ready, and one sent while no leader is known waits for a leader, rather
// than failing at once: scripts that create a connector as soon as a
// worker answers work.
func TestRouterWriteWaitsForTheWorkerAndALeader(t *testing.T) {
	e := controltest.NewEnv(t)
	m := &membership{}
	r := control.NewRouter(e.C, m, 20*time.Second)
	e.Ready.Set(false)
	go func() {
		time.Sleep(200 * time.Millisecond)
		e.Ready.Set(true)
		time.Sleep(200 * time.Millisecond)
		m.lead()
	}()
	start := time.Now()
	if _, err := r.Create(t.Context(), "early", controltest.SourceConfig(), ""); err != nil {
		t.Fatalf("create while starting and without a leader: %v", err)
	}
	if waited := time.Since(start); waited < 400*time.Millisecond {
		t.Fatalf("create answered after %v, before the worker was ready and led", waited)
	}
	if _, err := e.C.Info("early"); err != nil {
		t.Fatalf("the create was not carried out: %v", err)
	}
}

// A worker that never becomes ready answers 503 once the request timeout
// is spent; one that is ready but never learns of a leader answers 409
// (Connect's answer during a rebalance).
func TestRouterWriteGivesUpAfterTheRequestTimeout(t *testing.T) {
	e := controltest.NewEnv(t)
	r := control.NewRouter(e.C, &membership{}, 300*time.Millisecond)
	e.Ready.Set(false)
	if _, err := r.Create(t.Context(), "c", controltest.SourceConfig(), ""); control.StatusCode(err) != http.StatusServiceUnavailable {
		t.Fatalf("create on a worker that never started: %v (%d), want 503", err, control.StatusCode(err))
	}
	e.Ready.Set(true)
	if err := r.Pause(t.Context(), "c"); control.StatusCode(err) != http.StatusConflict {
		t.Fatalf("pause with no leader: %v (%d), want 409", err, control.StatusCode(err))
	}
}

// Every read of connector state brings the worker's view up to the end of
// the config topic first; plugin and logger reads need no sync.
func TestRouterReadsSyncFirst(t *testing.T) {
	e := controltest.NewEnv(t)
	m := &membership{self: true}
	r := control.NewRouter(e.C, m, 0)
	if _, err := r.Create(t.Context(), "c", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	reads := []func(){
		func() { _, _ = r.Connectors() },
		func() { _, _ = r.Info("c") },
		func() { _, _ = r.Config("c") },
		func() { _, _ = r.Tasks("c") },
		func() { _, _ = r.Status("c") },
		func() { _, _ = r.TaskStatus("c", 0) },
		func() { _, _ = r.Topics("c") },
	}
	for i, read := range reads {
		before := m.syncs.Load()
		read()
		if m.syncs.Load() != before+1 {
			t.Fatalf("read %d did not sync the config topic first", i)
		}
	}
	before := m.syncs.Load()
	r.Plugins(true)
	r.Loggers()
	if m.syncs.Load() != before {
		t.Fatal("plugin and logger reads synced the config topic")
	}
}

// A write forwarded to a worker that no longer leads is refused with
// ErrNotLeader, never forwarded again; the forwarding worker's router asks
// again once it knows the new leader.
func TestRouterForwardedWriteIsNeverForwardedAgain(t *testing.T) {
	e := controltest.NewEnv(t)
	asked := 0
	other := &membership{leader: leaderFunc(func() { asked++ })}
	r := control.NewRouter(e.C, other, time.Second)
	err := r.Pause(control.Forwarded(t.Context()), "c")
	if err != control.ErrNotLeader || asked != 0 {
		t.Fatalf("forwarded write on a follower: %v, asked the leader %d time(s); want ErrNotLeader and none", err, asked)
	}
}

// leaderFunc is a leader that counts the writes it was asked.
type leaderFunc func()

func (f leaderFunc) Create(context.Context, string, map[string]string, control.InitialState) (control.ConnectorInfo, error) {
	f()
	return control.ConnectorInfo{}, nil
}
func (f leaderFunc) PutConfig(context.Context, string, map[string]string) (control.ConnectorInfo, bool, error) {
	f()
	return control.ConnectorInfo{}, false, nil
}
func (f leaderFunc) PatchConfig(context.Context, string, map[string]*string) (control.ConnectorInfo, error) {
	f()
	return control.ConnectorInfo{}, nil
}
func (f leaderFunc) Delete(context.Context, string) error { f(); return nil }
func (f leaderFunc) Pause(context.Context, string) error  { f(); return nil }
func (f leaderFunc) Resume(context.Context, string) error { f(); return nil }
func (f leaderFunc) Stop(context.Context, string) error   { f(); return nil }
func (f leaderFunc) Restart(context.Context, string, bool, bool) (control.ConnectorStatus, error) {
	f()
	return control.ConnectorStatus{}, nil
}
func (f leaderFunc) RestartTask(context.Context, string, int) error { f(); return nil }
func (f leaderFunc) AlterOffsets(context.Context, string, []control.ConnectorOffset) (control.Message, error) {
	f()
	return control.Message{}, nil
}
func (f leaderFunc) ResetOffsets(context.Context, string) (control.Message, error) {
	f()
	return control.Message{}, nil
}
func (f leaderFunc) ResetTopics(context.Context, string) error { f(); return nil }
func (f leaderFunc) SetLogger(context.Context, string, string, string) ([]string, error) {
	f()
	return nil, nil
}
func (f leaderFunc) PutTaskConfigs(context.Context, string, []map[string]string) error {
	f()
	return nil
}
