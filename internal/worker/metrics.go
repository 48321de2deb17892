package worker

import (
	"maps"
	"net/http"
	"slices"

	"github.com/sluice-io/sluice/internal/metrics"
)

// newMetrics makes the worker's metrics registry, or nil when metrics are
// off (Config.DisableMetrics): then nothing is recorded and /metrics is not
// served.
func (w *Worker) newMetrics() *metrics.Registry {
	if w.cfg.DisableMetrics {
		return nil
	}
	r := metrics.NewRegistry()
	r.SetView(metrics.WorkerView{WorkerID: w.cfg.WorkerID, Statuses: w.statusesForMetrics, GossipMembers: w.gossipMembers})
	return r
}

// withMetrics serves GET /metrics beside the REST API, so that it is behind
// the same listeners, TLS and authentication.
func (w *Worker) withMetrics(api http.Handler) http.Handler {
	if w.metrics == nil {
		return api
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", w.metrics.Handler())
	mux.Handle("/", api)
	return mux
}

// Metrics is the worker's metrics registry (nil with metrics off): the
// dashboard and `sluice top` read its TaskRates.
func (w *Worker) Metrics() *metrics.Registry { return w.metrics }

// statusesForMetrics is the status of every connector in the config topic
// and of its tasks, as this worker reads the status topic.
func (w *Worker) statusesForMetrics() []metrics.ConnectorStatus {
	if !w.isConnected() {
		return nil
	}
	snap := w.configs.Snapshot()
	var out []metrics.ConnectorStatus
	for _, name := range slices.Sorted(maps.Keys(snap.Connectors)) {
		cs := metrics.ConnectorStatus{Name: name}
		if st, ok := w.statuses.Connector(name); ok {
			cs.State, cs.WorkerID = string(st.State), st.WorkerID
		}
		tasks := w.statuses.Tasks(name)
		for _, id := range slices.Sorted(maps.Keys(tasks)) {
			st := tasks[id]
			cs.Tasks = append(cs.Tasks, metrics.TaskStatus{ID: id, State: string(st.State), WorkerID: st.WorkerID})
		}
		out = append(out, cs)
	}
	return out
}

// gossipMembers is the number of workers gossip sees alive, this one
// included; false before gossip runs.
func (w *Worker) gossipMembers() (int, bool) {
	if !w.isConnected() || w.gossip == nil {
		return 0, false
	}
	return len(w.gossip.Alive()), true
}

// isConnected reports whether connect has returned, so that the fields it
// sets may be read.
func (w *Worker) isConnected() bool {
	select {
	case <-w.connected:
		return true
	default:
		return false
	}
}
