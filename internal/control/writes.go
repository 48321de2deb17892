package control

import (
	"context"
	"net/http"

	"github.com/sluice-io/sluice/connectors"
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
	conn, ok := c.o.Configs.Snapshot().Connectors[name]
	return conn, ok && conn != nil
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
	if err := c.create(wctx, name, cfg, targetOf(st)); err != nil {
		return ConnectorInfo{}, err
	}
	return ConnectorInfo{Name: name, Config: cfg, Tasks: []connectors.TaskID{}, Type: string(ev.plugin.Type)}, nil
}

// create writes the target state before the config: the config record is
// what makes workers start the connector, and it must find its target state
// already there, or a connector created PAUSED or STOPPED would run for a
// moment. Writing STARTED too overwrites a target state left behind by an
// earlier create whose config write failed.
func (c *Controller) create(ctx context.Context, name string, cfg map[string]string, target state.TargetState) error {
	if err := c.o.Configs.PutTargetState(ctx, name, target); err != nil {
		return storeError("writing the target state of connector "+name, err)
	}
	if err := c.o.Configs.PutConnectorConfig(ctx, name, cfg); err != nil {
		return storeError("writing the config of connector "+name, err)
	}
	return nil
}

// PutConfig creates connector name (created is true) or replaces its config.
// An existing connector keeps its target state and tasks until the
// connector produces new task configs.
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
		if err := c.create(wctx, name, cfg, state.TargetStarted); err != nil {
			return ConnectorInfo{}, false, err
		}
		return ConnectorInfo{Name: name, Config: cfg, Tasks: []connectors.TaskID{}, Type: string(ev.plugin.Type)}, true, nil
	}
	if err := c.o.Configs.PutConnectorConfig(wctx, name, cfg); err != nil {
		return ConnectorInfo{}, false, storeError("writing the config of connector "+name, err)
	}
	info := c.info(conn)
	info.Config, info.Type = cfg, string(ev.plugin.Type)
	return info, false, nil
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
		if err := c.o.Configs.PutTargetState(ctx, name, t); err != nil {
			return storeError("writing the target state of connector "+name, err)
		}
		return nil
	})
}
