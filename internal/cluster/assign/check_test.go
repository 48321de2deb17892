package assign

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/sluice-io/sluice/connectors"
)

// This file holds the checks shared by the table and property tests. They
// are written from the properties, not from the implementation: each one
// recomputes what it needs from the members, the work and the plans.

// claims is what members run, merged by id (a member may appear twice in
// the input) and deduplicated.
type claims struct {
	ids   []string
	conns map[string]map[string]bool            // id -> connectors
	tasks map[string]map[connectors.TaskID]bool // id -> tasks
}

func claimsOf(members []Member) claims {
	c := claims{conns: map[string]map[string]bool{}, tasks: map[string]map[connectors.TaskID]bool{}}
	for _, m := range members {
		if c.conns[m.ID] == nil {
			c.ids = append(c.ids, m.ID)
			c.conns[m.ID] = map[string]bool{}
			c.tasks[m.ID] = map[connectors.TaskID]bool{}
		}
		for _, k := range m.Connectors {
			c.conns[m.ID][k] = true
		}
		for _, t := range m.Tasks {
			c.tasks[m.ID][t] = true
		}
	}
	sort.Strings(c.ids)
	return c
}

func setOf[T comparable](xs []T) map[T]bool {
	s := make(map[T]bool, len(xs))
	for _, x := range xs {
		s[x] = true
	}
	return s
}

// strictlySorted reports whether xs is sorted without duplicates.
func strictlySorted[T any](xs []T, compare func(a, b T) int) bool {
	for i := 1; i < len(xs); i++ {
		if compare(xs[i-1], xs[i]) >= 0 {
			return false
		}
	}
	return true
}

// roundStats is what checkRound learns about one round.
type roundStats struct {
	movedTasks int // tasks revoked from their keeper to run elsewhere
	movedConns int // connectors revoked from their keeper to run elsewhere
}

// checkRound checks the rules every single round must follow: plans are
// well formed; nothing runs on two members after the round (invariant 4,
// property 1), and work that changes member is assigned only once nobody
// reports running it; gone work is revoked; duplicate claims are resolved in
// favour of the smallest id (property 7); NeedsFollowUp is exactly "some
// revoked work runs nowhere now"; and the number of moved tasks is the
// minimum that any balanced assignment needs (property 3).
func checkRound(members []Member, work Work, plans map[string]Plan) (roundStats, error) {
	var st roundStats
	cl := claimsOf(members)
	if len(plans) != len(cl.ids) {
		return st, fmt.Errorf("%d plans for %d members", len(plans), len(cl.ids))
	}
	conns := newRoundSide("connector", cl.ids, cl.conns, work.Connectors)
	tasks := newRoundSide("task", cl.ids, cl.tasks, work.Tasks)
	for _, id := range cl.ids {
		p, ok := plans[id]
		if !ok {
			return st, fmt.Errorf("no plan for member %s", id)
		}
		if !strictlySorted(p.Connectors, cmp.Compare[string]) || !strictlySorted(p.RevokedConnectors, cmp.Compare[string]) ||
			!strictlySorted(p.Tasks, compareTask) || !strictlySorted(p.RevokedTasks, compareTask) {
			return st, fmt.Errorf("%s: plan lists not sorted or not unique: %+v", id, p)
		}
		if err := conns.checkPlan(id, p.Connectors, p.RevokedConnectors); err != nil {
			return st, err
		}
		if err := tasks.checkPlan(id, p.Tasks, p.RevokedTasks); err != nil {
			return st, err
		}
	}

	// Revoked work that is still wanted and runs nowhere after the round is
	// meant to move; exactly then the leader must run another round.
	st.movedConns, st.movedTasks = conns.moving(), tasks.moving()
	pending := st.movedConns+st.movedTasks > 0
	if pending != NeedsFollowUp(plans) {
		return st, fmt.Errorf("NeedsFollowUp = %v, but work is pending: %v", NeedsFollowUp(plans), pending)
	}

	// Property 3: the moves are the minimum any balanced assignment needs.
	// A member keeps the tasks it wins (valid, and the smallest id among
	// claimants); balanced means floor(T/n) or floor(T/n)+1 each, and the
	// cheapest such target gives the +1 to those that keep the most.
	held := make([]int, len(cl.ids))
	for i, id := range cl.ids {
		for t := range cl.tasks[id] {
			if tasks.work[t] && tasks.claimers[t][0] == id {
				held[i]++
			}
		}
	}
	if want := minMoves(held, len(tasks.work)); st.movedTasks != want {
		return st, fmt.Errorf("moved %d tasks, the minimum is %d", st.movedTasks, want)
	}
	return st, nil
}

// roundSide is one kind of work, connectors or tasks, as checkRound sees
// it across the members' plans of a round.
type roundSide[T comparable] struct {
	kind     string
	claims   map[string]map[T]bool // member -> what it reports running
	claimers map[T][]string        // what -> who claims it, smallest id first
	work     map[T]bool
	at       map[T]string // where it runs after the round
	revoked  map[T]bool
}

func newRoundSide[T comparable](kind string, ids []string, claims map[string]map[T]bool, work []T) *roundSide[T] {
	s := &roundSide[T]{kind: kind, claims: claims, claimers: map[T][]string{}, work: setOf(work),
		at: map[T]string{}, revoked: map[T]bool{}}
	for _, id := range ids {
		for x := range claims[id] {
			s.claimers[x] = append(s.claimers[x], id)
		}
	}
	for _, v := range s.claimers {
		sort.Strings(v)
	}
	return s
}

// checkPlan checks what member id's plan assigns and revokes of this kind.
func (s *roundSide[T]) checkPlan(id string, assigned, revoked []T) error {
	has := setOf(assigned)
	for _, x := range revoked {
		if !s.claims[id][x] {
			return fmt.Errorf("%s: revokes %s %v it does not run", id, s.kind, x)
		}
		if has[x] {
			return fmt.Errorf("%s: %s %v both revoked and assigned", id, s.kind, x)
		}
		s.revoked[x] = true
	}
	for x := range s.claims[id] {
		if !has[x] && !slices.Contains(revoked, x) {
			return fmt.Errorf("%s: %s %v neither kept nor revoked", id, s.kind, x)
		}
		if !s.work[x] && has[x] {
			return fmt.Errorf("%s: keeps %s %v that is not in the work", id, s.kind, x)
		}
		if len(s.claimers[x]) > 1 && s.claimers[x][0] != id && has[x] {
			return fmt.Errorf("%s: keeps duplicate %s %v that %s also runs", id, s.kind, x, s.claimers[x][0])
		}
	}
	for _, x := range assigned {
		if !s.work[x] {
			return fmt.Errorf("%s: assigned %s %v that is not in the work", id, s.kind, x)
		}
		if other, dup := s.at[x]; dup {
			return fmt.Errorf("%s %v runs on %s and %s", s.kind, x, other, id)
		}
		s.at[x] = id
		if !s.claims[id][x] && len(s.claimers[x]) > 0 {
			return fmt.Errorf("%s: %s %v assigned while %v still run it", id, s.kind, x, s.claimers[x])
		}
	}
	return nil
}

// moving counts the revoked work that is still wanted and runs nowhere
// after the round.
func (s *roundSide[T]) moving() int {
	n := 0
	for x := range s.revoked {
		if _, ok := s.at[x]; !ok && s.work[x] {
			n++
		}
	}
	return n
}

func minMoves(held []int, total int) int {
	n := len(held)
	if n == 0 {
		return 0
	}
	h := slices.Clone(held)
	slices.SortFunc(h, func(a, b int) int { return b - a })
	base, extra := total/n, total%n
	moves := 0
	for i, x := range h {
		q := base
		if i < extra {
			q++
		}
		moves += max(0, x-q)
	}
	return moves
}

// checkStable checks a stable assignment: properties 1 (everything runs
// exactly once), 2 (balance), 4 (co-location) and the connector balance rule
// as the package documents it.
func checkStable(members []Member, work Work) error {
	cl := claimsOf(members)
	n := len(cl.ids)
	if n == 0 {
		return nil
	}
	wc, wt := setOf(work.Connectors), setOf(work.Tasks)
	connAt := map[string]string{}
	taskAt := map[connectors.TaskID]string{}
	tasksOf := map[string]map[string]int{} // member -> connector -> tasks
	for _, id := range cl.ids {
		tasksOf[id] = map[string]int{}
		for k := range cl.conns[id] {
			if other, ok := connAt[k]; ok {
				return fmt.Errorf("connector %s runs on %s and %s", k, other, id)
			}
			connAt[k] = id
		}
		for t := range cl.tasks[id] {
			if other, ok := taskAt[t]; ok {
				return fmt.Errorf("task %v runs on %s and %s", t, other, id)
			}
			taskAt[t] = id
			tasksOf[id][t.Connector]++
		}
	}
	for k := range wc {
		if _, ok := connAt[k]; !ok {
			return fmt.Errorf("connector %s runs nowhere", k)
		}
	}
	for t := range wt {
		if _, ok := taskAt[t]; !ok {
			return fmt.Errorf("task %v runs nowhere", t)
		}
	}
	if len(connAt) != len(wc) || len(taskAt) != len(wt) {
		return fmt.Errorf("runs %d connectors and %d tasks, the work has %d and %d", len(connAt), len(taskAt), len(wc), len(wt))
	}

	// Property 2 for tasks.
	lo, hi := len(wt), 0
	for _, id := range cl.ids {
		lo, hi = min(lo, len(cl.tasks[id])), max(hi, len(cl.tasks[id]))
	}
	if hi-lo > 1 {
		return fmt.Errorf("task counts range from %d to %d", lo, hi)
	}

	// Property 4: a connector with tasks runs next to one of them, so it
	// keeps at most as many members busy as it has tasks.
	ntasks := map[string]int{}
	for t := range wt {
		ntasks[t.Connector]++
	}
	for k, id := range connAt {
		if ntasks[k] > 0 && tasksOf[id][k] == 0 {
			return fmt.Errorf("connector %s runs on %s, which runs none of its %d tasks", k, id, ntasks[k])
		}
	}

	// Property 2 for connectors: no member can pass a connector, through a
	// chain of moves to members allowed to run the connector, to a member
	// with two or fewer connectors less. Without co-location constraints
	// this is "counts differ by at most one".
	eligible := func(k, id string) bool { return ntasks[k] == 0 || tasksOf[id][k] > 0 }
	minConns := len(wc)
	for _, id := range cl.ids {
		minConns = min(minConns, len(cl.conns[id]))
	}
	for _, src := range cl.ids {
		if len(cl.conns[src]) < minConns+2 {
			continue // no member has two fewer
		}
		seen := map[string]bool{src: true}
		queue := []string{src}
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			if len(cl.conns[u]) <= len(cl.conns[src])-2 {
				return fmt.Errorf("connectors: %s runs %d and %s runs %d, and a chain of moves joins them",
					src, len(cl.conns[src]), u, len(cl.conns[u]))
			}
			for k := range cl.conns[u] {
				for _, v := range cl.ids {
					if !seen[v] && eligible(k, v) {
						seen[v] = true
						queue = append(queue, v)
					}
				}
			}
		}
	}
	return nil
}

// spreadExcess returns by how much the most tasks of one connector on one of
// members exceed the even share ceil(k/n) on n members (0 when every
// connector is spread evenly).
func spreadExcess(members []Member, work Work, n int) int {
	cl := claimsOf(members)
	if n == 0 {
		return 0
	}
	ntasks := map[string]int{}
	for t := range setOf(work.Tasks) {
		ntasks[t.Connector]++
	}
	worst := 0
	for _, id := range cl.ids {
		per := map[string]int{}
		for t := range cl.tasks[id] {
			per[t.Connector]++
		}
		for k, c := range per {
			worst = max(worst, c-(ntasks[k]+n-1)/n)
		}
	}
	return worst
}

// apply returns the members' state after they carried out plans.
func apply(members []Member, plans map[string]Plan) []Member {
	cl := claimsOf(members)
	out := make([]Member, 0, len(cl.ids))
	for _, id := range cl.ids {
		p := plans[id]
		out = append(out, Member{ID: id, Connectors: slices.Clone(p.Connectors), Tasks: slices.Clone(p.Tasks)})
	}
	return out
}

// stabilization is the outcome of running rounds until no follow-up is
// needed.
type stabilization struct {
	members []Member // the stable state
	rounds  []map[string]Plan
	moved   roundStats // summed over the rounds
}

// stabilize runs Assign, checking every round, until NeedsFollowUp is false;
// it fails if that takes more than two rounds or if the stable state is not a
// fixed point (one more round must change nothing).
func stabilize(members []Member, work Work) (stabilization, error) {
	var s stabilization
	cur := members
	for round := 1; ; round++ {
		plans := Assign(cur, work)
		if err := checkDeterministic(cur, work, plans, int64(round)); err != nil {
			return s, fmt.Errorf("round %d: %w", round, err)
		}
		st, err := checkRound(cur, work, plans)
		if err != nil {
			return s, fmt.Errorf("round %d: %w", round, err)
		}
		s.rounds = append(s.rounds, plans)
		s.moved.movedTasks += st.movedTasks
		s.moved.movedConns += st.movedConns
		cur = apply(cur, plans)
		if !NeedsFollowUp(plans) {
			break
		}
		if round == 2 {
			return s, fmt.Errorf("round 2 still needs a follow-up round")
		}
	}
	again := Assign(cur, work)
	for _, m := range cur {
		p := again[m.ID]
		if len(p.RevokedConnectors) > 0 || len(p.RevokedTasks) > 0 ||
			!slices.Equal(p.Connectors, m.Connectors) || !slices.Equal(p.Tasks, m.Tasks) {
			return s, fmt.Errorf("stable state is not a fixed point: %s had %v %v, gets %+v", m.ID, m.Connectors, m.Tasks, p)
		}
	}
	s.members = cur
	return s, checkStable(cur, work)
}
