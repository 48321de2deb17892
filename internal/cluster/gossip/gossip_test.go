package gossip

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func start(t *testing.T, cluster, id string, join ...string) *Gossip {
	t.Helper()
	g, err := Start(Config{Cluster: cluster, Meta: Meta{WorkerID: id, URL: "http://" + id}, Bind: "127.0.0.1:0", Join: join, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// startWatching starts worker id of cluster "c" and returns it with the
// ids of the workers it reports gone.
func startWatching(t *testing.T, id string) (*Gossip, <-chan string) {
	t.Helper()
	gone := make(chan string, 4)
	g, err := Start(Config{Cluster: "c", Meta: Meta{WorkerID: id}, Bind: "127.0.0.1:0", Log: zerolog.Nop(),
		OnGone: func(id string) { gone <- id }})
	if err != nil {
		t.Fatal(err)
	}
	return g, gone
}

func waitAlive(t *testing.T, g *Gossip, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(g.Alive()) != want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(g.Alive()); n != want {
		t.Fatalf("%d members alive, want %d: %v", n, want, g.Alive())
	}
}

// A dead worker (no leave, its sockets gone, as after kill -9) is reported
// within about a second.
func TestDeadWorkerIsReportedFast(t *testing.T) {
	a, dead := startWatching(t, "a")
	defer a.Leave()
	b := start(t, "c", "b", a.Addr())
	c := start(t, "c", "c", a.Addr())
	defer c.Leave()
	waitAlive(t, a, 3)

	// Shutdown without Leave: as after kill -9, the others stop hearing it.
	began := time.Now()
	_ = b.ml.Shutdown()
	select {
	case id := <-dead:
		if id != "b" {
			t.Fatalf("reported %s dead, want b", id)
		}
		t.Logf("dead worker reported after %s", time.Since(began).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("dead worker never reported")
	}
}

// Workers of another cluster (another memberlist Label) cannot join.
func TestOtherClusterCannotJoin(t *testing.T) {
	a := start(t, "one", "a")
	defer a.Leave()
	b := start(t, "two", "b", a.Addr())
	defer b.Leave()
	time.Sleep(500 * time.Millisecond)
	if n := len(a.Alive()); n != 1 {
		t.Fatalf("cluster one sees %d members: %v", n, a.Alive())
	}
	if n := len(b.Alive()); n != 1 {
		t.Fatalf("cluster two sees %d members: %v", n, b.Alive())
	}
}

// Each worker advertises the port it really bound, also with port 0.
func TestAdvertisesTheBoundPort(t *testing.T) {
	a := start(t, "c", "a")
	defer a.Leave()
	b := start(t, "c", "b", a.Addr())
	defer b.Leave()
	if a.Addr() == b.Addr() || strings.HasSuffix(a.Addr(), ":7946") {
		t.Fatalf("addresses %s and %s", a.Addr(), b.Addr())
	}
	waitAlive(t, b, 2)
}

// An admin client joins to learn the workers, but workers neither list it
// nor report it gone: its coming and going must not move any work.
func TestClientIsInvisibleToWorkers(t *testing.T) {
	a, gone := startWatching(t, "a")
	defer a.Leave()
	b := start(t, "c", "b", a.Addr())
	defer b.Leave()
	cl, err := Start(Config{Cluster: "c", Meta: Meta{WorkerID: "cli-1", Client: true}, Bind: "127.0.0.1:0", Join: []string{a.Addr()}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	waitAlive(t, cl, 3) // the client sees the workers and itself
	time.Sleep(300 * time.Millisecond)
	if n := len(a.Alive()); n != 2 {
		t.Fatalf("worker lists %d members, want the 2 workers: %v", n, a.Alive())
	}
	cl.Leave()
	kill := func(g *Gossip) { _ = g.ml.Shutdown() }
	cl2, err := Start(Config{Cluster: "c", Meta: Meta{WorkerID: "cli-2", Client: true}, Bind: "127.0.0.1:0", Join: []string{a.Addr()}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	waitAlive(t, cl2, 3)
	kill(cl2) // a client killed mid-command, as by Ctrl-C or kill -9
	select {
	case id := <-gone:
		t.Fatalf("worker reported client %s gone", id)
	case <-time.After(3 * time.Second):
	}
}
