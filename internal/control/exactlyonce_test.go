package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/kafkatest"
	"github.com/sluice-io/sluice/internal/offsets"
	"github.com/sluice-io/sluice/internal/storetest"
)

// fenceRecorder records the fencing rounds the leader asks for.
type fenceRecorder struct {
	mu     sync.Mutex
	rounds []string
}

func (f *fenceRecorder) fence(_ context.Context, name string, tasks int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rounds = append(f.rounds, fmt.Sprintf("%s:%d", name, tasks))
	return nil
}

// Invariant 11: with exactly.once.source.support=preparing (and enabled)
// the leader fences the producers of a source connector's earlier tasks
// before it writes new task configs, and records the task count; a sink's
// task configs fence nothing, and a disabled worker fences nothing.
func TestLeaderFencesEarlierTasksBeforeNewTaskConfigs(t *testing.T) {
	for _, mode := range []connconfig.ExactlyOnceMode{connconfig.ExactlyOncePreparing, connconfig.ExactlyOnceEnabled, connconfig.ExactlyOnceDisabled} {
		t.Run(string(mode), func(t *testing.T) {
			f := &fenceRecorder{}
			e := controltest.NewEnv(t, func(o *control.Options) {
				o.Worker.ExactlyOnce = mode
				o.FenceSources = f.fence
			})
			if _, err := e.C.Create(ctx(t), "src", controltest.SourceConfig(), ""); err != nil {
				t.Fatal(err)
			}
			if _, err := e.C.Create(ctx(t), "snk", controltest.SinkConfig(), ""); err != nil {
				t.Fatal(err)
			}
			three := []map[string]string{{"t": "0"}, {"t": "1"}, {"t": "2"}}
			for _, tasks := range [][]map[string]string{three, three[:1], three[:1], three[:2]} {
				if err := e.C.PutTaskConfigs(ctx(t), "src", tasks); err != nil {
					t.Fatal(err)
				}
				if err := e.C.PutTaskConfigs(ctx(t), "snk", tasks); err != nil {
					t.Fatal(err)
				}
			}
			// Create wrote the first generation (1 task), which had no
			// predecessor; each later one fences as many tasks as ran
			// before it (1, 3, then 1); the same configs again are no
			// new generation.
			want := "src:1 src:3 src:1"
			if !mode.Fences() {
				want = ""
			}
			if got := strings.Join(f.rounds, " "); got != want {
				t.Fatalf("fencing rounds %q, want %q", got, want)
			}
			var counts []string
			for _, c := range e.Configs.Calls() {
				if c.Op == "task-count" {
					counts = append(counts, c.Name)
				}
			}
			if mode.Fences() && strings.Join(counts, " ") != "src src src src" {
				t.Fatalf("task-count records written for %v, want 4 for src", counts)
			}
			if !mode.Fences() && len(counts) > 0 {
				t.Fatalf("task-count records on a disabled worker: %v", counts)
			}
		})
	}
}

// A failed fencing round writes no task configs: the new generation does
// not start while the old one might still commit.
func TestFailedFencingWritesNoTaskConfigs(t *testing.T) {
	e := controltest.NewEnv(t, func(o *control.Options) {
		o.Worker.ExactlyOnce = connconfig.ExactlyOnceEnabled
		o.FenceSources = func(context.Context, string, int) error { return errors.New("coordinator unavailable") }
	})
	if _, err := e.C.Create(ctx(t), "src", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	err := e.C.PutTaskConfigs(ctx(t), "src", []map[string]string{{"t": "0"}, {"t": "1"}})
	if err == nil || !strings.Contains(err.Error(), "fencing the earlier tasks of connector src") {
		t.Fatalf("error %v", err)
	}
	if got := len(e.Configs.ConfigLog.Snapshot().Connectors["src"].Tasks); got != 1 {
		t.Fatalf("%d task configs after the failed fencing, want the old 1", got)
	}
}

// Bad input: exactly.once.support=required on a worker without
// exactly-once support is a 400 naming the key, on create and validate.
func TestRequiredExactlyOnceOnADisabledWorkerIs400(t *testing.T) {
	e := controltest.NewEnv(t)
	_, err := e.C.Create(ctx(t), "src", controltest.SourceConfig("exactly.once.support", "required"), "")
	var ce *control.Error
	if !errors.As(err, &ce) || ce.Code != 400 || len(ce.Keys["exactly.once.support"]) == 0 ||
		!strings.Contains(ce.Keys["exactly.once.support"][0], "does not have exactly-once source support enabled") {
		t.Fatalf("create: %v", err)
	}
	infos, err := e.C.Validate(controltest.SourceClass, controltest.SourceConfig("exactly.once.support", "required", "transaction.boundary", "sometimes"))
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]bool{}
	for _, c := range infos.Configs {
		if len(c.Value.Errors) > 0 {
			bad[c.Value.Name] = true
		}
	}
	if !bad["exactly.once.support"] || !bad["transaction.boundary"] {
		t.Fatalf("validate flags %v, want exactly.once.support and transaction.boundary", bad)
	}
}

// Before a stopped source connector's offsets change on a worker that
// fences, its last generation of tasks is fenced, as Connect does: a zombie
// could otherwise commit its offsets over the new ones.
func TestOffsetsChangesFenceTheLastGeneration(t *testing.T) {
	f := &fenceRecorder{}
	k := storetest.Start(t, "eosoffs")
	c := controltest.OffsetsController(t, k.Configs, k.Statuses, k.Offsets, k.Admin, func(o *control.Options) {
		o.Worker.ExactlyOnce = connconfig.ExactlyOnceEnabled
		o.FenceSources = f.fence
	})
	name := kafkatest.Unique("src")
	if _, err := c.Create(ctx(t), name, controltest.SourceConfig(), control.InitialRunning); err != nil {
		t.Fatal(err)
	}
	if err := c.PutTaskConfigs(ctx(t), name, []map[string]string{{"t": "0"}, {"t": "1"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx(t), name); err != nil {
		t.Fatal(err)
	}
	f.rounds = nil
	if _, err := c.AlterOffsets(ctx(t), name, []control.ConnectorOffset{
		{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": json.Number("3")}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetOffsets(ctx(t), name); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(f.rounds, " "), name+":2 "+name+":2"; got != want {
		t.Fatalf("fencing rounds %q, want %q", got, want)
	}
}

// The offsets API of a source with its own offsets topic reads and writes
// that topic (over the worker's).
func TestOffsetsOfASourceWithItsOwnOffsetsTopic(t *testing.T) {
	k := storetest.Start(t, "ownoffsapi")
	stores := offsets.NewTopicStores(k.Opts, func(ctx context.Context, topic string) error {
		resp, err := k.Admin.CreateTopic(ctx, 1, -1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		return err
	}, k.Log)
	t.Cleanup(stores.Close)
	c := controltest.OffsetsController(t, k.Configs, k.Statuses, k.Offsets, k.Admin, func(o *control.Options) {
		o.Offsets = offsets.NewConnectorOffsets(k.Offsets, stores, k.Admin)
	})
	name, own := kafkatest.Unique("src"), kafkatest.Unique("src-offsets")
	if _, err := c.Create(ctx(t), name, controltest.SourceConfig("offsets.storage.topic", own), control.InitialStopped); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AlterOffsets(ctx(t), name, []control.ConnectorOffset{
		{Partition: map[string]any{"filename": "/a"}, Offset: map[string]any{"position": json.Number("3")}},
	}); err != nil {
		t.Fatal(err)
	}
	store, err := stores.Open(ctx(t), own)
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := store.Offset(name, map[string]any{"filename": "/a"}); off["position"] != int64(3) {
		t.Fatalf("the connector's topic holds %v", off)
	}
	got, err := c.Offsets(ctx(t), name)
	if err != nil || len(got.Offsets) != 1 || got.Offsets[0].Offset["position"] != int64(3) {
		t.Fatalf("offsets %+v, %v", got, err)
	}
}
