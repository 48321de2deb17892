package bench

import "flag"

// The sizes of the benchmarks, set after -args (README.md lists them):
// go test -run '^$' -bench Throughput ./bench/ -args -bench.records=1000000
var (
	// BenchmarkThroughput
	flagRecords   = flag.Int("bench.records", 4000000, "records per throughput run, split evenly over the tasks")
	flagTasks     = flag.Int("bench.tasks", 4, "Datagen tasks.max (and raw producer goroutines) in the throughput benchmark")
	flagValueSize = flag.Int("bench.value-size", 100, "Datagen value.size (padding bytes) in the throughput benchmark")

	// BenchmarkIdleTaskMemory
	flagIdleTasks = flag.String("bench.idle-tasks", "100,1000", "comma-separated task counts of the idle-task memory benchmark")

	// BenchmarkPostgresSource
	flagPgRows  = flag.Int("bench.pg-rows", 200000, "rows of the table the PostgreSQL source benchmark copies")
	flagPgBatch = flag.Int("bench.pg-batch", 1000, "batch.max.rows of the PostgreSQL source benchmark (and the raw reader's LIMIT)")

	// BenchmarkPostgresSink
	flagPgSinkRows       = flag.Int("bench.pg-sink-rows", 200000, "records in the topic the PostgreSQL sink benchmark writes to a table")
	flagPgSinkTasks      = flag.Int("bench.pg-sink-tasks", 2, "tasks.max of the PostgreSQL sink benchmark (and partitions of its topic, and raw writer goroutines)")
	flagPgSinkValueSize  = flag.Int("bench.pg-sink-value-size", 100, "bytes of the text column of each row in the PostgreSQL sink benchmark")
	flagPgSinkInsertMode = flag.String("bench.pg-sink-mode", "insert", "insert.mode of the PostgreSQL sink benchmark: insert or upsert (the raw writer does the same)")

	// BenchmarkFailover
	flagKills = flag.Int("bench.kills", 5, "SIGKILLs (each followed by a restart) per run of the failover benchmark")
)
