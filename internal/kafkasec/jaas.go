package kafkasec

import (
	"errors"
	"fmt"
	"strings"
)

// JAASEntry is one login module entry of a JAAS configuration:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";
type JAASEntry struct {
	LoginModule string
	// ControlFlag is required, requisite, sufficient or optional (lower case).
	ControlFlag string
	Options     map[string]string
}

// ParseJAAS parses a sasl.jaas.config value as Kafka's JaasConfig does:
// with java.io.StreamTokenizer's default syntax plus // and /* */
// comments and '-', '_' and '$' as word characters. Entries are a module
// name, a control flag (any case), options key=value (the value a word or a
// "quoted"/'quoted' string with Java's escapes) and a terminating ';'.
// Errors never quote a value: values hold passwords.
func ParseJAAS(text string) ([]JAASEntry, error) {
	tz := &tokenizer{src: []rune(text)}
	var entries []JAASEntry
	for {
		tok := tz.next()
		if tok.kind == tokEOF {
			break
		}
		e, err := parseEntry(tz, tok)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, errors.New("login module not specified")
	}
	return entries, nil
}

func parseEntry(tz *tokenizer, first token) (JAASEntry, error) {
	if !first.hasText() || first.text == "" {
		return JAASEntry{}, fmt.Errorf("expected a login module class name, found %s", first.describe())
	}
	e := JAASEntry{LoginModule: first.text, Options: map[string]string{}}
	module := first.name()
	flag := tz.next()
	if flag.kind == tokEOF {
		return JAASEntry{}, fmt.Errorf("login module %s: control flag not specified", module)
	}
	if !flag.hasText() {
		return JAASEntry{}, fmt.Errorf("login module %s: control flag not specified (found %s)", module, flag.describe())
	}
	switch f := strings.ToLower(flag.text); f {
	case "required", "requisite", "sufficient", "optional":
		e.ControlFlag = f
	default:
		return JAASEntry{}, fmt.Errorf("login module %s: invalid control flag %s (required, requisite, sufficient or optional)", module, flag.name())
	}
	for {
		key := tz.next()
		if key.kind == tokEOF {
			return JAASEntry{}, fmt.Errorf("login module %s: entry not terminated by a semicolon", module)
		}
		if key.kind == tokOrdinary && key.char == ';' {
			return e, nil
		}
		if !key.hasText() {
			return JAASEntry{}, fmt.Errorf("login module %s: expected an option name, found %s", module, key.describe())
		}
		if eq := tz.next(); eq.kind != tokOrdinary || eq.char != '=' {
			return JAASEntry{}, fmt.Errorf("login module %s: value not specified for option %s", module, key.name())
		}
		value := tz.next()
		if !value.hasText() {
			return JAASEntry{}, fmt.Errorf("login module %s: value not specified for option %s", module, key.name())
		}
		// As Java's HashMap.put: a repeated option keeps its last value.
		e.Options[key.text] = value.text
	}
}

type tokenKind int

const (
	tokEOF      tokenKind = iota
	tokWord               // letters, digits, '.', '-', '_', '$'; not starting with a digit, '.' or '-'
	tokQuoted             // "..." or '...'
	tokNumber             // StreamTokenizer's TT_NUMBER: it carries no text, so is never a valid name or value
	tokOrdinary           // any other single character, such as '=' and ';'
)

type token struct {
	kind tokenKind
	text string
	char rune
}

func (t token) hasText() bool { return t.kind == tokWord || t.kind == tokQuoted }

// name is how an error shows a name token: a word quoted, a quoted string
// not at all, since a quoted string in the wrong place may be a password.
func (t token) name() string {
	if t.kind == tokWord {
		return fmt.Sprintf("%q", t.text)
	}
	return "(a quoted string)"
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end of the text"
	case tokNumber:
		return "a number"
	case tokOrdinary:
		return fmt.Sprintf("%q", t.char)
	default:
		return "a name"
	}
}

// tokenizer reproduces java.io.StreamTokenizer as Kafka's JaasConfig sets
// it up. Characters at or above 256 are word characters there, as are
// 160..255; 0..32 are white space.
type tokenizer struct {
	src []rune
	pos int
}

func (tz *tokenizer) peek() rune {
	if tz.pos < len(tz.src) {
		return tz.src[tz.pos]
	}
	return -1
}

func (tz *tokenizer) read() rune {
	c := tz.peek()
	if c >= 0 {
		tz.pos++
	}
	return c
}

func isSpace(c rune) bool { return c >= 0 && c <= ' ' }

func isNumeric(c rune) bool { return c >= '0' && c <= '9' || c == '.' || c == '-' }

func isAlpha(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 160 || c == '-' || c == '_' || c == '$'
}

func (tz *tokenizer) next() token {
	for {
		c := tz.read()
		for isSpace(c) {
			c = tz.read()
		}
		switch {
		case c < 0:
			return token{kind: tokEOF}
		case isNumeric(c):
			// StreamTokenizer tries a number before a word, so a token
			// starting with a digit, '.' or '-' is a number (or a lone '-').
			if c == '-' {
				if n := tz.peek(); n != '.' && (n < '0' || n > '9') {
					return token{kind: tokOrdinary, char: '-'}
				}
			}
			seenDot := c == '.'
			for n := tz.peek(); n >= '0' && n <= '9' || n == '.' && !seenDot; n = tz.peek() {
				seenDot = seenDot || n == '.'
				tz.read()
			}
			return token{kind: tokNumber}
		case isAlpha(c):
			start := tz.pos - 1
			for n := tz.peek(); isAlpha(n) || isNumeric(n); n = tz.peek() {
				tz.read()
			}
			return token{kind: tokWord, text: string(tz.src[start:tz.pos])}
		case c == '"' || c == '\'':
			return token{kind: tokQuoted, text: tz.quoted(c)}
		case c == '/':
			// "//" starts a line comment and so, since '/' is also
			// StreamTokenizer's default comment character, does a lone '/'
			// (the character after it is consumed first, as in Java, even
			// when it is a line break).
			switch n := tz.read(); {
			case n == '*':
				tz.skipBlockComment()
			case n >= 0:
				tz.skipLine()
			}
		default:
			return token{kind: tokOrdinary, char: c}
		}
	}
}

func (tz *tokenizer) skipLine() {
	for c := tz.peek(); c >= 0 && c != '\n' && c != '\r'; c = tz.peek() {
		tz.read()
	}
}

func (tz *tokenizer) skipBlockComment() {
	prev := rune(0)
	for c := tz.read(); c >= 0; c = tz.read() {
		if prev == '*' && c == '/' {
			return
		}
		prev = c
	}
}

// quoted reads a quoted string after its opening quote. As in Java, the
// string also ends at an unescaped line break or the end of the text, and
// backslash escapes are \a \b \f \n \r \t \v, octal \0..\377, and any
// other character standing for itself.
func (tz *tokenizer) quoted(quote rune) string {
	var b strings.Builder
	for {
		c := tz.peek()
		if c < 0 || c == quote || c == '\n' || c == '\r' {
			if c == quote {
				tz.read()
			}
			return b.String()
		}
		tz.read()
		if c != '\\' {
			b.WriteRune(c)
			continue
		}
		e := tz.read()
		switch {
		case e >= '0' && e <= '7':
			v := e - '0'
			if n := tz.peek(); n >= '0' && n <= '7' {
				tz.read()
				v = v*8 + n - '0'
				if n2 := tz.peek(); n2 >= '0' && n2 <= '7' && e <= '3' {
					tz.read()
					v = v*8 + n2 - '0'
				}
			}
			b.WriteRune(v)
		case e < 0:
			// Java stores (char)-1 for a backslash at the very end.
			b.WriteRune('\uffff')
		default:
			if r, ok := javaEscapes[e]; ok {
				e = r
			}
			b.WriteRune(e)
		}
	}
}

var javaEscapes = map[rune]rune{'a': 7, 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}
