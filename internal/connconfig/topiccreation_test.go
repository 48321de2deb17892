package connconfig

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

func TestTopicCreationGroupsPickTheFirstMatch(t *testing.T) {
	r := mustParse(t, Worker{}, connectors.Source, map[string]string{
		TopicCreationGroups:                        "compacted, orders, default",
		TopicCreationDefaultPartitions:             "3",
		TopicCreationDefaultReplicationFactor:      "-1",
		"topic.creation.default.retention.ms":      "86400000",
		"topic.creation.compacted.include":         "state\\..*, .*-changelog",
		"topic.creation.compacted.exclude":         "state\\.tmp.*",
		"topic.creation.compacted.partitions":      "1",
		"topic.creation.compacted.cleanup.policy":  "compact",
		"topic.creation.orders.include":            "orders.*",
		"topic.creation.orders.replication.factor": "1",
	})
	tc := r.TopicCreation
	if !tc.Enabled || len(tc.Groups) != 2 || tc.Groups[0].Name != "compacted" || tc.Groups[1].Name != "orders" {
		t.Fatalf("groups %+v", tc)
	}
	for topic, want := range map[string]struct {
		group      string
		partitions int32
		rf         int16
		configs    map[string]string
	}{
		"state.users":   {"compacted", 1, -1, map[string]string{"cleanup.policy": "compact"}},
		"x-changelog":   {"compacted", 1, -1, map[string]string{"cleanup.policy": "compact"}},
		"state.tmp.a":   {"default", 3, -1, map[string]string{"retention.ms": "86400000"}}, // excluded
		"orders":        {"orders", 3, 1, nil},                                             // partitions from default
		"orders-2024":   {"orders", 3, 1, nil},
		"my-orders":     {"default", 3, -1, map[string]string{"retention.ms": "86400000"}}, // whole-name match only
		"state.users.x": {"compacted", 1, -1, map[string]string{"cleanup.policy": "compact"}},
		"other":         {"default", 3, -1, map[string]string{"retention.ms": "86400000"}},
	} {
		g := tc.GroupFor(topic)
		if g.Name != want.group || g.Partitions != want.partitions || g.ReplicationFactor != want.rf || !reflect.DeepEqual(g.Configs, want.configs) {
			t.Errorf("%s: group %s %d/%d %v, want %+v", topic, g.Name, g.Partitions, g.ReplicationFactor, g.Configs, want)
		}
	}
}

// Connect creates topics only when the worker allows it and the config has
// a topic.creation.* key; otherwise the broker's auto-creation applies.
func TestTopicCreationEnabledAsConnectDecides(t *testing.T) {
	full := map[string]string{TopicCreationDefaultPartitions: "2", TopicCreationDefaultReplicationFactor: "1"}
	for _, tc := range []struct {
		name   string
		w      Worker
		typ    connectors.Type
		config map[string]string
		want   bool
	}{
		{"no keys", Worker{}, connectors.Source, map[string]string{}, false},
		{"default group", Worker{}, connectors.Source, full, true},
		{"worker disabled", Worker{TopicCreationDisabled: true}, connectors.Source, full, false},
		{"sink", Worker{}, connectors.Sink, map[string]string{Topics: "in", TopicCreationGroups: "g"}, false},
	} {
		r := mustParse(t, tc.w, tc.typ, tc.config)
		if r.TopicCreation.Enabled != tc.want {
			t.Errorf("%s: enabled %v, want %v", tc.name, r.TopicCreation.Enabled, tc.want)
		}
	}
	// With topic creation disabled on the worker, Connect ignores the
	// keys, even incomplete ones.
	if ce := Validate(Worker{TopicCreationDisabled: true}, connectors.Source, map[string]string{TopicCreationGroups: "g"}); ce != nil {
		t.Errorf("worker disabled: %v", ce)
	}
}

func TestTopicCreationRefusedNamingTheKey(t *testing.T) {
	def := map[string]string{TopicCreationDefaultPartitions: "1", TopicCreationDefaultReplicationFactor: "1"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range def {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<unset>" {
				delete(m, kv[i])
				continue
			}
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		config map[string]string
		want   map[string]string // key -> part of its error
	}{
		{"default required", map[string]string{TopicCreationGroups: "g", "topic.creation.g.include": "a"}, map[string]string{
			TopicCreationDefaultPartitions:        `Missing required configuration "topic.creation.default.partitions" which has no default value.`,
			TopicCreationDefaultReplicationFactor: `Missing required configuration "topic.creation.default.replication.factor"`,
		}},
		{"only a topic config", with(TopicCreationDefaultPartitions, "<unset>", "topic.creation.default.cleanup.policy", "compact"),
			map[string]string{TopicCreationDefaultPartitions: "Missing required configuration"}},
		{"zero partitions", with(TopicCreationDefaultPartitions, "0"), map[string]string{
			TopicCreationDefaultPartitions: "Number of partitions must be positive, or -1 to use the broker's default"}},
		{"bad replication", with(TopicCreationDefaultReplicationFactor, "40000"), map[string]string{
			TopicCreationDefaultReplicationFactor: "Replication factor must be positive"}},
		{"group partitions", with(TopicCreationGroups, "g", "topic.creation.g.include", "a", "topic.creation.g.partitions", "-2"),
			map[string]string{"topic.creation.g.partitions": "Number of partitions must be positive"}},
		{"bad regex", with(TopicCreationGroups, "g", "topic.creation.g.include", "a((", "topic.creation.g.exclude", "b["),
			map[string]string{"topic.creation.g.include": "Syntax error in regular expression", "topic.creation.g.exclude": "Syntax error"}},
		{"group without include", with(TopicCreationGroups, "g", "topic.creation.g.partitions", "4"),
			map[string]string{"topic.creation.g.include": "would match no topic"}},
		{"group not listed", with("topic.creation.other.partitions", "4"),
			map[string]string{"topic.creation.other.partitions": `group "other" is not listed in topic.creation.groups`}},
		{"default include", with("topic.creation.default.include", "x.*"),
			map[string]string{"topic.creation.default.include": "ignores its include and exclude"}},
		{"worker key", with("topic.creation.enable", "true"),
			map[string]string{"topic.creation.enable": "is a worker setting"}},
		{"no setting", with("topic.creation.stray", "1"),
			map[string]string{"topic.creation.stray": "is not a topic creation key"}},
		{"duplicate group", with(TopicCreationGroups, "g,g", "topic.creation.g.include", "a"),
			map[string]string{TopicCreationGroups: "duplicate alias"}},
	} {
		ce := Validate(Worker{}, connectors.Source, tc.config)
		// topic.creation.groups' own check is ConfigDef's.
		for _, v := range ConfigDef(connectors.Source).Validate(tc.config) {
			if v.Name != TopicCreationGroups {
				continue
			}
			for _, e := range v.Errors {
				if ce == nil {
					ce = &connectors.ConfigError{}
				}
				ce.Add(v.Name, e)
			}
		}
		if ce == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if len(ce.Errors) != len(tc.want) {
			t.Errorf("%s: errors %v, want on %v", tc.name, ce.Errors, tc.want)
		}
		for k, sub := range tc.want {
			if !strings.Contains(strings.Join(ce.Errors[k], "|"), sub) {
				t.Errorf("%s: %s: %v, want %q", tc.name, k, ce.Errors[k], sub)
			}
		}
	}
}

// A group named with a dot still owns its keys.
func TestTopicCreationGroupWithADot(t *testing.T) {
	r := mustParse(t, Worker{}, connectors.Source, map[string]string{
		TopicCreationGroups: "a, a.b", TopicCreationDefaultPartitions: "1", TopicCreationDefaultReplicationFactor: "1",
		"topic.creation.a.include": "x", "topic.creation.a.b.include": "y", "topic.creation.a.b.partitions": "7",
	})
	if g := r.TopicCreation.GroupFor("y"); g.Name != "a.b" || g.Partitions != 7 {
		t.Errorf("y: %+v", g)
	}
	if g := r.TopicCreation.GroupFor("x"); g.Name != "a" || g.Partitions != 1 || g.Configs != nil {
		t.Errorf("x: %+v", g)
	}
}
