package schemaregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/sluice-io/sluice/internal/confluentproto"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// dependency is a referenced schema's text under the name the referencing
// schema uses for it, listed before whatever references it.
type dependency struct {
	name   string
	schema string
}

// parsedSchema is a schema that parsed: its text as stored (and compared
// for identity) and the parsed form of its type, for compatibility checks.
type parsedSchema struct {
	typ       string
	canonical string
	avro      avro.Schema
	proto     protoreflect.FileDescriptor
	json      any
}

// parseSchema parses text as a schema of typ with its dependencies.
// normalize asks for Confluent's ?normalize=true: a form in which two
// texts that mean the same schema are equal.
func parseSchema(typ, text string, deps []dependency, normalize bool) (*parsedSchema, error) {
	if d := nestingDepth(text); d > maxNesting {
		// The parsers' and the JSON Schema compiler's time grows much
		// faster than the depth: one request must not hold a CPU for
		// minutes. Jackson, under Confluent's registry, stops at 1000.
		return nil, fmt.Errorf("the schema nests %d levels deep; Sluice takes at most %d", d, maxNesting)
	}
	switch typ {
	case TypeAvro:
		return parseAvro(text, deps, normalize)
	case TypeProtobuf:
		if normalize {
			return nil, errors.New("normalize=true is not supported for PROTOBUF schemas: Sluice compares them by its own printed form, not by Confluent's normalized one")
		}
		return parseProtobuf(text, deps)
	case TypeJSON:
		return parseJSONSchema(text, deps, normalize)
	}
	return nil, fmt.Errorf("unknown schemaType %q (AVRO, PROTOBUF or JSON)", typ)
}

// jsonText compacts a JSON document, or sorts its object keys as well when
// normalize is set; the order of keys means nothing in Avro or JSON Schema.
func jsonText(text string, normalize bool) (string, error) {
	if !normalize {
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(text)); err != nil {
			return "", err
		}
		return b.String(), nil
	}
	var v any
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	if _, err := d.Token(); err != io.EOF {
		return "", errors.New("text after the JSON document")
	}
	// encoding/json writes map keys sorted; < > & stay as they are.
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func parseAvro(text string, deps []dependency, normalize bool) (*parsedSchema, error) {
	canonical, err := jsonText(text, normalize)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	// A cache of its own, so that named types of one request never leak
	// into another (avro.Parse shares one process-wide cache).
	cache := &avro.SchemaCache{}
	for _, d := range deps {
		if _, err := avro.ParseWithCache(d.schema, "", cache); err != nil {
			return nil, fmt.Errorf("reference %q: %w", d.name, err)
		}
	}
	s, err := avro.ParseWithCache(canonical, "", cache)
	if err != nil {
		return nil, err
	}
	return &parsedSchema{typ: TypeAvro, canonical: canonical, avro: s}, nil
}

// protoMainFile is the name the schema being parsed gets among its imports.
const protoMainFile = "__schema__.proto"

// parseProtobuf compiles .proto text, or a base64 FileDescriptorProto
// (as Confluent's Python serializer sends). Like Confluent's registry,
// which stores a Protobuf schema in its canonical printed form, Sluice
// stores the .proto text it writes the compiled schema out as, so that
// texts differing only in layout, comments or the order of options are one
// schema with one id. A schema that cannot be written out without loss
// (custom options this binary does not know) is stored as given.
func parseProtobuf(text string, deps []dependency) (*parsedSchema, error) {
	fd, err := compileProto(text, deps)
	if err == nil {
		canonical := text
		if printed, perr := printDescriptor(protodesc.ToFileDescriptorProto(fd)); perr == nil {
			if again, cerr := compileProto(printed, deps); cerr == nil && sameDescriptor(protodesc.ToFileDescriptorProto(fd), again) {
				canonical = printed
			}
		}
		return &parsedSchema{typ: TypeProtobuf, canonical: canonical, proto: fd}, nil
	}
	fdp, ok := decodeDescriptor(text)
	if !ok {
		return nil, err
	}
	printed, perr := printDescriptor(fdp)
	if perr != nil {
		return nil, perr
	}
	fd, cerr := compileProto(printed, deps)
	if cerr != nil {
		return nil, fmt.Errorf("the base64 FileDescriptorProto, written as .proto text, does not compile: %w", cerr)
	}
	if !sameDescriptor(fdp, fd) {
		return nil, errors.New("the base64 FileDescriptorProto cannot be written as .proto text without loss; register the schema as .proto text")
	}
	return &parsedSchema{typ: TypeProtobuf, canonical: printed, proto: fd}, nil
}

// compileProto compiles .proto text with its dependencies and the files
// every Protobuf schema may import.
func compileProto(text string, deps []dependency) (protoreflect.FileDescriptor, error) {
	files := map[string]string{protoMainFile: text}
	for _, d := range deps {
		files[d.name] = d.schema
	}
	var first error
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(protocompile.CompositeResolver{
			&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(files)},
			&protocompile.SourceResolver{Accessor: confluentproto.Open},
		}),
		Reporter: reporter.NewReporter(func(err reporter.ErrorWithPos) error {
			if first == nil {
				first = err
			}
			return err
		}, nil),
	}
	fds, err := c.Compile(context.Background(), protoMainFile)
	if first != nil {
		err = first
	}
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), protoMainFile+":", "line:col "))
	}
	return fds[0], nil
}

// jsonSchemaBase is the base URL a JSON schema and its references are read
// under, so that a reference named "customer.json" resolves from "$ref":
// "customer.json".
const jsonSchemaBase = "mem://schemas/"

func parseJSONSchema(text string, deps []dependency, normalize bool) (*parsedSchema, error) {
	canonical, err := jsonText(text, normalize)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(canonical))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, errors.New("a JSON schema is an object or a boolean")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7) // Confluent's default when $schema is absent
	// Only registered references may be loaded: never the file system or
	// the network.
	c.UseLoader(refusingLoader{})
	for _, d := range deps {
		depDoc, err := jsonschema.UnmarshalJSON(strings.NewReader(d.schema))
		if err != nil {
			return nil, fmt.Errorf("reference %q: %w", d.name, err)
		}
		if err := c.AddResource(jsonSchemaURL(d.name), depDoc); err != nil {
			return nil, fmt.Errorf("reference %q: %w", d.name, err)
		}
	}
	main := jsonSchemaBase + "__schema__.json"
	if err := c.AddResource(main, doc); err != nil {
		return nil, err
	}
	if _, err := c.Compile(main); err != nil {
		return nil, err
	}
	return &parsedSchema{typ: TypeJSON, canonical: canonical, json: doc}, nil
}

func jsonSchemaURL(name string) string {
	if u, err := url.Parse(name); err == nil && u.IsAbs() {
		return name
	}
	return jsonSchemaBase + strings.TrimPrefix(name, "/")
}

type refusingLoader struct{}

func (refusingLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is not a registered reference (give it in references)", u)
}

// maxNesting bounds how deep braces and brackets may nest in a schema's
// text.
const maxNesting = 256

// nestingDepth is the deepest nesting of {} and [] in text outside string
// literals and // or /* */ comments, which covers JSON (Avro, JSON Schema)
// and .proto text alike.
func nestingDepth(text string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '"', '\'':
			for i++; i < len(text) && text[i] != c; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case '/':
			if i+1 < len(text) && text[i+1] == '/' {
				for i < len(text) && text[i] != '\n' {
					i++
				}
			} else if i+1 < len(text) && text[i+1] == '*' {
				end := strings.Index(text[i+2:], "*/")
				if end < 0 {
					return deepest
				}
				i += end + 3
			}
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}
