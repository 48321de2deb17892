package proctest

// A placement is where a connector's tasks run, task id -> worker id, as
// a worker's status of the connector shows it. The failover test and
// benchmark compare placements before and after a worker joins or dies.

// Counts returns how many tasks each worker of place runs.
func Counts(place map[int]string) map[string]int {
	out := map[string]int{}
	for _, w := range place {
		out[w]++
	}
	return out
}

// Balanced returns a condition on a placement that holds when every
// worker in it runs per tasks.
func Balanced(per int) func(map[int]string) bool {
	return func(place map[int]string) bool {
		for _, n := range Counts(place) {
			if n != per {
				return false
			}
		}
		return true
	}
}

// Moved counts the tasks of after that run on another worker than in
// before.
func Moved(before, after map[int]string) int {
	n := 0
	for task, w := range after {
		if before[task] != w {
			n++
		}
	}
	return n
}

// Status is what GET /connectors/{name}/status answers: Kafka Connect's
// ConnectorStateInfo.
type Status struct {
	Name      string        `json:"name"`
	Connector StatusOfOne   `json:"connector"`
	Tasks     []StatusOfOne `json:"tasks"`
	Type      string        `json:"type"`
}

// StatusOfOne is the state of the connector or of one task (ID).
type StatusOfOne struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	WorkerID string `json:"worker_id"`
	Trace    string `json:"trace"`
}

// AllTasks reports whether there is at least one task and every task is in
// state.
func (s Status) AllTasks(state string) bool {
	if len(s.Tasks) == 0 {
		return false
	}
	for _, x := range s.Tasks {
		if x.State != state {
			return false
		}
	}
	return true
}

// Running reports whether the connector and all of its (at least one)
// tasks are RUNNING.
func (s Status) Running() bool { return s.Connector.State == "RUNNING" && s.AllTasks("RUNNING") }
