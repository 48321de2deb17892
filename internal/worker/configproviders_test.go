package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/configprovider"
)

// Placeholders in the worker's own keys are resolved with the providers
// those keys configure (KIP-421), before any key is read; the caller's
// map keeps its placeholders.
func TestWorkerKeysResolveThroughConfigProviders(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "worker.properties")
	if err := os.WriteFile(file, []byte("flush=2500\ngroup=from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{
		"bootstrap.servers":                         "k:9092",
		"config.providers.file.class":               configprovider.FileClass,
		"config.providers.file.param.allowed.paths": dir,
		"group.id":                 "${file:" + file + ":group}",
		"offset.flush.interval.ms": "${file:" + file + ":flush}",
		// Not listed in config.providers: ignored with a log line.
		"config.providers.vault.class": "com.example.VaultConfigProvider",
		// A name with a dot is a name like another.
		"config.providers":              "file,my.env",
		"config.providers.my.env.class": configprovider.EnvVarClass,
	}
	c, err := resolve(t, Config{Props: props})
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster != "from-file" || c.OffsetFlushInterval != 2500*time.Millisecond {
		t.Fatalf("cluster %q, flush %v: the placeholders were not resolved", c.Cluster, c.OffsetFlushInterval)
	}
	if props["group.id"] != "${file:"+file+":group}" {
		t.Errorf("the caller's Props changed: %q", props["group.id"])
	}
	if c.providers == nil || strings.Join(c.providers.Names(), ",") != "file,my.env" {
		t.Errorf("providers for connectors: %v", c.providers.Names())
	}
	r := classifyKeys(props)
	if why := r.ignored["config.providers.vault.class"]; !strings.Contains(why, `does not list the provider "vault"`) {
		t.Errorf("an unlisted provider's key: %q, want it ignored with a reason", why)
	}
	if len(r.refused) != 0 || len(r.unknown) != 0 {
		t.Errorf("refused %v, unknown %v", r.refused, r.unknown)
	}
}

// A bad provider configuration stops the worker at start, naming the key.
func TestBadConfigProvidersAreRefusedAtStart(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"config.providers": "v", "config.providers.v.class": "io.example.VaultProvider"},
			`config.providers.v.class: unknown config provider class "io.example.VaultProvider"; Sluice has ` + configprovider.DirectoryClass},
		{map[string]string{"config.providers": "file", "config.providers.file.class": configprovider.FileClass,
			"config.providers.file.param.allowed.paths": "etc/secrets"},
			`config.providers.file.param.allowed.paths: path "etc/secrets" is not absolute`},
		{map[string]string{"config.providers": "file"}, "config.providers.file.class: config.providers lists"},
		{map[string]string{"config.providers": "file", "config.providers.file.class": configprovider.FileClass,
			"offset.flush.interval.ms": "${file:/no/such/sluice/file:flush}"},
			`offset.flush.interval.ms: config provider "file": cannot read properties from file /no/such/sluice/file`},
	} {
		tc.props["bootstrap.servers"], tc.props["group.id"] = "k:9092", "g"
		_, err := resolve(t, Config{Props: tc.props})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.props, err, tc.want)
		}
	}
}
