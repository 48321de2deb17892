package actors

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/metrics"
)

// Retriable errors (connectors.Retriable) are retried in two ways, as Kafka
// Connect retries a RetriableException (read in Apache Kafka's
// connect/runtime, org.apache.kafka.connect.runtime and its errors package):
//
//   - From the task's own calls, SinkTask.put and SourceTask.poll, the
//     framework retries them whatever the errors.* keys say.
//     WorkerSinkTask.deliverMessages catches it, pauses the consumer and
//     hands the same batch to put again on the next iteration;
//     AbstractWorkerSourceTask.poll catches it, logs "Will retry operation"
//     and polls again. Neither reads errors.retry.timeout nor
//     errors.tolerance: the call is retried until it succeeds or the task
//     stops. retryCall does the same for Write and Poll, with a backoff
//     (Connect has none) capped by errors.retry.delay.max.ms.
//   - From the per-record stages (converters and transformations),
//     RetryWithToleranceOperator.execAndRetry retries it with a backoff of
//     300 ms doubling per attempt, a random delay below
//     errors.retry.delay.max.ms once the doubling passes it, until
//     errors.retry.timeout has passed since the first attempt: 0 (the
//     default) retries not at all, -1 forever. The error it then gives up
//     with goes to errors.tolerance: none fails the task, all skips the
//     record (since KAFKA-18073, apache/kafka#18146; before it the record
//     was skipped even with none). retryStage does this for Sluice's
//     per-record stage, the converters.

// retryCall calls fn until it succeeds, fails with an error not marked
// connectors.Retriable, or ctx ends. Retriable errors back off from 100 ms
// to max; they are logged, since a sink that retries forever looks stuck.
func retryCall(ctx context.Context, log zerolog.Logger, rec *metrics.Task, what string, max time.Duration, fn func() error) error {
	delay := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil || !connectors.IsRetriable(err) {
			return err
		}
		rec.Retry()
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

// stageRetryMin is the first wait of retryStage, Connect's
// RetryWithToleranceOperator.RETRIES_DELAY_MIN_MS.
const stageRetryMin = 300 * time.Millisecond

// retryStage runs op, one per-record stage, retrying a retriable error
// within errors.retry.timeout as RetryWithToleranceOperator does (see
// above). It returns nil, op's first error that is not retriable, or its
// last retriable one once the timeout is spent; the caller hands an error to
// errors.tolerance. When ctx ends during a wait it returns op's last error
// at once: the caller, stopping, must not take it for the stage's verdict.
func retryStage(ctx context.Context, log zerolog.Logger, rec *metrics.Task, what string, keys connconfig.Runtime, op func() error) error {
	err := op()
	if err == nil || !connectors.IsRetriable(err) {
		return err
	}
	return retryStageAfter(ctx, log, rec, what, keys, err, op)
}

// retryStageAfter is retryStage after op's first attempt failed with the
// retriable err: the record path makes that first attempt itself, so that a
// record that converts allocates no closure and reads no clock. The retry
// timeout therefore counts from the end of the first attempt rather than
// its start, which is a conversion's microseconds against the timeout's
// milliseconds (reading the clock per record cost about 5% of the source
// pipeline's CPU).
func retryStageAfter(ctx context.Context, log zerolog.Logger, rec *metrics.Task, what string, keys connconfig.Runtime, err error, op func() error) error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		left := keys.RetryTimeout - time.Since(start)
		if !keys.RetriesForever() && left <= 0 {
			return err
		}
		delay := stageDelay(attempt, keys.RetryDelayMax)
		if !keys.RetriesForever() && delay > left {
			delay = left
		}
		rec.Retry()
		log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", delay).Msgf("%s failed with a retriable error", what)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		if err = op(); err == nil || !connectors.IsRetriable(err) {
			return err
		}
	}
}

// stageDelay is the wait after attempt n (1-based) of retryStage:
// stageRetryMin doubled per attempt while it stays within max, then a random
// delay below max, so that many tasks do not retry in step.
func stageDelay(n int, max time.Duration) time.Duration {
	d := stageRetryMin
	for i := 1; i < n && d <= max; i++ {
		d *= 2
	}
	if d <= max {
		return d
	}
	if max <= 0 {
		return 0
	}
	return rand.N(max)
}
