package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/controlpb"
)

const connectorsHelp = `
sluice connectors manages connectors, as Kafka Connect's /connectors REST API does.

Usage:
  sluice connectors list [--expand]                 names, or with --expand type, state and tasks
  sluice connectors get NAME                        config and tasks
  sluice connectors create [NAME] [-f FILE] [key=value ...] [--initial-state RUNNING|PAUSED|STOPPED]
  sluice connectors update NAME [-f FILE] [key=value ...]         replace the config
  sluice connectors update NAME --merge [key=value ...] [--remove KEY ...]   change some keys
  sluice connectors delete NAME
  sluice connectors status [NAME] [--watch]        one connector's tasks, or all connectors
  sluice connectors pause|resume|stop NAME
  sluice connectors restart NAME [--include-tasks] [--only-failed]
  sluice connectors offsets get NAME
  sluice connectors offsets set NAME -f FILE        {"offsets":[{"partition":{...},"offset":{...}}]}; the connector must be stopped
  sluice connectors offsets reset NAME              the connector must be stopped
  sluice connectors topics NAME [--reset]
  sluice connectors validate [-f FILE] [key=value ...]

FILE is JSON (a config object, or {"name": ..., "config": {...}} as POST
/connectors takes) or a Java properties file as Kafka Connect standalone
uses; '-' reads standard input. key=value arguments add to it or override it.

Examples:
  sluice connectors create file-source connector.class=FileStreamSource file=/tmp/in.txt topic=lines
  sluice connectors status file-source --watch
  sluice connectors stop file-source && sluice connectors offsets set file-source -f offsets.json
`

func runConnectors(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	verb := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	c := newAdminCmd("connectors "+verb, connectorsHelp, stdout, stderr)
	if verb == "" {
		verb = "list"
	}
	var (
		file, initial            string
		expand, watch, merge     bool
		includeTasks, onlyFailed bool
		reset                    bool
		remove                   listFlag
		watchEvery               time.Duration
	)
	c.fs.StringVar(&file, "f", "", "config file (JSON or properties; - for standard input)")
	switch verb {
	case "list":
		c.fs.BoolVar(&expand, "expand", false, "show each connector's type, state and tasks")
	case "create":
		c.fs.StringVar(&initial, "initial-state", "", "RUNNING (default), PAUSED or STOPPED")
	case "update":
		c.fs.BoolVar(&merge, "merge", false, "change only the given keys (PATCH) instead of replacing the config")
		c.fs.Var(&remove, "remove", "with --merge, a key to remove (repeatable)")
	case "status":
		c.fs.BoolVar(&watch, "watch", false, "print the status again every --interval until interrupted")
		c.fs.DurationVar(&watchEvery, "interval", 2*time.Second, "how often --watch refreshes")
	case "restart":
		c.fs.BoolVar(&includeTasks, "include-tasks", false, "restart the tasks too")
		c.fs.BoolVar(&onlyFailed, "only-failed", false, "restart only what is FAILED")
	case "topics":
		c.fs.BoolVar(&reset, "reset", false, "forget the topics recorded so far")
	case "get", "delete", "pause", "resume", "stop", "offsets", "validate":
	default:
		fmt.Fprintf(stderr, "sluice connectors: unknown command %q\n%s", verb, connectorsHelp)
		return exitUsage
	}
	return runAdmin(ctx, c, args, func(ctx context.Context) error {
		switch verb {
		case "list":
			return c.list(ctx, expand)
		case "get":
			return c.simple(ctx, "connector", func(n string) *controlpb.AdminRequest {
				return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_GetConnector{GetConnector: ref(n)}}
			}, printInfo)
		case "create":
			return c.create(ctx, file, initial)
		case "update":
			return c.update(ctx, file, merge, remove)
		case "delete":
			return c.simple(ctx, "connector", func(n string) *controlpb.AdminRequest {
				return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_DeleteConnector{DeleteConnector: ref(n)}}
			}, done("deleted"))
		case "status":
			return c.status(ctx, watch, watchEvery)
		case "pause":
			return c.simple(ctx, "connector", func(n string) *controlpb.AdminRequest {
				return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_Pause{Pause: ref(n)}}
			}, done("pausing"))
		case "resume":
			return c.simple(ctx, "connector", func(n string) *controlpb.AdminRequest {
				return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_Resume{Resume: ref(n)}}
			}, done("resuming"))
		case "stop":
			return c.simple(ctx, "connector", func(n string) *controlpb.AdminRequest {
				return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_Stop{Stop: ref(n)}}
			}, done("stopping (its tasks shut down and its task configs are emptied)"))
		case "restart":
			return c.simple(ctx, "connector", func(n string) *controlpb.AdminRequest {
				return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_Restart{Restart: &controlpb.RestartConnector{Connector: n, IncludeTasks: includeTasks, OnlyFailed: onlyFailed}}}
			}, func(c *adminCmd, name string, res *controlpb.AdminResponse) error {
				if len(res.GetJson()) == 0 {
					fmt.Fprintf(c.stdout, "connector %s: restarting\n", name)
					return nil
				}
				return printStatus(c, name, res)
			})
		case "offsets":
			return c.offsets(ctx, file)
		case "topics":
			if reset {
				return c.simple(ctx, "connector", func(n string) *controlpb.AdminRequest {
					return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_ResetTopics{ResetTopics: ref(n)}}
				}, done("active topics reset"))
			}
			return c.simple(ctx, "connector", func(n string) *controlpb.AdminRequest {
				return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_GetTopics{GetTopics: ref(n)}}
			}, printTopics)
		case "validate":
			return c.validate(ctx, file)
		}
		return nil
	})
}

func ref(name string) *controlpb.ConnectorRef { return &controlpb.ConnectorRef{Connector: name} }

// simple runs a request about one connector named by the first argument,
// printing the answer as JSON or with show.
func (c *adminCmd) simple(ctx context.Context, what string, build func(name string) *controlpb.AdminRequest,
	show func(c *adminCmd, name string, res *controlpb.AdminResponse) error) error {
	name, err := c.arg(0, what+" name")
	if err != nil {
		return err
	}
	res, err := c.do(ctx, build(name))
	if err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(res)
	}
	return show(c, name, res)
}

func done(what string) func(c *adminCmd, name string, res *controlpb.AdminResponse) error {
	return func(c *adminCmd, name string, _ *controlpb.AdminResponse) error {
		fmt.Fprintf(c.stdout, "connector %s: %s\n", name, what)
		return nil
	}
}

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

func (c *adminCmd) list(ctx context.Context, expand bool) error {
	res, err := c.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_ListConnectors{ListConnectors: &controlpb.ListConnectors{ExpandStatus: expand, ExpandInfo: expand}}})
	if err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(res)
	}
	if !expand {
		var names []string
		if err := decode(res, &names); err != nil {
			return err
		}
		for _, n := range names {
			fmt.Fprintln(c.stdout, n)
		}
		return nil
	}
	var all map[string]struct {
		Status control.ConnectorStatus `json:"status"`
		Info   control.ConnectorInfo   `json:"info"`
	}
	if err := decode(res, &all); err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(all))
	tw := table(c.stdout)
	fmt.Fprintln(tw, "NAME\tTYPE\tSTATE\tTASKS RUNNING\tWORKER\tCLASS")
	for _, n := range names {
		e := all[n]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n, e.Status.Type, e.Status.Connector.State, taskSummary(e.Status.Tasks),
			dash(e.Status.Connector.WorkerID), e.Info.Config["connector.class"])
	}
	return tw.Flush()
}

func taskSummary(tasks []control.TaskState) string {
	running := 0
	for _, t := range tasks {
		if t.State == "RUNNING" {
			running++
		}
	}
	return fmt.Sprintf("%d/%d", running, len(tasks))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printInfo(c *adminCmd, _ string, res *controlpb.AdminResponse) error {
	var info control.ConnectorInfo
	if err := decode(res, &info); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Connector %s (%s), %d task(s)\n", info.Name, info.Type, len(info.Tasks))
	keys := slices.Sorted(maps.Keys(info.Config))
	tw := table(c.stdout)
	for _, k := range keys {
		fmt.Fprintf(tw, "  %s\t%s\n", k, info.Config[k])
	}
	return tw.Flush()
}

func (c *adminCmd) create(ctx context.Context, file, initial string) error {
	var name string
	kvs := c.args
	if len(kvs) > 0 && !strings.Contains(kvs[0], "=") {
		name, kvs = kvs[0], kvs[1:]
	}
	fileName, cfg, err := readConfig(file, kvs, os.Stdin)
	if err != nil {
		return err
	}
	if name == "" {
		name = fileName
	}
	if name == "" {
		name = cfg["name"]
	}
	if name == "" {
		return usageError{fmt.Errorf("missing the connector name: give it as the first argument, in the file, or as name=...")}
	}
	if len(cfg) == 0 {
		return usageError{fmt.Errorf("missing the config: give -f FILE or key=value arguments")}
	}
	var info control.ConnectorInfo
	if shown, err := c.fetch(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_CreateConnector{CreateConnector: &controlpb.CreateConnector{Name: name, Config: cfg, InitialState: initial}}}, &info); shown || err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "connector %s (%s) created\n", info.Name, info.Type)
	return nil
}

func (c *adminCmd) update(ctx context.Context, file string, merge bool, remove []string) error {
	name, err := c.arg(0, "connector name")
	if err != nil {
		return err
	}
	_, cfg, err := readConfig(file, c.args[1:], os.Stdin)
	if err != nil {
		return err
	}
	var r *controlpb.AdminRequest
	switch {
	case merge:
		if len(cfg) == 0 && len(remove) == 0 {
			return usageError{fmt.Errorf("--merge needs key=value arguments, -f FILE or --remove KEY")}
		}
		r = &controlpb.AdminRequest{Op: &controlpb.AdminRequest_PatchConfig{PatchConfig: &controlpb.PatchConfig{Connector: name, Set: cfg, Remove: remove}}}
	case len(remove) > 0:
		return usageError{fmt.Errorf("--remove works with --merge; without it the given config replaces the old one")}
	case len(cfg) == 0:
		return usageError{fmt.Errorf("missing the config: give -f FILE or key=value arguments (or --merge to change some keys)")}
	default:
		r = &controlpb.AdminRequest{Op: &controlpb.AdminRequest_PutConfig{PutConfig: &controlpb.PutConfig{Connector: name, Config: cfg}}}
	}
	res, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(res)
	}
	verb := "updated"
	if res.GetCode() == 201 {
		verb = "created"
	}
	fmt.Fprintf(c.stdout, "connector %s %s\n", name, verb)
	return nil
}

func (c *adminCmd) status(ctx context.Context, watch bool, every time.Duration) error {
	show := func() error {
		if len(c.args) == 0 {
			return c.list(ctx, true)
		}
		return c.simple(ctx, "connector", func(n string) *controlpb.AdminRequest {
			return &controlpb.AdminRequest{Op: &controlpb.AdminRequest_GetStatus{GetStatus: ref(n)}}
		}, printStatus)
	}
	if !watch {
		return show()
	}
	if every <= 0 {
		return usageError{fmt.Errorf("--interval must be positive")}
	}
	for {
		if !c.json() {
			fmt.Fprintf(c.stdout, "--- %s\n", time.Now().Format(time.TimeOnly))
		}
		if err := show(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil // interrupted: the watch ends normally
		case <-time.After(every):
		}
	}
}

func printStatus(c *adminCmd, _ string, res *controlpb.AdminResponse) error {
	var st control.ConnectorStatus
	if err := decode(res, &st); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Connector %s (%s): %s on %s\n", st.Name, st.Type, st.Connector.State, dash(st.Connector.WorkerID))
	if st.Connector.Trace != "" {
		fmt.Fprintf(c.stdout, "  %s\n", firstLine(st.Connector.Trace))
	}
	if len(st.Tasks) == 0 {
		fmt.Fprintln(c.stdout, "No tasks.")
		return nil
	}
	tw := table(c.stdout)
	fmt.Fprintln(tw, "TASK\tSTATE\tWORKER\tERROR")
	for _, t := range st.Tasks {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", t.ID, t.State, dash(t.WorkerID), firstLine(t.Trace))
	}
	return tw.Flush()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func (c *adminCmd) offsets(ctx context.Context, file string) error {
	verb, err := c.arg(0, "offsets command (get, set or reset)")
	if err != nil {
		return err
	}
	name, err := c.arg(1, "connector name")
	if err != nil {
		return err
	}
	var r *controlpb.AdminRequest
	switch verb {
	case "get":
		r = &controlpb.AdminRequest{Op: &controlpb.AdminRequest_GetOffsets{GetOffsets: ref(name)}}
	case "set":
		var body []byte
		switch {
		case file == "-":
			body, err = io.ReadAll(os.Stdin)
		case file != "":
			body, err = os.ReadFile(file)
		case len(c.args) > 2:
			body = []byte(strings.Join(c.args[2:], " "))
		default:
			return usageError{fmt.Errorf(`missing the offsets: -f FILE or a JSON argument like '{"offsets":[{"partition":{...},"offset":{...}}]}'`)}
		}
		if err != nil {
			return usageError{fmt.Errorf("reading the offsets: %v", err)}
		}
		if !json.Valid(body) {
			return usageError{fmt.Errorf("the offsets are not valid JSON")}
		}
		r = &controlpb.AdminRequest{Op: &controlpb.AdminRequest_AlterOffsets{AlterOffsets: &controlpb.AlterOffsets{Connector: name, OffsetsJson: body}}}
	case "reset":
		r = &controlpb.AdminRequest{Op: &controlpb.AdminRequest_ResetOffsets{ResetOffsets: ref(name)}}
	default:
		return usageError{fmt.Errorf("unknown offsets command %q: use get, set or reset", verb)}
	}
	res, err := c.do(ctx, r)
	if err != nil {
		return err
	}
	if c.json() {
		return c.printJSON(res)
	}
	if verb != "get" {
		var m control.Message
		if err := decode(res, &m); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, m.Message)
		return nil
	}
	var offs control.ConnectorOffsets
	if err := decode(res, &offs); err != nil {
		return err
	}
	tw := table(c.stdout)
	fmt.Fprintln(tw, "PARTITION\tOFFSET")
	for _, o := range offs.Offsets {
		p, _ := json.Marshal(o.Partition)
		v, _ := json.Marshal(o.Offset)
		fmt.Fprintf(tw, "%s\t%s\n", p, v)
	}
	return tw.Flush()
}

func printTopics(c *adminCmd, name string, res *controlpb.AdminResponse) error {
	var m map[string]struct {
		Topics []string `json:"topics"`
	}
	if err := decode(res, &m); err != nil {
		return err
	}
	for _, t := range m[name].Topics {
		fmt.Fprintln(c.stdout, t)
	}
	return nil
}

func (c *adminCmd) validate(ctx context.Context, file string) error {
	_, cfg, err := readConfig(file, c.args, os.Stdin)
	if err != nil {
		return err
	}
	class := cfg["connector.class"]
	if class == "" {
		return usageError{fmt.Errorf("missing connector.class: the config names the plugin to validate against")}
	}
	res, err := c.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_Validate{Validate: &controlpb.ValidateConfig{Class: class, Config: cfg}}})
	if err != nil {
		return err
	}
	var infos control.ConfigInfos
	if err := decode(res, &infos); err != nil {
		return err
	}
	if c.json() {
		if err := c.printJSON(res); err != nil {
			return err
		}
	} else if infos.ErrorCount == 0 {
		fmt.Fprintf(c.stdout, "config is valid for %s\n", infos.Name)
	} else {
		tw := table(c.stdout)
		fmt.Fprintln(tw, "KEY\tERROR")
		for _, ci := range infos.Configs {
			for _, e := range ci.Value.Errors {
				fmt.Fprintf(tw, "%s\t%s\n", ci.Value.Name, firstLine(e))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if infos.ErrorCount > 0 {
		return &cliError{code: exitRefused, msg: fmt.Sprintf("config has %d error(s)", infos.ErrorCount)}
	}
	return nil
}

const tasksHelp = `
sluice tasks shows and restarts the tasks of a connector.

Usage:
  sluice tasks list CONNECTOR              task configs
  sluice tasks status CONNECTOR ID         one task's state
  sluice tasks restart CONNECTOR ID        restart one task on the worker that runs it
`

func runTasks(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	verb := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	c := newAdminCmd("tasks "+verb, tasksHelp, stdout, stderr)
	switch verb {
	case "list", "status", "restart":
	case "": // only flags: --help teaches, anything else asks for a command
	default:
		fmt.Fprintf(stderr, "sluice tasks: unknown command %q\n%s", verb, tasksHelp)
		return exitUsage
	}
	return runAdmin(ctx, c, args, func(ctx context.Context) error {
		if verb == "" {
			return usageError{fmt.Errorf("missing the command: list, status or restart")}
		}
		name, err := c.arg(0, "connector name")
		if err != nil {
			return err
		}
		if verb == "list" {
			var tasks []control.TaskInfo
			if shown, err := c.fetch(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_GetTasks{GetTasks: ref(name)}}, &tasks); shown || err != nil {
				return err
			}
			tw := table(c.stdout)
			fmt.Fprintln(tw, "TASK\tCONFIG")
			for _, t := range tasks {
				b, _ := json.Marshal(t.Config)
				fmt.Fprintf(tw, "%d\t%s\n", t.ID.Task, b)
			}
			return tw.Flush()
		}
		idArg, err := c.arg(1, "task id")
		if err != nil {
			return err
		}
		var id int32
		if _, err := fmt.Sscan(idArg, &id); err != nil || id < 0 {
			return usageError{fmt.Errorf("task id %q is not a non-negative number", idArg)}
		}
		t := &controlpb.TaskRef{Connector: name, Task: id}
		if verb == "restart" {
			res, err := c.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_RestartTask{RestartTask: t}})
			if err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(res)
			}
			fmt.Fprintf(c.stdout, "task %d of connector %s: restarting\n", id, name)
			return nil
		}
		var st control.TaskState
		if shown, err := c.fetch(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_GetTaskStatus{GetTaskStatus: t}}, &st); shown || err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "task %d of connector %s: %s on %s\n", st.ID, name, st.State, dash(st.WorkerID))
		if st.Trace != "" {
			fmt.Fprintln(c.stdout, st.Trace)
		}
		return nil
	})
}

const pluginsHelp = `
sluice plugins lists the connector plugins of the cluster's workers.

Usage:
  sluice plugins [--all]         connectors; --all adds converters
  sluice plugins config CLASS    the config keys a plugin takes
`

func runPlugins(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newAdminCmd("plugins", pluginsHelp, stdout, stderr)
	var all bool
	c.fs.BoolVar(&all, "all", false, "list converters too (connectorsOnly=false)")
	return runAdmin(ctx, c, args, func(ctx context.Context) error {
		if len(c.args) > 0 && c.args[0] == "config" {
			class, err := c.arg(1, "plugin class")
			if err != nil {
				return err
			}
			var keys []control.ConfigKeyInfo
			if shown, err := c.fetch(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_PluginConfig{PluginConfig: &controlpb.PluginRef{Class: class}}}, &keys); shown || err != nil {
				return err
			}
			tw := table(c.stdout)
			fmt.Fprintln(tw, "KEY\tTYPE\tREQUIRED\tDEFAULT\tDESCRIPTION")
			for _, k := range keys {
				def := "-"
				if k.DefaultValue != nil {
					def = *k.DefaultValue
				}
				fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", k.Name, k.Type, k.Required, def, firstLine(k.Documentation))
			}
			return tw.Flush()
		}
		if len(c.args) > 0 {
			return usageError{fmt.Errorf("unknown plugins command %q", c.args[0])}
		}
		var ps []control.PluginInfo
		if shown, err := c.fetch(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_ListPlugins{ListPlugins: &controlpb.ListPlugins{ConnectorsOnly: !all}}}, &ps); shown || err != nil {
			return err
		}
		tw := table(c.stdout)
		fmt.Fprintln(tw, "CLASS\tTYPE\tVERSION")
		for _, p := range ps {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Class, p.Type, p.Version)
		}
		return tw.Flush()
	})
}

const workersHelp = `
sluice workers lists the workers of the cluster: which one leads the group, the
generation each is in, and which connectors and tasks each runs.
`

func runWorkers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newAdminCmd("workers", workersHelp, stdout, stderr)
	return runAdmin(ctx, c, args, func(ctx context.Context) error {
		if len(c.args) > 0 {
			return usageError{fmt.Errorf("unexpected argument %q", c.args[0])}
		}
		res, err := c.do(ctx, &controlpb.AdminRequest{Op: &controlpb.AdminRequest_ListWorkers{ListWorkers: &controlpb.ListWorkers{}}})
		if err != nil {
			return err
		}
		if c.json() {
			return c.printJSON(res)
		}
		var body struct {
			Workers []struct {
				WorkerID   string   `json:"worker_id"`
				URL        string   `json:"url"`
				Generation int32    `json:"generation"`
				Leader     bool     `json:"leader"`
				Connectors []string `json:"connectors"`
				Tasks      []struct {
					Connector string `json:"connector"`
					Task      int    `json:"task"`
				} `json:"tasks"`
			} `json:"workers"`
			Unreachable []string `json:"unreachable"`
		}
		if err := decode(res, &body); err != nil {
			return err
		}
		tw := table(c.stdout)
		fmt.Fprintln(tw, "WORKER\tLEADER\tGENERATION\tCONNECTORS\tTASKS")
		for _, w := range body.Workers {
			leader := ""
			if w.Leader {
				leader = "*"
			}
			tasks := make([]string, len(w.Tasks))
			for i, t := range w.Tasks {
				tasks[i] = fmt.Sprintf("%s-%d", t.Connector, t.Task)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", w.WorkerID, leader, w.Generation, dash(strings.Join(w.Connectors, ",")), dash(strings.Join(tasks, ",")))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, u := range body.Unreachable {
			fmt.Fprintf(c.stderr, "unreachable: %s\n", u)
		}
		return nil
	})
}

const loggersHelp = `
sluice loggers shows and sets log levels at run time, as Kafka Connect's
/admin/loggers does.

Usage:
  sluice loggers [list]
  sluice loggers get NAME
  sluice loggers set NAME LEVEL [--scope worker|cluster]

With --scope worker (the default) the level changes on the worker that answers;
with --scope cluster on every worker, including workers that start later.
`

func runLoggers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newAdminCmd("loggers", loggersHelp, stdout, stderr)
	var scope string
	c.fs.StringVar(&scope, "scope", "worker", "worker or cluster")
	return runAdmin(ctx, c, args, func(ctx context.Context) error {
		verb := "list"
		if len(c.args) > 0 {
			verb = c.args[0]
		}
		var r *controlpb.AdminRequest
		switch verb {
		case "list":
			r = &controlpb.AdminRequest{Op: &controlpb.AdminRequest_ListLoggers{ListLoggers: &controlpb.ListLoggers{}}}
		case "get":
			name, err := c.arg(1, "logger name")
			if err != nil {
				return err
			}
			r = &controlpb.AdminRequest{Op: &controlpb.AdminRequest_GetLogger{GetLogger: &controlpb.LoggerRef{Name: name}}}
		case "set":
			name, err := c.arg(1, "logger name")
			if err != nil {
				return err
			}
			level, err := c.arg(2, "level (TRACE, DEBUG, INFO, WARN, ERROR)")
			if err != nil {
				return err
			}
			r = &controlpb.AdminRequest{Op: &controlpb.AdminRequest_SetLogger{SetLogger: &controlpb.SetLogger{Name: name, Level: level, Scope: scope}}}
		default:
			return usageError{fmt.Errorf("unknown loggers command %q: use list, get or set", verb)}
		}
		res, err := c.do(ctx, r)
		if err != nil {
			return err
		}
		if c.json() || verb == "get" {
			return c.printJSON(res)
		}
		if verb == "set" {
			if scope == "cluster" {
				fmt.Fprintf(c.stdout, "logger %s: %s on every worker\n", c.args[1], strings.ToUpper(c.args[2]))
				return nil
			}
			var changed []string
			if err := decode(res, &changed); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "changed: %s\n", strings.Join(changed, ", "))
			return nil
		}
		var all map[string]struct {
			Level        string `json:"level"`
			LastModified *int64 `json:"last_modified"`
		}
		if err := decode(res, &all); err != nil {
			return err
		}
		names := slices.Sorted(maps.Keys(all))
		tw := table(c.stdout)
		fmt.Fprintln(tw, "LOGGER\tLEVEL\tLAST MODIFIED")
		for _, n := range names {
			mod := "-"
			if lm := all[n].LastModified; lm != nil {
				mod = time.UnixMilli(*lm).Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", n, all[n].Level, mod)
		}
		return tw.Flush()
	})
}

// listFlag collects a repeatable flag's values.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

var _ flag.Value = (*listFlag)(nil)
