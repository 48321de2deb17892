package actorcluster

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/cluster/gossip"
	"github.com/sluice-io/sluice/internal/controlpb"
	"github.com/sluice-io/sluice/internal/testutil"
)

// A worker without cluster TLS that finds one with it in gossip (or the
// other way round) says so: its dials fail without a word otherwise.
func TestWarnsOfAWorkerThatDiffersInClusterTLS(t *testing.T) {
	var log testutil.LogBuffer
	g, err := gossip.Start(gossip.Config{Cluster: "ac", Meta: gossip.Meta{WorkerID: "plain"}, Bind: "127.0.0.1:0", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Leave)
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(sys.Shutdown)
	n, err := Start(Config{System: sys, Cluster: "ac", Host: "127.0.0.1", Gossip: g, Log: zerolog.New(&log),
		Info: func() *controlpb.WorkerInfo { return &controlpb.WorkerInfo{WorkerId: "plain"} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Shutdown)

	// A member with cluster TLS, as far as gossip tells: its remote is
	// not needed for the warning.
	secured, err := gossip.Start(gossip.Config{Cluster: "ac", Meta: gossip.Meta{WorkerID: "secured", ActorTLS: true},
		Bind: "127.0.0.1:0", Join: []string{g.Addr()}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(secured.Leave)
	if err := secured.SetActor("secured-id", "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the warning about the secured worker", func() error {
		if !strings.Contains(log.String(), `"peer":"secured","peer_cluster_tls":true,"cluster_tls":false`) {
			return errors.New("not logged yet")
		}
		return nil
	})
}
