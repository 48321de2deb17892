package basicauth

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// writeJAAS writes a users file with content and a JAAS file naming it,
// and returns the JAAS file's path.
func writeJAAS(t *testing.T, users string) string {
	t.Helper()
	dir := t.TempDir()
	usersPath := filepath.Join(dir, "users.properties")
	if err := os.WriteFile(usersPath, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	jaasPath := filepath.Join(dir, "connect.jaas")
	jaasText := "KafkaConnect {\n  " + LoginModule + " required\n  file=\"" + usersPath + "\";\n};\n"
	if err := os.WriteFile(jaasPath, []byte(jaasText), 0o600); err != nil {
		t.Fatal(err)
	}
	return jaasPath
}

func props(jaasPath string) map[string]string {
	return map[string]string{ExtensionsKey: ExtensionClass, JAASKey: jaasPath}
}

func TestAuthenticate(t *testing.T) {
	u, err := FromProps(props(writeJAAS(t, "alice: s3cret\nbob=pa:ss word \n")), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user, password string
		want           bool
	}{
		{"alice", "s3cret", true},
		{"bob", "pa:ss word ", true}, // Java keeps a value's trailing space
		{"alice", "s3cret ", false},
		{"alice", "", false},
		{"carol", "s3cret", false},
		{"", "", false},
	} {
		if got := u.Authenticate(tc.user, tc.password); got != tc.want {
			t.Errorf("Authenticate(%q, %q) = %v, want %v", tc.user, tc.password, got, tc.want)
		}
	}
}

// An empty users file lets everyone in, as Connect's PropertyFileLoginModule
// does, and says so in the log.
func TestEmptyUsersFilePermitsAll(t *testing.T) {
	var logs bytes.Buffer
	u, err := FromProps(props(writeJAAS(t, "# nobody\n")), zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	if !u.Authenticate("anyone", "anything") {
		t.Fatal("an empty users file refused a user")
	}
	if !strings.Contains(logs.String(), "every request is permitted") {
		t.Fatalf("no warning about the empty users file: %s", logs.String())
	}
}

func TestFromPropsRefusals(t *testing.T) {
	good := writeJAAS(t, "alice: x\n")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"other class", map[string]string{ExtensionsKey: "com.example.MyExtension," + ExtensionClass, JAASKey: good},
			"rest.extension.classes: com.example.MyExtension: Sluice cannot load Java classes; the one REST extension it implements is " + ExtensionClass},
		{"no JAAS file", map[string]string{ExtensionsKey: ExtensionClass}, "needs java.security.auth.login.config"},
		{"missing JAAS file", props(filepath.Join(dir, "nope.jaas")), "java.security.auth.login.config: open"},
		{"no section", props(write("a.jaas", "Other { "+LoginModule+" required file=\"x\"; };")), "has no KafkaConnect section"},
		{"other module", props(write("b.jaas", "KafkaConnect { com.sun.security.auth.module.LdapLoginModule required; };")),
			"login module com.sun.security.auth.module.LdapLoginModule is not supported"},
		{"no file option", props(write("c.jaas", "KafkaConnect { "+LoginModule+" required; };")), "needs the option file="},
		{"missing users file", props(write("d.jaas", "KafkaConnect { "+LoginModule+" required file=\""+filepath.Join(dir, "none")+"\"; };")), "users file: open"},
		{"bad users file", props(write("f.jaas", "KafkaConnect { "+LoginModule+" required file=\""+write("bad.properties", "alice: pa\\uZZZZss\n")+"\"; };")),
			"bad.properties: line 1: a malformed escape"},
		{"bad syntax", props(write("e.jaas", "KafkaConnect { "+LoginModule+" required file=\"x\" }")), "expected an option name, found '}'"},
	} {
		_, err := FromProps(tc.props, zerolog.Nop())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "ZZZZ") {
			t.Errorf("%s: the error shows the users file's text: %v", tc.name, err)
		}
	}
	if u, err := FromProps(map[string]string{ExtensionsKey: " "}, zerolog.Nop()); u != nil || err != nil {
		t.Errorf("an empty rest.extension.classes: %v, %v; want no authentication", u, err)
	}
}

func TestMiddleware(t *testing.T) {
	u, err := FromProps(props(writeJAAS(t, "alice: s3cret\n")), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h := Middleware(u, zerolog.New(&logs).Level(zerolog.DebugLevel), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("hello " + Principal(r.Context())))
	}))
	for _, tc := range []struct {
		name, header string
		code         int
		body         string
	}{
		{"none", "", 401, Unauthorized},
		{"good", "Basic YWxpY2U6czNjcmV0", 200, "hello alice"},
		{"scheme in lower case", "basic YWxpY2U6czNjcmV0", 200, "hello alice"},
		{"wrong password", "Basic YWxpY2U6d3Jvbmc=", 401, Unauthorized},
		{"bearer", "Bearer abc", 401, Unauthorized},
		{"not base64", "Basic %%%", 401, Unauthorized},
		{"no colon", "Basic YWxpY2U=", 401, Unauthorized},
		{"empty user", "Basic OnMzY3JldA==", 401, Unauthorized},
		{"no space", "Basic", 401, Unauthorized},
	} {
		req := httptest.NewRequest(http.MethodGet, "/connectors", nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code || rec.Body.String() != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
		if tc.code == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Basic realm=") {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, rec.Header().Get("WWW-Authenticate"))
		}
	}
	if strings.Contains(logs.String(), "d3Jvbmc") || strings.Contains(logs.String(), "s3cret") || strings.Contains(logs.String(), "YWxpY2U6") {
		t.Fatalf("a password reached the log: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "failed authentication") {
		t.Fatalf("failures are not logged at debug: %s", logs.String())
	}
}
