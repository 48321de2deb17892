package assign

import (
	"fmt"
	"testing"
)

// benchCluster returns a stable cluster of w workers running t tasks over
// connectors of at most 20 tasks each.
func benchCluster(b *testing.B, w, t int) ([]Member, Work) {
	b.Helper()
	var work Work
	for c := 0; c*20 < t; c++ {
		name := fmt.Sprintf("conn-%03d", c)
		work.Connectors = append(work.Connectors, name)
		work.Tasks = append(work.Tasks, tasksOf(name, min(20, t-c*20))...)
	}
	s, err := stabilize(workers(w), work)
	if err != nil {
		b.Fatal(err)
	}
	return s.members, work
}

// BenchmarkAssign measures one Assign call: "fresh" places all work on idle
// workers, "join" is the first round after one worker joins a stable
// cluster (the revoking round, which computes the whole target).
func BenchmarkAssign(b *testing.B) {
	for _, c := range []struct{ workers, tasks int }{{3, 12}, {10, 100}, {100, 1000}, {100, 10000}} {
		b.Run(fmt.Sprintf("fresh/workers=%d/tasks=%d", c.workers, c.tasks), func(b *testing.B) {
			_, work := benchCluster(b, c.workers, c.tasks)
			idle := workers(c.workers)
			for b.Loop() {
				Assign(idle, work)
			}
		})
		b.Run(fmt.Sprintf("join/workers=%d/tasks=%d", c.workers, c.tasks), func(b *testing.B) {
			members, work := benchCluster(b, c.workers, c.tasks)
			members = append(members, Member{ID: "w-new"})
			for b.Loop() {
				Assign(members, work)
			}
		})
	}
}
