package test

import (
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/testutil"
)

func gossipKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func workerIDs(out workersList) []string {
	ids := []string{}
	for _, w := range out.Workers {
		ids = append(ids, w.WorkerID)
	}
	slices.Sort(ids)
	return ids
}

// neverLists watches GET /workers on rest for a while and fails if it ever
// lists stranger, or stops listing want.
func neverLists(t *testing.T, rest, stranger string, want []string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		code, body := mustSend(t, "GET", "http://"+rest+"/workers", "")
		var out workersList
		jsonOf(t, string(body), &out)
		if code != 200 || !slices.Equal(workerIDs(out), want) {
			t.Fatalf("GET /workers on %s: %d %s; want exactly %v, never %s", rest, code, body, want, stranger)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitLog waits for a worker's log to say what.
func waitLog(t *testing.T, w *workerProc, what string) {
	t.Helper()
	waitFor(t, w.FailIfExited, stateDeadline, 200*time.Millisecond, w.id+" logs "+what, func() (bool, string) {
		return strings.Contains(w.StderrText(), what), "not yet"
	})
}

// Workers with the same gossip key form a cluster, also one that lists a
// second key to rotate to (given as the worker key sluice.gossip.key);
// a worker with another key never appears in GET /workers, and both sides
// say why in their logs. The admin commands need the key too, and say so
// without it.
func TestClusterSecurityGossipKey(t *testing.T) {
	c := startCluster(t, "gossipkey")
	key, next := gossipKey(t), gossipKey(t)
	w1 := c.addWith("w1", []string{"--gossip-key", key})
	c.addWith("w2", []string{"--prop", "sluice.gossip.key=" + key + "," + next}, w1.bind)
	pollWorkers(t, w1.rest, "w1 and w2", func(out workersList, _ []byte) bool {
		return slices.Equal(workerIDs(out), []string{"w1", "w2"}) && len(out.Unreachable) == 0
	})

	w3 := c.addWith("w3", []string{"--gossip-key", gossipKey(t)}, w1.bind)
	waitLog(t, w1, "does not use this worker's gossip key")
	waitLog(t, w3, "gossip key")
	neverLists(t, w1.rest, "w3", []string{"w1", "w2"}, 5*time.Second)

	adminNeeds(t, admin{t: t, join: w1.bind, cluster: c.name}, []string{"--gossip-key", key}, "--gossip-key")
	for _, w := range []*workerProc{w1, w3} {
		if strings.Contains(w.StderrText(), key) {
			t.Fatalf("%s's log shows the gossip key", w.id)
		}
	}
}

// Workers whose certificates one CA signed talk over mutual TLS; a worker
// with a certificate of another CA is refused by them (it is in gossip, so
// GET /workers lists it unreachable, never as a worker), and the refusal
// is in the log. The admin commands work with the cluster's TLS files and
// say which flags they lack without them.
func TestClusterSecurityMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := testutil.NewCA(t, dir, "cluster"), testutil.NewCA(t, dir, "other")
	tlsFlags := func(ca *testutil.CA, name string) []string {
		cert, key := ca.Issue(t, dir, name)
		return []string{"--cluster-tls-cert", cert, "--cluster-tls-key", key, "--cluster-tls-ca", ca.File}
	}
	c := startCluster(t, "mtls")
	w1 := c.addWith("w1", tlsFlags(ca, "w1"))
	c.addWith("w2", tlsFlags(ca, "w2"), w1.bind)
	pollWorkers(t, w1.rest, "w1 and w2", func(out workersList, _ []byte) bool {
		return slices.Equal(workerIDs(out), []string{"w1", "w2"}) && len(out.Unreachable) == 0
	})

	w3 := c.addWith("w3", tlsFlags(other, "w3"), w1.bind)
	pollWorkers(t, w1.rest, "w3 unreachable, w1 and w2 listed", func(out workersList, _ []byte) bool {
		return slices.Equal(workerIDs(out), []string{"w1", "w2"}) && len(out.Unreachable) == 1
	})
	waitLog(t, w1, "cluster TLS:")
	waitLog(t, w3, "cluster TLS:")

	adminNeeds(t, admin{t: t, join: w1.bind, cluster: c.name}, tlsFlags(ca, "cli"), "--cluster-tls-cert")
}

// adminNeeds requires `sluice workers` with the security flags to list w1
// and w2, and without them to exit 3 with an error naming missingFlag.
func adminNeeds(t *testing.T, a admin, flags []string, missingFlag string) {
	t.Helper()
	out := a.must(append([]string{"workers", "-o", "json"}, flags...)...)
	var listed workersList
	jsonOf(t, out, &listed)
	if got := workerIDs(listed); !slices.Equal(got, []string{"w1", "w2"}) {
		t.Fatalf("sluice workers lists %v, want w1 and w2", got)
	}
	code, _, stderr := a.run("workers")
	if code != 3 || !strings.Contains(stderr, missingFlag) {
		t.Fatalf("sluice workers without %s: exit %d, stderr %s; want exit 3 naming it", missingFlag, code, stderr)
	}
}
