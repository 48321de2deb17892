package actors

import (
	"runtime"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// An actor system without actors costs well under a megabyte: with
// protoactor's process registry at 32 shards a bucket it allocated 2.9 MB
// (126 KB with one).
func TestActorSystemRegistryIsSmall(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sys := actor.NewActorSystem()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(sys)
	t.Logf("NewActorSystem allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Fatalf("NewActorSystem allocated %d bytes, want under 1 MiB (the registry's shards)", d)
	}
}
