package schemaregistry

import (
	"strings"
	"testing"
)

// compatCase is one change from old to new with the verdict of each
// direction: backward (new reads old) and forward (old reads new).
type compatCase struct {
	name     string
	old, new string
	backward bool
	forward  bool
}

func checkCompatCases(t *testing.T, typ string, cases []compatCase) {
	t.Helper()
	for _, c := range cases {
		old, err := parseSchema(typ, c.old, nil, false)
		if err != nil {
			t.Fatalf("%s: old schema: %v", c.name, err)
		}
		cand, err := parseSchema(typ, c.new, nil, false)
		if err != nil {
			t.Fatalf("%s: new schema: %v", c.name, err)
		}
		for _, dir := range []struct {
			level string
			want  bool
		}{{CompatBackward, c.backward}, {CompatForward, c.forward}, {CompatFull, c.backward && c.forward}} {
			problems := compatibilityProblems(dir.level, cand, old, 1)
			if got := len(problems) == 0; got != dir.want {
				t.Errorf("%s %s: compatible=%v, want %v (problems: %q)", c.name, dir.level, got, dir.want, problems)
			}
			for _, p := range problems {
				if !strings.Contains(p, "version 1") {
					t.Errorf("%s %s: problem %q does not name the version", c.name, dir.level, p)
				}
			}
		}
	}
}

func TestProtobufCompatibility(t *testing.T) {
	const base = `syntax = "proto3"; package shop;
message Order { int64 id = 1; string note = 2; Item item = 3; }
message Item { string sku = 1; }`
	cases := []compatCase{
		{"same", base, base, true, true},
		{"field added", base, `syntax = "proto3"; package shop;
message Order { int64 id = 1; string note = 2; Item item = 3; bool paid = 4; }
message Item { string sku = 1; }`, true, true},
		{"field removed", base, `syntax = "proto3"; package shop;
message Order { int64 id = 1; Item item = 3; }
message Item { string sku = 1; }`, true, true},
		{"field renamed", base, `syntax = "proto3"; package shop;
message Order { int64 order_id = 1; string note = 2; Item item = 3; }
message Item { string sku = 1; }`, true, true},
		{"int64 to int32 (one wire encoding)", base, `syntax = "proto3"; package shop;
message Order { int32 id = 1; string note = 2; Item item = 3; }
message Item { string sku = 1; }`, true, true},
		{"string to bytes", base, `syntax = "proto3"; package shop;
message Order { int64 id = 1; bytes note = 2; Item item = 3; }
message Item { string sku = 1; }`, true, true},
		{"int64 to string", base, `syntax = "proto3"; package shop;
message Order { string id = 1; string note = 2; Item item = 3; }
message Item { string sku = 1; }`, false, false},
		{"int64 to sint64 (zigzag)", base, `syntax = "proto3"; package shop;
message Order { sint64 id = 1; string note = 2; Item item = 3; }
message Item { string sku = 1; }`, false, false},
		{"message type changed", base, `syntax = "proto3"; package shop;
message Order { int64 id = 1; string note = 2; Other item = 3; }
message Item { string sku = 1; }
message Other { string sku = 1; }`, false, false},
		// Confluent's MESSAGE_REMOVED: the side that lacks the message
		// cannot read it.
		{"message added", base, base + `
message Extra { int32 x = 1; }`, true, false},
		{"message removed", base + `
message Extra { int32 x = 1; }`, base, false, true},
		{"package changed", base, strings.Replace(base, "package shop;", "package store;", 1), false, false},
		{"one field into a new oneof", base, `syntax = "proto3"; package shop;
message Order { int64 id = 1; oneof extra { string note = 2; } Item item = 3; }
message Item { string sku = 1; }`, true, true},
		{"two fields into a new oneof", base, `syntax = "proto3"; package shop;
message Order { int64 id = 1; oneof extra { string note = 2; Item item = 3; } }
message Item { string sku = 1; }`, false, true},
		{"enum constant added", `syntax = "proto3"; enum E { A = 0; } message M { E e = 1; }`,
			`syntax = "proto3"; enum E { A = 0; B = 1; } message M { E e = 1; }`, true, true},
		{"map value type changed", `syntax = "proto3"; message M { map<string, int64> m = 1; }`,
			`syntax = "proto3"; message M { map<string, string> m = 1; }`, false, false},
		// Confluent's REQUIRED_FIELD_ADDED and REQUIRED_FIELD_REMOVED
		// are both incompatible, so either direction fails.
		{"proto2 required field added", `syntax = "proto2"; message M { optional int32 a = 1; }`,
			`syntax = "proto2"; message M { optional int32 a = 1; required int32 b = 2; }`, false, false},
		{"proto2 optional field added", `syntax = "proto2"; message M { optional int32 a = 1; }`,
			`syntax = "proto2"; message M { optional int32 a = 1; optional int32 b = 2; }`, true, true},
	}
	checkCompatCases(t, TypeProtobuf, cases)
}

func TestJSONSchemaCompatibility(t *testing.T) {
	const open = `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"]}`
	const closed = `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"],"additionalProperties":false}`
	cases := []compatCase{
		{"same", open, open, true, true},
		{"description edited", open, `{"type":"object","description":"a user","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"]}`, true, true},
		{"integer widened to number", open, `{"type":"object","properties":{"id":{"type":"number"},"name":{"type":"string"}},"required":["id"]}`, true, false},
		{"type changed", open, `{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},"required":["id"]}`, false, false},
		{"required added", open, `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id","name"]}`, false, true},
		// Confluent: adding a property to an open content model is
		// incompatible (old data may hold anything under that name);
		// to a closed one, only the reader that lacks it breaks.
		{"property added to open model", open, `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},"age":{"type":"integer"}},"required":["id"]}`, false, true},
		{"property added to closed model", closed, `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},"age":{"type":"integer"}},"required":["id"],"additionalProperties":false}`, true, false},
		{"property removed from closed model", closed, `{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":false}`, false, true},
		{"closed to open", closed, open, true, false},
		{"maxLength narrowed", `{"type":"string","maxLength":10}`, `{"type":"string","maxLength":5}`, false, true},
		{"minimum lowered", `{"type":"integer","minimum":5}`, `{"type":"integer","minimum":0}`, true, false},
		{"enum value added", `{"enum":["a","b"]}`, `{"enum":["a","b","c"]}`, true, false},
		{"items type changed", `{"type":"array","items":{"type":"string"}}`, `{"type":"array","items":{"type":"integer"}}`, false, false},
		{"pattern added", `{"type":"string"}`, `{"type":"string","pattern":"^a"}`, false, true},
		// Keywords Sluice does not judge are refused when they change.
		{"oneOf changed", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `{"oneOf":[{"type":"string"}]}`, false, false},
		{"false to anything", `false`, `true`, true, false},
	}
	checkCompatCases(t, TypeJSON, cases)
}

func TestInvalidSchemasNameTheProblem(t *testing.T) {
	for _, c := range []struct {
		typ, schema, want string
	}{
		{TypeAvro, `{"type":"record","name":"R","fields":[{"name":"a","type":"nope"}]}`, "nope"},
		{TypeAvro, `{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}`, "default"},
		{TypeAvro, `{"type":`, "not JSON"},
		{TypeProtobuf, `syntax = "proto3"; message M { int32 a = 1; string a = 2; }`, "a"},
		{TypeProtobuf, `syntax = "proto3"; message M { Missing m = 1; }`, "Missing"},
		{TypeProtobuf, `syntax = "proto3"; import "nowhere.proto"; message M {}`, "nowhere.proto"},
		{TypeJSON, `{"type":"strin"}`, "strin"},
		{TypeJSON, `[1,2]`, "object or a boolean"},
		{TypeJSON, `{"$ref":"file:///etc/passwd"}`, "not a registered reference"},
		{TypeJSON, strings.Repeat(`{"items":`, 300) + `{}` + strings.Repeat("}", 300), "at most 256"},
		{TypeAvro, strings.Repeat(`{"type":"array","items":`, 300) + `"int"` + strings.Repeat("}", 300), "at most 256"},
		{TypeProtobuf, `syntax = "proto3";` + strings.Repeat("message A {", 300) + strings.Repeat("}", 300), "at most 256"},
	} {
		_, err := parseSchema(c.typ, c.schema, nil, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: error %v, want one naming %q", c.typ, c.schema, err, c.want)
		}
	}
}

func TestNestingDepthSkipsStringsAndComments(t *testing.T) {
	for text, want := range map[string]int{
		`{"a":[1,{"b":"}}}{{{"}]}`:                                        3,
		"message M { // {{{\n string s = 1 [default = \"{{\"]; /* { */ }": 2,
		`{"s":"\\"}`: 1,
		`'{'`:        0,
	} {
		if got := nestingDepth(text); got != want {
			t.Errorf("nestingDepth(%q) = %d, want %d", text, got, want)
		}
	}
}
