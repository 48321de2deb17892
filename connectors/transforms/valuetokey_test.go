package transforms

import (
	"reflect"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// ValueToKey's tests: Connect's ValueToKeyTest, and cases checked against
// ValueToKey 4.1.1.

// xfValueToKey runs one record with the given value through ValueToKey.
func xfValueToKey(t *testing.T, props map[string]string, s *connectors.Schema, v any) (*connectors.Record, error) {
	t.Helper()
	r := &connectors.Record{Topic: "t", KeySchema: connectors.StringSchema, Key: "old", ValueSchema: s, Value: v}
	in := xfClone(v)
	out, err := xfNew(t, "ValueToKey", props).Apply(r)
	if !reflect.DeepEqual(v, in) || r.Key != "old" {
		t.Fatal("Apply modified its input")
	}
	return out, err
}

func TestValueToKeySchemaless(t *testing.T) {
	v := map[string]any{"a": int32(1), "b": int32(2), "c": int32(3)}
	out, err := xfValueToKey(t, xfProps("fields", "a,b"), nil, v)
	if err != nil || out.KeySchema != nil || !reflect.DeepEqual(out.Key, map[string]any{"a": int32(1), "b": int32(2)}) ||
		out.ValueSchema != nil || !reflect.DeepEqual(out.Value, v) || out.Topic != "t" {
		t.Fatalf("%v %+v", err, out)
	}
	// Fields the value lacks, the empty one of "a, ,b" included, are null.
	out, err = xfValueToKey(t, xfProps("fields", "a, ,z"), nil, v)
	if err != nil || !reflect.DeepEqual(out.Key, map[string]any{"a": int32(1), "": nil, "z": nil}) {
		t.Fatalf("%v %+v", err, out)
	}
	for _, v := range []any{nil, int32(1)} {
		_, err = xfValueToKey(t, xfProps("fields", "a"), nil, v)
		want := "Only Map objects supported in absence of schema for [copying fields from value to key], found: " + className(v)
		if errString(err) != want {
			t.Errorf("value %v: %v", v, err)
		}
	}
}

func TestValueToKeyWithSchema(t *testing.T) {
	s := connectors.StructSchema("v", xfField("a", connectors.Int32Schema), xfField("b", connectors.Int32Schema), xfField("c", connectors.Int32Schema))
	v := xfStruct(s, "a", int32(1), "b", int32(2), "c", int32(3))
	out, err := xfValueToKey(t, xfProps("fields", "b,a"), s, v)
	wantSchema := connectors.StructSchema("", xfField("b", connectors.Int32Schema), xfField("a", connectors.Int32Schema))
	if err != nil || !reflect.DeepEqual(out.KeySchema, wantSchema) || !reflect.DeepEqual(out.Key, xfStruct(wantSchema, "b", int32(2), "a", int32(1))) ||
		out.ValueSchema != s || out.Value != v {
		t.Fatalf("%v %+v", err, out)
	}
	if out.KeySchema.Fields[0].Schema != s.Fields[1].Schema {
		t.Fatal("the key's fields do not keep the value's field schemas")
	}

	for _, c := range []struct {
		name, fields string
		v            any
		want         string
	}{
		{"missing field", "not_exist", v, "Field does not exist: not_exist"},
		{"empty field", "a,,", v, "Field does not exist: "},
		{"duplicate field", "a,a", v, "Cannot create field because of field name duplication a"},
		{"null value", "a", nil, "Only Struct objects supported for [copying fields from value to key], found: null"},
		{"map value", "a", map[string]any{}, "Only Struct objects supported for [copying fields from value to key], found: java.util.HashMap"},
	} {
		if _, err := xfValueToKey(t, xfProps("fields", c.fields), s, c.v); errString(err) != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestValueToKeyReplaceNull: with replace.null.with.default false a null
// field with a default is null in the key.
func TestValueToKeyReplaceNull(t *testing.T) {
	s := connectors.StructSchema("", xfField("optional_with_default", &connectors.Schema{Type: connectors.Int32, Optional: true, Default: int32(42)}))
	req := connectors.StructSchema("", xfField("r", &connectors.Schema{Type: connectors.Int32, Default: int32(42)}))
	for _, c := range []struct {
		replace string
		s       *connectors.Schema
		want    any
		wantErr string
	}{
		{"true", s, int32(42), ""},
		{"false", s, nil, ""},
		{"true", req, int32(42), ""},
		{"false", req, nil, `Invalid value: null used for required field: "r", schema type: INT32`},
	} {
		out, err := xfValueToKey(t, xfProps("fields", c.s.Fields[0].Name, "replace.null.with.default", c.replace), c.s, connectors.NewStruct(c.s))
		if errString(err) != c.wantErr || err == nil && out.Key.(*connectors.StructValue).Values[0] != c.want {
			t.Errorf("replace %s %s: %v %+v", c.replace, c.s.Fields[0].Name, err, out)
		}
	}
}

func TestValueToKeyConfig(t *testing.T) {
	for props, want := range map[string]string{
		"":    `Invalid value "" for configuration fields: Empty list`,
		" , ": "",
		"a":   "",
	} {
		if _, err := xfConfigure("ValueToKey", xfProps("fields", props)); errString(err) != want {
			t.Errorf("fields %q: %v", props, err)
		}
	}
	if _, err := xfConfigure("ValueToKey", nil); err == nil {
		t.Error("no fields accepted")
	}
}

func TestValueToKeyCachesSchemas(t *testing.T) {
	s := connectors.StructSchema("", xfField("a", connectors.Int32Schema))
	x := xfNew(t, "ValueToKey", xfProps("fields", "a"))
	a, _ := x.Apply(&connectors.Record{ValueSchema: s, Value: xfStruct(s, "a", int32(1))})
	b, _ := x.Apply(&connectors.Record{ValueSchema: s, Value: xfStruct(s, "a", int32(2))})
	if a.KeySchema != b.KeySchema {
		t.Fatal("key schema derived again")
	}
}
