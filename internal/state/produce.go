package state

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceAll produces recs in order and returns once every one is
// acknowledged, or with the first error, or when ctx ends. Records that
// were in flight when ctx ended may still be written.
func produceAll(ctx context.Context, cl *kgo.Client, recs ...*kgo.Record) error {
	type result struct{ err error }
	results := make(chan result, len(recs)) // kgo's callbacks never block
	for _, r := range recs {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) { results <- result{err} })
	}
	var firstErr error
	for range recs {
		select {
		case res := <-results:
			if res.err != nil && firstErr == nil {
				firstErr = res.err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if firstErr != nil {
		return fmt.Errorf("producing: %w", firstErr)
	}
	return nil
}
