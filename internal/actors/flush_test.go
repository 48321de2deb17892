package actors

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// heldOffsets is an offset store whose writes wait until the test lets
// them through: an offsets topic that is slow to acknowledge.
type heldOffsets struct {
	OffsetStore
	mu      sync.Mutex
	writes  int           // writes started
	done    int           // writes that returned
	release chan struct{} // closed: writes go through
}

func (h *heldOffsets) Write(ctx context.Context, connector string, entries []offsets.PartitionOffset) error {
	h.mu.Lock()
	h.writes++
	h.mu.Unlock()
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := h.OffsetStore.Write(ctx, connector, entries)
	h.mu.Lock()
	h.done++
	h.mu.Unlock()
	return err
}

func (h *heldOffsets) counts() (writes, done int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.writes, h.done
}

// A source task keeps polling while its offsets are being written, as
// Connect's tasks poll while the offset committer writes: a flush that
// waited in the task's loop stalled it for a round trip of the offsets
// topic every offset.flush.interval.ms. The task's Commit still comes only
// after the write returned (invariant 1: it may delete upstream what the
// stored offsets cover), never while a Poll runs, and one write is under
// way at a time.
func TestSourcePollsWhileItsOffsetsAreWritten(t *testing.T) {
	held := &heldOffsets{release: make(chan struct{})}
	e := newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, func(o *Options) {
		held.OffsetStore = o.Offsets
		o.Offsets = held
	})
	h := hooksFor("held")
	h.mu.Lock()
	h.pollGap = 5 * time.Millisecond
	h.mu.Unlock()
	topic := e.topic("held-out")
	e.create("held", map[string]string{"connector.class": "test.TestSource", "tasks.max": "1", "topic": topic})

	testutil.Eventually(t, 20*time.Second, "the first offset write starts", func() error {
		if w, _ := held.counts(); w == 0 {
			return fmt.Errorf("no write yet")
		}
		return nil
	})
	h.mu.Lock()
	polls := h.polls
	h.mu.Unlock()
	testutil.Eventually(t, 20*time.Second, "polls go on while the write waits", func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.polls < polls+20 {
			return fmt.Errorf("%d polls since the write started", h.polls-polls)
		}
		return nil
	})
	// Several flush intervals passed: still the one write, and no Commit.
	if w, d := held.counts(); w != 1 || d != 0 {
		t.Fatalf("%d writes started and %d returned while the first waits, want 1 and 0", w, d)
	}
	h.mu.Lock()
	if h.commits != 0 {
		t.Fatalf("Commit called %d times before any offset was stored", h.commits)
	}
	h.mu.Unlock()
	if got, _ := e.offsets.Offset("held", map[string]any{"task": 0}); got != nil {
		t.Fatalf("offset %v visible before its write returned", got)
	}

	close(held.release)
	testutil.Eventually(t, 20*time.Second, "writes return, Commit follows, offsets are stored", func() error {
		h.mu.Lock()
		commits := h.commits
		h.mu.Unlock()
		if _, d := held.counts(); d < 2 || commits < 2 {
			return fmt.Errorf("%d writes returned, %d commits", d, commits)
		}
		if got, _ := e.offsets.Offset("held", map[string]any{"task": 0}); got == nil {
			return fmt.Errorf("no offset stored")
		}
		return nil
	})
	e.waitTaskState("held", 0, "RUNNING")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.commitInPoll != 0 {
		t.Fatalf("Commit called %d times while a Poll ran", h.commitInPoll)
	}
}
