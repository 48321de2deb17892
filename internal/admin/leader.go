package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sluice-io/sluice/internal/basicauth"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/controlpb"
)

// Leader is the group leader's control plane as a follower reaches it: each
// write becomes an AdminRequest to the leader's admin actor, marked as
// forwarded, and its answer (REST's code and JSON) becomes the typed
// result again. A follower's control.Router sends writes here.
type Leader struct {
	// Ask sends a request to the leader's admin actor.
	Ask func(ctx context.Context, req *controlpb.AdminRequest) (*controlpb.AdminResponse, error)
	// From is this worker's id; the leader never forwards what it marks.
	From string
}

var _ control.LeaderWrites = Leader{}

// do sends op and decodes a 2xx answer's JSON into out (nil: no body).
func (l Leader) do(ctx context.Context, req *controlpb.AdminRequest, out any) (int, error) {
	req.ForwardedBy = l.From
	// The user this worker authenticated, if any, goes along; the
	// credentials themselves stay here.
	req.Principal = basicauth.Principal(ctx)
	res, err := l.Ask(ctx, req)
	if err != nil {
		// Delivered or not, the outcome is unknown: the client tries
		// again, as after Connect's 409 during a rebalance.
		return 0, &control.Error{Code: http.StatusConflict, Message: Conflict + ": the leader did not answer: " + err.Error()}
	}
	if sb, ok := ctx.Value(servedByKey{}).(*servedBy); ok && res.GetServedBy() != "" {
		sb.id = res.GetServedBy()
	}
	code := int(res.GetCode())
	switch {
	case code == http.StatusMisdirectedRequest:
		return code, control.ErrNotLeader
	case code/100 != 2:
		msg := res.GetMessage()
		if msg == "" {
			msg = fmt.Sprintf("the leader answered %d", code)
		}
		return code, &control.Error{Code: code, Message: msg}
	}
	if out != nil && len(res.GetJson()) > 0 {
		if err := json.Unmarshal(res.GetJson(), out); err != nil {
			return code, fmt.Errorf("the leader's answer: %w", err)
		}
	}
	return code, nil
}

func ref(name string) *controlpb.ConnectorRef { return &controlpb.ConnectorRef{Connector: name} }

func (l Leader) Create(ctx context.Context, name string, config map[string]string, initial control.InitialState) (info control.ConnectorInfo, err error) {
	_, err = l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_CreateConnector{CreateConnector: &controlpb.CreateConnector{
		Name: name, Config: config, InitialState: string(initial)}}}, &info)
	return info, err
}

func (l Leader) PutConfig(ctx context.Context, name string, config map[string]string) (info control.ConnectorInfo, created bool, err error) {
	code, err := l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_PutConfig{PutConfig: &controlpb.PutConfig{
		Connector: name, Config: config}}}, &info)
	return info, code == http.StatusCreated, err
}

func (l Leader) PatchConfig(ctx context.Context, name string, patch map[string]*string) (info control.ConnectorInfo, err error) {
	m := &controlpb.PatchConfig{Connector: name, Set: map[string]string{}}
	for k, v := range patch {
		if v == nil {
			m.Remove = append(m.Remove, k)
		} else {
			m.Set[k] = *v
		}
	}
	_, err = l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_PatchConfig{PatchConfig: m}}, &info)
	return info, err
}

func (l Leader) Delete(ctx context.Context, name string) error {
	_, err := l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_DeleteConnector{DeleteConnector: ref(name)}}, nil)
	return err
}

func (l Leader) Pause(ctx context.Context, name string) error {
	_, err := l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_Pause{Pause: ref(name)}}, nil)
	return err
}

func (l Leader) Resume(ctx context.Context, name string) error {
	_, err := l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_Resume{Resume: ref(name)}}, nil)
	return err
}

func (l Leader) Stop(ctx context.Context, name string) error {
	_, err := l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_Stop{Stop: ref(name)}}, nil)
	return err
}

func (l Leader) Restart(ctx context.Context, name string, includeTasks, onlyFailed bool) (st control.ConnectorStatus, err error) {
	_, err = l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_Restart{Restart: &controlpb.RestartConnector{
		Connector: name, IncludeTasks: includeTasks, OnlyFailed: onlyFailed}}}, &st)
	return st, err
}

func (l Leader) RestartTask(ctx context.Context, name string, task int) error {
	_, err := l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_RestartTask{RestartTask: &controlpb.TaskRef{
		Connector: name, Task: int32(task)}}}, nil)
	return err
}

func (l Leader) AlterOffsets(ctx context.Context, name string, offs []control.ConnectorOffset) (m control.Message, err error) {
	body, err := json.Marshal(control.ConnectorOffsets{Offsets: offs})
	if err != nil {
		return m, err
	}
	_, err = l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_AlterOffsets{AlterOffsets: &controlpb.AlterOffsets{
		Connector: name, OffsetsJson: body}}}, &m)
	return m, err
}

func (l Leader) ResetOffsets(ctx context.Context, name string) (m control.Message, err error) {
	_, err = l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_ResetOffsets{ResetOffsets: ref(name)}}, &m)
	return m, err
}

func (l Leader) ResetTopics(ctx context.Context, name string) error {
	_, err := l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_ResetTopics{ResetTopics: ref(name)}}, nil)
	return err
}

func (l Leader) SetLogger(ctx context.Context, name, level, scope string) (changed []string, err error) {
	_, err = l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_SetLogger{SetLogger: &controlpb.SetLogger{
		Name: name, Level: level, Scope: scope}}}, &changed)
	return changed, err
}

func (l Leader) PutTaskConfigs(ctx context.Context, name string, tasks []map[string]string) error {
	m := &controlpb.TaskConfigs{Connector: name}
	for _, t := range tasks {
		m.Tasks = append(m.Tasks, &controlpb.TaskConfig{Config: t})
	}
	_, err := l.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_PutTaskConfigs{PutTaskConfigs: m}}, nil)
	return err
}
