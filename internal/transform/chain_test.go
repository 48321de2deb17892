package transform

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// suffix appends its "suffix" key to the topic; with "fail" set it fails,
// with "drop" it drops the record.
type suffix struct {
	s          string
	fail, drop bool
	closed     *int
}

func (t *suffix) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: "suffix", Required: true}).
		Define(connectors.ConfigKey{Name: "times", Type: connectors.TypeInt, Default: "1", Validate: connectors.AtLeast(1)})
}

func (t *suffix) Configure(c map[string]string) error {
	if c["suffix"] == "refuse" {
		return errors.New("suffix refused")
	}
	t.s, t.fail, t.drop = c["suffix"], c["fail"] == "true", c["drop"] == "true"
	return nil
}

func (t *suffix) Apply(r *connectors.Record) (*connectors.Record, error) {
	switch {
	case t.fail:
		return nil, errors.New("boom")
	case t.drop:
		return nil, nil
	}
	out := *r
	out.Topic += t.s
	return &out, nil
}

func (t *suffix) Close() error { *t.closed++; return nil }

// topicIs matches records whose topic is its "topic" key.
type topicIs struct {
	topic  string
	closed *int
}

func (p *topicIs) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().Define(connectors.ConfigKey{Name: "topic", Required: true})
}
func (p *topicIs) Configure(c map[string]string) error { p.topic = c["topic"]; return nil }
func (p *topicIs) Test(r *connectors.Record) bool      { return r.Topic == p.topic }
func (p *topicIs) Close() error                        { *p.closed++; return nil }

func registry(t *testing.T, closed *int) *connectors.Registry {
	t.Helper()
	r := connectors.NewRegistry()
	if err := r.RegisterTransform(connectors.TransformPlugin{Class: "test.Suffix", New: func() connectors.Transform { return &suffix{closed: closed} }}); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterPredicate(connectors.PredicatePlugin{Class: "test.TopicIs", New: func() connectors.Predicate { return &topicIs{closed: closed} }}); err != nil {
		t.Fatal(err)
	}
	return r
}

// The chain runs transforms in the order of `transforms`; a predicate
// (XOR negate) decides per record whether a transform applies; a dropped
// record ends the chain; a failure names the transform.
func TestChainOrderPredicatesDropsAndErrors(t *testing.T) {
	closed := 0
	reg := registry(t, &closed)
	cfg := map[string]string{
		"transforms": "a, b, c", "predicates": "isT,isTA",
		"transforms.a.type": "Suffix", "transforms.a.suffix": "A",
		"transforms.b.type": "test.Suffix", "transforms.b.suffix": "B", "transforms.b.predicate": "isTA", "transforms.b.negate": "true",
		"transforms.c.type": "test.Suffix", "transforms.c.suffix": "C", "transforms.c.predicate": "isTA",
		"predicates.isT.type": "TopicIs", "predicates.isT.topic": "t",
		"predicates.isTA.type": "test.TopicIs", "predicates.isTA.topic": "tA",
	}
	chain, err := Build(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if chain.Len() != 3 {
		t.Fatalf("chain of %d transforms, want 3", chain.Len())
	}
	// t -> tA (a) -> b skipped (tA matches, negated) -> tAC (c applies).
	out, err := chain.Apply(&connectors.Record{Topic: "t"})
	if err != nil || out == nil || out.Topic != "tAC" {
		t.Fatalf("t through the chain: %+v, %v; want topic tAC", out, err)
	}
	// u -> uA -> uAB (b applies: not tA) -> c skipped.
	if out, _ := chain.Apply(&connectors.Record{Topic: "u"}); out.Topic != "uAB" {
		t.Fatalf("u through the chain: topic %s, want uAB", out.Topic)
	}
	if err := chain.Close(); err != nil || closed != 5 {
		t.Fatalf("close: %v, %d closed, want 3 transforms and 2 predicates", err, closed)
	}

	cfg["transforms.a.drop"] = "true"
	chain, _ = Build(reg, cfg)
	if out, err := chain.Apply(&connectors.Record{Topic: "t"}); out != nil || err != nil {
		t.Fatalf("dropped record: %+v, %v; want nil, nil", out, err)
	}
	delete(cfg, "transforms.a.drop")
	cfg["transforms.c.fail"] = "true"
	chain, _ = Build(reg, cfg)
	_, err = chain.Apply(&connectors.Record{Topic: "t"})
	var te *Error
	if !errors.As(err, &te) || te.Alias != "c" || te.Class != "test.Suffix" || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("failing transform: %v, want an *Error naming c and test.Suffix", err)
	}
}

// Every bad key is named at once, by its full key, and what was built is
// closed again.
func TestBuildNamesEveryBadKey(t *testing.T) {
	closed := 0
	reg := registry(t, &closed)
	cfg := map[string]string{
		"transforms":              "noType,unknown,badKey,undeclared,refused,badNegate",
		"transforms.unknown.type": "com.example.Nope",
		"transforms.badKey.type":  "test.Suffix", "transforms.badKey.suffix": "x", "transforms.badKey.times": "0",
		"transforms.undeclared.type": "test.Suffix", "transforms.undeclared.suffix": "x", "transforms.undeclared.predicate": "nope",
		"transforms.refused.type": "test.Suffix", "transforms.refused.suffix": "refuse",
		"transforms.badNegate.type": "test.Suffix", "transforms.badNegate.suffix": "x", "transforms.badNegate.negate": "maybe",
		"transforms.badNegate.predicate": "p",
		"predicates":                     "p",
		"predicates.p.type":              "test.TopicIs",
	}
	_, err := Build(reg, cfg)
	var ce *connectors.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Build: %v, want a *connectors.ConfigError", err)
	}
	for key, want := range map[string]string{
		"transforms.noType.type":          "Missing required configuration",
		"transforms.unknown.type":         "test.Suffix", // lists the known classes
		"transforms.badKey.times":         "at least 1",
		"transforms.undeclared.predicate": "not declared",
		"transforms.refused.type":         "suffix refused",
		"transforms.badNegate.negate":     "maybe",
		"predicates.p.topic":              "Missing required configuration",
	} {
		if got := strings.Join(ce.Errors[key], "|"); !strings.Contains(got, want) {
			t.Errorf("%s: errors %q, want one containing %q", key, got, want)
		}
	}
	if len(ce.Errors) != 7 {
		t.Errorf("errors on %d keys, want 7: %v", len(ce.Errors), ce)
	}
	// What was instantiated was closed again, none leaks: the transforms
	// badKey, undeclared, refused and badNegate, and the predicate p.
	if closed != 5 {
		t.Errorf("%d closed, want the 5 transforms and predicates instantiated", closed)
	}
}

// Without transforms there is no chain, and records pass unchanged.
func TestNoTransformsNoChain(t *testing.T) {
	chain, err := Build(connectors.NewRegistry(), map[string]string{"transforms": " "})
	if err != nil || chain != nil {
		t.Fatalf("Build: %v, %v; want no chain", chain, err)
	}
	r := &connectors.Record{Topic: "t"}
	if out, err := chain.Apply(r); out != r || err != nil {
		t.Fatalf("nil chain Apply: %v, %v", out, err)
	}
}

// The validate endpoint's definitions of a transform alias: type,
// predicate, negate, then the class's own keys, prefixed and grouped.
func TestDefinitions(t *testing.T) {
	closed := 0
	d := Definitions(registry(t, &closed), map[string]string{
		"transforms": "a,x", "transforms.a.type": "test.Suffix", "transforms.x.type": "unknown",
		"predicates": "p", "predicates.p.type": "test.TopicIs",
	})
	var names []string
	for _, k := range d.Keys() {
		names = append(names, k.Name)
	}
	want := "transforms.a.type transforms.a.predicate transforms.a.negate transforms.a.suffix transforms.a.times " +
		"transforms.x.type transforms.x.predicate transforms.x.negate predicates.p.type predicates.p.topic"
	if strings.Join(names, " ") != want {
		t.Fatalf("keys %v, want %s", names, want)
	}
	if k, _ := d.Key("transforms.a.suffix"); k.Group != "Transforms: a" || !k.Required {
		t.Fatalf("transforms.a.suffix %+v", k)
	}
}

// What Connect's ConnectorConfig refuses, Build refuses too: an alias named
// twice, and negate without a predicate to negate.
func TestBuildRefusesWhatConnectRefuses(t *testing.T) {
	closed := 0
	reg := registry(t, &closed)
	for _, tc := range []struct {
		config map[string]string
		key    string
	}{
		{map[string]string{"transforms": "a,a", "transforms.a.type": "test.Suffix", "transforms.a.suffix": "x"}, "transforms"},
		{map[string]string{"transforms": "a", "transforms.a.type": "test.Suffix", "transforms.a.suffix": "x",
			"predicates": "p,p", "predicates.p.type": "test.TopicIs", "predicates.p.topic": "t"}, "predicates"},
		{map[string]string{"transforms": "a", "transforms.a.type": "test.Suffix", "transforms.a.suffix": "x", "transforms.a.negate": "true"},
			"transforms.a.negate"},
	} {
		_, err := Build(reg, tc.config)
		var ce *connectors.ConfigError
		if !errors.As(err, &ce) || len(ce.Errors[tc.key]) == 0 {
			t.Errorf("%v: %v, want an error on %s", tc.config, err, tc.key)
		}
	}
}
