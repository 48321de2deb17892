package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/actors"
	"github.com/sluice-io/sluice/internal/admin"
	"github.com/sluice-io/sluice/internal/cluster/assign"
	"github.com/sluice-io/sluice/internal/cluster/group"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/controlpb"
	"github.com/sluice-io/sluice/internal/state"
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
	// lastWork is the work the leader assigned last; a config change that
	// alters it calls for a new round.
	lastWork assign.Work
}

func (m *membership) Current() ([]string, []connectors.TaskID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.current.Connectors), slices.Clone(m.current.Tasks)
}

func (m *membership) ConfigOffset() int64 { return m.w.configs.Snapshot().Offset }

// Work is every connector of the config topic (STOPPED ones too: their
// connector reports STOPPED and empties its tasks) and every committed task.
func (m *membership) Work(ctx context.Context) (assign.Work, int64, error) {
	if err := m.w.configs.ReadToEnd(ctx); err != nil {
		return assign.Work{}, 0, err
	}
	snap := m.w.configs.Snapshot()
	work := workOf(snap)
	m.mu.Lock()
	m.lastWork = work
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

func (m *membership) Assigned(generation int32, a group.Assignment) {
	m.mu.Lock()
	m.generation, m.current = generation, a
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
			if m.member.State().Leader() {
				work := workOf(m.w.configs.Snapshot())
				m.mu.Lock()
				changed := !slices.Equal(work.Connectors, m.lastWork.Connectors) || !slices.Equal(work.Tasks, m.lastWork.Tasks)
				m.mu.Unlock()
				if changed {
					m.member.Rejoin()
				}
			}
		}
	}
}

// leaderURL is the REST URL of the leader of the current generation, or ""
// while none is known.
func (m *membership) leader() (isLeader bool, url string) {
	st := m.member.State()
	return st.Leader(), st.Assignment.LeaderURL
}

// PutTaskConfigs stores a connector's task configs: the leader writes them,
// any other worker forwards them to the leader (invariant 2).
func (m *membership) PutTaskConfigs(ctx context.Context, name string, tasks []map[string]string) error {
	isLeader, leaderURL := m.leader()
	if isLeader {
		return m.w.configs.PutTaskConfigs(ctx, name, tasks)
	}
	if leaderURL == "" {
		return fmt.Errorf("no group leader known yet to store the task configs of %q", name)
	}
	if tasks == nil {
		tasks = []map[string]string{}
	}
	body, _ := json.Marshal(tasks)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, leaderURL+"/connectors/"+url.PathEscape(name)+"/tasks", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(forwardedHeader, m.w.cfg.WorkerID)
	resp, err := forwardClient.Do(req)
	if err != nil {
		return fmt.Errorf("forward task configs of %q to the leader: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("leader refused the task configs of %q: %s %s", name, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// forwardedHeader marks a request one worker forwarded to another, so a
// worker that is not the leader either never forwards it again.
const forwardedHeader = "X-Sluice-Forwarded-By"

var forwardClient = &http.Client{Timeout: 30 * time.Second}

// handler wraps the REST API: writes go to the leader (a follower proxies
// them there, as Connect does), and the internal task-config endpoint takes
// configs forwarded by other workers.
func (m *membership) handler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /connectors/{connector}/tasks", m.serveTaskConfigs)
	mux.HandleFunc("GET /workers", m.serveWorkers)
	mux.Handle("/", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !leaderWrite(r) {
			api.ServeHTTP(rw, r) // reads are served from the local view
			return
		}
		isLeader, leaderURL := m.leader()
		if isLeader {
			api.ServeHTTP(rw, r)
			return
		}
		if leaderURL == "" || r.Header.Get(forwardedHeader) != "" {
			conflict(rw)
			return
		}
		target, err := url.Parse(leaderURL)
		if err != nil {
			conflict(rw)
			return
		}
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.ErrorHandler = func(rw http.ResponseWriter, _ *http.Request, _ error) { conflict(rw) }
		r.Header.Set(forwardedHeader, m.w.cfg.WorkerID)
		proxy.ServeHTTP(rw, r)
	}))
	return mux
}

// leaderWrite tells the requests only the leader carries out: writes
// about connectors, and log levels set for the whole cluster (a record of
// the config topic, which only the leader writes: invariant 2).
func leaderWrite(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	if strings.HasPrefix(r.URL.Path, "/connectors") {
		return true
	}
	scope, _ := control.ParseLoggerScope(r.URL.Query().Get("scope"))
	return strings.HasPrefix(r.URL.Path, "/admin/loggers/") && scope == control.ScopeCluster
}

// conflict is Connect's answer while a rebalance leaves the leader unknown.
func conflict(rw http.ResponseWriter) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(http.StatusConflict)
	_ = json.NewEncoder(rw).Encode(map[string]any{"error_code": http.StatusConflict,
		"message": "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"})
}

func (m *membership) serveTaskConfigs(rw http.ResponseWriter, r *http.Request) {
	if isLeader, _ := m.leader(); !isLeader {
		conflict(rw)
		return
	}
	var tasks []map[string]string
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&tasks); err != nil {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(rw).Encode(map[string]any{"error_code": 400, "message": "task configs: " + err.Error()})
		return
	}
	if err := m.w.configs.PutTaskConfigs(r.Context(), r.PathValue("connector"), tasks); err != nil {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(rw).Encode(map[string]any{"error_code": 500, "message": err.Error()})
		return
	}
	rw.WriteHeader(http.StatusNoContent)
}

// info describes this worker for its admin actor.
func (m *membership) info() *controlpb.WorkerInfo {
	st := m.member.State()
	m.mu.Lock()
	defer m.mu.Unlock()
	wi := &controlpb.WorkerInfo{WorkerId: m.w.cfg.WorkerID, RestUrl: "http://" + advertised(m.w.ln.Addr().String()),
		Generation: st.Generation, Leader: st.Leader(), Connectors: slices.Clone(m.current.Connectors)}
	for _, t := range m.current.Tasks {
		wi.Tasks = append(wi.Tasks, &controlpb.TaskRef{Connector: t.Connector, Task: int32(t.Task)})
	}
	return wi
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
	body, err := m.workersBody(r.Context())
	if err != nil {
		conflict(rw)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(body)
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
// of this worker; writes go to the leader's admin actor.
func (m *membership) adminServer() *admin.Server {
	return &admin.Server{
		C: m.w.ctl, WorkerID: m.w.cfg.WorkerID,
		Leader: func() bool { isLeader, _ := m.leader(); return isLeader },
		Forward: func(ctx context.Context, req *controlpb.AdminRequest) (*controlpb.AdminResponse, error) {
			_, url := m.leader()
			if url == "" {
				return nil, errors.New("no group leader known yet")
			}
			return m.ask(ctx, m.actorOf("", url), req)
		},
		Workers: m.workersBody,
		RestartLocal: func(connector string, task int) bool {
			return m.w.runtime != nil && m.w.runtime.RestartTask(connector, task)
		},
	}
}
