package assign

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// The property tests drive random clusters through random sequences of
// joins, leaves, restarts, connector adds, removals and resizes, and
// duplicate claims, and check every round (checkRound: invariant 4, gone
// work, duplicates, NeedsFollowUp, minimal task moves), every scrambled
// repetition of the input (checkDeterministic) and every stable state
// (checkStable: everything runs once, balance, co-location, connector
// balance, fixed point within two rounds). Seeds are fixed so CI is
// reproducible; ASSIGN_SEED=<n> runs one seed of every size instead.

type sizes struct {
	workers, connectors, tasks, tasksPerConnector, steps int
	// full starts every cluster at the maximum size instead of a random one.
	full bool
}

type sim struct {
	t       *testing.T
	seed    uint64
	r       *rand.Rand
	sz      sizes
	members []Member
	work    Work
	nextID  int
	nextCon int
	step    int
	// worst spread excess seen at a stable point, see spreadExcess.
	worstSpread int
}

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("seed %d (rerun with ASSIGN_SEED=%d), step %d: %s", s.seed, s.seed, s.step, fmt.Sprintf(format, args...))
}

func (s *sim) newWorker() Member {
	s.nextID++
	// Random ids, so that join order and id order differ.
	return Member{ID: fmt.Sprintf("w%04d-%d", s.r.IntN(10000), s.nextID)}
}

func (s *sim) addConnector() {
	if len(s.work.Connectors) >= s.sz.connectors {
		return
	}
	room := s.sz.tasks - len(s.work.Tasks)
	n := min(room, s.r.IntN(s.sz.tasksPerConnector+1))
	if s.r.IntN(10) == 0 {
		n = 0 // connectors without tasks
	}
	s.nextCon++
	name := fmt.Sprintf("c%04d-%d", s.r.IntN(10000), s.nextCon)
	s.work.Connectors = append(s.work.Connectors, name)
	s.work.Tasks = append(s.work.Tasks, tasksOf(name, n)...)
}

func (s *sim) removeConnector() {
	if len(s.work.Connectors) == 0 {
		return
	}
	i := s.r.IntN(len(s.work.Connectors))
	name := s.work.Connectors[i]
	s.work.Connectors = slices.Delete(s.work.Connectors, i, i+1)
	s.work.Tasks = slices.DeleteFunc(s.work.Tasks, func(t connectors.TaskID) bool { return t.Connector == name })
}

func (s *sim) resizeConnector() {
	if len(s.work.Connectors) == 0 {
		return
	}
	name := s.work.Connectors[s.r.IntN(len(s.work.Connectors))]
	s.work.Tasks = slices.DeleteFunc(s.work.Tasks, func(t connectors.TaskID) bool { return t.Connector == name })
	n := min(s.sz.tasks-len(s.work.Tasks), s.r.IntN(s.sz.tasksPerConnector+1))
	s.work.Tasks = append(s.work.Tasks, tasksOf(name, n)...)
}

// stabilizeStep runs rounds to the stable state and checks it.
func (s *sim) stabilizeStep(what string) stabilization {
	s.t.Helper()
	st, err := stabilize(s.members, s.work)
	if err != nil {
		s.fatalf("%s (%d workers, %d connectors, %d tasks): %v", what, len(claimsOf(s.members).ids), len(s.work.Connectors), len(s.work.Tasks), err)
	}
	s.members = st.members
	s.worstSpread = max(s.worstSpread, spreadExcess(s.members, s.work, len(s.members)))
	return st
}

func (s *sim) run() {
	s.t.Helper()
	nw, nc := 1+s.r.IntN(s.sz.workers), 1+s.r.IntN(s.sz.connectors)
	if s.sz.full {
		nw, nc = s.sz.workers, s.sz.connectors
	}
	for range nw {
		s.members = append(s.members, s.newWorker())
	}
	for range nc {
		s.addConnector()
	}
	s.stabilizeStep("initial assignment")
	// Property 5: from nothing, every connector is dealt evenly (each member
	// gets floor or ceil of its share) while the totals stay balanced.
	if e := spreadExcess(s.members, s.work, len(s.members)); e != 0 {
		s.fatalf("fresh assignment: a connector has %d tasks above its even share on one member", e)
	}

	for s.step = 1; s.step <= s.sz.steps; s.step++ {
		before := byID(s.members)
		drift := spreadExcess(s.members, s.work, len(s.members))
		switch op := s.r.IntN(9); op {
		case 0, 1: // one worker joins: it takes its share, nothing else moves
			newcomer := s.newWorker()
			s.members = append(s.members, newcomer)
			st := s.stabilizeStep("join")
			n, T := len(s.members), len(s.work.Tasks)
			got := len(byID(s.members)[newcomer.ID].Tasks)
			if got != T/n && got != (T+n-1)/n {
				s.fatalf("join: newcomer got %d of %d tasks on %d workers", got, T, n)
			}
			if st.moved.movedTasks != got {
				s.fatalf("join: %d tasks moved, the newcomer got %d", st.moved.movedTasks, got)
			}
			for _, m := range s.members {
				if m.ID != newcomer.ID && !isSubset(m.Tasks, before[m.ID].Tasks) {
					s.fatalf("join: %s gained tasks", m.ID)
				}
			}
			// Property 5 on a join: the old members give up tasks of the
			// connectors the newcomer lacks and they are most above the
			// even share of, so the newcomer gets no connector more than
			// one task above its share, plus whatever excess the old members
			// had (stickiness keeps that; see spreadExcess).
			if e := spreadExcess([]Member{byID(s.members)[newcomer.ID]}, s.work, n); e > 1+drift {
				s.fatalf("join: the newcomer runs %d tasks above a connector's even share (old excess %d)", e, drift)
			}
		case 2: // workers leave: only their work moves
			if len(s.members) <= 1 {
				continue
			}
			k := 1 + s.r.IntN(min(3, len(s.members)-1))
			for range k {
				i := s.r.IntN(len(s.members))
				s.members = slices.Delete(s.members, i, i+1)
			}
			s.stabilizeStep("leave")
			for _, m := range s.members {
				if !isSubset(before[m.ID].Tasks, m.Tasks) {
					s.fatalf("leave: survivor %s lost tasks", m.ID)
				}
			}
		case 3: // several workers join and one leaves in the same rebalance
			for range 1 + s.r.IntN(3) {
				s.members = append(s.members, s.newWorker())
			}
			if len(s.members) > 1 {
				i := s.r.IntN(len(s.members))
				s.members = slices.Delete(s.members, i, i+1)
			}
			s.stabilizeStep("joins and a leave")
		case 4: // a worker restarts empty under its own id
			i := s.r.IntN(len(s.members))
			s.members[i] = Member{ID: s.members[i].ID}
			s.stabilizeStep("restart")
		case 5:
			for range 1 + s.r.IntN(3) {
				s.addConnector()
			}
			s.stabilizeStep("add connectors")
		case 6:
			s.removeConnector()
			s.stabilizeStep("remove connector")
		case 7:
			s.resizeConnector()
			s.stabilizeStep("resize connector")
		case 8: // a partition healed: members claim each other's work
			if len(s.members) < 2 {
				continue
			}
			for range 1 + s.r.IntN(3) {
				a, b := s.r.IntN(len(s.members)), s.r.IntN(len(s.members))
				from, to := &s.members[a], &s.members[b]
				if a == b || len(from.Tasks) == 0 {
					continue
				}
				to.Tasks = append(slices.Clone(to.Tasks), from.Tasks[:1+s.r.IntN(len(from.Tasks))]...)
				to.Connectors = append(slices.Clone(to.Connectors), from.Connectors...)
				to.Tasks = append(to.Tasks, connectors.TaskID{Connector: "deleted-long-ago", Task: s.r.IntN(3)})
			}
			s.stabilizeStep("duplicate claims")
		}
		if len(s.members) == 0 {
			s.members = append(s.members, s.newWorker())
			s.stabilizeStep("first worker")
		}
	}
}

func seeds(defaults ...uint64) []uint64 {
	if v := os.Getenv("ASSIGN_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err == nil {
			return []uint64{n}
		}
	}
	return defaults
}

func runSims(t *testing.T, sz sizes, seedList []uint64) {
	worst := 0
	for _, seed := range seedList {
		s := &sim{t: t, seed: seed, r: newRand(seed), sz: sz}
		s.run()
		worst = max(worst, s.worstSpread)
	}
	// Spread after churn is not asserted: stickiness wins over spread (no
	// task moves only to spread a connector), so excess can build up over
	// many leaves. Fresh assignments and joins are asserted in run.
	t.Logf("%d seeds, worst spread excess after churn %d", len(seedList), worst)
}

func seedRange(from, n uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = from + uint64(i)
	}
	return out
}

// The sizes keep the property tests at about 13 s under -race on two cores.

func TestPropertySmallClusters(t *testing.T) {
	runSims(t, sizes{workers: 8, connectors: 12, tasks: 120, tasksPerConnector: 16, steps: 40}, seeds(seedRange(1, 100)...))
}

func TestPropertyMediumClusters(t *testing.T) {
	runSims(t, sizes{workers: 30, connectors: 80, tasks: 1500, tasksPerConnector: 40, steps: 25}, seeds(seedRange(1000, 8)...))
}

func TestPropertyLargeClusters(t *testing.T) {
	// 100 workers, 500 connectors with up to 40 tasks each: about 10,000
	// tasks, the upper end the issue names.
	runSims(t, sizes{workers: 100, connectors: 500, tasks: 10000, tasksPerConnector: 40, steps: 8, full: true}, seeds(5000))
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func TestPropertyFewTasksPerConnector(t *testing.T) {
	// Small connectors make co-location constraints tight. Seed 1601 caught
	// a balancer that revoked a connector while a move of only unowned
	// connectors would do, which made a second round revoke again.
	runSims(t, sizes{workers: 6, connectors: 10, tasks: 60, tasksPerConnector: 6, steps: 40}, seeds(seedRange(1590, 20)...))
}
