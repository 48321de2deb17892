package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/proctest"
)

// stockDistributedProperties is Kafka Connect's config/connect-distributed.properties
// as an operator edits it for a test box: its keys and comments, this test's
// broker, group, topics and REST port, replication factor 1, and converters
// without schemas. Placeholders: bootstrap, group, the three topics, the
// REST address.
const stockDistributedProperties = `# Licensed to the Apache Software Foundation (ASF) under one or more
# contributor license agreements.  (The stock file's header, shortened.)

# This file contains some of the configurations for the Kafka Connect distributed worker.

# A list of host/port pairs to use for establishing the initial connection to the Kafka cluster.
bootstrap.servers=%s

# unique name for the cluster, used in forming the Connect cluster group. Note that this must not conflict with consumer group IDs
group.id=%s

# The converters specify the format of data in Kafka and how to translate it into Connect data.
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
# Converter-specific settings can be passed in by prefixing the Converter's setting with the converter we want to apply
# it to
key.converter.schemas.enable=false
value.converter.schemas.enable=false

# Topic to use for storing offsets. This topic should have many partitions and be replicated and compacted.
offset.storage.topic=%s
offset.storage.replication.factor=1
#offset.storage.partitions=25

# Topic to use for storing connector and task configurations; note that this should be a single partition, highly replicated,
# and compacted topic.
config.storage.topic=%s
config.storage.replication.factor=1

# Topic to use for storing statuses.
status.storage.topic=%s
status.storage.replication.factor=1
#status.storage.partitions=5

# Flush much faster than normal, which is useful for testing/debugging
offset.flush.interval.ms=1000

# List of comma-separated URIs the REST API will listen on.
listeners=HTTP://%s

# The Hostname & Port that will be given out to other workers to connect to i.e. URLs that are routable from other servers.
#rest.advertised.host.name=
#rest.advertised.port=

# Set to a list of filesystem paths separated by commas (,) to enable class loading isolation for plugins
plugin.path=/usr/share/java,/usr/local/share/kafka/plugins
`

// TestWorkerRunsAStockConnectPropertiesFile starts `sluice worker --config`
// with a connect-distributed.properties file and nothing else, creates a
// FileStreamSource over REST, and checks that it runs and that the file's
// keys were honoured: the internal topics by their names, the worker's
// JsonConverter without schemas for the records, the REST listener, and
// Connect's worker id (the advertised host:port).
func TestWorkerRunsAStockConnectPropertiesFile(t *testing.T) {
	c := startCluster(t, "connect-cluster")
	dir := t.TempDir()
	rest := proctest.FreeAddr(t)
	configs, offsetsTopic, statusTopic := c.topic("connect-configs"), c.topic("connect-offsets"), c.topic("connect-status")
	props := filepath.Join(dir, "connect-distributed.properties")
	body := fmt.Sprintf(stockDistributedProperties, c.bootstrap, c.name, offsetsTopic, configs, statusTopic, rest)
	if err := os.WriteFile(props, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	w := startProc(t, "worker", nil, "worker", "--config", props)
	waitHealthy(t, w, rest)
	if logs := w.StderrText(); !strings.Contains(logs, `plugin.path`) || !strings.Contains(logs, "no effect in Sluice") {
		t.Errorf("plugin.path is not logged as ignored:\n%s", proctest.Tail(w.Stderr, 20))
	}

	in, topic := filepath.Join(dir, "in.txt"), c.topic("lines")
	writeLines(t, in, 20)
	createOn(t, rest, "file-source", map[string]string{"connector.class": fileSourceClass, "file": in, "topic": topic})
	var st proctest.Status
	waitFor(t, w.FailIfExited, stateDeadline, 100*time.Millisecond, "file-source RUNNING", func() (bool, string) {
		code, b, err := send("GET", "http://"+rest+"/connectors/file-source/status", "")
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("%d %s %v", code, b, err)
		}
		st = proctest.Status{}
		_ = json.Unmarshal(b, &st)
		return st.Running(), string(b)
	})
	if st.Tasks[0].WorkerID != rest {
		t.Errorf("task runs on worker %q, want Connect's worker id, the advertised REST address %s", st.Tasks[0].WorkerID, rest)
	}

	// JsonConverter with schemas.enable=false, from the worker's keys:
	// each line is a JSON string, with no schema envelope.
	cl := kafkatest.NewConsumer(t, []kgo.Opt{kgo.SeedBrokers(strings.Split(c.bootstrap, ",")...)}, []string{topic})
	var values []string
	kafkatest.ConsumeUntilIdle(cl, 3, time.Now().Add(stateDeadline), func(r *kgo.Record) { values = append(values, string(r.Value)) })
	if len(values) != 20 {
		t.Fatalf("%d records, want 20: %q", len(values), values)
	}
	for _, v := range values {
		var line string
		if err := json.Unmarshal([]byte(v), &line); err != nil || !strings.HasPrefix(line, "line ") {
			t.Fatalf("record %q is not a line as a JSON string (JsonConverter, schemas.enable=false)", v)
		}
	}

	adm := kafkatest.NewAdmin(t, []kgo.Opt{kgo.SeedBrokers(strings.Split(c.bootstrap, ",")...)})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	details, err := adm.ListTopics(ctx, configs, offsetsTopic, statusTopic)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{configs, offsetsTopic, statusTopic} {
		if d, ok := details[name]; !ok || d.Err != nil {
			t.Errorf("internal topic %s from the file: %v", name, d.Err)
		}
	}
	if code := w.Terminate(); code != 0 {
		t.Fatalf("sluice worker exited %d on SIGTERM, want 0", code)
	}
}
