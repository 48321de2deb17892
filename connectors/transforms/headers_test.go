package transforms

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/transform"
)

// hdrChain builds a connector's transform chain from config, as the
// runtime does.
func hdrChain(t *testing.T, config map[string]string) (*transform.Chain, error) {
	t.Helper()
	reg := connectors.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	return transform.Build(reg, config)
}

// hdrMustChain is hdrChain for a config that must be valid.
func hdrMustChain(t *testing.T, config map[string]string) *transform.Chain {
	t.Helper()
	c, err := hdrChain(t, config)
	if err != nil {
		t.Fatalf("Build(%v): %v", config, err)
	}
	return c
}

// hdrConfigErrors returns the errors Build reports, by key, or fails.
func hdrConfigErrors(t *testing.T, config map[string]string) map[string][]string {
	t.Helper()
	_, err := hdrChain(t, config)
	var ce *connectors.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Build(%v) error = %v, want a *connectors.ConfigError", config, err)
	}
	return ce.Errors
}

// hdrOne is the config of a chain of one transform of class.
func hdrOne(class string, kv ...string) map[string]string {
	c := map[string]string{"transforms": "x", "transforms.x.type": class}
	for i := 0; i+1 < len(kv); i += 2 {
		c["transforms.x."+kv[i]] = kv[i+1]
	}
	return c
}

// hdrApply runs r through the chain and checks that what r points to is
// left alone (the record itself is the transform's to change,
// connectors.Transform): the array behind its headers, which has spare
// room an append would write into, and its key and value.
func hdrApply(t *testing.T, c *transform.Chain, r *connectors.Record) *connectors.Record {
	t.Helper()
	spare := make([]connectors.Header, len(r.Headers), len(r.Headers)+4)
	copy(spare, r.Headers)
	r.Headers = spare
	headers := append([]connectors.Header(nil), spare...)
	key, value := r.Key, r.Value
	keyWas, valueWas := xfClone(key), xfClone(value)
	out, err := c.Apply(r)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(spare) != len(headers) || (len(headers) > 0 && !reflect.DeepEqual(spare, headers)) || !reflect.DeepEqual(spare[:cap(spare)][len(spare):], make([]connectors.Header, cap(spare)-len(spare))) {
		t.Errorf("Apply modified the headers of the record it was given")
	}
	if !reflect.DeepEqual(key, keyWas) || !reflect.DeepEqual(value, valueWas) {
		t.Errorf("Apply modified the key or value of the record it was given")
	}
	return out
}

func hdrString(hs []connectors.Header) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		s := "nil"
		if h.Schema != nil {
			s = string(h.Schema.Type)
			if h.Schema.Name != "" {
				s += "(" + h.Schema.Name[strings.LastIndexByte(h.Schema.Name, '.')+1:] + ")"
			}
			if h.Schema.Optional {
				s += "?"
			}
		}
		parts[i] = fmt.Sprintf("%s:%s=%s", h.Key, s, hdrValue(h.Value))
	}
	return strings.Join(parts, " ")
}

// hdrValue shows a value with its Go types.
func hdrValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return fmt.Sprintf("%q", x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = hdrValue(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *connectors.StructValue:
		parts := make([]string, len(x.Values))
		for i, e := range x.Values {
			parts[i] = x.Schema.Fields[i].Name + ":" + hdrValue(e)
		}
		return x.Schema.Name + "{" + strings.Join(parts, ",") + "}"
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

func TestInsertHeader(t *testing.T) {
	existing := []connectors.Header{{Key: "existing", Schema: connectors.StringSchema, Value: "existing-value"}}
	tests := []struct {
		header, literal string
		want            string
	}{
		{"inserted", "inserted-value", `existing:string="existing-value" inserted:string="inserted-value"`},
		{"existing", "inserted-value", `existing:string="existing-value" existing:string="inserted-value"`},
		{"inserted", "1", `existing:string="existing-value" inserted:int8=int8(1)`},
		{" inserted ", " 42 ", `existing:string="existing-value" inserted:int8=int8(42)`},
		{"inserted", "null", `existing:string="existing-value" inserted:nil=nil`},
		{"inserted", "", `existing:string="existing-value" inserted:string=""`},
		{"", "true", `existing:string="existing-value" :boolean=bool(true)`},
		{"inserted", "[1, 300]", `existing:string="existing-value" inserted:array=[int16(1),int16(300)]`},
		{"inserted", "2019-08-23", `existing:string="existing-value" inserted:int32(Date)=2019-08-23T00:00:00Z`},
		{"inserted", "12,34", `existing:string="existing-value" inserted:int8=int8(12)`},
	}
	for _, tt := range tests {
		c := hdrMustChain(t, hdrOne("InsertHeader", "header", tt.header, "value.literal", tt.literal))
		r := &connectors.Record{Topic: "topic", Key: "key", Value: "value", Headers: existing}
		out := hdrApply(t, c, r)
		if got := hdrString(out.Headers); got != tt.want {
			t.Errorf("InsertHeader(%q, %q) headers = %s, want %s", tt.header, tt.literal, got, tt.want)
		}
		if out.Topic != "topic" || out.Key != "key" || out.Value != "value" {
			t.Errorf("InsertHeader changed the record: %+v", out)
		}
	}
	errs := hdrConfigErrors(t, hdrOne("InsertHeader"))
	for _, k := range []string{"transforms.x.header", "transforms.x.value.literal"} {
		if len(errs[k]) != 1 || !strings.Contains(errs[k][0], "Missing required configuration") {
			t.Errorf("missing %s: errors %v", k, errs)
		}
	}
	deep := strings.Repeat("[", 3000) + strings.Repeat("]", 3000)
	errs = hdrConfigErrors(t, hdrOne("InsertHeader", "header", "h", "value.literal", deep))
	if len(errs["transforms.x.value.literal"]) != 1 {
		t.Errorf("a literal too deep to parse: errors %v, want one on value.literal", errs)
	}
}

func TestDropHeaders(t *testing.T) {
	hs := []connectors.Header{
		{Key: "existing", Schema: connectors.StringSchema, Value: "existing-value"},
		{Key: "to-drop", Schema: connectors.StringSchema, Value: "a"},
		{Key: "other", Value: int8(1)},
		{Key: "to-drop", Schema: connectors.StringSchema, Value: "b"},
		{Key: "", Value: "blank"},
	}
	tests := []struct{ headers, want string }{
		{"to-drop", `existing:string="existing-value" other:nil=int8(1) :nil="blank"`},
		{"missing", `existing:string="existing-value" to-drop:string="a" other:nil=int8(1) to-drop:string="b" :nil="blank"`},
		{" to-drop , other ", `existing:string="existing-value" :nil="blank"`},
		// Connect's lists keep empty items: this drops the header named "".
		{"to-drop,,other", `existing:string="existing-value"`},
	}
	for _, tt := range tests {
		c := hdrMustChain(t, hdrOne("DropHeaders", "headers", tt.headers))
		out := hdrApply(t, c, &connectors.Record{Topic: "t", Headers: hs})
		if got := hdrString(out.Headers); got != tt.want {
			t.Errorf("DropHeaders(%q) = %s, want %s", tt.headers, got, tt.want)
		}
	}
	for _, bad := range []string{"", "  "} {
		errs := hdrConfigErrors(t, hdrOne("DropHeaders", "headers", bad))
		if e := errs["transforms.x.headers"]; len(e) != 1 || !strings.Contains(e[0], "Empty list") {
			t.Errorf("headers=%q: errors %v, want Empty list", bad, errs)
		}
	}
	if errs := hdrConfigErrors(t, hdrOne("DropHeaders")); len(errs["transforms.x.headers"]) != 1 {
		t.Errorf("no headers: errors %v", errs)
	}
}

func TestFilter(t *testing.T) {
	c := hdrMustChain(t, hdrOne("org.apache.kafka.connect.transforms.Filter"))
	if out, err := c.Apply(&connectors.Record{Topic: "t", Value: "v"}); out != nil || err != nil {
		t.Errorf("Filter kept %v, %v", out, err)
	}
	// Under a predicate, Filter drops what it selects (or, negated, what
	// it does not).
	config := map[string]string{
		"transforms": "drop, tag", "transforms.drop.type": "Filter", "transforms.drop.predicate": "isFoo",
		"transforms.tag.type": "InsertHeader", "transforms.tag.header": "seen", "transforms.tag.value.literal": "yes",
		"predicates": "isFoo", "predicates.isFoo.type": "TopicNameMatches", "predicates.isFoo.pattern": "foo.*",
	}
	for _, negate := range []bool{false, true} {
		config["transforms.drop.negate"] = fmt.Sprint(negate)
		c := hdrMustChain(t, config)
		for topic, kept := range map[string]bool{"foobar": negate, "bar": !negate} {
			out, err := c.Apply(&connectors.Record{Topic: topic})
			if err != nil || (out != nil) != kept {
				t.Errorf("negate=%v topic %s: kept %v, %v; want kept %v", negate, topic, out != nil, err, kept)
			}
			if out != nil && hdrString(out.Headers) != `seen:string="yes"` {
				t.Errorf("the chain went on after Filter kept a record: %s", hdrString(out.Headers))
			}
		}
	}
}

// hdrFromStruct is the struct of the HeaderFrom cases: field1 and field2,
// strings unless given schemas.
func hdrFromStruct(s1, s2 *connectors.Schema, v1, v2 any) (*connectors.Schema, *connectors.StructValue) {
	s := connectors.StructSchema("rec", connectors.Field{Name: "field1", Schema: s1}, connectors.Field{Name: "field2", Schema: s2})
	s.Version, s.Doc, s.Parameters = 3, "doc", map[string]string{"p": "v"}
	return s, &connectors.StructValue{Schema: s, Values: []any{v1, v2}}
}

func TestHeaderFromWithSchema(t *testing.T) {
	str := connectors.StringSchema
	optDefault := &connectors.Schema{Type: connectors.String, Optional: true, Default: "default"}
	inner := connectors.StructSchema("inner", connectors.Field{Name: "foo", Schema: str})
	innerValue := connectors.NewStruct(inner).MustSet("foo", "foo-value")
	tests := []struct {
		name                         string
		s1, s2                       *connectors.Schema
		v1, v2                       any
		fields, headers, op, replace string
		want                         string // the headers after "header1", then the fields left
	}{
		{"basic copy", str, str, "field1-value", "field2-value", "field1", "inserted1", "copy", "",
			`inserted1:string="field1-value" | field1 field2`},
		{"basic move", str, str, "field1-value", "field2-value", "field1", "inserted1", "move", "",
			`inserted1:string="field1-value" | field2`},
		{"preexisting header name", str, str, "field1-value", "field2-value", "field1", "header1", "move", "",
			`header1:string="field1-value" | field2`},
		{"struct field", inner, str, innerValue, "field2-value", "field1", "inserted1", "move", "",
			`inserted1:struct(inner)=inner{foo:"foo-value"} | field2`},
		{"two headers from one field", str, str, "field1-value", "field2-value", "field1,field1", "inserted1,inserted2", "move", "",
			`inserted1:string="field1-value" inserted2:string="field1-value" | field2`},
		{"two fields to one header", str, str, "field1-value", "field2-value", "field1,field2", "inserted1,inserted1", "move", "",
			`inserted1:string="field1-value" inserted1:string="field2-value" |`},
		{"copy null without default", optDefault, optDefault, "field1-value", nil, "field1,field2", "inserted1,inserted2", "copy", "false",
			`inserted1:string?="field1-value" inserted2:string?=nil | field1 field2`},
		{"move null without default", optDefault, optDefault, "field1-value", nil, "field1,field2", "inserted1,inserted2", "move", "false",
			`inserted1:string?="field1-value" inserted2:string?=nil |`},
		{"copy null with default", optDefault, optDefault, "field1-value", nil, "field1,field2", "inserted1,inserted2", "copy", "true",
			`inserted1:string?="field1-value" inserted2:string?="default" | field1 field2`},
		{"move keeps the default of the field left", optDefault, optDefault, nil, nil, "field2", "inserted2", "move", "",
			`inserted2:string?="default" | field1="default"`},
		{"move keeps the null of the field left", optDefault, optDefault, nil, nil, "field2", "inserted2", "move", "false",
			`inserted2:string?=nil | field1=nil`},
	}
	for _, tt := range tests {
		for _, variant := range []string{"Key", "Value"} {
			t.Run(tt.name+" "+variant, func(t *testing.T) {
				schema, value := hdrFromStruct(tt.s1, tt.s2, tt.v1, tt.v2)
				kv := []string{"fields", tt.fields, "headers", tt.headers, "operation", tt.op}
				if tt.replace != "" {
					kv = append(kv, "replace.null.with.default", tt.replace)
				}
				c := hdrMustChain(t, hdrOne("HeaderFrom$"+variant, kv...))
				r := &connectors.Record{Topic: "t", KeySchema: connectors.StringSchema, Key: "key", Value: "value",
					Headers: []connectors.Header{{Key: "header1", Schema: str, Value: "existing-value"}}}
				if variant == "Key" {
					r.KeySchema, r.Key = schema, value
				} else {
					r.ValueSchema, r.Value = schema, value
				}
				out := hdrApply(t, c, r)
				s, v := out.ValueSchema, out.Value
				if variant == "Key" {
					s, v = out.KeySchema, out.Key
					if out.Value != "value" {
						t.Errorf("HeaderFrom$Key changed the value: %v", out.Value)
					}
				} else if out.Key != "key" {
					t.Errorf("HeaderFrom$Value changed the key: %v", out.Key)
				}
				got := hdrString(out.Headers[1:]) + " |" + hdrFields(s, v.(*connectors.StructValue), tt.name)
				if got != tt.want {
					t.Errorf("got  %s\nwant %s", got, tt.want)
				}
				if tt.op == "move" && (s.Name != "rec" || s.Version != 3 || s.Doc != "doc" || s.Parameters["p"] != "v" || s.Optional) {
					t.Errorf("moved schema %+v lost the basics of the original", s)
				}
				if tt.op == "copy" && (s != schema || v != value) {
					t.Error("copy did not keep the key or value as it was")
				}
			})
		}
	}
}

// hdrFields lists a struct's fields, with their values when the case is
// about them.
func hdrFields(s *connectors.Schema, v *connectors.StructValue, name string) string {
	var b strings.Builder
	for i, f := range s.Fields {
		b.WriteString(" " + f.Name)
		if strings.Contains(name, "field left") {
			b.WriteString("=" + hdrValue(v.Values[i]))
		}
	}
	return b.String()
}

func TestHeaderFromSchemaless(t *testing.T) {
	value := map[string]any{"field1": "field1-value", "field2": int8(2)}
	for _, op := range []string{"move", "copy"} {
		c := hdrMustChain(t, hdrOne("HeaderFrom$Value", "fields", "field1,missing", "headers", "h1,h2", "operation", op))
		out := hdrApply(t, c, &connectors.Record{Topic: "t", Value: value})
		if got, want := hdrString(out.Headers), `h1:nil="field1-value" h2:nil=nil`; got != want {
			t.Errorf("%s: headers %s, want %s", op, got, want)
		}
		m := out.Value.(map[string]any)
		if _, kept := m["field1"]; kept == (op == "move") || m["field2"] != int8(2) || len(value) != 2 {
			t.Errorf("%s: value %v (original now %v)", op, m, value)
		}
	}
}

func TestHeaderFromErrors(t *testing.T) {
	str := connectors.StringSchema
	required := &connectors.Schema{Type: connectors.Int32, Default: int32(7)}
	schema, value := hdrFromStruct(str, required, "a", nil)
	tests := []struct {
		name    string
		kv      []string
		r       *connectors.Record
		wantErr string
	}{
		{"schemaless non-map", []string{"operation", "move"}, &connectors.Record{Value: "text"},
			"Only Map objects supported in absence of schema for [header move], found: java.lang.String"},
		{"schemaless tombstone", []string{"operation", "copy"}, &connectors.Record{},
			"Only Map objects supported in absence of schema for [header copy], found: null"},
		{"schema and no struct", []string{"operation", "copy"}, &connectors.Record{ValueSchema: schema, Value: map[string]any{}},
			"Only Struct objects supported for [header copy], found: java.util.HashMap"},
		{"schema and a nil struct", []string{"operation", "move"}, &connectors.Record{ValueSchema: schema, Value: (*connectors.StructValue)(nil)},
			"Only Struct objects supported for [header move], found: null"},
		{"field the schema lacks", []string{"operation", "copy", "fields", "nope", "headers", "h"}, &connectors.Record{ValueSchema: schema, Value: value},
			`Cannot copy field "nope" to a header: the value's schema has no such field`},
		{"null in a required header", []string{"operation", "copy", "fields", "field2", "headers", "h", "replace.null.with.default", "false"},
			&connectors.Record{ValueSchema: schema, Value: value}, "A null value requires an optional schema but was Schema{INT32}"},
		{"null left in a required field", []string{"operation", "move", "replace.null.with.default", "false"},
			&connectors.Record{ValueSchema: schema, Value: value}, `Invalid value: null used for required field: "field2", schema type: INT32`},
		{"value of another type", []string{"operation", "copy"}, &connectors.Record{ValueSchema: schema, Value: &connectors.StructValue{Schema: schema, Values: []any{int64(1), nil}}},
			"The value 1 is not compatible with the schema Schema{STRING}"},
	}
	for _, tt := range tests {
		kv := append([]string{"fields", "field1", "headers", "h"}, tt.kv...)
		c := hdrMustChain(t, hdrOne("HeaderFrom$Value", kv...))
		_, err := c.Apply(tt.r)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
		}
	}
	// The default of a required field fills its null when replacing.
	c := hdrMustChain(t, hdrOne("HeaderFrom$Value", "fields", "field2", "headers", "h", "operation", "copy"))
	if out, err := c.Apply(&connectors.Record{ValueSchema: schema, Value: value}); err != nil || out.Headers[0].Value != int32(7) {
		t.Errorf("default not used: %v, %v", out, err)
	}
}

func TestHeaderFromConfig(t *testing.T) {
	tests := []struct {
		kv   []string
		key  string
		want string
	}{
		{[]string{"headers", "h", "operation", "move"}, "fields", "Missing required configuration"},
		{[]string{"fields", " ", "headers", "h", "operation", "move"}, "fields", "Empty list"},
		{[]string{"fields", "f", "headers", "", "operation", "move"}, "headers", "Empty list"},
		{[]string{"fields", "f", "headers", "h"}, "operation", "Missing required configuration"},
		{[]string{"fields", "f", "headers", "h", "operation", "MOVE"}, "operation", "String must be one of: move, copy"},
		{[]string{"fields", "f", "headers", "h", "operation", "move", "replace.null.with.default", "yes"}, "replace.null.with.default", "true or false"},
		{[]string{"fields", "f", "headers", "h", "operation", "move", "replace.null.with.default", ""}, "replace.null.with.default", "Expected value to be either true or false"},
		{[]string{"fields", "f,g", "headers", "h", "operation", "copy"}, "headers", "'fields' config must have the same number of elements as 'headers' config."},
		{[]string{"fields", "f,", "headers", "h", "operation", "copy"}, "headers", "same number of elements"},
	}
	for _, tt := range tests {
		errs := hdrConfigErrors(t, hdrOne("HeaderFrom$Key", tt.kv...))
		if e := errs["transforms.x."+tt.key]; len(e) != 1 || !strings.Contains(e[0], tt.want) {
			t.Errorf("%v: errors %v, want %q on %s", tt.kv, errs, tt.want, tt.key)
		}
	}
	hdrMustChain(t, hdrOne("HeaderFrom$Key", "fields", " f ", "headers", "h", "operation", " copy ", "replace.null.with.default", " FALSE "))
}

// TestHeaderFromCachesSchemas: one moved schema per input schema, as
// Connect's cache, bounded.
func TestHeaderFromCachesSchemas(t *testing.T) {
	c := hdrMustChain(t, hdrOne("HeaderFrom$Value", "fields", "field1", "headers", "h", "operation", "move"))
	schema, value := hdrFromStruct(connectors.StringSchema, connectors.StringSchema, "a", "b")
	first, _ := c.Apply(&connectors.Record{ValueSchema: schema, Value: value})
	second, _ := c.Apply(&connectors.Record{ValueSchema: schema, Value: value})
	if first.ValueSchema != second.ValueSchema {
		t.Error("the moved schema was built twice for one input schema")
	}
	for i := 0; i < 3*movedSchemasCap; i++ {
		s, v := hdrFromStruct(connectors.StringSchema, connectors.StringSchema, "a", "b")
		if _, err := c.Apply(&connectors.Record{ValueSchema: s, Value: v}); err != nil {
			t.Fatal(err)
		}
	}
}
