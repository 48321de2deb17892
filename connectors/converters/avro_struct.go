package converters

import (
	"math/big"
	"reflect"
	"strconv"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/sluice-io/sluice/connectors"
)

// The record path's fast form. hamba/avro encodes a Go struct with a codec
// it compiles once per type, several times faster than the map[string]any
// it takes for any record (whose every field goes through a dynamic lookup).
// So, for a Connect struct whose fields are primitives, logical types,
// optional ones and nested structs of the same, the converter builds a Go
// struct type at run time (reflect.StructOf, one field per Avro field,
// tagged with its name) and hands hamba/avro a value of it. Other shapes
// (arrays, maps, unions of several types) take the map form (toNative).
// TestAvroStructFormSameBytes checks that both forms write the same bytes.

// structForm is a Connect struct schema's Go struct type.
type structForm struct {
	typ    reflect.Type
	fields []fieldForm // one per Connect field, in order
}

// fieldForm fills one Go struct field from a Connect value.
type fieldForm struct {
	schema *connectors.Schema
	ptr    bool        // an optional field: *T, nil for null
	nested *structForm // a struct field
	// set stores a required primitive's value without boxing it again;
	// false means the value is not of the schema's Go type.
	set func(dst reflect.Value, v any) bool
}

// primitiveSetter returns set for a required, unnamed primitive schema:
// the common fields of a record, on its hot path.
func primitiveSetter(s *connectors.Schema) func(reflect.Value, any) bool {
	if s.Optional || s.Name != "" || len(s.Parameters) > 0 {
		return nil
	}
	switch s.Type {
	case connectors.Int32:
		return func(dst reflect.Value, v any) bool {
			x, ok := v.(int32)
			dst.SetInt(int64(x))
			return ok
		}
	case connectors.Int64:
		return func(dst reflect.Value, v any) bool {
			x, ok := v.(int64)
			dst.SetInt(x)
			return ok
		}
	case connectors.Float64:
		return func(dst reflect.Value, v any) bool {
			x, ok := v.(float64)
			dst.SetFloat(x)
			return ok
		}
	case connectors.Boolean:
		return func(dst reflect.Value, v any) bool {
			x, ok := v.(bool)
			dst.SetBool(x)
			return ok
		}
	case connectors.String:
		return func(dst reflect.Value, v any) bool {
			x, ok := v.(string)
			dst.SetString(x)
			return ok
		}
	}
	return nil
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	ratType      = reflect.TypeFor[*big.Rat]()
)

// newStructForm returns the struct form of s, or nil when s has a part the
// form does not cover.
func newStructForm(s *connectors.Schema, scrub bool) *structForm {
	if s == nil || s.Type != connectors.Struct || s.Name == avroUnionName {
		return nil
	}
	f := &structForm{}
	var fields []reflect.StructField
	for i, fld := range s.Fields {
		ff := fieldForm{schema: fld.Schema, set: primitiveSetter(fld.Schema)}
		t := goTypeOf(fld.Schema)
		if t == nil && fld.Schema.Type == connectors.Struct {
			if ff.nested = newStructForm(nonOptional(fld.Schema), scrub); ff.nested != nil {
				t = ff.nested.typ
			}
		}
		if t == nil {
			return nil
		}
		if fld.Schema.Optional {
			// A union with null: hamba/avro takes a pointer for it.
			ff.ptr = true
			t = reflect.PointerTo(t)
		}
		name := fld.Name
		if scrub {
			name = scrubAvroName(name)
		}
		fields = append(fields, reflect.StructField{
			Name: "F" + strconv.Itoa(i),
			Type: t,
			Tag:  reflect.StructTag(`avro:"` + name + `"`),
		})
		f.fields = append(f.fields, ff)
	}
	f.typ = reflect.StructOf(fields)
	return f
}

func nonOptional(s *connectors.Schema) *connectors.Schema {
	if !s.Optional {
		return s
	}
	c := *s
	c.Optional = false
	return &c
}

// goTypeOf is the Go type toNativeValue gives a primitive or logical
// Connect schema, or nil for other schemas.
func goTypeOf(s *connectors.Schema) reflect.Type {
	switch s.Name {
	case connectors.DateLogical, connectors.TimestampLogical:
		return timeType
	case connectors.TimeLogical:
		return durationType
	case connectors.DecimalLogical:
		if _, fixed := s.Parameters[connectFixedSize]; fixed {
			return nil
		}
		return ratType
	}
	if _, fixed := s.Parameters[connectFixedSize]; fixed {
		return nil
	}
	switch s.Type {
	case connectors.Int8, connectors.Int16, connectors.Int32:
		return reflect.TypeFor[int32]()
	case connectors.Int64:
		return reflect.TypeFor[int64]()
	case connectors.Float32:
		return reflect.TypeFor[float32]()
	case connectors.Float64:
		return reflect.TypeFor[float64]()
	case connectors.Boolean:
		return reflect.TypeFor[bool]()
	case connectors.String:
		return reflect.TypeFor[string]()
	case connectors.Bytes:
		return reflect.TypeFor[[]byte]()
	}
	return nil
}

// value returns v (a *connectors.StructValue of s) as a pointer to a new
// value of the struct form.
func (f *structForm) value(s *connectors.Schema, v any, scrub bool) (any, error) {
	rv := reflect.New(f.typ)
	if err := f.fill(rv.Elem(), s, v, scrub); err != nil {
		return nil, err
	}
	return rv.Interface(), nil
}

func (f *structForm) fill(dst reflect.Value, s *connectors.Schema, v any, scrub bool) error {
	sv, ok := v.(*connectors.StructValue)
	if !ok {
		return mismatch(s, v)
	}
	if len(sv.Values) != len(f.fields) {
		return errorf("struct has %d values for %d fields", len(sv.Values), len(f.fields))
	}
	for i, ff := range f.fields {
		out := dst.Field(i)
		fv := sv.Values[i]
		if ff.nested != nil {
			if fv == nil || isNil(fv) {
				fv = ff.schema.Default
			}
			if fv == nil || isNil(fv) {
				if ff.schema.Optional {
					continue
				}
				return inField(errorf("null value for a required %s with no default", ff.schema.Type), s.Fields[i].Name)
			}
			target := out
			if ff.ptr {
				p := reflect.New(ff.nested.typ)
				out.Set(p)
				target = p.Elem()
			}
			if err := ff.nested.fill(target, s.Fields[i].Schema, fv, scrub); err != nil {
				return inField(err, s.Fields[i].Name)
			}
			continue
		}
		if ff.set != nil && ff.set(out, fv) {
			continue
		}
		n, err := toNativeValue(ff.schema, fv, scrub)
		if err != nil {
			return inField(err, s.Fields[i].Name)
		}
		if n == nil {
			continue // an optional field's null: the nil pointer
		}
		if ff.ptr {
			p := reflect.New(out.Type().Elem())
			p.Elem().Set(reflect.ValueOf(n))
			out.Set(p)
		} else {
			out.Set(reflect.ValueOf(n))
		}
	}
	return nil
}

// nativeValue is what FromConnect hands hamba/avro for value of schema s
// with the Avro schema as: the struct form when s has one, else the map
// form.
func (c *AvroConverter) nativeValue(w *avroWriter, s *connectors.Schema, as avro.Schema, v any) (any, error) {
	if w.form != nil {
		return w.form.value(s, v, c.scrub)
	}
	return c.toNative(s, as, v)
}
