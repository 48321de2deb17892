package schemaregistry

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// protobufReadProblems says why a reader with schema reader cannot read
// Protobuf data written with schema writer. It follows the kinds of change
// Confluent's ProtobufSchema diff names, by wire compatibility: messages
// are matched by full name and fields by number; a message of the writer
// that the reader lacks is a problem (Confluent's MESSAGE_REMOVED), as are
// a changed field kind or message type, a proto2 required field on either
// side only (Confluent's REQUIRED_FIELD_ADDED and REQUIRED_FIELD_REMOVED),
// a field moved into an existing oneof and several moved into a new one. Renaming a field, adding or
// removing an optional field, changing between scalar kinds of one wire
// encoding (int32/int64/uint32/uint64/bool/enum, sint32/sint64,
// fixed32/sfixed32, fixed64/sfixed64, string/bytes) and adding or removing
// enum constants are compatible.
func protobufReadProblems(reader, writer protoreflect.FileDescriptor) []string {
	readerMsgs := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	collectMessages(reader.Messages(), readerMsgs)
	writerMsgs := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	collectMessages(writer.Messages(), writerMsgs)
	var problems []string
	for _, name := range sortedNames(writerMsgs) {
		w := writerMsgs[name]
		r, ok := readerMsgs[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("message %s removed", name))
			continue
		}
		problems = append(problems, messageProblems(r, w)...)
	}
	return problems
}

func collectMessages(msgs protoreflect.MessageDescriptors, into map[protoreflect.FullName]protoreflect.MessageDescriptor) {
	for i := 0; i < msgs.Len(); i++ {
		m := msgs.Get(i)
		if m.IsMapEntry() {
			continue // compared as the map field that owns it
		}
		into[m.FullName()] = m
		collectMessages(m.Messages(), into)
	}
}

func sortedNames(m map[protoreflect.FullName]protoreflect.MessageDescriptor) []protoreflect.FullName {
	names := make([]protoreflect.FullName, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func messageProblems(reader, writer protoreflect.MessageDescriptor) []string {
	var problems []string
	rf, wf := reader.Fields(), writer.Fields()
	movedToNewOneof := map[protoreflect.FullName]int{}
	for i := 0; i < rf.Len(); i++ {
		r := rf.Get(i)
		w := wf.ByNumber(r.Number())
		where := fmt.Sprintf("%s field %d (%s)", reader.FullName(), r.Number(), r.Name())
		if w == nil {
			if r.Cardinality() == protoreflect.Required {
				problems = append(problems, where+": required field added")
			}
			continue
		}
		if p := fieldTypeProblem(r, w); p != "" {
			problems = append(problems, where+": "+p)
		}
		ro, wo := realOneof(r), realOneof(w)
		if ro != nil && wo == nil {
			// Confluent: a field may join a new oneof alone; joining an
			// existing oneof, or several joining one, can drop data.
			if oneofExisted(ro, writer) {
				problems = append(problems, where+": field moved into existing oneof "+string(ro.Name()))
			} else {
				movedToNewOneof[ro.FullName()]++
			}
		}
	}
	for name, n := range movedToNewOneof {
		if n > 1 {
			problems = append(problems, fmt.Sprintf("%s: %d fields moved into new oneof %s", reader.FullName(), n, name.Name()))
		}
	}
	for i := 0; i < wf.Len(); i++ {
		w := wf.Get(i)
		if rf.ByNumber(w.Number()) == nil && w.Cardinality() == protoreflect.Required {
			problems = append(problems, fmt.Sprintf("%s field %d (%s): required field removed", writer.FullName(), w.Number(), w.Name()))
		}
	}
	return problems
}

func realOneof(f protoreflect.FieldDescriptor) protoreflect.OneofDescriptor {
	if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return o
	}
	return nil
}

// oneofExisted reports whether m (the other version) has a oneof of o's
// name with fields in it.
func oneofExisted(o protoreflect.OneofDescriptor, m protoreflect.MessageDescriptor) bool {
	other := m.Oneofs().ByName(o.Name())
	return other != nil && !other.IsSynthetic() && other.Fields().Len() > 0
}

// wireGroup names the wire encoding a scalar kind shares with others.
func wireGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind,
		protoreflect.BoolKind, protoreflect.EnumKind:
		return "varint"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "zigzag"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	case protoreflect.FloatKind:
		return "float"
	case protoreflect.DoubleKind:
		return "double"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "length-delimited"
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "message"
	}
	return k.String()
}

func fieldTypeProblem(r, w protoreflect.FieldDescriptor) string {
	if r.IsMap() != w.IsMap() {
		return "changed between map and non-map"
	}
	if r.IsMap() {
		if p := fieldTypeProblem(r.MapKey(), w.MapKey()); p != "" {
			return "map key " + p
		}
		return fieldTypeProblem(r.MapValue(), w.MapValue())
	}
	rk, wk := r.Kind(), w.Kind()
	if wireGroup(rk) != wireGroup(wk) {
		return fmt.Sprintf("type changed from %s to %s", wk, rk)
	}
	if wireGroup(rk) == "message" {
		if r.Message().FullName() != w.Message().FullName() {
			return fmt.Sprintf("message type changed from %s to %s", w.Message().FullName(), r.Message().FullName())
		}
		if r.IsList() != w.IsList() {
			return "changed between repeated and singular message"
		}
	}
	return ""
}
