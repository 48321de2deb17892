package connectors_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/builtin"
	"github.com/sluice-io/sluice/connectors/conformance"
)

// Counter is a whole source connector: it writes the numbers 0, 1, 2, ...
// below "to" into "topic", one task, and stores the last number written as
// its source offset, so that a task restarted anywhere continues after it.

var counterConfig = connectors.NewConfigDef().
	Define(connectors.ConfigKey{Name: "topic", Required: true, Importance: connectors.High,
		Doc: "The topic to write the numbers to", Validate: connectors.NonEmpty}).
	Define(connectors.ConfigKey{Name: "to", Type: connectors.TypeLong, Default: "1000",
		Doc: "Count up to this number, exclusive", Validate: connectors.AtLeast(0)})

// counter splits the job: there is one sequence, so one task.
type counter struct{ config map[string]string }

func (c *counter) Config() *connectors.ConfigDef { return counterConfig }
func (c *counter) Start(_ context.Context, _ connectors.ConnectorContext, config map[string]string) error {
	c.config = config
	return nil
}
func (c *counter) TaskConfigs(context.Context, int) ([]map[string]string, error) {
	return []map[string]string{c.config}, nil
}
func (c *counter) Stop() error                    { return nil }
func (c *counter) NewTask() connectors.SourceTask { return &counterTask{} }

// counterTask moves the data: Poll returns records, the runtime does the rest.
type counterTask struct {
	topic     string
	next, to  int64
	partition map[string]any // the one source partition, as offsets are keyed
}

func (t *counterTask) Open(_ context.Context, tc connectors.SourceTaskContext, config map[string]string) error {
	cfg, err := counterConfig.Parse(config)
	if err != nil {
		return err
	}
	t.topic, t.to, t.partition = cfg.String("topic"), cfg.Long("to"), map[string]any{"counter": "n"}
	off, err := tc.Offset(t.partition) // nil the first time
	if err != nil {
		return err
	}
	switch n := off["n"].(type) {
	case int64: // as the runtime hands integers back
		t.next = n + 1
	case float64: // after a plain JSON round trip, as in the conformance suite
		t.next = int64(n) + 1
	}
	return nil
}

func (t *counterTask) Poll(ctx context.Context) ([]*connectors.SourceRecord, error) {
	if t.next >= t.to {
		<-ctx.Done() // nothing more: wait, but never past Poll's deadline
		return nil, nil
	}
	var recs []*connectors.SourceRecord
	for ; t.next < t.to && len(recs) < 100; t.next++ {
		recs = append(recs, &connectors.SourceRecord{
			Partition: t.partition, Offset: map[string]any{"n": t.next},
			Topic: t.topic, ValueSchema: connectors.Int64Schema, Value: t.next,
		})
	}
	return recs, nil
}

func (t *counterTask) Commit(context.Context) error { return nil }
func (t *counterTask) Close() error                 { return nil }

// counterPlugin names the connector: configs say connector.class=Counter
// (or CounterConnector, or the full class name).
func counterPlugin() connectors.Plugin {
	return connectors.Plugin{Class: "com.example.CounterConnector", Type: connectors.Source, Version: "1.0.0",
		New: func() connectors.Connector { return &counter{} }}
}

// A source connector of your own, added to the built-in ones. A worker
// started with this registry (sluice.Config.Registry) runs it like any
// other: see examples/custombinary.
func Example_sourceConnector() {
	reg := builtin.Registry()
	if err := reg.Register(counterPlugin()); err != nil {
		panic(err)
	}
	p, err := reg.Lookup("Counter")
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Class, p.Type, p.Version)
	fmt.Println(p.Names())
	// A config without its required topic is refused before anything runs.
	_, err = p.New().Config().Parse(map[string]string{"to": "10"})
	fmt.Println(err)
	// Output:
	// com.example.CounterConnector source 1.0.0
	// [com.example.CounterConnector CounterConnector Counter]
	// 1 invalid config key(s): topic: Missing required configuration "topic" which has no default value.
}

// The example connector passes the suite every connector passes.
func TestExampleSourceConnectorConformance(t *testing.T) {
	conformance.RunSource(t, conformance.SourceHarness{
		Plugin: counterPlugin(),
		Config: func(t *testing.T) map[string]string { return map[string]string{"topic": "numbers", "to": "0"} },
		// Counter's upstream is its limit: n more records is a limit n higher.
		Produce: func(t *testing.T, cfg map[string]string, n int) {
			to, err := strconv.Atoi(cfg["to"])
			if err != nil {
				t.Fatal(err)
			}
			cfg["to"] = strconv.Itoa(to + n)
		},
		Identity: func(r *connectors.SourceRecord) (string, int64, error) {
			n, ok := r.Value.(int64)
			if !ok || r.Offset["n"] != n {
				return "", 0, fmt.Errorf("value %v does not match offset %v", r.Value, r.Offset)
			}
			return fmt.Sprint(r.Partition["counter"]), n, nil
		},
	})
}
