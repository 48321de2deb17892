package actors

import (
	"maps"
	"sort"

	"github.com/sluice-io/sluice/internal/state"
)

// Assignment is what this worker runs now: per connector, whether it runs the
// Connector instance and which of its tasks. Connectors absent from Work stop
// here; those also listed in Deleted had their config removed, so their status
// is deleted too.
type Assignment struct {
	Generation int64
	Work       map[string]*ConnectorWork
	Deleted    []string
}

// ConnectorWork is one connector's share of an assignment.
type ConnectorWork struct {
	Name   string
	Config map[string]string
	Target state.TargetState
	// RunConnector says this worker runs the Connector instance, which
	// computes the task configs.
	RunConnector bool
	// Tasks maps each task this worker runs to its committed config.
	Tasks map[int]map[string]string
	// Committed are all committed task configs of the connector, so the
	// connector actor can tell whether the configs it computes are new.
	Committed  []map[string]string
	Generation int64
}

// WholeAssignment assigns every connector and committed task of the snapshot
// to this worker: the assignment of a cluster of one. prev, when given,
// names the connectors the worker ran before, to tell deleted ones.
func WholeAssignment(s state.Snapshot, generation int64, prev *Assignment) *Assignment {
	a := &Assignment{Generation: generation, Work: map[string]*ConnectorWork{}}
	for name, c := range s.Connectors {
		w := &ConnectorWork{
			Name: name, Config: c.Config, Target: c.TargetState, RunConnector: true,
			Tasks: map[int]map[string]string{}, Committed: c.Tasks, Generation: generation,
		}
		for i, tc := range c.Tasks {
			w.Tasks[i] = tc
		}
		a.Work[name] = w
	}
	if prev != nil {
		for name := range prev.Work {
			if _, ok := s.Connectors[name]; !ok {
				a.Deleted = append(a.Deleted, name)
			}
		}
		sort.Strings(a.Deleted)
	}
	return a
}

func sameConfig(a, b map[string]string) bool { return maps.Equal(a, b) }

func sameConfigs(a, b []map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !maps.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
