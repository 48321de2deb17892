package postgrescdc

import (
	"crypto/rand"
	"fmt"

	"github.com/sluice-io/sluice/connectors"
)

// Debezium's context headers (extended.headers.enabled), which say which
// connector and which run of its task wrote a record.
const (
	logicalNameHeader   = "__debezium.context.connectorLogicalName"
	taskIDHeader        = "__debezium.context.taskId"
	connectorNameHeader = "__debezium.context.connectorName"
	runIDHeader         = "__debezium.context.runId"
)

// contextHeaders are the headers Debezium puts on every change event and
// tombstone when extended.headers.enabled is true: the topic prefix, the
// task id (the connector has one task, 0), the connector's short name and
// a random id of this run of the task.
func contextHeaders(prefix, runID string) []connectors.Header {
	return []connectors.Header{
		{Key: logicalNameHeader, Schema: connectors.StringSchema, Value: prefix},
		{Key: taskIDHeader, Schema: connectors.StringSchema, Value: "0"},
		{Key: connectorNameHeader, Schema: connectors.StringSchema, Value: "postgresql"},
		{Key: runIDHeader, Schema: connectors.StringSchema, Value: runID},
	}
}

// newRunID returns a random (version 4) UUID: Debezium's run id is one,
// new at each start of the task.
func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
