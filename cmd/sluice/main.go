// Command sluice is the one binary of Sluice: a development cluster in one
// process, an embedded Kafka-compatible broker, and the worker.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `sluice moves data between Kafka and other systems, like Kafka Connect,
with the same REST API and connector configs.

Usage:
  sluice <command> [flags]

Commands:
  dev         an embedded broker, one worker and the REST API on :8083, ready to
              take connectors; data persists under --data-dir
  broker      the embedded Kafka-compatible broker alone, for local multi-worker setups
  worker      a worker of a cluster on any Kafka (Apache Kafka, or 'sluice broker');
              --config takes a Kafka Connect worker properties file as it is
  schema-registry
              a Schema Registry with Confluent's REST API on :8081, its schemas
              in Kafka's _schemas topic
  version     print the version

Admin commands (reach a running cluster through its actor system at --join):
  connectors  list, get, create, update, delete, status, pause, resume, stop,
              restart, offsets, topics, validate
  tasks       list, status, restart
  plugins     the connector plugins and their config keys
  workers     the workers, the leader, and which worker runs which task
  loggers     log levels at run time
  top         tasks with state, worker, records/s and lag, refreshed every second

Every flag can also be set in the environment as SLUICE_<FLAG>, upper case with
dashes as underscores: --rest-addr is SLUICE_REST_ADDR. A flag given on the
command line wins over the environment.

Run 'sluice <command> --help' for the flags of a command.

Getting started:
  go run ./cmd/sluice dev
  curl -s localhost:8083/connector-plugins
  go run ./cmd/sluice plugins
`

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	admin := map[string]func(context.Context, []string, io.Writer, io.Writer) int{
		"connectors": runConnectors, "tasks": runTasks, "plugins": runPlugins, "workers": runWorkers, "loggers": runLoggers,
		"top": runTop,
	}
	if f, ok := admin[args[0]]; ok {
		return f(ctx, args[1:], stdout, stderr)
	}
	var err error
	switch args[0] {
	case "dev":
		err = runDev(ctx, args[1:], stdout, stderr)
	case "broker":
		err = runBroker(ctx, args[1:], stdout, stderr)
	case "worker":
		err = runWorker(ctx, args[1:], stdout, stderr)
	case "schema-registry":
		err = runSchemaRegistry(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "sluice %s\n", Version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "sluice %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "sluice %s: %v\n", args[0], err)
		return 1
	}
}

// usageError is a bad flag or argument: exit code 2, as flag does.
type usageError struct{ error }
