package converters

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sluice-io/sluice/connectors"
)

// JSONSchemaConverterClass is Confluent's class name of the JSON Schema
// converter.
const JSONSchemaConverterClass = "io.confluent.connect.json.JsonSchemaConverter"

// Names JsonSchemaData uses.
const (
	jsonSchemaNamespace = "io.confluent.connect.json"
	jsonOneOfName       = jsonSchemaNamespace + ".OneOf"
	jsonEnumParam       = jsonSchemaNamespace + ".Enum"
	connectIndexProp    = "connect.index"
)

// JSONSchemaConverter mirrors io.confluent.connect.json.JsonSchemaConverter:
// the payload is plain JSON in Confluent's frame, its schema a JSON Schema
// registered in a Schema Registry. Connect schemas map to JSON Schemas as
// Confluent's JsonSchemaData maps them: integers and floats are "integer"
// and "number" with a connect.type, bytes are base64 strings, optional
// schemas a oneOf with {"type":"null"}, struct fields carry connect.index.
type JSONSchemaConverter struct {
	reg            *registryClient
	numericDecimal bool
	additional     bool
	optionalNonReq bool
	validate       bool

	toJSON   *boundedCache[*connectors.Schema, *jsonSchemaWriter]
	fromJSON *boundedCache[int, *jsonSchemaReader]
}

type jsonSchemaWriter struct {
	text      string
	title     string
	validator *jsonschema.Schema // with json.fail.invalid.schema
	ids       topicIDs
}

type jsonSchemaReader struct {
	connect   *connectors.Schema
	validator *jsonschema.Schema
}

// Configure takes the registry's keys (registry.go) and JsonSchemaDataConfig's:
// decimal.format (BASE64 or NUMERIC), object.additional.properties (default
// true; false writes "additionalProperties": false), use.optional.for.nonrequired
// (default false), schemas.cache.config, and the serializer's
// json.fail.invalid.schema (default false: validate each payload against
// its schema on write and read when true). Other keys are refused by name.
func (c *JSONSchemaConverter) Configure(props map[string]string, isKey bool) error {
	ce := &connectors.ConfigError{}
	c.numericDecimal = parseDecimalFormat(ce, props)
	c.additional = parseBool(ce, props, "object.additional.properties", true)
	c.optionalNonReq = parseBool(ce, props, "use.optional.for.nonrequired", false)
	c.validate = parseBool(ce, props, "json.fail.invalid.schema", false)
	if !parseBool(ce, props, "flatten.singleton.unions", true) {
		ce.Add("flatten.singleton.unions", "false is not supported by Sluice's JsonSchemaConverter; leave it true (Confluent's default)")
	}
	for _, k := range []string{"generalized.sum.type.support", "ignore.default.for.nullables", "ignore.modern.dialects", "preserve.additional.properties", "use.latest.version"} {
		if parseBool(ce, props, k, false) {
			ce.Add(k, "true is not supported by Sluice's JsonSchemaConverter; leave it false (Confluent's default)")
		}
	}
	own := map[string]bool{"decimal.format": true, "object.additional.properties": true, "use.optional.for.nonrequired": true, "json.fail.invalid.schema": true,
		"flatten.singleton.unions": true, "generalized.sum.type.support": true, "ignore.default.for.nullables": true, "ignore.modern.dialects": true, "preserve.additional.properties": true}
	rc := configureRegistry(ce, "JsonSchemaConverter", sr.TypeJSON, props, isKey, own)
	if err := ce.Err(); err != nil {
		return err
	}
	c.reg = rc
	c.toJSON = newBoundedCache[*connectors.Schema, *jsonSchemaWriter](rc.dataCacheSize)
	c.fromJSON = newBoundedCache[int, *jsonSchemaReader](rc.dataCacheSize)
	return nil
}

// FromConnect writes value as framed JSON. A nil value is a nil record
// value, as Confluent's serializer writes it.
func (c *JSONSchemaConverter) FromConnect(topic string, schema *connectors.Schema, value any) ([]byte, error) {
	value, done, err := recordValue("JsonSchemaConverter", c.reg, schema, value)
	if done || err != nil {
		return nil, err
	}
	w, err := c.writerFor(schema)
	if err != nil {
		return nil, err
	}
	id, err := c.reg.idForTopic(&w.ids, topic, w.title, sr.Schema{Schema: w.text, Type: sr.TypeJSON})
	if err != nil {
		return nil, err
	}
	tree, err := c.toJSONValue(schema, value)
	if err != nil {
		return nil, dataErr("JsonSchemaConverter", err)
	}
	payload, err := json.Marshal(tree)
	if err != nil {
		return nil, &DataError{Converter: "JsonSchemaConverter", Msg: err.Error()}
	}
	if w.validator != nil {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
		if err == nil {
			err = w.validator.Validate(doc)
		}
		if err != nil {
			subject, _ := c.reg.subject(topic, w.title)
			return nil, &DataError{Converter: "JsonSchemaConverter", Msg: fmt.Sprintf("value does not validate against schema id %d of subject %q (json.fail.invalid.schema=true): %v", id, subject, err)}
		}
	}
	return append(appendFrameHeader(make([]byte, 0, frameHeaderLen+len(payload)), id), payload...), nil
}

func (c *JSONSchemaConverter) writerFor(schema *connectors.Schema) (*jsonSchemaWriter, error) {
	if w, ok := c.toJSON.get(schema); ok {
		return w, nil
	}
	doc, err := c.schemaJSON(schema, -1, false)
	if err != nil {
		return nil, dataErr("JsonSchemaConverter", err)
	}
	text, err := json.Marshal(doc)
	if err != nil {
		return nil, &DataError{Converter: "JsonSchemaConverter", Msg: err.Error()}
	}
	w := &jsonSchemaWriter{text: string(text), title: schema.Name}
	if c.validate {
		if w.validator, err = compileJSONSchema(text); err != nil {
			return nil, &DataError{Converter: "JsonSchemaConverter", Msg: err.Error()}
		}
	}
	c.toJSON.put(schema, w)
	return w, nil
}

func compileJSONSchema(text []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return nil, err
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("sluice:schema.json", doc); err != nil {
		return nil, err
	}
	return comp.Compile("sluice:schema.json")
}

// schemaJSON is JsonSchemaData.rawSchemaFromConnectSchema. index is the
// field's position in its struct (connect.index), -1 for none.
func (c *JSONSchemaConverter) schemaJSON(s *connectors.Schema, index int, ignoreOptional bool) (any, error) {
	if s == nil {
		return nil, errorf("a schemaless part (no Connect schema) has no JSON Schema")
	}
	var (
		obj   jsonObject
		props jsonObject // Confluent's unprocessed properties, written last
	)
	switch s.Type {
	case connectors.Int8, connectors.Int16, connectors.Int32, connectors.Int64:
		obj = jsonObject{{"type", "integer"}}
		props = append(props, jsonMember{"connect.type", string(s.Type)})
	case connectors.Float32, connectors.Float64:
		obj = jsonObject{{"type", "number"}}
		props = append(props, jsonMember{"connect.type", string(s.Type)})
	case connectors.Boolean:
		obj = jsonObject{{"type", "boolean"}}
	case connectors.String:
		if _, ok := s.Parameters[jsonEnumParam]; ok {
			var symbols []any
			for _, k := range sortedStringKeys(s.Parameters) {
				if sym, ok := strings.CutPrefix(k, jsonEnumParam+"."); ok {
					symbols = append(symbols, sym)
				}
			}
			obj = jsonObject{{"enum", symbols}}
		} else {
			obj = jsonObject{{"type", "string"}}
		}
	case connectors.Bytes:
		if s.Name == connectors.DecimalLogical && c.numericDecimal {
			obj = jsonObject{{"type", "number"}}
		} else {
			obj = jsonObject{{"type", "string"}}
		}
		props = append(props, jsonMember{"connect.type", "bytes"})
	case connectors.Array:
		items, err := c.schemaJSON(s.Items, -1, false)
		if err != nil {
			return nil, inField(err, "items")
		}
		obj = jsonObject{{"type", "array"}, {"items", items}}
	case connectors.Map:
		if s.Keys == nil || s.Values == nil {
			return nil, errorf("map schema needs both keys and values schemas")
		}
		if s.Keys.Type == connectors.String && !s.Keys.Optional {
			values, err := c.schemaJSON(s.Values, -1, false)
			if err != nil {
				return nil, inField(err, "values")
			}
			obj = jsonObject{{"type", "object"}, {"additionalProperties", values}}
		} else {
			k, err := c.schemaJSON(s.Keys, 0, false)
			if err != nil {
				return nil, inField(err, "keys")
			}
			v, err := c.schemaJSON(s.Values, 1, false)
			if err != nil {
				return nil, inField(err, "values")
			}
			entry := jsonObject{{"type", "object"}, {"properties", jsonObject{{"key", k}, {"value", v}}}}
			obj = jsonObject{{"type", "array"}, {"items", entry}}
		}
		props = append(props, jsonMember{"connect.type", "map"})
	case connectors.Struct:
		if s.Name == jsonOneOfName || s.Name == avroUnionName {
			var subs []any
			if s.Optional {
				subs = append(subs, jsonObject{{"type", "null"}})
			}
			for i, f := range s.Fields {
				fs := *f.Schema
				fs.Optional = false
				sub, err := c.schemaJSON(&fs, i, true)
				if err != nil {
					return nil, inField(err, f.Name)
				}
				subs = append(subs, sub)
			}
			out := jsonObject{{"oneOf", subs}}
			if index >= 0 {
				out = append(out, jsonMember{connectIndexProp, index})
			}
			return out, nil
		}
		if s.Optional && !ignoreOptional {
			inner := *s
			inner.Optional = false
			sub, err := c.schemaJSON(&inner, -1, true)
			if err != nil {
				return nil, err
			}
			out := jsonObject{{"oneOf", []any{jsonObject{{"type", "null"}}, sub}}}
			if index >= 0 {
				out = append(out, jsonMember{connectIndexProp, index})
			}
			return out, nil
		}
		fields := jsonObject{}
		for i, f := range s.Fields {
			fj, err := c.schemaJSON(f.Schema, i, false)
			if err != nil {
				return nil, inField(err, f.Name)
			}
			fields = append(fields, jsonMember{f.Name, fj})
		}
		obj = jsonObject{{"type", "object"}, {"properties", fields}}
		if !c.additional {
			obj = append(obj, jsonMember{"additionalProperties", false})
		}
	default:
		return nil, errorf("unknown schema type %q", s.Type)
	}
	if s.Name != "" {
		obj = append(obj, jsonMember{"title", s.Name})
	}
	if s.Version != 0 {
		props = append(props, jsonMember{connectVersionProp, s.Version})
	}
	if s.Doc != "" {
		obj = append(obj, jsonMember{"description", s.Doc})
	}
	params := jsonObject{}
	for _, k := range sortedStringKeys(s.Parameters) {
		if !strings.HasPrefix(k, jsonSchemaNamespace) {
			params = append(params, jsonMember{k, s.Parameters[k]})
		}
	}
	if len(params) > 0 {
		props = append(props, jsonMember{connectParamsProp, params})
	}
	if s.Default != nil {
		d, err := c.toJSONValue(s, s.Default)
		if err != nil {
			return nil, inField(err, "default")
		}
		obj = append(obj, jsonMember{"default", d})
	}
	if s.Optional && !ignoreOptional {
		out := jsonObject{{"oneOf", []any{jsonObject{{"type", "null"}}, append(obj, props...)}}}
		if index >= 0 {
			out = append(out, jsonMember{connectIndexProp, index})
		}
		return out, nil
	}
	if index >= 0 {
		props = append(props, jsonMember{connectIndexProp, index})
	}
	return append(obj, props...), nil
}

// toJSONValue is JsonSchemaData.fromConnectData, to a tree encoding/json
// writes: structs as ordered objects, maps with string keys as objects,
// other maps as arrays of {"key","value"} objects.
func (c *JSONSchemaConverter) toJSONValue(s *connectors.Schema, v any) (any, error) {
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
	case connectors.DecimalLogical:
		r, ok := v.(*big.Rat)
		if !ok {
			return nil, mismatch(s, v)
		}
		scale, err := strconv.Atoi(s.Parameters["scale"])
		if err != nil {
			return nil, errorf("Decimal schema has no valid scale parameter (%q)", s.Parameters["scale"])
		}
		u, err := unscaledOf(r, scale)
		if err != nil {
			return nil, err
		}
		if c.numericDecimal {
			return json.Number(string(appendJavaBigDecimal(nil, u, scale))), nil
		}
		return base64.StdEncoding.EncodeToString(twosComplement(u)), nil
	case connectors.DateLogical, connectors.TimeLogical, connectors.TimestampLogical:
		t, ok := v.(time.Time)
		if !ok {
			return nil, errorf("expected time.Time for %s, got %s", s.Name, typeName(v))
		}
		n, err := toNativeValue(s, t, false)
		if err != nil {
			return nil, err
		}
		switch x := n.(type) {
		case time.Duration:
			return x.Milliseconds(), nil
		case time.Time:
			if s.Name == connectors.DateLogical {
				return x.Unix() / 86400, nil
			}
			return x.UnixMilli(), nil
		}
	}
	switch s.Type {
	case connectors.Float32, connectors.Float64:
		f, ok := v.(float64)
		if f32, is32 := v.(float32); is32 && s.Type == connectors.Float32 {
			f, ok = float64(f32), true
		}
		if !ok || (s.Type == connectors.Float64) != isFloat64(v) {
			return nil, mismatch(s, v)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errorf("%v has no JSON number", f)
		}
		if s.Type == connectors.Float32 {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 32)), nil
		}
		return f, nil
	case connectors.Bytes:
		b, ok := v.([]byte)
		if !ok {
			return nil, mismatch(s, v)
		}
		return base64.StdEncoding.EncodeToString(b), nil
	case connectors.Array:
		x, ok := v.([]any)
		if !ok {
			return nil, mismatch(s, v)
		}
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = c.toJSONValue(s.Items, e); err != nil {
				return nil, inElem(err, index(i))
			}
		}
		return out, nil
	case connectors.Map:
		x, ok := v.(map[string]any)
		if !ok {
			return nil, mismatch(s, v)
		}
		if s.Keys.Type == connectors.String && !s.Keys.Optional {
			out := make(map[string]any, len(x))
			for k, e := range x {
				var err error
				if out[k], err = c.toJSONValue(s.Values, e); err != nil {
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
			kj, err := c.toJSONValue(s.Keys, kv)
			if err != nil {
				return nil, inElem(err, mapKey(k))
			}
			vj, err := c.toJSONValue(s.Values, x[k])
			if err != nil {
				return nil, inElem(err, mapKey(k))
			}
			out = append(out, jsonObject{{"key", kj}, {"value", vj}})
		}
		return out, nil
	case connectors.Struct:
		x, ok := v.(*connectors.StructValue)
		if !ok {
			return nil, mismatch(s, v)
		}
		if len(x.Values) != len(s.Fields) {
			return nil, errorf("struct has %d values for %d fields", len(x.Values), len(s.Fields))
		}
		if s.Name == jsonOneOfName || s.Name == avroUnionName {
			for i, f := range s.Fields {
				if x.Values[i] != nil {
					out, err := c.toJSONValue(f.Schema, x.Values[i])
					return out, inField(err, f.Name)
				}
			}
			return nil, nil
		}
		out := make(jsonObject, 0, len(s.Fields))
		for i, f := range s.Fields {
			fv := x.Values[i]
			if fv == nil && f.Schema.Default == nil && !f.Schema.Optional {
				// JsonSchemaData leaves out a field with no JSON value.
				continue
			}
			j, err := c.toJSONValue(f.Schema, fv)
			if err != nil {
				return nil, inField(err, f.Name)
			}
			out = append(out, jsonMember{f.Name, j})
		}
		return out, nil
	}
	n, err := toNativeValue(s, v, false)
	if err != nil {
		return nil, err
	}
	return n, nil
}

func isFloat64(v any) bool {
	_, ok := v.(float64)
	return ok
}

// ToConnect reads framed JSON with the schema the frame names.
func (c *JSONSchemaConverter) ToConnect(topic string, data []byte) (*connectors.Schema, any, error) {
	id, payload, ok, err := readFrame("JsonSchemaConverter", c.reg, data)
	if !ok {
		return nil, nil, err
	}
	r, err := c.readerFor(topic, id)
	if err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, nil, &DataError{Converter: "JsonSchemaConverter", Msg: fmt.Sprintf("schema id %d: payload is not JSON: %v", id, err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, &DataError{Converter: "JsonSchemaConverter", Msg: fmt.Sprintf("schema id %d: payload has data after its JSON value", id)}
	}
	if r.validator != nil {
		if err := r.validator.Validate(tree); err != nil {
			return nil, nil, &DataError{Converter: "JsonSchemaConverter", Msg: fmt.Sprintf("payload does not validate against schema id %d (json.fail.invalid.schema=true): %v", id, err)}
		}
	}
	v, err := c.fromJSONValue(r.connect, tree)
	if err != nil {
		return nil, nil, &DataError{Converter: "JsonSchemaConverter", Msg: fmt.Sprintf("schema id %d: %v", id, err)}
	}
	return r.connect, v, nil
}

func (c *JSONSchemaConverter) readerFor(topic string, id int) (*jsonSchemaReader, error) {
	if r, ok := c.fromJSON.get(id); ok {
		return r, nil
	}
	s, err := c.reg.schemaOfType(id)
	if err != nil {
		return nil, err
	}
	if len(s.References) > 0 {
		return nil, &DataError{Converter: "JsonSchemaConverter", Msg: fmt.Sprintf("schema id %d has schema references, which Sluice's JsonSchemaConverter does not resolve", id)}
	}
	doc, err := parseOrderedJSON([]byte(s.Schema))
	if err != nil {
		return nil, &DataError{Converter: "JsonSchemaConverter", Msg: fmt.Sprintf("schema id %d is not JSON: %v", id, err)}
	}
	b := &jsonSchemaReaderBuilder{optionalNonReq: c.optionalNonReq, root: doc}
	cs, err := b.schema(doc, false, 0)
	if err != nil {
		return nil, &DataError{Converter: "JsonSchemaConverter", Msg: fmt.Sprintf("schema id %d: %v", id, err)}
	}
	if cs.Version == 0 {
		subject, err := c.reg.subject(topic, cs.Name)
		if err != nil {
			return nil, err
		}
		version, err := c.reg.versionOf(subject, id, s)
		if err != nil {
			return nil, err
		}
		cs.Version = version
	}
	r := &jsonSchemaReader{connect: cs}
	if c.validate {
		if r.validator, err = compileJSONSchema([]byte(s.Schema)); err != nil {
			return nil, &DataError{Converter: "JsonSchemaConverter", Msg: fmt.Sprintf("schema id %d: %v", id, err)}
		}
	}
	c.fromJSON.put(id, r)
	return r, nil
}

// parseOrderedJSON parses JSON keeping object members in document order
// (jsonObject), which gives struct fields without connect.index their order.
func parseOrderedJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := orderedValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

func orderedValue(dec *json.Decoder, depth int) (any, error) {
	if depth > 256 {
		return nil, fmt.Errorf("JSON nests deeper than 256 levels")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := jsonObject{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := orderedValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				obj = append(obj, jsonMember{k, v})
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := orderedValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

func (o jsonObject) get(key string) (any, bool) {
	for _, m := range o {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

type jsonSchemaReaderBuilder struct {
	optionalNonReq bool
	root           any
}

// schema is JsonSchemaData.toConnectSchema for the JSON Schema keywords
// Sluice reads: type (a name, or a list with "null"), properties,
// required, items, additionalProperties, enum, const, oneOf / anyOf, a
// local $ref (#/definitions/..., #/$defs/...), title, description,
// default and Confluent's connect.* properties.
func (b *jsonSchemaReaderBuilder) schema(node any, forceOptional bool, depth int) (*connectors.Schema, error) {
	if depth > 64 {
		return nil, fmt.Errorf("schema nests deeper than 64 levels (a recursive $ref?)")
	}
	obj, ok := node.(jsonObject)
	if !ok {
		if bv, isBool := node.(bool); isBool && bv {
			return nil, fmt.Errorf("the schema true (any value) has no Connect schema in Sluice")
		}
		return nil, fmt.Errorf("a schema must be a JSON object, got %T", node)
	}
	if ref, ok := obj.get("$ref"); ok {
		target, err := b.resolveRef(ref)
		if err != nil {
			return nil, err
		}
		return b.schema(target, forceOptional, depth+1)
	}
	str := func(k string) string {
		v, _ := obj.get(k)
		s, _ := v.(string)
		return s
	}
	connectType := str("connect.type")
	cs := &connectors.Schema{}
	typ, hasType := obj.get("type")
	if list, ok := typ.([]any); ok {
		var nonNull []any
		for _, t := range list {
			if t != "null" {
				nonNull = append(nonNull, t)
			}
		}
		if len(nonNull) != 1 || len(nonNull) == len(list) {
			return nil, fmt.Errorf("type %v: only one type, optionally with \"null\", is supported", list)
		}
		rest := append(jsonObject{}, obj...)
		for i := range rest {
			if rest[i].key == "type" {
				rest[i].value = nonNull[0]
			}
		}
		return b.schema(rest, true, depth+1)
	}
	for _, comb := range []string{"oneOf", "anyOf"} {
		subsV, ok := obj.get(comb)
		if !ok {
			continue
		}
		subs, ok := subsV.([]any)
		if !ok || len(subs) == 0 {
			return nil, fmt.Errorf("%s must be a non-empty array", comb)
		}
		if len(subs) == 1 {
			return b.schema(subs[0], forceOptional, depth+1)
		}
		var nonNull []any
		for _, sub := range subs {
			if so, ok := sub.(jsonObject); ok {
				if t, _ := so.get("type"); t == "null" {
					continue
				}
			}
			nonNull = append(nonNull, sub)
		}
		if len(subs) == 2 && len(nonNull) == 1 {
			return b.schema(nonNull[0], true, depth+1)
		}
		cs.Type, cs.Name = connectors.Struct, jsonOneOfName
		cs.Optional = len(nonNull) < len(subs)
		for i, sub := range nonNull {
			fs, err := b.schema(sub, true, depth+1)
			if err != nil {
				return nil, err
			}
			cs.Fields = append(cs.Fields, connectors.Field{Name: fmt.Sprintf("%s.field.%d", jsonOneOfName, i), Schema: fs})
		}
		return cs, nil
	}
	if enumV, ok := obj.get("enum"); ok {
		syms, ok := enumV.([]any)
		if !ok {
			return nil, fmt.Errorf("enum must be an array")
		}
		cs.Type = connectors.String
		setParam(cs, jsonEnumParam, "")
		for _, s := range syms {
			sym := "<NULL>"
			if s != nil {
				sym = fmt.Sprint(s)
			}
			setParam(cs, jsonEnumParam+"."+sym, sym)
		}
	} else if constV, ok := obj.get("const"); ok {
		cs.Type = connectors.String
		setParam(cs, jsonEnumParam, "")
		setParam(cs, jsonEnumParam+"."+fmt.Sprint(constV), fmt.Sprint(constV))
	} else if !hasType {
		return nil, fmt.Errorf("a schema without a type (%v) has no Connect schema in Sluice", obj)
	} else {
		switch typ {
		case "boolean":
			cs.Type = connectors.Boolean
		case "integer", "number":
			switch connectType {
			case "":
				cs.Type = connectors.Float64
				if typ == "integer" {
					cs.Type = connectors.Int64
				}
			case "int8", "int16", "int32", "int64", "float32", "float64", "bytes":
				cs.Type = connectors.SchemaType(connectType)
			default:
				return nil, fmt.Errorf("Unsupported type %s", connectType)
			}
		case "string":
			cs.Type = connectors.String
			if connectType == "bytes" {
				cs.Type = connectors.Bytes
			}
		case "array":
			items, ok := obj.get("items")
			if !ok {
				return nil, fmt.Errorf("Array schema did not specify the items type")
			}
			if io, isObj := items.(jsonObject); isObj && connectType == "map" {
				propsV, _ := io.get("properties")
				props, _ := propsV.(jsonObject)
				kn, hasK := props.get("key")
				vn, hasV := props.get("value")
				if !hasK || !hasV {
					return nil, fmt.Errorf("map encoded as an array needs items with key and value properties")
				}
				k, err := b.schema(kn, false, depth+1)
				if err != nil {
					return nil, err
				}
				v, err := b.schema(vn, false, depth+1)
				if err != nil {
					return nil, err
				}
				cs.Type, cs.Keys, cs.Values = connectors.Map, k, v
				break
			}
			it, err := b.schema(items, false, depth+1)
			if err != nil {
				return nil, err
			}
			cs.Type, cs.Items = connectors.Array, it
		case "object":
			if connectType == "map" {
				ap, ok := obj.get("additionalProperties")
				if !ok {
					return nil, fmt.Errorf("map schema without additionalProperties")
				}
				v, err := b.schema(ap, false, depth+1)
				if err != nil {
					return nil, err
				}
				cs.Type, cs.Keys, cs.Values = connectors.Map, connectors.StringSchema, v
				break
			}
			cs.Type = connectors.Struct
			propsV, _ := obj.get("properties")
			props, _ := propsV.(jsonObject)
			required := map[string]bool{}
			if rv, ok := obj.get("required"); ok {
				list, _ := rv.([]any)
				for _, r := range list {
					if s, ok := r.(string); ok {
						required[s] = true
					}
				}
			}
			// Fields are ordered by connect.index, then as written.
			type indexed struct {
				m     jsonMember
				index int
			}
			var fields []indexed
			for i, m := range props {
				idx := i + 1<<20
				if po, ok := m.value.(jsonObject); ok {
					if iv, ok := po.get(connectIndexProp); ok {
						if n, ok := jsonInt(iv); ok {
							idx = int(n)
						}
					}
				}
				fields = append(fields, indexed{m, idx})
			}
			for i := 1; i < len(fields); i++ {
				for j := i; j > 0 && fields[j].index < fields[j-1].index; j-- {
					fields[j], fields[j-1] = fields[j-1], fields[j]
				}
			}
			for _, f := range fields {
				optional := b.optionalNonReq && !required[f.m.key]
				fs, err := b.schema(f.m.value, optional, depth+1)
				if err != nil {
					return nil, fmt.Errorf("property %s: %w", f.m.key, err)
				}
				cs.Fields = append(cs.Fields, connectors.Field{Name: f.m.key, Schema: fs})
			}
		case "null":
			return nil, fmt.Errorf("a standalone null schema has no Connect schema")
		default:
			return nil, fmt.Errorf("type %v is not a JSON Schema type Sluice reads", typ)
		}
	}
	cs.Name = str("title")
	if v, ok := obj.get(connectVersionProp); ok {
		n, ok := jsonInt(v)
		if !ok {
			return nil, fmt.Errorf("Invalid Connect version found: %v", v)
		}
		cs.Version = int(n)
	}
	cs.Doc = str("description")
	if pv, ok := obj.get(connectParamsProp); ok {
		po, ok := pv.(jsonObject)
		if !ok {
			return nil, fmt.Errorf("connect.parameters must be an object")
		}
		for _, m := range po {
			s, ok := m.value.(string)
			if !ok {
				return nil, fmt.Errorf("Expected schema parameter values to be strings but found: %v", m.value)
			}
			setParam(cs, m.key, s)
		}
	}
	if cs.Name == connectors.DateLogical || cs.Name == connectors.TimeLogical || cs.Name == connectors.TimestampLogical || cs.Name == connectors.DecimalLogical {
		if cs.Version == 0 {
			cs.Version = 1
		}
	}
	if forceOptional {
		cs.Optional = true
	}
	if dv, ok := obj.get("default"); ok && dv != nil {
		d, err := (&JSONSchemaConverter{}).fromJSONValue(cs, plainJSON(dv))
		if err == nil {
			cs.Default = d
		}
	}
	return cs, nil
}

// resolveRef follows a local JSON pointer ("#/definitions/x").
func (b *jsonSchemaReaderBuilder) resolveRef(ref any) (any, error) {
	s, _ := ref.(string)
	path, ok := strings.CutPrefix(s, "#")
	if !ok {
		return nil, fmt.Errorf("$ref %q: only references inside the schema (#/...) are supported", s)
	}
	node := b.root
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if part == "" {
			continue
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		obj, ok := node.(jsonObject)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", s)
		}
		if node, ok = obj.get(part); !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", s)
		}
	}
	return node, nil
}

// plainJSON turns ordered objects back into maps.
func plainJSON(v any) any {
	switch x := v.(type) {
	case jsonObject:
		m := make(map[string]any, len(x))
		for _, e := range x {
			m[e.key] = plainJSON(e.value)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainJSON(e)
		}
		return out
	}
	return v
}

// fromJSONValue is JsonSchemaData.toConnectData: v is what encoding/json
// decoded with UseNumber.
func (c *JSONSchemaConverter) fromJSONValue(s *connectors.Schema, v any) (any, error) {
	if v == nil {
		if s.Default != nil {
			return s.Default, nil
		}
		if s.Optional {
			return nil, nil
		}
		return nil, fmt.Errorf("Invalid null value for required %s field", s.Type)
	}
	num := func() (json.Number, error) {
		n, ok := v.(json.Number)
		if !ok {
			return "", fmt.Errorf("expected a number for %s, got %T", s.Type, v)
		}
		return n, nil
	}
	integer := func(bits int) (int64, error) {
		n, err := num()
		if err != nil {
			return 0, err
		}
		i, err := strconv.ParseInt(string(n), 10, bits)
		if err != nil {
			return 0, fmt.Errorf("%s is not an int%d", n, bits)
		}
		return i, nil
	}
	switch s.Name {
	case connectors.DecimalLogical:
		scale, err := strconv.Atoi(s.Parameters["scale"])
		if err != nil {
			return nil, fmt.Errorf("Decimal schema has no valid scale parameter (%q)", s.Parameters["scale"])
		}
		switch x := v.(type) {
		case json.Number:
			r, ok := new(big.Rat).SetString(string(x))
			if !ok {
				return nil, fmt.Errorf("%s is not a decimal", x)
			}
			return r, nil
		case string:
			b, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				return nil, fmt.Errorf("Invalid bytes for Decimal field: %v", err)
			}
			return ratOf(fromTwosComplement(b), scale), nil
		}
		return nil, fmt.Errorf("Invalid type for Decimal: %T", v)
	case connectors.DateLogical:
		d, err := integer(32)
		if err != nil {
			return nil, err
		}
		return time.Unix(d*86400, 0).UTC(), nil
	case connectors.TimeLogical:
		ms, err := integer(32)
		if err != nil {
			return nil, err
		}
		if ms < 0 || ms >= 86400000 {
			return nil, fmt.Errorf("Time values must use number of milliseconds greater than 0 and less than 86400000, got %d", ms)
		}
		return time.UnixMilli(ms).UTC(), nil
	case connectors.TimestampLogical:
		ms, err := integer(64)
		if err != nil {
			return nil, err
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	switch s.Type {
	case connectors.Int8:
		i, err := integer(8)
		return int8(i), err
	case connectors.Int16:
		i, err := integer(16)
		return int16(i), err
	case connectors.Int32:
		i, err := integer(32)
		return int32(i), err
	case connectors.Int64:
		return integer(64)
	case connectors.Float32, connectors.Float64:
		n, err := num()
		if err != nil {
			return nil, err
		}
		bits := 64
		if s.Type == connectors.Float32 {
			bits = 32
		}
		f, err := strconv.ParseFloat(string(n), bits)
		if err != nil {
			return nil, fmt.Errorf("%s is not a float%d", n, bits)
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	case connectors.Boolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case connectors.String:
		if str, ok := v.(string); ok {
			return str, nil
		}
	case connectors.Bytes:
		if str, ok := v.(string); ok {
			b, err := base64.StdEncoding.DecodeString(str)
			if err != nil {
				return nil, fmt.Errorf("bytes field is not base64: %v", err)
			}
			return b, nil
		}
	case connectors.Array:
		x, ok := v.([]any)
		if !ok {
			break
		}
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = c.fromJSONValue(s.Items, e); err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return out, nil
	case connectors.Map:
		if s.Keys.Type == connectors.String && !s.Keys.Optional {
			x, ok := v.(map[string]any)
			if !ok {
				break
			}
			out := make(map[string]any, len(x))
			for k, e := range x {
				var err error
				if out[k], err = c.fromJSONValue(s.Values, e); err != nil {
					return nil, fmt.Errorf("[%q]: %w", k, err)
				}
			}
			return out, nil
		}
		x, ok := v.([]any)
		if !ok {
			break
		}
		out := make(map[string]any, len(x))
		for _, e := range x {
			entry, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("map entry is %T, not an object with key and value", e)
			}
			k, err := c.fromJSONValue(s.Keys, entry["key"])
			if err != nil {
				return nil, err
			}
			val, err := c.fromJSONValue(s.Values, entry["value"])
			if err != nil {
				return nil, err
			}
			ks, err := mapKeys.keyString(s.Keys, k)
			if err != nil {
				return nil, err
			}
			out[ks] = val
		}
		return out, nil
	case connectors.Struct:
		if s.Name == jsonOneOfName {
			// The first member the value converts to, as Connect's
			// JsonSchemaData tries each in turn.
			sv := connectors.NewStruct(s)
			for i, f := range s.Fields {
				if x, err := c.fromJSONValue(f.Schema, v); err == nil && x != nil {
					sv.Values[i] = x
					return sv, nil
				}
			}
			return nil, fmt.Errorf("value %v matches no member of the oneOf", v)
		}
		x, ok := v.(map[string]any)
		if !ok {
			break
		}
		sv := connectors.NewStruct(s)
		for i, f := range s.Fields {
			fv, err := c.fromJSONValue(f.Schema, x[f.Name])
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			sv.Values[i] = fv
		}
		return sv, nil
	}
	return nil, fmt.Errorf("expected a JSON value for %s, got %T", s.Type, v)
}
