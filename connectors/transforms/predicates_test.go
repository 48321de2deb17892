package transforms

import (
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// hdrPredicate is the config of a chain whose one transform (InsertHeader
// "hit") runs under predicate p of class, negated or not, so that the
// header tells whether the predicate held.
func hdrPredicate(class string, negate bool, kv ...string) map[string]string {
	c := map[string]string{
		"transforms": "x", "transforms.x.type": "InsertHeader", "transforms.x.header": "hit",
		"transforms.x.value.literal": "1", "transforms.x.predicate": "p",
		"predicates": "p", "predicates.p.type": class,
	}
	if negate {
		c["transforms.x.negate"] = "true"
	}
	for i := 0; i+1 < len(kv); i += 2 {
		c["predicates.p."+kv[i]] = kv[i+1]
	}
	return c
}

func hdrHolds(t *testing.T, config map[string]string, r *connectors.Record) bool {
	t.Helper()
	out := hdrApply(t, hdrMustChain(t, config), r)
	return len(out.Headers) > len(r.Headers)
}

func TestTopicNameMatches(t *testing.T) {
	tests := []struct {
		pattern string
		topics  map[string]bool
	}{
		{"my-prefix-.*", map[string]bool{"my-prefix-topic": true, "my-prefix-": true, "other-my-prefix-x": false, "": false}},
		// The whole name must match, as Java's Matcher.matches.
		{"foo", map[string]bool{"foo": true, "foobar": false, "xfoo": false}},
		{"foo|bar", map[string]bool{"foo": true, "bar": true, "foobar": false}},
		{" topic\\d+ ", map[string]bool{"topic12": true, "topic": false, " topic1 ": false}},
		{"(?i)orders", map[string]bool{"ORDERS": true, "Orders": true}},
		{".*", map[string]bool{"": true, "anything.at_all-1": true}},
		{"a.c", map[string]bool{"a.c": true, "abc": true, "a\rc": false}},
	}
	for _, tt := range tests {
		for topic, want := range tt.topics {
			for _, negate := range []bool{false, true} {
				got := hdrHolds(t, hdrPredicate("TopicNameMatches", negate, "pattern", tt.pattern), &connectors.Record{Topic: topic})
				if got != (want != negate) {
					t.Errorf("TopicNameMatches(%q) on %q (negate %v) = %v", tt.pattern, topic, negate, got)
				}
			}
		}
	}
	bad := []struct{ pattern, want string }{
		{"", "String must be non-empty"},
		{"  ", "String must be non-empty"},
		{"[", "Invalid regex: Unclosed character class"},
		{"a{", "Invalid regex: Illegal repetition"},
		{"(?=x)", "cannot do lookahead"},
		{"(a)\\1", "cannot do backreferences"},
		{"a++", "cannot do possessive quantifiers"},
		{"[a&&b]", "cannot do character class intersections"},
	}
	for _, b := range bad {
		errs := hdrConfigErrors(t, hdrPredicate("org.apache.kafka.connect.transforms.predicates.TopicNameMatches", false, "pattern", b.pattern))
		if e := errs["predicates.p.pattern"]; len(e) != 1 || !strings.Contains(e[0], b.want) {
			t.Errorf("pattern %q: errors %v, want %q on predicates.p.pattern", b.pattern, errs, b.want)
		}
	}
	if errs := hdrConfigErrors(t, hdrPredicate("TopicNameMatches", false)); len(errs["predicates.p.pattern"]) != 1 {
		t.Errorf("no pattern: errors %v", errs)
	}
}

func TestHasHeaderKey(t *testing.T) {
	hs := []connectors.Header{{Key: "a", Value: "1"}, {Key: "b"}, {Key: "a", Value: "2"}}
	for name, want := range map[string]bool{"a": true, "b": true, " b ": true, "c": false, "A": false} {
		if got := hdrHolds(t, hdrPredicate("HasHeaderKey", false, "name", name), &connectors.Record{Headers: hs}); got != want {
			t.Errorf("HasHeaderKey(%q) = %v, want %v", name, got, want)
		}
	}
	if hdrHolds(t, hdrPredicate("HasHeaderKey", false, "name", "a"), &connectors.Record{}) {
		t.Error("HasHeaderKey holds for a record without headers")
	}
	for _, name := range []string{"", " "} {
		errs := hdrConfigErrors(t, hdrPredicate("HasHeaderKey", false, "name", name))
		if e := errs["predicates.p.name"]; len(e) != 1 || !strings.Contains(e[0], "String must be non-empty") {
			t.Errorf("name %q: errors %v", name, errs)
		}
	}
	errs := hdrConfigErrors(t, hdrPredicate("HasHeaderKey", false))
	if e := errs["predicates.p.name"]; len(e) != 1 || !strings.Contains(e[0], `Missing required configuration "predicates.p.name"`) {
		t.Errorf("no name: errors %v", errs)
	}
}

func TestRecordIsTombstone(t *testing.T) {
	tests := []struct {
		value any
		want  bool
	}{
		{nil, true},
		{[]byte(nil), true}, // ByteArrayConverter's tombstone
		{(*connectors.StructValue)(nil), true},
		{map[string]any(nil), true},
		{[]byte{}, false},
		{"", false},
		{int8(0), false},
		{map[string]any{}, false},
	}
	for _, tt := range tests {
		r := &connectors.Record{Key: "k", ValueSchema: connectors.OptionalBytesSchema, Value: tt.value}
		if got := hdrHolds(t, hdrPredicate("RecordIsTombstone", false), r); got != tt.want {
			t.Errorf("RecordIsTombstone(%#v) = %v, want %v", tt.value, got, tt.want)
		}
	}
}
