// Package bench holds Sluice's benchmarks; the code lives in its _test.go
// files and runs with `just bench` (see README.md in this directory).
//
//   - BenchmarkThroughput runs Datagen through the actor runtime and the raw
//     franz-go producer, writing the same bytes to the same embedded broker,
//     alternately in one process, and reports Sluice's records/s as a ratio
//     of the raw producer's: the cost of the source pipeline (poll, convert,
//     offset tracking, offset flushes) over the limit set by the client.
//   - BenchmarkIdleTaskMemory measures the heap, stack and goroutines one
//     idle source task adds to a worker.
//   - BenchmarkIdleWorker reads a real worker process's CPU and RSS from
//     /proc with 100 and 500 idle FileStreamSource connectors.
//   - BenchmarkSinkThroughput runs FileStreamSink and a raw franz-go
//     consumer writing the same file from the same topic, alternately.
//   - BenchmarkPostgresSource and BenchmarkPostgresSink compare the JDBC
//     connectors with plain pgx doing the same work in the same run.
//   - BenchmarkFailover kills workers of a real three-worker cluster with
//     SIGKILL and times until their tasks run elsewhere, and until a
//     restarted worker has its share back.
//
// The smoke tests run each code path once with tiny sizes, so `go test ./...`
// keeps them working.
package bench
