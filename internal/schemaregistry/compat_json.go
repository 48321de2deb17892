package schemaregistry

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"sort"
)

// jsonReadProblems says why a reader with JSON schema reader may reject
// data valid under writer: the reader must accept everything the writer
// accepts, which is how Confluent defines JSON Schema compatibility. The
// keywords compared are those of Confluent's documented rules: type
// (integer widens to number), properties and required (with the open or
// closed content model of additionalProperties), enum and const, the
// numeric and length bounds (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, minLength, maxLength, minItems, maxItems,
// minProperties, maxProperties), multipleOf, pattern, items and
// additionalItems. Any other keyword (allOf, anyOf, oneOf, not, $ref,
// if/then/else, dependencies, patternProperties, format, ...) that differs
// between the two schemas is reported as a problem: Sluice does not judge
// whether such a change is safe, so it refuses it rather than letting it
// pass unchecked.
func jsonReadProblems(reader, writer any) []string {
	var problems []string
	jsonCompare("#", reader, writer, &problems)
	return problems
}

// jsonKnownKeywords are the keywords jsonCompare judges; annotations that
// never constrain data are listed too, so that editing them is allowed.
var jsonKnownKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"enum": true, "const": true, "minimum": true, "maximum": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "minLength": true, "maxLength": true, "minItems": true, "maxItems": true,
	"minProperties": true, "maxProperties": true, "multipleOf": true, "pattern": true, "items": true,
	"additionalItems": true, "uniqueItems": true,
	// Annotations.
	"title": true, "description": true, "default": true, "examples": true, "$comment": true,
	"$schema": true, "$id": true, "id": true, "readOnly": true, "writeOnly": true, "deprecated": true,
}

func jsonCompare(path string, reader, writer any, problems *[]string) {
	add := func(format string, args ...any) {
		*problems = append(*problems, path+": "+fmt.Sprintf(format, args...))
	}
	// Boolean schemas: true accepts everything, false nothing.
	if b, ok := reader.(bool); ok {
		if !b && !isFalseSchema(writer) {
			add("the new schema is false and accepts nothing")
		}
		return
	}
	if isFalseSchema(writer) {
		return
	}
	r, _ := reader.(map[string]any)
	w, ok := writer.(map[string]any)
	if !ok {
		w = map[string]any{} // writer true: anything
	}
	for _, k := range sortedKeys(r, w) {
		if !jsonKnownKeywords[k] && !reflect.DeepEqual(r[k], w[k]) {
			add("keyword %q changed; Sluice does not check changes to it", k)
		}
	}
	jsonCompareType(r, w, add)
	jsonCompareEnum(r, w, add)
	for _, b := range []struct {
		key   string
		upper bool
	}{{"maximum", true}, {"exclusiveMaximum", true}, {"maxLength", true}, {"maxItems", true}, {"maxProperties", true},
		{"minimum", false}, {"exclusiveMinimum", false}, {"minLength", false}, {"minItems", false}, {"minProperties", false}} {
		jsonCompareBound(b.key, b.upper, r, w, add)
	}
	for _, k := range []string{"multipleOf", "pattern"} {
		if rv, ok := r[k]; ok && !reflect.DeepEqual(rv, w[k]) {
			add("%s added or changed", k)
		}
	}
	if rv, ok := r["uniqueItems"].(bool); ok && rv {
		if wv, _ := w["uniqueItems"].(bool); !wv {
			add("uniqueItems added")
		}
	}
	jsonCompareObject(path, r, w, add, problems)
	jsonCompareItems(path, r, w, add, problems)
}

func isFalseSchema(s any) bool {
	b, ok := s.(bool)
	return ok && !b
}

func sortedKeys(maps ...map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range maps {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// jsonTypes is the set of types a schema's "type" allows, nil for any.
func jsonTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			if str, ok := v.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

func jsonCompareType(r, w map[string]any, add func(string, ...any)) {
	rt := jsonTypes(r)
	if rt == nil {
		return
	}
	wt := jsonTypes(w)
	if wt == nil {
		add("type %v added where any type was allowed", rt)
		return
	}
	for _, t := range wt {
		if !slices.Contains(rt, t) && !(t == "integer" && slices.Contains(rt, "number")) {
			add("type %s no longer allowed (now %v)", t, rt)
		}
	}
}

func jsonCompareEnum(r, w map[string]any, add func(string, ...any)) {
	allowed := func(s map[string]any) ([]any, bool) {
		if c, ok := s["const"]; ok {
			return []any{c}, true
		}
		e, ok := s["enum"].([]any)
		return e, ok
	}
	rv, ok := allowed(r)
	if !ok {
		return
	}
	wv, ok := allowed(w)
	if !ok {
		add("enum or const added")
		return
	}
	for _, v := range wv {
		if !slices.ContainsFunc(rv, func(x any) bool { return reflect.DeepEqual(x, v) }) {
			add("enum value %v removed", v)
		}
	}
}

// jsonCompareBound checks a numeric bound: an upper bound may only rise
// (or go), a lower bound only fall (or go).
func jsonCompareBound(key string, upper bool, r, w map[string]any, add func(string, ...any)) {
	rv, ok := jsonNumber(r[key])
	if !ok {
		return
	}
	wv, ok := jsonNumber(w[key])
	if !ok {
		add("%s added", key)
		return
	}
	if c := rv.Cmp(wv); upper && c < 0 || !upper && c > 0 {
		add("%s narrowed from %s to %s", key, wv.RatString(), rv.RatString())
	}
}

func jsonNumber(v any) (*big.Rat, bool) {
	switch n := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(n.String())
		return r, ok
	case float64:
		return new(big.Rat).SetFloat64(n), true
	}
	return nil, false
}

func jsonCompareObject(path string, r, w map[string]any, add func(string, ...any), problems *[]string) {
	rp, _ := r["properties"].(map[string]any)
	wp, _ := w["properties"].(map[string]any)
	rAdd, rHasAdd := r["additionalProperties"]
	wAdd, wHasAdd := w["additionalProperties"]
	writerOpen := !wHasAdd || !isFalseSchema(wAdd)
	for _, name := range sortedKeys(rp, wp) {
		rs, inR := rp[name]
		ws, inW := wp[name]
		at := path + "/properties/" + name
		switch {
		case inR && inW:
			jsonCompare(at, rs, ws, problems)
		case inR && !inW && writerOpen:
			// The writer's open content model let this property hold
			// anything; the reader now constrains it.
			if wHasAdd {
				jsonCompare(at, rs, wAdd, problems)
			} else if !isTrueSchema(rs) {
				*problems = append(*problems, at+": property added to an open content model")
			}
		case !inR && inW && rHasAdd:
			jsonCompare(at, rAdd, ws, problems)
		}
	}
	if rHasAdd && writerOpen {
		if isFalseSchema(rAdd) {
			add("additionalProperties false added to an open content model")
		} else if wHasAdd {
			jsonCompare(path+"/additionalProperties", rAdd, wAdd, problems)
		} else if !isTrueSchema(rAdd) {
			add("additionalProperties narrowed")
		}
	}
	rr := jsonStrings(r["required"])
	wr := jsonStrings(w["required"])
	for _, name := range rr {
		if !slices.Contains(wr, name) {
			add("required property %q added", name)
		}
	}
}

func isTrueSchema(s any) bool {
	switch v := s.(type) {
	case bool:
		return v
	case map[string]any:
		return len(v) == 0
	}
	return false
}

func jsonStrings(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func jsonCompareItems(path string, r, w map[string]any, add func(string, ...any), problems *[]string) {
	ri, inR := r["items"]
	if !inR {
		return
	}
	wi, inW := w["items"]
	if !inW {
		if !isTrueSchema(ri) {
			add("items added")
		}
		return
	}
	ra, rTuple := ri.([]any)
	wa, wTuple := wi.([]any)
	switch {
	case !rTuple && !wTuple:
		jsonCompare(path+"/items", ri, wi, problems)
	case rTuple && wTuple && len(ra) == len(wa):
		for i := range ra {
			jsonCompare(fmt.Sprintf("%s/items/%d", path, i), ra[i], wa[i], problems)
		}
		if !reflect.DeepEqual(r["additionalItems"], w["additionalItems"]) {
			add("additionalItems changed")
		}
	default:
		add("items changed between a schema and a tuple, or the tuple's length changed")
	}
}
