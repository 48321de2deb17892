package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/basicauth"
	"github.com/sluice-io/sluice/internal/kafkasec"
	"github.com/sluice-io/sluice/internal/schemaregistry"
)

const schemaRegistryHelp = `
sluice schema-registry serves Confluent's Schema Registry REST API (subjects,
versions, schema ids, references, compatibility checks, config, mode, soft and
hard deletes) for any Kafka. Its state is the compacted topic --topic
(_schemas, as Confluent's registry and Karapace name it) in Confluent's record
format, so it survives restarts, and several instances on one topic answer
alike: start as many as you like behind one URL.

Example:
  sluice schema-registry --bootstrap 127.0.0.1:9092 --addr :8081
  curl -s -X POST -H 'Content-Type: application/vnd.schemaregistry.v1+json' \
    localhost:8081/subjects/orders-value/versions \
    -d '{"schema": "{\"type\":\"record\",\"name\":\"Order\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"}]}"}'
  curl -s localhost:8081/schemas/ids/1

Converters reach it with schema.registry.url=http://<host>:8081.

A Kafka that requires TLS or SASL takes the Java client's keys with --prop, as
Confluent's registry takes them with the kafkastore. prefix (either spelling):
  --prop security.protocol=SASL_SSL --prop sasl.mechanism=SCRAM-SHA-512 \
  --prop 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";' \
  --prop ssl.truststore.location=ca.pem --prop ssl.truststore.type=PEM
Other keys are refused, each named.

With --users-file, every request needs HTTP basic authentication (Confluent's
authentication.method=BASIC) by a user of that file: user=password lines, as
Kafka Connect's PropertyFileLoginModule reads them. Converters then give
basic.auth.credentials.source=USER_INFO and basic.auth.user.info=user:password.
`

// DefaultSchemaRegistryAddr is where 'sluice dev' serves its registry:
// Confluent's default port, on loopback.
const DefaultSchemaRegistryAddr = "127.0.0.1:8081"

func runSchemaRegistry(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("schema-registry", schemaRegistryHelp, stderr)
	bootstrap := fs.String("bootstrap", "", "Kafka bootstrap servers, host:port[,host:port...] (required; Confluent's kafkastore.bootstrap.servers)")
	addr := fs.String("addr", ":8081", "host:port the REST API listens on (Confluent's listeners)")
	topic := fs.String("topic", schemaregistry.DefaultTopic, "the compacted topic that holds the schemas (Confluent's kafkastore.topic); instances that share it are one registry")
	var rf replicationFactor = -1
	fs.Var(&rf, "replication-factor", "replication factor of --topic when the registry creates it; -1 takes the broker's default (kafkastore.topic.replication.factor)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long one request may wait for Kafka before it is answered 500 with error_code 50002 (kafkastore.timeout.ms)")
	usersFile := fs.String("users-file", "", "a file of user=password lines: every request then needs basic authentication by one of them (Confluent's authentication.method=BASIC); empty: no authentication")
	var props propsFlag
	fs.Var(&props, "prop", "a Kafka client security key=value (security.protocol, sasl.*, ssl.*, with or without the kafkastore. prefix); repeatable, SLUICE_PROP takes several")
	var lf logFlags
	lf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	seeds := connectors.SplitList(*bootstrap)
	if len(seeds) == 0 {
		return usageError{errors.New("--bootstrap is required")}
	}
	if *timeout <= 0 {
		return usageError{fmt.Errorf("--timeout %v: give a positive duration", *timeout)}
	}
	security, err := kafkastoreSecurity(props.m)
	if err != nil {
		return usageError{err}
	}
	secOpts, err := kafkasec.Options(security)
	if err != nil {
		return usageError{fmt.Errorf("--prop: %v", err)}
	}
	users, err := registryUsers(*usersFile, "--users-file")
	if err != nil {
		return err
	}
	reg, err := startSchemaRegistry(ctx, *addr, users, schemaregistry.Config{
		Kafka: append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, secOpts...),
		Topic: *topic, ReplicationFactor: int16(rf), Timeout: *timeout,
		Log: registryLogger(log),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sluice schema-registry serving %s, schemas in topic %q on %s (Ctrl-C stops it)\n", reg.URL(), *topic, strings.Join(seeds, ","))
	select {
	case <-ctx.Done():
	case err := <-reg.failed:
		reg.Close()
		return err
	}
	log.Info().Msg("stopping schema registry")
	reg.Close()
	return nil
}

// kafkastoreSecurity takes the Kafka client keys of --prop, with
// Confluent's kafkastore. prefix or without, and refuses every other key.
func kafkastoreSecurity(props map[string]string) (map[string]string, error) {
	out := map[string]string{}
	var refused []string
	for k, v := range props {
		key := strings.TrimPrefix(k, "kafkastore.")
		if !kafkasec.IsSecurityKey(key) {
			refused = append(refused, k)
			continue
		}
		out[key] = v
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return nil, fmt.Errorf("--prop %s: only Kafka client security keys (security.protocol, sasl.*, ssl.*) are taken; use the flags for the rest", strings.Join(refused, ", "))
	}
	return out, nil
}

// registryUsers reads the users file a flag names, or nil for none.
func registryUsers(path, flagName string) (*basicauth.Users, error) {
	if path == "" {
		return nil, nil
	}
	users, err := basicauth.LoadUsersFile(path)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: %v", flagName, err)}
	}
	return users, nil
}

// runningRegistry is a schema registry serving HTTP.
type runningRegistry struct {
	reg    *schemaregistry.Registry
	srv    *http.Server
	ln     net.Listener
	failed chan error // the HTTP server stopped on its own
}

// startSchemaRegistry opens the registry (reading its topic to the end)
// and serves it on addr, to the users given (everyone when nil).
func startSchemaRegistry(ctx context.Context, addr string, users *basicauth.Users, cfg schemaregistry.Config) (*runningRegistry, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, usageError{fmt.Errorf("schema registry address %q: %v", addr, err)}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("schema registry cannot listen on %s: %w (is another registry running?)", addr, err)
	}
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	reg, err := schemaregistry.Open(octx, cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	handler := reg.Handler()
	if users != nil {
		handler = schemaregistry.RequireUsers(users, cfg.Log, handler)
	}
	r := &runningRegistry{
		reg: reg, ln: ln, failed: make(chan error, 1),
		srv: &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second},
	}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.failed <- fmt.Errorf("schema registry: %w", err)
		}
	}()
	return r, nil
}

// URL is where clients reach the registry.
func (r *runningRegistry) URL() string {
	host, port, _ := net.SplitHostPort(r.ln.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost" // listening on every address
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Close stops serving, letting requests under way finish for a few
// seconds, and closes the registry's Kafka clients.
func (r *runningRegistry) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	r.reg.Close()
}

// registryLogger is the schema registry's logger in a process that logs
// other components too.
func registryLogger(log zerolog.Logger) zerolog.Logger {
	return log.With().Str("component", "schema-registry").Logger()
}
