package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/actors"
	"github.com/sluice-io/sluice/internal/admin"
	"github.com/sluice-io/sluice/internal/cluster/assign"
	"github.com/sluice-io/sluice/internal/cluster/group"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/controlpb"
	"github.com/sluice-io/sluice/internal/loglevel"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/ui"
)

// membership is the worker as its group member sees it (group.Handler), and
// what the rest of the worker asks about the group: who leads, what runs
// here.
type membership struct {
	w      *Worker
	member *group.Member

	mu         sync.Mutex
	generation int32
	current    group.Assignment
	prev       *actors.Assignment
	// lastWork is the work the last round assigned, as this worker knows
	// it (see workChanged); a config change that alters it calls for a new
	// round. known is false while a follower's view lags behind the config
	// offset its assignment was computed at.
	lastWork assign.Work
	known    bool
}

func (m *membership) Current() ([]string, []connectors.TaskID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.current.Connectors), slices.Clone(m.current.Tasks)
}

func (m *membership) ConfigOffset() int64 { return m.w.configs.Offset() }

// Work is every connector of the config topic (STOPPED ones too: their
// connector reports STOPPED and empties its tasks) and every committed task.
func (m *membership) Work(ctx context.Context) (assign.Work, int64, error) {
	if err := m.w.configs.ReadToEnd(ctx); err != nil {
		return assign.Work{}, 0, err
	}
	snap := m.w.configs.Snapshot()
	work := workOf(snap)
	m.mu.Lock()
	m.lastWork, m.known = work, true
	m.mu.Unlock()
	return work, snap.Offset, nil
}

func workOf(snap state.Snapshot) assign.Work {
	var work assign.Work
	for _, name := range slices.Sorted(maps.Keys(snap.Connectors)) {
		work.Connectors = append(work.Connectors, name)
		for i := range snap.Connectors[name].Tasks {
			work.Tasks = append(work.Tasks, connectors.TaskID{Connector: name, Task: i})
		}
	}
	return work
}

func (m *membership) Revoke(ctx context.Context, revoked []string, tasks []connectors.TaskID) error {
	m.mu.Lock()
	m.current.Connectors = slices.DeleteFunc(m.current.Connectors, func(c string) bool { return slices.Contains(revoked, c) })
	m.current.Tasks = slices.DeleteFunc(m.current.Tasks, func(t connectors.TaskID) bool { return slices.Contains(tasks, t) })
	m.mu.Unlock()
	m.apply()
	return m.w.runtime.WaitStopped(ctx, tasks)
}

// Rebalancing is told by the group member as each round starts.
func (m *membership) Rebalancing() { m.w.metrics.RebalanceStarted() }

func (m *membership) Assigned(generation int32, a group.Assignment) {
	m.w.metrics.RebalanceCompleted(int64(generation))
	leads := m.member.State().Leader()
	snap := m.w.configs.Snapshot()
	m.mu.Lock()
	m.generation, m.current = generation, a
	if !leads {
		// A follower's baseline: the work at the assignment's config
		// offset, when its view is there (see workChanged).
		m.known = snap.Offset == a.ConfigOffset
		if m.known {
			m.lastWork = workOf(snap)
		}
	}
	m.mu.Unlock()
	m.apply()
	if m.w.gossip != nil {
		m.w.gossip.JoinAll(slices.Collect(maps.Values(a.Gossip)))
	}
	if !m.w.ready.Swap(true) {
		m.w.log.Info().Msg("worker ready: joined its group")
	}
}

func (m *membership) Lost(ctx context.Context) error {
	m.mu.Lock()
	tasks := m.current.Tasks
	m.current = group.Assignment{}
	m.mu.Unlock()
	m.apply()
	return m.w.runtime.WaitStopped(ctx, tasks)
}

// apply hands the runtime this worker's share: the assignment joined with
// the configs of the latest snapshot.
func (m *membership) apply() {
	snap := m.w.configs.Snapshot()
	m.mu.Lock()
	defer m.mu.Unlock()
	a := &actors.Assignment{Generation: int64(m.generation), Work: map[string]*actors.ConnectorWork{}}
	work := func(name string) *actors.ConnectorWork {
		c := snap.Connectors[name]
		if c == nil {
			return nil
		}
		cw := a.Work[name]
		if cw == nil {
			cw = &actors.ConnectorWork{Name: name, Config: c.Config, Target: c.TargetState, Committed: c.Tasks,
				Tasks: map[int]map[string]string{}, Generation: int64(m.generation)}
			a.Work[name] = cw
		}
		return cw
	}
	for _, name := range m.current.Connectors {
		if cw := work(name); cw != nil {
			cw.RunConnector = true
		}
	}
	for _, t := range m.current.Tasks {
		if cw := work(t.Connector); cw != nil && t.Task < len(cw.Committed) {
			cw.Tasks[t.Task] = cw.Committed[t.Task]
		}
	}
	if m.prev != nil {
		for name := range m.prev.Work {
			if _, ok := snap.Connectors[name]; !ok {
				a.Deleted = append(a.Deleted, name)
			}
		}
		sort.Strings(a.Deleted)
	}
	m.prev = a
	m.w.runtime.Apply(a)
}

// follow re-applies the assignment on every config change (new task
// configs, target states); the leader also starts a new round when the set
// of connectors or tasks changed. Restart requests are carried out by the
// worker that runs what they name.
func (m *membership) follow(ctx context.Context) {
	changes, restarts := m.w.configs.Changes(), m.w.configs.Restarts()
	for {
		select {
		case <-ctx.Done():
			return
		case r, ok := <-restarts:
			if !ok {
				return
			}
			m.w.runtime.Restart(r.Connector, r.IncludeTasks, r.OnlyFailed)
		case <-changes:
			m.apply()
			if m.workChanged() {
				m.member.Rejoin()
			}
		}
	}
}

// workChanged reports whether the config topic now holds other connectors
// or tasks than the last round assigned. Every worker asks, not only the
// leader: a follower that rejoins at once spares the round the wait until
// its next heartbeat tells it of the leader's rejoin (up to
// heartbeat.interval.ms). The leader knows the work it assigned (Work); a
// follower takes the work of its view once that view has reached the
// config offset its assignment was computed at. A follower that rejoins
// for nothing only costs a round that moves nothing: assignment is sticky.
func (m *membership) workChanged() bool {
	snap := m.w.configs.Snapshot()
	work := workOf(snap)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.known {
		if snap.Offset >= m.current.ConfigOffset {
			m.lastWork, m.known = work, true
		}
		return false
	}
	if slices.Equal(work.Connectors, m.lastWork.Connectors) && slices.Equal(work.Tasks, m.lastWork.Tasks) {
		return false
	}
	m.lastWork = work // one rejoin per change
	return true
}

// Leader tells the control plane who carries out writes now (see
// control.Router): this worker, or the leader's admin actor, found through
// gossip by the leader's URL from the assignment.
func (m *membership) Leader() (self bool, leader control.LeaderWrites) {
	st := m.member.State()
	if st.Leader() {
		return true, nil
	}
	addr := m.actorOf("", st.Assignment.LeaderURL)
	if st.Assignment.LeaderURL == "" || addr == "" || m.w.actors == nil {
		return false, nil
	}
	return false, admin.Leader{From: m.w.cfg.WorkerID, Ask: func(ctx context.Context, req *controlpb.AdminRequest) (*controlpb.AdminResponse, error) {
		return m.ask(ctx, addr, req)
	}}
}

// standing is where this worker stands in its cluster, for GET /health:
// pending while it connects to Kafka and reads its state topics; unhealthy
// if that failed for good, or as soon as its group member's exchanges fail
// to authenticate; then its
// group membership (group.Standing.Problem: unhealthy once the broker
// or the membership has been lost for longer than the session timeout,
// pending while joining or rebalancing), then pending while it has not
// read the config topic up to the offset its assignment was computed at.
func (m *membership) standing() control.Standing {
	select {
	case <-m.w.connected:
	default:
		why := "connecting to Kafka and reading the config, offset and status topics"
		if u, _ := m.w.unreachable.Load().(string); u != "" {
			why += ": Kafka is unreachable: " + u
		}
		return control.Standing{Pending: why}
	}
	if err := m.w.Err(); err != nil {
		// The start failed for good: no member runs, none will.
		return control.Standing{Unhealthy: "the worker could not start: " + err.Error()}
	}
	gs := m.member.Standing()
	if authErr := m.w.security.own.AuthFailure(gs.Err); authErr != nil {
		// Credentials that stop working later (a password rotated on the
		// broker, a user deleted) are unhealthy at once: waiting out the
		// session timeout will not fix them.
		return control.Standing{Unhealthy: authErr.Error()}
	}
	if unhealthy, pending := gs.Problem(time.Now()); unhealthy != "" || pending != "" {
		return control.Standing{Unhealthy: unhealthy, Pending: pending}
	}
	m.mu.Lock()
	want := m.current.ConfigOffset
	m.mu.Unlock()
	if at := m.w.configs.Offset(); at < want {
		return control.Standing{Pending: fmt.Sprintf("reading the config topic: at offset %d of %d, where this worker's assignment was computed", at, want)}
	}
	return control.Standing{}
}

// Sync reads the config topic to its end (control.Router reads with it).
func (m *membership) Sync(ctx context.Context) error { return m.w.configs.ReadToEnd(ctx) }

// info describes this worker for its admin actor.
func (m *membership) info() *controlpb.WorkerInfo {
	st := m.member.State()
	m.mu.Lock()
	defer m.mu.Unlock()
	wi := &controlpb.WorkerInfo{WorkerId: m.w.cfg.WorkerID, RestUrl: m.w.restURL,
		Generation: st.Generation, Leader: st.Leader(), Connectors: slices.Clone(m.current.Connectors)}
	for _, t := range m.current.Tasks {
		wi.Tasks = append(wi.Tasks, &controlpb.TaskRef{Connector: t.Connector, Task: int32(t.Task)})
	}
	return wi
}

// rates answers a TaskRatesRequest: the throughput of this worker's tasks,
// from its metrics registry (none with metrics off: the view then shows
// the tasks unmeasured).
func (m *membership) rates() *controlpb.TaskRates {
	tr := &controlpb.TaskRates{WorkerId: m.w.cfg.WorkerID}
	for _, r := range m.w.metrics.TaskRates() {
		tr.Rates = append(tr.Rates, &controlpb.TaskRate{Connector: r.Connector, Task: int32(r.Task), Kind: r.Kind,
			RecordsPerSec: r.RecordsPerSec, Total: r.Total, Lag: r.Lag})
	}
	return tr
}

// clusterView builds the dashboard's view of the whole cluster on this
// worker: the members and their rates through the actor cluster, the
// statuses from this worker's control plane.
func (m *membership) clusterView(ctx context.Context) (ui.View, error) {
	select {
	case <-m.w.connected: // actors is set, or will never be
	default:
		return ui.View{}, &control.Error{Code: http.StatusServiceUnavailable,
			Message: "the worker is starting: it has not joined the actor cluster yet"}
	}
	if m.w.actors == nil {
		return ui.View{}, &control.Error{Code: http.StatusServiceUnavailable,
			Message: "the worker could not join the actor cluster"}
	}
	// One read of the config topic to its end for the whole view, then
	// the local control plane: the Router would read it again for every
	// connector, and a page polls every second. A broker that does not
	// answer leaves the members their own time to answer.
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	err := m.Sync(sctx)
	cancel()
	if err != nil {
		m.w.log.Debug().Err(err).Msg("cluster view from this worker's view: the config topic could not be read to its end")
	}
	ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return ui.Build(ctx, m.w.cfg.WorkerID, m.w.actors, m.w.ctl)
}

type workerJSON struct {
	WorkerID   string              `json:"worker_id"`
	URL        string              `json:"url"`
	Generation int32               `json:"generation"`
	Leader     bool                `json:"leader"`
	Connectors []string            `json:"connectors"`
	Tasks      []connectors.TaskID `json:"tasks"`
}

// workersBody is GET /workers' answer (a Sluice extension of Connect's
// API): every worker of the cluster, asked through the actor cluster, with
// what it runs. Workers that do not answer in time are listed as
// unreachable.
func (m *membership) workersBody(ctx context.Context) (any, error) {
	if m.w.actors == nil {
		return nil, &control.Error{Code: http.StatusConflict, Message: admin.Conflict}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out := struct {
		Workers     []workerJSON `json:"workers"`
		Unreachable []string     `json:"unreachable,omitempty"`
	}{Workers: []workerJSON{}}
	infos, errs := m.w.actors.Workers(ctx)
	for _, wi := range infos {
		wj := workerJSON{WorkerID: wi.WorkerId, URL: wi.RestUrl, Generation: wi.Generation, Leader: wi.Leader,
			Connectors: wi.Connectors, Tasks: []connectors.TaskID{}}
		if wj.Connectors == nil {
			wj.Connectors = []string{}
		}
		for _, t := range wi.Tasks {
			wj.Tasks = append(wj.Tasks, connectors.TaskID{Connector: t.Connector, Task: int(t.Task)})
		}
		out.Workers = append(out.Workers, wj)
	}
	for _, err := range errs {
		out.Unreachable = append(out.Unreachable, err.Error())
	}
	return out, nil
}

func (m *membership) serveWorkers(rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Content-Type", "application/json")
	body, err := m.workersBody(r.Context())
	if err != nil {
		code := control.StatusCode(err)
		rw.WriteHeader(code)
		_ = json.NewEncoder(rw).Encode(map[string]any{"error_code": code, "message": err.Error()})
		return
	}
	_ = json.NewEncoder(rw).Encode(body)
}

// handler is the REST API plus Sluice's extensions: GET /workers and,
// unless turned off, the dashboard (/ui).
func (m *membership) handler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /workers", m.serveWorkers)
	if !m.w.cfg.DisableUI {
		dashboard := ui.Handler(m.clusterView)
		mux.Handle("/ui", dashboard)
		mux.Handle("/ui/", dashboard)
	}
	mux.Handle("/", api)
	return mux
}

// actorOf is the actor address of the worker with the given id, or of the
// one whose REST URL is url, from gossip.
func (m *membership) actorOf(workerID, url string) string {
	if m.w.gossip == nil {
		return ""
	}
	for _, p := range m.w.gossip.Alive() {
		if (workerID != "" && p.WorkerID == workerID) || (url != "" && p.URL == url) {
			return p.Actor
		}
	}
	return ""
}

// ask sends an admin request to the admin actor at addr.
func (m *membership) ask(ctx context.Context, addr string, req *controlpb.AdminRequest) (*controlpb.AdminResponse, error) {
	if m.w.actors == nil || addr == "" {
		return nil, errors.New("the worker's actor address is not known yet")
	}
	res, err := m.w.actors.Ask(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	ar, ok := res.(*controlpb.AdminResponse)
	if !ok {
		return nil, fmt.Errorf("admin actor at %s answered %T", addr, res)
	}
	return ar, nil
}

// restartTaskOn asks worker workerID to restart a task it runs: this
// worker's runtime directly, another one through its admin actor.
func (m *membership) restartTaskOn(ctx context.Context, workerID, connector string, task int) (bool, error) {
	if workerID == m.w.cfg.WorkerID {
		return m.w.runtime != nil && m.w.runtime.RestartTask(connector, task), nil
	}
	res, err := m.ask(ctx, m.actorOf(workerID, ""), &controlpb.AdminRequest{ForwardedBy: m.w.cfg.WorkerID,
		Op: &controlpb.AdminRequest_LocalRestartTask{LocalRestartTask: &controlpb.TaskRef{Connector: connector, Task: int32(task)}}})
	if err != nil {
		return false, fmt.Errorf("worker %s: %w", workerID, err)
	}
	switch res.GetCode() {
	case http.StatusNoContent:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("worker %s answered %d: %s", workerID, res.GetCode(), res.GetMessage())
}

// adminServer answers the admin actor's requests with the control plane
// of this worker.
func (m *membership) adminServer() *admin.Server {
	return &admin.Server{
		C: m.w.api, WorkerID: m.w.cfg.WorkerID,
		Workers: m.workersBody,
		ClusterView: func(ctx context.Context) (any, error) {
			if m.w.cfg.DisableUI {
				return nil, &control.Error{Code: http.StatusNotFound,
					Message: "the dashboard's cluster view is turned off on worker " + m.w.cfg.WorkerID + " (--ui=false)"}
			}
			return m.clusterView(ctx)
		},
		// The admin CLI's requests are authenticated as REST's are.
		Auth: m.w.auth, Log: m.w.cfg.logger(loglevel.REST),
		RestartLocal: func(connector string, task int) bool {
			return m.w.runtime != nil && m.w.runtime.RestartTask(connector, task)
		},
	}
}
