package assign

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
)

// checkDeterministic checks property 6: Assign on a scrambled copy of the
// same input (members, connectors and tasks in another order, entries
// repeated, a member split over two entries with one id) returns the same
// plans.
func checkDeterministic(members []Member, work Work, plans map[string]Plan, seed int64) error {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	var scrambled []Member
	for _, m := range members {
		c, ts := slices.Clone(m.Connectors), slices.Clone(m.Tasks)
		if len(ts) > 0 && r.IntN(4) == 0 {
			ts = append(ts, ts[r.IntN(len(ts))])
		}
		r.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		if len(ts) > 1 && r.IntN(4) == 0 {
			half := len(ts) / 2
			scrambled = append(scrambled, Member{ID: m.ID, Tasks: ts[:half]}, Member{ID: m.ID, Connectors: c, Tasks: ts[half:]})
			continue
		}
		scrambled = append(scrambled, Member{ID: m.ID, Connectors: c, Tasks: ts})
	}
	r.Shuffle(len(scrambled), func(i, j int) { scrambled[i], scrambled[j] = scrambled[j], scrambled[i] })
	w := Work{Connectors: slices.Clone(work.Connectors), Tasks: slices.Clone(work.Tasks)}
	if len(w.Tasks) > 0 {
		w.Tasks = append(w.Tasks, w.Tasks[0])
	}
	r.Shuffle(len(w.Connectors), func(i, j int) { w.Connectors[i], w.Connectors[j] = w.Connectors[j], w.Connectors[i] })
	r.Shuffle(len(w.Tasks), func(i, j int) { w.Tasks[i], w.Tasks[j] = w.Tasks[j], w.Tasks[i] })

	again := Assign(scrambled, w)
	if !reflect.DeepEqual(again, plans) || NeedsFollowUp(again) != NeedsFollowUp(plans) {
		for id, p := range plans {
			if !reflect.DeepEqual(again[id], p) {
				return fmt.Errorf("not deterministic: %s gets %+v, then %+v for the same input in another order", id, p, again[id])
			}
		}
		return fmt.Errorf("not deterministic: %d plans, then %d", len(plans), len(again))
	}
	return nil
}
