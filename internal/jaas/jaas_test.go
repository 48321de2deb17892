package jaas

import (
	"reflect"
	"strings"
	"testing"
)

const connectFile = `
// Kafka Connect's REST basic authentication
KafkaConnect {
  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
  file="/etc/connect/users.properties";
};
/* another application's section,
   over two lines */
Other { com.example.Module Optional debug=true path='C:\\conf\\x' tab="a\tb" octal="\101\0610"; com.example.Second sufficient; };
`

func TestParseFile(t *testing.T) {
	got, err := ParseFile(connectFile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Entry{
		"KafkaConnect": {{LoginModule: "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule", ControlFlag: "required",
			Options: map[string]string{"file": "/etc/connect/users.properties"}}},
		"Other": {
			{LoginModule: "com.example.Module", ControlFlag: "optional", Options: map[string]string{"debug": "true", "path": `C:\conf\x`, "tab": "a\tb", "octal": "A10"}},
			{LoginModule: "com.example.Second", ControlFlag: "sufficient", Options: map[string]string{}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

func TestParseEntries(t *testing.T) {
	got, err := ParseEntries(`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cr=t;";`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{LoginModule: "org.apache.kafka.common.security.plain.PlainLoginModule", ControlFlag: "required",
		Options: map[string]string{"username": "alice", "password": "s3cr=t;"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

// Every malformed text is refused with the line and what was expected, and
// never with a value's text: a value may be a password.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`KafkaConnect { M required file="x"; }`, `expected ';' after '}', found the end of the text`},
		{`KafkaConnect { M required file="x";`, "no closing '}'"},
		{`KafkaConnect { M mandatory; };`, `invalid control flag "mandatory" (required, requisite, sufficient or optional)`},
		{`KafkaConnect { M required file "hunter2"; };`, `value not specified for option "file"`},
		{`KafkaConnect { M required file=/etc/users; };`, `value not specified for option "file"`}, // '/' starts a comment, as in Java
		{`A { M required; }; A { M required; };`, `section "A" is given twice`},
		{`A { M required x="${user.home}/f"; };`, "system property expansion is not supported"},
		{`{ M required; };`, "expected a section name"},
		{`A M required; };`, "section A: expected '{'"},
	} {
		_, err := ParseFile(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFile(%q): error %v, want one containing %q", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseFile(%q): the error shows a value: %v", tc.in, err)
		}
	}
	if _, err := ParseEntries("  // nothing\n"); err == nil || !strings.Contains(err.Error(), "login module not specified") {
		t.Errorf("ParseEntries of no entry: %v", err)
	}
}

// FuzzParseFile checks that no text panics the parser or loops, and that a
// parsed file's sections all hold entries with a known flag. Its seeds run
// with the suite; `go test -fuzz FuzzParseFile ./internal/jaas/` runs longer.
func FuzzParseFile(f *testing.F) {
	for _, s := range []string{connectFile, `A{M required;};`, `A { M required k='v\'q' /* c */ ; };`, "A {\n// x\n};", `"quoted name" { m optional a=b; };`, `A { M required k="\777\08"; };`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sections, err := ParseFile(s)
		if err != nil {
			return
		}
		for name, entries := range sections {
			for _, e := range entries {
				if !IsControlFlag(e.ControlFlag) || e.LoginModule == "" || e.Options == nil {
					t.Fatalf("section %q: bad entry %#v", name, e)
				}
			}
		}
		_, _ = ParseEntries(s)
	})
}
