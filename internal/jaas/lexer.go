package jaas

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokWord
	tokString
	tokPunct // one of { } ; =
)

type token struct {
	kind tokenKind
	text string
	line int
}

// String describes a token for an error message without its text where it
// could be a secret (a password given as a value): only punctuation and the
// end are shown as they are.
func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "the end of the text"
	case tokPunct:
		return fmt.Sprintf("%q", t.text)
	case tokString:
		return "a quoted string"
	}
	return "a word"
}

// lexer splits JAAS text into tokens as Java's StreamTokenizer does with
// the settings of Java's and Kafka's JAAS parsers.
type lexer struct {
	src  string
	pos  int
	line int
}

func (l *lexer) next() (token, error) {
	if l.line == 0 {
		l.line = 1
	}
	if err := l.skipSpaceAndComments(); err != nil {
		return token{}, err
	}
	if l.pos >= len(l.src) {
		return token{kind: tokEOF, line: l.line}, nil
	}
	c := l.src[l.pos]
	switch {
	case strings.IndexByte("{};=", c) >= 0:
		l.pos++
		return token{kind: tokPunct, text: string(c), line: l.line}, nil
	case c == '"' || c == '\'':
		return l.quoted(c)
	case isWordByte(c):
		start := l.pos
		for l.pos < len(l.src) && isWordByte(l.src[l.pos]) {
			l.pos++
		}
		return token{kind: tokWord, text: l.src[start:l.pos], line: l.line}, nil
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.pos:])
	return token{}, fmt.Errorf("line %d: unexpected character %q (quote values that hold it)", l.line, r)
}

// isWordByte tells the characters of an unquoted word: letters, digits and
// . _ $ - * as Java's JAAS tokenizer, and any non-ASCII byte (Java takes
// Latin-1 letters; UTF-8 text keeps its characters whole).
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("._$-*", c) >= 0 || c >= 0x80
}

func (l *lexer) skipSpaceAndComments() error {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == '\n':
			l.line++
			l.pos++
		case c <= ' ':
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "//"):
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return fmt.Errorf("line %d: a /* comment is not closed", l.line)
			}
			l.line += strings.Count(l.src[l.pos:l.pos+2+end], "\n")
			l.pos += 2 + end + 2
		default:
			return nil
		}
	}
	return nil
}

// quoted reads a string quoted with q. As in StreamTokenizer, a backslash
// escapes: \n \t \r \b \f \a \v, up to three octal digits, and any other
// character stands for itself (\" \\); a string ends at its line's end.
func (l *lexer) quoted(q byte) (token, error) {
	line := l.line
	l.pos++ // the opening quote
	var b strings.Builder
	for {
		if l.pos >= len(l.src) || l.src[l.pos] == '\n' {
			return token{}, fmt.Errorf("line %d: a quoted string is not closed on its line", line)
		}
		c := l.src[l.pos]
		l.pos++
		switch {
		case c == q:
			return token{kind: tokString, text: b.String(), line: line}, nil
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		if l.pos >= len(l.src) || l.src[l.pos] == '\n' {
			return token{}, fmt.Errorf("line %d: a quoted string is not closed on its line", line)
		}
		e := l.src[l.pos]
		l.pos++
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'a':
			b.WriteByte('\a')
		case 'v':
			b.WriteByte('\v')
		default:
			if e >= '0' && e <= '7' {
				b.WriteRune(l.octal(e))
				continue
			}
			b.WriteByte(e)
		}
	}
}

// octal reads the rest of an octal escape whose first digit is first: up
// to three digits, the third only when the first is 0-3 (a byte's range).
func (l *lexer) octal(first byte) rune {
	n := rune(first - '0')
	maxDigits := 2
	if first <= '3' {
		maxDigits = 3
	}
	for i := 1; i < maxDigits && l.pos < len(l.src) && l.src[l.pos] >= '0' && l.src[l.pos] <= '7'; i++ {
		n = n*8 + rune(l.src[l.pos]-'0')
		l.pos++
	}
	return n
}
