package transforms

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Connect's transforms take java.util.regex patterns; Sluice matches with
// Go's regexp (RE2). compileJavaPattern translates the constructs whose
// syntax or meaning differ (\s, \h, \v, \R, '.', \uXXXX, \0 octal, \e,
// \cX, POSIX \p{Lower} classes, Java's ASCII-only case insensitivity,
// repetitions of repetitions and of assertions) and refuses, naming them,
// the constructs RE2 cannot do (backreferences, lookaround, atomic groups,
// possessive quantifiers, class unions and intersections, repetitions
// beyond 1000, \G, \Z, \X, \b{g}, \N{...}, Unicode blocks and binary
// properties, flags d, u, x, U, c) and what Java itself refuses, so that a
// pattern either matches as in Connect or is rejected when the connector
// is configured.
//
// What remains different: with (?m), ^ and $ break lines at \n only, where
// Java also breaks at \r, U+0085, U+2028 and U+2029; without it, Java's $
// also matches before a final line terminator; \b and \B see only ASCII
// letters and digits as word characters, as Java 19 and later do (Java 17
// sees every Unicode letter and digit). Kafka topic names are ASCII
// letters, digits, '.', '_' and '-'.

// javaPatternError is a pattern compileJavaPattern refuses: Java refuses it
// too (invalid), or Java takes it and RE2 cannot match it.
type javaPatternError struct {
	invalid bool
	msg     string
}

func (e *javaPatternError) Error() string {
	if e.invalid {
		return "Invalid regex: " + e.msg
	}
	return "Sluice matches with Go's RE2 engine, which cannot do " + e.msg
}

// compileJavaPattern compiles a Java pattern that must match a whole text,
// as Java's Matcher.matches does.
func compileJavaPattern(pattern string) (*regexp.Regexp, error) {
	tr := javaPatternTranslator{src: pattern}
	out, err := tr.translate()
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(`\A(?:` + out + `)\z`)
	if err != nil {
		// What the translation leaves to RE2 to check is Java's syntax,
		// but for RE2's limits on size and nesting.
		var se *syntax.Error
		limit := errors.As(err, &se) && (se.Code == syntax.ErrLarge || se.Code == syntax.ErrNestingDepth || se.Code == syntax.ErrInvalidRepeatSize)
		return nil, &javaPatternError{invalid: !limit, msg: strings.TrimPrefix(err.Error(), "error parsing regexp: ")}
	}
	return re, nil
}

// patternFlags are the inline flags the translator follows.
type patternFlags struct {
	caseless bool // i: ASCII-only case insensitivity, as Java's without u
	dotAll   bool // s
}

type javaPatternTranslator struct {
	src   string
	pos   int
	out   []byte
	flags patternFlags
	// groups are the open groups: where each starts in out, and the flags
	// to restore at its end.
	groups []patternGroup
	// last is the kind of what was written last, from out[lastAt:], for
	// the quantifier that may follow it.
	last   patternItem
	lastAt int
	names  map[string]bool // the named groups so far
}

type patternGroup struct {
	start int
	flags patternFlags
}

type patternItem int

const (
	itemNone       patternItem = iota // nothing yet in the pattern
	itemEmpty                         // '(' or '|': an empty sequence so far
	itemAtom                          // a character, class or group
	itemAssertion                     // ^, $, \b, \B, \A, \z
	itemQuantified                    // an atom with its quantifier
)

// write appends s, an item of kind k.
func (t *javaPatternTranslator) write(k patternItem, s string) {
	t.last, t.lastAt = k, len(t.out)
	t.out = append(t.out, s...)
}

func (t *javaPatternTranslator) fail(invalid bool, format string, args ...any) error {
	return &javaPatternError{invalid: invalid, msg: fmt.Sprintf(format, args...) + fmt.Sprintf(" near index %d", t.pos)}
}

func (t *javaPatternTranslator) peek() (rune, int) {
	if t.pos >= len(t.src) {
		return -1, 0
	}
	return utf8.DecodeRuneInString(t.src[t.pos:])
}

func (t *javaPatternTranslator) translate() (string, error) {
	for t.pos < len(t.src) {
		r, n := t.peek()
		var err error
		switch r {
		case '*', '+', '?', '{':
			err = t.quantifier()
		case '\\':
			t.pos += n
			err = t.escape()
		case '[':
			t.pos += n
			err = t.class()
		case '(':
			t.pos += n
			err = t.group()
		case ')':
			t.pos += n
			err = t.closeGroup()
		case '.':
			t.pos += n
			if t.flags.dotAll {
				t.write(itemAtom, `(?s:.)`)
			} else {
				t.write(itemAtom, `[^\n\r\x{85}\x{2028}\x{2029}]`)
			}
		case '^', '$':
			t.pos += n
			t.write(itemAssertion, string(r))
		case '|':
			t.pos += n
			t.write(itemEmpty, "|")
		default:
			t.pos += n
			t.literal(r)
		}
		if err != nil {
			return "", err
		}
	}
	if len(t.groups) > 0 {
		return "", t.fail(true, "Unclosed group")
	}
	return string(t.out), nil
}

// literal writes a character that matches itself, in both cases when it
// is an ASCII letter and (?i) is on.
func (t *javaPatternTranslator) literal(r rune) {
	if t.flags.caseless && isASCIILetter(r) {
		t.write(itemAtom, fmt.Sprintf("[%c%c]", r, swapASCIICase(r)))
		return
	}
	t.write(itemAtom, regexp.QuoteMeta(string(r)))
}

func isASCIILetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

func swapASCIICase(r rune) rune {
	if r >= 'a' && r <= 'z' {
		return r - 'a' + 'A'
	}
	return r - 'A' + 'a'
}

// quantifier reads a repetition as Java does: *, + or ? need something
// before them that is not itself repeated ("Dangling meta character"); a
// brace, which must be {n}, {n,} or {n,m}, repeats what is before it, or
// nothing when that is nothing or a repetition (a{2}{3} is a{2}). RE2
// repeats at most 1000 times and has no possessive quantifiers.
func (t *javaPatternTranslator) quantifier() error {
	qstart := t.pos
	r, _ := t.peek()
	t.pos++
	empty := t.last == itemNone || t.last == itemEmpty || t.last == itemQuantified
	if r != '{' && empty {
		t.pos--
		return t.fail(true, "Dangling meta character '%c'", r)
	}
	if r == '{' {
		end := strings.IndexByte(t.src[t.pos:], '}')
		if end < 0 {
			return t.fail(true, "Illegal repetition")
		}
		body := t.src[t.pos : t.pos+end]
		lo, hi, ok := parsePatternRepetition(body)
		switch {
		case !ok:
			return t.fail(true, "Illegal repetition")
		case lo > hi && hi >= 0:
			return t.fail(true, "Illegal repetition range")
		case lo > 1000 || hi > 1000:
			return t.fail(false, "repetitions beyond 1000 ({%s})", body)
		}
		t.pos += end + 1
	}
	switch next, _ := t.peek(); next {
	case '?':
		t.pos++
	case '+':
		t.pos++
		return t.fail(false, "possessive quantifiers (%s)", t.src[qstart:t.pos])
	}
	// RE2 repeats neither nothing nor an assertion: they become groups.
	switch {
	case empty:
		t.lastAt = len(t.out)
		t.out = append(t.out, "(?:)"...)
	case t.last == itemAssertion:
		t.out = append(t.out[:t.lastAt], "(?:"+string(t.out[t.lastAt:])+")"...)
	}
	t.out = append(t.out, t.src[qstart:t.pos]...)
	t.last = itemQuantified
	return nil
}

// parsePatternRepetition reads n, "n," or "n,m" (hi -1 for no bound).
func parsePatternRepetition(body string) (lo, hi int, ok bool) {
	a, b, comma := strings.Cut(body, ",")
	if lo, ok = parsePatternCount(a); !ok {
		return 0, 0, false
	}
	if !comma {
		return lo, lo, true
	}
	if b == "" {
		return lo, -1, true
	}
	hi, ok = parsePatternCount(b)
	return lo, hi, ok
}

func parsePatternCount(s string) (int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 1 << 30, true // beyond any limit
	}
	return n, true
}

// group translates what follows '(': a capturing group, a named group,
// (?:...), or inline flags, and refuses lookaround and atomic groups.
func (t *javaPatternTranslator) group() error {
	rest := t.src[t.pos:]
	switch {
	case !strings.HasPrefix(rest, "?"):
		t.open("(")
		return nil
	case strings.HasPrefix(rest, "?:"):
		t.pos += 2
		t.open("(?:")
		return nil
	case strings.HasPrefix(rest, "?="), strings.HasPrefix(rest, "?!"),
		strings.HasPrefix(rest, "?<="), strings.HasPrefix(rest, "?<!"):
		return t.fail(false, "lookahead or lookbehind ((%s...))", strings.TrimRight(rest[:min(len(rest), 3)], "("))
	case strings.HasPrefix(rest, "?>"):
		return t.fail(false, "atomic groups ((?>...))")
	case strings.HasPrefix(rest, "?<"):
		end := strings.IndexByte(rest, '>')
		name := ""
		if end > 2 {
			name = rest[2:end]
		}
		if !isJavaGroupName(name) {
			return t.fail(true, "named capturing group is missing trailing '>'")
		}
		if t.names[name] {
			return t.fail(true, "Named capturing group <%s> is already defined", name)
		}
		if t.names == nil {
			t.names = map[string]bool{}
		}
		t.names[name] = true
		t.pos += end + 1
		t.open("(?P<" + name + ">")
		return nil
	}
	return t.inlineFlags()
}

func (t *javaPatternTranslator) open(s string) {
	t.groups = append(t.groups, patternGroup{start: len(t.out), flags: t.flags})
	t.write(itemEmpty, s)
}

func (t *javaPatternTranslator) closeGroup() error {
	if len(t.groups) == 0 {
		return t.fail(true, "Unmatched closing ')'")
	}
	g := t.groups[len(t.groups)-1]
	t.groups = t.groups[:len(t.groups)-1]
	t.flags = g.flags
	t.out = append(t.out, ')')
	t.last, t.lastAt = itemAtom, g.start
	return nil
}

// isJavaGroupName: a letter, then letters and digits (ASCII).
func isJavaGroupName(s string) bool {
	for i, r := range s {
		if !isASCIILetter(r) && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

// inlineFlags reads (?flags) or (?flags:...): i, s and m are followed,
// the others refused. (?flags) changes the flags to the end of the
// enclosing group and writes nothing but m, which RE2 follows itself.
func (t *javaPatternTranslator) inlineFlags() error {
	t.pos++ // '?'
	on, multiline := true, ""
	f := t.flags
	for t.pos < len(t.src) {
		c := t.src[t.pos]
		t.pos++
		switch c {
		case '-':
			on = false
		case 'i':
			f.caseless = on
		case 's':
			f.dotAll = on
		case 'm':
			if on {
				multiline = "m"
			} else {
				multiline = "-m"
			}
		case 'd', 'u', 'x', 'U', 'c':
			return t.fail(false, "the inline flag %c (Sluice takes i, m and s)", c)
		case ')':
			t.flags = f
			t.write(itemEmpty, "")
			if multiline != "" {
				t.out = append(t.out, "(?"+multiline+")"...)
			}
			return nil
		case ':':
			t.open("(?" + multiline + ":")
			t.flags = f
			return nil
		default:
			return t.fail(true, "Unknown inline modifier")
		}
	}
	return t.fail(true, "Unknown inline modifier")
}

// escape translates what follows a backslash outside a class.
func (t *javaPatternTranslator) escape() error {
	if strings.HasPrefix(t.src[t.pos:], "Q") {
		t.pos++
		for _, r := range t.quotation() { // an empty one is not there at all
			t.literal(r)
		}
		return nil
	}
	item, lit, err := t.escapeItem()
	switch {
	case err != nil:
		return err
	case lit >= 0:
		t.literal(lit)
	case item == `\b`, item == `\B`, item == `\A`, item == `\z`:
		t.write(itemAssertion, item)
	case strings.HasPrefix(item, "("):
		t.write(itemAtom, item)
	default:
		t.write(itemAtom, "["+item+"]")
	}
	return nil
}

// Java's predefined classes whose RE2 spelling differs, as RE2 class
// items: \s has \x0B, \h and \v are Java's horizontal and vertical
// whitespace (RE2's \v is the vertical tab alone).
const (
	javaSpace      = `\t\n\x0B\f\r `
	javaHorizontal = ` \t\x{A0}\x{1680}\x{180E}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}`
	javaVertical   = `\n\x0B\f\r\x{85}\x{2028}\x{2029}`
	// Their complements, for a negated class inside a class.
	javaNotSpace      = `\x00-\x08\x0E-\x1F\x21-\x{10FFFF}`
	javaNotHorizontal = `\x00-\x08\x0A-\x1F\x21-\x9F\x{A1}-\x{167F}\x{1681}-\x{180D}\x{180F}-\x{1FFF}\x{200B}-\x{202E}\x{2030}-\x{205E}\x{2060}-\x{2FFF}\x{3001}-\x{10FFFF}`
	javaNotVertical   = `\x00-\x09\x0E-\x{84}\x{86}-\x{2027}\x{202A}-\x{10FFFF}`
)

// escapeItem reads an escape: a literal character (lit), or else a class
// item (RE2 syntax usable inside [...]), an assertion, or a group.
func (t *javaPatternTranslator) escapeItem() (item string, lit rune, err error) {
	r, n := t.peek()
	if r < 0 {
		return "", -1, t.fail(true, "Unexpected internal error")
	}
	t.pos += n
	switch r {
	case 'd', 'D', 'w', 'W':
		return `\` + string(r), -1, nil
	case 's':
		return javaSpace, -1, nil
	case 'S':
		return javaNotSpace, -1, nil
	case 'h':
		return javaHorizontal, -1, nil
	case 'H':
		return javaNotHorizontal, -1, nil
	case 'v':
		return javaVertical, -1, nil
	case 'V':
		return javaNotVertical, -1, nil
	case 'R':
		return `(?:\r\n|[` + javaVertical + `])`, -1, nil
	case 'b', 'B':
		if strings.HasPrefix(t.src[t.pos:], "{g}") {
			return "", -1, t.fail(false, `grapheme boundaries (\b{g})`)
		}
		return `\` + string(r), -1, nil
	case 'A', 'z':
		return `\` + string(r), -1, nil
	case 'Z':
		return "", -1, t.fail(false, `\Z (the end but for a final line terminator)`)
	case 'G':
		return "", -1, t.fail(false, `\G (the end of the previous match)`)
	case 'X':
		return "", -1, t.fail(false, `\X (grapheme clusters)`)
	case 'N':
		return "", -1, t.fail(false, `\N{...} (characters by name)`)
	case 'k':
		return "", -1, t.fail(false, `named backreferences (\k<name>)`)
	case 'p', 'P':
		item, err := t.property(r == 'P')
		return item, -1, err
	case 't':
		return "", '\t', nil
	case 'n':
		return "", '\n', nil
	case 'r':
		return "", '\r', nil
	case 'f':
		return "", '\f', nil
	case 'a':
		return "", '\a', nil
	case 'e':
		return "", 0x1B, nil
	case 'c':
		c, n := t.peek()
		if c < 0 {
			return "", -1, t.fail(true, "Illegal control escape sequence")
		}
		t.pos += n
		return "", c ^ 64, nil
	case '0':
		return t.octal()
	case 'x':
		return t.hexEscape()
	case 'u':
		return t.unicodeEscape()
	}
	switch {
	case r >= '1' && r <= '9':
		return "", -1, t.fail(false, `backreferences (\%c)`, r)
	case isASCIILetter(r):
		return "", -1, t.fail(true, "Illegal/unsupported escape sequence")
	}
	return "", r, nil // an escaped character is itself
}

// quotation reads what follows \Q up to \E (or the end): characters
// that are themselves.
func (t *javaPatternTranslator) quotation() string {
	end := strings.Index(t.src[t.pos:], `\E`)
	if end < 0 {
		text := t.src[t.pos:]
		t.pos = len(t.src)
		return text
	}
	text := t.src[t.pos : t.pos+end]
	t.pos += end + 2
	return text
}

// octal reads \0n, \0nn or \0mnn (m at most 3).
func (t *javaPatternTranslator) octal() (string, rune, error) {
	v, digits := 0, 0
	for digits < 3 && t.pos < len(t.src) && t.src[t.pos] >= '0' && t.src[t.pos] <= '7' {
		if digits == 2 && v > 037 {
			break
		}
		v = v*8 + int(t.src[t.pos]-'0')
		t.pos++
		digits++
	}
	if digits == 0 {
		return "", -1, t.fail(true, "Illegal octal escape sequence")
	}
	return "", rune(v), nil
}

// hexEscape reads \xhh or \x{h...h}.
func (t *javaPatternTranslator) hexEscape() (string, rune, error) {
	rest := t.src[t.pos:]
	if strings.HasPrefix(rest, "{") {
		end := strings.IndexByte(rest, '}')
		if end > 1 {
			if v, err := strconv.ParseUint(rest[1:end], 16, 32); err == nil && v <= unicode.MaxRune {
				t.pos += end + 1
				return "", rune(v), nil
			}
		}
		return "", -1, t.fail(true, "Illegal hexadecimal escape sequence")
	}
	if len(rest) >= 2 {
		if v, err := strconv.ParseUint(rest[:2], 16, 8); err == nil {
			t.pos += 2
			return "", rune(v), nil
		}
	}
	return "", -1, t.fail(true, "Illegal hexadecimal escape sequence")
}

// unicodeEscape reads \uhhhh, a surrogate pair of them being one character.
func (t *javaPatternTranslator) unicodeEscape() (string, rune, error) {
	read := func() (rune, bool) {
		if len(t.src)-t.pos < 4 {
			return 0, false
		}
		v, err := strconv.ParseUint(t.src[t.pos:t.pos+4], 16, 16)
		if err != nil {
			return 0, false
		}
		t.pos += 4
		return rune(v), true
	}
	r, ok := read()
	if !ok {
		return "", -1, t.fail(true, "Illegal Unicode escape sequence")
	}
	if r >= 0xD800 && r < 0xDC00 && strings.HasPrefix(t.src[t.pos:], `\u`) {
		save := t.pos
		t.pos += 2
		if lo, ok := read(); ok && lo >= 0xDC00 && lo < 0xE000 {
			return "", 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), nil
		}
		t.pos = save
	}
	if r >= 0xD800 && r < 0xE000 {
		return "", -1, t.fail(false, `a lone surrogate (\u%04X)`, r)
	}
	return "", r, nil
}

// class translates a character class after its '['. Java's unions
// ([a[b]]) and intersections (&&) are refused; a '-' that starts no range
// is a '-'; with (?i), ASCII letters and ranges take both cases.
func (t *javaPatternTranslator) class() error {
	var b strings.Builder
	b.WriteByte('[')
	if strings.HasPrefix(t.src[t.pos:], "^") {
		b.WriteByte('^')
		t.pos++
	}
	for first := true; ; first = false {
		r, n := t.peek()
		switch {
		case r < 0:
			return t.fail(true, "Unclosed character class")
		case r == ']' && !first:
			t.pos += n
			b.WriteByte(']')
			t.write(itemAtom, b.String())
			return nil
		case r == '[':
			return t.fail(false, "character class unions ([a[b]])")
		case r == '&' && strings.HasPrefix(t.src[t.pos:], "&&"):
			return t.fail(false, "character class intersections (&&)")
		}
		lo, set, isSet, err := t.classItem()
		if err != nil {
			return err
		}
		if isSet {
			b.WriteString(set)
			continue
		}
		hi := lo
		if rest := t.src[t.pos:]; strings.HasPrefix(rest, "-") && len(rest) > 1 && rest[1] != ']' {
			t.pos++
			var hiIsSet bool
			if hi, _, hiIsSet, err = t.classItem(); err != nil {
				return err
			}
			if hiIsSet || hi < lo {
				return t.fail(true, "Illegal character range")
			}
		}
		t.classRange(&b, lo, hi)
	}
}

// classItem reads a character of a class (lo), or a set of them (set,
// RE2 class items, isSet).
func (t *javaPatternTranslator) classItem() (lo rune, set string, isSet bool, err error) {
	r, n := t.peek()
	t.pos += n
	if r != '\\' {
		return r, "", false, nil
	}
	if strings.HasPrefix(t.src[t.pos:], "Q") {
		t.pos++
		var b strings.Builder
		for _, q := range t.quotation() {
			t.classRange(&b, q, q)
		}
		return 0, b.String(), true, nil
	}
	if next, _ := t.peek(); strings.ContainsRune("bBAzRGZXNk", next) {
		t.pos++
		return 0, "", false, t.fail(true, "Illegal/unsupported escape sequence")
	}
	item, lit, err := t.escapeItem()
	if err != nil || lit >= 0 {
		return lit, "", false, err
	}
	return 0, item, true, nil
}

// classRange writes the range lo-hi as RE2 class items.
func (t *javaPatternTranslator) classRange(b *strings.Builder, lo, hi rune) {
	write := func(lo, hi rune) {
		if lo == hi {
			fmt.Fprintf(b, `\x{%X}`, lo)
		} else {
			fmt.Fprintf(b, `\x{%X}-\x{%X}`, lo, hi)
		}
	}
	write(lo, hi)
	if !t.flags.caseless {
		return
	}
	if l, h := max(lo, 'a'), min(hi, 'z'); l <= h {
		write(l-'a'+'A', h-'a'+'A')
	}
	if l, h := max(lo, 'A'), min(hi, 'Z'); l <= h {
		write(l-'A'+'a', h-'A'+'a')
	}
}

// javaPosixClasses are Java's POSIX character classes (US-ASCII, as Java
// has them without UNICODE_CHARACTER_CLASS) and their RE2 names.
var javaPosixClasses = map[string]string{
	"Lower": "lower", "Upper": "upper", "ASCII": "ascii", "Alpha": "alpha", "Digit": "digit",
	"Alnum": "alnum", "Punct": "punct", "Graph": "graph", "Print": "print", "Blank": "blank",
	"Cntrl": "cntrl", "XDigit": "xdigit", "Space": "space",
}

// property translates \p{...} or \P{...} (or \pL) into RE2 class items:
// Java's POSIX classes, Unicode general categories (L, Lu, IsLu, gc=Lu)
// and scripts (IsLatin, sc=Latin, script=Latin). Blocks, binary
// properties and java* classes are refused.
func (t *javaPatternTranslator) property(negated bool) (string, error) {
	name := ""
	if strings.HasPrefix(t.src[t.pos:], "{") {
		end := strings.IndexByte(t.src[t.pos:], '}')
		if end < 0 {
			return "", t.fail(true, "Unclosed character family")
		}
		name = t.src[t.pos+1 : t.pos+end]
		t.pos += end + 1
	} else if r, n := t.peek(); r >= 0 {
		name = string(r)
		t.pos += n
	}
	not := map[bool]string{true: "^", false: ""}[negated]
	if posix, ok := javaPosixClasses[name]; ok {
		if t.flags.caseless && (name == "Lower" || name == "Upper") {
			if negated {
				return "", t.fail(false, `\P{%s} with (?i)`, name)
			}
			return "a-zA-Z", nil
		}
		return "[:" + not + posix + ":]", nil
	}
	p := map[bool]string{true: `\P`, false: `\p`}[negated]
	category := name
	for _, prefix := range []string{"Is", "gc=", "general_category="} {
		category = strings.TrimPrefix(category, prefix)
	}
	if _, ok := unicode.Categories[category]; ok && category != name || ok && len(name) <= 2 {
		if t.flags.caseless && (category == "Lu" || category == "Ll" || category == "Lt") {
			// Java's case insensitivity makes any of them any cased letter.
			if negated {
				return "", t.fail(false, `\P{%s} with (?i)`, name)
			}
			return `\p{Lu}\p{Ll}\p{Lt}`, nil
		}
		return p + "{" + category + "}", nil
	}
	script := ""
	for _, prefix := range []string{"Is", "sc=", "script="} {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			script = rest
		}
	}
	for s := range unicode.Scripts {
		if script != "" && strings.EqualFold(s, script) {
			return p + "{" + s + "}", nil
		}
	}
	return "", t.fail(false, `the character property \p{%s}`, name)
}
