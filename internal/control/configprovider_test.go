package control_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/configprovider"
	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
)

const (
	copyingClass   = "com.example.CopyingSource"
	providerSecret = "right-Pa55"
)

// copyingSource copies its config into each task config, as the built-in
// connectors do, and accepts only the password providerSecret, so a test
// can tell whether it saw the placeholder or the value.
type copyingSource struct{ config map[string]string }

func (c *copyingSource) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().Define(connectors.ConfigKey{Name: "password", Type: connectors.TypePassword,
		Validate: func(v string) error {
			if v != providerSecret {
				return errors.New("not the password")
			}
			return nil
		}})
}

func (c *copyingSource) Start(_ context.Context, _ connectors.ConnectorContext, config map[string]string) error {
	if config["password"] != providerSecret {
		return errors.New("started without the password")
	}
	c.config = config
	return nil
}

func (c *copyingSource) TaskConfigs(context.Context, int) ([]map[string]string, error) {
	return []map[string]string{maps.Clone(c.config)}, nil
}

func (c *copyingSource) Stop() error                    { return nil }
func (c *copyingSource) NewTask() connectors.SourceTask { return nil }

func providerEnv(t *testing.T) (*controltest.Env, string) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets.properties")
	if err := os.WriteFile(file, []byte("pw="+providerSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := configprovider.FromWorkerProps(map[string]string{
		"config.providers": "file", "config.providers.file.class": configprovider.FileClass,
		"config.providers.file.param.allowed.paths": dir,
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	e := controltest.NewEnv(t, func(o *control.Options) {
		o.Providers = tr
		o.Plugins = controltest.Registry()
		o.Plugins.MustRegister(connectors.Plugin{Class: copyingClass, Type: connectors.Source,
			New: func() connectors.Connector { return &copyingSource{} }})
	})
	return e, file
}

// Validation checks the resolved value, shows [hidden], and reports a
// placeholder that cannot be resolved on its key.
func TestValidateResolvesPlaceholders(t *testing.T) {
	e, file := providerEnv(t)
	placeholder := "${file:" + file + ":pw}"
	res, err := e.C.Validate(copyingClass, map[string]string{"name": "c", "password": placeholder})
	if err != nil || res.ErrorCount != 0 {
		t.Fatalf("%+v %v: want the resolved password accepted", res, err)
	}
	if v := valueOf(res, "password"); v != connectors.HiddenValue {
		t.Errorf("password shown as %q", v)
	}

	missing := "${file:" + filepath.Join(filepath.Dir(file), "none.properties") + ":pw}"
	res, err = e.C.Validate(copyingClass, map[string]string{"name": "c", "password": missing})
	if err != nil {
		t.Fatal(err)
	}
	if errs := errorsOf(res, "password"); !strings.Contains(errs, `config provider "file"`) || !strings.Contains(errs, "none.properties") {
		t.Errorf("errors %q, want the provider and the path", errs)
	}

	// A wrong password is refused without being repeated.
	res, _ = e.C.Validate(copyingClass, map[string]string{"name": "c", "password": "wrong-Pa55"})
	if errs := errorsOf(res, "password"); !strings.Contains(errs, "Invalid value [hidden]") || strings.Contains(errs, "wrong-Pa55") {
		t.Errorf("errors %q, want the value hidden", errs)
	}
}

// The leader's split runs the connector on the resolved config, and the
// task configs it stores carry the placeholder back.
func TestCreateStoresPlaceholdersNotSecrets(t *testing.T) {
	e, file := providerEnv(t)
	placeholder := "${file:" + file + ":pw}"
	if _, err := e.C.Create(ctx(t), "c", map[string]string{"connector.class": copyingClass, "password": placeholder}, ""); err != nil {
		t.Fatal(err)
	}
	cfg, err := e.C.Config("c")
	if err != nil || cfg["password"] != placeholder {
		t.Fatalf("stored config %v %v", cfg, err)
	}
	tasks, err := e.C.Tasks("c")
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %v %v: want the leader's split (it fails without the resolved password)", tasks, err)
	}
	if tasks[0].Config["password"] != placeholder {
		t.Errorf("stored task config %v, want the placeholder", tasks[0].Config)
	}
}

func valueOf(res control.ConfigInfos, key string) string {
	for _, c := range res.Configs {
		if c.Value.Name == key && c.Value.Value != nil {
			return *c.Value.Value
		}
	}
	return ""
}

func errorsOf(res control.ConfigInfos, key string) string {
	for _, c := range res.Configs {
		if c.Value.Name == key {
			return strings.Join(c.Value.Errors, "; ")
		}
	}
	return ""
}
