package converters

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/sluice-io/sluice/connectors"
)

// This file ports what SimpleHeaderConverter and the header transforms need
// of Kafka Connect's org.apache.kafka.connect.data.Values (4.1): parseString,
// which infers a schema from text, and convertToString (values_string.go),
// its inverse. The port keeps Connect's quirks, because a header written by
// Connect must read the same in Sluice: a top-level text is a number only
// by its first token ("12,34" is the int8 12), "true}" is a string, an
// array with a null and a number is a string, quoted strings keep their
// backslashes, and so on. The tests pin them against Connect's own.

// schemaAndValue is Connect's SchemaAndValue; a nil *schemaAndValue is
// Java's null, which parse returns for the literal null.
type schemaAndValue struct {
	schema *connectors.Schema
	value  any
}

// maxValueDepth bounds the nesting of arrays and maps the parser follows.
// Connect's recursive parser has no bound but the JVM's stack, whose
// StackOverflowError SimpleHeaderConverter turns into a bytes header
// (with a default 1 MB stack, somewhere between 2000 and 4000 levels);
// beyond this depth Sluice does the same (errTooDeep).
const maxValueDepth = 2000

var errTooDeep = errors.New("the value nests arrays and maps too deeply to be parsed")

// ParseValue is Connect's Values.parseString: it infers the schema of a
// text and returns the Connect value it stands for. The empty text is the
// empty string; "null" (with blanks around it) is null (nil, nil); true
// and false are booleans; numbers are the smallest integer type that holds
// them, else float32, float64 or a Decimal; [...] is an array and {...} a
// map of such values, with a common schema when the elements have one
// (numbers widen to the widest), else none (a nil Items, Keys or Values);
// "..." inside them is a string; yyyy-MM-dd, HH:mm:ss.SSS'Z' and
// yyyy-MM-dd'T'HH:mm:ss.SSS'Z' are a Date, Time and Timestamp (in UTC).
// Any other text is that text, as a string. Schemas are shared and must
// not be modified.
//
// A map's keys are strings in Sluice (connectors/schema.go): a key of a
// typed key schema is written as JSONConverter writes such keys (its JSON
// text, unquoted when that is a JSON string: int8 1 is "1", a Date its
// days); a key of a map with no common key schema is written as
// ValueString writes it. The only error is a text nesting arrays and maps
// deeper than 2000 levels.
func ParseValue(s string) (*connectors.Schema, any, error) {
	if s == "" {
		return connectors.StringSchema, "", nil
	}
	p := valueParser{t: tokenizer{s: s}}
	sv, err := p.parse(false)
	if err != nil {
		return nil, nil, err
	}
	if sv == nil {
		return nil, nil, nil
	}
	return sv.schema, sv.value, nil
}

// dataError is Connect's DataException inside the parser: the text is not
// a value of the kind tried, and the parser reverts to reading it as a
// string where Connect does.
type dataError struct{ msg string }

func (e *dataError) Error() string { return e.msg }

func dataErrorf(format string, args ...any) error {
	return &dataError{msg: fmt.Sprintf(format, args...)}
}

// tokenizer is Values.Parser: it splits text into tokens at the
// delimiters : , { } [ ] " (each its own token) unless escaped by a
// backslash, keeping the backslashes. It works on bytes: the delimiters
// are ASCII, which never occurs inside a UTF-8 sequence.
type tokenizer struct {
	s    string
	pos  int
	next string // a token looked at but not consumed; "" for none (tokens are never empty)
	prev string
}

func (t *tokenizer) mark() int { return t.pos - len(t.next) }

func (t *tokenizer) rewindTo(p int) { t.pos, t.next, t.prev = p, "", "" }

func (t *tokenizer) hasNext() bool { return t.next != "" || t.pos < len(t.s) }

func (t *tokenizer) nextToken() string {
	if t.next != "" {
		t.prev, t.next = t.next, ""
	} else {
		t.prev = t.consume()
	}
	return t.prev
}

// nextN consumes n tokens and returns the text they span, or rewinds and
// returns false when fewer remain.
func (t *tokenizer) nextN(n int) (string, bool) {
	start := t.mark()
	for i := 0; i < n; i++ {
		if !t.hasNext() {
			t.rewindTo(start)
			return "", false
		}
		t.nextToken()
	}
	return t.s[start:t.pos], true
}

func (t *tokenizer) consume() string {
	escaped := false
	start := t.pos
	for ; t.pos < len(t.s); t.pos++ {
		switch c := t.s[t.pos]; c {
		case '\\':
			escaped = !escaped
		case ':', ',', '{', '}', '[', ']', '"':
			if !escaped {
				if start < t.pos {
					return t.s[start:t.pos]
				}
				t.pos++
				return t.s[start:t.pos]
			}
			escaped = false
		default:
			escaped = false
		}
	}
	return t.s[start:t.pos]
}

// canConsume consumes the next token if, trimmed, it is expected. Blank
// tokens before it are dropped, whether or not it matches, as Connect's
// Parser drops them.
func (t *tokenizer) canConsume(expected string) bool {
	if t.next == "" {
		if !t.hasNext() {
			return false
		}
		t.next = t.consume()
	}
	for isJavaBlank(t.next) && t.pos < len(t.s) {
		t.next = t.consume()
	}
	if javaTrim(t.next) == expected {
		t.next = ""
		return true
	}
	return false
}

// javaTrim is Java's String.trim: it removes the characters up to U+0020
// (spaces and ASCII controls) from both ends.
func javaTrim(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}

// isJavaBlank is Kafka's Utils.isBlank.
func isJavaBlank(s string) bool { return javaTrim(s) == "" }

// valueParser is Values.ValueParser.
type valueParser struct {
	t     tokenizer
	depth int
}

var (
	trueValue  = &schemaAndValue{connectors.BooleanSchema, true}
	falseValue = &schemaAndValue{connectors.BooleanSchema, false}
)

// parse reads the next value; embedded is true inside an array or a map,
// where a text that is no value is an error rather than a string.
func (p *valueParser) parse(embedded bool) (*schemaAndValue, error) {
	t := &p.t
	switch {
	case !t.hasNext():
		return nil, nil
	case embedded && t.canConsume(`"`):
		return p.parseQuotedString(), nil
	case p.canParseLiteral(embedded, "null"):
		return nil, nil
	case p.canParseLiteral(embedded, "true"):
		return trueValue, nil
	case p.canParseLiteral(embedded, "false"):
		return falseValue, nil
	}
	start := t.mark()
	var nested func() (*schemaAndValue, error)
	if t.canConsume("[") {
		nested = p.parseArray
	} else if t.canConsume("{") {
		nested = p.parseMap
	}
	if nested != nil {
		sv, err := p.nested(nested)
		if err == nil || errors.Is(err, errTooDeep) {
			return sv, err
		}
		t.rewindTo(start) // not an array or a map after all: read it as a token
	}
	token := t.nextToken()
	if isJavaBlank(token) {
		return &schemaAndValue{connectors.StringSchema, token}, nil
	}
	return p.parseNextToken(embedded, javaTrim(token))
}

func (p *valueParser) nested(parse func() (*schemaAndValue, error)) (*schemaAndValue, error) {
	if p.depth >= maxValueDepth {
		return nil, errTooDeep
	}
	p.depth++
	defer func() { p.depth-- }()
	return parse()
}

// canParseLiteral consumes null, true or false when it is the next token
// and, at the top level, the last: "true}" is a string.
func (p *valueParser) canParseLiteral(embedded bool, literal string) bool {
	start := p.t.mark()
	if p.t.canConsume(literal) && (embedded || !p.t.hasNext()) {
		return true
	}
	p.t.rewindTo(start)
	return false
}

func (p *valueParser) parseNextToken(embedded bool, token string) (*schemaAndValue, error) {
	first, _ := utf8.DecodeRuneInString(token)
	digit := isJavaDigit(first)
	// Temporal types are more restrictive, so they are tried first.
	if digit {
		if sv := p.parseMultipleTokensAsTemporal(token); sv != nil {
			return sv, nil
		}
	}
	if digit || first == '+' || first == '-' {
		if sv, ok := parseAsNumber(token); ok {
			return sv, nil
		}
	}
	if embedded {
		return nil, dataErrorf("Failed to parse embedded value")
	}
	// At this point, the only thing this top-level text can be is a string.
	return &schemaAndValue{connectors.StringSchema, p.t.s}, nil
}

// parseMultipleTokensAsTemporal tries the token with the four tokens after
// it first, since a time's unescaped colons split it into five tokens.
func (p *valueParser) parseMultipleTokensAsTemporal(token string) *schemaAndValue {
	start := p.t.mark()
	if rest, ok := p.t.nextN(4); ok {
		if sv := parseAsTemporal(token + rest); sv != nil {
			return sv
		}
	}
	p.t.rewindTo(start)
	return parseAsTemporal(token)
}

// parseQuotedString reads up to the closing quote, keeping backslashes
// and dropping tokens that are blank before a quote, as Connect does; the
// content is a Date, Time or Timestamp if it reads as one.
func (p *valueParser) parseQuotedString() *schemaAndValue {
	var content []byte
	for p.t.hasNext() {
		if p.t.canConsume(`"`) {
			break
		}
		content = append(content, p.t.nextToken()...)
	}
	if sv := parseAsTemporal(string(content)); sv != nil {
		return sv
	}
	return &schemaAndValue{connectors.StringSchema, string(content)}
}
