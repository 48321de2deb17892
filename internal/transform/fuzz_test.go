package transform_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/builtin"
	"github.com/sluice-io/sluice/internal/transform"
)

// fuzzRecords are records of every shape a chain meets: schemaless maps,
// structs, primitives, tombstones, headers.
func fuzzRecords() []*connectors.Record {
	inner := connectors.StructSchema("inner", connectors.Field{Name: "x", Schema: connectors.Int32Schema})
	outer := connectors.StructSchema("outer",
		connectors.Field{Name: "id", Schema: connectors.Int64Schema},
		connectors.Field{Name: "name", Schema: connectors.OptionalStringSchema},
		connectors.Field{Name: "in", Schema: inner})
	st := connectors.NewStruct(outer).MustSet("id", int64(7)).MustSet("name", "n").MustSet("in", connectors.NewStruct(inner).MustSet("x", int32(1)))
	part := int32(0)
	off := int64(42)
	return []*connectors.Record{
		{Topic: "t", Key: "k", Value: map[string]any{"id": int64(1), "name": "a", "nested": map[string]any{"x": 1.5}}, Timestamp: time.UnixMilli(1700000000000)},
		{Topic: "t", KafkaPartition: &part, KeySchema: connectors.StringSchema, Key: "k", ValueSchema: outer, Value: st, SinkOffset: &off,
			Headers: []connectors.Header{{Key: "h", Schema: connectors.StringSchema, Value: "v"}}},
		{Topic: "t", Key: nil, Value: nil},
		{Topic: "t", ValueSchema: connectors.Int64Schema, Value: int64(5)},
		{Topic: "t", Value: []any{"a", int64(1)}},
	}
}

// Building a chain from any config never panics: a bad one is an error
// that names keys; a chain that builds never panics on any record.
func FuzzBuild(f *testing.F) {
	for _, seed := range []string{
		"transforms=a\ntransforms.a.type=org.apache.kafka.connect.transforms.RegexRouter\ntransforms.a.regex=(.*)\ntransforms.a.replacement=x-$1",
		"transforms=a\ntransforms.a.type=org.apache.kafka.connect.transforms.Cast$Value\ntransforms.a.spec=id:string",
		"transforms=a,b\ntransforms.a.type=org.apache.kafka.connect.transforms.InsertField$Value\ntransforms.a.static.field=s\ntransforms.a.static.value=v\ntransforms.b.type=org.apache.kafka.connect.transforms.Filter\ntransforms.b.predicate=p\npredicates=p\npredicates.p.type=org.apache.kafka.connect.transforms.predicates.TopicNameMatches\npredicates.p.pattern=t.*",
		"transforms=a\ntransforms.a.type=org.apache.kafka.connect.transforms.Flatten$Value\ntransforms.a.delimiter=_",
		"transforms=a\ntransforms.a.type=org.apache.kafka.connect.transforms.ReplaceField$Value\ntransforms.a.renames=id:ID,name:NAME",
		"transforms=a\ntransforms.a.type=org.apache.kafka.connect.transforms.TimestampConverter$Value\ntransforms.a.target.type=string\ntransforms.a.format=yyyy-MM-dd",
		"transforms=a\ntransforms.a.type=nope\ntransforms.a.negate=maybe",
		"predicates=p,p\npredicates.p.type=",
	} {
		f.Add(seed)
	}
	reg := builtin.Registry()
	f.Fuzz(func(t *testing.T, in string) {
		config := map[string]string{}
		for _, line := range strings.Split(in, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				config[k] = v
			}
		}
		chain, err := transform.Build(reg, config)
		if err != nil {
			if ce, ok := err.(*connectors.ConfigError); !ok || len(ce.Errors) == 0 {
				t.Fatalf("Build error %T %v: want a *connectors.ConfigError naming keys", err, err)
			}
			return
		}
		defer chain.Close()
		for _, r := range fuzzRecords() {
			_, _ = chain.Apply(r)
		}
	})
}
