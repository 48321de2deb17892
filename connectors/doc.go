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
// Keep this package small and stable: every built-in connector and every
// connector written outside this repository depends on it.
package connectors
