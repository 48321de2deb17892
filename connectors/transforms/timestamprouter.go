package transforms

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// TimestampRouter: Connect's TimestampRouter, which sets a record's topic
// from topic.format, replacing ${topic} with the topic and ${timestamp}
// with the record's timestamp formatted by timestamp.format (a Java
// SimpleDateFormat pattern, in UTC). A record without a timestamp fails.
//
// Connect makes the date format on the first record, so a bad
// timestamp.format fails every record; here it is refused at validation.
var _ = addTransform(connectors.TransformPlugin{Class: pkg + "TimestampRouter", New: func() connectors.Transform { return &timestampRouter{} }})

func timestampRouterConfig() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: "topic.format", Type: connectors.TypeString, Default: "${topic}-${timestamp}", Importance: connectors.High,
			Doc: "Format string which can contain <code>${topic}</code> and <code>${timestamp}</code> as placeholders for the topic and timestamp, respectively."}).
		Define(connectors.ConfigKey{Name: "timestamp.format", Type: connectors.TypeString, Default: "yyyyMMdd", Importance: connectors.High,
			Doc: "Format string for the timestamp that is compatible with <code>java.text.SimpleDateFormat</code>.",
			Validate: func(v string) error {
				_, err := compileJavaDateFormat(javaTrim(v), time.Now())
				return err
			}})
}

type timestampRouter struct {
	topicFormat string
	format      *javaDateFormat
}

func (t *timestampRouter) Config() *connectors.ConfigDef { return timestampRouterConfig() }

func (t *timestampRouter) Configure(props map[string]string) error {
	var ok bool
	if t.topicFormat, ok = configString(props, "topic.format"); !ok {
		t.topicFormat = "${topic}-${timestamp}"
	}
	pattern, ok := configString(props, "timestamp.format")
	if !ok {
		pattern = "yyyyMMdd"
	}
	f, err := compileJavaDateFormat(pattern, time.Now())
	if err != nil {
		return keyError("timestamp.format", pattern, err.Error())
	}
	t.format = f
	return nil
}

func (t *timestampRouter) Apply(r *connectors.Record) (*connectors.Record, error) {
	if r.Timestamp.IsZero() {
		return nil, fmt.Errorf("Timestamp missing on record: %s", recordString(r))
	}
	ts := t.format.format(r.Timestamp.UnixMilli())
	topic := strings.ReplaceAll(t.topicFormat, "${topic}", r.Topic)
	topic = strings.ReplaceAll(topic, "${timestamp}", ts)
	out := *r
	out.Topic = topic
	return &out, nil
}

// recordString describes a record in messages as ConnectRecord.toString
// begins; the key and value are left out.
func recordString(r *connectors.Record) string {
	p := "null"
	if r.KafkaPartition != nil {
		p = fmt.Sprint(*r.KafkaPartition)
	}
	kind := "SourceRecord"
	if r.SinkOffset != nil {
		kind = fmt.Sprintf("SinkRecord{kafkaOffset=%d}", *r.SinkOffset)
	}
	return fmt.Sprintf("%s ConnectRecord{topic='%s', kafkaPartition=%s, timestamp=null}", kind, r.Topic, p)
}

func (t *timestampRouter) Close() error { return nil }
