package offsets

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A coordinator that is not ready yet (a fresh Apache Kafka loading
// __consumer_offsets) is waited out; other errors return at once.
func TestWhileCoordinatorMoves(t *testing.T) {
	calls := 0
	err := whileCoordinatorMoves(context.Background(), func() error {
		calls++
		switch calls {
		case 1:
			return kerr.CoordinatorNotAvailable
		case 2:
			return kerr.CoordinatorLoadInProgress
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want success on the third", err, calls)
	}
	calls = 0
	boom := errors.New("boom")
	if err := whileCoordinatorMoves(context.Background(), func() error { calls++; return boom }); err != boom || calls != 1 {
		t.Fatalf("other error: %v after %d calls, want it at once", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = whileCoordinatorMoves(ctx, func() error { return kerr.NotCoordinator })
	if !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("past the deadline: %v, want the last error", err)
	}
}
