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

// parseFlags parses args after filling unset flags from SLUICE_* variables.
// Command-line values win: the environment only supplies defaults.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		env := "SLUICE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = usageError{fmt.Errorf("%s=%q: %v", env, v, err)}
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// logFlags are the logging flags every command has.
type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: trace, debug, info, warn, error")
	fs.StringVar(&l.format, "log-format", "auto", "log format: auto (human on a terminal, JSON otherwise), console, json")
}

func (l *logFlags) logger(w io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(strings.ToLower(l.level))
	if err != nil || level == zerolog.NoLevel {
		return zerolog.Logger{}, usageError{fmt.Errorf("--log-level: %q is not one of trace, debug, info, warn, error", l.level)}
	}
	human := false
	switch l.format {
	case "auto":
		if f, ok := w.(*os.File); ok {
			human = isatty.IsTerminal(f.Fd())
		}
	case "console":
		human = true
	case "json":
	default:
		return zerolog.Logger{}, usageError{fmt.Errorf("--log-format: %q is not one of auto, console, json", l.format)}
	}
	if human {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}
