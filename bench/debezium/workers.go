package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/bench/internal/benchproc"
)

// jsonConverter is Connect's JSON converter with its schema envelope, for
// keys and values on both systems: Debezium's documented default.
const jsonConverter = "org.apache.kafka.connect.json.JsonConverter"

// system starts a worker that runs one connector with a Debezium config.
type system interface {
	name() string
	// start starts a fresh worker in dir running the connector named
	// name with config, and returns its process.
	start(dir, name string, config map[string]string) (*benchproc.Process, error)
}

// debezium is Debezium's PostgreSQL connector in an Apache Kafka Connect
// standalone worker, one JVM per run, from the jars test/debezium/pom.xml
// names (test/debezium/connect.sh resolves them with Maven).
type debezium struct {
	classpath string
	heap      string
	bootstrap string
}

func (debezium) name() string { return "Debezium" }

func newDebezium(repo, bootstrap, heap string) (*debezium, error) {
	out, err := exec.Command("bash", filepath.Join(repo, "test/debezium/connect.sh"), "classpath").Output()
	if err != nil {
		return nil, fmt.Errorf("test/debezium/connect.sh classpath: %w", err)
	}
	cp, err := os.ReadFile(strings.TrimSpace(string(out)))
	if err != nil {
		return nil, err
	}
	return &debezium{classpath: strings.TrimSpace(string(cp)), heap: heap, bootstrap: bootstrap}, nil
}

func (d *debezium) start(dir, name string, config map[string]string) (*benchproc.Process, error) {
	port, err := benchproc.FreePort()
	if err != nil {
		return nil, err
	}
	worker := map[string]string{
		"bootstrap.servers":              d.bootstrap,
		"key.converter":                  jsonConverter,
		"value.converter":                jsonConverter,
		"key.converter.schemas.enable":   "true",
		"value.converter.schemas.enable": "true",
		"offset.storage.file.filename":   filepath.Join(dir, "offsets"),
		"listeners":                      fmt.Sprintf("http://127.0.0.1:%d", port),
	}
	connector := maps.Clone(config)
	connector["name"] = name
	wp, cp := filepath.Join(dir, "worker.properties"), filepath.Join(dir, "connector.properties")
	if err := writeProps(wp, worker); err != nil {
		return nil, err
	}
	if err := writeProps(cp, connector); err != nil {
		return nil, err
	}
	// The JVM options of kafka-run-class.sh and connect-standalone.sh's
	// heap (-Xms256M -Xmx2G unless --connect-heap says otherwise).
	return benchproc.Start("connect", filepath.Join(dir, "connect.log"), benchproc.Options{}, "java", "-Xms256M", "-Xmx"+d.heap,
		"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
		"-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true",
		"-cp", d.classpath, "org.apache.kafka.connect.cli.ConnectStandalone", wp, cp)
}

func writeProps(path string, props map[string]string) error {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		// Backslashes are escapes in a properties file.
		fmt.Fprintf(&b, "%s=%s\n", k, strings.ReplaceAll(props[k], `\`, `\\`))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// sluice is Sluice's connector in a `sluice worker` of a cluster of its
// own, one process per run.
type sluice struct {
	bin       string
	bootstrap string
	props     []string // key=value: more worker properties (--sluice-prop)
	env       []string // NAME=value: more environment (--sluice-env)
	runs      int
}

func (*sluice) name() string { return "Sluice" }

func (s *sluice) start(dir, name string, config map[string]string) (*benchproc.Process, error) {
	rest, err := benchproc.FreePort()
	if err != nil {
		return nil, err
	}
	bind, err := benchproc.FreePort()
	if err != nil {
		return nil, err
	}
	s.runs++
	restAddr := "127.0.0.1:" + strconv.Itoa(rest)
	argv := []string{s.bin, "worker",
		"--cluster", fmt.Sprintf("bench-dbz-%d-%d", os.Getpid(), s.runs), "--bootstrap", s.bootstrap,
		"--rest-addr", restAddr, "--bind", "127.0.0.1:" + strconv.Itoa(bind), "--worker-id", "w1",
		"--prop", "key.converter=" + jsonConverter, "--prop", "key.converter.schemas.enable=true",
		"--prop", "value.converter=" + jsonConverter, "--prop", "value.converter.schemas.enable=true"}
	for _, kv := range s.props {
		argv = append(argv, "--prop", kv)
	}
	p, err := benchproc.Start("sluice", filepath.Join(dir, "sluice.log"), benchproc.Options{Env: s.env}, argv...)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(map[string]any{"name": name, "config": config})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Post("http://"+restAddr+"/connectors", "application/json", bytes.NewReader(body))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusCreated {
				return p, nil
			}
			err = fmt.Errorf("POST /connectors: %s", resp.Status)
		}
		if aerr := p.Alive(); aerr != nil {
			return nil, aerr
		}
		if time.Now().After(deadline) {
			p.Stop(30 * time.Second)
			return nil, fmt.Errorf("the sluice worker took no connector within 2 minutes: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
