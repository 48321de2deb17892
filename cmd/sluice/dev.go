package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkasec"
	"github.com/sluice-io/sluice/internal/schemaregistry"
	"github.com/sluice-io/sluice/internal/worker"
)

const devHelp = `
sluice dev starts everything on one machine: the embedded Kafka-compatible
broker (persisted under --data-dir), one worker, Kafka Connect's REST API on
--rest-addr, and a Schema Registry with Confluent's API on
--schema-registry-addr (http://127.0.0.1:8081; --schema-registry-addr=off leaves
it out), the schema.registry.url of the Avro, Protobuf and JSON Schema
converters. Stop it with Ctrl-C (offsets are flushed); start it again and it
continues where it stopped, schemas included.

With --sasl-user and --tls-cert/--tls-key the broker requires SASL and TLS, and
the worker sluice dev runs authenticates with the first --sasl-user over
SCRAM-SHA-512 and trusts --tls-cert (a self-signed certificate for the
--kafka-addr host, or give --prop ssl.truststore.location=ca.pem). For example:
  sluice dev --sasl-user connect:connect-secret --tls-cert broker.pem --tls-key broker-key.pem
` + brokerSecurityHelp

const devBanner = `
Sluice is running.
  REST API      http://%[1]s   (Kafka Connect's API)%[6]s%[7]s
  admin         %[5]s        (sluice connectors|tasks|plugins|workers --join %[5]s)
  Kafka         %[2]s        (any Kafka client or kcat works)
  data          %[3]s

Try it:
  printf 'hello\nworld\n' > /tmp/in.txt
  curl -s -X POST -H 'Content-Type: application/json' localhost:%[4]s/connectors -d '{
    "name": "file-source",
    "config": {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
               "file": "/tmp/in.txt", "topic": "lines",
               "value.converter": "org.apache.kafka.connect.storage.StringConverter"}}'
  curl -s -X POST -H 'Content-Type: application/json' localhost:%[4]s/connectors -d '{
    "name": "file-sink",
    "config": {"connector.class": "FileStreamSink", "file": "/tmp/out.txt", "topics": "lines",
               "value.converter": "org.apache.kafka.connect.storage.StringConverter"}}'
  curl -s localhost:%[4]s/connectors?expand=status
  sluice connectors status file-source      (or: go run ./cmd/sluice connectors ...)
  cat /tmp/out.txt

`

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dev", devHelp, stderr)
	dataDir := fs.String("data-dir", "./sluice-data", "directory for the broker's data")
	kafkaAddr := fs.String("kafka-addr", "127.0.0.1:9092", "host:port of the embedded broker")
	var f workerFlags
	fs.StringVar(&f.restAddr, "rest-addr", ":8083", "host:port of the REST API")
	f.register(fs, true)
	registryAddr := fs.String("schema-registry-addr", DefaultSchemaRegistryAddr, "host:port of the Schema Registry (Confluent's API, schemas in the broker's _schemas topic); off leaves it out")
	registryUsersFile := fs.String("schema-registry-users-file", "", "a file of user=password lines: the Schema Registry then requires basic authentication by one of them")
	var sec brokerSecurityFlags
	sec.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	stopPace, err := f.startGCPace(log)
	if err != nil {
		return err
	}
	defer stopPace()
	// Before the broker starts, so that a typo costs nothing.
	if *registryAddr != "off" {
		if _, _, err := net.SplitHostPort(*registryAddr); err != nil {
			return usageError{fmt.Errorf("--schema-registry-addr %q: %v (host:port, or off)", *registryAddr, err)}
		}
	} else if *registryUsersFile != "" {
		return usageError{fmt.Errorf("--schema-registry-users-file is given, but --schema-registry-addr=off leaves the registry out")}
	}
	regUsers, err := registryUsers(*registryUsersFile, "--schema-registry-users-file")
	if err != nil {
		return err
	}
	secOpts, err := sec.kfakeOpts()
	if err != nil {
		return err
	}
	b, err := startBroker(*kafkaAddr, filepath.Join(*dataDir, "kafka"), log, secOpts...)
	if err != nil {
		return err
	}
	defer b.Close()
	f.bootstrap = b.ListenAddrs()[0]
	cfg, err := f.workerConfig(fs, log)
	if err != nil {
		return err
	}
	sec.workerProps(cfg.Props)
	registryLine := ""
	if *registryAddr != "off" {
		// The registry reaches the broker as the worker does.
		secOpts, err := kafkasec.Options(cfg.Props)
		if err != nil {
			return err
		}
		reg, err := startSchemaRegistry(ctx, *registryAddr, regUsers, schemaregistry.Config{
			Kafka: append([]kgo.Opt{kgo.SeedBrokers(f.bootstrap)}, secOpts...),
			Log:   registryLogger(log),
		})
		if err != nil {
			return fmt.Errorf("%w (--schema-registry-addr takes another host:port, or off)", err)
		}
		defer reg.Close()
		auth := ""
		if regUsers != nil {
			auth = ", basic authentication"
		}
		registryLine = "\n  registry      " + reg.URL() + "   (Confluent's Schema Registry API: schema.registry.url" + auth + ")"
	}
	w, err := worker.Start(cfg)
	if err != nil {
		return err
	}
	host, port, _ := splitPort(w.RESTAddr())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost" // listening on every address
	}
	dashboard := "\n  dashboard     http://" + net.JoinHostPort(host, port) + "/ui   (sluice top for a terminal)"
	if w.DashboardOff() {
		dashboard = ""
	}
	fmt.Fprintf(stdout, devBanner, net.JoinHostPort(host, port), f.bootstrap+sec.describe(), *dataDir, port, f.bind, dashboard, registryLine)
	return serve(ctx, w, log)
}
