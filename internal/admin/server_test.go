package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/sluice-io/sluice/internal/admin"
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
	s := &admin.Server{C: env.C, WorkerID: "w1", Leader: func() bool { return true }}
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

// A follower answers reads itself and forwards writes to the leader, once:
// a forwarded write that reaches a follower gets 409, not another hop.
func TestFollowerForwardsWritesOnce(t *testing.T) {
	env := controltest.NewEnv(t)
	leader := &admin.Server{C: env.C, WorkerID: "w1", Leader: func() bool { return true }}
	var forwarded []*controlpb.AdminRequest
	follower := &admin.Server{C: env.C, WorkerID: "w2", Leader: func() bool { return false },
		Forward: func(ctx context.Context, req *controlpb.AdminRequest) (*controlpb.AdminResponse, error) {
			forwarded = append(forwarded, req)
			return leader.Handle(ctx, req), nil
		}}
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
	if res := follower.Handle(ctx, again); res.GetCode() != http.StatusConflict {
		t.Fatalf("forwarded write on a follower: %d, want 409", res.GetCode())
	}
	// A cluster-wide log level is a config topic write too, in any case.
	setLevel := &controlpb.AdminRequest{Op: &controlpb.AdminRequest_SetLogger{SetLogger: &controlpb.SetLogger{Name: "sluice", Level: "DEBUG", Scope: "Cluster"}}}
	follower.Handle(ctx, setLevel)
	if len(forwarded) != 2 {
		t.Fatalf("scope=Cluster log level was not forwarded to the leader")
	}
	noLeader := &admin.Server{C: env.C, WorkerID: "w2", Leader: func() bool { return false }}
	if res := noLeader.Handle(ctx, create("e")); res.GetCode() != http.StatusConflict {
		t.Fatalf("write with no leader to forward to: %d, want 409", res.GetCode())
	}
}
