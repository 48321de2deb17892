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
