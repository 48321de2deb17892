// Package actors is what runs inside one worker: a worker actor that applies
// assignments, one supervisor actor per connector with local work, a connector
// actor that runs the Connector instance, and one task actor per task. Task
// actors own the source and sink pipelines, which run on goroutines of their
// own (invariant 8) and report back as messages.
//
// Failures travel the actor way: a pipeline reports its error, the task actor
// fails with it, and its connector supervisor restarts it after a capped
// exponential backoff, reporting FAILED (with the trace) while it waits,
// RESTARTING when it restarts and RUNNING once the task is open again
// (invariant 5). A panic in connector code is such a failure, never a crash.
//
// protoactor-go types stay inside this package, internal/cluster/actorcluster
// and internal/admin's client: nothing else sees a PID, so the actor library
// could be replaced (docs/adr/0002).
package actors
