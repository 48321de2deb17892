package control

import (
	"context"
	"maps"
	"net/http"
	"slices"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/state"
)

// begin waits for this worker's other writes to finish and bounds the write
// with the write timeout: every external call has a deadline (invariant 8).
func (c *Controller) begin(ctx context.Context) (context.Context, func(), error) {
	if !c.ready() {
		return nil, nil, notReady()
	}
	select {
	case c.writes <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, storeError("waiting for another write to finish", ctx.Err())
	}
	wctx, cancel := context.WithTimeout(ctx, c.o.WriteTimeout)
	return wctx, func() { cancel(); <-c.writes }, nil
}

// onConnector runs write for existing connector name under this worker's
// write lock and deadline (see begin): 404 when there is no such
// connector.
func (c *Controller) onConnector(ctx context.Context, name string, write func(ctx context.Context, conn *state.Connector) error) error {
	wctx, done, err := c.begin(ctx)
	if err != nil {
		return err
	}
	defer done()
	conn, ok := c.exists(name)
	if !ok {
		return notFound(name)
	}
	return write(wctx, conn)
}

func (c *Controller) exists(name string) (*state.Connector, bool) {
	return c.o.Configs.Connector(name)
}

func targetOf(s InitialState) state.TargetState {
	switch s {
	case InitialPaused:
		return state.TargetPaused
	case InitialStopped:
		return state.TargetStopped
	}
	return state.TargetStarted
}

// Create validates config and creates connector name in the initial state.
// It answers 409 when the connector exists and 400, naming every bad key,
// when the config is invalid; then nothing is written.
func (c *Controller) Create(ctx context.Context, name string, config map[string]string, initial InitialState) (ConnectorInfo, error) {
	if !c.ready() {
		return ConnectorInfo{}, notReady()
	}
	st, err := ParseInitialState(string(initial))
	if err != nil {
		return ConnectorInfo{}, err
	}
	cfg, ev, err := c.checkWrite(name, config)
	if err != nil {
		return ConnectorInfo{}, err
	}
	wctx, done, err := c.begin(ctx)
	if err != nil {
		return ConnectorInfo{}, err
	}
	defer done()
	if _, ok := c.exists(name); ok {
		return ConnectorInfo{}, errorf(http.StatusConflict, "Connector %s already exists", name)
	}
	return c.create(wctx, name, cfg, ev, targetOf(st))
}

// create writes the target state, the config and, for a connector that
// starts RUNNING, its first task configs, in that order and as one batch.
// The config record is what makes workers start the connector, and it must
// find its target state already there, or a connector created PAUSED or
// STOPPED would run for a moment. Writing STARTED too overwrites a target
// state left behind by an earlier create whose config write failed. As in
// Connect, a connector created PAUSED gets its first tasks only once it is
// resumed, and a STOPPED one none.
func (c *Controller) create(ctx context.Context, name string, cfg map[string]string, ev *evaluation, target state.TargetState) (ConnectorInfo, error) {
	b := new(state.Batch).TargetState(name, target).ConnectorConfig(name, cfg)
	info := ConnectorInfo{Name: name, Config: cfg, Tasks: []connectors.TaskID{}, Type: string(ev.plugin.Type)}
	if target == state.TargetStarted {
		if tasks := c.split(ctx, ev.plugin, cfg); tasks != nil {
			if err := c.addTaskConfigs(ctx, b, &state.Connector{Name: name, Config: cfg}, tasks); err != nil {
				return ConnectorInfo{}, err
			}
			info.Tasks = taskIDs(name, len(tasks))
		}
	}
	if err := c.o.Configs.Write(ctx, b); err != nil {
		return ConnectorInfo{}, storeError("writing connector "+name, err)
	}
	return info, nil
}

// reconfigure writes a new config for existing connector conn, with the
// task configs it splits into when it runs (see split), as one batch.
func (c *Controller) reconfigure(ctx context.Context, conn *state.Connector, cfg map[string]string, ev *evaluation) (ConnectorInfo, error) {
	name := conn.Name
	b := new(state.Batch).ConnectorConfig(name, cfg)
	info := c.info(conn)
	info.Config, info.Type = cfg, string(ev.plugin.Type)
	if conn.TargetState == state.TargetStarted {
		if tasks := c.split(ctx, ev.plugin, cfg); tasks != nil {
			if err := c.addTaskConfigs(ctx, b, conn, tasks); err != nil {
				return ConnectorInfo{}, err
			}
			info.Tasks = taskIDs(name, len(tasks))
		}
	}
	if err := c.o.Configs.Write(ctx, b); err != nil {
		return ConnectorInfo{}, storeError("writing the config of connector "+name, err)
	}
	return info, nil
}

func taskIDs(name string, n int) []connectors.TaskID {
	ids := make([]connectors.TaskID, n)
	for i := range ids {
		ids[i] = connectors.TaskID{Connector: name, Task: i}
	}
	return ids
}

// PutConfig creates connector name (created is true) or replaces its config.
// An existing connector keeps its target state; its tasks take the new
// split.
func (c *Controller) PutConfig(ctx context.Context, name string, config map[string]string) (ConnectorInfo, bool, error) {
	if !c.ready() {
		return ConnectorInfo{}, false, notReady()
	}
	cfg, ev, err := c.checkWrite(name, config)
	if err != nil {
		return ConnectorInfo{}, false, err
	}
	wctx, done, err := c.begin(ctx)
	if err != nil {
		return ConnectorInfo{}, false, err
	}
	defer done()
	conn, ok := c.exists(name)
	if !ok {
		info, err := c.create(wctx, name, cfg, ev, state.TargetStarted)
		return info, err == nil, err
	}
	info, err := c.reconfigure(wctx, conn, cfg, ev)
	return info, false, err
}

// PutTaskConfigs stores the task configs a connector's instance computed.
// Only the leader writes the config topic (invariant 2): a worker whose
// connector split sends them here through its Router. 404 when the
// connector is gone meanwhile; unchanged configs are not written again.
func (c *Controller) PutTaskConfigs(ctx context.Context, name string, tasks []map[string]string) error {
	return c.onConnector(ctx, name, func(ctx context.Context, conn *state.Connector) error {
		if sameTaskConfigs(conn.Tasks, tasks) {
			return nil
		}
		b := new(state.Batch)
		if err := c.addTaskConfigs(ctx, b, conn, tasks); err != nil {
			return err
		}
		if err := c.o.Configs.Write(ctx, b); err != nil {
			return storeError("writing the task configs of connector "+name, err)
		}
		return nil
	})
}

// addTaskConfigs adds a new generation of task configs of conn to b. On a
// worker that fences (exactly.once.source.support preparing or enabled), a
// source connector's earlier tasks are fenced first (invariant 10: no
// producer of an earlier generation commits once the task configs that
// start the next one exist), and the task-count record goes with them. A
// stop's empty task configs are no generation and do not come here: the
// task-count record keeps the last one's count for the next to fence.
func (c *Controller) addTaskConfigs(ctx context.Context, b *state.Batch, conn *state.Connector, tasks []map[string]string) error {
	if c.fencesTasksOf(conn) {
		if earlier := max(len(conn.Tasks), conn.TaskCount); earlier > 0 {
			if err := c.o.FenceSources(ctx, conn.Name, earlier); err != nil {
				return storeError("fencing the earlier tasks of connector "+conn.Name, err)
			}
		}
		b.TaskCount(conn.Name, len(tasks))
	}
	b.TaskConfigs(conn.Name, tasks)
	return nil
}

// fencesTasksOf reports whether the leader fences the earlier tasks of
// conn before writing new task configs: the worker fences (preparing or
// enabled) and conn is a source connector.
func (c *Controller) fencesTasksOf(conn *state.Connector) bool {
	if !c.o.Worker.ExactlyOnce.Fences() {
		return false
	}
	p, err := c.o.Plugins.Lookup(conn.Config[connconfig.ConnectorClass])
	return err == nil && p.Type == connectors.Source
}

func sameTaskConfigs(a, b []map[string]string) bool {
	return slices.EqualFunc(a, b, func(x, y map[string]string) bool { return maps.Equal(x, y) })
}

// Delete removes connector name: 404 when there is none.
func (c *Controller) Delete(ctx context.Context, name string) error {
	return c.onConnector(ctx, name, func(ctx context.Context, _ *state.Connector) error {
		if err := c.o.Configs.DeleteConnector(ctx, name); err != nil {
			return storeError("deleting connector "+name, err)
		}
		return nil
	})
}

// Pause pauses connector name and its tasks; pausing a paused connector is
// not an error.
func (c *Controller) Pause(ctx context.Context, name string) error {
	return c.setTarget(ctx, name, state.TargetPaused)
}

// Resume runs connector name again, whether it was paused or stopped;
// resuming a running connector is not an error.
func (c *Controller) Resume(ctx context.Context, name string) error {
	return c.setTarget(ctx, name, state.TargetStarted)
}

func (c *Controller) setTarget(ctx context.Context, name string, t state.TargetState) error {
	return c.onConnector(ctx, name, func(ctx context.Context, _ *state.Connector) error {
		if err := c.o.Configs.Write(ctx, new(state.Batch).TargetState(name, t)); err != nil {
			return storeError("writing the target state of connector "+name, err)
		}
		return nil
	})
}
