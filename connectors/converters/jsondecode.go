package converters

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sluice-io/sluice/connectors"
)

// maxDepth bounds nesting as Jackson's default StreamReadConstraints do, so
// that hostile input cannot exhaust the stack.
const maxDepth = 1000

const envelopeMsg = `JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration.`

// ToConnect reads JSON. Nil bytes give a nil schema and value (a tombstone).
// With schemas enabled the bytes must be Connect's envelope; with schemas
// disabled, empty or all-blank bytes also give nil, nil, as Jackson reads
// them as no value.
//
// Reading mirrors Connect's with these differences, all of which turn what
// Connect would silently mangle into an error: a value of the wrong JSON
// type for its schema (Connect reads a string as 0 for an int32), an
// integer out of its type's range or not integral (Connect truncates), and
// content after the JSON value (Connect ignores it). Numbers may have
// leading zeros, as Connect's parser allows; invalid UTF-8 inside strings
// becomes U+FFFD.
func (c *JSONConverter) ToConnect(topic string, data []byte) (*connectors.Schema, any, error) {
	return c.toConnect(data, nil)
}

// toConnect is ToConnect with the strings of the value copied into a, or
// each into an allocation of its own when a is nil.
func (c *JSONConverter) toConnect(data []byte, a *Arena) (*connectors.Schema, any, error) {
	if data == nil {
		return nil, nil, nil
	}
	d := decoder{c: c, data: data, arena: a}
	if !c.schemasEnabled {
		d.ws()
		if d.pos == len(data) {
			return nil, nil, nil
		}
		v, err := d.value(nil)
		if err == nil {
			err = d.end()
		}
		if err != nil {
			return nil, nil, dataErr("JsonConverter", err)
		}
		return nil, v, nil
	}
	schema, value, err := d.envelope()
	if err != nil {
		return nil, nil, dataErr("JsonConverter", err)
	}
	return schema, value, nil
}

type span struct{ start, end int }

func (d *decoder) envelope() (*connectors.Schema, any, error) {
	d.ws()
	if d.pos == len(d.data) {
		// Jackson reads blank input as a missing node, not an envelope.
		return nil, nil, errorf("%s", envelopeMsg)
	}
	if d.data[d.pos] != '{' {
		if err := d.skip(); err != nil {
			return nil, nil, err
		}
		if err := d.end(); err != nil {
			return nil, nil, err
		}
		return nil, nil, errorf("%s", envelopeMsg)
	}
	start := d.pos
	if schema, v, ok := d.envelopeInOrder(); ok {
		return schema, v, nil
	}
	// Anything else, an error included, is read again by the general
	// walk, so that every outcome other than the common one's is exactly
	// what it gives.
	d.pos, d.depth = start, 0
	return d.envelopeAnyOrder()
}

// envelopeInOrder reads the envelope in the order JsonConverter writes it,
// {"schema":...,"payload":...}, in one pass: the payload is decoded where it
// stands rather than skipped first and decoded after. It reports false for
// anything else (other members or order, a schema or payload that does not
// read), which envelopeAnyOrder then reads from the start.
//
// The envelope's head, its bytes from the opening brace up to the
// payload's value, is the same for every record of a topic written with
// one schema: bytes equal to the last head read are that head's schema,
// and the payload starts right after them, without reading the members,
// parsing the schema or looking it up. Reading is a function of the bytes
// alone, so equal bytes leave the decoder as reading them would: at the
// payload, one object deep.
func (d *decoder) envelopeInOrder() (*connectors.Schema, any, bool) {
	start := d.pos
	var schema *connectors.Schema
	if head := d.c.lastHead.Load(); head != nil && bytes.HasPrefix(d.data[start:], head.raw) {
		d.pos += len(head.raw)
		d.depth++
		schema = head.schema
	} else {
		if d.enter() != nil {
			return nil, nil, false
		}
		d.pos++
		if key, err := d.member(); err != nil || string(key) != "schema" {
			return nil, nil, false
		}
		schemaAt := d.pos
		if d.skip() != nil {
			return nil, nil, false
		}
		raw := d.data[schemaAt:d.pos]
		var err error
		if schema, err = d.c.cachedSchema(raw); err != nil || d.peek() != ',' {
			return nil, nil, false
		}
		d.pos++
		if key, err := d.member(); err != nil || string(key) != "payload" {
			return nil, nil, false
		}
		// Only a schema object: another value's bytes could be the start
		// of a longer one (a number), which would end the head elsewhere.
		// Only with a cache: schemas.cache.size=0 asks for every schema
		// to be parsed.
		if raw[0] == '{' && d.c.toCache.max > 0 {
			d.c.lastHead.Store(&rawSchema{raw: bytes.Clone(d.data[start:d.pos]), schema: schema})
		}
	}
	v, err := d.value(schema)
	if err != nil || d.peek() != '}' {
		return nil, nil, false
	}
	d.pos++
	d.depth--
	if d.end() != nil {
		return nil, nil, false
	}
	return schema, v, true
}

// member reads an object member's key and its colon, leaving the position
// at its value.
func (d *decoder) member() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.unexpected()
	}
	key, err := d.str()
	if err != nil {
		return nil, err
	}
	if d.peek() != ':' {
		return nil, d.unexpected()
	}
	d.pos++
	d.ws()
	return key, nil
}

// rawSchema is a schema with bytes that stand for it: those it was
// rendered as (lastFrom), or the head of an envelope that holds it
// (lastHead).
type rawSchema struct {
	raw    []byte
	schema *connectors.Schema
}

// envelopeAnyOrder reads an envelope whose members come in any order,
// checking them all before it decodes the payload.
func (d *decoder) envelopeAnyOrder() (*connectors.Schema, any, error) {
	var schemaAt, payloadAt span
	var haveSchema, havePayload, extra bool
	err := d.object(func(key []byte) error {
		start := d.pos
		if err := d.skip(); err != nil {
			return err
		}
		switch string(key) {
		case "schema":
			schemaAt, haveSchema = span{start, d.pos}, true
		case "payload":
			payloadAt, havePayload = span{start, d.pos}, true
		default:
			extra = true
		}
		return nil
	})
	if err == nil {
		err = d.end()
	}
	if err != nil {
		return nil, nil, err
	}
	if extra || !haveSchema || !havePayload {
		return nil, nil, errorf("%s", envelopeMsg)
	}
	schema, err := d.c.cachedSchema(d.data[schemaAt.start:schemaAt.end])
	if err != nil {
		return nil, nil, err
	}
	d.pos = payloadAt.start
	v, err := d.value(schema)
	if err != nil {
		return nil, nil, err
	}
	return schema, v, nil
}

// cachedSchema parses a JSON schema, reusing the *Schema parsed earlier from
// the same bytes: every record of a topic usually carries the same schema,
// and sharing the pointer also lets FromConnect's cache hit when a sink
// passes it back.
func (c *JSONConverter) cachedSchema(raw []byte) (*connectors.Schema, error) {
	c.toCache.mu.RLock()
	s, ok := c.toCache.m[string(raw)]
	c.toCache.mu.RUnlock()
	if ok {
		return s, nil
	}
	d := decoder{c: c, data: raw}
	if d.peek() == 'n' {
		if err := d.literal("null"); err != nil {
			return nil, err
		}
		return nil, nil
	}
	s, _, _, err := d.schema()
	if err != nil {
		return nil, inField(err, "schema")
	}
	c.toCache.put(string(raw), s)
	return s, nil
}

// decoder reads JSON straight into Connect values, guided by the schema,
// without an intermediate tree.
type decoder struct {
	c     *JSONConverter
	data  []byte
	pos   int
	depth int
	// arena, when not nil, holds the strings of the value read (a sink
	// task's, through ToConnectArena). Schemas are never read with one:
	// the converter caches them, defaults included, for as long as it
	// lives, and a cached string would keep its whole chunk alive.
	arena *Arena
}

// copyString returns raw, which str read, as a string of its own: a copy
// in the arena when the decoder has one, else a new allocation. Never
// raw's own bytes: they may be the record's, and a record's bytes belong
// to its fetch.
func (d *decoder) copyString(raw []byte) string {
	if d.arena != nil {
		return d.arena.String(raw)
	}
	return string(raw)
}

// stringValue is copyString's string as a value: boxed in the arena when
// the decoder has one (Arena.Box).
func (d *decoder) stringValue(raw []byte) any {
	if d.arena != nil {
		return d.arena.Box(d.arena.String(raw))
	}
	return string(raw)
}

// syntax reports malformed JSON. Its error carries the offset, not a path:
// the value it belongs to was never read.
func (d *decoder) syntax(format string, args ...any) error {
	return &syntaxErr{fmt.Sprintf("invalid JSON at offset %d: %s", d.pos, fmt.Sprintf(format, args...))}
}

type syntaxErr struct{ msg string }

func (e *syntaxErr) Error() string { return e.msg }

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the next non-blank byte, or 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *decoder) end() error {
	d.ws()
	if d.pos != len(d.data) {
		return d.syntax("unexpected %q after the JSON value", d.data[d.pos])
	}
	return nil
}

func (d *decoder) unexpected() error {
	if d.pos >= len(d.data) {
		return d.syntax("unexpected end of input")
	}
	return d.syntax("unexpected character %q", d.data[d.pos])
}

func (d *decoder) literal(word string) error {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return d.unexpected()
	}
	d.pos += len(word)
	return nil
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return d.syntax("nesting deeper than %d", maxDepth)
	}
	return nil
}

// kind names the JSON type of the next value for errors.
func (d *decoder) kind() string {
	switch d.peek() {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case 0:
		return "the end of input"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	}
	return "invalid JSON"
}

// mismatch reports that the next value is not what s wants; a syntax error
// in that value takes precedence, as Connect parses before it converts.
func (d *decoder) mismatch(want string) error {
	save, depth := d.pos, d.depth
	if err := d.skip(); err != nil {
		return err
	}
	d.pos, d.depth = save, depth
	return errorf("expected %s, got %s", want, d.kind())
}

// object walks the members of an object at the current position, calling
// each with the key and the position at the start of its value; each must
// consume that value.
func (d *decoder) object(each func(key []byte) error) error {
	if d.peek() != '{' {
		return d.unexpected()
	}
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		if d.peek() != '"' {
			return d.unexpected()
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		if d.peek() != ':' {
			return d.unexpected()
		}
		d.pos++
		d.ws()
		if err := each(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			return nil
		default:
			return d.unexpected()
		}
	}
}

// array walks the elements of an array like object does.
func (d *decoder) array(each func(i int) error) error {
	if d.peek() != '[' {
		return d.unexpected()
	}
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++
	if d.peek() == ']' {
		d.pos++
		d.depth--
		return nil
	}
	for i := 0; ; i++ {
		d.ws()
		if err := each(i); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			d.depth--
			return nil
		default:
			return d.unexpected()
		}
	}
}

// skip consumes one value of any type, checking its syntax.
func (d *decoder) skip() error {
	switch d.peek() {
	case '{':
		return d.object(func([]byte) error { return d.skip() })
	case '[':
		return d.array(func(int) error { return d.skip() })
	case '"':
		_, err := d.str()
		return err
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	_, _, err := d.number()
	return err
}

// str reads a string. The result aliases the input when the string has no
// escapes and is valid UTF-8, so callers copy it before keeping it.
func (d *decoder) str() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.unexpected()
	}
	d.pos++
	start := d.pos
	// Most strings hold no escape and only ASCII: their end is the next
	// quote, found by IndexByte's vector loop, and the bytes before it
	// need one cheap test.
	if q := bytes.IndexByte(d.data[start:], '"'); q >= 0 && jsonPlainASCII(d.data[start:start+q]) {
		d.pos = start + q + 1
		return d.data[start : start+q], nil
	}
	// Eight bytes at a time up to the first that needs a look of its own.
	d.pos += jsonPlainPrefix(d.data[d.pos:])
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return d.data[start : d.pos-1], nil
		case c == '\\' || c >= utf8.RuneSelf:
			return d.strSlow(start)
		case c < 0x20:
			return nil, d.syntax("control character %q in string", c)
		}
		d.pos++
	}
	return nil, d.syntax("unterminated string")
}

// jsonPlainASCII reports whether b holds no backslash, no control
// character and no byte of a multi-byte UTF-8 sequence: whether a string
// of these bytes reads as they are. It tests sixteen bytes at a time, in
// two words whose tests do not wait for each other, without stopping at
// the first failure, since most strings pass. In each byte of a word x:
// x - 0x20 sets the high bit of a byte below 0x20 (the borrow it passes up
// only reaches bytes above one that already failed), x's own high bit is
// set for 0x80 and above, and t - 1 &^ t, t = x ^ '\\', for a backslash.
func jsonPlainASCII(b []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	test := func(x uint64) uint64 {
		t := x ^ '\\'*ones
		return (x - 0x20*ones) | x | (t-ones)&^t
	}
	var acc, acc2 uint64
	all := b
	for len(b) >= 16 {
		acc |= test(binary.LittleEndian.Uint64(b))
		acc2 |= test(binary.LittleEndian.Uint64(b[8:16]))
		b = b[16:]
	}
	if len(b) >= 8 {
		acc |= test(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	switch {
	case len(b) == 0:
	case len(all) >= 8:
		// The last few bytes, in the word that ends the string: the
		// bytes before them in it passed already, and are tested again.
		acc |= test(binary.LittleEndian.Uint64(all[len(all)-8:]))
	default:
		for _, c := range b {
			x := uint64(c)
			t := x ^ '\\'
			acc |= (x - 0x20) | x | (t-1)&^t
		}
	}
	return (acc|acc2)&highs == 0
}

func (d *decoder) strSlow(start int) ([]byte, error) {
	out := append(make([]byte, 0, d.pos-start+16), d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return out, nil
		case c < 0x20:
			return nil, d.syntax("control character %q in string", c)
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, "\uFFFD"...)
			} else {
				out = append(out, d.data[d.pos:d.pos+size]...)
			}
			d.pos += size
			continue
		case c != '\\':
			out = append(out, c)
			d.pos++
			continue
		}
		if d.pos+1 >= len(d.data) {
			return nil, d.syntax("unterminated string")
		}
		e := d.data[d.pos+1]
		d.pos += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, d.syntax("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
					save := d.pos
					d.pos += 2
					if lo, ok := d.hex4(); ok {
						if dec := utf16.DecodeRune(r, lo); dec != utf8.RuneError {
							r2 = dec
						} else {
							d.pos = save
						}
					} else {
						return nil, d.syntax("invalid \\u escape")
					}
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			d.pos--
			return nil, d.syntax("invalid escape %q", e)
		}
	}
	return nil, d.syntax("unterminated string")
}

func (d *decoder) hex4() (rune, bool) {
	if len(d.data)-d.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.pos += 4
	return r, true
}

// number reads a number; integral says it had neither fraction nor
// exponent, as Jackson's isIntegralNumber. Leading zeros are allowed, as
// Connect enables ALLOW_LEADING_ZEROS_FOR_NUMBERS.
func (d *decoder) number() (raw []byte, integral bool, err error) {
	d.ws()
	start := d.pos
	if d.pos < len(d.data) && d.data[d.pos] == '-' {
		d.pos++
	}
	if !d.digits() {
		return nil, false, d.unexpected()
	}
	integral = true
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		integral = false
		if !d.digits() {
			return nil, false, d.unexpected()
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		integral = false
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if !d.digits() {
			return nil, false, d.unexpected()
		}
	}
	if d.pos-start > maxNumberLen {
		d.pos = start
		return nil, false, d.syntax("number longer than %d characters", maxNumberLen)
	}
	return d.data[start:d.pos], integral, nil
}

// maxNumberLen is Jackson's default limit.
const maxNumberLen = 1000

// maxExponent bounds what big.Rat is asked to expand: 1e999999999 would
// take gigabytes.
const maxExponent = 10000

// ratFromNumber parses a JSON number exactly.
func ratFromNumber(raw []byte) (*big.Rat, bool) {
	for i, c := range raw {
		if c == 'e' || c == 'E' {
			exp, ok := parseInt(bytesTrimPlus(raw[i+1:]), 64)
			if !ok || exp > maxExponent || exp < -maxExponent {
				return nil, false
			}
			break
		}
	}
	return new(big.Rat).SetString(string(raw))
}

func bytesTrimPlus(b []byte) []byte {
	if len(b) > 0 && b[0] == '+' {
		return b[1:]
	}
	return b
}

func (d *decoder) digits() bool {
	start := d.pos
	for d.pos < len(d.data) && '0' <= d.data[d.pos] && d.data[d.pos] <= '9' {
		d.pos++
	}
	return d.pos > start
}

// parseInt parses an integral literal into the range of bits.
func parseInt(raw []byte, bits int) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	neg := raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	limit := uint64(1) << (bits - 1) // magnitude of the minimum
	var n uint64
	for _, c := range raw {
		if n > (limit+9)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > limit {
			return 0, false
		}
		return -int64(n-1) - 1, true
	}
	if n > limit-1 {
		return 0, false
	}
	return int64(n), true
}

// intValue reads a number for an integer schema: any JSON number whose value
// is an integer in range, so that 1.0 and 1e2 work but 1.5 and 300 for an
// int8 are errors.
func (d *decoder) intValue(s *connectors.Schema, bits int) (int64, error) {
	if c := d.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, d.mismatch(string(s.Type))
	}
	raw, integral, err := d.number()
	if err != nil {
		return 0, err
	}
	if integral {
		if n, ok := parseInt(raw, bits); ok {
			return n, nil
		}
		return 0, errorf("%s is out of range of %s", raw, s.Type)
	}
	r, ok := ratFromNumber(raw)
	if !ok || !r.IsInt() {
		return 0, errorf("%s is not an integer (%s)", raw, s.Type)
	}
	n := r.Num()
	if n.BitLen() >= bits && !(n.Sign() < 0 && n.BitLen() == bits && n.TrailingZeroBits() == uint(bits-1)) {
		return 0, errorf("%s is out of range of %s", raw, s.Type)
	}
	return n.Int64(), nil
}

// intLiteral reads an integer literal, as Connect's logical types want
// (Jackson's isInt / isIntegralNumber).
func (d *decoder) intLiteral(what string, bits int) (int64, error) {
	if c := d.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, d.mismatch("an integer for " + what)
	}
	raw, integral, err := d.number()
	if err != nil {
		return 0, err
	}
	if !integral {
		return 0, errorf("invalid %s: expected an integer, got %s", what, raw)
	}
	n, ok := parseInt(raw, bits)
	if !ok {
		return 0, errorf("invalid %s: %s is out of range of int%d", what, raw, bits)
	}
	return n, nil
}

func (d *decoder) floatValue(s *connectors.Schema, bits int) (float64, error) {
	switch c := d.peek(); {
	case c == '"':
		raw, err := d.str()
		if err != nil {
			return 0, err
		}
		switch string(raw) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		return 0, errorf("expected %s, got the string %q", s.Type, raw)
	case c != '-' && (c < '0' || c > '9'):
		return 0, d.mismatch(string(s.Type))
	}
	raw, _, err := d.number()
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(raw), bits)
	if err != nil && !isRangeErr(err) {
		return 0, errorf("invalid %s %s", s.Type, raw)
	}
	// Out of range gives ±Inf, as Java's BigDecimal.doubleValue does.
	return f, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// nullFor is Connect's reading of null (or a missing struct field) for s.
func (d *decoder) nullFor(s *connectors.Schema) (any, error) {
	switch {
	case s == nil:
		return nil, nil
	case s.Default != nil && d.c.replaceNull:
		return s.Default, nil
	case s.Optional:
		return nil, nil
	}
	return nil, errorf("null value for a required %s", s.Type)
}

// value reads one value of schema s (nil: schemaless).
func (d *decoder) value(s *connectors.Schema) (any, error) {
	c := d.peek()
	if c == 'n' {
		if err := d.literal("null"); err != nil {
			return nil, err
		}
		return d.nullFor(s)
	}
	if s == nil {
		return d.anyValue()
	}
	if s.Name != "" {
		if v, done, err := d.logical(s); done {
			return v, err
		}
	}
	switch s.Type {
	case connectors.Boolean:
		switch c {
		case 't':
			return true, d.literal("true")
		case 'f':
			return false, d.literal("false")
		}
	case connectors.Int8:
		n, err := d.intValue(s, 8)
		return int8(n), err
	case connectors.Int16:
		n, err := d.intValue(s, 16)
		return int16(n), err
	case connectors.Int32:
		n, err := d.intValue(s, 32)
		return int32(n), err
	case connectors.Int64:
		return d.intValue(s, 64)
	case connectors.Float32:
		f, err := d.floatValue(s, 32)
		return float32(f), err
	case connectors.Float64:
		return d.floatValue(s, 64)
	case connectors.String:
		if c == '"' {
			raw, err := d.str()
			return d.stringValue(raw), err
		}
	case connectors.Bytes:
		if c == '"' {
			return d.base64()
		}
	case connectors.Array:
		if c == '[' {
			return d.arrayValue(s.Items)
		}
	case connectors.Map:
		return d.mapValue(s)
	case connectors.Struct:
		if c == '{' {
			return d.structValue(s)
		}
	default:
		return nil, errorf("unknown schema type %q", s.Type)
	}
	return nil, d.mismatch(string(s.Type))
}

func (d *decoder) base64() ([]byte, error) {
	raw, err := d.str()
	if err != nil {
		return nil, err
	}
	out := make([]byte, max(base64.StdEncoding.DecodedLen(len(raw)), base64.RawStdEncoding.DecodedLen(len(raw))))
	n, err := base64.StdEncoding.Decode(out, raw)
	if err != nil {
		// Accept unpadded base64 too, as Jackson's default variant does.
		if n, err = base64.RawStdEncoding.Decode(out, raw); err != nil {
			return nil, errorf("invalid base64 for bytes")
		}
	}
	return out[:n], nil
}

func (d *decoder) logical(s *connectors.Schema) (_ any, done bool, _ error) {
	switch {
	case isLogical(s, connectors.DecimalLogical, connectors.Bytes):
		// Connect reads a numeric Decimal without looking at the scale, but
		// could not write it back without one: refuse the schema up front.
		scale, err := decimalScale(s)
		if err != nil {
			return nil, true, err
		}
		switch c := d.peek(); {
		case c == '"':
			b, err := d.base64()
			if err != nil || len(b) == 0 {
				return nil, true, errorf("invalid bytes for Decimal: want base64 of a non-empty two's-complement integer")
			}
			return ratOf(fromTwosComplement(b), scale), true, nil
		case c == '-' || ('0' <= c && c <= '9'):
			raw, _, err := d.number()
			if err != nil {
				return nil, true, err
			}
			r, ok := ratFromNumber(raw)
			if !ok {
				return nil, true, errorf("invalid Decimal %s: exponent beyond ±%d", raw, maxExponent)
			}
			return r, true, nil
		}
		return nil, true, d.mismatch("a number or base64 bytes for Decimal")
	case isLogical(s, connectors.TimestampLogical, connectors.Int64):
		ms, err := d.intLiteral("Timestamp", 64)
		if err != nil {
			return nil, true, err
		}
		return time.UnixMilli(ms).UTC(), true, nil
	case isLogical(s, connectors.DateLogical, connectors.Int32):
		days, err := d.intLiteral("Date", 32)
		if err != nil {
			return nil, true, err
		}
		return time.UnixMilli(days * millisPerDay).UTC(), true, nil
	case isLogical(s, connectors.TimeLogical, connectors.Int32):
		ms, err := d.intLiteral("Time", 32)
		if err != nil {
			return nil, true, err
		}
		if ms < 0 || ms > millisPerDay {
			return nil, true, errorf("invalid Time %d: must be milliseconds within a day", ms)
		}
		return time.UnixMilli(ms).UTC(), true, nil
	}
	return nil, false, nil
}

func (d *decoder) arrayValue(items *connectors.Schema) ([]any, error) {
	out := []any{}
	err := d.array(func(i int) error {
		v, err := d.value(items)
		if err != nil {
			return inElem(err, index(i))
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (d *decoder) mapValue(s *connectors.Schema) (map[string]any, error) {
	if s.Keys == nil || s.Values == nil {
		return nil, errorf("map schema needs both keys and values schemas")
	}
	out := map[string]any{}
	if s.Keys.Type == connectors.String {
		if d.peek() != '{' {
			return nil, d.mismatch("a JSON object for a map with string keys")
		}
		err := d.object(func(key []byte) error {
			v, err := d.value(s.Values)
			if err != nil {
				return inElem(err, mapKey(string(key)))
			}
			out[d.copyString(key)] = v
			return nil
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	if d.peek() != '[' {
		return nil, d.mismatch("a JSON array of [key, value] pairs for a map with " + string(s.Keys.Type) + " keys")
	}
	err := d.array(func(i int) error {
		if d.peek() != '[' {
			return inElem(d.mismatch("a [key, value] array for a map entry"), index(i))
		}
		var key string
		n := 0
		err := d.array(func(j int) error {
			n = j + 1
			switch j {
			case 0:
				k, err := d.value(s.Keys)
				if err != nil {
					return err
				}
				key, err = d.c.keyString(s.Keys, k)
				return err
			case 1:
				v, err := d.value(s.Values)
				if err != nil {
					return inElem(err, mapKey(key))
				}
				out[key] = v
				return nil
			}
			return errorf("map entry has more than 2 elements")
		})
		if err == nil && n != 2 {
			err = errorf("map entry must have 2 elements, has %d", n)
		}
		if err != nil {
			return inElem(err, index(i))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (d *decoder) structValue(s *connectors.Schema) (*connectors.StructValue, error) {
	vals := make([]any, len(s.Fields))
	next := 0
	err := d.object(func(key []byte) error {
		i := -1
		if next < len(s.Fields) && s.Fields[next].Name == string(key) {
			i = next
		} else {
			for j := range s.Fields {
				if s.Fields[j].Name == string(key) {
					i = j
					break
				}
			}
		}
		if i < 0 {
			return d.skip()
		}
		next = i + 1
		if d.peek() == 'n' {
			// Resolved below, with missing fields: a later duplicate key
			// may still set it, as Jackson keeps the last.
			vals[i] = nil
			return d.literal("null")
		}
		v, err := d.value(s.Fields[i].Schema)
		if err != nil {
			return inField(err, s.Fields[i].Name)
		}
		vals[i] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, f := range s.Fields {
		if vals[i] == nil {
			v, err := d.nullFor(f.Schema)
			if err != nil {
				return nil, inField(err, f.Name)
			}
			vals[i] = v
		}
	}
	return &connectors.StructValue{Schema: s, Values: vals}, nil
}

// anyValue reads a value without a schema, as Connect does.
func (d *decoder) anyValue() (any, error) {
	switch d.peek() {
	case '{':
		out := map[string]any{}
		err := d.object(func(key []byte) error {
			v, err := d.value(nil)
			if err != nil {
				return inElem(err, mapKey(string(key)))
			}
			out[d.copyString(key)] = v
			return nil
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	case '[':
		return d.arrayValue(nil)
	case '"':
		raw, err := d.str()
		return d.stringValue(raw), err
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	}
	raw, integral, err := d.number()
	if err != nil {
		return nil, err
	}
	if integral {
		n, ok := parseInt(raw, 64)
		if !ok {
			return nil, errorf("integer %s is out of range of int64", raw)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !isRangeErr(err) {
		return nil, d.syntax("invalid number %s", raw)
	}
	return f, nil
}

// schemaMembers are the members of a JSON schema object Connect reads.
var schemaMembers = map[string]bool{
	"type": true, "optional": true, "name": true, "version": true, "doc": true,
	"parameters": true, "default": true, "items": true, "keys": true,
	"values": true, "fields": true, "field": true,
}

// schema reads a Connect JSON schema at the current position. It also
// returns the "field" member, which names a struct field. Members are
// located first and read after, because the type decides how to read the
// others and may come last.
func (d *decoder) schema() (s *connectors.Schema, field string, hasField bool, err error) {
	if d.peek() != '{' {
		if err := d.skip(); err != nil {
			return nil, "", false, err
		}
		return nil, "", false, errorf("a schema must be a JSON object with a \"type\"")
	}
	m := schemaObject{d: d, spans: map[string]span{}}
	err = d.object(func(key []byte) error {
		start := d.pos
		if err := d.skip(); err != nil {
			return err
		}
		if schemaMembers[string(key)] {
			m.spans[string(key)] = span{start, d.pos}
		}
		return nil
	})
	if err != nil {
		return nil, "", false, err
	}
	typ, ok := m.text("type")
	if !ok {
		return nil, "", false, errorf("a schema must contain a \"type\" string")
	}
	if s, err = m.typed(typ); err != nil {
		return nil, "", false, err
	}
	if err := m.decorate(s); err != nil {
		return nil, "", false, err
	}
	field, hasField = m.text("field")
	return s, field, hasField, nil
}

// schemaObject is a schema's members, located but not yet read.
type schemaObject struct {
	d     *decoder
	spans map[string]span
}

// at returns a decoder positioned at a member's value, and whether the
// member is present.
func (m schemaObject) at(key string) (*decoder, bool) {
	sp, ok := m.spans[key]
	return &decoder{c: m.d.c, data: m.d.data, pos: sp.start, depth: m.d.depth}, ok
}

// text reads a string member.
func (m schemaObject) text(key string) (string, bool) {
	md, ok := m.at(key)
	if !ok || md.peek() != '"' {
		return "", false
	}
	raw, err := md.str()
	return string(raw), err == nil
}

// sub reads a nested schema member (items, keys, values) of a typ schema.
func (m schemaObject) sub(typ, key string) (*connectors.Schema, error) {
	sd, ok := m.at(key)
	if !ok || sd.peek() == 'n' {
		return nil, errorf("%s schema must specify %q", typ, key)
	}
	if err := sd.enter(); err != nil {
		return nil, err
	}
	s, _, _, err := sd.schema()
	if err != nil {
		return nil, inField(err, key)
	}
	return s, nil
}

// typed reads what the type decides: the type itself and, for containers,
// their element, key, value or field schemas.
func (m schemaObject) typed(typ string) (s *connectors.Schema, err error) {
	s = &connectors.Schema{}
	switch typ {
	case "boolean", "int8", "int16", "int32", "int64", "string", "bytes":
		s.Type = connectors.SchemaType(typ)
	case "float":
		s.Type = connectors.Float32
	case "double":
		s.Type = connectors.Float64
	case "array":
		s.Type = connectors.Array
		if s.Items, err = m.sub(typ, "items"); err != nil {
			return nil, err
		}
	case "map":
		s.Type = connectors.Map
		if s.Keys, err = m.sub(typ, "keys"); err != nil {
			return nil, err
		}
		if s.Values, err = m.sub(typ, "values"); err != nil {
			return nil, err
		}
	case "struct":
		s.Type = connectors.Struct
		if s.Fields, err = m.fields(); err != nil {
			return nil, err
		}
	default:
		return nil, errorf("unknown schema type %q", typ)
	}
	return s, nil
}

// fields reads a struct schema's "fields": each an object schema with a
// unique "field" name.
func (m schemaObject) fields() ([]connectors.Field, error) {
	fd, ok := m.at("fields")
	if !ok || fd.peek() != '[' {
		return nil, errorf("struct schema's \"fields\" must be an array")
	}
	var out []connectors.Field
	seen := map[string]bool{}
	err := fd.array(func(i int) error {
		if fd.peek() != '{' {
			return inElem(errorf("struct schema's field must be an object with a \"field\" name"), index(i))
		}
		fs, name, ok, err := fd.schema()
		if err != nil {
			return inElem(err, index(i))
		}
		if !ok {
			return inElem(errorf("struct schema's field must be an object with a \"field\" name"), index(i))
		}
		if seen[name] {
			return errorf("struct schema has two fields named %q", name)
		}
		seen[name] = true
		out = append(out, connectors.Field{Name: name, Schema: fs})
		return nil
	})
	if err != nil {
		return nil, inField(err, "fields")
	}
	return out, nil
}

// decorate reads the members every schema may have: optional, name, doc,
// version, parameters and default (read last: it needs the whole schema).
func (m schemaObject) decorate(s *connectors.Schema) error {
	if od, ok := m.at("optional"); ok {
		s.Optional = od.peek() == 't'
	}
	s.Name, _ = m.text("name")
	s.Doc, _ = m.text("doc")
	if vd, ok := m.at("version"); ok {
		if c := vd.peek(); c == '-' || ('0' <= c && c <= '9') {
			if raw, integral, err := vd.number(); err == nil && integral {
				if v, ok := parseInt(raw, 32); ok {
					s.Version = int(v)
				}
			}
		}
	}
	if pd, ok := m.at("parameters"); ok && pd.peek() == '{' {
		s.Parameters = map[string]string{}
		err := pd.object(func(key []byte) error {
			if pd.peek() != '"' {
				return errorf("schema parameters must have string values")
			}
			v, err := pd.str()
			s.Parameters[string(key)] = string(v)
			return err
		})
		if err != nil {
			return inField(err, "parameters")
		}
	}
	if dd, ok := m.at("default"); ok {
		v, err := dd.value(s)
		if err != nil {
			return inField(err, "default")
		}
		s.Default = v
	}
	return nil
}
