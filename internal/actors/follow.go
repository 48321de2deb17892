package actors

import (
	"context"

	"github.com/sluice-io/sluice/internal/state"
)

// ConfigSource is the config topic as a worker follows it (*state.ConfigLog).
type ConfigSource interface {
	Snapshot() state.Snapshot
	Changes() <-chan struct{}
	Restarts() <-chan state.RestartRequest
}

// FollowAlone runs every connector and task of the config topic on this
// worker, the assignment of a cluster of one, applying each change until ctx
// ends, and carries out restart-connector requests as they arrive.
func (r *Runtime) FollowAlone(ctx context.Context, src ConfigSource, generation int64) {
	var prev *Assignment
	changes, restarts := src.Changes(), src.Restarts()
	for {
		a := WholeAssignment(src.Snapshot(), generation, prev)
		r.Apply(a)
		prev = a
		if !r.nextChange(ctx, changes, restarts) {
			return
		}
	}
}

// nextChange waits for a config change, restarting what is asked meanwhile.
// It returns false when ctx ended or the source closed.
func (r *Runtime) nextChange(ctx context.Context, changes <-chan struct{}, restarts <-chan state.RestartRequest) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-changes:
			return true
		case req, ok := <-restarts:
			if !ok {
				return false
			}
			r.Restart(req.Connector, req.IncludeTasks, req.OnlyFailed)
		}
	}
}
