package actors

import "sync/atomic"

// recordsMoved counts the records this process's pipelines took on: each
// source poll's records and each batch of consumed records a sink task
// gets, counted once per batch. cmd/sluice gives it to the collector's
// pacer (internal/gcpace, ADR 0021), which lets the heap grow only while
// records move: a worker that allocates fast while it creates hundreds of
// connectors must not, or their long-lived state would be spread over a
// heap grown for it, and the spans it holds would stay for good.
var recordsMoved atomic.Uint64

// RecordsMoved is the number of records the process's source and sink
// pipelines have taken on since it started.
func RecordsMoved() uint64 { return recordsMoved.Load() }
