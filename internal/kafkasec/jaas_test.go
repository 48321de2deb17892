package kafkasec

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	cases := []struct {
		text string
		want []JAASEntry
	}{
		{`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="al-ice$1";`,
			[]JAASEntry{{"org.apache.kafka.common.security.plain.PlainLoginModule", "required", map[string]string{"username": "alice", "password": "al-ice$1"}}}},
		{"  org.apache.kafka.common.security.scram.ScramLoginModule   REQUIRED\n\tusername=bob\n  password='p w\\\"d\\\\x\\ty\\101\\0'\n ;  ",
			[]JAASEntry{{"org.apache.kafka.common.security.scram.ScramLoginModule", "required", map[string]string{"username": "bob", "password": "p w\"d\\x\tyA\x00"}}}},
		{`a.B Optional; /* block ; comment */ c.D sufficient k="v" // line comment
		 k="w";`,
			[]JAASEntry{{"a.B", "optional", map[string]string{}}, {"c.D", "sufficient", map[string]string{"k": "w"}}}},
		{`"quoted.Module" requisite "my key"="v;=";`,
			[]JAASEntry{{"quoted.Module", "requisite", map[string]string{"my key": "v;="}}}},
		{"m.M required k=\"unterminated\nx=y;",
			[]JAASEntry{{"m.M", "required", map[string]string{"k": "unterminated", "x": "y"}}}},
	}
	for _, c := range cases {
		got, err := ParseJAAS(c.text)
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %#v\nwant %#v", c.text, got, c.want)
		}
	}
}

func TestParseJAASRefusesWhatJavaRefuses(t *testing.T) {
	cases := map[string]string{
		"":                                   "login module not specified",
		"  // only a comment":                "login module not specified",
		"m.M":                                "control flag not specified",
		"m.M always;":                        "invalid control flag",
		"m.M required":                       "not terminated by a semicolon",
		`m.M required username="u"`:          "not terminated by a semicolon",
		"m.M required k=;":                   `value not specified for option "k"`,
		"m.M required k v;":                  `value not specified for option "k"`,
		"m.M required k=123;":                `value not specified for option "k"`,
		"m.M required k=-1;":                 `value not specified for option "k"`,
		"m.M required =v;":                   "expected an option name",
		"1.2 required;":                      "expected a login module class name",
		`"" required;`:                       "expected a login module class name",
		"m.M required k=v; ;":                "expected a login module class name",
		"m.M required password=/secret;":     `value not specified for option "password"`,
		`m.M required password="Secret-7" x`: `value not specified for option "x"`,
		`m.M required password="Secret-7"`:   "not terminated",
		`m.M required "Secret-7";`:           "value not specified for option (a quoted string)",
		`m.M "Secret-7";`:                    "invalid control flag (a quoted string)",
	}
	for text, want := range cases {
		_, err := ParseJAAS(text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", text, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "Secret-7") {
			t.Errorf("%q: error %q quotes a value", text, err)
		}
	}
}

// formatJAAS writes entries back in a form ParseJAAS must read to the same
// entries: every name and value quoted, with the escapes Java reads.
func formatJAAS(entries []JAASEntry) string {
	quote := func(s string) string {
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
		return `"` + r.Replace(s) + `"`
	}
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %s", quote(e.LoginModule), e.ControlFlag)
		for k, v := range e.Options {
			fmt.Fprintf(&b, "\n  %s=%s", quote(k), quote(v))
		}
		b.WriteString(";\n")
	}
	return b.String()
}

// FuzzParseJAAS checks that ParseJAAS never panics and that what it
// accepts survives a round trip through formatJAAS unchanged.
func FuzzParseJAAS(f *testing.F) {
	for _, seed := range []string{
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`,
		`org.apache.kafka.common.security.scram.ScramLoginModule required username=bob password='b\'o\\b' tokenauth=true;`,
		"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required\n  clientId=\"id\"\n  clientSecret=\"s\\101\\7777\"\n  scope=\"a b\";",
		"a.B optional; /* c */ c.D sufficient k=\"v\" // x\n;",
		"m required k=\"unterminated\n;",
		"m required k=-x;", "m required k=.5;", "m / required;", "/*", `m required k="\`,
		"m\u00e9 required k=v\u4e16;",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		entries, err := ParseJAAS(text)
		if err != nil {
			return
		}
		again, err := ParseJAAS(formatJAAS(entries))
		if err != nil {
			t.Fatalf("the formatted form of %q does not parse: %v", text, err)
		}
		if len(again) != len(entries) {
			t.Fatalf("round trip changed the entry count: %d, then %d", len(entries), len(again))
		}
		for i := range entries {
			if again[i].LoginModule != entries[i].LoginModule || again[i].ControlFlag != entries[i].ControlFlag ||
				!maps.Equal(again[i].Options, entries[i].Options) {
				t.Fatalf("round trip changed entry %d: %#v became %#v", i, entries[i], again[i])
			}
		}
	})
}
