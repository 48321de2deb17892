// Package assign computes the group leader's assignment of connectors and
// tasks to the members of a Sluice cluster.
//
// The assignor is incremental cooperative, sticky and balanced, and it is a
// pure function of its input: no I/O, no clock, no randomness, so every
// leader that sees the same members and the same work computes the same plans.
//
// # Rounds
//
// Work that must move from member A to member B is revoked from A in one
// round and given to B only in a later round, once no member reports running
// it; so a connector or task never runs on two workers at once (invariant 4).
// Work that nobody runs (new work, or the work of a departed member) is
// assigned at once. After a round that revokes moving work, NeedsFollowUp is
// true and the leader triggers another rebalance; that second round assigns
// the revoked work and never revokes anything, so a cluster reaches its stable
// assignment in at most two rounds.
//
// The two-round bound holds because the second round recomputes exactly what
// the first one planned: the first round places unowned work in two phases,
// first the work it assigns at once and then the work it revokes, and the
// second round starts from the state the first phase produced.
//
// # Tasks
//
// With T tasks and n members, every member ends with floor(T/n) or
// floor(T/n)+1 tasks. Members keep what they run as long as that bound allows;
// the T%n places for floor(T/n)+1 go to the members that run the most tasks
// now, which makes the number of moved tasks the minimum any balanced
// assignment needs. Unowned tasks, taken in (connector, task) order, go to
// the member with room that runs the fewest tasks of the same connector, then
// the fewest tasks, then the smallest id. From an empty cluster this deals
// every connector's tasks round-robin: each member gets floor or ceil of k/n
// of a connector's k tasks while the totals still differ by at most one.
// An overloaded member gives up tasks of the connectors the members with room
// lack and it runs the most of above their even share, so a newcomer gets a
// slice of many connectors rather than many tasks of one. Global balance and
// stickiness come first: no task moves only to improve a connector's spread,
// so after many leaves a member may run a task or two above a connector's
// even share.
//
// # Connectors
//
// A connector with tasks runs on a member that runs one of its tasks, so a
// connector with N tasks keeps at most N members busy. A connector without
// tasks may run anywhere. Within that rule, connector counts are balanced as
// well as co-location allows; precisely: member A runs two or more connectors
// more than member B only if there is no chain of moves from A to B, each
// moving one connector to a member that runs one of its tasks (a connector
// without tasks may move to any member). Such a placement minimizes the sum
// of squared connector counts; without co-location constraints it means the
// counts differ by at most one. A connector stays where it runs unless its
// member no longer runs any of its tasks or balance needs the move; unowned
// connectors go to the eligible member with the fewest connectors.
//
// # Duplicates
//
// When several members claim the same connector or task (possible after a
// network partition), the member with the lexicographically smallest id keeps
// it and every other claimant must revoke it in the same round.
package assign

import (
	"cmp"
	"slices"

	"github.com/sluice-io/sluice/connectors"
)

// Member is one group member as the leader sees it in JoinGroup: its id (the
// worker id / group.instance.id) and what it runs now.
type Member struct {
	ID         string
	Connectors []string
	Tasks      []connectors.TaskID
}

// Work is what should run in the cluster: every connector (that is not
// STOPPED) and every committed task.
type Work struct {
	Connectors []string
	Tasks      []connectors.TaskID
}

// Plan is one member's assignment for this round.
type Plan struct {
	// Connectors is everything the member runs after this round (full set,
	// sorted).
	Connectors []string
	// Tasks is every task the member runs after this round (full set, sorted
	// by connector, then task).
	Tasks []connectors.TaskID
	// RevokedConnectors is what the member must stop now: it ran them and
	// they are not in Connectors (sorted).
	RevokedConnectors []string
	// RevokedTasks is what the member must stop now (sorted).
	RevokedTasks []connectors.TaskID

	// moving is set when this plan revokes work that another member is to
	// run in a later round. It cannot be derived from the exported fields: a
	// deleted connector and a moving one are both revoked and assigned to
	// nobody in this round.
	moving bool
}

// NeedsFollowUp reports whether plans revoke anything that is meant to move,
// i.e. whether the leader should trigger another round after the
// revocations. It answers for plans returned by Assign; it does not see
// through a plan that was copied field by field (for example after encoding).
func NeedsFollowUp(plans map[string]Plan) bool {
	for _, p := range plans {
		if p.moving {
			return true
		}
	}
	return false
}

// Assign returns a Plan per member. See the package documentation for the
// rules it follows.
func Assign(members []Member, work Work) map[string]Plan {
	s := newState(members, work)
	if s.n == 0 {
		return map[string]Plan{}
	}
	s.claim(members)
	s.assignTasks()
	s.assignConnectors()
	return s.plans()
}

// state is the working data of one Assign call. Members, connector names and
// tasks are interned to sorted indexes so that every tie-break is by index,
// which is the lexicographic order the package promises.
type state struct {
	n     int
	ids   []string       // member ids, sorted
	memOf map[string]int // member id -> index

	names   []string       // every connector name that appears in Work, sorted
	nameOf  map[string]int // name -> index
	running []bool         // name index -> the connector itself is in Work.Connectors

	tasks  []connectors.TaskID       // Work.Tasks, deduplicated and sorted
	taskOf map[connectors.TaskID]int // task -> index
	tconn  []int                     // task index -> name index
	ntasks []int                     // name index -> number of tasks in Work

	// Per member, filled by claim and extended by the assignment phases.
	revokedConns [][]string
	revokedTasks [][]connectors.TaskID
	moving       []bool

	// Tasks.
	towner   []int   // task -> member that runs it after this round, or -1
	tfinal   []int   // task -> member that runs it at the stable point
	tpending []bool  // task -> revoked now, assigned in a later round
	total    []int   // member -> tasks at the stable point (grows during the phases)
	perConn  []int32 // member*len(names)+name -> tasks of that connector at the stable point

	// Connectors (indexed by name index; only running names matter).
	cclaim []int // member that runs it now and keeps its claim (rule 7), or -1
	cowner []int // member that runs it after this round, or -1
}

func newState(members []Member, work Work) *state {
	s := &state{memOf: map[string]int{}, nameOf: map[string]int{}, taskOf: map[connectors.TaskID]int{}}
	for _, m := range members {
		s.memOf[m.ID] = 0
	}
	s.ids = sortedKeys(s.memOf)
	for i, id := range s.ids {
		s.memOf[id] = i
	}
	s.n = len(s.ids)

	for _, c := range work.Connectors {
		s.nameOf[c] = 0
	}
	for _, t := range work.Tasks {
		s.nameOf[t.Connector] = 0
		s.taskOf[t] = 0
	}
	s.names = sortedKeys(s.nameOf)
	for i, c := range s.names {
		s.nameOf[c] = i
	}
	s.running = make([]bool, len(s.names))
	for _, c := range work.Connectors {
		s.running[s.nameOf[c]] = true
	}
	s.tasks = make([]connectors.TaskID, 0, len(s.taskOf))
	for t := range s.taskOf {
		s.tasks = append(s.tasks, t)
	}
	slices.SortFunc(s.tasks, compareTask)
	s.tconn = make([]int, len(s.tasks))
	s.ntasks = make([]int, len(s.names))
	for i, t := range s.tasks {
		s.taskOf[t] = i
		k := s.nameOf[t.Connector]
		s.tconn[i] = k
		s.ntasks[k]++
	}

	s.revokedConns = make([][]string, s.n)
	s.revokedTasks = make([][]connectors.TaskID, s.n)
	s.moving = make([]bool, s.n)
	s.towner = filled(len(s.tasks), -1)
	s.tfinal = filled(len(s.tasks), -1)
	s.tpending = make([]bool, len(s.tasks))
	s.total = make([]int, s.n)
	s.perConn = make([]int32, s.n*len(s.names))
	s.cclaim = filled(len(s.names), -1)
	return s
}

// claim records what every member runs now. Members are visited in id
// order, so the first claimant of a connector or task is the smallest id and
// keeps it (rule 7); later claimants revoke it. Claims of work that is gone
// are revoked.
func (s *state) claim(members []Member) {
	tclaims := make([][]connectors.TaskID, s.n)
	cclaims := make([][]string, s.n)
	for _, m := range members {
		i := s.memOf[m.ID]
		tclaims[i] = append(tclaims[i], m.Tasks...)
		cclaims[i] = append(cclaims[i], m.Connectors...)
	}
	for m := range s.n {
		for _, c := range uniqueSorted(cclaims[m], cmp.Compare[string]) {
			k, ok := s.nameOf[c]
			if !ok || !s.running[k] || s.cclaim[k] >= 0 {
				s.revokedConns[m] = append(s.revokedConns[m], c)
				continue
			}
			s.cclaim[k] = m
		}
		for _, t := range uniqueSorted(tclaims[m], compareTask) {
			i, ok := s.taskOf[t]
			if !ok || s.towner[i] >= 0 {
				s.revokedTasks[m] = append(s.revokedTasks[m], t)
				continue
			}
			s.towner[i] = m
			s.tfinal[i] = m
			s.total[m]++
			s.perConn[m*len(s.names)+s.tconn[i]]++
		}
	}
}

// assignTasks revokes what balance needs and places every unowned task.
func (s *state) assignTasks() {
	T := len(s.tasks)
	base, extra := T/s.n, T%s.n

	// The extra places for base+1 tasks go to the members that already run
	// the most (ties: smallest id); that choice minimizes the moves.
	order := make([]int, s.n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s.total[b], s.total[a]) })
	pooled := make([]int, len(s.names)) // unowned tasks per connector
	for i, o := range s.towner {
		if o < 0 {
			pooled[s.tconn[i]]++
		}
	}
	slots := extra
	limits := make([]int, s.n)
	for _, m := range order {
		limits[m] = -1 // no revocation; room up to base, or base+1 with a slot
		if s.total[m] <= base {
			continue
		}
		limits[m] = base
		if slots > 0 {
			limits[m] = base + 1
			slots--
		}
	}
	// The members with room receive the revoked tasks: need is how many
	// tasks of each connector they lack to reach its even share.
	K := len(s.names)
	need := make([]int, K)
	for m := range s.n {
		if s.total[m] > base || (s.total[m] == base && slots == 0) {
			continue
		}
		for k := range K {
			need[k] += max(0, (s.ntasks[k]+s.n-1)/s.n-int(s.perConn[m*K+k]))
		}
	}
	for _, m := range order {
		if limits[m] >= 0 {
			s.shed(m, s.total[m]-limits[m], pooled, need)
		}
	}

	// Unowned tasks: first those nobody runs (assigned now), then the ones
	// just revoked (assigned in the next round). The second phase starts
	// from the state the first one leaves, which is exactly the state the
	// next round sees, so the next round places them the same way.
	var revoked []int
	for i := range s.tasks {
		switch {
		case s.tpending[i]:
			revoked = append(revoked, i)
		case s.towner[i] < 0:
			m := s.placeTask(i, base, &slots)
			s.towner[i] = m
		}
	}
	for _, i := range revoked {
		s.placeTask(i, base, &slots)
	}
}

// shed revokes count tasks from member m, the highest task number of a
// connector first. The revoked tasks go to the members with room, so m gives
// up tasks of a connector those members lack (need counts how many tasks of
// each connector they are short of its even share, pooled how many the pool
// of unowned tasks holds already), and among those of the connector it runs
// the most of above the even share. Among equals it keeps the last task of a
// connector it hosts, so the connector need not move, and gives up a task of
// the connector the pool holds the fewest of. Without need and pooled every
// overloaded member would give up the same connector and a newcomer would
// receive all of them.
func (s *state) shed(m, count int, pooled, need []int) {
	K := len(s.names)
	byConn := make(map[int][]int) // name -> owned task indexes, ascending
	for i, o := range s.towner {
		if o == m {
			byConn[s.tconn[i]] = append(byConn[s.tconn[i]], i)
		}
	}
	conns := sortedKeys(byConn)
	for ; count > 0; count-- {
		best := -1
		for _, k := range conns {
			if len(byConn[k]) == 0 {
				continue
			}
			if best < 0 || s.shedsBefore(m, k, best, byConn, pooled, need) {
				best = k
			}
		}
		list := byConn[best]
		i := list[len(list)-1]
		byConn[best] = list[:len(list)-1]
		pooled[best]++
		s.towner[i] = -1
		s.tfinal[i] = -1
		s.tpending[i] = true
		s.total[m]--
		s.perConn[m*K+best]--
		s.revokedTasks[m] = append(s.revokedTasks[m], s.tasks[i])
		s.moving[m] = true
	}
}

// shedsBefore reports whether member m should give up a task of connector a
// before one of connector b (see shed).
func (s *state) shedsBefore(m, a, b int, byConn map[int][]int, pooled, need []int) bool {
	if wa, wb := pooled[a] < need[a], pooled[b] < need[b]; wa != wb {
		return wa
	}
	// n times (tasks on m - even share), in integers.
	if sa, sb := len(byConn[a])*s.n-s.ntasks[a], len(byConn[b])*s.n-s.ntasks[b]; sa != sb {
		return sa > sb
	}
	lastA := len(byConn[a]) == 1 && s.cclaim[a] == m
	lastB := len(byConn[b]) == 1 && s.cclaim[b] == m
	if lastA != lastB {
		return lastB
	}
	if pooled[a] != pooled[b] {
		return pooled[a] < pooled[b]
	}
	return a < b
}

// placeTask gives task i to the member with room that runs the fewest tasks
// of the same connector, then the fewest tasks, then has the smallest id.
// A member has room below base tasks, or at base while places for base+1
// remain. The room always suffices: it adds up to the number of unowned tasks.
func (s *state) placeTask(i, base int, slots *int) int {
	K, k := len(s.names), s.tconn[i]
	best := -1
	for m := range s.n {
		t := s.total[m]
		if t > base || (t == base && *slots == 0) {
			continue
		}
		if best < 0 {
			best = m
			continue
		}
		pm, pb := s.perConn[m*K+k], s.perConn[best*K+k]
		if pm < pb || (pm == pb && t < s.total[best]) {
			best = m
		}
	}
	if s.total[best] == base {
		*slots--
	}
	s.total[best]++
	s.perConn[best*K+k]++
	s.tfinal[i] = best
	return best
}

// assignConnectors places every running connector (see the package
// documentation) and revokes what moves.
func (s *state) assignConnectors() {
	K := len(s.names)
	p := &placement{
		n:     s.n,
		load:  make([]int, s.n),
		on:    make([][]int, s.n),
		owner: filled(K, -1),
		home:  filled(K, -1),
		elig:  make([][]int, K),
		any:   make([]bool, K),
	}
	// Eligible members: those that run one of the connector's tasks at the
	// stable point; all members for a connector without tasks.
	for k := range K {
		if !s.running[k] {
			continue
		}
		if s.ntasks[k] == 0 {
			p.any[k] = true
			continue
		}
		for m := range s.n {
			if s.perConn[m*K+k] > 0 {
				p.elig[k] = append(p.elig[k], m)
			}
		}
	}
	// Keep what runs on an eligible member; everything else is unowned.
	var pool []int
	for k := range K {
		if !s.running[k] {
			continue
		}
		if m := s.cclaim[k]; m >= 0 && (p.any[k] || s.perConn[m*K+k] > 0) {
			p.put(k, m)
			p.home[k] = m
			continue
		}
		pool = append(pool, k)
	}
	// Unowned connectors go to the eligible member with the fewest
	// connectors; the most constrained go first so that the flexible ones
	// fill the gaps they leave.
	slices.SortStableFunc(pool, func(a, b int) int { return cmp.Compare(p.width(a), p.width(b)) })
	for _, k := range pool {
		best := -1
		p.eachEligible(k, func(m int) {
			if best < 0 || p.load[m] < p.load[best] || (p.load[m] == p.load[best] && m < best) {
				best = m
			}
		})
		p.put(k, best)
	}
	p.balance()

	for k := range K {
		if !s.running[k] {
			continue
		}
		if c := s.cclaim[k]; c >= 0 && c != p.owner[k] {
			// It moves: stop it now, start it in the next round.
			s.revokedConns[c] = append(s.revokedConns[c], s.names[k])
			s.moving[c] = true
			p.owner[k] = -1
		}
	}
	s.cowner = p.owner
}

// plans turns the state into one Plan per member.
func (s *state) plans() map[string]Plan {
	out := make(map[string]Plan, s.n)
	conns := make([][]string, s.n)
	tasks := make([][]connectors.TaskID, s.n)
	for k, m := range s.cowner {
		if m >= 0 {
			conns[m] = append(conns[m], s.names[k])
		}
	}
	for i, m := range s.towner {
		if m >= 0 {
			tasks[m] = append(tasks[m], s.tasks[i])
		}
	}
	for m, id := range s.ids {
		out[id] = Plan{
			Connectors:        nonNil(conns[m]),
			Tasks:             nonNil(tasks[m]),
			RevokedConnectors: nonNil(uniqueSorted(s.revokedConns[m], cmp.Compare[string])),
			RevokedTasks:      nonNil(uniqueSorted(s.revokedTasks[m], compareTask)),
			moving:            s.moving[m],
		}
	}
	return out
}

// placement balances connectors over members under the co-location rule.
type placement struct {
	n     int
	load  []int   // member -> connectors placed on it
	on    [][]int // member -> connectors placed on it, ascending
	owner []int   // connector -> member it is placed on, or -1
	home  []int   // connector -> member that runs it now and may keep it, or -1
	elig  [][]int // connector -> members that may run it (ascending), unless any
	any   []bool  // connector -> it may run on any member
}

func (p *placement) width(k int) int {
	if p.any[k] {
		return p.n
	}
	return len(p.elig[k])
}

func (p *placement) eachEligible(k int, f func(m int)) {
	if p.any[k] {
		for m := range p.n {
			f(m)
		}
		return
	}
	for _, m := range p.elig[k] {
		f(m)
	}
}

func (p *placement) put(k, m int) {
	p.owner[k] = m
	p.load[m]++
	i, _ := slices.BinarySearch(p.on[m], k)
	p.on[m] = slices.Insert(p.on[m], i, k)
}

func (p *placement) take(k int) {
	m := p.owner[k]
	i, _ := slices.BinarySearch(p.on[m], k)
	p.on[m] = slices.Delete(p.on[m], i, i+1)
	p.load[m]--
	p.owner[k] = -1
}

// balance applies cost-reducing paths until none is left. A path leads from
// member a to member b with load(b) <= load(a)-2 through moves of one
// connector each to an eligible member; applying it lowers a by one, raises
// b by one and leaves the members in between unchanged. A placement without
// such a path minimizes the sum of squared loads (Harada et al., "Semi-
// matchings for bipartite graphs and load balancing"). Moving a connector
// from its home costs a revocation, so paths with the fewest such moves are
// taken first; when a path exists that moves only connectors nobody runs
// yet, it is taken. That matters for the two-round bound: the next round can
// reach a minimal placement by moving only what this round revoked, so it
// never needs to revoke again.
func (p *placement) balance() {
	dist := make([]int, p.n)
	via := make([]int, p.n)  // connector that was moved to reach the member
	from := make([]int, p.n) // member it was moved from
	done := make([]bool, p.n)
	deque := make([]int, 0, 2*p.n)
	for {
		minLoad := slices.Min(p.load)
		var sources []int
		for m := range p.n {
			if p.load[m] >= minLoad+2 {
				sources = append(sources, m)
			}
		}
		slices.SortStableFunc(sources, func(a, b int) int { return cmp.Compare(p.load[b], p.load[a]) })
		// First any path that moves only connectors nobody runs yet, from
		// any source; only then paths that revoke.
		target := -1
		for _, maxCost := range []int{0, len(p.owner)} {
			for _, src := range sources {
				target = p.search(src, maxCost, dist, via, from, done, deque[:0])
				if target >= 0 {
					break
				}
			}
			if target >= 0 {
				break
			}
		}
		if target < 0 {
			return
		}
		// A path visits every member once and uses one connector per
		// member it leaves, so its moves are independent of each other.
		for m := target; from[m] >= 0; m = from[m] {
			k := via[m]
			p.take(k)
			p.put(k, m)
		}
	}
}

// search runs a 0-1 breadth-first search from src where moving a connector
// away from its home costs 1 and any other move costs 0, and returns the
// cheapest member reached at cost <= maxCost with load <= load(src)-2, or -1. Members are expanded
// in order of cost, then of discovery; connectors and members in ascending
// order, so the result is deterministic.
func (p *placement) search(src, maxCost int, dist, via, from []int, done []bool, deque []int) int {
	const inf = int(^uint(0) >> 1)
	for m := range p.n {
		dist[m], via[m], from[m], done[m] = inf, -1, -1, false
	}
	dist[src] = 0
	deque = append(deque, src)
	head := 0
	limit := p.load[src] - 2
	for head < len(deque) {
		u := deque[head]
		head++
		if done[u] {
			continue
		}
		done[u] = true
		if p.load[u] <= limit {
			return u
		}
		anySeen := [2]bool{}
		for _, k := range p.on[u] {
			cost := 0
			if p.home[k] == u {
				cost = 1
			}
			if p.any[k] {
				if anySeen[cost] {
					continue
				}
				anySeen[cost] = true
			}
			d := dist[u] + cost
			if d > maxCost {
				continue
			}
			p.eachEligible(k, func(v int) {
				if v == u || done[v] || d >= dist[v] {
					return
				}
				dist[v], via[v], from[v] = d, k, u
				if cost == 0 {
					// 0-1 BFS: a zero-cost edge goes to the front.
					if head > 0 {
						head--
						deque[head] = v
					} else {
						deque = slices.Insert(deque, 0, v)
					}
				} else {
					deque = append(deque, v)
				}
			})
		}
	}
	return -1
}

func compareTask(a, b connectors.TaskID) int {
	if c := cmp.Compare(a.Connector, b.Connector); c != 0 {
		return c
	}
	return cmp.Compare(a.Task, b.Task)
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func uniqueSorted[T any](xs []T, compare func(a, b T) int) []T {
	xs = slices.Clone(xs)
	slices.SortFunc(xs, compare)
	return slices.CompactFunc(xs, func(a, b T) bool { return compare(a, b) == 0 })
}

func filled(n, v int) []int {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = v
	}
	return xs
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
