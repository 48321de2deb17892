package configprovider

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/javaregex"
)

const secret = "s3cr3t-Pa55"

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// noSecret fails the test when err's message holds the secret.
func noSecret(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Fatalf("the error shows the secret: %v", err)
	}
}

// The pattern splits placeholders as ConfigTransformer.DEFAULT_PATTERN
// does in Java (expected groups from java.util.regex).
func TestVariablesSplitAsConnectDoes(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  []variable
	}{
		{"${file:/a/b.properties:pw}", []variable{{"file", "/a/b.properties", "pw", "${file:/a/b.properties:pw}"}}},
		{"${env:HOME}", []variable{{"env", "", "HOME", "${env:HOME}"}}},
		// The path ends at the first ':', the key takes the rest.
		{"${file:/a:b:c}", []variable{{"file", "/a", "b:c", "${file:/a:b:c}"}}},
		{"x${p:k}y${q:/d:k2}z", []variable{{"p", "", "k", "${p:k}"}, {"q", "/d", "k2", "${q:/d:k2}"}}},
		{"${topic}", nil}, // no ':': not a placeholder (RegexRouter's ${topic} stays)
		{"${:k}", []variable{{"", "", "k", "${:k}"}}},
		{"$file:a:b", nil},
	} {
		if got := variables(tc.value); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %+v, want %+v", tc.value, got, tc.want)
		}
		if HasVariables(tc.value) != (len(tc.want) > 0) {
			t.Errorf("HasVariables(%q) = %v", tc.value, !(len(tc.want) > 0))
		}
	}
}

func TestTransformResolvesFileDirectoryAndEnv(t *testing.T) {
	dir := t.TempDir()
	props := writeFile(t, filepath.Join(dir, "secrets.properties"), "# db\npg.password="+secret+"\nuser = app\\u00e9\nodd\\:key=v\n")
	secretsDir := filepath.Join(dir, "mounted")
	writeFile(t, filepath.Join(secretsDir, "token"), "tok\n")
	re, err := javaregex.Compile("SLUICE_TEST_.*")
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	tr := NewTransformer(map[string]Provider{
		"file": NewFileProvider(nil),
		"dir":  NewDirectoryProvider(nil),
		"env":  NewEnvVarProvider([]string{"SLUICE_TEST_A=alpha", "OTHER=hidden", "SLUICE_TEST_EQ=a=b"}, re),
	}, zerolog.New(&logged))
	in := map[string]string{
		"connection.password": "${file:" + props + ":pg.password}",
		"connection.user":     "${file:" + props + ":user}",
		"odd":                 "${file:" + props + ":odd:key}",
		"token":               "Bearer ${dir:" + secretsDir + ":token}",
		"env":                 "${env:SLUICE_TEST_A}-${env:SLUICE_TEST_EQ}",
		"env.unmatched":       "${env:OTHER}",
		"missing.key":         "${file:" + props + ":nope}",
		"missing.file.key":    "${dir:" + secretsDir + ":nope}",
		"unknown.provider":    "${vault:/x:y}",
		"plain":               "as is",
	}
	got, err := tr.Transform(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"connection.password": secret,
		"connection.user":     "appé",
		"odd":                 "v",
		"token":               "Bearer tok\n", // the whole file, not trimmed
		"env":                 "alpha-a=b",
		// Outside allowlist.pattern, a missing key, an unknown provider:
		// left as written, as Connect leaves them.
		"env.unmatched":    "${env:OTHER}",
		"missing.key":      in["missing.key"],
		"missing.file.key": in["missing.file.key"],
		"unknown.provider": "${vault:/x:y}",
		"plain":            "as is",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if in["connection.password"] == secret {
		t.Error("Transform changed its input")
	}
	// What stays as written is logged, by key and placeholder, never a value.
	for _, want := range []string{`"key":"unknown.provider","placeholder":"${vault:/x:y}"`, `"key":"missing.key"`, `"key":"env.unmatched"`} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, logged.String())
		}
	}
	if strings.Contains(logged.String(), secret) {
		t.Errorf("the log shows the secret:\n%s", logged.String())
	}
}

func TestTransformWithoutProvidersChangesNothing(t *testing.T) {
	var tr *Transformer
	in := map[string]string{"k": "${file:/x:y}"}
	got, err := tr.Transform(in)
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("%v, %v", got, err)
	}
}

func TestTransformErrorNamesKeyProviderAndPathNotTheSecret(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "absent.properties")
	// A line Java cannot read, whose bad escape is next to the secret.
	broken := writeFile(t, filepath.Join(dir, "broken.properties"), "ok=1\npw="+secret+"\\u12G4\n")
	notUTF8 := writeFile(t, filepath.Join(dir, "latin1.properties"), "pw="+secret+"\xe9\n")
	tr := NewTransformer(map[string]Provider{"file": NewFileProvider(nil), "dir": NewDirectoryProvider(nil)}, zerolog.Nop())
	for _, tc := range []struct {
		value, wantInError string
	}{
		{"${file:" + missing + ":pw}", "no such file"},
		{"${file:" + broken + ":pw}", `line 2: malformed \uXXXX escape`},
		{"${file:" + notUTF8 + ":pw}", "not UTF-8"},
		{"${dir:" + broken + ":pw}", "is not a directory"},
		{"${dir:" + filepath.Join(dir, "nodir") + ":pw}", "no such file"},
	} {
		_, err := tr.Transform(map[string]string{"connection.password": tc.value, "other": "plain"})
		var ce *connectors.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: %v, want a ConfigError", tc.value, err)
		}
		noSecret(t, err)
		msgs := strings.Join(ce.Errors["connection.password"], "; ")
		path := strings.SplitN(tc.value, ":", 3)[1]
		if !strings.Contains(msgs, tc.wantInError) || !strings.Contains(msgs, path) || !strings.Contains(msgs, `config provider "`) {
			t.Errorf("%s: %q, want the provider, the path and %q", tc.value, msgs, tc.wantInError)
		}
		if len(ce.Errors) != 1 {
			t.Errorf("%s: errors on %v, want connection.password only", tc.value, ce.Errors)
		}
	}
}

func TestEnvVarProviderRefusesAPath(t *testing.T) {
	p := NewEnvVarProvider([]string{"A=1"}, nil)
	if _, err := p.Get("/etc", []string{"A"}); err == nil || !strings.Contains(err.Error(), "path is not supported") {
		t.Fatalf("%v", err)
	}
	if got, err := p.Get("", []string{"A", "B"}); err != nil || !reflect.DeepEqual(got, map[string]string{"A": "1"}) {
		t.Fatalf("%v %v", got, err)
	}
}

// allowlist.pattern matches the whole name, as Matcher.matches does.
func TestEnvVarAllowlistMatchesWholeNames(t *testing.T) {
	re, err := javaregex.Compile("DB_")
	if err != nil {
		t.Fatal(err)
	}
	p := NewEnvVarProvider([]string{"DB_=1", "DB_PASSWORD=2", "X_DB_=3"}, re)
	got, _ := p.Get("", []string{"DB_", "DB_PASSWORD", "X_DB_"})
	if !reflect.DeepEqual(got, map[string]string{"DB_": "1"}) {
		t.Fatalf("%v", got)
	}
}

func TestDirectoryProviderReadsRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a"), "A")
	writeFile(t, filepath.Join(dir, "sub", "b"), "B")
	if err := os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	got, err := NewDirectoryProvider(nil).Get(dir, []string{"a", "sub", "sub/b", "..", "link", "none"})
	if err != nil {
		t.Fatal(err)
	}
	// A directory, a key naming another place: nothing; a link to a
	// regular file: its content, as Files.isRegularFile follows links.
	if want := map[string]string{"a": "A", "link": "A"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
}

func TestAllowedPaths(t *testing.T) {
	base := t.TempDir()
	allowed := filepath.Join(base, "allowed")
	writeFile(t, filepath.Join(allowed, "ok.properties"), "pw="+secret+"\n")
	writeFile(t, filepath.Join(allowed, "dir", "pw"), secret)
	outside := writeFile(t, filepath.Join(base, "outside.properties"), "pw="+secret+"\n")
	writeFile(t, filepath.Join(base, "outsidedir", "pw"), secret)
	writeFile(t, filepath.Join(base, "allowedx", "pw.properties"), "pw="+secret+"\n")
	// Links inside the allowed directory: one to a file outside, one to
	// a directory outside, one to a file inside (as Kubernetes mounts
	// secrets: name -> ..data/name).
	mustLink := func(target, link string) {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	mustLink(outside, filepath.Join(allowed, "escape.properties"))
	mustLink(filepath.Join(base, "outsidedir"), filepath.Join(allowed, "escapedir"))
	mustLink(filepath.Join(allowed, "ok.properties"), filepath.Join(allowed, "inside.properties"))
	mustLink(filepath.Join(base, "outsidedir", "pw"), filepath.Join(allowed, "dir", "leak"))

	a, err := ParseAllowedPaths("config.providers.file.param.allowed.paths", " "+allowed+" ,"+filepath.Join(base, "nothing-here", "..", "allowed", "dir"))
	if err != nil {
		t.Fatal(err)
	}
	file, dir := NewFileProvider(a), NewDirectoryProvider(a)
	for _, ok := range []string{filepath.Join(allowed, "ok.properties"), filepath.Join(allowed, "inside.properties"), filepath.Join(allowed, "dir", "..", "ok.properties")} {
		if got, err := file.Get(ok, []string{"pw"}); err != nil || got["pw"] != secret {
			t.Errorf("%s: %v %v, want it read", ok, got, err)
		}
	}
	for _, bad := range []string{
		outside,
		filepath.Join(allowed, "..", "outside.properties"), // .. out of it
		filepath.Join(base, "allowedx", "pw.properties"),   // a sibling whose name starts alike
		"relative.properties",
		filepath.Join(allowed, "escape.properties"), // a link out
		filepath.Join(allowed, "escapedir", "pw"),   // under a link out
	} {
		_, err := file.Get(bad, []string{"pw"})
		noSecret(t, err)
		if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "outside allowed.paths") {
			t.Errorf("%s: %v, want it refused as outside allowed.paths, naming it", bad, err)
		}
	}
	if got, err := dir.Get(filepath.Join(allowed, "dir"), []string{"pw"}); err != nil || got["pw"] != secret {
		t.Errorf("directory inside: %v %v", got, err)
	}
	if _, err := dir.Get(filepath.Join(allowed, "escapedir"), []string{"pw"}); err == nil || !strings.Contains(err.Error(), "outside allowed.paths") {
		t.Errorf("directory behind a link out: %v", err)
	}
	// A file in an allowed directory that links out is refused too.
	_, err = dir.Get(filepath.Join(allowed, "dir"), []string{"leak"})
	noSecret(t, err)
	if err == nil || !strings.Contains(err.Error(), "outside allowed.paths") {
		t.Errorf("a file linking out of an allowed directory: %v", err)
	}
}

func TestParseAllowedPathsRefusesBadPaths(t *testing.T) {
	const key = "config.providers.file.param.allowed.paths"
	for value, want := range map[string]string{
		"relative/dir":                     "is not absolute",
		"/no/such/dir/for/sluice":          "does not exist",
		"/tmp,":                            "is not absolute",
		filepath.Join(t.TempDir(), "gone"): "does not exist",
	} {
		if _, err := ParseAllowedPaths(key, value); err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), key+": ") {
			t.Errorf("%q: %v, want an error naming the key and %q", value, err, want)
		}
	}
	if a, err := ParseAllowedPaths(key, " "); a != nil || err != nil {
		t.Errorf("empty: %v %v, want every path allowed", a, err)
	}
}

func TestFromWorkerProps(t *testing.T) {
	dir := t.TempDir()
	props := writeFile(t, filepath.Join(dir, "w.properties"), "sasl.password="+secret+"\n")
	tr, err := FromWorkerProps(map[string]string{
		"config.providers":                             " file , env,dir",
		"config.providers.file.class":                  FileClass,
		"config.providers.file.param.allowed.paths":    dir,
		"config.providers.env.class":                   EnvVarClass,
		"config.providers.env.param.allowlist.pattern": "SLUICE_.*",
		"config.providers.dir.class":                   DirectoryClass,
		"config.providers.unlisted.class":              "com.example.Whatever", // not listed: not built
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Names(); !reflect.DeepEqual(got, []string{"dir", "env", "file"}) {
		t.Fatalf("providers %v", got)
	}
	resolved, err := ResolveWorkerProps(tr, map[string]string{"sasl.jaas.config": `x password="${file:` + props + `:sasl.password}";`})
	if err != nil || resolved["sasl.jaas.config"] != `x password="`+secret+`";` {
		t.Fatalf("%q %v", resolved, err)
	}

	if tr, err := FromWorkerProps(map[string]string{"config.providers": " "}, zerolog.Nop()); tr != nil || err != nil {
		t.Fatalf("no providers: %v %v", tr, err)
	}
}

func TestFromWorkerPropsNamesEveryBadKey(t *testing.T) {
	_, err := FromWorkerProps(map[string]string{
		"config.providers":                           "a,b,c,d,e,f",
		"config.providers.a.class":                   "com.example.VaultConfigProvider",
		"config.providers.c.class":                   FileClass,
		"config.providers.c.param.allowed.path":      "/tmp",
		"config.providers.d.class":                   FileClass,
		"config.providers.d.param.allowed.paths":     "../etc",
		"config.providers.e.class":                   EnvVarClass,
		"config.providers.e.param.allowlist.pattern": "(?<=x)A",
		"config.providers.f.class":                   DirectoryClass,
		"config.providers.f.typo":                    "x",
	}, zerolog.Nop())
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"config.providers.a.class: unknown config provider class \"com.example.VaultConfigProvider\"; Sluice has " + strings.Join(Classes(), ", "),
		"config.providers.b.class: config.providers lists \"b\" but does not give its class",
		"config.providers.c.param.allowed.path: " + FileClass + " takes no option \"allowed.path\"",
		"config.providers.d.param.allowed.paths: path \"../etc\" is not absolute",
		"config.providers.e.param.allowlist.pattern: ",
		"config.providers.f.typo: not a config provider key",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}

func TestReverseTransformPutsPlaceholdersBack(t *testing.T) {
	raw := map[string]string{
		"connection.password": "${file:/s.properties:pw}",
		"connection.user":     "app",
		"token":               "Bearer ${env:TOKEN}",
	}
	tasks := []map[string]string{
		{"connection.password": secret, "connection.user": "app", "table": "t1"},
		{"table": "t2"},
	}
	got := ReverseTransform(raw, tasks)
	want := []map[string]string{
		{"connection.password": "${file:/s.properties:pw}", "connection.user": "app", "table": "t1"},
		{"table": "t2"}, // a key the task config lacks is not added
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%v, want %v", got, want)
	}
	if tasks[0]["connection.password"] != secret {
		t.Error("ReverseTransform changed its input")
	}
}

// FuzzTransform: whatever a value holds, Transform does not panic, leaves
// text outside placeholders as it was, and replaces a placeholder of a
// provider that holds its key by the key's value only.
func FuzzTransform(f *testing.F) {
	for _, seed := range []string{"${env:A}", "x${env:A}y${env:B}", "${env:/p:A}", "${}", "${:}", "${env:}", "$${env:A}}", "${a:b:c:d}", "plain", "${env:A", "}{${env:A}$"} {
		f.Add(seed)
	}
	tr := NewTransformer(map[string]Provider{"env": NewEnvVarProvider([]string{"A=[a]", "B=[b]"}, nil)}, zerolog.Nop())
	f.Fuzz(func(t *testing.T, value string) {
		got, err := tr.Transform(map[string]string{"k": value})
		if err != nil {
			// Only a path given to the environment provider is an error.
			if !strings.Contains(err.Error(), "a path is not supported") {
				t.Fatalf("%q: %v", value, err)
			}
			return
		}
		want := variablePattern.ReplaceAllStringFunc(value, func(text string) string {
			switch v := variables(text)[0]; {
			case v.provider == "env" && v.path == "" && v.key == "A":
				return "[a]"
			case v.provider == "env" && v.path == "" && v.key == "B":
				return "[b]"
			}
			return text
		})
		if got["k"] != want {
			t.Fatalf("%q became %q, want %q", value, got["k"], want)
		}
		if !strings.Contains(value, "${") && got["k"] != value {
			t.Fatalf("%q without a placeholder became %q", value, got["k"])
		}
	})
}
