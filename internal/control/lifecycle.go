package control

import (
	"context"
	"maps"
	"net/http"

	"github.com/sluice-io/sluice/internal/state"
)

// PatchConfig merges patch into connector name's config, as Connect's PATCH
// /connectors/{c}/config does: a key with a nil value is removed, the
// others are set, and the result is validated in full before it is
// written. 404 when the connector does not exist.
func (c *Controller) PatchConfig(ctx context.Context, name string, patch map[string]*string) (ConnectorInfo, error) {
	var info ConnectorInfo
	err := c.onConnector(ctx, name, func(ctx context.Context, conn *state.Connector) error {
		var err error
		info, err = c.patch(ctx, conn, patch)
		return err
	})
	return info, err
}

// patch merges, validates and writes; the caller holds the write lock.
func (c *Controller) patch(ctx context.Context, conn *state.Connector, patch map[string]*string) (ConnectorInfo, error) {
	name := conn.Name
	merged := maps.Clone(conn.Config)
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range patch {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = *v
		}
	}
	cfg, ev, err := c.checkWrite(name, merged)
	if err != nil {
		return ConnectorInfo{}, err
	}
	return c.reconfigure(ctx, conn, cfg, ev)
}

// Stop stops connector name: its connector and tasks shut down, its task
// configs are emptied, and it stays STOPPED until resumed. Stopping a
// stopped connector is not an error. The target state and the emptied
// task configs are one write, as in Connect's herder, so that when Stop
// answers, the offsets of the connector can be changed at once (they may
// be only while it is STOPPED with no task configs).
func (c *Controller) Stop(ctx context.Context, name string) error {
	return c.onConnector(ctx, name, func(ctx context.Context, _ *state.Connector) error {
		b := new(state.Batch).TargetState(name, state.TargetStopped).TaskConfigs(name, nil)
		if err := c.o.Configs.Write(ctx, b); err != nil {
			return storeError("stopping connector "+name, err)
		}
		return nil
	})
}

// Restart asks the workers to restart connector name and, with
// includeTasks, its tasks; onlyFailed restarts only what is FAILED now.
// The request travels as a restart-connector record of the config topic,
// which every worker reads and carries out for what it runs. The answer
// is the status as Connect's 202 shows it: RESTARTING for everything that
// the request restarts.
func (c *Controller) Restart(ctx context.Context, name string, includeTasks, onlyFailed bool) (ConnectorStatus, error) {
	var st ConnectorStatus
	err := c.onConnector(ctx, name, func(ctx context.Context, _ *state.Connector) error {
		var err error
		if st, err = c.Status(name); err != nil {
			return err
		}
		req := state.RestartRequest{Connector: name, IncludeTasks: includeTasks, OnlyFailed: onlyFailed}
		if err := c.o.Configs.RequestRestart(ctx, req); err != nil {
			return storeError("requesting a restart of connector "+name, err)
		}
		return nil
	})
	if err != nil {
		return ConnectorStatus{}, err
	}
	restarting := string(state.StateRestarting)
	if !onlyFailed || st.Connector.State == string(state.StateFailed) {
		st.Connector.State, st.Connector.Trace = restarting, ""
	}
	if includeTasks {
		for i := range st.Tasks {
			if !onlyFailed || st.Tasks[i].State == string(state.StateFailed) {
				st.Tasks[i].State, st.Tasks[i].Trace = restarting, ""
			}
		}
	}
	return st, nil
}

// RestartTask restarts one task of connector name on the worker that runs
// it. 404 when the connector or the task does not exist, 409 when no
// worker runs the task right now (between assignments).
func (c *Controller) RestartTask(ctx context.Context, name string, task int) error {
	conn, err := c.lookup(name)
	if err != nil {
		return err
	}
	if task < 0 || task >= len(conn.Tasks) {
		return errorf(http.StatusNotFound, "Task %d of connector %s not found: the connector has %d task(s)", task, name, len(conn.Tasks))
	}
	if c.o.RestartTask == nil {
		return errorf(http.StatusNotImplemented, "Task restarts need a worker of a cluster; this control plane has none")
	}
	st, ok := c.o.Statuses.Tasks(name)[task]
	if !ok || st.WorkerID == "" || st.State == state.StateUnassigned || st.State == state.StateDestroyed {
		return notAssigned(name, task)
	}
	runs, err := c.o.RestartTask(ctx, st.WorkerID, name, task)
	if err != nil {
		return errorf(http.StatusConflict, "Could not reach worker %s to restart task %d of connector %s: %v; try again", st.WorkerID, task, name, err)
	}
	if !runs {
		return notAssigned(name, task)
	}
	return nil
}

func notAssigned(name string, task int) *Error {
	return errorf(http.StatusConflict, "Task %d of connector %s is not running on any worker right now (a rebalance may be in progress); try again shortly", task, name)
}
