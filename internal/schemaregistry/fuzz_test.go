package schemaregistry

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// FuzzParseSchema: no schema text, of any type, makes the parsers or the
// compatibility checks panic; what parses is checked against itself and
// must be compatible with itself.
func FuzzParseSchema(f *testing.F) {
	for _, s := range []string{userV1, userV2, `"string"`, `{"type":"array","items":"int"}`, `{"type":"enum","name":"E","symbols":["A"]}`} {
		f.Add(0, s)
	}
	for _, s := range []string{`syntax = "proto3"; message M { int32 a = 1; map<string, M> m = 2; oneof o { string s = 3; } }`,
		`syntax = "proto2"; message M { required int32 a = 1; extensions 100 to 200; }`, `message`,
		// A base64 FileDescriptorProto (package p; message M { int32 a = 1; }).
		`CgdtLnByb3RvEgFwIg4KAU0SCQoBYRgBIAEoBWIGcHJvdG8z`} {
		f.Add(1, s)
	}
	for _, s := range []string{`{"type":"object","properties":{"a":{"type":"integer","maximum":3}},"required":["a"]}`, `true`,
		`{"items":[{"type":"string"}],"additionalItems":false}`, `{"$ref":"#/definitions/x","definitions":{"x":{"type":"string"}}}`} {
		f.Add(2, s)
	}
	types := []string{TypeAvro, TypeProtobuf, TypeJSON}
	f.Fuzz(func(t *testing.T, kind int, text string) {
		typ := types[uint(kind)%uint(len(types))]
		for _, normalize := range []bool{false, true} {
			p, err := parseSchema(typ, text, nil, normalize)
			if err != nil {
				continue
			}
			if problems := compatibilityProblems(CompatFull, p, p, 1); len(problems) > 0 {
				t.Fatalf("%s schema %q is not compatible with itself: %q", typ, text, problems)
			}
		}
	})
}

// FuzzStateApply: no record read from the topic, however malformed, makes
// the registry panic; a bad one is an error.
func FuzzStateApply(f *testing.F) {
	f.Add([]byte(`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`), []byte(`{"subject":"s","version":1,"id":1,"schema":"\"int\""}`))
	f.Add([]byte(`{"keytype":"CONFIG","subject":null,"magic":0}`), []byte(`{"compatibilityLevel":"FULL"}`))
	f.Add([]byte(`{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}`), []byte(`{"subject":"s","version":3}`))
	f.Add([]byte(`{"keytype":"MODE","magic":0}`), []byte(nil))
	f.Add([]byte(`{"keytype":"SCHEMA"}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		st := newState()
		_ = st.apply(key, value)
		_ = st.subjectNames(true)
		for name := range st.subjects {
			_ = st.versions(name, true)
			_ = st.latest(name)
		}
	})
}

// FuzzPrintDescriptor: no FileDescriptorProto, however odd, makes writing
// it out as .proto text or the check of the result panic.
func FuzzPrintDescriptor(f *testing.F) {
	f.Add([]byte("\n\x07m.proto\x12\x01p\"\x0e\n\x01M\x12\t\n\x01a\x18\x01 \x01(\x05b\x06proto3"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		fdp := &descriptorpb.FileDescriptorProto{}
		if proto.Unmarshal(raw, fdp) != nil {
			return
		}
		text, err := printDescriptor(fdp)
		if err != nil {
			return
		}
		if fd, err := compileProto(text, nil); err == nil {
			_ = sameDescriptor(fdp, fd)
		}
	})
}
