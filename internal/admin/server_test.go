package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/admin"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/controlpb"
)

func create(name string) *controlpb.AdminRequest {
	return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_CreateConnector{CreateConnector: &controlpb.CreateConnector{
		Name: name, Config: controltest.SourceConfig()}}}
}

func get(name string) *controlpb.AdminRequest {
	return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_GetConnector{GetConnector: &controlpb.ConnectorRef{Connector: name}}}
}

// The leader carries a write out; answers carry REST's codes and bodies.
func TestLeaderServesWithRESTCodesAndShapes(t *testing.T) {
	env := controltest.NewEnv(t)
	s := &admin.Server{C: env.C, WorkerID: "w1"}
	ctx := t.Context()
	res := s.Handle(ctx, create("c"))
	var info map[string]any
	if res.GetCode() != http.StatusCreated || json.Unmarshal(res.GetJson(), &info) != nil || info["name"] != "c" || info["type"] != "source" {
		t.Fatalf("create: %d %s", res.GetCode(), res.GetJson())
	}
	if res := s.Handle(ctx, create("c")); res.GetCode() != http.StatusConflict || res.GetMessage() == "" {
		t.Fatalf("duplicate create: %d %q, want 409 with a message", res.GetCode(), res.GetMessage())
	}
	if res := s.Handle(ctx, get("nope")); res.GetCode() != http.StatusNotFound {
		t.Fatalf("unknown connector: %d, want 404", res.GetCode())
	}
	var errBody map[string]any
	res = s.Handle(ctx, get("nope"))
	if json.Unmarshal(res.GetJson(), &errBody) != nil || errBody["error_code"] != float64(404) {
		t.Fatalf("error body %s, want REST's {error_code, message}", res.GetJson())
	}
	pause := &controlpb.AdminRequest{Op: &controlpb.AdminRequest_Pause{Pause: &controlpb.ConnectorRef{Connector: "c"}}}
	if res := s.Handle(ctx, pause); res.GetCode() != http.StatusAccepted || len(res.GetJson()) != 0 {
		t.Fatalf("pause: %d %s, want 202 without a body", res.GetCode(), res.GetJson())
	}
	if res := s.Handle(ctx, &controlpb.AdminRequest{}); res.GetCode() != http.StatusBadRequest {
		t.Fatalf("empty request: %d, want 400", res.GetCode())
	}
	bad := &controlpb.AdminRequest{Op: &controlpb.AdminRequest_AlterOffsets{AlterOffsets: &controlpb.AlterOffsets{Connector: "c", OffsetsJson: []byte(`{"offsets":[{"partiton":{}}]}`)}}}
	if res := s.Handle(ctx, bad); res.GetCode() != http.StatusBadRequest {
		t.Fatalf("misspelt offsets entry: %d %s, want 400", res.GetCode(), res.GetMessage())
	}
	if res := s.Handle(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_LocalRestartTask{LocalRestartTask: &controlpb.TaskRef{Connector: "c"}}}); res.GetCode() != http.StatusNotFound {
		t.Fatalf("local restart of a task not here: %d, want 404", res.GetCode())
	}
}

// cluster is a worker's membership as the router sees it: the leader is
// this worker (self) or reached through leader; Sync has nothing to do, as
// both workers of these tests share one config log.
type cluster struct {
	self   bool
	leader control.LeaderWrites
}

func (c cluster) Leader() (bool, control.LeaderWrites) { return c.self, c.leader }
func (c cluster) Sync(context.Context) error           { return nil }

// A follower answers reads itself and sends writes to the leader's admin
// actor, once: a forwarded write that reaches a worker that does not lead
// is refused (421, the forwarding worker asks again), never forwarded
// again. With no leader known, a write waits for one until the request
// timeout, then gets 409.
func TestFollowerForwardsWritesOnce(t *testing.T) {
	env := controltest.NewEnv(t)
	leader := &admin.Server{C: control.NewRouter(env.C, cluster{self: true}, 0), WorkerID: "w1"}
	var forwarded []*controlpb.AdminRequest
	toLeader := admin.Leader{From: "w2", Ask: func(ctx context.Context, req *controlpb.AdminRequest) (*controlpb.AdminResponse, error) {
		forwarded = append(forwarded, req)
		return leader.Handle(ctx, req), nil
	}}
	follower := &admin.Server{C: control.NewRouter(env.C, cluster{leader: toLeader}, 0), WorkerID: "w2"}
	ctx := t.Context()
	if res := follower.Handle(ctx, create("c")); res.GetCode() != http.StatusCreated {
		t.Fatalf("create through a follower: %d %s", res.GetCode(), res.GetMessage())
	}
	if len(forwarded) != 1 || forwarded[0].GetForwardedBy() != "w2" {
		t.Fatalf("forwarded %v, want one request marked as forwarded by w2", forwarded)
	}
	if res := follower.Handle(ctx, get("c")); res.GetCode() != http.StatusOK || len(forwarded) != 1 {
		t.Fatalf("read on a follower: %d, forwarded %d; want it served locally", res.GetCode(), len(forwarded))
	}
	again := create("d")
	again.ForwardedBy = "w3"
	if res := follower.Handle(ctx, again); res.GetCode() != http.StatusMisdirectedRequest || len(forwarded) != 1 {
		t.Fatalf("forwarded write on a follower: %d, forwarded %d; want 421 and no second hop", res.GetCode(), len(forwarded))
	}
	// A cluster-wide log level is a config topic write too, in any case.
	setLevel := &controlpb.AdminRequest{Op: &controlpb.AdminRequest_SetLogger{SetLogger: &controlpb.SetLogger{Name: "sluice", Level: "DEBUG", Scope: "Cluster"}}}
	follower.Handle(ctx, setLevel)
	if len(forwarded) != 2 {
		t.Fatalf("scope=Cluster log level was not forwarded to the leader")
	}
	// Task configs a connector computed on a follower are written by the
	// leader.
	tasks := &controlpb.AdminRequest{Op: &controlpb.AdminRequest_PutTaskConfigs{PutTaskConfigs: &controlpb.TaskConfigs{
		Connector: "c", Tasks: []*controlpb.TaskConfig{{Config: map[string]string{"a": "1"}}, {Config: map[string]string{"a": "2"}}}}}}
	if res := follower.Handle(ctx, tasks); res.GetCode() != http.StatusNoContent || len(forwarded) != 3 {
		t.Fatalf("task configs through a follower: %d %s, forwarded %d", res.GetCode(), res.GetMessage(), len(forwarded))
	}
	if got := env.Configs.Snapshot().Connectors["c"].Tasks; len(got) != 2 || got[1]["a"] != "2" {
		t.Fatalf("task configs after the forwarded write: %v", got)
	}
	noLeader := &admin.Server{C: control.NewRouter(env.C, cluster{}, 300*time.Millisecond), WorkerID: "w2"}
	start := time.Now()
	if res := noLeader.Handle(ctx, create("e")); res.GetCode() != http.StatusConflict || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("write with no leader: %d after %v, want 409 once the request timeout (300ms) is spent", res.GetCode(), time.Since(start))
	}
}

// users accepts one user and password.
type users struct{ user, password string }

func (u users) Authenticate(user, password string) bool {
	return user == u.user && password == u.password
}

// With authentication on, a worker's admin actor refuses a client's
// request without the right credentials (401, as REST) and carries out
// one with them; the follower forwards the authenticated write to a leader
// that requires authentication too, with the user as its principal and no
// credentials, and the leader accepts it.
func TestAdminAuthentication(t *testing.T) {
	env := controltest.NewEnv(t)
	auth := users{"alice", "s3cret"}
	leader := &admin.Server{C: control.NewRouter(env.C, cluster{self: true}, 0), WorkerID: "w1", Auth: auth}
	var forwarded []*controlpb.AdminRequest
	toLeader := admin.Leader{From: "w2", Ask: func(ctx context.Context, req *controlpb.AdminRequest) (*controlpb.AdminResponse, error) {
		forwarded = append(forwarded, req)
		return leader.Handle(ctx, req), nil
	}}
	follower := &admin.Server{C: control.NewRouter(env.C, cluster{leader: toLeader}, 0), WorkerID: "w2", Auth: auth}
	ctx := t.Context()
	for _, creds := range []users{{}, {"alice", "wrong"}, {"bob", "s3cret"}} {
		req := create("c")
		req.User, req.Password = creds.user, creds.password
		res := follower.Handle(ctx, req)
		if res.GetCode() != http.StatusUnauthorized || !strings.Contains(res.GetMessage(), "User cannot access the resource.") ||
			!strings.Contains(res.GetMessage(), "--user") || strings.Contains(res.GetMessage(), "wrong") {
			t.Fatalf("create with %+v: %d %q, want 401 naming --user and not the password", creds, res.GetCode(), res.GetMessage())
		}
		if res := follower.Handle(ctx, func() *controlpb.AdminRequest { r := get("c"); r.User = creds.user; return r }()); res.GetCode() != http.StatusUnauthorized {
			t.Fatalf("read with %+v: %d, want 401", creds, res.GetCode())
		}
	}
	if len(forwarded) != 0 {
		t.Fatalf("an unauthenticated write was forwarded: %v", forwarded)
	}
	req := create("c")
	req.User, req.Password = "alice", "s3cret"
	if res := follower.Handle(ctx, req); res.GetCode() != http.StatusCreated {
		t.Fatalf("authenticated create through a follower: %d %s", res.GetCode(), res.GetMessage())
	}
	if len(forwarded) != 1 || forwarded[0].GetPrincipal() != "alice" || forwarded[0].GetPassword() != "" || forwarded[0].GetUser() != "" {
		t.Fatalf("forwarded %v, want one request with principal alice and no credentials", forwarded)
	}
	// A leader without authentication configured trusts forwarded writes
	// just the same; a client's request to it needs nothing.
	open := &admin.Server{C: env.C, WorkerID: "w3"}
	if res := open.Handle(ctx, get("c")); res.GetCode() != http.StatusOK {
		t.Fatalf("read on a worker without authentication: %d", res.GetCode())
	}
}
