package connconfig

import (
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

func TestValidName(t *testing.T) {
	good := []string{"a", "file-source", "my connector", "ünïcode", "a.b_c-d", strings.Repeat("x", MaxNameLength)}
	for _, n := range good {
		if err := ValidName(n); err != nil {
			t.Errorf("ValidName(%q) = %v, want nil", n, err)
		}
	}
	bad := []string{"", " lead", "trail ", "\ttab", "new\nline", "nul\x00", "del\x7f", "a/b", "/", ".", "..",
		strings.Repeat("x", MaxNameLength+1), "bad\xffutf8"}
	for _, n := range bad {
		err := ValidName(n)
		if err == nil {
			t.Errorf("ValidName(%q) = nil, want an error", n)
			continue
		}
		if !strings.Contains(err.Error(), "name") {
			t.Errorf("ValidName(%q) = %q, want the message to name the field", n, err)
		}
	}
}

func keyNames(d *connectors.ConfigDef) map[string]connectors.ConfigKey {
	out := map[string]connectors.ConfigKey{}
	for _, k := range d.Keys() {
		out[k.Name] = k
	}
	return out
}

func TestConfigDefKeysPerType(t *testing.T) {
	base := []string{Name, ConnectorClass, TasksMax, KeyConverter, ValueConverter, HeaderConverter, Transforms,
		Predicates, ConfigActionReload, ErrorsRetryTimeout, ErrorsRetryDelayMaxMs, ErrorsTolerance,
		ErrorsLogEnable, ErrorsLogIncludeMessages}
	sinkOnly := []string{Topics, TopicsRegex, DLQTopicName, DLQTopicReplicationFactor, DLQContextHeadersEnable}
	sourceOnly := []string{TopicCreationGroups, ExactlyOnceSupport, TransactionBoundary, OffsetsStorageTopic}

	for _, tc := range []struct {
		typ      connectors.Type
		want     []string
		notWants []string
	}{
		{connectors.Sink, append(append([]string{}, base...), sinkOnly...), sourceOnly},
		{connectors.Source, append(append([]string{}, base...), sourceOnly...), sinkOnly},
		{"", base, append(append([]string{}, sinkOnly...), sourceOnly...)},
	} {
		keys := keyNames(ConfigDef(tc.typ))
		for _, n := range tc.want {
			k, ok := keys[n]
			if !ok {
				t.Errorf("%q: key %s missing", tc.typ, n)
				continue
			}
			if k.Doc == "" || k.Group == "" || k.DisplayName == "" {
				t.Errorf("%q: key %s lacks doc, group or display name: %+v", tc.typ, n, k)
			}
		}
		for _, n := range tc.notWants {
			if _, ok := keys[n]; ok {
				t.Errorf("%q: key %s must not be defined", tc.typ, n)
			}
		}
	}
}

func TestConfigDefDefaultsAndTypes(t *testing.T) {
	keys := keyNames(ConfigDef(connectors.Sink).Merge(ConfigDef(connectors.Source)))
	for _, tc := range []struct {
		name, def string
		typ       connectors.ConfigType
		required  bool
		group     string
	}{
		{Name, "", connectors.TypeString, true, GroupCommon},
		{ConnectorClass, "", connectors.TypeString, true, GroupCommon},
		{TasksMax, "1", connectors.TypeInt, false, GroupCommon},
		{KeyConverter, "", connectors.TypeClass, false, GroupCommon},
		{Transforms, "", connectors.TypeList, false, GroupTransforms},
		{Predicates, "", connectors.TypeList, false, GroupPredicates},
		{ConfigActionReload, "restart", connectors.TypeString, false, GroupCommon},
		{ErrorsRetryTimeout, "0", connectors.TypeLong, false, GroupErrorHandling},
		{ErrorsRetryDelayMaxMs, "60000", connectors.TypeLong, false, GroupErrorHandling},
		{ErrorsTolerance, "none", connectors.TypeString, false, GroupErrorHandling},
		{ErrorsLogEnable, "false", connectors.TypeBoolean, false, GroupErrorHandling},
		{DLQTopicReplicationFactor, "3", connectors.TypeInt, false, GroupErrorHandling},
		{TopicCreationGroups, "", connectors.TypeList, false, GroupTopicCreation},
		{ExactlyOnceSupport, "requested", connectors.TypeString, false, GroupExactlyOnce},
		{TransactionBoundary, "poll", connectors.TypeString, false, GroupExactlyOnce},
	} {
		k := keys[tc.name]
		if k.Default != tc.def || k.Type != tc.typ || k.Required != tc.required || k.Group != tc.group {
			t.Errorf("%s = {default %q type %s required %v group %q}, want {%q %s %v %q}",
				tc.name, k.Default, k.Type, k.Required, k.Group, tc.def, tc.typ, tc.required, tc.group)
		}
	}
}

// perKey runs the ConfigDef checks and the cross-key checks together, as the
// control plane does.
func perKey(typ connectors.Type, config map[string]string) map[string][]string {
	out := map[string][]string{}
	for _, v := range ConfigDef(typ).Validate(config) {
		out[v.Name] = append(out[v.Name], v.Errors...)
	}
	if ce := Validate(Worker{}, typ, config); ce != nil {
		for k, msgs := range ce.Errors {
			out[k] = append(out[k], msgs...)
		}
	}
	for k, v := range out {
		if len(v) == 0 {
			delete(out, k)
		}
	}
	return out
}

func TestConfigDefRejectsBadValues(t *testing.T) {
	base := func(kv ...string) map[string]string {
		// transforms.a.type lets the duplicate-alias case fail on the alias
		// list alone; it is inert while transforms is unset.
		m := map[string]string{Name: "c", ConnectorClass: "X", Topics: "in", "transforms.a.type": "X"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	if errs := perKey(connectors.Sink, base()); len(errs) != 0 {
		t.Fatalf("minimal sink config: unexpected errors %v", errs)
	}
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{TasksMax, "0", false},
		{TasksMax, "x", false},
		{TasksMax, "4", true},
		{ErrorsRetryTimeout, "-1", true},
		{ErrorsRetryTimeout, "-2", false},
		{ErrorsTolerance, "all", true},
		{ErrorsTolerance, "some", false},
		{ErrorsLogEnable, "yes", false},
		{ConfigActionReload, "none", true},
		{ConfigActionReload, "reboot", false},
		{DLQTopicReplicationFactor, "-1", true},
		{DLQTopicReplicationFactor, "0", false},
		{DLQTopicReplicationFactor, "40000", false},
		{Transforms, "a,a", false},
		{Name, "a/b", false},
		{Name, "", false},
	} {
		errs := perKey(connectors.Sink, base(tc.key, tc.value))
		if tc.ok && len(errs) != 0 {
			t.Errorf("%s=%q: unexpected errors %v", tc.key, tc.value, errs)
		}
		if !tc.ok {
			if len(errs[tc.key]) == 0 {
				t.Errorf("%s=%q: no error reported on the key; got %v", tc.key, tc.value, errs)
			}
			if len(errs) != 1 {
				t.Errorf("%s=%q: errors on other keys too: %v", tc.key, tc.value, errs)
			}
		}
	}
}

func TestSourceKeys(t *testing.T) {
	// The definitions take Connect's values, any case; this version then
	// refuses those it cannot honour (TestValidateRefusesKeysNotHonoured).
	cfg := map[string]string{Name: "c", ConnectorClass: "X", ExactlyOnceSupport: "REQUIRED", TransactionBoundary: "interval"}
	for _, v := range ConfigDef(connectors.Source).Validate(cfg) {
		if len(v.Errors) != 0 {
			t.Fatalf("definition of %s refused %q: %v", v.Name, cfg[v.Name], v.Errors)
		}
	}
	cfg[TransactionBoundary] = "sometimes"
	cfg[TopicCreationGroups] = "g,g"
	cfg[OffsetsStorageTopic] = " "
	errs := perKey(connectors.Source, cfg)
	for _, k := range []string{TransactionBoundary, TopicCreationGroups, OffsetsStorageTopic} {
		if len(errs[k]) == 0 {
			t.Errorf("no error on %s: %v", k, errs)
		}
	}
	// A source has no topics: a sink's topic rule must not apply to it.
	if _, ok := errs[Topics]; ok {
		t.Errorf("source got a topics error: %v", errs)
	}
}

func TestValidateSinkTopics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config map[string]string
		want   map[string]string // key -> substring of its error
	}{
		{"topics only", map[string]string{Topics: "a,b"}, nil},
		{"regex only", map[string]string{TopicsRegex: "a.*"}, nil},
		{"neither", map[string]string{}, map[string]string{Topics: "Must configure one of", TopicsRegex: "Must configure one of"}},
		{"blank topics", map[string]string{Topics: " , "}, map[string]string{Topics: "Must configure one of", TopicsRegex: "Must configure one of"}},
		{"both", map[string]string{Topics: "a", TopicsRegex: "a.*"}, map[string]string{Topics: "mutually exclusive", TopicsRegex: "mutually exclusive"}},
		{"bad regex", map[string]string{TopicsRegex: "a(("}, map[string]string{TopicsRegex: "Invalid value"}},
		{"dlq in topics", map[string]string{Topics: "a, dlq", DLQTopicName: "dlq"}, map[string]string{Topics: "DLQ topic 'dlq'"}},
		{"dlq not in topics", map[string]string{Topics: "a,dlq2", DLQTopicName: "dlq"}, nil},
		{"dlq matches regex", map[string]string{TopicsRegex: "d.*", DLQTopicName: "dlq"}, map[string]string{TopicsRegex: "DLQ topic 'dlq'"}},
		// Connect matches the whole name: "xdlq" does not match "dlq".
		{"regex matches only part of the dlq", map[string]string{TopicsRegex: "x.*", DLQTopicName: "yx1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := Validate(Worker{}, connectors.Sink, tc.config)
			if len(tc.want) == 0 {
				if ce != nil {
					t.Fatalf("unexpected errors: %v", ce)
				}
				return
			}
			if ce == nil {
				t.Fatalf("no errors, want %v", tc.want)
			}
			if len(ce.Errors) != len(tc.want) {
				t.Errorf("errors on %d keys, want %d: %v", len(ce.Errors), len(tc.want), ce)
			}
			for k, sub := range tc.want {
				if !strings.Contains(strings.Join(ce.Errors[k], "|"), sub) {
					t.Errorf("key %s: errors %q, want one containing %q", k, ce.Errors[k], sub)
				}
			}
		})
	}
	// A source ignores the sink rules.
	if ce := Validate(Worker{}, connectors.Source, map[string]string{}); ce != nil {
		t.Errorf("source: unexpected errors %v", ce)
	}
}

func TestValidateAliases(t *testing.T) {
	cfg := map[string]string{
		Transforms:                  "route, mask",
		"transforms.route.type":     "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.mask.predicate": "isTomb",
		Predicates:                  "other",
	}
	ce := Validate(Worker{}, connectors.Source, cfg)
	if ce == nil {
		t.Fatal("no errors")
	}
	for _, k := range []string{"transforms.mask.type", "transforms.mask.predicate", "predicates.other.type"} {
		if len(ce.Errors[k]) == 0 {
			t.Errorf("no error on %s: %v", k, ce)
		}
	}
	if _, ok := ce.Errors["transforms.route.type"]; ok {
		t.Errorf("route has its type but got an error: %v", ce)
	}
	cfg["transforms.mask.type"] = "MaskField$Value"
	cfg["transforms.mask.predicate"] = "other"
	cfg["predicates.other.type"] = "RecordIsTombstone"
	if ce := Validate(Worker{}, connectors.Source, cfg); ce != nil {
		t.Errorf("complete config: unexpected errors %v", ce)
	}
}

func TestCompileTopicsRegexMatchesWholeName(t *testing.T) {
	re, err := CompileTopicsRegex("orders|pay.*")
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]bool{"orders": true, "payments": true, "old-orders": false, "orders2": false} {
		if got := re.MatchString(topic); got != want {
			t.Errorf("match(%q) = %v, want %v", topic, got, want)
		}
	}
}
