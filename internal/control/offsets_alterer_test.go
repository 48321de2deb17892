package control_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/storetest"
)

// checkingSource vouches for offsets whose partition names a "shard" and
// refuses the rest; it remembers what it was shown.
type checkingSource struct{ seen *[][]connectors.OffsetChange }

func (checkingSource) Config() *connectors.ConfigDef { return connectors.NewConfigDef() }
func (checkingSource) Start(context.Context, connectors.ConnectorContext, map[string]string) error {
	return nil
}
func (checkingSource) TaskConfigs(context.Context, int) ([]map[string]string, error) { return nil, nil }
func (checkingSource) Stop() error                                                   { return nil }
func (c checkingSource) AlterOffsets(_ map[string]string, ch []connectors.OffsetChange) (bool, error) {
	*c.seen = append(*c.seen, ch)
	for _, x := range ch {
		if _, ok := x.Partition["shard"]; !ok {
			return false, errors.New("a partition names its shard")
		}
	}
	return true, nil
}

// The connector's own check runs before anything is written: a refusal is
// a 400 with its reason, a connector that vouches gets Connect's message
// without the caveat, and a reset shows it every partition with no offset.
func TestConnectorChecksTheOffsetsItIsGiven(t *testing.T) {
	var seen [][]connectors.OffsetChange
	reg := controltest.Registry()
	reg.MustRegister(connectors.Plugin{Class: "com.example.Checking", Type: connectors.Source,
		New: func() connectors.Connector { return checkingSource{seen: &seen} }})
	e := storetest.Start(t, "ctlalter")
	c, err := control.New(control.Options{Configs: e.Configs, Statuses: e.Statuses, Plugins: reg,
		Offsets: offsets.NewConnectorOffsets(e.Offsets, nil, e.Admin), WriteTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	name := kafkatest.Unique("chk")
	if _, err := c.Create(ctx(t), name, map[string]string{"connector.class": "com.example.Checking"}, control.InitialStopped); err != nil {
		t.Fatal(err)
	}
	bad := []control.ConnectorOffset{{Partition: map[string]any{"file": "x"}, Offset: map[string]any{"n": 1}}}
	_, err = c.AlterOffsets(ctx(t), name, bad)
	wantCode(t, err, http.StatusBadRequest, "names its shard")
	if got, _ := c.Offsets(ctx(t), name); len(got.Offsets) != 0 {
		t.Fatalf("a refused change was written: %v", got.Offsets)
	}
	good := []control.ConnectorOffset{{Partition: map[string]any{"shard": "a"}, Offset: map[string]any{"n": 1}}}
	msg, err := c.AlterOffsets(ctx(t), name, good)
	if err != nil || msg.Message != "The offsets for this connector have been altered successfully" {
		t.Fatalf("vouched alter: %q, %v", msg.Message, err)
	}
	msg, err = c.ResetOffsets(ctx(t), name)
	if err != nil || msg.Message != "The offsets for this connector have been reset successfully" {
		t.Fatalf("vouched reset: %q, %v", msg.Message, err)
	}
	last := seen[len(seen)-1]
	if len(last) != 1 || last[0].Partition["shard"] != "a" || last[0].Offset != nil {
		t.Fatalf("reset showed the connector %+v, want partition shard=a with no offset", last)
	}
	// A connector without the hook gets the framework's caveat.
	plain := kafkatest.Unique("plain")
	if _, err := c.Create(ctx(t), plain, controltest.SourceConfig(), control.InitialStopped); err != nil {
		t.Fatal(err)
	}
	if msg, err := c.AlterOffsets(ctx(t), plain, good); err != nil || msg.Message == "The offsets for this connector have been altered successfully" {
		t.Fatalf("alter without the hook: %q, %v; want the caveat", msg.Message, err)
	}
}
