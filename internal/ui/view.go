// Package ui is Sluice's live dashboard: the cluster view (every worker,
// every connector and task with its state, placement, last error and
// throughput) built on any worker from the actor cluster and the control
// plane, served as JSON at GET /ui/state, and the page at GET /ui that
// shows it. The page's assets are embedded: it works offline and needs no
// build step.
package ui

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/controlpb"
)

// View is the whole cluster as one worker sees it: GET /ui/state's body
// and `sluice top -o json`'s output.
type View struct {
	// Worker is the worker that built the view.
	Worker     string      `json:"served_by"`
	Time       time.Time   `json:"time"`
	Workers    []Worker    `json:"workers"`
	Connectors []Connector `json:"connectors"`
	// Unreachable lists the members that did not answer in time.
	Unreachable []string `json:"unreachable,omitempty"`
}

// Worker is one worker of the cluster. A worker that the status topic
// still names for some task but that no longer answers is listed with
// Alive false, so that its tasks have a place until they move.
type Worker struct {
	ID         string `json:"worker_id"`
	URL        string `json:"url,omitempty"`
	Leader     bool   `json:"leader"`
	Generation int32  `json:"generation"`
	Alive      bool   `json:"alive"`
}

// Connector is one connector with its tasks, as its status says.
type Connector struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
	Tasks    []Task `json:"tasks"`
}

// Task is one task: its status and, when its worker answered, its
// throughput.
type Task struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace,omitempty"`
	// Measured tells whether the worker running the task reported its
	// rates; without it the numbers below are unknown, not zero.
	Measured      bool    `json:"measured"`
	RecordsPerSec float64 `json:"records_per_sec"`
	// Total counts the records the task wrote (source) or put (sink)
	// since it started on its worker.
	Total int64 `json:"total"`
	// Lag is a sink task's consumer lag in records, the most over its
	// partitions; -1 for a source, which has none.
	Lag int64 `json:"lag"`
}

// Members is what the actor cluster tells about its workers.
type Members interface {
	Workers(ctx context.Context) ([]*controlpb.WorkerInfo, []error)
	TaskRates(ctx context.Context) ([]*controlpb.TaskRates, []error)
}

// Statuses is the part of the control plane the view reads.
type Statuses interface {
	Connectors() ([]string, error)
	Status(name string) (control.ConnectorStatus, error)
}

// Build builds the cluster view on worker self: the members and their
// task rates asked in parallel through the actor cluster (bounded by ctx),
// the connectors' statuses from this worker's view of the status topic.
func Build(ctx context.Context, self string, members Members, statuses Statuses) (View, error) {
	v := View{Worker: self, Time: time.Now().UTC(), Workers: []Worker{}, Connectors: []Connector{}}
	// A member that does not answer for its rates is already listed as
	// unreachable by Workers; its tasks show unmeasured.
	ratesDone := make(chan []*controlpb.TaskRates, 1)
	go func() {
		r, _ := members.TaskRates(ctx)
		ratesDone <- r
	}()
	infos, errs := members.Workers(ctx)
	for _, err := range errs {
		v.Unreachable = append(v.Unreachable, err.Error())
	}
	known := map[string]bool{}
	for _, wi := range infos {
		known[wi.GetWorkerId()] = true
		v.Workers = append(v.Workers, Worker{ID: wi.GetWorkerId(), URL: wi.GetRestUrl(), Leader: wi.GetLeader(),
			Generation: wi.GetGeneration(), Alive: true})
	}
	names, err := statuses.Connectors()
	if err != nil {
		return View{}, err
	}
	for _, name := range names {
		st, err := statuses.Status(name)
		if control.StatusCode(err) == http.StatusNotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return View{}, err
		}
		c := Connector{Name: st.Name, Type: st.Type, State: st.Connector.State, WorkerID: st.Connector.WorkerID,
			Trace: st.Connector.Trace, Tasks: []Task{}}
		for _, t := range st.Tasks {
			c.Tasks = append(c.Tasks, Task{ID: t.ID, State: t.State, WorkerID: t.WorkerID, Trace: t.Trace})
		}
		v.Connectors = append(v.Connectors, c)
	}
	rates := map[string]map[taskKey]*controlpb.TaskRate{}
	for _, tr := range <-ratesDone {
		byTask := map[taskKey]*controlpb.TaskRate{}
		for _, r := range tr.GetRates() {
			byTask[taskKey{r.GetConnector(), int(r.GetTask())}] = r
		}
		rates[tr.GetWorkerId()] = byTask
	}
	for ci := range v.Connectors {
		c := &v.Connectors[ci]
		for ti := range c.Tasks {
			t := &c.Tasks[ti]
			if r, ok := rates[t.WorkerID][taskKey{c.Name, t.ID}]; ok {
				t.Measured, t.RecordsPerSec, t.Total, t.Lag = true, r.GetRecordsPerSec(), r.GetTotal(), r.GetLag()
			}
			if t.WorkerID != "" && !known[t.WorkerID] {
				// The status topic still names a worker that is gone:
				// its tasks show under it until the group moves them.
				known[t.WorkerID] = true
				v.Workers = append(v.Workers, Worker{ID: t.WorkerID})
			}
		}
	}
	sort.SliceStable(v.Workers, func(i, j int) bool { return v.Workers[i].ID < v.Workers[j].ID })
	return v, nil
}

type taskKey struct {
	connector string
	task      int
}
