package converters

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// Connect's logical schemas, as Decimal.schema(scale), Date.SCHEMA, ... build
// them (all at version 1).
func decimalSchema(scale string) *connectors.Schema {
	return &connectors.Schema{Type: connectors.Bytes, Name: connectors.DecimalLogical, Version: 1, Parameters: map[string]string{"scale": scale}}
}

var (
	dateSchema      = &connectors.Schema{Type: connectors.Int32, Name: connectors.DateLogical, Version: 1}
	timeSchema      = &connectors.Schema{Type: connectors.Int32, Name: connectors.TimeLogical, Version: 1}
	timestampSchema = &connectors.Schema{Type: connectors.Int64, Name: connectors.TimestampLogical, Version: 1}
)

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("bad rat " + s)
	}
	return r
}

func jsonConv(t testing.TB, isKey bool, props map[string]string) *JSONConverter {
	t.Helper()
	c := NewJSONConverter()
	if err := c.Configure(props, isKey); err != nil {
		t.Fatalf("Configure(%v): %v", props, err)
	}
	return c
}

// connectEqual compares Connect values: times by instant, decimals by value,
// NaN equal to NaN, structs by schema and values.
func connectEqual(a, b any) bool {
	return valueEqual(a, b, map[[2]*connectors.Schema]bool{})
}

// valueEqual is connectEqual sharing schemaEqualSeen's memory of schema
// pairs, so that schemas nested in defaults are compared once, not once
// per path to them.
func valueEqual(a, b any, seen map[[2]*connectors.Schema]bool) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case time.Time:
		bt, ok := b.(time.Time)
		return ok && a.Equal(bt)
	case *big.Rat:
		br, ok := b.(*big.Rat)
		return ok && a.Cmp(br) == 0
	case []byte:
		bb, ok := b.([]byte)
		return ok && bytes.Equal(a, bb)
	case float64:
		bf, ok := b.(float64)
		return ok && (a == bf && math.Signbit(a) == math.Signbit(bf) || math.IsNaN(a) && math.IsNaN(bf))
	case float32:
		bf, ok := b.(float32)
		return ok && (a == bf && math.Signbit(float64(a)) == math.Signbit(float64(bf)) || a != a && bf != bf)
	case []any, map[string]any:
		return elementsEqual(a, b, func(x, y any) bool { return valueEqual(x, y, seen) })
	case *connectors.StructValue:
		bs, ok := b.(*connectors.StructValue)
		if !ok || !schemaEqualSeen(a.Schema, bs.Schema, seen) || len(a.Values) != len(bs.Values) {
			return false
		}
		for i := range a.Values {
			if !valueEqual(a.Values[i], bs.Values[i], seen) {
				return false
			}
		}
		return true
	}
	return a == b
}

// elementsEqual compares a list or a map a with b element by element with
// eq; a of any other type is not equal to anything.
func elementsEqual(a, b any, eq func(x, y any) bool) bool {
	switch a := a.(type) {
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !eq(a[i], bs[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if w, ok := bm[k]; !ok || !eq(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

func asConfigError(err error, target **connectors.ConfigError) bool { return errors.As(err, target) }

// schemaEqual compares schemas structurally. A struct schema's default is a
// struct of that same schema, so pairs already under comparison are taken
// as equal.
func schemaEqual(a, b *connectors.Schema) bool {
	return schemaEqualSeen(a, b, map[[2]*connectors.Schema]bool{})
}

func schemaEqualSeen(a, b *connectors.Schema, seen map[[2]*connectors.Schema]bool) bool {
	if a == nil || b == nil || a == b {
		return a == b
	}
	if seen[[2]*connectors.Schema{a, b}] {
		return true
	}
	seen[[2]*connectors.Schema{a, b}] = true
	if !valueEqual(a.Default, b.Default, seen) {
		return false
	}
	if a.Type != b.Type || a.Optional != b.Optional || a.Name != b.Name || a.Version != b.Version || a.Doc != b.Doc ||
		len(a.Parameters) != len(b.Parameters) || (a.Parameters == nil) != (b.Parameters == nil) ||
		len(a.Fields) != len(b.Fields) ||
		!schemaEqualSeen(a.Items, b.Items, seen) || !schemaEqualSeen(a.Keys, b.Keys, seen) || !schemaEqualSeen(a.Values, b.Values, seen) {
		return false
	}
	for k, v := range a.Parameters {
		if w, ok := b.Parameters[k]; !ok || v != w {
			return false
		}
	}
	for i := range a.Fields {
		if a.Fields[i].Name != b.Fields[i].Name || !schemaEqualSeen(a.Fields[i].Schema, b.Fields[i].Schema, seen) {
			return false
		}
	}
	return true
}

func asDataError(t testing.TB, err error) *DataError {
	t.Helper()
	var de *DataError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *DataError", err, err)
	}
	return de
}
