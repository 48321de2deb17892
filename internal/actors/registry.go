package actors

import cmap "github.com/orcaman/concurrent-map"

// protoactor's process registry is 1024 buckets, each a concurrent map of
// cmap.SHARD_COUNT (32) shards: 32,768 Go maps, about 3 MB of heap per
// actor system before it holds one actor, which the collector's headroom
// doubles in the worker's RSS (a third of a worker's heap with 500 idle
// connectors, ADR 0017). The 1024 buckets already spread the locks for the
// few thousand actors a worker has, so each bucket is one shard. The
// registry is the library's only user of the package in this process
// (protoactor's cluster PID cache, the other, sizes its own the same way),
// and the value is read when a map is made, so it is set before any actor
// system exists.
func init() { cmap.SHARD_COUNT = 1 }
