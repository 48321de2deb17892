package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/admin"
	"github.com/sluice-io/sluice/internal/controlpb"
	"github.com/sluice-io/sluice/internal/javaprops"
)

// Exit codes of the admin commands, for scripts.
const (
	exitOK          = 0
	exitRefused     = 1 // the cluster refused the request (400 and other 4xx), or validation found errors
	exitUsage       = 2 // bad flags or arguments
	exitUnreachable = 3 // no worker could be reached
	exitNotFound    = 4 // no such connector, task, plugin or logger (404)
	exitConflict    = 5 // 409: the connector exists already, or a rebalance is in progress (try again)
	exitServer      = 6 // the cluster failed (5xx)
)

const adminCommonHelp = `
Every admin command reaches the cluster through its actor system: it joins the
workers' gossip at --join (a worker's --bind address; 'sluice dev' listens on
127.0.0.1:8084) and sends protobuf control messages to a worker's admin actor.
Any worker answers; writes go on to the group leader.

When the workers require HTTP basic authentication (rest.extension.classes
with BasicAuthSecurityRestExtension), give --user and --password-file (a file
holding the password, so that it appears in no process list or shell history):
the workers check them against the same users file as their REST API.

Output is a human table; -o json prints exactly what Kafka Connect's REST API
answers, for scripts. Exit codes: 0 done, 1 refused (bad request or invalid
config), 2 usage error, 3 no worker reachable, 4 not found, 5 conflict (the
connector exists already, or a rebalance is in progress: try again), 6 the
cluster failed.
`

// adminFlags are the flags of every admin command.
type adminFlags struct {
	join         string
	cluster      string
	output       choice
	timeout      time.Duration
	user         string
	passwordFile string
	clusterSec   clusterSecFlags
	logFlags
}

func (f *adminFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.join, "join", "127.0.0.1:8084", "a worker's gossip address (its --bind), host:port[,host:port...]")
	fs.StringVar(&f.cluster, "cluster", "sluice", "the cluster's name (the workers' --cluster)")
	f.output = choice{value: "table", allowed: []string{"table", "json"}}
	fs.Var(&f.output, "o", "output: table or json (json is the REST API's answer)")
	fs.Var(&f.output, "output", "same as -o")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "how long to wait for the cluster's answer")
	fs.StringVar(&f.user, "user", "", "user name, when the workers require HTTP basic authentication")
	fs.StringVar(&f.passwordFile, "password-file", "", "file holding --user's password (its one line)")
	f.clusterSec.register(fs)
	f.logFlags.register(fs)
	// The client's own logs are noise unless asked for.
	f.level.value = "error"
	fs.Lookup("log-level").DefValue = "error"
}

// cliError is a failed admin command with its exit code.
type cliError struct {
	code int
	msg  string
}

func (e *cliError) Error() string { return e.msg }

func refused(format string, args ...any) error {
	return &cliError{code: exitRefused, msg: fmt.Sprintf(format, args...)}
}

// adminCmd is one admin command being run.
type adminCmd struct {
	name   string
	f      adminFlags
	fs     *flag.FlagSet
	args   []string
	stdout io.Writer
	stderr io.Writer
	log    zerolog.Logger
	client *admin.Client
	// password is read from --password-file.
	password string
}

func newAdminCmd(name, help string, stdout, stderr io.Writer) *adminCmd {
	c := &adminCmd{name: name, stdout: stdout, stderr: stderr}
	c.fs = newFlags(name, strings.TrimSpace(help)+"\n"+adminCommonHelp, stderr)
	c.f.register(c.fs)
	return c
}

// parse reads flags anywhere among the arguments (`status foo -o json`
// and `-o json status foo` both work), then fills unset flags from SLUICE_*.
func (c *adminCmd) parse(args []string) error {
	var pos []string
	for {
		if err := c.fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return err
			}
			return usageError{err}
		}
		if c.fs.NArg() == 0 {
			break
		}
		pos = append(pos, c.fs.Arg(0))
		args = c.fs.Args()[1:]
	}
	c.args = pos
	if err := applyEnv(c.fs); err != nil {
		return err
	}
	log, err := c.f.logger(c.stderr)
	if err != nil {
		return err
	}
	c.log = log
	return c.readPassword()
}

// readPassword reads --password-file: its content without the final line
// break. Errors name the flag and the file, never the content.
func (c *adminCmd) readPassword() error {
	switch {
	case c.f.user == "" && c.f.passwordFile == "":
		return nil
	case c.f.user == "":
		return usageError{errors.New("--password-file needs --user")}
	case c.f.passwordFile == "":
		return usageError{errors.New("--user needs --password-file (a file holding the password)")}
	}
	b, err := os.ReadFile(c.f.passwordFile)
	if err != nil {
		return usageError{fmt.Errorf("--password-file: %w", err)}
	}
	c.password = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	return nil
}

// arg returns positional argument i, or a usage error naming what is
// missing.
func (c *adminCmd) arg(i int, what string) (string, error) {
	if i >= len(c.args) || strings.TrimSpace(c.args[i]) == "" {
		return "", usageError{fmt.Errorf("missing %s", what)}
	}
	return c.args[i], nil
}

func (c *adminCmd) connect(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	keys, tlsc, err := c.f.clusterSec.resolve(nil)
	if err != nil {
		return err
	}
	cl, err := admin.Dial(dctx, admin.ClientConfig{Cluster: c.f.cluster, Join: connectors.SplitList(c.f.join), Log: c.log,
		GossipKeys: keys, TLS: tlsc, ActorLogs: c.f.level.value == "debug" || c.f.level.value == "trace"})
	if err != nil {
		return &cliError{code: exitUnreachable, msg: err.Error()}
	}
	c.client = cl
	return nil
}

func (c *adminCmd) close() {
	if c.client != nil {
		c.client.Close()
	}
}

// do sends one request and turns an error answer into a cliError with the
// matching exit code.
func (c *adminCmd) do(ctx context.Context, req *controlpb.AdminRequest) (*controlpb.AdminResponse, error) {
	if c.client == nil {
		if err := c.connect(ctx); err != nil {
			return nil, err
		}
	}
	rctx, cancel := context.WithTimeout(ctx, c.f.timeout)
	defer cancel()
	req.User, req.Password = c.f.user, c.password
	res, err := c.client.Do(rctx, req)
	if err != nil {
		return nil, &cliError{code: exitUnreachable, msg: err.Error()}
	}
	c.log.Debug().Str("served_by", res.GetServedBy()).Int32("code", res.GetCode()).Msg("answer")
	if res.GetCode() < 400 {
		return res, nil
	}
	code := exitRefused
	switch {
	case res.GetCode() == http.StatusNotFound:
		code = exitNotFound
	case res.GetCode() == http.StatusConflict:
		code = exitConflict
	case res.GetCode() >= 500:
		code = exitServer
	}
	return nil, &cliError{code: code, msg: res.GetMessage()}
}

// json reports whether the output is JSON.
func (c *adminCmd) json() bool { return c.f.output.value == "json" }

// printJSON prints a REST body indented; an empty body prints nothing.
func (c *adminCmd) printJSON(res *controlpb.AdminResponse) error {
	if len(res.GetJson()) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, res.GetJson(), "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := c.stdout.Write(buf.Bytes())
	return err
}

// fetch sends req and, for JSON output, prints the answer (shown is
// true); otherwise it decodes the answer into v for a table.
func (c *adminCmd) fetch(ctx context.Context, req *controlpb.AdminRequest, v any) (shown bool, err error) {
	res, err := c.do(ctx, req)
	if err != nil {
		return false, err
	}
	if c.json() {
		return true, c.printJSON(res)
	}
	return false, decode(res, v)
}

// decode reads a response's JSON body into v.
func decode(res *controlpb.AdminResponse, v any) error {
	if err := json.Unmarshal(res.GetJson(), v); err != nil {
		return fmt.Errorf("unexpected answer from the cluster: %v", err)
	}
	return nil
}

// applyEnv fills the flags not given on the command line from SLUICE_*
// variables; a bad variable is reported by its own name. A flag set from
// the environment counts as set (fs.Visit sees it), as one given on the
// command line does.
func applyEnv(fs *flag.FlagSet) error {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		env := "SLUICE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok && !onCommandLine[f.Name] && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = usageError{fmt.Errorf("%s=%q: %v", env, v, err)}
			}
		}
	})
	return envErr
}

// readConfig builds a connector config from a file (JSON: a config object
// or {"name":..., "config":{...}}; anything else: Java properties) and
// key=value arguments, which win. It returns the name the file gives, if
// any.
func readConfig(file string, kvs []string, stdin io.Reader) (name string, cfg map[string]string, err error) {
	cfg = map[string]string{}
	if file != "" {
		var b []byte
		if file == "-" {
			b, err = io.ReadAll(stdin)
		} else {
			b, err = os.ReadFile(file)
		}
		if err != nil {
			return "", nil, usageError{fmt.Errorf("reading the config: %v", err)}
		}
		if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
			name, cfg, err = jsonConfig(t)
		} else {
			cfg, err = propertiesConfig(b)
		}
		if err != nil {
			return "", nil, usageError{fmt.Errorf("%s: %v", file, err)}
		}
	}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return "", nil, usageError{fmt.Errorf("%q is not key=value", kv)}
		}
		cfg[strings.TrimSpace(k)] = v
	}
	return name, cfg, nil
}

func jsonConfig(b []byte) (string, map[string]string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return "", nil, fmt.Errorf("not valid JSON: %v", err)
	}
	var name string
	if raw, ok := obj["config"]; ok {
		if n, ok := obj["name"]; ok {
			if err := json.Unmarshal(n, &name); err != nil {
				return "", nil, fmt.Errorf(`"name" must be a string`)
			}
		}
		var inner map[string]json.RawMessage // a fresh map: Unmarshal would merge into obj
		if err := json.Unmarshal(raw, &inner); err != nil {
			return "", nil, fmt.Errorf(`"config" must be a JSON object: %v`, err)
		}
		obj = inner
	}
	cfg := make(map[string]string, len(obj))
	var bad []string
	for k, v := range obj {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			cfg[k] = s
			continue
		}
		t := bytes.TrimSpace(v)
		if len(t) > 0 && (t[0] == '-' || t[0] == 't' || t[0] == 'f' || (t[0] >= '0' && t[0] <= '9')) {
			cfg[k] = string(t) // numbers and booleans, as Connect's Jackson takes them
			continue
		}
		bad = append(bad, k)
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return "", nil, fmt.Errorf("config values must be strings, numbers or booleans: %s", strings.Join(bad, ", "))
	}
	if name == "" {
		name = cfg["name"]
	}
	return name, cfg, nil
}

// propertiesConfig reads a connector config from a Java properties file,
// the format of Connect's standalone connector files. Values are trimmed,
// as Connect's ConfigDef trims the values it parses.
func propertiesConfig(b []byte) (map[string]string, error) {
	cfg, err := javaprops.Parse(b)
	for k, v := range cfg {
		cfg[k] = strings.TrimSpace(v)
	}
	return cfg, err
}

// runAdmin runs one admin command and maps its error to an exit code.
func runAdmin(ctx context.Context, c *adminCmd, args []string, body func(ctx context.Context) error) int {
	defer c.close()
	err := c.parse(args)
	if err == nil {
		err = body(ctx)
	}
	var ce *cliError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, new(usageError)):
		fmt.Fprintf(c.stderr, "sluice %s: %v\nRun 'sluice %s --help' for usage.\n", c.name, err, strings.Fields(c.name)[0])
		return exitUsage
	case errors.As(err, &ce):
		fmt.Fprintf(c.stderr, "sluice %s: %v\n", c.name, ce.msg)
		return ce.code
	default:
		fmt.Fprintf(c.stderr, "sluice %s: %v\n", c.name, err)
		return exitRefused
	}
}
