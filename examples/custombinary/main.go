// Command custombinary is Sluice with a connector of your own: a worker
// that runs the built-in connectors and Counter (counter.go), and serves
// Kafka Connect's REST API.
//
//	go build -o bin/mysluice ./examples/custombinary
//	bin/mysluice --cluster demo --bootstrap 127.0.0.1:9092 --rest-addr :8083
//
// It is a worker like those of `sluice worker`: start several with one
// --cluster and they share the work, as long as each knows Counter.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice"
	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/builtin"
)

func main() {
	cluster := flag.String("cluster", "custom", "cluster name: workers with the same name form one cluster")
	bootstrap := flag.String("bootstrap", "127.0.0.1:9092", "Kafka bootstrap servers, host:port[,host:port...]")
	restAddr := flag.String("rest-addr", ":8083", "host:port of Kafka Connect's REST API")
	flag.Parse()

	w, err := start(sluice.Config{
		Cluster: *cluster, Bootstrap: connectors.SplitList(*bootstrap), RESTAddr: *restAddr,
		Log: zerolog.New(os.Stderr).With().Timestamp().Logger().Level(zerolog.InfoLevel),
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case <-ctx.Done(): // Ctrl-C or SIGTERM
	case <-w.Done(): // the start failed for good, say a bad internal topic
		log.Fatal(w.Err())
	}
	// Stop the tasks, flush their offsets and leave the group, so that the
	// other workers take the work over at once.
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Stop(sctx); err != nil {
		log.Fatal(err)
	}
}

// start adds Counter to the built-in connectors and starts a worker that
// runs them all.
func start(cfg sluice.Config) (*sluice.Worker, error) {
	cfg.Registry = builtin.Registry()
	if err := cfg.Registry.Register(counterPlugin()); err != nil {
		return nil, err
	}
	return sluice.NewWorker(cfg)
}
