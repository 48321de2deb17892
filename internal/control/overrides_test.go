package control_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
)

func withWorker(w connconfig.Worker) func(*control.Options) {
	return func(o *control.Options) { o.Worker = w }
}

// A worker with connector.client.config.override.policy=None refuses every
// client override on create, with Connect's message naming the key, and
// the validate endpoint reports the same on each key.
func TestOverridePolicyNoneRefusesOverrides(t *testing.T) {
	e := controltest.NewEnv(t, withWorker(connconfig.Worker{OverridePolicy: connconfig.PolicyNone}))
	cfg := controltest.SinkConfig("consumer.override.max.poll.records", "10",
		"producer.override.acks", "all", "errors.deadletterqueue.topic.name", "dlq")
	_, err := e.C.Create(ctx(t), "none", cfg, "")
	var ce *control.Error
	if code(err) != 400 || !errors.As(err, &ce) {
		t.Fatalf("create: %v, want 400", err)
	}
	want := map[string]string{
		"consumer.override.max.poll.records": "The 'None' policy does not allow 'max.poll.records' to be overridden in the connector configuration.",
		"producer.override.acks":             "The 'None' policy does not allow 'acks' to be overridden in the connector configuration.",
	}
	if len(ce.Keys) != len(want) {
		t.Errorf("keys %v, want %v", ce.Keys, want)
	}
	for k, msg := range want {
		if !strings.Contains(ce.Message, "\n"+k+": "+msg) {
			t.Errorf("message lacks %s: %s:\n%s", k, msg, ce.Message)
		}
	}

	res, err := e.C.Validate(controltest.SinkClass, cfg)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]string{}
	for _, c := range res.Configs {
		if len(c.Value.Errors) > 0 {
			found[c.Value.Name] = c.Value.Errors
		}
	}
	for k, msg := range want {
		if len(found[k]) != 1 || found[k][0] != msg {
			t.Errorf("validate %s: %v, want %q", k, found[k], msg)
		}
	}

	// The same config on a worker with the default policy (All) is fine.
	all := controltest.NewEnv(t)
	if _, err := all.C.Create(ctx(t), "all", cfg, ""); err != nil {
		t.Fatalf("policy All: %v", err)
	}
}

// Bad override values and topic creation keys are refused on create, each
// by name, like every other key.
func TestCreateRefusesBadOverridesAndTopicCreation(t *testing.T) {
	e := controltest.NewEnv(t)
	_, err := e.C.Create(ctx(t), "bad", controltest.SourceConfig(
		"producer.override.acks", "2", "producer.override.linger.ms", "soon", "producer.override.max.block.ms", "1",
		"topic.creation.groups", "g", "topic.creation.g.include", "x(", "topic.creation.default.partitions", "1"), "")
	var ce *control.Error
	if code(err) != 400 || !errors.As(err, &ce) {
		t.Fatalf("create: %v, want 400", err)
	}
	for _, k := range []string{"producer.override.acks", "producer.override.linger.ms", "producer.override.max.block.ms",
		"topic.creation.g.include", "topic.creation.default.replication.factor"} {
		if len(ce.Keys[k]) == 0 || !strings.Contains(ce.Message, "\n"+k+": ") {
			t.Errorf("%s not named:\n%s", k, ce.Message)
		}
	}
	if len(ce.Keys) != 5 {
		t.Errorf("keys %v, want 5", ce.Keys)
	}
}

// With topic.creation.enable=false the worker ignores topic.creation.*
// keys, as Connect's does, even an incomplete group.
func TestTopicCreationDisabledIgnoresTheKeys(t *testing.T) {
	e := controltest.NewEnv(t, withWorker(connconfig.Worker{TopicCreationDisabled: true}))
	if _, err := e.C.Create(ctx(t), "off", controltest.SourceConfig("topic.creation.groups", "g"), ""); err != nil {
		t.Fatalf("create: %v", err)
	}
}
