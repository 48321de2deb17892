package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadConfigFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		what, file string
		kvs        []string
		wantName   string
		want       map[string]string
	}{
		{"POST body", write("a.json", `{"name":"a","config":{"connector.class":"X","tasks.max":2,"flag":true}}`), nil,
			"a", map[string]string{"connector.class": "X", "tasks.max": "2", "flag": "true"}},
		{"flat JSON", write("b.json", `{"name":"b","connector.class":"X"}`), []string{"topic=t"},
			"b", map[string]string{"name": "b", "connector.class": "X", "topic": "t"}},
		{"properties", write("c.properties", "# comment\n! also a comment\nname=c\nconnector.class : X\nquery=SELECT a, \\\n  b FROM t\n\nurl=jdbc:postgresql://h/db?a=1&b=2\n"), nil,
			"", map[string]string{"name": "c", "connector.class": "X", "query": "SELECT a, b FROM t", "url": "jdbc:postgresql://h/db?a=1&b=2"}},
		{"arguments win", write("d.properties", "topic=a\n"), []string{"topic=b", "empty="},
			"", map[string]string{"topic": "b", "empty": ""}},
	} {
		name, cfg, err := readConfig(tc.file, tc.kvs, strings.NewReader(""))
		if err != nil || name != tc.wantName || !reflect.DeepEqual(cfg, tc.want) {
			t.Errorf("%s: name %q, config %v, err %v; want %q, %v", tc.what, name, cfg, err, tc.wantName, tc.want)
		}
	}
	name, cfg, err := readConfig("-", nil, strings.NewReader(`{"name":"s","config":{"k":"v"}}`))
	if err != nil || name != "s" || cfg["k"] != "v" {
		t.Errorf("stdin: %q %v %v", name, cfg, err)
	}
	for _, bad := range []struct {
		file string
		kvs  []string
		want string
	}{
		{write("e.json", `{"config":{"a":{"nested":1}}}`), nil, "a"},
		{write("f.json", `{"config":`), nil, "not valid JSON"},
		{write("g.properties", "# a comment\nbad=\\u12G4\n"), nil, "line 2"},
		{"", []string{"novalue"}, "key=value"},
		{filepath.Join(dir, "missing.json"), nil, "missing.json"},
	} {
		if _, _, err := readConfig(bad.file, bad.kvs, strings.NewReader("")); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("readConfig(%q, %v): %v, want an error mentioning %q", bad.file, bad.kvs, err, bad.want)
		}
	}
}

// Flags go anywhere among the arguments, and SLUICE_* fills what the
// command line leaves unset.
func TestAdminFlagsAnywhere(t *testing.T) {
	cleanEnv(t)
	t.Setenv("SLUICE_CLUSTER", "from-env")
	c := newAdminCmd("connectors status", connectorsHelp, os.Stdout, os.Stderr)
	if err := c.parse([]string{"status", "-o", "json", "my-conn", "--join", "h:1"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.args, []string{"status", "my-conn"}) || !c.json() || c.f.join != "h:1" || c.f.cluster != "from-env" {
		t.Fatalf("args %v json %v join %q cluster %q", c.args, c.json(), c.f.join, c.f.cluster)
	}
}

func TestAdminHelpTeaches(t *testing.T) {
	cleanEnv(t)
	for _, cmd := range []string{"connectors", "tasks", "plugins", "workers", "loggers"} {
		code, _, stderr := cli(t, cmd, "--help")
		if code != 0 || !strings.Contains(stderr, "--join") || !strings.Contains(stderr, "Exit codes") {
			t.Errorf("sluice %s --help: exit %d, help %q", cmd, code, stderr)
		}
	}
	if code, _, stderr := cli(t, "connectors", "status", "x", "-o", "yaml"); code != exitUsage || !strings.Contains(stderr, "yaml") {
		t.Errorf("bad -o: exit %d, %q", code, stderr)
	}
}
