package schemaregistry

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Confluent's registry takes a Protobuf schema as .proto text or as a
// base64-encoded FileDescriptorProto, which is how Confluent's Python
// serializer sends it, and stores the text. Sluice does the same: a
// descriptor is written out as .proto text here, the text is compiled like
// any other, and the compiled result must equal the descriptor it came
// from, so that nothing is lost on the way.

// decodeDescriptor reads text as a base64 FileDescriptorProto; ok is false
// when text is not one (it is then .proto text, or invalid).
func decodeDescriptor(text string) (*descriptorpb.FileDescriptorProto, bool) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil || len(raw) == 0 {
		return nil, false
	}
	fdp := &descriptorpb.FileDescriptorProto{}
	if err := proto.Unmarshal(raw, fdp); err != nil {
		return nil, false
	}
	return fdp, true
}

// serializedDescriptor is a compiled schema as base64 of its
// FileDescriptorProto: Confluent's ?format=serialized.
func serializedDescriptor(fd protoreflect.FileDescriptor) (string, error) {
	b, err := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// sameDescriptor reports whether compiled, printed from original, holds
// what original holds. json_name is left out (protoc fills it in, the
// compiler does not), as are the file's name and source info.
func sameDescriptor(original *descriptorpb.FileDescriptorProto, compiled protoreflect.FileDescriptor) bool {
	a := proto.Clone(original).(*descriptorpb.FileDescriptorProto)
	b := protodesc.ToFileDescriptorProto(compiled)
	for _, f := range []*descriptorpb.FileDescriptorProto{a, b} {
		f.Name, f.SourceCodeInfo = nil, nil
		if f.GetSyntax() == "proto2" {
			f.Syntax = nil
		}
		clearJSONNames(f.MessageType)
		for _, x := range f.Extension {
			x.JsonName = nil
		}
	}
	return proto.Equal(a, b)
}

func clearJSONNames(msgs []*descriptorpb.DescriptorProto) {
	for _, m := range msgs {
		for _, f := range m.Field {
			f.JsonName = nil
		}
		for _, x := range m.Extension {
			x.JsonName = nil
		}
		clearJSONNames(m.NestedType)
	}
}

// protoPrinter writes a FileDescriptorProto as .proto text.
type protoPrinter struct {
	b      strings.Builder
	proto3 bool
	err    error
}

func printDescriptor(fdp *descriptorpb.FileDescriptorProto) (string, error) {
	p := &protoPrinter{}
	switch fdp.GetSyntax() {
	case "", "proto2":
		p.line(0, `syntax = "proto2";`)
	case "proto3":
		p.proto3 = true
		p.line(0, `syntax = "proto3";`)
	default:
		return "", fmt.Errorf("descriptor syntax %q is not supported (proto2 or proto3)", fdp.GetSyntax())
	}
	if fdp.Package != nil {
		p.line(0, "package %s;", fdp.GetPackage())
	}
	for i, dep := range fdp.Dependency {
		kind := ""
		if containsIndex(fdp.PublicDependency, i) {
			kind = "public "
		} else if containsIndex(fdp.WeakDependency, i) {
			kind = "weak "
		}
		p.line(0, "import %s%s;", kind, strconv.Quote(dep))
	}
	p.options(0, fdp.Options)
	for _, m := range fdp.MessageType {
		p.message(0, m)
	}
	for _, e := range fdp.EnumType {
		p.enum(0, e)
	}
	p.extensions(0, fdp.Extension)
	for _, s := range fdp.Service {
		p.line(0, "service %s {", s.GetName())
		p.options(1, s.Options)
		for _, m := range s.Method {
			stream := func(on bool) string {
				if on {
					return "stream "
				}
				return ""
			}
			head := fmt.Sprintf("rpc %s(%s%s) returns (%s%s)", m.GetName(), stream(m.GetClientStreaming()), m.GetInputType(),
				stream(m.GetServerStreaming()), m.GetOutputType())
			if m.Options == nil || len(p.optionLines(m.Options)) == 0 {
				p.line(1, "%s;", head)
				continue
			}
			p.line(1, "%s {", head)
			p.options(2, m.Options)
			p.line(1, "}")
		}
		p.line(0, "}")
	}
	return p.b.String(), p.err
}

func containsIndex(list []int32, i int) bool {
	for _, x := range list {
		if int(x) == i {
			return true
		}
	}
	return false
}

func (p *protoPrinter) line(depth int, format string, args ...any) {
	p.b.WriteString(strings.Repeat("  ", depth))
	fmt.Fprintf(&p.b, format, args...)
	p.b.WriteByte('\n')
}

func (p *protoPrinter) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// optionLines renders the set fields of an options message as
// name = value; map_entry is implied by map<> syntax and left out.
func (p *protoPrinter) optionLines(opts proto.Message) []string {
	if opts == nil {
		return nil
	}
	m := opts.ProtoReflect()
	if !m.IsValid() {
		return nil
	}
	if len(m.GetUnknown()) > 0 {
		// Custom options whose extension this binary does not know
		// (confluent.field_meta, ...) would be lost when written out.
		p.fail(fmt.Errorf("the descriptor uses custom options (%s) that Sluice cannot write as .proto text; register the schema as .proto text", m.Descriptor().Name()))
		return nil
	}
	var out []string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() == "map_entry" || fd.Name() == "uninterpreted_option" {
			return true
		}
		name := string(fd.Name())
		if fd.IsExtension() {
			name = "(" + string(fd.FullName()) + ")"
		}
		if fd.IsList() {
			for i := 0; i < v.List().Len(); i++ {
				out = append(out, name+" = "+p.optionValue(fd, v.List().Get(i)))
			}
			return true
		}
		out = append(out, name+" = "+p.optionValue(fd, v))
		return true
	})
	sort.Strings(out)
	return out
}

func (p *protoPrinter) optionValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return strconv.Quote(v.String())
	case protoreflect.BytesKind:
		return strconv.Quote(string(v.Bytes()))
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	case protoreflect.MessageKind, protoreflect.GroupKind:
		b, err := prototext.MarshalOptions{}.Marshal(v.Message().Interface())
		if err != nil {
			p.fail(err)
		}
		return "{ " + string(b) + " }"
	}
	return v.String()
}

func (p *protoPrinter) options(depth int, opts proto.Message) {
	for _, o := range p.optionLines(opts) {
		p.line(depth, "option %s;", o)
	}
}

var scalarNames = map[descriptorpb.FieldDescriptorProto_Type]string{
	descriptorpb.FieldDescriptorProto_TYPE_DOUBLE: "double", descriptorpb.FieldDescriptorProto_TYPE_FLOAT: "float",
	descriptorpb.FieldDescriptorProto_TYPE_INT64: "int64", descriptorpb.FieldDescriptorProto_TYPE_UINT64: "uint64",
	descriptorpb.FieldDescriptorProto_TYPE_INT32: "int32", descriptorpb.FieldDescriptorProto_TYPE_FIXED64: "fixed64",
	descriptorpb.FieldDescriptorProto_TYPE_FIXED32: "fixed32", descriptorpb.FieldDescriptorProto_TYPE_BOOL: "bool",
	descriptorpb.FieldDescriptorProto_TYPE_STRING: "string", descriptorpb.FieldDescriptorProto_TYPE_BYTES: "bytes",
	descriptorpb.FieldDescriptorProto_TYPE_UINT32: "uint32", descriptorpb.FieldDescriptorProto_TYPE_SFIXED32: "sfixed32",
	descriptorpb.FieldDescriptorProto_TYPE_SFIXED64: "sfixed64", descriptorpb.FieldDescriptorProto_TYPE_SINT32: "sint32",
	descriptorpb.FieldDescriptorProto_TYPE_SINT64: "sint64",
}

func (p *protoPrinter) typeName(f *descriptorpb.FieldDescriptorProto) string {
	switch f.GetType() {
	case descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, descriptorpb.FieldDescriptorProto_TYPE_ENUM:
		return f.GetTypeName()
	case descriptorpb.FieldDescriptorProto_TYPE_GROUP:
		p.fail(fmt.Errorf("field %s is a proto2 group, which Sluice cannot write as .proto text; register the schema as .proto text", f.GetName()))
		return "group"
	}
	if n, ok := scalarNames[f.GetType()]; ok {
		return n
	}
	p.fail(fmt.Errorf("field %s has unknown type %d", f.GetName(), f.GetType()))
	return "?"
}

// fieldOptions renders a field's [...] part: its default, a json_name
// other than the default one, and its options.
func (p *protoPrinter) fieldOptions(f *descriptorpb.FieldDescriptorProto) string {
	var parts []string
	if f.DefaultValue != nil {
		v := f.GetDefaultValue()
		switch f.GetType() {
		case descriptorpb.FieldDescriptorProto_TYPE_STRING:
			v = strconv.Quote(v)
		case descriptorpb.FieldDescriptorProto_TYPE_BYTES:
			v = `"` + v + `"` // already C-escaped in the descriptor
		}
		parts = append(parts, "default = "+v)
	}
	if f.JsonName != nil && f.GetJsonName() != defaultJSONName(f.GetName()) {
		parts = append(parts, "json_name = "+strconv.Quote(f.GetJsonName()))
	}
	parts = append(parts, p.optionLines(f.Options)...)
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

// defaultJSONName is protoc's lowerCamelCase of a field name.
func defaultJSONName(name string) string {
	var b strings.Builder
	upper := false
	for _, r := range name {
		if r == '_' {
			upper = true
			continue
		}
		if upper && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		upper = false
		b.WriteRune(r)
	}
	return b.String()
}

func (p *protoPrinter) field(depth int, f *descriptorpb.FieldDescriptorProto, mapEntries map[string]*descriptorpb.DescriptorProto) {
	if entry, ok := mapEntries[f.GetTypeName()]; ok && f.GetLabel() == descriptorpb.FieldDescriptorProto_LABEL_REPEATED && len(entry.Field) == 2 {
		p.line(depth, "map<%s, %s> %s = %d%s;", p.typeName(entry.Field[0]), p.typeName(entry.Field[1]), f.GetName(), f.GetNumber(), p.fieldOptions(f))
		return
	}
	label := ""
	switch {
	case f.GetLabel() == descriptorpb.FieldDescriptorProto_LABEL_REPEATED:
		label = "repeated "
	case f.GetProto3Optional():
		label = "optional "
	case f.GetLabel() == descriptorpb.FieldDescriptorProto_LABEL_REQUIRED:
		label = "required "
	case !p.proto3 && f.OneofIndex == nil:
		label = "optional "
	}
	p.line(depth, "%s%s %s = %d%s;", label, p.typeName(f), f.GetName(), f.GetNumber(), p.fieldOptions(f))
}

func (p *protoPrinter) message(depth int, m *descriptorpb.DescriptorProto) {
	p.line(depth, "message %s {", m.GetName())
	p.options(depth+1, m.Options)
	mapEntries := map[string]*descriptorpb.DescriptorProto{}
	for _, n := range m.NestedType {
		if n.GetOptions().GetMapEntry() {
			mapEntries[n.GetName()] = n
		}
	}
	// Field type names are fully qualified: look map entries up by the
	// last part, which is unique among m's nested types.
	byFull := map[string]*descriptorpb.DescriptorProto{}
	for _, f := range m.Field {
		if i := strings.LastIndexByte(f.GetTypeName(), '.'); i >= 0 {
			if e, ok := mapEntries[f.GetTypeName()[i+1:]]; ok {
				byFull[f.GetTypeName()] = e
			}
		}
	}
	printedOneofs := map[int32]bool{}
	for _, f := range m.Field {
		if f.OneofIndex != nil && !f.GetProto3Optional() {
			idx := f.GetOneofIndex()
			if printedOneofs[idx] {
				continue
			}
			printedOneofs[idx] = true
			if int(idx) >= len(m.OneofDecl) {
				p.fail(fmt.Errorf("field %s names oneof %d, which %s does not have", f.GetName(), idx, m.GetName()))
				continue
			}
			p.line(depth+1, "oneof %s {", m.OneofDecl[idx].GetName())
			p.options(depth+2, m.OneofDecl[idx].Options)
			for _, g := range m.Field {
				if g.OneofIndex != nil && g.GetOneofIndex() == idx && !g.GetProto3Optional() {
					p.field(depth+2, g, byFull)
				}
			}
			p.line(depth+1, "}")
			continue
		}
		p.field(depth+1, f, byFull)
	}
	for _, n := range m.NestedType {
		if !n.GetOptions().GetMapEntry() {
			p.message(depth+1, n)
		}
	}
	for _, e := range m.EnumType {
		p.enum(depth+1, e)
	}
	p.extensions(depth+1, m.Extension)
	for _, r := range m.ExtensionRange {
		p.line(depth+1, "extensions %s%s;", rangeText(r.GetStart(), r.GetEnd()-1, 536870911), p.bracketOptions(r.Options))
	}
	for _, r := range m.ReservedRange {
		p.line(depth+1, "reserved %s;", rangeText(r.GetStart(), r.GetEnd()-1, 536870911))
	}
	if len(m.ReservedName) > 0 {
		p.line(depth+1, "reserved %s;", quoteAll(m.ReservedName))
	}
	p.line(depth, "}")
}

func (p *protoPrinter) bracketOptions(opts proto.Message) string {
	lines := p.optionLines(opts)
	if len(lines) == 0 {
		return ""
	}
	return " [" + strings.Join(lines, ", ") + "]"
}

// rangeText is "a", "a to b" or "a to max" for an inclusive range.
func rangeText(start, end, maxValue int32) string {
	switch {
	case start == end:
		return strconv.Itoa(int(start))
	case end >= maxValue:
		return fmt.Sprintf("%d to max", start)
	}
	return fmt.Sprintf("%d to %d", start, end)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func (p *protoPrinter) enum(depth int, e *descriptorpb.EnumDescriptorProto) {
	p.line(depth, "enum %s {", e.GetName())
	p.options(depth+1, e.Options)
	for _, v := range e.Value {
		p.line(depth+1, "%s = %d%s;", v.GetName(), v.GetNumber(), p.bracketOptions(v.Options))
	}
	for _, r := range e.ReservedRange {
		p.line(depth+1, "reserved %s;", rangeText(r.GetStart(), r.GetEnd(), 2147483647)) // inclusive in enums
	}
	if len(e.ReservedName) > 0 {
		p.line(depth+1, "reserved %s;", quoteAll(e.ReservedName))
	}
	p.line(depth, "}")
}

func (p *protoPrinter) extensions(depth int, exts []*descriptorpb.FieldDescriptorProto) {
	var extendees []string
	by := map[string][]*descriptorpb.FieldDescriptorProto{}
	for _, x := range exts {
		if _, seen := by[x.GetExtendee()]; !seen {
			extendees = append(extendees, x.GetExtendee())
		}
		by[x.GetExtendee()] = append(by[x.GetExtendee()], x)
	}
	for _, e := range extendees {
		p.line(depth, "extend %s {", e)
		for _, x := range by[e] {
			p.field(depth+1, x, nil)
		}
		p.line(depth, "}")
	}
}
