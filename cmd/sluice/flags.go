package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/loglevel"
)

// newFlags returns a flag set whose help starts with the command's text.
func newFlags(name, help string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\nFlags (each also settable as SLUICE_<FLAG>):\n", strings.TrimSpace(help))
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses the command line, then fills the flags it did not set
// from SLUICE_* variables: the command line wins, and a bad variable is
// reported by its own name.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return applyEnv(fs)
}

// setFlags names the flags given on the command line or in the
// environment (applyEnv sets those through the flag set, so Visit sees
// them): these win over Kafka Connect's keys for the same settings.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// choice is a string flag that accepts one of a few values, checked when it
// is set, so the error names where the value came from.
type choice struct {
	value   string
	allowed []string
}

func (c *choice) String() string { return c.value }

func (c *choice) Set(v string) error {
	v = strings.ToLower(strings.TrimSpace(v))
	for _, a := range c.allowed {
		if v == a {
			c.value = v
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(c.allowed, ", "))
}

// replicationFactor is -1 (the broker's default) or 1..32767.
type replicationFactor int

func (r *replicationFactor) String() string { return fmt.Sprint(int(*r)) }

func (r *replicationFactor) Set(v string) error {
	var n int
	if _, err := fmt.Sscan(strings.TrimSpace(v), &n); err != nil || n == 0 || n < -1 || n > 32767 {
		return fmt.Errorf("%q is not -1 or a number from 1 to 32767", v)
	}
	*r = replicationFactor(n)
	return nil
}

// logFlags are the logging flags every command has.
type logFlags struct {
	level  choice
	format choice
	// loggers is the process's registry of named loggers, made by
	// logger; a worker derives its components' loggers from it, and
	// /admin/loggers changes their levels at run time.
	loggers *loglevel.Registry
}

func (l *logFlags) register(fs *flag.FlagSet) {
	l.level = choice{value: "info", allowed: []string{"trace", "debug", "info", "warn", "error"}}
	l.format = choice{value: "auto", allowed: []string{"auto", "console", "json"}}
	fs.Var(&l.level, "log-level", "log level: trace, debug, info, warn, error")
	fs.Var(&l.format, "log-format", "log format: auto (human on a terminal, JSON otherwise), console, json")
}

// logger makes the process's registry of loggers, with --log-level at the
// root, and returns its root logger. The registry manages zerolog's global
// level: this process has no other loggers, and it keeps debug events
// unbuilt until some logger is set to DEBUG.
func (l *logFlags) logger(w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(l.level.value)
	if err != nil {
		return zerolog.Logger{}, usageError{fmt.Errorf("--log-level: %v", err)}
	}
	human := false
	switch l.format.value {
	case "auto":
		if f, ok := w.(*os.File); ok {
			human = isatty.IsTerminal(f.Fd())
		}
	case "console":
		human = true
	}
	if human {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	base := zerolog.New(w).With().Timestamp().Logger()
	l.loggers = loglevel.New(base, loglevel.Options{Root: level, ManageGlobalLevel: true})
	return l.loggers.Root(), nil
}
