package postgrescdc

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"

	"github.com/sluice-io/sluice/connectors"
)

// hstoreConverter maps hstore as Debezium does (hstore.handling.mode): json
// (the default) is a JSON object of the pairs in a string,
// io.debezium.data.Json; map is a Connect map of strings whose values may
// be null.
func hstoreConverter(mode string) *converter {
	if mode == "map" {
		s := &connectors.Schema{Type: connectors.Map, Keys: connectors.StringSchema, Values: connectors.OptionalStringSchema}
		return &converter{schema: s, placeholder: map[string]any{unavailableValue: unavailableValue}, parse: func(t string) (any, error) {
			pairs, err := parseHstore(t)
			if err != nil {
				return nil, err
			}
			m := make(map[string]any, len(pairs))
			for _, p := range pairs {
				if p.null {
					m[p.key] = nil
				} else {
					m[p.key] = p.value
				}
			}
			return m, nil
		}}
	}
	// Debezium's placeholder for an unchanged TOASTed hstore is the map
	// {placeholder: placeholder} (UnchangedToastedPlaceholder), which
	// the json mode writes as JSON like any other.
	placeholder := hstoreJSON([]hstorePair{{key: unavailableValue, value: unavailableValue}})
	return &converter{schema: logical(connectors.String, jsonName), placeholder: placeholder, parse: func(t string) (any, error) {
		pairs, err := parseHstore(t)
		if err != nil {
			return nil, err
		}
		return hstoreJSON(pairs), nil
	}}
}

type hstorePair struct {
	key, value string
	null       bool
}

// parseHstore reads hstore's text output: "key"=>"value" pairs separated
// by ", ", every key and value quoted, a backslash escaping the character
// after it, a value NULL unquoted. Unquoted keys and values, which
// hstore's input also takes, are read too.
func parseHstore(t string) ([]hstorePair, error) {
	var out []hstorePair
	i := 0
	skipSpace := func() {
		for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
			i++
		}
	}
	// token reads a quoted or unquoted string; quoted says which.
	token := func() (s string, quoted bool, err error) {
		if i < len(t) && t[i] == '"' {
			s, next, ok := unquote(t, i)
			if !ok {
				return "", true, fmt.Errorf("hstore %q: unterminated quoted string", t)
			}
			i = next
			return s, true, nil
		}
		start := i
		for i < len(t) && t[i] != '=' && t[i] != ',' && t[i] != ' ' {
			i++
		}
		if i == start {
			return "", false, fmt.Errorf("hstore %q: a key or value expected at byte %d", t, i)
		}
		return t[start:i], false, nil
	}
	for {
		skipSpace()
		if i >= len(t) {
			return out, nil
		}
		key, _, err := token()
		if err != nil {
			return nil, err
		}
		skipSpace()
		if !strings.HasPrefix(t[i:], "=>") {
			return nil, fmt.Errorf("hstore %q: => expected at byte %d", t, i)
		}
		i += 2
		skipSpace()
		value, quoted, err := token()
		if err != nil {
			return nil, err
		}
		out = append(out, hstorePair{key: key, value: value, null: !quoted && strings.EqualFold(value, "NULL")})
		skipSpace()
		if i < len(t) {
			if t[i] != ',' {
				return nil, fmt.Errorf("hstore %q: , expected at byte %d", t, i)
			}
			i++
		}
	}
}

// hstoreJSON writes pairs as Debezium's json mode does: the JDBC driver
// reads an hstore into a java.util.HashMap (HStoreConverter), which
// Jackson writes in the map's iteration order, so the pairs go in the
// order of a HashMap that took them in the order PostgreSQL wrote them.
func hstoreJSON(pairs []hstorePair) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range javaHashMapOrder(pairs) {
		if i > 0 {
			b.WriteByte(',')
		}
		jacksonString(&b, p.key)
		b.WriteByte(':')
		if p.null {
			b.WriteString("null")
		} else {
			jacksonString(&b, p.value)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// javaHashMapOrder returns pairs in the iteration order of a
// java.util.HashMap (default capacity 16, load factor 0.75) into which
// they were put in order. A HashMap iterates its table's buckets in
// index order (a key's bucket is its spread String.hashCode modulo the
// capacity), each bucket's keys in the order they were put (a resize
// keeps that order). The capacity doubles when the size passes three
// quarters of it, and also when a bucket reaches 9 keys while the table
// is under 64 buckets (instead of making the bucket a tree). Buckets
// that do become trees (9 keys colliding in a table of 64 or more) keep
// the put order here, which Java's tree bins may not.
func javaHashMapOrder(pairs []hstorePair) []hstorePair {
	hashes := make([]uint32, len(pairs))
	capacity := uint32(16)
	counts := make([]int, capacity) // keys per bucket at this capacity
	// resize doubles the table and counts the first n keys' buckets
	// again, as a HashMap's resize splits each bucket in two.
	resize := func(n int) {
		capacity *= 2
		counts = make([]int, capacity)
		for _, h := range hashes[:n] {
			counts[h&(capacity-1)]++
		}
	}
	for i, p := range pairs {
		h := javaStringHash(p.key)
		hashes[i] = h ^ h>>16
		treeify := counts[hashes[i]&(capacity-1)] >= 8
		counts[hashes[i]&(capacity-1)]++
		if treeify && capacity < 64 {
			resize(i + 1)
		}
		if uint32(i+1) > capacity/4*3 {
			resize(i + 1)
		}
	}
	order := make([]int, len(pairs))
	for i := range order {
		order[i] = i
	}
	// Stable: within a bucket, the put order.
	sort.SliceStable(order, func(a, b int) bool {
		return hashes[order[a]]&(capacity-1) < hashes[order[b]]&(capacity-1)
	})
	out := make([]hstorePair, len(pairs))
	for i, j := range order {
		out[i] = pairs[j]
	}
	return out
}

// javaStringHash is java.lang.String.hashCode: s*31 over its UTF-16 code
// units, in 32-bit arithmetic.
func javaStringHash(s string) uint32 {
	var h uint32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + uint32(hi)
			h = 31*h + uint32(lo)
			continue
		}
		h = 31*h + uint32(r)
	}
	return h
}

// jacksonString writes s as a JSON string as Jackson does by default:
// quote and backslash escaped, the control characters \b \t \n \f \r
// short and the others as \u00XX (upper-case hex), everything else as
// it is (no escaping of non-ASCII, of '/' or of U+2028).
func jacksonString(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}
