package converters

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/modern-go/reflect2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice-io/sluice/connectors"
)

// AvroConverterClass is Confluent's class name of the Avro converter.
const AvroConverterClass = "io.confluent.connect.avro.AvroConverter"

// Property names and names of Confluent's AvroData, which maps Connect
// schemas to Avro schemas and back.
const (
	avroNamespace       = "io.confluent.connect.avro"
	avroDefaultName     = "ConnectDefault"
	avroMapEntryName    = "MapEntry"
	avroUnionName       = avroNamespace + ".Union"
	avroEnumParam       = avroNamespace + ".Enum"
	connectNameProp     = "connect.name"
	connectDocProp      = "connect.doc"
	connectVersionProp  = "connect.version"
	connectDefaultProp  = "connect.default"
	connectParamsProp   = "connect.parameters"
	connectTypeProp     = "connect.type"
	connectFixedSize    = "connect.fixed.size"
	connectDecPrecision = "connect.decimal.precision"
	avroDecPrecisionDef = 64
)

// avroAPI is hamba/avro configured to write the bytes Apache Avro's Java
// BinaryEncoder writes: arrays and maps as one block of items without a
// byte-size header, so Sluice's frames equal Confluent's byte for byte.
// MaxByteSliceSize bounds what a corrupt length prefix can make the decoder
// allocate.
var avroAPI = avro.Config{
	BlockLength:            math.MaxInt32,
	DisableBlockSizeHeader: true,
	MaxByteSliceSize:       64 << 20,
	MaxSliceAllocSize:      16 << 20,
}.Freeze()

// mapKeys renders and parses map keys of non-string key schemas the way
// every Sluice converter does (see the Schema doc: map[string]any).
var mapKeys = NewJSONConverter()

// AvroConverter mirrors io.confluent.connect.avro.AvroConverter: Connect data
// is written as Avro in Confluent's frame, its schema registered in (or
// looked up from) a Schema Registry, and read back by the id in the frame.
// Connect schemas map to Avro schemas as Confluent's AvroData maps them.
type AvroConverter struct {
	reg         *registryClient
	connectMeta bool
	scrub       bool

	toAvro   *boundedCache[*connectors.Schema, *avroWriter]
	fromAvro *boundedCache[int, *avroReader]
}

// avroWriter is a Connect schema's Avro form.
type avroWriter struct {
	text   string
	schema avro.Schema
	name   string      // record full name, for the record name strategies
	form   *structForm // the fast form of the record, when it has one
	ids    topicIDs
}

// avroReader is a registered schema's Avro and Connect forms.
type avroReader struct {
	schema  avro.Schema
	connect *connectors.Schema
}

// avroOwnKeys are AvroDataConfig's keys.
var avroOwnKeys = map[string]bool{
	"connect.meta.data":            true,
	"enhanced.avro.schema.support": true,
	"scrub.invalid.names":          true,
}

// Configure takes AvroConverterConfig's keys (see registry.go for the
// registry's) and AvroDataConfig's: connect.meta.data (default true) and
// scrub.invalid.names (default false) are honoured;
// enhanced.avro.schema.support is taken only as false, its default, because
// what it preserves (the order of enum symbols, kept in Connect's ordered
// schema parameters) cannot be kept in Sluice's unordered parameters.
func (c *AvroConverter) Configure(props map[string]string, isKey bool) error {
	ce := &connectors.ConfigError{}
	c.connectMeta = parseBool(ce, props, "connect.meta.data", true)
	c.scrub = parseBool(ce, props, "scrub.invalid.names", false)
	if parseBool(ce, props, "enhanced.avro.schema.support", false) {
		ce.Add("enhanced.avro.schema.support", "true is not supported by Sluice: Connect keeps Avro enum symbols in ordered schema parameters, Sluice's parameters have no order; leave it false")
	}
	for _, k := range []string{"allow.optional.map.keys", "flatten.singleton.unions", "discard.type.doc.default", "generalized.sum.type.support", "ignore.default.for.nullables"} {
		if parseBool(ce, props, k, false) {
			ce.Add(k, "true is not supported by Sluice's AvroConverter; leave it false (Confluent's default)")
		}
	}
	own := map[string]bool{"allow.optional.map.keys": true, "flatten.singleton.unions": true, "discard.type.doc.default": true, "generalized.sum.type.support": true, "ignore.default.for.nullables": true}
	for k := range avroOwnKeys {
		own[k] = true
	}
	rc := configureRegistry(ce, "AvroConverter", sr.TypeAvro, props, isKey, own)
	if err := ce.Err(); err != nil {
		return err
	}
	c.reg = rc
	c.toAvro = newBoundedCache[*connectors.Schema, *avroWriter](rc.dataCacheSize)
	c.fromAvro = newBoundedCache[int, *avroReader](rc.dataCacheSize)
	return nil
}

// FromConnect writes value as a framed Avro datum. A nil value is a nil
// record value (a tombstone), as Confluent's serializer writes it.
func (c *AvroConverter) FromConnect(topic string, schema *connectors.Schema, value any) ([]byte, error) {
	value, done, err := recordValue("AvroConverter", c.reg, schema, value)
	if done || err != nil {
		return nil, err
	}
	w, err := c.writerFor(schema)
	if err != nil {
		return nil, err
	}
	if c.reg.useLatest {
		return c.fromConnectLatest(topic, w, schema, value)
	}
	id, err := c.reg.idForTopic(&w.ids, topic, w.name, sr.Schema{Schema: w.text, Type: sr.TypeAvro})
	if err != nil {
		return nil, err
	}
	native, err := c.nativeValue(w, schema, w.schema, value)
	if err != nil {
		return nil, dataErr("AvroConverter", err)
	}
	out, err := encodeAvroFrame(w.schema, id, native)
	if err != nil {
		subject, _ := c.reg.subject(topic, w.name)
		return nil, &DataError{Converter: "AvroConverter", Msg: fmt.Sprintf("encoding for subject %q schema id %d: %v", subject, id, err)}
	}
	return out, nil
}

// fromConnectLatest writes value with the latest schema of its subject
// (use.latest.version), whose fields the map form finds by name.
func (c *AvroConverter) fromConnectLatest(topic string, w *avroWriter, schema *connectors.Schema, value any) ([]byte, error) {
	subject, err := c.reg.subject(topic, w.name)
	if err != nil {
		return nil, err
	}
	latest, err := c.reg.latestFor(subject)
	if err != nil {
		return nil, err
	}
	target, err := c.latestWriter(subject, latest, w)
	if err != nil {
		return nil, err
	}
	native, err := c.toNative(schema, w.schema, value)
	if err != nil {
		return nil, dataErr("AvroConverter", err)
	}
	out, err := encodeAvroFrame(target.schema, latest.ID, native)
	if err != nil {
		return nil, &DataError{Converter: "AvroConverter", Msg: fmt.Sprintf("encoding for subject %q schema id %d: %v", subject, latest.ID, err)}
	}
	return out, nil
}

// avroWriters are hamba/avro writers kept between records: a frame is
// written into one (header, then the datum) and copied out once.
var avroWriters = sync.Pool{New: func() any { return avro.NewWriter(nil, 512, avro.WithWriterConfig(avroAPI)) }}

// encodeAvroFrame writes Confluent's frame of v encoded with schema.
func encodeAvroFrame(schema avro.Schema, id int, v any) ([]byte, error) {
	wr := avroWriters.Get().(*avro.Writer)
	defer avroWriters.Put(wr)
	wr.Reset(nil)
	wr.Error = nil
	var header [frameHeaderLen]byte
	wr.Write(appendFrameHeader(header[:0], id))
	wr.WriteVal(schema, v)
	if wr.Error != nil {
		return nil, wr.Error
	}
	return bytes.Clone(wr.Buffer()), nil
}

// latestWriter is the subject's latest schema, used to write instead of the
// record's own (use.latest.version). With latest.compatibility.strict, as
// in Confluent, the latest schema must be able to read what the record's
// schema writes.
func (c *AvroConverter) latestWriter(subject string, latest sr.SubjectSchema, own *avroWriter) (*avroWriter, error) {
	s, err := c.parse(latest.Schema)
	if err != nil {
		return nil, &DataError{Converter: "AvroConverter", Msg: fmt.Sprintf("latest version of subject %q (schema id %d): %v", subject, latest.ID, err)}
	}
	if c.reg.latestStrict {
		if err := avro.NewSchemaCompatibility().Compatible(s, own.schema); err != nil {
			return nil, &DataError{Converter: "AvroConverter", Msg: fmt.Sprintf("latest version %d of subject %q (schema id %d) is not backward compatible with the record's schema (latest.compatibility.strict=true): %v", latest.Version, subject, latest.ID, err)}
		}
	}
	return &avroWriter{text: latest.Schema.Schema, schema: s}, nil
}

// writerFor returns schema's Avro form, cached by schema identity.
func (c *AvroConverter) writerFor(schema *connectors.Schema) (*avroWriter, error) {
	if w, ok := c.toAvro.get(schema); ok {
		return w, nil
	}
	b := &avroSchemaBuilder{meta: c.connectMeta, scrub: c.scrub, defined: map[string]bool{}}
	j, err := b.schema(schema, false)
	if err != nil {
		return nil, dataErr("AvroConverter", err)
	}
	text, err := json.Marshal(j)
	if err != nil {
		return nil, &DataError{Converter: "AvroConverter", Msg: err.Error()}
	}
	parsed, err := avro.ParseBytesWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, &DataError{Converter: "AvroConverter", Msg: fmt.Sprintf("the Avro schema built from the Connect schema is invalid: %v", err)}
	}
	w := &avroWriter{text: string(text), schema: parsed}
	if n, ok := parsed.(avro.NamedSchema); ok {
		w.name = n.FullName()
	}
	if !schema.Optional {
		w.form = newStructForm(schema, c.scrub)
	}
	c.toAvro.put(schema, w)
	return w, nil
}

// parse parses a registered Avro schema, resolving its references first.
func (c *AvroConverter) parse(s sr.Schema) (avro.Schema, error) {
	cache := &avro.SchemaCache{}
	if err := c.addReferences(cache, s.References, 0); err != nil {
		return nil, err
	}
	return avro.ParseWithCache(s.Schema, "", cache)
}

func (c *AvroConverter) addReferences(cache *avro.SchemaCache, refs []sr.SchemaReference, depth int) error {
	if depth > 32 {
		return fmt.Errorf("schema references nest deeper than 32 levels")
	}
	for _, r := range refs {
		ss, err := c.reg.schemaBySubjectVersion(r.Subject, r.Version)
		if err != nil {
			return err
		}
		if err := c.addReferences(cache, ss.References, depth+1); err != nil {
			return err
		}
		if _, err := avro.ParseWithCache(ss.Schema.Schema, "", cache); err != nil {
			return fmt.Errorf("reference %q (subject %q version %d): %w", r.Name, r.Subject, r.Version, err)
		}
	}
	return nil
}

// ToConnect reads a framed Avro datum. Nil data is a nil value with no
// schema (a tombstone).
func (c *AvroConverter) ToConnect(topic string, data []byte) (*connectors.Schema, any, error) {
	id, payload, ok, err := readFrame("AvroConverter", c.reg, data)
	if !ok {
		return nil, nil, err
	}
	r, err := c.readerFor(topic, id)
	if err != nil {
		return nil, nil, err
	}
	var native any
	if err := avroAPI.Unmarshal(r.schema, payload, &native); err != nil {
		return nil, nil, &DataError{Converter: "AvroConverter", Msg: fmt.Sprintf("decoding with schema id %d: %v", id, err)}
	}
	v, err := fromNative(r.connect, r.schema, native)
	if err != nil {
		return nil, nil, &DataError{Converter: "AvroConverter", Msg: fmt.Sprintf("schema id %d: %v", id, err)}
	}
	return r.connect, v, nil
}

// readerFor returns the schema of id in its Avro and Connect forms, asking
// the registry once per id.
func (c *AvroConverter) readerFor(topic string, id int) (*avroReader, error) {
	if r, ok := c.fromAvro.get(id); ok {
		return r, nil
	}
	s, err := c.reg.schemaOfType(id)
	if err != nil {
		return nil, err
	}
	parsed, err := c.parse(s)
	if err != nil {
		return nil, &DataError{Converter: "AvroConverter", Msg: fmt.Sprintf("schema id %d: %v", id, err)}
	}
	name := ""
	if n, ok := parsed.(avro.NamedSchema); ok {
		name = n.FullName()
	}
	subject, err := c.reg.subject(topic, name)
	if err != nil {
		return nil, err
	}
	version, err := c.reg.versionOf(subject, id, s)
	if err != nil {
		return nil, err
	}
	rd := &avroConnectBuilder{meta: c.connectMeta, onPath: map[string]bool{}}
	cs, err := rd.schema(parsed, false, nil, false)
	if err != nil {
		return nil, &DataError{Converter: "AvroConverter", Msg: fmt.Sprintf("schema id %d: %v", id, err)}
	}
	if _, has := propOf(parsed, connectVersionProp); !has && version > 0 {
		if cs.Version != 0 && cs.Version != version {
			return nil, &DataError{Converter: "AvroConverter", Msg: fmt.Sprintf("schema id %d: Mismatched versions: the schema's own version %d differs from version %d of subject %q", id, cs.Version, version, subject)}
		}
		cs.Version = version
	}
	r := &avroReader{schema: parsed, connect: cs}
	c.fromAvro.put(id, r)
	return r, nil
}

// ---- Connect schema -> Avro schema (AvroData.fromConnectSchema) ----

// jsonObject is a JSON object that keeps its keys in the order they were
// added, so that the schema text Sluice registers reads as Avro's Java
// library prints it.
type jsonObject []jsonMember

type jsonMember struct {
	key   string
	value any
}

func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type avroSchemaBuilder struct {
	meta, scrub bool
	nameIndex   int
	defined     map[string]bool
}

// typeName returns the namespace and name of a named Avro type made from
// a Connect schema named name, or the next ConnectDefault name when it has
// none.
func (b *avroSchemaBuilder) typeName(name string) (string, string) {
	if name == "" {
		b.nameIndex++
		if b.nameIndex > 1 {
			return avroNamespace, avroDefaultName + strconv.Itoa(b.nameIndex)
		}
		return avroNamespace, avroDefaultName
	}
	ns, simple := "", name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ns, simple = name[:i], name[i+1:]
	}
	if b.scrub {
		parts := strings.Split(ns, ".")
		for i, p := range parts {
			parts[i] = scrubAvroName(p)
		}
		if ns != "" {
			ns = strings.Join(parts, ".")
		}
		simple = scrubAvroName(simple)
	}
	return ns, simple
}

func fullName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "." + name
}

// schema returns s as Avro schema JSON. ignoreOptional leaves out the null
// branch (a union member is never itself a union).
func (b *avroSchemaBuilder) schema(s *connectors.Schema, ignoreOptional bool) (any, error) {
	if s == nil {
		return nil, errorf("a schemaless part (no Connect schema) cannot be written as Avro")
	}
	var (
		base        jsonObject // the type's object; props are added after
		named       string     // full name of a named type already defined
		connectType string
	)
	switch s.Type {
	case connectors.Int8:
		connectType = "int8"
		base = jsonObject{{"type", "int"}}
	case connectors.Int16:
		connectType = "int16"
		base = jsonObject{{"type", "int"}}
	case connectors.Int32:
		base = jsonObject{{"type", "int"}}
	case connectors.Int64:
		base = jsonObject{{"type", "long"}}
	case connectors.Float32:
		base = jsonObject{{"type", "float"}}
	case connectors.Float64:
		base = jsonObject{{"type", "double"}}
	case connectors.Boolean:
		base = jsonObject{{"type", "boolean"}}
	case connectors.String:
		base = jsonObject{{"type", "string"}}
	case connectors.Bytes:
		if size, ok := s.Parameters[connectFixedSize]; ok {
			n, err := strconv.Atoi(size)
			if err != nil || n < 0 {
				return nil, errorf("parameter %s=%q is not a size", connectFixedSize, size)
			}
			ns, name := b.typeName(s.Name)
			if b.defined[fullName(ns, name)] {
				named = fullName(ns, name)
				break
			}
			b.defined[fullName(ns, name)] = true
			base = jsonObject{{"type", "fixed"}, {"name", name}}
			if ns != "" {
				base = append(base, jsonMember{"namespace", ns})
			}
			base = append(base, jsonMember{"size", n})
		} else {
			base = jsonObject{{"type", "bytes"}}
		}
		if s.Name == connectors.DecimalLogical {
			scale, precision, err := decimalScalePrecision(s)
			if err != nil {
				return nil, err
			}
			base = append(base, jsonMember{"scale", scale}, jsonMember{"precision", precision})
		}
	case connectors.Array:
		items, err := b.schema(s.Items, false)
		if err != nil {
			return nil, inField(err, "items")
		}
		base = jsonObject{{"type", "array"}, {"items", items}}
	case connectors.Map:
		if s.Keys == nil || s.Values == nil {
			return nil, errorf("map schema needs both keys and values schemas")
		}
		if s.Keys.Type == connectors.String && !s.Keys.Optional {
			values, err := b.schema(s.Values, false)
			if err != nil {
				return nil, inField(err, "values")
			}
			base = jsonObject{{"type", "map"}, {"values", values}}
			break
		}
		// Avro maps have string keys only: AvroData writes any other map as
		// an array of key/value records.
		ns, name := avroNamespace, avroMapEntryName
		internal := false
		if s.Name != "" {
			ns, name = b.typeName(s.Name)
			internal = true
		}
		var entry any
		if b.defined[fullName(ns, name)] {
			entry = fullName(ns, name)
		} else {
			b.defined[fullName(ns, name)] = true
			kf, err := b.field("key", s.Keys, "")
			if err != nil {
				return nil, inField(err, "keys")
			}
			vf, err := b.field("value", s.Values, "")
			if err != nil {
				return nil, inField(err, "values")
			}
			rec := jsonObject{{"type", "record"}, {"name", name}}
			if ns != "" {
				rec = append(rec, jsonMember{"namespace", ns})
			}
			rec = append(rec, jsonMember{"fields", []any{kf, vf}})
			if internal {
				rec = append(rec, jsonMember{"connect.internal.type", avroMapEntryName})
			}
			entry = rec
		}
		base = jsonObject{{"type", "array"}, {"items", entry}}
	case connectors.Struct:
		if s.Name == avroUnionName {
			var branches []any
			if s.Optional {
				branches = append(branches, "null")
			}
			for _, f := range s.Fields {
				fs := *f.Schema
				fs.Optional = false
				br, err := b.schema(&fs, true)
				if err != nil {
					return nil, inField(err, f.Name)
				}
				branches = append(branches, br)
			}
			return branches, nil
		}
		if s.Optional && !ignoreOptional {
			inner := *s
			inner.Optional = false
			inner.Default = nil
			rec, err := b.schema(&inner, true)
			if err != nil {
				return nil, err
			}
			if s.Default != nil {
				return []any{rec, "null"}, nil
			}
			return []any{"null", rec}, nil
		}
		ns, name := b.typeName(s.Name)
		if b.defined[fullName(ns, name)] {
			named = fullName(ns, name)
			break
		}
		b.defined[fullName(ns, name)] = true
		base = jsonObject{{"type", "record"}, {"name", name}}
		if ns != "" {
			base = append(base, jsonMember{"namespace", ns})
		}
		fields := make([]any, 0, len(s.Fields))
		for _, f := range s.Fields {
			name := f.Name
			if b.scrub {
				name = scrubAvroName(name)
			}
			jf, err := b.field(name, f.Schema, "")
			if err != nil {
				return nil, inField(err, f.Name)
			}
			fields = append(fields, jf)
		}
		base = append(base, jsonMember{"fields", fields})
	default:
		return nil, errorf("unknown schema type %q", s.Type)
	}
	if named != "" {
		return b.optional(s, named, ignoreOptional), nil
	}
	if b.meta {
		if s.Doc != "" {
			base = append(base, jsonMember{connectDocProp, s.Doc})
		}
		if s.Version != 0 {
			base = append(base, jsonMember{connectVersionProp, s.Version})
		}
		if len(s.Parameters) > 0 {
			params := jsonObject{}
			for _, k := range sortedStringKeys(s.Parameters) {
				params = append(params, jsonMember{k, s.Parameters[k]})
			}
			base = append(base, jsonMember{connectParamsProp, params})
		}
		if s.Default != nil {
			d, err := avroDefault(s, s.Default)
			if err != nil {
				return nil, inField(err, "default")
			}
			base = append(base, jsonMember{connectDefaultProp, d})
		}
		if s.Name != "" {
			base = append(base, jsonMember{connectNameProp, s.Name})
		}
		if connectType != "" {
			base = append(base, jsonMember{connectTypeProp, connectType})
		}
	}
	switch s.Name {
	case connectors.DecimalLogical:
		base = append(base, jsonMember{"logicalType", "decimal"})
	case connectors.DateLogical:
		base = append(base, jsonMember{"logicalType", "date"})
	case connectors.TimeLogical:
		base = append(base, jsonMember{"logicalType", "time-millis"})
	case connectors.TimestampLogical:
		base = append(base, jsonMember{"logicalType", "timestamp-millis"})
	}
	for _, k := range sortedStringKeys(s.Parameters) {
		if strings.HasPrefix(k, "avro") {
			base = append(base, jsonMember{k, s.Parameters[k]})
		}
	}
	var out any = base
	if len(base) == 1 {
		out = base[0].value // a bare primitive prints as its name
	}
	return b.optional(s, out, ignoreOptional), nil
}

// optional makes t a union with null when s is optional: null first, or
// last when s has a default (an Avro union's default is of its first type).
func (b *avroSchemaBuilder) optional(s *connectors.Schema, t any, ignoreOptional bool) any {
	if !s.Optional || ignoreOptional {
		return t
	}
	if s.Default != nil {
		return []any{t, "null"}
	}
	return []any{"null", t}
}

// field returns a record field: its default is the Connect default, or
// null for an optional field without one.
func (b *avroSchemaBuilder) field(name string, s *connectors.Schema, doc string) (any, error) {
	t, err := b.schema(s, false)
	if err != nil {
		return nil, err
	}
	f := jsonObject{{"name", name}, {"type", t}}
	if doc != "" {
		f = append(f, jsonMember{"doc", doc})
	}
	switch {
	case s.Default != nil:
		d, err := avroDefault(s, s.Default)
		if err != nil {
			return nil, inField(err, "default")
		}
		f = append(f, jsonMember{"default", d})
	case s.Optional:
		f = append(f, jsonMember{"default", nil})
	}
	return f, nil
}

func decimalScalePrecision(s *connectors.Schema) (int, int, error) {
	scale, err := strconv.Atoi(s.Parameters["scale"])
	if err != nil {
		return 0, 0, errorf("Decimal schema has no valid scale parameter (%q)", s.Parameters["scale"])
	}
	precision := avroDecPrecisionDef
	if p, ok := s.Parameters[connectDecPrecision]; ok {
		if precision, err = strconv.Atoi(p); err != nil {
			return 0, 0, errorf("parameter %s=%q is not a number", connectDecPrecision, p)
		}
	}
	if scale < 0 || scale > precision || precision < 1 {
		// AvroData falls back to a legacy encoding Avro itself calls
		// invalid; Sluice refuses instead of writing it.
		return 0, 0, errorf("Decimal scale %d and precision %d cannot be written as an Avro decimal (0 <= scale <= precision)", scale, precision)
	}
	return scale, precision, nil
}

// avroDefault renders a Connect default as an Avro JSON default, as
// AvroData.defaultValueFromConnect does: bytes as a string of ISO-8859-1
// characters, logical types as their Avro encodings.
func avroDefault(s *connectors.Schema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	n, err := toNativeValue(s, v, false)
	if err != nil {
		return nil, err
	}
	return nativeToJSONDefault(s, n)
}

func nativeToJSONDefault(s *connectors.Schema, n any) (any, error) {
	switch x := n.(type) {
	case nil:
		return nil, nil
	case unionChoice:
		return nativeToJSONDefault(nil, x.value)
	case []byte:
		return latin1(x), nil
	case time.Time:
		if s != nil && s.Name == connectors.DateLogical {
			return x.Unix() / 86400, nil
		}
		return x.UnixMilli(), nil
	case time.Duration:
		return x.Milliseconds(), nil
	case *big.Rat:
		scale := 0
		if s != nil {
			scale, _ = strconv.Atoi(s.Parameters["scale"])
		}
		return latin1(decimalBytes(x, scale)), nil
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errorf("a non-finite float default has no Avro JSON form")
		}
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errorf("a non-finite double default has no Avro JSON form")
		}
		return x, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if s != nil && s.Type == connectors.Map {
				// A map with non-string keys: an array of key/value records.
				entry, _ := e.(map[string]any)
				k, err := nativeToJSONDefault(s.Keys, entry["key"])
				if err != nil {
					return nil, err
				}
				v, err := nativeToJSONDefault(s.Values, entry["value"])
				if err != nil {
					return nil, err
				}
				out[i] = map[string]any{"key": k, "value": v}
				continue
			}
			var items *connectors.Schema
			if s != nil {
				items = s.Items
			}
			if out[i], err = nativeToJSONDefault(items, e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			var es *connectors.Schema
			switch {
			case s == nil:
			case s.Type == connectors.Map:
				es = s.Values
			case s.Type == connectors.Struct:
				for _, f := range s.Fields {
					if f.Name == k || scrubAvroName(f.Name) == k {
						es = f.Schema
					}
				}
			}
			var err error
			if out[k], err = nativeToJSONDefault(es, e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return n, nil
}

func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// decimalBytes is the big-endian two's-complement unscaled value of r at
// scale, as Avro's decimal stores it (r is checked to fit the scale before).
func decimalBytes(r *big.Rat, scale int) []byte {
	u, _ := unscaledOf(r, scale)
	return twosComplement(u)
}

func sortedStringKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// scrubAvroName makes name a valid Avro name as AvroData.doScrubName does:
// URL-encode it, prefix "x" if it starts with a digit, then replace every
// character that is not a letter, digit or '_' by '_'.
func scrubAvroName(name string) string {
	if name == "" {
		return name
	}
	ok := name[0] < '0' || name[0] > '9'
	for i := 0; i < len(name) && ok; i++ {
		ok = isAvroNameChar(name[i])
	}
	if ok {
		return name
	}
	enc := []byte(url.QueryEscape(name))
	if enc[0] >= '0' && enc[0] <= '9' {
		enc = append([]byte{'x'}, enc...)
	}
	for i, ch := range enc {
		if !isAvroNameChar(ch) {
			enc[i] = '_'
		}
	}
	return string(enc)
}

func isAvroNameChar(ch byte) bool {
	return ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '_'
}

// ---- Connect value -> Avro native value (AvroData.fromConnectData) ----

// toNative converts a Connect value to the Go value hamba/avro encodes with
// the Avro schema built from s.
func (c *AvroConverter) toNative(s *connectors.Schema, as avro.Schema, v any) (any, error) {
	n, err := toNativeValue(s, v, c.scrub)
	if err != nil {
		return nil, err
	}
	return wrapUnions(as, n)
}

// toNativeValue converts v to the Go value of its Avro type without union
// wrapping; wrapUnions then wraps the members of unions.
func toNativeValue(s *connectors.Schema, v any, scrub bool) (any, error) {
	if v == nil || isNil(v) {
		switch {
		case s.Default != nil:
			v = s.Default
		case s.Optional:
			return nil, nil
		default:
			return nil, errorf("null value for a required %s with no default", s.Type)
		}
	}
	switch s.Name {
	case connectors.DateLogical, connectors.TimestampLogical:
		t, ok := v.(time.Time)
		if !ok {
			return nil, errorf("expected time.Time for %s, got %s", s.Name, typeName(v))
		}
		if s.Name == connectors.DateLogical {
			t = t.UTC()
			if t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0 || t.Nanosecond() != 0 {
				return nil, errorf("Kafka Connect Date type should not have any time fields set to non-zero values.")
			}
		}
		return t.UTC(), nil
	case connectors.TimeLogical:
		t, ok := v.(time.Time)
		if !ok {
			return nil, errorf("expected time.Time for %s, got %s", s.Name, typeName(v))
		}
		t = t.UTC()
		d := t.Sub(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC))
		if t.Year() != 1970 || t.YearDay() != 1 {
			return nil, errorf("Kafka Connect Time type should not have any date fields set to non-zero values.")
		}
		return d.Truncate(time.Millisecond), nil
	case connectors.DecimalLogical:
		r, ok := v.(*big.Rat)
		if !ok {
			return nil, errorf("expected *big.Rat for %s, got %s", s.Name, typeName(v))
		}
		scale, _, err := decimalScalePrecision(s)
		if err != nil {
			return nil, err
		}
		if _, err := unscaledOf(r, scale); err != nil {
			return nil, err
		}
		return r, nil
	}
	switch s.Type {
	case connectors.Int8:
		if x, ok := v.(int8); ok {
			return int32(x), nil
		}
	case connectors.Int16:
		if x, ok := v.(int16); ok {
			return int32(x), nil
		}
	case connectors.Int32:
		if x, ok := v.(int32); ok {
			return x, nil
		}
	case connectors.Int64:
		if x, ok := v.(int64); ok {
			return x, nil
		}
	case connectors.Float32:
		if x, ok := v.(float32); ok {
			return x, nil
		}
	case connectors.Float64:
		if x, ok := v.(float64); ok {
			return x, nil
		}
	case connectors.Boolean:
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case connectors.String:
		if x, ok := v.(string); ok {
			return x, nil
		}
	case connectors.Bytes:
		if x, ok := v.([]byte); ok {
			if size, fixed := s.Parameters[connectFixedSize]; fixed {
				if n, _ := strconv.Atoi(size); n != len(x) {
					return nil, errorf("%d bytes for a fixed of size %s", len(x), size)
				}
			}
			return x, nil
		}
	case connectors.Array:
		x, ok := v.([]any)
		if !ok {
			break
		}
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = toNativeValue(s.Items, e, scrub); err != nil {
				return nil, inElem(err, index(i))
			}
		}
		return out, nil
	case connectors.Map:
		x, ok := v.(map[string]any)
		if !ok {
			break
		}
		if s.Keys.Type == connectors.String && !s.Keys.Optional {
			out := make(map[string]any, len(x))
			for k, e := range x {
				var err error
				if out[k], err = toNativeValue(s.Values, e, scrub); err != nil {
					return nil, inElem(err, mapKey(k))
				}
			}
			return out, nil
		}
		out := make([]any, 0, len(x))
		for _, k := range sortedKeys(x) {
			kv, err := mapKeys.keyFromString(s.Keys, k)
			if err != nil {
				return nil, inElem(err, mapKey(k))
			}
			nk, err := toNativeValue(s.Keys, kv, scrub)
			if err != nil {
				return nil, inElem(err, mapKey(k))
			}
			nv, err := toNativeValue(s.Values, x[k], scrub)
			if err != nil {
				return nil, inElem(err, mapKey(k))
			}
			out = append(out, map[string]any{"key": nk, "value": nv})
		}
		return out, nil
	case connectors.Struct:
		x, ok := v.(*connectors.StructValue)
		if !ok {
			break
		}
		if s.Name == avroUnionName {
			for i, f := range s.Fields {
				if i < len(x.Values) && x.Values[i] != nil {
					fs := *f.Schema
					fs.Optional = false
					n, err := toNativeValue(&fs, x.Values[i], scrub)
					if err != nil {
						return nil, inField(err, f.Name)
					}
					return unionChoice{index: i, value: n}, nil
				}
			}
			if s.Optional {
				return nil, nil
			}
			return nil, errorf("union struct %s has no field set", avroUnionName)
		}
		if len(x.Values) != len(s.Fields) {
			return nil, errorf("struct has %d values for %d fields", len(x.Values), len(s.Fields))
		}
		out := make(map[string]any, len(s.Fields))
		for i, f := range s.Fields {
			n, err := toNativeValue(f.Schema, x.Values[i], scrub)
			if err != nil {
				return nil, inField(err, f.Name)
			}
			name := f.Name
			if scrub {
				name = scrubAvroName(name)
			}
			out[name] = n
		}
		return out, nil
	default:
		return nil, errorf("unknown schema type %q", s.Type)
	}
	return nil, mismatch(s, v)
}

// unionChoice is the member of a Connect io.confluent.connect.avro.Union
// struct that is set: its index among the union's non-null members.
type unionChoice struct {
	index int
	value any
}

// wrapUnions walks a native value along its Avro schema and wraps every
// union member in the single-entry map hamba/avro takes for a union
// ({"type name": value}), and nil for null.
func wrapUnions(as avro.Schema, v any) (any, error) {
	if ref, ok := as.(*avro.RefSchema); ok {
		as = ref.Schema()
	}
	switch s := as.(type) {
	case *avro.UnionSchema:
		if v == nil {
			return nil, nil
		}
		var member avro.Schema
		if ch, ok := v.(unionChoice); ok {
			i := 0
			for _, t := range s.Types() {
				if t.Type() == avro.Null {
					continue
				}
				if i == ch.index {
					member = t
					break
				}
				i++
			}
			v = ch.value
		} else {
			for _, t := range s.Types() {
				if t.Type() != avro.Null {
					member = t
					break
				}
			}
		}
		if member == nil {
			return nil, errorf("no union member for the value")
		}
		inner, err := wrapUnions(member, v)
		if err != nil {
			return nil, err
		}
		return map[string]any{unionKey(member): inner}, nil
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		for _, f := range s.Fields() {
			w, err := wrapUnions(f.Type(), m[f.Name()])
			if err != nil {
				return nil, inField(err, f.Name())
			}
			m[f.Name()] = w
		}
		return m, nil
	case *avro.ArraySchema:
		x, ok := v.([]any)
		if !ok {
			return v, nil
		}
		for i, e := range x {
			w, err := wrapUnions(s.Items(), e)
			if err != nil {
				return nil, inElem(err, index(i))
			}
			x[i] = w
		}
		return x, nil
	case *avro.MapSchema:
		x, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		for k, e := range x {
			w, err := wrapUnions(s.Values(), e)
			if err != nil {
				return nil, inElem(err, mapKey(k))
			}
			x[k] = w
		}
		return x, nil
	case *avro.FixedSchema:
		if b, ok := v.([]byte); ok {
			// hamba/avro takes a fixed as a byte array of its size.
			arr := reflect.New(reflect.ArrayOf(s.Size(), reflect.TypeFor[byte]())).Elem()
			reflect.Copy(arr, reflect.ValueOf(b))
			return arr.Interface(), nil
		}
	}
	return v, nil
}

// unionKey is the name hamba/avro knows a union member by: the full name of
// a named type, else the type with its logical type ("int.date").
func unionKey(s avro.Schema) string {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	name := string(s.Type())
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		name += "." + string(l.Logical().Type())
	}
	return name
}

// ---- Avro schema -> Connect schema (AvroData.toConnectSchema) ----

type avroConnectBuilder struct {
	meta   bool
	onPath map[string]bool
}

func propOf(s avro.Schema, name string) (any, bool) {
	p, ok := s.(avro.PropertySchema)
	if !ok {
		return nil, false
	}
	v := p.Prop(name)
	return v, v != nil
}

// schema maps an Avro schema to a Connect schema. def is the field's Avro
// default when hasDef.
func (b *avroConnectBuilder) schema(as avro.Schema, forceOptional bool, def any, hasDef bool) (*connectors.Schema, error) {
	if ref, ok := as.(*avro.RefSchema); ok {
		as = ref.Schema()
	}
	cs := &connectors.Schema{}
	logical := ""
	if l, ok := as.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		logical = string(l.Logical().Type())
	}
	switch s := as.(type) {
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Boolean:
			cs.Type = connectors.Boolean
		case avro.Bytes:
			cs.Type = connectors.Bytes
			if d, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
				setDecimal(cs, d)
			}
		case avro.Double:
			cs.Type = connectors.Float64
		case avro.Float:
			cs.Type = connectors.Float32
		case avro.Int:
			cs.Type = connectors.Int32
			switch {
			case logical == "date":
				cs.Name, cs.Version = connectors.DateLogical, 1
			case logical == "time-millis":
				cs.Name, cs.Version = connectors.TimeLogical, 1
			case logical == "":
				if t, ok := propOf(s, connectTypeProp); ok {
					switch t {
					case "int8":
						cs.Type = connectors.Int8
					case "int16":
						cs.Type = connectors.Int16
					default:
						return nil, fmt.Errorf("Connect type annotation %v for Avro int field is not int8 or int16", t)
					}
				}
			}
		case avro.Long:
			cs.Type = connectors.Int64
			if logical == "timestamp-millis" {
				cs.Name, cs.Version = connectors.TimestampLogical, 1
			}
		case avro.String:
			cs.Type = connectors.String
		case avro.Null:
			return nil, fmt.Errorf("Standalone null schemas are not supported by this converter")
		default:
			return nil, fmt.Errorf("unsupported Avro type %s", s.Type())
		}
	case *avro.FixedSchema:
		cs.Type = connectors.Bytes
		if d, ok := s.Logical().(*avro.DecimalLogicalSchema); ok {
			setDecimal(cs, d)
		}
		setParam(cs, connectFixedSize, strconv.Itoa(s.Size()))
	case *avro.EnumSchema:
		cs.Type = connectors.String
		setParam(cs, avroEnumParam, s.FullName())
		for _, sym := range s.Symbols() {
			setParam(cs, avroEnumParam+"."+sym, sym)
		}
	case *avro.ArraySchema:
		if rec, ok := s.Items().(*avro.RecordSchema); ok && isMapEntry(rec) {
			if len(rec.Fields()) != 2 || rec.Fields()[0].Name() != "key" || rec.Fields()[1].Name() != "value" {
				return nil, fmt.Errorf("Found map encoded as array of key-value pairs, but array elements do not match the expected format.")
			}
			k, err := b.schema(rec.Fields()[0].Type(), false, nil, false)
			if err != nil {
				return nil, err
			}
			v, err := b.schema(rec.Fields()[1].Type(), false, nil, false)
			if err != nil {
				return nil, err
			}
			cs.Type, cs.Keys, cs.Values = connectors.Map, k, v
			break
		}
		items, err := b.schema(s.Items(), false, nil, false)
		if err != nil {
			return nil, err
		}
		cs.Type, cs.Items = connectors.Array, items
	case *avro.MapSchema:
		values, err := b.schema(s.Values(), false, nil, false)
		if err != nil {
			return nil, err
		}
		cs.Type, cs.Keys, cs.Values = connectors.Map, connectors.StringSchema, values
	case *avro.RecordSchema:
		if b.onPath[s.FullName()] {
			return nil, fmt.Errorf("record %s contains itself: recursive Avro schemas have no Connect schema in Sluice", s.FullName())
		}
		b.onPath[s.FullName()] = true
		defer delete(b.onPath, s.FullName())
		cs.Type = connectors.Struct
		if b.meta && s.Doc() != "" {
			setParam(cs, avroNamespace+".record.doc", s.Doc())
		}
		for _, f := range s.Fields() {
			if b.meta && f.Doc() != "" {
				setParam(cs, avroNamespace+".field.doc."+f.Name(), f.Doc())
			}
			fs, err := b.schema(f.Type(), false, f.Default(), f.HasDefault())
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name(), err)
			}
			cs.Fields = append(cs.Fields, connectors.Field{Name: f.Name(), Schema: fs})
		}
	case *avro.UnionSchema:
		types := s.Types()
		if len(types) == 2 && (types[0].Type() == avro.Null) != (types[1].Type() == avro.Null) {
			member := types[0]
			if member.Type() == avro.Null {
				member = types[1]
			}
			return b.schema(member, true, def, hasDef)
		}
		cs.Type, cs.Name = connectors.Struct, avroUnionName
		seen := map[string]bool{}
		for _, t := range types {
			if t.Type() == avro.Null {
				cs.Optional = true
				continue
			}
			name := unionMemberName(t)
			if seen[name] {
				return nil, fmt.Errorf("Multiple union schemas map to the Connect union field name")
			}
			seen[name] = true
			fs, err := b.schema(t, true, nil, false)
			if err != nil {
				return nil, err
			}
			cs.Fields = append(cs.Fields, connectors.Field{Name: name, Schema: fs})
		}
		return cs, nil
	default:
		return nil, fmt.Errorf("unsupported Avro schema %s", as.Type())
	}

	if b.meta {
		if d, ok := propOf(as, connectDocProp); ok {
			if s, ok := d.(string); ok {
				cs.Doc = s
			}
		}
	}
	if v, ok := propOf(as, connectVersionProp); ok {
		n, ok := jsonInt(v)
		if !ok {
			return nil, fmt.Errorf("Invalid Connect version found: %v", v)
		}
		cs.Version = int(n)
	}
	if p, ok := propOf(as, connectParamsProp); ok && b.meta {
		m, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("Expected JSON object for schema parameters but found: %v", p)
		}
		for k, v := range m {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("Expected schema parameter values to be strings but found: %v", v)
			}
			setParam(cs, k, s)
		}
	}
	if ps, ok := as.(interface{ Props() map[string]any }); ok {
		for k, v := range ps.Props() {
			if strings.HasPrefix(k, "avro") {
				setParam(cs, k, fmt.Sprint(v))
			}
		}
	}
	if n, ok := propOf(as, connectNameProp); ok {
		s, ok := n.(string)
		if !ok {
			return nil, fmt.Errorf("Invalid schema name: %v", n)
		}
		if cs.Name != "" && cs.Name != s {
			return nil, fmt.Errorf("Mismatched names: name already added to SchemaBuilder (%s) differs from name in source schema (%s)", cs.Name, s)
		}
		cs.Name = s
	} else if named, ok := as.(avro.NamedSchema); ok && cs.Name != connectors.DecimalLogical {
		if fn := named.FullName(); !strings.HasPrefix(fn, avroNamespace+"."+avroDefaultName) {
			cs.Name = fn
		}
	}
	if forceOptional {
		cs.Optional = true
	}
	connectDefault, hasConnectDefault := propOf(as, connectDefaultProp)
	if !hasDef && hasConnectDefault {
		def, hasDef = connectDefault, true
	}
	if hasDef && def != nil {
		d, err := defaultFromAvro(cs, def)
		if err == nil {
			cs.Default = d
		}
		// AvroData logs and drops a default it cannot read; so does Sluice.
	}
	return cs, nil
}

// isMapEntry reports an array item record that stands for a Connect map
// entry: AvroData's MapEntry record, or a named one it marked as such.
func isMapEntry(rec *avro.RecordSchema) bool {
	if rec.FullName() == avroNamespace+"."+avroMapEntryName {
		return true
	}
	v := rec.Prop("connect.internal.type")
	return v == avroMapEntryName
}

// unionMemberName is the Connect field a general union's member becomes,
// as AvroData.unionMemberFieldName names it: a named type by its name,
// others by their type.
func unionMemberName(t avro.Schema) string {
	if ref, ok := t.(*avro.RefSchema); ok {
		t = ref.Schema()
	}
	switch s := t.(type) {
	case *avro.RecordSchema:
		return s.Name()
	case *avro.EnumSchema:
		return s.Name()
	case *avro.FixedSchema:
		return s.Name()
	}
	return string(t.Type())
}

func setDecimal(cs *connectors.Schema, d *avro.DecimalLogicalSchema) {
	cs.Name, cs.Version = connectors.DecimalLogical, 1
	setParam(cs, "scale", strconv.Itoa(d.Scale()))
	if d.Precision() != avroDecPrecisionDef {
		setParam(cs, connectDecPrecision, strconv.Itoa(d.Precision()))
	}
}

func setParam(cs *connectors.Schema, k, v string) {
	if cs.Parameters == nil {
		cs.Parameters = map[string]string{}
	}
	cs.Parameters[k] = v
}

func jsonInt(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n == math.Trunc(n) {
			return int64(n), true
		}
	case int:
		return int64(n), true
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// defaultFromAvro reads an Avro JSON default (as hamba/avro parsed it) as a
// Connect value of cs.
func defaultFromAvro(cs *connectors.Schema, d any) (any, error) {
	if d == nil {
		return nil, nil
	}
	switch cs.Name {
	case connectors.DecimalLogical:
		var raw []byte
		switch x := d.(type) {
		case string:
			raw = fromLatin1(x)
		case []byte:
			raw = x
		case *big.Rat:
			return x, nil
		default:
			return nil, fmt.Errorf("decimal default %v", d)
		}
		scale, _ := strconv.Atoi(cs.Parameters["scale"])
		return ratOf(fromTwosComplement(raw), scale), nil
	case connectors.DateLogical:
		n, ok := jsonInt(d)
		if !ok {
			return nil, fmt.Errorf("date default %v", d)
		}
		return time.Unix(n*86400, 0).UTC(), nil
	case connectors.TimeLogical, connectors.TimestampLogical:
		n, ok := jsonInt(d)
		if !ok {
			return nil, fmt.Errorf("time default %v", d)
		}
		return time.UnixMilli(n).UTC(), nil
	}
	switch cs.Type {
	case connectors.Int8, connectors.Int16, connectors.Int32, connectors.Int64:
		n, ok := jsonInt(d)
		if !ok {
			return nil, fmt.Errorf("integer default %v", d)
		}
		switch cs.Type {
		case connectors.Int8:
			return int8(n), nil
		case connectors.Int16:
			return int16(n), nil
		case connectors.Int32:
			return int32(n), nil
		}
		return n, nil
	case connectors.Float32, connectors.Float64:
		var f float64
		switch x := d.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		default:
			n, ok := jsonInt(d)
			if !ok {
				return nil, fmt.Errorf("float default %v", d)
			}
			f = float64(n)
		}
		if cs.Type == connectors.Float32 {
			return float32(f), nil
		}
		return f, nil
	case connectors.Boolean:
		if x, ok := d.(bool); ok {
			return x, nil
		}
	case connectors.String:
		if x, ok := d.(string); ok {
			return x, nil
		}
	case connectors.Bytes:
		switch x := d.(type) {
		case string:
			return fromLatin1(x), nil
		case []byte:
			return x, nil
		}
	case connectors.Array:
		x, ok := d.([]any)
		if !ok {
			break
		}
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if cs.Keys != nil { // a map written as an array of entries
				return nil, fmt.Errorf("map-entry array default")
			}
			if out[i], err = defaultFromAvro(cs.Items, e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case connectors.Map:
		x, ok := d.(map[string]any)
		if !ok {
			break
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			var err error
			if out[k], err = defaultFromAvro(cs.Values, e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case connectors.Struct:
		x, ok := d.(map[string]any)
		if !ok || cs.Name == avroUnionName {
			break
		}
		sv := connectors.NewStruct(cs)
		for i, f := range cs.Fields {
			e, present := x[f.Name]
			if !present {
				e = nil
			}
			v, err := defaultFromAvro(f.Schema, e)
			if err != nil {
				return nil, err
			}
			if v == nil {
				v = f.Schema.Default
			}
			sv.Values[i] = v
		}
		return sv, nil
	}
	return nil, fmt.Errorf("default %v does not fit %s", d, cs.Type)
}

func fromLatin1(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		out = append(out, byte(r))
	}
	return out
}

// ---- Avro native value -> Connect value (AvroData.toConnectData) ----

// fromNative converts what hamba/avro decoded with as into the Connect value
// of cs.
func fromNative(cs *connectors.Schema, as avro.Schema, v any) (any, error) {
	if ref, ok := as.(*avro.RefSchema); ok {
		as = ref.Schema()
	}
	if u, ok := as.(*avro.UnionSchema); ok {
		if v == nil {
			return nil, nil
		}
		member, inner, err := unionMember(u, v)
		if err != nil {
			return nil, err
		}
		if cs.Name == avroUnionName && cs.Type == connectors.Struct {
			sv := connectors.NewStruct(cs)
			name := unionMemberName(member)
			i, fs := cs.Field(name)
			if fs == nil {
				return nil, fmt.Errorf("union member %q has no field", name)
			}
			x, err := fromNative(fs, member, inner)
			if err != nil {
				return nil, err
			}
			sv.Values[i] = x
			return sv, nil
		}
		return fromNative(cs, member, inner)
	}
	if v == nil {
		if cs.Optional {
			return nil, nil
		}
		return nil, fmt.Errorf("null for a required %s", cs.Type)
	}
	switch cs.Name {
	case connectors.DateLogical, connectors.TimestampLogical:
		t, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("%s value %T", cs.Name, v)
		}
		return t.UTC(), nil
	case connectors.TimeLogical:
		d, ok := v.(time.Duration)
		if !ok {
			return nil, fmt.Errorf("%s value %T", cs.Name, v)
		}
		// Connect's Time.toLogical refuses these too.
		if d < 0 || d >= 24*time.Hour {
			return nil, fmt.Errorf("Time values must use number of milliseconds greater than 0 and less than 86400000, got %d", d.Milliseconds())
		}
		return time.UnixMilli(d.Milliseconds()).UTC(), nil
	case connectors.DecimalLogical:
		switch x := v.(type) {
		case *big.Rat:
			return x, nil
		}
		if b, ok := fixedBytes(v); ok {
			scale, _ := strconv.Atoi(cs.Parameters["scale"])
			return ratOf(fromTwosComplement(b), scale), nil
		}
		return nil, fmt.Errorf("decimal value %T", v)
	}
	switch cs.Type {
	case connectors.Int8, connectors.Int16, connectors.Int32:
		n, ok := v.(int)
		if !ok {
			return nil, fmt.Errorf("int value %T", v)
		}
		switch cs.Type {
		case connectors.Int8:
			if n < math.MinInt8 || n > math.MaxInt8 {
				return nil, fmt.Errorf("%d does not fit int8", n)
			}
			return int8(n), nil
		case connectors.Int16:
			if n < math.MinInt16 || n > math.MaxInt16 {
				return nil, fmt.Errorf("%d does not fit int16", n)
			}
			return int16(n), nil
		}
		return int32(n), nil
	case connectors.Int64:
		if n, ok := v.(int64); ok {
			return n, nil
		}
	case connectors.Float32:
		if n, ok := v.(float32); ok {
			return n, nil
		}
	case connectors.Float64:
		if n, ok := v.(float64); ok {
			return n, nil
		}
	case connectors.Boolean:
		if n, ok := v.(bool); ok {
			return n, nil
		}
	case connectors.String:
		if n, ok := v.(string); ok {
			return n, nil
		}
	case connectors.Bytes:
		if b, ok := v.([]byte); ok {
			return b, nil
		}
		if b, ok := fixedBytes(v); ok {
			return b, nil
		}
	case connectors.Array:
		x, ok := v.([]any)
		arr, isArr := as.(*avro.ArraySchema)
		if !ok || !isArr {
			break
		}
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = fromNative(cs.Items, arr.Items(), e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case connectors.Map:
		switch s := as.(type) {
		case *avro.MapSchema:
			x, ok := v.(map[string]any)
			if !ok {
				break
			}
			out := make(map[string]any, len(x))
			for k, e := range x {
				var err error
				if out[k], err = fromNative(cs.Values, s.Values(), e); err != nil {
					return nil, err
				}
			}
			return out, nil
		case *avro.ArraySchema:
			x, ok := v.([]any)
			if !ok {
				break
			}
			rec, _ := s.Items().(*avro.RecordSchema)
			if rr, ok := s.Items().(*avro.RefSchema); ok {
				rec, _ = rr.Schema().(*avro.RecordSchema)
			}
			if rec == nil {
				break
			}
			out := make(map[string]any, len(x))
			for _, e := range x {
				entry, ok := e.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("map entry %T", e)
				}
				k, err := fromNative(cs.Keys, rec.Fields()[0].Type(), entry["key"])
				if err != nil {
					return nil, err
				}
				val, err := fromNative(cs.Values, rec.Fields()[1].Type(), entry["value"])
				if err != nil {
					return nil, err
				}
				ks, err := mapKeys.keyString(cs.Keys, k)
				if err != nil {
					return nil, err
				}
				out[ks] = val
			}
			return out, nil
		}
	case connectors.Struct:
		x, ok := v.(map[string]any)
		rec, isRec := as.(*avro.RecordSchema)
		if !ok || !isRec {
			break
		}
		sv := connectors.NewStruct(cs)
		for i, f := range rec.Fields() {
			val, err := fromNative(cs.Fields[i].Schema, f.Type(), x[f.Name()])
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name(), err)
			}
			sv.Values[i] = val
		}
		return sv, nil
	}
	return nil, fmt.Errorf("%s value %T", cs.Type, v)
}

// unionMember finds the member of union u that hamba/avro decoded v with.
// hamba/avro hands a union's value over in one of two forms: when every
// member's type is one its type resolver knows (primitives and their
// logical types), the bare value, whose Go type tells the member; else a
// single-entry map from the member's name to the value.
func unionMember(u *avro.UnionSchema, v any) (avro.Schema, any, error) {
	resolved := true
	for _, t := range u.Types() {
		if _, err := avroAPI.TypeOf(unionResolutionName(t)); err != nil {
			resolved = false
			break
		}
	}
	if resolved {
		vt := reflect2.TypeOf(v)
		for _, t := range u.Types() {
			if t.Type() == avro.Null {
				continue
			}
			if rt, _ := avroAPI.TypeOf(unionResolutionName(t)); rt != nil && rt.Type1() == vt.Type1() {
				return t, v, nil
			}
		}
		return nil, nil, fmt.Errorf("no union member decodes to %T", v)
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, nil, fmt.Errorf("union value %T", v)
	}
	for k, e := range m {
		member, _ := u.Types().Get(k)
		if member == nil {
			return nil, nil, fmt.Errorf("union member %q unknown", k)
		}
		return member, e, nil
	}
	return nil, nil, fmt.Errorf("empty union value")
}

// unionResolutionName is the name hamba/avro's type resolver looks a
// union member up by.
func unionResolutionName(s avro.Schema) string {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	name := unionKey(s)
	switch x := s.(type) {
	case *avro.MapSchema:
		name += ":" + unionKey(x.Values())
	case *avro.ArraySchema:
		name += ":" + unionKey(x.Items())
	}
	return name
}

// fixedBytes returns the bytes of a decoded Avro fixed ([n]byte).
func fixedBytes(v any) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Array || rv.Type().Elem().Kind() != reflect.Uint8 {
		return nil, false
	}
	out := make([]byte, rv.Len())
	reflect.Copy(reflect.ValueOf(out), rv)
	return out, true
}
