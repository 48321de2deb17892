package clustertls

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/sluice-io/sluice/internal/controlpb"
	"github.com/sluice-io/sluice/internal/testutil"
)

// The two remotes of TestRemoteTrafficCarriesNoPlaintextNames run in
// child processes: protoactor's remote sets gRPC's process-wide logger at
// start, so two remotes in one process, even one after the other, are a
// data race.
const peerEnv = "SLUICE_CLUSTERTLS_TEST_PEER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(peerEnv); mode != "" {
		os.Exit(runPeer(mode))
	}
	os.Exit(m.Run())
}

// runPeer starts a remote listening at $..._LISTEN and advertising
// $..._ADVERTISE, with cluster TLS if $..._CERT is set. As "echo" it
// answers a CreateConnector request with the connector's name until its
// standard input closes; as "ask" it sends one, to the echo actor at
// $..._TARGET, and prints the answer.
func runPeer(mode string) int {
	env := func(k string) string { return os.Getenv(peerEnv + "_" + k) }
	var tlsc *Config
	if cert := env("CERT"); cert != "" {
		var err error
		if tlsc, err = Load(Files{Cert: cert, Key: env("KEY"), CA: env("CA")}, Files{Cert: "cert", Key: "key", CA: "ca"}); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	host, port, _ := net.SplitHostPort(env("LISTEN"))
	portNum, _ := strconv.Atoi(port)
	opts := append(RemoteOptions(tlsc, nil), remote.WithAdvertisedHost(env("ADVERTISE")))
	remote.NewRemote(sys, remote.Configure(host, portNum, opts...)).Start()
	if mode == "ask" {
		req := &controlpb.AdminRequest{Op: &controlpb.AdminRequest_CreateConnector{CreateConnector: &controlpb.CreateConnector{Name: env("NAME")}}}
		res, err := sys.Root.RequestFuture(actor.NewPID(env("TARGET"), "echo"), req, 20*time.Second).Result()
		if err != nil {
			fmt.Println(err)
			return 1
		}
		ar, _ := res.(*controlpb.AdminResponse)
		fmt.Println(string(ar.GetJson()))
		return 0
	}
	_, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if req, ok := c.Message().(*controlpb.AdminRequest); ok {
			c.Respond(&controlpb.AdminResponse{Code: 201, Json: []byte(`{"name":"` + req.GetCreateConnector().GetName() + `"}`)})
		}
	}), "echo")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// A connector's name sent between two remotes configured as the workers
// configure them, through recording relays on loopback: in plaintext gRPC
// the capture shows it (the control: the capture sees the traffic); over
// cluster TLS it shows it nowhere, neither in the request nor in the
// answer. Each remote advertises its relay, so all traffic passes them.
func TestRemoteTrafficCarriesNoPlaintextNames(t *testing.T) {
	const name = "zq-connector-9f3"
	dir := t.TempDir()
	ca := testutil.NewCA(t, dir, "cluster")
	aCert, aKey := ca.Issue(t, dir, "a")
	bCert, bKey := ca.Issue(t, dir, "b")

	exchange := func(secure bool) []byte {
		relayA, relayB := testutil.StartRelay(t), testutil.StartRelay(t)
		listenA, listenB := testutil.ClosedAddr(t), testutil.ClosedAddr(t)
		relayA.SetTarget(listenA)
		relayB.SetTarget(listenB)
		peer := func(mode, listen, advertise, cert, key string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), peerEnv+"="+mode, peerEnv+"_LISTEN="+listen, peerEnv+"_ADVERTISE="+advertise,
				peerEnv+"_TARGET="+relayA.Addr(), peerEnv+"_NAME="+name)
			if secure {
				cmd.Env = append(cmd.Env, peerEnv+"_CERT="+cert, peerEnv+"_KEY="+key, peerEnv+"_CA="+ca.File)
			}
			return cmd
		}
		echo := peer("echo", listenA, relayA.Addr(), aCert, aKey)
		stdin, err := echo.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := echo.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := echo.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			stdin.Close()
			_ = echo.Wait()
		}()
		if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
			t.Fatalf("echo peer: %q %v", line, err)
		}
		out, err := peer("ask", listenB, relayB.Addr(), bCert, bKey).CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte(name)) {
			t.Fatalf("request over the remote: %v: %s", err, out)
		}
		request, answer := relayA.Captured(), relayB.Captured()
		if len(request) == 0 || len(answer) == 0 {
			t.Fatalf("captured %d bytes of the request's way and %d of the answer's: the relays are bypassed", len(request), len(answer))
		}
		return append(request, answer...)
	}

	plain := exchange(false)
	if n := bytes.Count(plain, []byte(name)); n < 2 {
		t.Fatalf("the capture of plaintext gRPC (%d bytes) shows the connector name %d times, want it in the request and the answer: the capture is not seeing the traffic", len(plain), n)
	}
	sealed := exchange(true)
	if bytes.Contains(sealed, []byte(name)) {
		t.Fatal("the connector name crossed the wire in plaintext over cluster TLS")
	}
}
