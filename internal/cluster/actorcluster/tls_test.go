package actorcluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/cluster/gossip"
	"github.com/sluice-io/sluice/internal/testutil"
)

// A worker without cluster TLS that finds one with it in gossip (or the
// other way round) says so: its dials fail without a word otherwise.
func TestWarnsOfAWorkerThatDiffersInClusterTLS(t *testing.T) {
	var log testutil.LogBuffer
	_, g := nodeLogging(t, "plain", zerolog.New(&log))

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
