package transforms

import (
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// The expected topics below were checked against Java's Pattern and
// Matcher (JDK 17 and 25).
func TestRegexRouter(t *testing.T) {
	cases := []struct {
		regex, replacement, topic, want string
	}{
		// Connect's RegexRouterTest.
		{"foo", "bar", "foo", "bar"},
		{"foo", "bar", "orig", "orig"},
		{"(.*)", "$1", "orig", "orig"},
		{"(.*)", "prefix-$1", "orig", "prefix-orig"},
		{"(.*)", "$1-suffix", "orig", "orig-suffix"},
		{`(.*)-(\d\d\d\d\d\d\d\d)`, "$1", "index-20160117", "index"},
		// The whole topic must match; then the first match is replaced,
		// which may be shorter than the topic.
		{"foo", "bar", "foofoo", "foofoo"},
		{"a|ab", "X", "ab", "Xb"},
		{"(?<env>prod|dev)\\.(?<name>.+)", "${name}-${env}", "prod.orders", "orders-prod"},
		// $n takes as many digits as make an existing group.
		{"(a)(b)", "$12", "ab", "a2"},
		{"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)", "$10", "abcdefghij", "j"},
		{"(a)|(b)", "[$2]", "a", "[]"}, // an unmatched group is empty
		{"(.*)", `\$1`, "x", "$1"},
		// Java's literal ']' and '}', \Q...\E, and . excluding \r.
		{"a]}", "x", "a]}", "x"},
		{`\Qa.b\E`, "x", "a.b", "x"},
		{`\Qa.b\E`, "x", "axb", "axb"},
		{"a.b", "x", "a\rb", "a\rb"},
		{"(?s)a.b", "x", "a\rb", "x"},
		{`\s`, "x", "\x0b", "x"},
		{`\p{Alpha}+`, "x", "AbC", "x"},
		{"(?i)abc", "x", "AbC", "x"},
		{"[]a]+", "x", "]a]", "x"},
		{`\u0041\x42\0103`, "x", "ABC", "x"},
		{"a{2}{3}", "x", "aa", "x"},
	}
	for _, c := range cases {
		t.Run(c.regex+"/"+c.replacement, func(t *testing.T) {
			x := configured(t, "RegexRouter", map[string]string{"regex": c.regex, "replacement": c.replacement})
			r := &connectors.Record{Topic: c.topic, Value: "v"}
			out, err := applyOne(x, r)
			wantErr(t, err, "")
			if out.Topic != c.want {
				t.Fatalf("topic %q, want %q", out.Topic, c.want)
			}
			if out.Value != "v" {
				t.Fatal("the value was lost")
			}
		})
	}
}

func TestRegexRouterConfig(t *testing.T) {
	cases := []struct {
		regex, want string
	}{
		{"(a", "Invalid regex: Unclosed group"},
		{"a{", "Invalid regex: Illegal repetition"},
		{"${topic}", "Invalid regex: Illegal repetition"},
		{"*a", "Dangling meta character '*'"},
		{"[z-a]", "Illegal character range"},
		{`\y`, "Illegal/unsupported escape sequence"},
		{`\p{Foo}`, "Unknown character property name {Foo}"},
		// Java accepts these; RE2 cannot run them.
		{`(a)\1`, `the backreference \1 cannot be translated to Go's RE2`},
		{"(?=a)a", "lookahead (?=...)"},
		{"(?<!a)b", "lookbehind (?<!...)"},
		{"(?>a)", "the atomic group"},
		{"a*+", "the possessive quantifier *+"},
		{"[a-z&&[^e]]", "intersection"},
		{"(?x)a b", "COMMENTS"},
		{`\G`, `\G cannot be translated`},
		{"a{1001}", "above 1000"},
		{"(.*)", ""},
	}
	for _, c := range cases {
		t.Run(c.regex, func(t *testing.T) {
			_, err := chainOf("RegexRouter", map[string]string{"regex": c.regex, "replacement": "x"})
			wantErr(t, err, c.want)
			if c.want != "" {
				wantErr(t, err, "transforms.x.regex")
			}
		})
	}
	_, err := chainOf("RegexRouter", map[string]string{"regex": "a"})
	wantErr(t, err, `Missing required configuration "transforms.x.replacement"`)
}

// A bad replacement fails the records whose topic matches, when Java's
// Matcher would read it, and passes the others.
func TestRegexRouterBadReplacement(t *testing.T) {
	cases := []struct {
		regex, replacement, want string
	}{
		{"(a)", "$", "Illegal group reference: group index is missing"},
		{"(a)", `x\`, "character to be escaped is missing"},
		{"(a)", "$2", "No group 2"},
		{"(a)", "$x", "Illegal group reference"},
		{"(a)", "${}", "named capturing group has 0 length name"},
		{"(a)", "${a", "named capturing group is missing trailing '}'"},
		{"(a)", "${1a}", "capturing group name {1a} starts with digit character"},
		{"(a)", "${b}", "No group with name {b}"},
	}
	for _, c := range cases {
		x := configured(t, "RegexRouter", map[string]string{"regex": c.regex, "replacement": c.replacement})
		_, err := applyOne(x, &connectors.Record{Topic: "a"})
		wantErr(t, err, c.want)
		out, err := applyOne(x, &connectors.Record{Topic: "b"})
		wantErr(t, err, "")
		if out.Topic != "b" {
			t.Fatalf("topic %q", out.Topic)
		}
	}
}
