package converters

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/internal/confluentproto"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sluice-io/sluice/connectors"
)

// ProtobufConverterClass is Confluent's class name of the Protobuf
// converter.
const ProtobufConverterClass = "io.confluent.connect.protobuf.ProtobufConverter"

// Names ProtobufData uses.
const (
	protoNamespace   = "io.confluent.connect.protobuf"
	protoTagParam    = protoNamespace + ".Tag"
	protoTypeParam   = protoNamespace + ".Type"
	protoEnumParam   = protoNamespace + ".Enum"
	protoUnionPrefix = protoNamespace + ".Union."
	protoDecimalType = "confluent.type.Decimal"
	protoDateType    = "google.type.Date"
	protoTimeType    = "google.type.TimeOfDay"
	protoTimestamp   = "google.protobuf.Timestamp"
	protoMetaImport  = confluentproto.MetaImport
)

// importOf is the file that defines each well-known message type the
// mapping uses.
var importOf = map[string]string{
	protoDecimalType: "confluent/type/decimal.proto",
	protoDateType:    "google/type/date.proto",
	protoTimeType:    "google/type/timeofday.proto",
	protoTimestamp:   "google/protobuf/timestamp.proto",
}

// ProtobufConverter mirrors io.confluent.connect.protobuf.ProtobufConverter:
// a Connect struct is written as a Protobuf message (proto3) whose .proto
// text is registered in a Schema Registry, in Confluent's frame with the
// message-index array after the schema id. Connect schemas map to .proto
// as Confluent's ProtobufData maps them: fields numbered in order (or by
// the io.confluent.connect.protobuf.Tag parameter), int8/int16 as int32
// with a connect.type field option, maps as repeated ...Entry messages,
// Decimal, Date, Time and Timestamp as confluent.type.Decimal,
// google.type.Date, google.type.TimeOfDay and google.protobuf.Timestamp.
// Read back, every field is optional and carries its tag, as in Confluent.
type ProtobufConverter struct {
	reg              *registryClient
	scrub            bool
	optionalNullable bool

	toProto   *boundedCache[*connectors.Schema, *protoWriter]
	fromProto *boundedCache[int, *protoReader]
}

type protoWriter struct {
	text string
	md   protoreflect.MessageDescriptor
	ids  topicIDs
}

type protoReader struct {
	file    protoreflect.FileDescriptor
	byIndex *boundedCache[string, *protoMessage]
}

// protoMessage is one message of a registered schema in its descriptor and
// Connect forms.
type protoMessage struct {
	md      protoreflect.MessageDescriptor
	connect *connectors.Schema
}

// Configure takes the registry's keys (registry.go) and ProtobufDataConfig's:
// scrub.invalid.names and optional.for.nullables (both default false) are
// honoured; the others are taken at their defaults only.
func (c *ProtobufConverter) Configure(props map[string]string, isKey bool) error {
	ce := &connectors.ConfigError{}
	c.scrub = parseBool(ce, props, "scrub.invalid.names", false)
	c.optionalNullable = parseBool(ce, props, "optional.for.nullables", false)
	defaults := map[string]bool{
		"enhanced.protobuf.schema.support": false, "generalized.sum.type.support": false, "int.for.enums": false,
		"wrapper.for.nullables": false, "wrapper.for.raw.primitives": true, "generate.struct.for.nulls": false,
		"generate.index.for.unions": true, "flatten.unions": false, "optional.for.proto2": true, "ignore.default.for.nullables": false,
		"reference.lookup.only": false, "skip.known.types": true,
	}
	own := map[string]bool{"scrub.invalid.names": true, "optional.for.nullables": true}
	for k, def := range defaults {
		own[k] = true
		if parseBool(ce, props, k, def) != def {
			ce.Add(k, fmt.Sprintf("%v is not supported by Sluice's ProtobufConverter; leave it %v (Confluent's default)", !def, def))
		}
	}
	if parseBool(ce, props, "use.latest.version", false) {
		ce.Add("use.latest.version", "true is supported by Sluice's AvroConverter only")
	}
	rc := configureRegistry(ce, "ProtobufConverter", sr.TypeProtobuf, props, isKey, own)
	if err := ce.Err(); err != nil {
		return err
	}
	c.reg = rc
	c.toProto = newBoundedCache[*connectors.Schema, *protoWriter](rc.dataCacheSize)
	c.fromProto = newBoundedCache[int, *protoReader](rc.dataCacheSize)
	return nil
}

// FromConnect writes a struct as a framed Protobuf message.
func (c *ProtobufConverter) FromConnect(topic string, schema *connectors.Schema, value any) ([]byte, error) {
	value, done, err := recordValue("ProtobufConverter", c.reg, schema, value)
	if done || err != nil {
		return nil, err
	}
	if schema.Type != connectors.Struct {
		return nil, &DataError{Converter: "ProtobufConverter", Msg: fmt.Sprintf("a Protobuf record is a message: Sluice writes Connect structs only, not a %s schema", schema.Type)}
	}
	w, err := c.writerFor(schema)
	if err != nil {
		return nil, err
	}
	id, err := c.reg.idForTopic(&w.ids, topic, string(w.md.FullName()), sr.Schema{Schema: w.text, Type: sr.TypeProtobuf})
	if err != nil {
		return nil, err
	}
	msg := dynamicpb.NewMessage(w.md)
	if err := c.fillMessage(msg, schema, value); err != nil {
		return nil, dataErr("ProtobufConverter", err)
	}
	payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		subject, _ := c.reg.subject(topic, string(w.md.FullName()))
		return nil, &DataError{Converter: "ProtobufConverter", Msg: fmt.Sprintf("encoding for subject %q schema id %d: %v", subject, id, err)}
	}
	// The first message of the file: the message-index array is the single
	// 0 Confluent's serializer writes for it.
	out := appendFrameHeader(make([]byte, 0, frameHeaderLen+1+len(payload)), id)
	out = appendMessageIndexes(out, []int{0})
	return append(out, payload...), nil
}

func (c *ProtobufConverter) writerFor(schema *connectors.Schema) (*protoWriter, error) {
	if w, ok := c.toProto.get(schema); ok {
		return w, nil
	}
	g := &protoGen{scrub: c.scrub, optional: c.optionalNullable, imports: map[string]bool{}}
	text, err := g.file(schema)
	if err != nil {
		return nil, dataErr("ProtobufConverter", err)
	}
	fd, err := compileProto(text, nil)
	if err != nil {
		return nil, &DataError{Converter: "ProtobufConverter", Msg: fmt.Sprintf("the .proto built from the Connect schema does not compile: %v", err)}
	}
	w := &protoWriter{text: text, md: fd.Messages().Get(0)}
	c.toProto.put(schema, w)
	return w, nil
}

// compileProto compiles a registered .proto; deps holds the text of its
// references by import name.
func compileProto(text string, deps map[string]string) (protoreflect.FileDescriptor, error) {
	const main = "sluice-registered.proto"
	comp := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: func(path string) (io.ReadCloser, error) {
			if path == main {
				return io.NopCloser(strings.NewReader(text)), nil
			}
			if d, ok := deps[path]; ok {
				return io.NopCloser(strings.NewReader(d)), nil
			}
			if d, ok := confluentproto.File(path); ok {
				return io.NopCloser(strings.NewReader(d)), nil
			}
			return nil, fmt.Errorf("import %q is neither a reference of the schema nor a well-known file", path)
		}}),
	}
	files, err := comp.Compile(context.Background(), main)
	if err != nil {
		return nil, err
	}
	return files[0], nil
}

// ---- Connect schema -> .proto (ProtobufData.fromConnectSchema) ----

type protoGen struct {
	scrub, optional bool
	imports         map[string]bool
	nameIndex       int
}

func (g *protoGen) defaultName() string {
	g.nameIndex++
	if g.nameIndex > 1 {
		return avroDefaultName + strconv.Itoa(g.nameIndex)
	}
	return avroDefaultName
}

// unqualified is the simple name of a Connect schema name, or the next
// ConnectDefault name.
func (g *protoGen) unqualified(name string) string {
	if name == "" {
		return g.defaultName()
	}
	name = name[strings.LastIndexByte(name, '.')+1:]
	if g.scrub {
		name = scrubAvroName(name)
	}
	return name
}

func (g *protoGen) file(s *connectors.Schema) (string, error) {
	ns := ""
	name := s.Name
	if name == "" {
		ns, name = "", g.defaultName()
	} else if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ns, name = name[:i], name[i+1:]
	}
	if g.scrub {
		name = scrubAvroName(name)
		parts := strings.Split(ns, ".")
		for i := range parts {
			parts[i] = scrubAvroName(parts[i])
		}
		if ns != "" {
			ns = strings.Join(parts, ".")
		}
	}
	var body strings.Builder
	if err := g.message(&body, name, s, ""); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\n")
	if ns != "" {
		fmt.Fprintf(&b, "package %s;\n", ns)
	}
	imports := make([]string, 0, len(g.imports))
	for i := range g.imports {
		imports = append(imports, i)
	}
	sort.Strings(imports)
	if len(imports) > 0 {
		b.WriteString("\n")
	}
	for _, i := range imports {
		fmt.Fprintf(&b, "import %q;\n", i)
	}
	b.WriteString("\n")
	b.WriteString(body.String())
	return b.String(), nil
}

// message writes a message for struct s: its fields, then the messages,
// map entries and enums they need, nested.
func (g *protoGen) message(b *strings.Builder, name string, s *connectors.Schema, indent string) error {
	fmt.Fprintf(b, "%smessage %s {\n", indent, name)
	var nested strings.Builder
	defined := map[string]bool{}
	tag := 1
	for _, f := range s.Fields {
		fieldName := f.Name
		if g.scrub {
			fieldName = scrubAvroName(fieldName)
		}
		fs := f.Schema
		if fs.Type == connectors.Struct && strings.HasPrefix(fs.Name, protoUnionPrefix) {
			fmt.Fprintf(b, "%s  oneof %s {\n", indent, g.unqualified(strings.TrimPrefix(fs.Name, protoUnionPrefix)))
			for _, m := range fs.Fields {
				mt, err := strconv.Atoi(m.Schema.Parameters[protoTagParam])
				if err != nil {
					return inField(errorf("oneof member needs its %s parameter", protoTagParam), f.Name+"."+m.Name)
				}
				decl, err := g.field(&nested, defined, m.Name, m.Schema, mt, indent+"  ", true)
				if err != nil {
					return inField(err, f.Name+"."+m.Name)
				}
				fmt.Fprintf(b, "%s    %s\n", indent, decl)
			}
			fmt.Fprintf(b, "%s  }\n", indent)
			continue
		}
		n := tag
		if t, ok := fs.Parameters[protoTagParam]; ok {
			var err error
			if n, err = strconv.Atoi(t); err != nil {
				return inField(errorf("parameter %s=%q is not a field number", protoTagParam, t), f.Name)
			}
		} else {
			tag++
		}
		decl, err := g.field(&nested, defined, fieldName, fs, n, indent+"  ", false)
		if err != nil {
			return inField(err, f.Name)
		}
		fmt.Fprintf(b, "%s  %s\n", indent, decl)
	}
	b.WriteString(nested.String())
	fmt.Fprintf(b, "%s}\n", indent)
	return nil
}

// field returns a field declaration and writes the types it needs to
// nested.
func (g *protoGen) field(nested *strings.Builder, defined map[string]bool, name string, s *connectors.Schema, tag int, indent string, oneofMember bool) (string, error) {
	label := ""
	switch {
	case s.Type == connectors.Array || s.Type == connectors.Map:
		label = "repeated "
	case g.optional && s.Optional && !oneofMember:
		label = "optional "
	}
	elem := s
	if s.Type == connectors.Array {
		elem = s.Items
		if elem == nil || elem.Type == connectors.Array {
			return "", errorf("Array cannot be nested")
		}
	}
	params := map[string]string{}
	typ, err := g.typeOf(nested, defined, elem, name, params, indent)
	if err != nil {
		return "", err
	}
	decl := fmt.Sprintf("%s%s %s = %d", label, typ, name, tag)
	if len(params) > 0 {
		g.imports[protoMetaImport] = true
		keys := make([]string, 0, len(params))
		for k := range params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var entries []string
		for _, k := range keys {
			entries = append(entries, fmt.Sprintf("{key: %q, value: %q}", k, params[k]))
		}
		decl += fmt.Sprintf(" [(confluent.field_meta) = {params: [%s]}]", strings.Join(entries, ", "))
	}
	return decl + ";", nil
}

// typeOf is ProtobufData.dataTypeFromConnectSchema.
func (g *protoGen) typeOf(nested *strings.Builder, defined map[string]bool, s *connectors.Schema, fieldName string, params map[string]string, indent string) (string, error) {
	switch s.Name {
	case connectors.DecimalLogical:
		if p, ok := s.Parameters[connectDecPrecision]; ok {
			params["precision"] = p
		}
		if sc, ok := s.Parameters["scale"]; ok {
			params["scale"] = sc
		}
		g.imports[importOf[protoDecimalType]] = true
		return protoDecimalType, nil
	case connectors.DateLogical:
		g.imports[importOf[protoDateType]] = true
		return protoDateType, nil
	case connectors.TimeLogical:
		g.imports[importOf[protoTimeType]] = true
		return protoTimeType, nil
	case connectors.TimestampLogical:
		g.imports[importOf[protoTimestamp]] = true
		return protoTimestamp, nil
	}
	switch s.Type {
	case connectors.Int8, connectors.Int16:
		params["connect.type"] = string(s.Type)
		return "int32", nil
	case connectors.Int32:
		if t, ok := s.Parameters[protoTypeParam]; ok {
			return t, nil
		}
		return "int32", nil
	case connectors.Int64:
		if t, ok := s.Parameters[protoTypeParam]; ok {
			return t, nil
		}
		return "int64", nil
	case connectors.Float32:
		return "float", nil
	case connectors.Float64:
		return "double", nil
	case connectors.Boolean:
		return "bool", nil
	case connectors.Bytes:
		return "bytes", nil
	case connectors.String:
		enumName, ok := s.Parameters[protoEnumParam]
		if !ok {
			return "string", nil
		}
		if !defined[enumName] {
			defined[enumName] = true
			if err := writeProtoEnum(nested, enumName, s, indent); err != nil {
				return "", err
			}
		}
		return enumName, nil
	case connectors.Map:
		if s.Keys == nil || s.Values == nil {
			return "", errorf("map schema needs both keys and values schemas")
		}
		entry := g.unqualified(s.Name) + "Entry"
		if !defined[entry] {
			defined[entry] = true
			fmt.Fprintf(nested, "%smessage %s {\n", indent, entry)
			inner := map[string]bool{}
			var innerNested strings.Builder
			k, err := g.field(&innerNested, inner, "key", s.Keys, 1, indent+"  ", false)
			if err != nil {
				return "", inField(err, "keys")
			}
			v, err := g.field(&innerNested, inner, "value", s.Values, 2, indent+"  ", false)
			if err != nil {
				return "", inField(err, "values")
			}
			fmt.Fprintf(nested, "%s  %s\n%s  %s\n%s%s}\n", indent, k, indent, v, innerNested.String(), indent)
		}
		return entry, nil
	case connectors.Struct:
		name := g.unqualified(s.Name)
		if name == fieldName {
			// A message type may not share its field's name.
			name += "Message"
		}
		if !defined[name] {
			defined[name] = true
			if err := g.message(nested, name, s, indent); err != nil {
				return "", err
			}
		}
		return name, nil
	}
	return "", errorf("unknown schema type %q", s.Type)
}

func writeProtoEnum(b *strings.Builder, name string, s *connectors.Schema, indent string) error {
	type value struct {
		name string
		tag  int
	}
	var values []value
	for k, v := range s.Parameters {
		sym, ok := strings.CutPrefix(k, protoEnumParam+".")
		if !ok {
			continue
		}
		tag, err := strconv.Atoi(v)
		if err != nil {
			return errorf("enum parameter %s=%q is not a number", k, v)
		}
		values = append(values, value{sym, tag})
	}
	sort.Slice(values, func(i, j int) bool { return values[i].tag < values[j].tag })
	fmt.Fprintf(b, "%senum %s {\n", indent, name)
	for _, v := range values {
		fmt.Fprintf(b, "%s  %s = %d;\n", indent, v.name, v.tag)
	}
	fmt.Fprintf(b, "%s}\n", indent)
	return nil
}

// ---- Connect value -> message (ProtobufData.fromConnectData) ----

func (c *ProtobufConverter) fillMessage(msg *dynamicpb.Message, s *connectors.Schema, v any) error {
	sv, ok := v.(*connectors.StructValue)
	if !ok {
		return mismatch(s, v)
	}
	if len(sv.Values) != len(s.Fields) {
		return errorf("struct has %d values for %d fields", len(sv.Values), len(s.Fields))
	}
	fields := msg.Descriptor().Fields()
	for i, f := range s.Fields {
		fv := sv.Values[i]
		if fv == nil && f.Schema.Default != nil {
			fv = f.Schema.Default
		}
		if fv == nil || isNil(fv) {
			if !f.Schema.Optional {
				return inField(errorf("null value for a required %s with no default", f.Schema.Type), f.Name)
			}
			continue
		}
		if f.Schema.Type == connectors.Struct && strings.HasPrefix(f.Schema.Name, protoUnionPrefix) {
			u, ok := fv.(*connectors.StructValue)
			if !ok {
				return inField(mismatch(f.Schema, fv), f.Name)
			}
			for j, m := range f.Schema.Fields {
				if j < len(u.Values) && u.Values[j] != nil {
					fd := fields.ByName(protoreflect.Name(m.Name))
					if fd == nil {
						return inField(errorf("oneof member %s is not in the message", m.Name), f.Name)
					}
					if err := c.setField(msg, fd, m.Schema, u.Values[j]); err != nil {
						return inField(err, f.Name+"."+m.Name)
					}
					break
				}
			}
			continue
		}
		name := f.Name
		if c.scrub {
			name = scrubAvroName(name)
		}
		fd := fields.ByName(protoreflect.Name(name))
		if fd == nil {
			return inField(errorf("field is not in the message"), f.Name)
		}
		if err := c.setField(msg, fd, f.Schema, fv); err != nil {
			return inField(err, f.Name)
		}
	}
	return nil
}

func (c *ProtobufConverter) setField(msg *dynamicpb.Message, fd protoreflect.FieldDescriptor, s *connectors.Schema, v any) error {
	switch {
	case s.Type == connectors.Array:
		x, ok := v.([]any)
		if !ok {
			return mismatch(s, v)
		}
		list := msg.Mutable(fd).List()
		for i, e := range x {
			if e == nil {
				return inElem(errorf("a Protobuf repeated field cannot hold null"), index(i))
			}
			pv, err := c.protoValue(list.NewElement, fd, s.Items, e)
			if err != nil {
				return inElem(err, index(i))
			}
			list.Append(pv)
		}
		return nil
	case s.Type == connectors.Map:
		x, ok := v.(map[string]any)
		if !ok {
			return mismatch(s, v)
		}
		list := msg.Mutable(fd).List()
		entryMD := fd.Message()
		for _, k := range sortedKeys(x) {
			kv, err := mapKeys.keyFromString(s.Keys, k)
			if err != nil {
				return inElem(err, mapKey(k))
			}
			entry := dynamicpb.NewMessage(entryMD)
			if err := c.setField(entry, entryMD.Fields().ByName("key"), s.Keys, kv); err != nil {
				return inElem(err, mapKey(k))
			}
			if x[k] != nil {
				if err := c.setField(entry, entryMD.Fields().ByName("value"), s.Values, x[k]); err != nil {
					return inElem(err, mapKey(k))
				}
			}
			list.Append(protoreflect.ValueOfMessage(entry))
		}
		return nil
	}
	pv, err := c.protoValue(func() protoreflect.Value { return msg.NewField(fd) }, fd, s, v)
	if err != nil {
		return err
	}
	msg.Set(fd, pv)
	return nil
}

// protoValue converts one Connect value to a Protobuf field value; newMsg
// makes an empty message value of the field's type.
func (c *ProtobufConverter) protoValue(newMsg func() protoreflect.Value, fd protoreflect.FieldDescriptor, s *connectors.Schema, v any) (protoreflect.Value, error) {
	switch s.Name {
	case connectors.DecimalLogical, connectors.DateLogical, connectors.TimeLogical, connectors.TimestampLogical:
		n, err := toNativeValue(s, v, false)
		if err != nil {
			return protoreflect.Value{}, err
		}
		m := newMsg().Message()
		set := func(name string, val protoreflect.Value) {
			m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), val)
		}
		switch x := n.(type) {
		case *big.Rat:
			scale, _ := strconv.Atoi(s.Parameters["scale"])
			u, err := unscaledOf(x, scale)
			if err != nil {
				return protoreflect.Value{}, err
			}
			set("value", protoreflect.ValueOfBytes(twosComplement(u)))
			// DecimalUtils.fromBigDecimal writes the value's own precision.
			set("precision", protoreflect.ValueOfUint32(uint32(len(new(big.Int).Abs(u).String()))))
			set("scale", protoreflect.ValueOfInt32(int32(scale)))
		case time.Duration:
			set("hours", protoreflect.ValueOfInt32(int32(x/time.Hour)))
			set("minutes", protoreflect.ValueOfInt32(int32(x%time.Hour/time.Minute)))
			set("seconds", protoreflect.ValueOfInt32(int32(x%time.Minute/time.Second)))
			set("nanos", protoreflect.ValueOfInt32(int32(x%time.Second)))
		case time.Time:
			if s.Name == connectors.DateLogical {
				set("year", protoreflect.ValueOfInt32(int32(x.Year())))
				set("month", protoreflect.ValueOfInt32(int32(x.Month())))
				set("day", protoreflect.ValueOfInt32(int32(x.Day())))
			} else {
				ms := x.UnixMilli()
				set("seconds", protoreflect.ValueOfInt64(floorDiv(ms, 1000)))
				set("nanos", protoreflect.ValueOfInt32(int32((ms-floorDiv(ms, 1000)*1000)*1e6)))
			}
		}
		return protoreflect.ValueOfMessage(m), nil
	}
	switch s.Type {
	case connectors.Int8:
		if x, ok := v.(int8); ok {
			return protoreflect.ValueOfInt32(int32(x)), nil
		}
	case connectors.Int16:
		if x, ok := v.(int16); ok {
			return protoreflect.ValueOfInt32(int32(x)), nil
		}
	case connectors.Int32:
		if x, ok := v.(int32); ok {
			if fd.Kind() == protoreflect.EnumKind {
				return protoreflect.ValueOfEnum(protoreflect.EnumNumber(x)), nil
			}
			return protoreflect.ValueOfInt32(x), nil
		}
	case connectors.Int64:
		if x, ok := v.(int64); ok {
			switch fd.Kind() {
			case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
				return protoreflect.ValueOfUint32(uint32(x)), nil
			case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
				return protoreflect.ValueOfUint64(uint64(x)), nil
			}
			return protoreflect.ValueOfInt64(x), nil
		}
	case connectors.Float32:
		if x, ok := v.(float32); ok {
			return protoreflect.ValueOfFloat32(x), nil
		}
	case connectors.Float64:
		if x, ok := v.(float64); ok {
			return protoreflect.ValueOfFloat64(x), nil
		}
	case connectors.Boolean:
		if x, ok := v.(bool); ok {
			return protoreflect.ValueOfBool(x), nil
		}
	case connectors.String:
		if x, ok := v.(string); ok {
			if fd.Kind() == protoreflect.EnumKind {
				ev := fd.Enum().Values().ByName(protoreflect.Name(x))
				if ev == nil {
					return protoreflect.Value{}, errorf("%q is not a symbol of enum %s", x, fd.Enum().FullName())
				}
				return protoreflect.ValueOfEnum(ev.Number()), nil
			}
			return protoreflect.ValueOfString(x), nil
		}
	case connectors.Bytes:
		if x, ok := v.([]byte); ok {
			return protoreflect.ValueOfBytes(x), nil
		}
	case connectors.Struct:
		m := newMsg().Message().(*dynamicpb.Message)
		if err := c.fillMessage(m, s, v); err != nil {
			return protoreflect.Value{}, err
		}
		return protoreflect.ValueOfMessage(m), nil
	}
	return protoreflect.Value{}, mismatch(s, v)
}

// ---- reading ----

// ToConnect reads a framed Protobuf message with the schema and message
// index the frame names.
func (c *ProtobufConverter) ToConnect(topic string, data []byte) (*connectors.Schema, any, error) {
	id, rest, ok, err := readFrame("ProtobufConverter", c.reg, data)
	if !ok {
		return nil, nil, err
	}
	indexes, payload, err := readMessageIndexes(rest)
	if err != nil {
		return nil, nil, &DataError{Converter: "ProtobufConverter", Msg: fmt.Sprintf("schema id %d: %v", id, err)}
	}
	r, err := c.readerFor(id)
	if err != nil {
		return nil, nil, err
	}
	pm, err := c.messageAt(topic, id, r, indexes)
	if err != nil {
		return nil, nil, err
	}
	msg := dynamicpb.NewMessage(pm.md)
	if err := proto.Unmarshal(payload, msg); err != nil {
		return nil, nil, &DataError{Converter: "ProtobufConverter", Msg: fmt.Sprintf("decoding message %s of schema id %d: %v", pm.md.FullName(), id, err)}
	}
	v, err := structFromMessage(pm.connect, msg)
	if err != nil {
		return nil, nil, &DataError{Converter: "ProtobufConverter", Msg: fmt.Sprintf("schema id %d: %v", id, err)}
	}
	return pm.connect, v, nil
}

// readMessageIndexes reads the message-index array: a zig-zag varint
// count, then that many zig-zag varint indexes; a count of 0 stands for
// [0], the first message.
func readMessageIndexes(b []byte) ([]int, []byte, error) {
	n, size := binary.Varint(b)
	if size <= 0 {
		return nil, nil, fmt.Errorf("the message-index array is truncated")
	}
	b = b[size:]
	if n == 0 {
		return []int{0}, b, nil
	}
	if n < 0 || n > 100 {
		return nil, nil, fmt.Errorf("message-index array of length %d", n)
	}
	out := make([]int, n)
	for i := range out {
		x, size := binary.Varint(b)
		if size <= 0 || x < 0 || x > 1<<20 {
			return nil, nil, fmt.Errorf("the message-index array is truncated or invalid")
		}
		out[i] = int(x)
		b = b[size:]
	}
	return out, b, nil
}

// appendMessageIndexes writes the message-index array, with Confluent's
// single 0 for [0].
func appendMessageIndexes(b []byte, indexes []int) []byte {
	if len(indexes) == 1 && indexes[0] == 0 {
		return append(b, 0)
	}
	b = binary.AppendVarint(b, int64(len(indexes)))
	for _, i := range indexes {
		b = binary.AppendVarint(b, int64(i))
	}
	return b
}

func (c *ProtobufConverter) readerFor(id int) (*protoReader, error) {
	if r, ok := c.fromProto.get(id); ok {
		return r, nil
	}
	s, err := c.reg.schemaOfType(id)
	if err != nil {
		return nil, err
	}
	deps := map[string]string{}
	if err := c.addReferences(deps, s.References, 0); err != nil {
		return nil, err
	}
	fd, err := compileProto(s.Schema, deps)
	if err != nil {
		return nil, &DataError{Converter: "ProtobufConverter", Msg: fmt.Sprintf("schema id %d does not compile: %v", id, err)}
	}
	r := &protoReader{file: fd, byIndex: newBoundedCache[string, *protoMessage](64)}
	c.fromProto.put(id, r)
	return r, nil
}

func (c *ProtobufConverter) addReferences(deps map[string]string, refs []sr.SchemaReference, depth int) error {
	if depth > 32 {
		return &DataError{Converter: "ProtobufConverter", Msg: "schema references nest deeper than 32 levels"}
	}
	for _, r := range refs {
		if _, done := deps[r.Name]; done {
			continue
		}
		ss, err := c.reg.schemaBySubjectVersion(r.Subject, r.Version)
		if err != nil {
			return err
		}
		deps[r.Name] = ss.Schema.Schema
		if err := c.addReferences(deps, ss.References, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (c *ProtobufConverter) messageAt(topic string, id int, r *protoReader, indexes []int) (*protoMessage, error) {
	// Nearly every record names the file's first message: its key is a
	// constant, not formatted per record.
	key := "[0]"
	if len(indexes) != 1 || indexes[0] != 0 {
		key = fmt.Sprint(indexes)
	}
	if pm, ok := r.byIndex.get(key); ok {
		return pm, nil
	}
	msgs := r.file.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range indexes {
		if i >= msgs.Len() {
			return nil, &DataError{Converter: "ProtobufConverter", Msg: fmt.Sprintf("schema id %d has no message at index path %v", id, indexes)}
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	cs, err := (&protoConnectBuilder{optionalNullable: c.optionalNullable, onPath: map[protoreflect.FullName]bool{}}).message(md)
	if err != nil {
		return nil, &DataError{Converter: "ProtobufConverter", Msg: fmt.Sprintf("schema id %d: %v", id, err)}
	}
	cs.Optional = false
	subject, err := c.reg.subject(topic, string(md.FullName()))
	if err != nil {
		return nil, err
	}
	s, err := c.reg.schemaByID(id)
	if err != nil {
		return nil, err
	}
	version, err := c.reg.versionOf(subject, id, s)
	if err != nil {
		return nil, err
	}
	cs.Version = version
	pm := &protoMessage{md: md, connect: cs}
	r.byIndex.put(key, pm)
	return pm, nil
}

// ---- descriptor -> Connect schema (ProtobufData.toConnectSchema) ----

type protoConnectBuilder struct {
	optionalNullable bool
	onPath           map[protoreflect.FullName]bool
}

func (b *protoConnectBuilder) message(md protoreflect.MessageDescriptor) (*connectors.Schema, error) {
	if b.onPath[md.FullName()] {
		return nil, fmt.Errorf("message %s contains itself: recursive messages have no Connect schema in Sluice", md.FullName())
	}
	b.onPath[md.FullName()] = true
	defer delete(b.onPath, md.FullName())
	cs := &connectors.Schema{Type: connectors.Struct, Name: string(md.Name()), Optional: true}
	oneofs := md.Oneofs()
	for i := 0; i < oneofs.Len(); i++ {
		od := oneofs.Get(i)
		if od.IsSynthetic() {
			continue
		}
		u := &connectors.Schema{Type: connectors.Struct, Name: protoUnionPrefix + string(od.Name()), Optional: true}
		for j := 0; j < od.Fields().Len(); j++ {
			fd := od.Fields().Get(j)
			fs, err := b.field(fd, true)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", fd.Name(), err)
			}
			u.Fields = append(u.Fields, connectors.Field{Name: string(fd.Name()), Schema: fs})
		}
		cs.Fields = append(cs.Fields, connectors.Field{Name: string(od.Name()), Schema: u})
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			continue
		}
		fs, err := b.field(fd, false)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", fd.Name(), err)
		}
		cs.Fields = append(cs.Fields, connectors.Field{Name: string(fd.Name()), Schema: fs})
	}
	return cs, nil
}

// fieldMetaParams reads (confluent.field_meta).params of a field.
func fieldMetaParams(fd protoreflect.FieldDescriptor) map[string]string {
	out := map[string]string{}
	opts := fd.Options()
	if opts == nil {
		return out
	}
	opts.ProtoReflect().Range(func(xd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if xd.FullName() != "confluent.field_meta" || xd.Kind() != protoreflect.MessageKind {
			return true
		}
		meta := v.Message()
		pf := meta.Descriptor().Fields().ByName("params")
		if pf == nil || !pf.IsMap() {
			return true
		}
		meta.Get(pf).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			out[k.String()] = v.String()
			return true
		})
		return true
	})
	// Options parsed from text keep extensions unknown to the global
	// registry as unknown fields: read them from the raw bytes.
	if len(out) == 0 {
		if raw := opts.ProtoReflect().GetUnknown(); len(raw) > 0 {
			parseMetaParams(raw, out)
		}
	}
	return out
}

// parseMetaParams reads field 1088 (confluent.Meta) out of raw option
// bytes, and its params (field 2, map<string,string>).
func parseMetaParams(raw []byte, out map[string]string) {
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return
		}
		raw = raw[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, raw)
			if m < 0 {
				return
			}
			raw = raw[m:]
			continue
		}
		val, m := protowire.ConsumeBytes(raw)
		if m < 0 {
			return
		}
		raw = raw[m:]
		if num != 1088 {
			continue
		}
		for meta := val; len(meta) > 0; {
			mnum, mtyp, k := protowire.ConsumeTag(meta)
			if k < 0 {
				return
			}
			meta = meta[k:]
			if mtyp != protowire.BytesType {
				k = protowire.ConsumeFieldValue(mnum, mtyp, meta)
				if k < 0 {
					return
				}
				meta = meta[k:]
				continue
			}
			entry, k := protowire.ConsumeBytes(meta)
			if k < 0 {
				return
			}
			meta = meta[k:]
			if mnum != 2 {
				continue
			}
			var key, value string
			for e := entry; len(e) > 0; {
				enum, etyp, j := protowire.ConsumeTag(e)
				if j < 0 || etyp != protowire.BytesType {
					return
				}
				e = e[j:]
				s, j := protowire.ConsumeBytes(e)
				if j < 0 {
					return
				}
				e = e[j:]
				if enum == 1 {
					key = string(s)
				} else if enum == 2 {
					value = string(s)
				}
			}
			out[key] = value
		}
	}
}

func (b *protoConnectBuilder) field(fd protoreflect.FieldDescriptor, oneofMember bool) (*connectors.Schema, error) {
	cs := &connectors.Schema{}
	params := fieldMetaParams(fd)
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		cs.Type = connectors.Int32
		switch params["connect.type"] {
		case "int8":
			cs.Type = connectors.Int8
		case "int16":
			cs.Type = connectors.Int16
		default:
			if fd.Kind() != protoreflect.Int32Kind {
				setParam(cs, protoTypeParam, fd.Kind().String())
			}
		}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Int64Kind, protoreflect.Uint64Kind,
		protoreflect.Sint64Kind, protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		cs.Type = connectors.Int64
		if fd.Kind() != protoreflect.Int64Kind {
			setParam(cs, protoTypeParam, fd.Kind().String())
		}
	case protoreflect.FloatKind:
		cs.Type = connectors.Float32
	case protoreflect.DoubleKind:
		cs.Type = connectors.Float64
	case protoreflect.BoolKind:
		cs.Type = connectors.Boolean
	case protoreflect.StringKind:
		cs.Type = connectors.String
	case protoreflect.BytesKind:
		cs.Type = connectors.Bytes
	case protoreflect.EnumKind:
		ed := fd.Enum()
		cs.Type = connectors.String
		setParam(cs, protoEnumParam, string(ed.Name()))
		for i := 0; i < ed.Values().Len(); i++ {
			ev := ed.Values().Get(i)
			setParam(cs, protoEnumParam+"."+string(ev.Name()), strconv.Itoa(int(ev.Number())))
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		switch fd.Message().FullName() {
		case protoDecimalType:
			scale := 0
			if s, err := strconv.Atoi(params["scale"]); err == nil {
				scale = s
			}
			cs.Type, cs.Name, cs.Version = connectors.Bytes, connectors.DecimalLogical, 1
			setParam(cs, "scale", strconv.Itoa(scale))
			if p, err := strconv.Atoi(params["precision"]); err == nil {
				setParam(cs, connectDecPrecision, strconv.Itoa(p))
			}
		case protoDateType:
			cs.Type, cs.Name, cs.Version = connectors.Int32, connectors.DateLogical, 1
		case protoTimeType:
			cs.Type, cs.Name, cs.Version = connectors.Int32, connectors.TimeLogical, 1
		case protoTimestamp:
			cs.Type, cs.Name, cs.Version = connectors.Int64, connectors.TimestampLogical, 1
		default:
			if fd.IsMap() || isProtoMapEntry(fd) {
				entry := fd.Message()
				k, err := b.field(entry.Fields().ByName("key"), false)
				if err != nil {
					return nil, err
				}
				v, err := b.field(entry.Fields().ByName("value"), false)
				if err != nil {
					return nil, err
				}
				cs.Type, cs.Keys, cs.Values, cs.Optional = connectors.Map, k, v, true
				setParam(cs, protoTagParam, strconv.Itoa(int(fd.Number())))
				return cs, nil
			}
			m, err := b.message(fd.Message())
			if err != nil {
				return nil, err
			}
			cs = m
		}
		cs.Optional = true
	default:
		return nil, fmt.Errorf("unsupported Protobuf field kind %s", fd.Kind())
	}
	if fd.IsList() {
		item := *cs
		item.Optional = true
		cs = &connectors.Schema{Type: connectors.Array, Items: &item, Optional: true}
	}
	switch {
	case oneofMember:
		cs.Optional = true
	case b.optionalNullable:
		if fd.HasOptionalKeyword() {
			cs.Optional = true
		}
	default:
		cs.Optional = true
	}
	setParam(cs, protoTagParam, strconv.Itoa(int(fd.Number())))
	return cs, nil
}

// isProtoMapEntry is ProtobufData.isMapDescriptor: a repeated message
// named ...Entry with exactly the fields key and value, the way Connect
// maps are written.
func isProtoMapEntry(fd protoreflect.FieldDescriptor) bool {
	if !fd.IsList() || fd.Message() == nil {
		return false
	}
	md := fd.Message()
	f := md.Fields()
	return strings.HasSuffix(string(md.Name()), "Entry") && f.Len() == 2 &&
		f.Get(0).Name() == "key" && f.Get(1).Name() == "value" && !f.Get(0).IsList() && !f.Get(1).IsList()
}

// ---- message -> Connect value (ProtobufData.toConnectData) ----

func structFromMessage(cs *connectors.Schema, msg protoreflect.Message) (*connectors.StructValue, error) {
	sv := connectors.NewStruct(cs)
	fields := msg.Descriptor().Fields()
	for i, f := range cs.Fields {
		if f.Schema.Type == connectors.Struct && strings.HasPrefix(f.Schema.Name, protoUnionPrefix) {
			od := msg.Descriptor().Oneofs().ByName(protoreflect.Name(f.Name))
			if od == nil {
				continue
			}
			set := msg.WhichOneof(od)
			if set == nil {
				continue
			}
			u := connectors.NewStruct(f.Schema)
			j, ms := f.Schema.Field(string(set.Name()))
			if ms == nil {
				return nil, fmt.Errorf("oneof %s member %s unknown", od.Name(), set.Name())
			}
			v, err := fieldValue(ms, set, msg.Get(set))
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", set.Name(), err)
			}
			u.Values[j] = v
			sv.Values[i] = u
			continue
		}
		fd := fields.ByName(protoreflect.Name(f.Name))
		if fd == nil {
			continue
		}
		if (fd.Message() != nil && !fd.IsList() && !fd.IsMap()) || fd.HasPresence() && fd.Message() == nil {
			if !msg.Has(fd) {
				continue
			}
		}
		v, err := fieldValue(f.Schema, fd, msg.Get(fd))
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		sv.Values[i] = v
	}
	return sv, nil
}

func fieldValue(cs *connectors.Schema, fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch {
	case fd.IsMap():
		out := map[string]any{}
		var err error
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			var kv, vv any
			if kv, err = singleValue(cs.Keys, fd.MapKey(), k.Value()); err != nil {
				return false
			}
			if vv, err = singleValue(cs.Values, fd.MapValue(), mv); err != nil {
				return false
			}
			var ks string
			if ks, err = mapKeys.keyString(cs.Keys, kv); err != nil {
				return false
			}
			out[ks] = vv
			return true
		})
		return out, err
	case cs.Type == connectors.Map:
		out := map[string]any{}
		list := v.List()
		for i := 0; i < list.Len(); i++ {
			entry := list.Get(i).Message()
			kf, vf := entry.Descriptor().Fields().ByName("key"), entry.Descriptor().Fields().ByName("value")
			kv, err := singleValue(cs.Keys, kf, entry.Get(kf))
			if err != nil {
				return nil, err
			}
			var vv any
			if vf.Message() == nil || entry.Has(vf) {
				if vv, err = singleValue(cs.Values, vf, entry.Get(vf)); err != nil {
					return nil, err
				}
			}
			ks, err := mapKeys.keyString(cs.Keys, kv)
			if err != nil {
				return nil, err
			}
			out[ks] = vv
		}
		return out, nil
	case fd.IsList():
		list := v.List()
		out := make([]any, list.Len())
		for i := range out {
			var err error
			if out[i], err = singleValue(cs.Items, fd, list.Get(i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return singleValue(cs, fd, v)
}

func singleValue(cs *connectors.Schema, fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch cs.Name {
	case connectors.DecimalLogical, connectors.DateLogical, connectors.TimeLogical, connectors.TimestampLogical:
		m := v.Message()
		get := func(name string) protoreflect.Value {
			f := m.Descriptor().Fields().ByName(protoreflect.Name(name))
			if f == nil {
				return protoreflect.Value{}
			}
			return m.Get(f)
		}
		switch cs.Name {
		case connectors.DecimalLogical:
			val := get("value")
			if !val.IsValid() {
				return nil, fmt.Errorf("decimal message has no value field")
			}
			// The message carries its own scale; a Connect Decimal has the
			// schema's, and a value at another scale is not one of its
			// values (Connect's Decimal.fromLogical refuses it on write).
			scale, _ := strconv.Atoi(cs.Parameters["scale"])
			if got := get("scale").Int(); got != int64(scale) {
				return nil, fmt.Errorf("decimal has scale %d, the schema's is %d", got, scale)
			}
			return ratOf(fromTwosComplement(val.Bytes()), scale), nil
		case connectors.DateLogical:
			y, mo, d := int(get("year").Int()), int(get("month").Int()), int(get("day").Int())
			t := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
			if mo < 1 || mo > 12 || d < 1 || t.Day() != d {
				return nil, fmt.Errorf("%04d-%02d-%02d is not a date", y, mo, d)
			}
			return t, nil
		case connectors.TimeLogical:
			h, mi, s, n := get("hours").Int(), get("minutes").Int(), get("seconds").Int(), get("nanos").Int()
			if h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59 || n < 0 || n > 999999999 {
				return nil, fmt.Errorf("%d:%d:%d.%09d is not a time of day", h, mi, s, n)
			}
			ms := h*3600000 + mi*60000 + s*1000 + n/1e6
			return time.UnixMilli(ms).UTC(), nil
		default:
			s, n := get("seconds").Int(), get("nanos").Int()
			return time.UnixMilli(s*1000 + n/1e6).UTC(), nil
		}
	}
	switch cs.Type {
	case connectors.Int8:
		return int8(v.Int()), nil
	case connectors.Int16:
		return int16(v.Int()), nil
	case connectors.Int32:
		if fd.Kind() == protoreflect.EnumKind {
			return int32(v.Enum()), nil
		}
		return int32(v.Int()), nil
	case connectors.Int64:
		switch fd.Kind() {
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			return int64(v.Uint()), nil
		}
		return v.Int(), nil
	case connectors.Float32:
		return float32(v.Float()), nil
	case connectors.Float64:
		return v.Float(), nil
	case connectors.Boolean:
		return v.Bool(), nil
	case connectors.String:
		if fd.Kind() == protoreflect.EnumKind {
			ev := fd.Enum().Values().ByNumber(v.Enum())
			if ev == nil {
				return nil, fmt.Errorf("enum %s has no value %d", fd.Enum().FullName(), v.Enum())
			}
			return string(ev.Name()), nil
		}
		return v.String(), nil
	case connectors.Bytes:
		return bytes.Clone(v.Bytes()), nil
	case connectors.Struct:
		return structFromMessage(cs, v.Message())
	}
	return nil, fmt.Errorf("unsupported Connect type %s", cs.Type)
}
