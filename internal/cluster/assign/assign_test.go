package assign

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

func tasksOf(connector string, n int) []connectors.TaskID {
	ts := make([]connectors.TaskID, n)
	for i := range ts {
		ts[i] = connectors.TaskID{Connector: connector, Task: i}
	}
	return ts
}

func workers(n int) []Member {
	ms := make([]Member, n)
	for i := range ms {
		ms[i] = Member{ID: fmt.Sprintf("w%d", i+1)}
	}
	return ms
}

func mustStabilize(t *testing.T, members []Member, work Work) stabilization {
	t.Helper()
	s, err := stabilize(members, work)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func taskCounts(members []Member) []int {
	var c []int
	for _, m := range members {
		c = append(c, len(m.Tasks))
	}
	return c
}

func byID(members []Member) map[string]Member {
	out := map[string]Member{}
	for _, m := range members {
		out[m.ID] = m
	}
	return out
}

func TestEmptyCluster(t *testing.T) {
	if got := Assign(nil, Work{Connectors: []string{"a"}, Tasks: tasksOf("a", 3)}); len(got) != 0 {
		t.Fatalf("no members: got %v", got)
	}
	plans := Assign(workers(3), Work{})
	if len(plans) != 3 || NeedsFollowUp(plans) {
		t.Fatalf("no work: got %v, follow-up %v", plans, NeedsFollowUp(plans))
	}
	for id, p := range plans {
		if len(p.Connectors)+len(p.Tasks)+len(p.RevokedConnectors)+len(p.RevokedTasks) != 0 {
			t.Fatalf("%s: got %+v for no work", id, p)
		}
	}
}

func TestOneWorker(t *testing.T) {
	work := Work{Connectors: []string{"a", "b"}, Tasks: append(tasksOf("a", 3), tasksOf("b", 2)...)}
	s := mustStabilize(t, workers(1), work)
	if len(s.rounds) != 1 {
		t.Fatalf("unowned work must be assigned at once; took %d rounds", len(s.rounds))
	}
	w := s.members[0]
	if !slices.Equal(w.Connectors, []string{"a", "b"}) || len(w.Tasks) != 5 {
		t.Fatalf("got %+v", w)
	}
}

// threeByTwelve is the scenario: 3 workers run a 12-task connector.
func threeByTwelve(t *testing.T) ([]Member, Work) {
	t.Helper()
	work := Work{Connectors: []string{"datagen"}, Tasks: tasksOf("datagen", 12)}
	s := mustStabilize(t, workers(3), work)
	if len(s.rounds) != 1 {
		t.Fatalf("fresh cluster took %d rounds", len(s.rounds))
	}
	if c := taskCounts(s.members); !slices.Equal(c, []int{4, 4, 4}) {
		t.Fatalf("task counts %v, want 4-4-4", c)
	}
	return s.members, work
}

func TestThreeWorkersTwelveTasks(t *testing.T) {
	members, _ := threeByTwelve(t)
	// Round-robin dealing: w1 gets tasks 0,3,6,9.
	want := []connectors.TaskID{{Connector: "datagen", Task: 0}, {Connector: "datagen", Task: 3}, {Connector: "datagen", Task: 6}, {Connector: "datagen", Task: 9}}
	if !slices.Equal(members[0].Tasks, want) || !slices.Equal(members[0].Connectors, []string{"datagen"}) {
		t.Fatalf("w1 runs %+v", members[0])
	}
}

func TestJoinMovesOnlyWhatBalanceNeeds(t *testing.T) {
	before, work := threeByTwelve(t)
	joined := append(slices.Clone(before), Member{ID: "w4"})

	first := Assign(joined, work)
	if !NeedsFollowUp(first) {
		t.Fatal("revoking tasks to move them must ask for a follow-up round")
	}
	for _, m := range before {
		if n := len(first[m.ID].RevokedTasks); n != 1 {
			t.Fatalf("%s revokes %d tasks, want 1", m.ID, n)
		}
	}
	if p := first["w4"]; len(p.Tasks) != 0 {
		t.Fatalf("w4 must not get moving tasks before they are stopped; got %v", p.Tasks)
	}

	s := mustStabilize(t, joined, work)
	if len(s.rounds) != 2 || s.moved.movedTasks != 3 || s.moved.movedConns != 0 {
		t.Fatalf("rounds %d, moved %+v; want 2 rounds moving 3 tasks and no connector", len(s.rounds), s.moved)
	}
	if c := taskCounts(s.members); !slices.Equal(c, []int{3, 3, 3, 3}) {
		t.Fatalf("task counts %v, want 3-3-3-3", c)
	}
	after := byID(s.members)
	for _, m := range before {
		for _, task := range after[m.ID].Tasks {
			if !slices.Contains(m.Tasks, task) {
				t.Fatalf("%s gained %v; only the newcomer may gain", m.ID, task)
			}
		}
	}
	if !slices.Equal(after["w1"].Connectors, []string{"datagen"}) {
		t.Fatalf("the connector must stay on w1, which still runs its tasks: %+v", after)
	}
}

func TestLeaveMovesOnlyTheDepartedWork(t *testing.T) {
	before, work := threeByTwelve(t)
	survivors := []Member{before[0], before[2]}
	s := mustStabilize(t, survivors, work)
	if len(s.rounds) != 1 {
		t.Fatalf("a departed member's work is unowned and must be assigned at once; took %d rounds", len(s.rounds))
	}
	if c := taskCounts(s.members); !slices.Equal(c, []int{6, 6}) {
		t.Fatalf("task counts %v, want 6-6", c)
	}
	for i, m := range s.members {
		if len(s.rounds[0][m.ID].RevokedTasks) != 0 || !isSubset(survivors[i].Tasks, m.Tasks) {
			t.Fatalf("survivor %s lost work: had %v, has %v", m.ID, survivors[i].Tasks, m.Tasks)
		}
	}

	// The departed worker hosted the connector: it moves to a survivor.
	gone := []Member{before[1], before[2]}
	s = mustStabilize(t, gone, work)
	if !slices.Equal(byID(s.members)["w2"].Connectors, []string{"datagen"}) {
		t.Fatalf("connector of the departed w1 goes to the first survivor with fewest connectors: %+v", s.members)
	}
}

func isSubset[T comparable](sub, super []T) bool {
	for _, x := range sub {
		if !slices.Contains(super, x) {
			return false
		}
	}
	return true
}

func TestTasksMaxTwoOnSixWorkers(t *testing.T) {
	work := Work{Connectors: []string{"small"}, Tasks: tasksOf("small", 2)}
	s := mustStabilize(t, workers(6), work)
	busy := 0
	for _, m := range s.members {
		if len(m.Tasks) > 0 || len(m.Connectors) > 0 {
			busy++
		}
	}
	if busy != 2 {
		t.Fatalf("%d workers busy with a 2-task connector, want 2: %+v", busy, s.members)
	}

	// Next to a big connector the small one still occupies two workers,
	// and joins that spread the big one do not drag it elsewhere.
	work = Work{Connectors: []string{"big", "small"}, Tasks: append(tasksOf("big", 10), tasksOf("small", 2)...)}
	members := workers(4)
	for id := 5; id <= 6; id++ {
		s = mustStabilize(t, members, work)
		members = append(s.members, Member{ID: fmt.Sprintf("w%d", id)})
	}
	s = mustStabilize(t, members, work)
	busy = 0
	for _, m := range s.members {
		if slices.Contains(m.Connectors, "small") || slices.ContainsFunc(m.Tasks, func(x connectors.TaskID) bool { return x.Connector == "small" }) {
			busy++
		}
	}
	if busy != 2 {
		t.Fatalf("%d workers busy with the 2-task connector, want 2: %+v", busy, s.members)
	}
}

func TestConnectorWithoutTasks(t *testing.T) {
	// w1 runs two connectors, w2 one, w3 none: a task-less connector goes
	// to w3, the member with the fewest connectors.
	members := []Member{
		{ID: "w1", Connectors: []string{"a", "b"}, Tasks: []connectors.TaskID{{Connector: "a", Task: 0}, {Connector: "b", Task: 0}}},
		{ID: "w2", Connectors: []string{"c"}, Tasks: []connectors.TaskID{{Connector: "c", Task: 0}, {Connector: "c", Task: 1}}},
		{ID: "w3", Tasks: []connectors.TaskID{{Connector: "c", Task: 2}}},
	}
	work := Work{Connectors: []string{"a", "b", "c", "idle"}, Tasks: []connectors.TaskID{{Connector: "a", Task: 0}, {Connector: "b", Task: 0}, {Connector: "c", Task: 0}, {Connector: "c", Task: 1}, {Connector: "c", Task: 2}}}
	s := mustStabilize(t, members, work)
	if len(s.rounds) != 1 || !slices.Equal(byID(s.members)["w3"].Connectors, []string{"idle"}) {
		t.Fatalf("rounds %d, state %+v; want idle on w3 at once", len(s.rounds), s.members)
	}
}

func TestCoLocationOutranksConnectorBalance(t *testing.T) {
	// x and y have one task each, both on w1; the tasks are balanced
	// (2-2-2), so nothing moves, and x and y must stay next to their tasks:
	// connector counts 2-1-0 are the documented exception to balance.
	members := []Member{
		{ID: "w1", Connectors: []string{"x", "y"}, Tasks: []connectors.TaskID{{Connector: "x", Task: 0}, {Connector: "y", Task: 0}}},
		{ID: "w2", Connectors: []string{"big"}, Tasks: []connectors.TaskID{{Connector: "big", Task: 0}, {Connector: "big", Task: 1}}},
		{ID: "w3", Tasks: []connectors.TaskID{{Connector: "big", Task: 2}, {Connector: "big", Task: 3}}},
	}
	work := Work{Connectors: []string{"big", "x", "y"}, Tasks: append(tasksOf("big", 4), connectors.TaskID{Connector: "x", Task: 0}, connectors.TaskID{Connector: "y", Task: 0})}
	s := mustStabilize(t, members, work)
	if len(s.rounds) != 1 || s.moved != (roundStats{}) {
		t.Fatalf("rounds %d, moved %+v; want nothing to move", len(s.rounds), s.moved)
	}
	for i, m := range s.members {
		if !slices.Equal(m.Connectors, members[i].Connectors) || !slices.Equal(m.Tasks, members[i].Tasks) {
			t.Fatalf("state changed: %+v", s.members)
		}
	}
}

func TestConnectorFollowsItsTasks(t *testing.T) {
	// w1 hosts "c" but its only task is on w2: the connector must move to
	// w2 (revoked now, assigned in the next round).
	members := []Member{
		{ID: "w1", Connectors: []string{"c"}, Tasks: []connectors.TaskID{{Connector: "d", Task: 0}}},
		{ID: "w2", Connectors: []string{"d"}, Tasks: []connectors.TaskID{{Connector: "c", Task: 0}}},
	}
	work := Work{Connectors: []string{"c", "d"}, Tasks: []connectors.TaskID{{Connector: "c", Task: 0}, {Connector: "d", Task: 0}}}
	first := Assign(members, work)
	if !slices.Equal(first["w1"].RevokedConnectors, []string{"c"}) || !slices.Equal(first["w2"].RevokedConnectors, []string{"d"}) ||
		!NeedsFollowUp(first) {
		t.Fatalf("got %+v", first)
	}
	if len(first["w1"].Connectors)+len(first["w2"].Connectors) != 0 {
		t.Fatalf("moving connectors must not start before they stop: %+v", first)
	}
	s := mustStabilize(t, members, work)
	if got := byID(s.members); !slices.Equal(got["w1"].Connectors, []string{"d"}) || !slices.Equal(got["w2"].Connectors, []string{"c"}) {
		t.Fatalf("got %+v", s.members)
	}
}

func TestDuplicateClaims(t *testing.T) {
	// After a partition w1 and w2 both run connector c and task c-0; w3 runs
	// c-1 twice (listed twice) and a deleted task.
	members := []Member{
		{ID: "w2", Connectors: []string{"c"}, Tasks: []connectors.TaskID{{Connector: "c", Task: 0}, {Connector: "c", Task: 2}}},
		{ID: "w1", Connectors: []string{"c"}, Tasks: []connectors.TaskID{{Connector: "c", Task: 0}}},
		{ID: "w3", Tasks: []connectors.TaskID{{Connector: "c", Task: 1}, {Connector: "c", Task: 1}, {Connector: "gone", Task: 0}}},
	}
	work := Work{Connectors: []string{"c"}, Tasks: tasksOf("c", 3)}
	plans := Assign(members, work)
	if _, err := checkRound(members, work, plans); err != nil {
		t.Fatal(err)
	}
	want := map[string]Plan{
		"w1": {Connectors: []string{"c"}, Tasks: []connectors.TaskID{{Connector: "c", Task: 0}}, RevokedConnectors: []string{}, RevokedTasks: []connectors.TaskID{}},
		"w2": {Connectors: []string{}, Tasks: []connectors.TaskID{{Connector: "c", Task: 2}}, RevokedConnectors: []string{"c"}, RevokedTasks: []connectors.TaskID{{Connector: "c", Task: 0}}},
		"w3": {Connectors: []string{}, Tasks: []connectors.TaskID{{Connector: "c", Task: 1}}, RevokedConnectors: []string{}, RevokedTasks: []connectors.TaskID{{Connector: "gone", Task: 0}}},
	}
	if !reflect.DeepEqual(plans, want) {
		t.Fatalf("got  %+v\nwant %+v", plans, want)
	}
	if NeedsFollowUp(plans) {
		t.Fatal("resolving duplicates and deleting work moves nothing; no follow-up is needed")
	}
}

func TestDeletedWorkIsRevokedWithoutFollowUp(t *testing.T) {
	members, _ := threeByTwelve(t)
	plans := Assign(members, Work{})
	if NeedsFollowUp(plans) {
		t.Fatal("deleted work does not move")
	}
	for _, m := range members {
		p := plans[m.ID]
		if !slices.Equal(p.RevokedTasks, m.Tasks) || !slices.Equal(p.RevokedConnectors, m.Connectors) || len(p.Tasks) != 0 {
			t.Fatalf("%s: got %+v", m.ID, p)
		}
	}
}

func TestFreshAssignmentSpreadsEveryConnector(t *testing.T) {
	// Four 4-task connectors on four workers: each worker gets one task of
	// each, not all four of one.
	var tasks []connectors.TaskID
	for _, c := range []string{"a", "b", "c", "d"} {
		tasks = append(tasks, tasksOf(c, 4)...)
	}
	work := Work{Connectors: []string{"a", "b", "c", "d"}, Tasks: tasks}
	s := mustStabilize(t, workers(4), work)
	if e := spreadExcess(s.members, work, 4); e != 0 {
		t.Fatalf("spread excess %d: %+v", e, s.members)
	}
	for _, m := range s.members {
		if len(m.Connectors) != 1 {
			t.Fatalf("connectors not balanced: %+v", s.members)
		}
	}
}
