// Package admin is the control plane over the actor system: the server
// side answers controlpb.AdminRequest messages sent to a worker's admin
// actor with what the REST API would answer, and the client side is what
// the `sluice` admin commands use to reach a cluster through --join.
//
// Responses carry the REST API's status code and JSON body, so that the
// CLI's -o json output is exactly what scripts get from Kafka Connect's
// REST API, and both front doors share one implementation of every shape.
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/basicauth"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/controlpb"
)

// Server answers admin requests on one worker.
type Server struct {
	// C is the worker's control plane: its control.Router, which sends
	// writes to the leader. Requests another worker forwarded here as the
	// leader's are marked (control.Forwarded), so they are never
	// forwarded again.
	C control.API
	// WorkerID names this worker in answers.
	WorkerID string
	// Workers answers list_workers with GET /workers' body.
	Workers func(ctx context.Context) (any, error)
	// ClusterView answers cluster_view with GET /ui/state's body (package
	// ui); nil answers 409, as Workers.
	ClusterView func(ctx context.Context) (any, error)
	// RestartLocal restarts a task if it runs on this worker.
	RestartLocal func(connector string, task int) bool
	// Timeout bounds one request; default 120 s, above the control plane's
	// request timeout (90 s), so that a write waiting for a leader is
	// answered by the control plane, not cut off here.
	Timeout time.Duration
	// Auth, when set, checks the user and password of every request a
	// client (the admin CLI) sends, as the REST API checks HTTP basic
	// authentication: the CLI reaches the cluster through the actor
	// system, and would otherwise bypass the REST API's authentication.
	// Requests another worker forwarded are accepted: that worker checked
	// its client, and members of the cluster trust each other.
	Auth basicauth.Checker
	// Log records refused requests (at debug, never with the password) and
	// who a forwarded write came from.
	Log zerolog.Logger
}

// Conflict is Connect's answer while a rebalance leaves the leader unknown.
const Conflict = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"

// Handle answers one request. It blocks on Kafka and other workers, so the
// admin actor calls it off its Receive (invariant 8).
func (s *Server) Handle(ctx context.Context, req *controlpb.AdminRequest) *controlpb.AdminResponse {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 120 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case req.GetForwardedBy() != "":
		ctx = control.Forwarded(ctx)
		if p := req.GetPrincipal(); p != "" {
			ctx = basicauth.WithPrincipal(ctx, p)
		}
		s.Log.Debug().Str("forwarded_by", req.GetForwardedBy()).Str("principal", req.GetPrincipal()).Str("op", opName(req)).
			Msg("admin request forwarded by another worker")
	case s.Auth != nil:
		if !s.Auth.Authenticate(req.GetUser(), req.GetPassword()) {
			s.Log.Debug().Str("user", req.GetUser()).Str("op", opName(req)).Msg("admin request failed authentication")
			res := errorResponse(http.StatusUnauthorized, basicauth.Unauthorized+
				" This worker requires HTTP basic authentication: give the admin command --user and --password-file.")
			res.ServedBy = s.WorkerID
			return res
		}
		ctx = basicauth.WithPrincipal(ctx, req.GetUser())
	}
	served := &servedBy{id: s.WorkerID}
	code, body, err := s.serve(context.WithValue(ctx, servedByKey{}, served), req)
	res := jsonResponse(code, body)
	if err != nil {
		res = errorResponse(control.StatusCode(err), err.Error())
	}
	res.ServedBy = served.id
	return res
}

// servedBy names the worker that carried a request out: this one, or the
// leader a write went to (Leader.do records it), so that the answer says
// so (`sluice connectors create` shows it).
type servedBy struct{ id string }

type servedByKey struct{}

func errorResponse(code int, msg string) *controlpb.AdminResponse {
	res := jsonResponse(code, map[string]any{"error_code": code, "message": msg})
	res.Message = msg
	return res
}

func jsonResponse(code int, body any) *controlpb.AdminResponse {
	if body == nil {
		return &controlpb.AdminResponse{Code: int32(code)}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // JDBC URLs keep their '&', as in REST
	if err := enc.Encode(body); err != nil {
		return &controlpb.AdminResponse{Code: http.StatusInternalServerError, Message: "encoding the response: " + err.Error()}
	}
	return &controlpb.AdminResponse{Code: int32(code), Json: bytes.TrimSpace(buf.Bytes())}
}

func badRequest(format string, args ...any) error {
	return &control.Error{Code: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
}

// serve carries a request out on this worker; the status codes are REST's.
func (s *Server) serve(ctx context.Context, req *controlpb.AdminRequest) (int, any, error) {
	c := s.C
	ok := http.StatusOK
	switch op := req.GetOp().(type) {
	case *controlpb.AdminRequest_ListConnectors:
		return s.list(op.ListConnectors)
	case *controlpb.AdminRequest_GetConnector:
		v, err := c.Info(op.GetConnector.GetConnector())
		return ok, v, err
	case *controlpb.AdminRequest_GetConfig:
		v, err := c.Config(op.GetConfig.GetConnector())
		return ok, v, err
	case *controlpb.AdminRequest_GetStatus:
		v, err := c.Status(op.GetStatus.GetConnector())
		return ok, v, err
	case *controlpb.AdminRequest_GetTasks:
		v, err := c.Tasks(op.GetTasks.GetConnector())
		return ok, v, err
	case *controlpb.AdminRequest_GetTaskStatus:
		v, err := c.TaskStatus(op.GetTaskStatus.GetConnector(), int(op.GetTaskStatus.GetTask()))
		return ok, v, err
	case *controlpb.AdminRequest_GetOffsets:
		v, err := c.Offsets(ctx, op.GetOffsets.GetConnector())
		return ok, v, err
	case *controlpb.AdminRequest_ListPlugins:
		return ok, c.Plugins(op.ListPlugins.GetConnectorsOnly()), nil
	case *controlpb.AdminRequest_PluginConfig:
		v, err := c.PluginConfig(op.PluginConfig.GetClass())
		return ok, v, err
	case *controlpb.AdminRequest_Validate:
		v, err := c.Validate(op.Validate.GetClass(), orEmpty(op.Validate.GetConfig()))
		return ok, v, err
	case *controlpb.AdminRequest_GetTopics:
		v, err := c.Topics(op.GetTopics.GetConnector())
		return ok, v, err
	case *controlpb.AdminRequest_ListWorkers:
		if s.Workers == nil {
			return 0, nil, &control.Error{Code: http.StatusConflict, Message: Conflict}
		}
		v, err := s.Workers(ctx)
		return ok, v, err
	case *controlpb.AdminRequest_ClusterView:
		if s.ClusterView == nil {
			return 0, nil, &control.Error{Code: http.StatusConflict, Message: Conflict}
		}
		v, err := s.ClusterView(ctx)
		return ok, v, err
	case *controlpb.AdminRequest_ListLoggers:
		return ok, c.Loggers(), nil
	case *controlpb.AdminRequest_GetLogger:
		v, err := c.Logger(op.GetLogger.GetName())
		return ok, v, err
	case nil:
		return 0, nil, badRequest("empty admin request: no operation set")
	default:
		return s.write(ctx, req)
	}
}

// write carries out the requests that change the cluster (through the
// control plane's Router, which sends them to the leader), and a task
// restart another worker's leader asks of this one.
func (s *Server) write(ctx context.Context, req *controlpb.AdminRequest) (int, any, error) {
	c := s.C
	ok := http.StatusOK
	switch op := req.GetOp().(type) {
	case *controlpb.AdminRequest_CreateConnector:
		m := op.CreateConnector
		v, err := c.Create(ctx, m.GetName(), orEmpty(m.GetConfig()), control.InitialState(m.GetInitialState()))
		return http.StatusCreated, v, err
	case *controlpb.AdminRequest_PutConfig:
		v, created, err := c.PutConfig(ctx, op.PutConfig.GetConnector(), orEmpty(op.PutConfig.GetConfig()))
		if created {
			return http.StatusCreated, v, err
		}
		return ok, v, err
	case *controlpb.AdminRequest_PatchConfig:
		m := op.PatchConfig
		patch := map[string]*string{}
		for k, v := range m.GetSet() {
			patch[k] = &v
		}
		for _, k := range m.GetRemove() {
			patch[k] = nil
		}
		v, err := c.PatchConfig(ctx, m.GetConnector(), patch)
		return ok, v, err
	case *controlpb.AdminRequest_DeleteConnector:
		return http.StatusNoContent, nil, c.Delete(ctx, op.DeleteConnector.GetConnector())
	case *controlpb.AdminRequest_Pause:
		return http.StatusAccepted, nil, c.Pause(ctx, op.Pause.GetConnector())
	case *controlpb.AdminRequest_Resume:
		return http.StatusAccepted, nil, c.Resume(ctx, op.Resume.GetConnector())
	case *controlpb.AdminRequest_Stop:
		return http.StatusNoContent, nil, c.Stop(ctx, op.Stop.GetConnector())
	case *controlpb.AdminRequest_Restart:
		m := op.Restart
		st, err := c.Restart(ctx, m.GetConnector(), m.GetIncludeTasks(), m.GetOnlyFailed())
		if !m.GetIncludeTasks() && !m.GetOnlyFailed() {
			return http.StatusNoContent, nil, err
		}
		return http.StatusAccepted, st, err
	case *controlpb.AdminRequest_RestartTask:
		return http.StatusNoContent, nil, c.RestartTask(ctx, op.RestartTask.GetConnector(), int(op.RestartTask.GetTask()))
	case *controlpb.AdminRequest_LocalRestartTask:
		m := op.LocalRestartTask
		if s.RestartLocal == nil || !s.RestartLocal(m.GetConnector(), int(m.GetTask())) {
			return 0, nil, &control.Error{Code: http.StatusNotFound,
				Message: fmt.Sprintf("Task %d of connector %s does not run on worker %s", m.GetTask(), m.GetConnector(), s.WorkerID)}
		}
		return http.StatusNoContent, nil, nil
	case *controlpb.AdminRequest_AlterOffsets:
		offs, err := control.ParseOffsets(op.AlterOffsets.GetOffsetsJson())
		if err != nil {
			return 0, nil, badRequest("%v", err)
		}
		v, err := c.AlterOffsets(ctx, op.AlterOffsets.GetConnector(), offs)
		return ok, v, err
	case *controlpb.AdminRequest_ResetOffsets:
		v, err := c.ResetOffsets(ctx, op.ResetOffsets.GetConnector())
		return ok, v, err
	case *controlpb.AdminRequest_ResetTopics:
		return http.StatusAccepted, nil, c.ResetTopics(ctx, op.ResetTopics.GetConnector())
	case *controlpb.AdminRequest_PutTaskConfigs:
		m := op.PutTaskConfigs
		tasks := make([]map[string]string, len(m.GetTasks()))
		for i, t := range m.GetTasks() {
			tasks[i] = orEmpty(t.GetConfig())
		}
		return http.StatusNoContent, nil, s.C.PutTaskConfigs(ctx, m.GetConnector(), tasks)
	case *controlpb.AdminRequest_SetLogger:
		m := op.SetLogger
		changed, err := c.SetLogger(ctx, m.GetName(), m.GetLevel(), m.GetScope())
		if scope, _ := control.ParseLoggerScope(m.GetScope()); scope == control.ScopeCluster {
			return http.StatusNoContent, nil, err
		}
		return ok, changed, err
	default:
		return 0, nil, badRequest("unknown admin operation %T: this worker may be older than the client", op)
	}
}

// list answers GET /connectors with its expansions.
func (s *Server) list(m *controlpb.ListConnectors) (int, any, error) {
	names, err := s.C.Connectors()
	if err != nil || (!m.GetExpandStatus() && !m.GetExpandInfo()) {
		return http.StatusOK, names, err
	}
	out := make(map[string]map[string]any, len(names))
	for _, n := range names {
		entry := map[string]any{}
		if m.GetExpandStatus() {
			st, err := s.C.Status(n)
			if control.StatusCode(err) == http.StatusNotFound {
				continue // deleted meanwhile, as REST leaves it out
			}
			if err != nil {
				return 0, nil, err
			}
			entry["status"] = st
		}
		if m.GetExpandInfo() {
			info, err := s.C.Info(n)
			if control.StatusCode(err) == http.StatusNotFound {
				continue
			}
			if err != nil {
				return 0, nil, err
			}
			entry["info"] = info
		}
		out[n] = entry
	}
	return http.StatusOK, out, nil
}

// opName names a request's operation for the log.
func opName(req *controlpb.AdminRequest) string {
	return fmt.Sprintf("%T", req.GetOp())
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// ErrNoWorker is returned by the client when no worker could be reached.
var ErrNoWorker = errors.New("no worker reachable")
