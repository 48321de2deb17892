package actorcluster

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/cluster/gossip"
	"github.com/sluice-io/sluice/internal/controlpb"
)

func node(t *testing.T, id string, join ...string) (*Node, *gossip.Gossip) {
	t.Helper()
	return nodeLogging(t, id, zerolog.Nop(), join...)
}

// nodeLogging starts a node as node does, whose actor cluster logs to log.
func nodeLogging(t *testing.T, id string, log zerolog.Logger, join ...string) (*Node, *gossip.Gossip) {
	t.Helper()
	g, err := gossip.Start(gossip.Config{Cluster: "ac", Meta: gossip.Meta{WorkerID: id}, Bind: "127.0.0.1:0", Join: join, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Leave)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown) // after n.Shutdown, which leaves the system to its owner
	n, err := Start(Config{System: sys, Cluster: "ac", Host: "127.0.0.1", Gossip: g, Log: log,
		Info: func() *controlpb.WorkerInfo {
			return &controlpb.WorkerInfo{WorkerId: id, Tasks: []*controlpb.TaskRef{{Connector: "c", Task: int32(len(id))}}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Shutdown)
	return n, g
}

// A node finds itself through the gossip-fed provider and its admin actor
// answers a protobuf request over protoactor remote. Workers answering each
// other is tested with real processes (test/cluster_test.go): protoactor
// remote sets a process-wide gRPC logger at start, so two remotes in one
// test process race on it.
func TestAdminActorAnswersThroughTheCluster(t *testing.T) {
	a, _ := node(t, "a")
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		infos, errs := a.Workers(ctx)
		cancel()
		if len(infos) == 1 && len(errs) == 0 && infos[0].WorkerId == "a" && infos[0].Tasks[0].Task == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers seen: %v, errors %v", infos, errs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
