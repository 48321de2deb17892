package worker

import (
	"fmt"
	"strings"
)

// KeyUIEnable is Sluice's own worker key for the dashboard (GET /ui and
// GET /ui/state): true (the default) serves it, false answers both 404, as
// --ui=false does. The flag, when given, wins over the key.
const KeyUIEnable = "sluice.ui.enable"

// applyUIKey turns the dashboard off when the key says false; DisableUI
// already set (an embedding program's field) stays.
func (c *Config) applyUIKey() error {
	switch v := strings.ToLower(strings.TrimSpace(c.Props[KeyUIEnable])); v {
	case "", "true":
		return nil
	case "false":
		c.DisableUI = true
		return nil
	}
	return fmt.Errorf("%s: %q is not true or false", KeyUIEnable, c.Props[KeyUIEnable])
}

// DashboardOff tells whether the dashboard is turned off (--ui=false,
// sluice.ui.enable=false or Config.DisableUI), for what a command prints.
func (w *Worker) DashboardOff() bool { return w.cfg.DisableUI }
