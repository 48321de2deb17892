// Package file holds FileStreamSource and FileStreamSink, ports of Kafka
// Connect's file connectors with the same config keys and offsets, so that a
// Connect config for them runs on Sluice unchanged.
package file

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// Class names are Connect's, so configs written for Connect find these plugins.
const (
	SourceClass = "org.apache.kafka.connect.file.FileStreamSourceConnector"
	SinkClass   = "org.apache.kafka.connect.file.FileStreamSinkConnector"
	Version     = "1.0.0"
)

// Config keys and offset fields, as Connect names them.
const (
	FileKey      = "file"
	TopicKey     = "topic"
	BatchSizeKey = "batch.size"

	FilenameField = "filename"
	PositionField = "position"

	DefaultBatchSize = 2000
)

// SourcePlugin describes FileStreamSource.
func SourcePlugin() connectors.Plugin {
	return connectors.Plugin{
		Class:   SourceClass,
		Type:    connectors.Source,
		Version: Version,
		New:     func() connectors.Connector { return &SourceConnector{} },
	}
}

// SinkPlugin describes FileStreamSink.
func SinkPlugin() connectors.Plugin {
	return connectors.Plugin{
		Class:   SinkClass,
		Type:    connectors.Sink,
		Version: Version,
		New:     func() connectors.Connector { return &SinkConnector{} },
	}
}

func singleTopic(v string) error {
	if strings.Contains(v, ",") {
		return fmt.Errorf("'topic' in FileStreamSourceConnector configuration requires definition of a single topic")
	}
	return connectors.NonEmpty(v)
}

// SourceConfigDef returns the keys FileStreamSource accepts.
func SourceConfigDef() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{
			Name: FileKey, Type: connectors.TypeString, Importance: connectors.High,
			Doc: "Source filename. If not specified, the standard input will be used",
		}).
		Define(connectors.ConfigKey{
			Name: TopicKey, Type: connectors.TypeString, Required: true, Importance: connectors.High,
			Doc:      "The topic to publish data to",
			Validate: singleTopic,
		}).
		Define(connectors.ConfigKey{
			Name: BatchSizeKey, Type: connectors.TypeInt, Default: fmt.Sprint(DefaultBatchSize), Importance: connectors.Low,
			Doc:      "The maximum number of records the source task can read from the file each time it is polled",
			Validate: connectors.AtLeast(1),
		})
}

// SinkConfigDef returns the keys FileStreamSink accepts. The runtime owns
// `topics` and `topics.regex`, as in Connect.
func SinkConfigDef() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{
			Name: FileKey, Type: connectors.TypeString, Importance: connectors.High,
			Doc: "Destination filename. If not specified, the standard output will be used",
		})
}

// SourceConnector is FileStreamSourceConnector: one task reads one file.
type SourceConnector struct {
	config map[string]string
}

func (c *SourceConnector) Config() *connectors.ConfigDef { return SourceConfigDef() }

func (c *SourceConnector) Start(_ context.Context, _ connectors.ConnectorContext, config map[string]string) error {
	if _, err := SourceConfigDef().Parse(config); err != nil {
		return err
	}
	c.config = maps.Clone(config)
	return nil
}

// ExactlyOnceSupport is true when the connector reads a file, as Connect's
// FileStreamSourceConnector says: a task resumes at the byte position of
// its last committed offset, so a file that is only appended to is read
// exactly once. Standard input (no file) cannot be read again.
func (c *SourceConnector) ExactlyOnceSupport(config map[string]string) bool {
	return strings.TrimSpace(config[FileKey]) != ""
}

// TaskConfigs returns one config whatever maxTasks is: a file has a single
// reader position, so a second task could only duplicate lines.
func (c *SourceConnector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	if maxTasks < 1 {
		return nil, fmt.Errorf("tasks.max must be at least 1, got %d", maxTasks)
	}
	return []map[string]string{maps.Clone(c.config)}, nil
}

func (c *SourceConnector) Stop() error { return nil }

func (c *SourceConnector) NewTask() connectors.SourceTask { return &SourceTask{} }

// SinkConnector is FileStreamSinkConnector. Like Connect's it hands every task
// the same config: tasks append to the same file.
type SinkConnector struct {
	config map[string]string
}

func (c *SinkConnector) Config() *connectors.ConfigDef { return SinkConfigDef() }

func (c *SinkConnector) Start(_ context.Context, _ connectors.ConnectorContext, config map[string]string) error {
	if _, err := SinkConfigDef().Parse(config); err != nil {
		return err
	}
	c.config = maps.Clone(config)
	return nil
}

func (c *SinkConnector) TaskConfigs(_ context.Context, maxTasks int) ([]map[string]string, error) {
	if maxTasks < 1 {
		return nil, fmt.Errorf("tasks.max must be at least 1, got %d", maxTasks)
	}
	out := make([]map[string]string, maxTasks)
	for i := range out {
		out[i] = maps.Clone(c.config)
	}
	return out, nil
}

func (c *SinkConnector) Stop() error { return nil }

func (c *SinkConnector) NewTask() connectors.SinkTask { return &SinkTask{} }

// AlterOffsets checks offsets an operator sets, as Connect's
// FileStreamSourceConnector does: a partition names its file, an offset is
// null or a non-negative position. The connector keeps nothing outside the
// offsets topic, so it vouches for the change (true).
func (c *SourceConnector) AlterOffsets(_ map[string]string, changes []connectors.OffsetChange) (bool, error) {
	for _, ch := range changes {
		if ch.Partition == nil {
			return false, fmt.Errorf("partition objects cannot be null")
		}
		if _, ok := ch.Partition[FilenameField].(string); !ok {
			return false, fmt.Errorf("partition objects should contain the key '%s' with the file name", FilenameField)
		}
		if ch.Offset == nil {
			continue
		}
		pos, ok := ch.Offset[PositionField]
		if !ok {
			return false, fmt.Errorf("offset objects should either be null or contain the key '%s'", PositionField)
		}
		if n, err := strconv.ParseInt(fmt.Sprint(pos), 10, 64); err != nil || n < 0 {
			return false, fmt.Errorf("the value for the '%s' key in the offset is expected to be a non-negative integer, not %v", PositionField, pos)
		}
	}
	return true, nil
}

// AlterOffsets accepts any consumer offsets: the sink keeps none of its
// own (Connect's FileStreamSinkConnector answers the same).
func (c *SinkConnector) AlterOffsets(map[string]string, []connectors.OffsetChange) (bool, error) {
	return true, nil
}
