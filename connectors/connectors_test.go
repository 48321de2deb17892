package connectors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type nopConnector struct{}

func (nopConnector) Config() *ConfigDef { return NewConfigDef() }
func (nopConnector) Start(context.Context, ConnectorContext, map[string]string) error {
	return nil
}
func (nopConnector) TaskConfigs(context.Context, int) ([]map[string]string, error) { return nil, nil }
func (nopConnector) Stop() error                                                   { return nil }

func TestRegistryFindsPluginsByEveryName(t *testing.T) {
	r := NewRegistry().MustRegister(Plugin{Class: "org.example.FooSourceConnector", Type: Source, New: func() Connector { return nopConnector{} }, Aliases: []string{"foo"}})
	for _, name := range []string{"org.example.FooSourceConnector", "FooSourceConnector", "FooSource", "foo", " FooSource "} {
		if p, err := r.Lookup(name); err != nil || p.Class != "org.example.FooSourceConnector" {
			t.Errorf("Lookup(%q) = %v, %v", name, p.Class, err)
		}
	}
	_, err := r.Lookup("Bar")
	var unknown *UnknownClassError
	if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "org.example.FooSourceConnector") {
		t.Fatalf("unknown class error %v does not list the known classes", err)
	}
	if err := r.Register(Plugin{Class: "other.FooSource", Type: Sink, New: func() Connector { return nopConnector{} }}); err == nil {
		t.Fatal("a second plugin took the name FooSource")
	}
	if err := r.Register(Plugin{Class: "x.Y"}); err == nil {
		t.Fatal("a plugin without type and constructor was accepted")
	}
}

func TestConfigDefNamesEveryBadKeyAtOnce(t *testing.T) {
	def := NewConfigDef().
		Define(ConfigKey{Name: "topic", Required: true, Validate: NonEmpty}).
		Define(ConfigKey{Name: "batch.size", Type: TypeInt, Default: "100", Validate: AtLeast(1)}).
		Define(ConfigKey{Name: "mode", Default: "bulk", Validate: OneOf("bulk", "incrementing")}).
		Define(ConfigKey{Name: "enabled", Type: TypeBoolean, Default: "true"})
	_, err := def.Parse(map[string]string{"batch.size": "0", "mode": "fast", "enabled": "yes"})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v is not a ConfigError", err)
	}
	for _, k := range []string{"topic", "batch.size", "mode", "enabled"} {
		if len(ce.Errors[k]) == 0 || !strings.Contains(err.Error(), k) {
			t.Errorf("key %s not named in %v", k, err)
		}
	}
	cfg, err := def.Parse(map[string]string{"topic": "t", "batch.size": " 7 ", "extra": "kept"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.String("topic") != "t" || cfg.Int("batch.size") != 7 || cfg.String("mode") != "bulk" || !cfg.Bool("enabled") || cfg.Raw()["extra"] != "kept" {
		t.Fatalf("parsed config wrong: %+v", cfg)
	}
	if cfg.IsSet("mode") || !cfg.IsSet("topic") {
		t.Fatal("IsSet does not tell given keys from defaults")
	}
}

func TestRetriableSurvivesWrapping(t *testing.T) {
	base := errors.New("db down")
	err := Retriable(base)
	if !IsRetriable(err) || !errors.Is(err, base) {
		t.Fatal("Retriable lost its mark or its cause")
	}
	if IsRetriable(base) || Retriable(nil) != nil {
		t.Fatal("plain errors are not retriable")
	}
}

func TestStructValueFieldsBySchema(t *testing.T) {
	s := StructSchema("v", Field{Name: "a", Schema: Int32Schema}, Field{Name: "b", Schema: OptionalStringSchema})
	v := NewStruct(s)
	if err := v.Set("nope", 1); err == nil {
		t.Fatal("set a field the schema lacks")
	}
	if err := v.Validate(); err == nil {
		t.Fatal("missing required field a passed validation")
	}
	v.MustSet("a", int32(3))
	if v.Get("a") != int32(3) || v.Get("b") != nil || v.Validate() != nil {
		t.Fatalf("struct %+v", v.Values)
	}
}

// NewStruct packs small structs into one allocation; whatever the size,
// the values are the schema's length, start null, and cannot grow into
// memory another struct uses.
func TestNewStructSizes(t *testing.T) {
	for _, n := range []int{0, 1, 4, 5, 8, 9, 16, 17, 40} {
		fields := make([]Field, n)
		for i := range fields {
			fields[i] = Field{Name: fmt.Sprintf("f%d", i), Schema: Int32Schema}
		}
		s := StructSchema("s", fields...)
		v := NewStruct(s)
		if v.Schema != s || len(v.Values) != n || cap(v.Values) != n {
			t.Fatalf("%d fields: schema %p (want %p), len %d cap %d", n, v.Schema, s, len(v.Values), cap(v.Values))
		}
		for i, x := range v.Values {
			if x != nil {
				t.Fatalf("%d fields: value %d is %v, want null", n, i, x)
			}
		}
		if n > 0 {
			w := NewStruct(s)
			v.Values[n-1] = int32(1)
			if w.Values[n-1] != nil {
				t.Fatalf("%d fields: two structs share their values", n)
			}
		}
	}
}
