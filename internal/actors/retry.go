package actors

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
)

// retryCall calls fn until it succeeds, fails with an error not marked
// connectors.Retriable, or ctx ends. Retriable errors back off from 100 ms
// to max; they are logged, since a sink that retries forever looks stuck.
func retryCall(ctx context.Context, log zerolog.Logger, what string, max time.Duration, fn func() error) error {
	delay := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil || !connectors.IsRetriable(err) {
			return err
		}
		log.Warn().Err(err).Dur("retry_in", delay).Msgf("%s failed with a retriable error", what)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		if delay *= 2; delay > max {
			delay = max
		}
	}
}
