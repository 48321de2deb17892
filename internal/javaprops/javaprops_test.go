package javaprops

import (
	"maps"
	"strings"
	"testing"
)

// The cases follow java.util.Properties.load, which Kafka Connect reads its
// files with; each want is what Java's load gives.
func TestParsePropertiesAsJavaDoes(t *testing.T) {
	for _, tc := range []struct {
		what, in string
		want     map[string]string
	}{
		{"separators", "a=1\nb:2\nc 3\nd\t4\ne = 5\nf : 6\ng  =  7\n", map[string]string{
			"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7"}},
		{"a key alone has the empty value", "alone\nempty=\n", map[string]string{"alone": "", "empty": ""}},
		{"whitespace then a separator: one separator only", "k = =v\nj  :v\n", map[string]string{"k": "=v", "j": "v"}},
		{"the value runs to the end, separators and all", "url=jdbc:postgresql://h/db?a=1&b=2\n", map[string]string{
			"url": "jdbc:postgresql://h/db?a=1&b=2"}},
		{"comments and blank lines", "# c\n! c\n   # indented comment\n\n   \t\nk=v # not a comment\n", map[string]string{
			"k": "v # not a comment"}},
		{"leading whitespace", "   \t k=v\n", map[string]string{"k": "v"}},
		{"trailing whitespace is kept", "k=v  \n", map[string]string{"k": "v  "}},
		{"continuation drops the next line's leading whitespace", "query=SELECT a, \\\n     b FROM t\nnext=1\n", map[string]string{
			"query": "SELECT a, b FROM t", "next": "1"}},
		{"a continued line starting with # is not a comment", "k=a\\\n#b\n", map[string]string{"k": "a#b"}},
		{"an even count of backslashes does not continue", "k=a\\\\\nj=b\n", map[string]string{"k": `a\`, "j": "b"}},
		{"a continuation into a blank line ends the line", "k=a\\\n\nj=b\n", map[string]string{"k": "a", "j": "b"}},
		{"a continuation at the end of the file", "k=a\\", map[string]string{"k": "a"}},
		{"a comment ending in a backslash does not continue", "# c\\\nk=v\n", map[string]string{"k": "v"}},
		{"escapes", `k=tab\there\nnl\rcr\fff \u00e9\u20AC \= \: \# \! \\ \q` + "\n", map[string]string{
			"k": "tab\there\nnl\rcr\fff é€ = : # ! \\ q"}},
		{"escaped separators and spaces in keys", `a\=b=1` + "\n" + `c\:d:2` + "\n" + `e\ f 3` + "\n", map[string]string{
			"a=b": "1", "c:d": "2", "e f": "3"}},
		{"a surrogate pair", `k=\uD83D\uDE00` + "\n", map[string]string{"k": "😀"}},
		{"UTF-8", "k=café\n", map[string]string{"k": "café"}},
		{"ISO-8859-1 when not UTF-8", "k=caf\xe9\n", map[string]string{"k": "café"}},
		{"CRLF and CR line ends", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"the last duplicate wins", "k=1\nk=2\n", map[string]string{"k": "2"}},
	} {
		got, err := Parse([]byte(tc.in))
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%s: %q gives %q, %v; want %q", tc.what, tc.in, got, err, tc.want)
		}
	}
}

func TestParsePropertiesMalformedEscapeNamesTheLine(t *testing.T) {
	for _, in := range []string{"a=1\n\n# c\nb=\\u12G4\n", "a=1\n\n# c\nb=x\\u12\n"} {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), `\u`) {
			t.Errorf("%q: %v, want an error naming line 4 and the escape", in, err)
		}
	}
}
