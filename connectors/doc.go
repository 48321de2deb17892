// Package connectors is the API that connector authors implement.
//
// A Connector describes its configuration (a ConfigDef), and splits one job into
// at most tasks.max task configurations. Each task config runs as a SourceTask
// (external system -> Kafka) or a SinkTask (Kafka -> external system). The
// runtime (internal/actors) owns everything else: converting records to and
// from bytes, producing and consuming, storing offsets, supervising and
// restarting failed tasks.
//
// The API mirrors Kafka Connect's so that connector configs written for Connect
// work unchanged: records carry Connect-style source partition and offset maps,
// values carry optional Connect schemas, and plugins are found by their Connect
// class names as well as by short names. A source whose offset is one integer
// may give it as SourceRecord.OffsetKey and OffsetInt instead of a map per
// record (docs/adr/0020-integer-source-offsets.md).
//
// Beyond the required methods, a task may implement small optional interfaces,
// each a promise the runtime asks about once and then relies on: a sink task
// PartitionAware (partitions assigned and revoked), PreCommitter (it buffers,
// and says which offsets are safe) and RecordBorrower (it keeps nothing of a
// batch after Write); a source task DeadlineKeeper (its Poll ends by its
// deadline on its own timer), IdleReturner (its Poll returns at once when
// it has nothing, and the runtime naps with no goroutine for it meanwhile:
// docs/adr/0027-idle-tasks-nap-without-a-goroutine.md) and RecordLender (it
// writes over a Poll's records at its next Poll:
// docs/adr/0030-source-tasks-lend-their-records.md). The conformance suite
// (connectors/conformance) calls a task through PartitionAware, PreCommitter,
// DeadlineKeeper, IdleReturner and RecordLender as the runtime does, fails a
// DeadlineKeeper whose Poll outlives its deadline, and fails a RecordLender
// that writes over its records before it is polled again.
//
// Keep this package small and stable: every built-in connector and every
// connector written outside this repository depends on it.
package connectors
