package transforms

import (
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/transform"
)

// Test helpers for the transforms of connectdata.go's users, and tests of
// its helpers.

// chainOf builds a one-transform chain of class (a simple class name such
// as InsertField$Value) from props, as a connector config would.
func chainOf(class string, props map[string]string) (*transform.Chain, error) {
	reg := connectors.NewRegistry()
	if err := Register(reg); err != nil {
		return nil, err
	}
	config := map[string]string{"transforms": "x", "transforms.x.type": class}
	for k, v := range props {
		config["transforms.x."+k] = v
	}
	return transform.Build(reg, config)
}

// configured is chainOf that fails the test on a config error.
func configured(t *testing.T, class string, props map[string]string) *transform.Chain {
	t.Helper()
	c, err := chainOf(class, props)
	if err != nil {
		t.Fatalf("%s %v: %v", class, props, err)
	}
	return c
}

// applyOne runs r through c and returns the transform's own error.
func applyOne(c *transform.Chain, r *connectors.Record) (*connectors.Record, error) {
	out, err := c.Apply(r)
	var te *transform.Error
	if errors.As(err, &te) {
		return out, te.Err
	}
	return out, err
}

// wantErr checks err's message contains want ("" wants no error).
func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q, want it to contain %q", err, want)
	}
}

func i32p(v int32) *int32 { return &v }
func i64p(v int64) *int64 { return &v }

// sourceRecord is a record on topic "test", partition 0, with a value.
func sourceRecord(vs *connectors.Schema, v any) *connectors.Record {
	return &connectors.Record{Topic: "test", KafkaPartition: i32p(0), ValueSchema: vs, Value: v}
}

func TestCheckValue(t *testing.T) {
	inner := connectors.StructSchema("inner", connectors.Field{Name: "a", Schema: connectors.Int32Schema})
	innerCopy := connectors.StructSchema("inner", connectors.Field{Name: "a", Schema: connectors.Int32Schema})
	other := connectors.StructSchema("other", connectors.Field{Name: "a", Schema: connectors.Int32Schema})
	decimal := &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Parameters: map[string]string{"scale": "2"}}
	arr := &connectors.Schema{Type: connectors.Array, Items: connectors.StringSchema}
	cases := []struct {
		name string
		s    *connectors.Schema
		v    any
		want string
	}{
		{"null required", connectors.Int32Schema, nil, `Invalid value: null used for required field: "f", schema type: INT32`},
		{"null optional", connectors.OptionalStringSchema, nil, ""},
		{"null required with default", &connectors.Schema{Type: connectors.Int32, Default: int32(1)}, nil, "null used for required"},
		{"wrong class", connectors.Int32Schema, "x", `Invalid Java object for schema with type INT32: class java.lang.String for field: "f"`},
		{"wrong class named", decimal, 1.5, `Invalid Java object for schema "org.apache.kafka.connect.data.Decimal" with type BYTES: class java.lang.Double`},
		{"decimal", decimal, big.NewRat(1, 4), ""},
		{"timestamp", timestampSchema, time.UnixMilli(5), ""},
		{"timestamp as long", timestampSchema, int64(5), "with type INT64: class java.lang.Long"},
		{"struct", inner, connectors.NewStruct(inner).MustSet("a", int32(1)), ""},
		{"struct equal schema", inner, connectors.NewStruct(innerCopy).MustSet("a", int32(1)), ""},
		{"struct other schema", inner, connectors.NewStruct(other).MustSet("a", int32(1)), "Struct schemas do not match."},
		{"struct invalid", inner, connectors.NewStruct(inner), `null used for required field: "a"`},
		{"array", arr, []any{"a", nil}, `null used for required element of array field: "f"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantErr(t, checkValue(c.s, c.v, fieldLocation("f")), c.want) })
	}
}

func TestSchemaCache(t *testing.T) {
	var c schemaCache
	a := connectors.StructSchema("a", connectors.Field{Name: "x", Schema: connectors.Int32Schema})
	aCopy := connectors.StructSchema("a", connectors.Field{Name: "x", Schema: connectors.Int32Schema})
	out := &connectors.Schema{Type: connectors.Struct}
	c.put(a, out)
	if c.get(a) != out || c.get(aCopy) != out {
		t.Fatal("an equal schema must find the derived one")
	}
	for i := 0; i < schemaCacheSize; i++ {
		c.put(connectors.StructSchema("s"+string(rune('a'+i))), out)
	}
	if c.get(a) != nil {
		t.Fatal("the least recently used entry must be evicted past 16")
	}
}

func TestJavaList(t *testing.T) {
	cases := map[string][]string{
		"":            {},
		"  ":          {},
		"a":           {"a"},
		" a , b ,c ":  {"a", "b", "c"},
		"a,,b":        {"a", "", "b"},
		"a,":          {"a", ""},
		",":           {"", ""},
		"a\t,\nb":     {"a", "b"},
		"a b":         {"a b"},
		"\x01a,b\x01": {"a", "b"},
	}
	for in, want := range cases {
		got := javaList(in)
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("javaList(%q) = %q, want %q", in, got, want)
		}
	}
}
