// Package javaregex runs java.util.regex patterns, which Connect's keys
// take (RegexRouter's regex, TopicNameMatches' pattern, EnvVarConfigProvider's
// allowlist.pattern), on Go's regexp (RE2).
package javaregex

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

// Connect's keys take java.util.regex patterns (RegexRouter's regex,
// TopicNameMatches' pattern, allowlist.pattern); Sluice matches with Go's
// regexp (RE2). This is the one translator for them all. Compile
// rewrites the constructs whose syntax or meaning differ (\s, \h, \v, \R,
// '.', \uXXXX, \0 octal, \e, \cX, \Q...\E, POSIX \p{Lower} classes, Java's
// ASCII-only case insensitivity, repetitions of repetitions and of
// assertions) and refuses, naming them, the constructs RE2 cannot do
// (backreferences, lookaround, atomic groups, possessive quantifiers,
// class unions and intersections, repetitions beyond 1000, \G, \Z, \X,
// \b{g}, \N{...}, Unicode blocks and binary properties, the java* classes,
// flags d, u, x, U, c) and what Java itself refuses, so that a pattern
// either matches as in Connect or is rejected when the connector is
// configured, never silently matching otherwise.
//
// What remains different: with (?m), ^ and $ break lines at \n only, where
// Java also breaks at \r, U+0085, U+2028 and U+2029; without it, Java's $
// also matches before a final line terminator; \b and \B see only ASCII
// letters and digits as word characters, as Java 19 and later do (Java 17
// sees every Unicode letter and digit). Kafka topic names are ASCII
// letters, digits, '.', '_' and '-', none of which these touch.

// Error is a pattern Compile refuses: Java refuses it
// too (invalid), or Java takes it and RE2 cannot match it.
type Error struct {
	invalid bool
	msg     string
}

func (e *Error) Error() string {
	if e.invalid {
		return "Invalid regex: " + e.msg
	}
	return e.msg
}

// Regex is a compiled Java pattern. RegexRouter needs both forms and
// the group names: Whole decides whether it applies, Find finds the match
// that replaceFirst replaces, and Names resolve ${name}.
type Regex struct {
	Find  *regexp.Regexp // the pattern, unanchored (Matcher.find)
	Whole *regexp.Regexp // the pattern matching a whole text (Matcher.matches)
	Names map[string]int // named groups' numbers
}

// Compile is Pattern.compile for the patterns RE2 can run.
func Compile(pattern string) (*Regex, error) {
	tr := javaRegexTranslator{src: string(removeQEQuoting([]rune(pattern))), names: map[string]int{}}
	out, err := tr.translate()
	if err != nil {
		return nil, err
	}
	whole, err := compileRE2(pattern, `\A(?:`+out+`)\z`)
	if err != nil {
		return nil, err
	}
	re, err := compileRE2(pattern, out)
	if err != nil {
		return nil, err
	}
	return &Regex{Find: re, Whole: whole, Names: tr.names}, nil
}

// compileRE2 compiles a translation of pattern. What the translation
// leaves to RE2 to check is Java's syntax, but for RE2's limits on size
// and nesting, which are refusals of a pattern Java takes.
func compileRE2(pattern, translated string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(translated)
	if err == nil {
		return re, nil
	}
	var se *syntax.Error
	if errors.As(err, &se) && (se.Code == syntax.ErrLarge || se.Code == syntax.ErrNestingDepth || se.Code == syntax.ErrInvalidRepeatSize) {
		return nil, &Error{msg: fmt.Sprintf("%q cannot be translated to Go's RE2 engine, which cannot do %s", pattern, se.Code)}
	}
	return nil, &Error{invalid: true, msg: strings.TrimPrefix(err.Error(), "error parsing regexp: ")}
}

// patternFlags are the inline flags the translator follows.
type patternFlags struct {
	caseless bool // i: ASCII-only case insensitivity, as Java's without u
	dotAll   bool // s
}

type javaRegexTranslator struct {
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
	// captures counts the capturing groups so far, numbering them as
	// Java does for $n; names are the named ones' numbers, for ${name}.
	captures int
	names    map[string]int
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
func (t *javaRegexTranslator) write(k patternItem, s string) {
	t.last, t.lastAt = k, len(t.out)
	t.out = append(t.out, s...)
}

// invalid is a pattern Java refuses, with Java's message.
func (t *javaRegexTranslator) invalid(format string, args ...any) error {
	return &Error{invalid: true, msg: fmt.Sprintf(format, args...) + fmt.Sprintf(" near index %d", t.pos)}
}

// unsupported is a construct Java takes and RE2 cannot do: what names it
// as written, kind the family of constructs RE2 lacks.
func unsupported(what, kind string) error {
	return &Error{msg: what + " cannot be translated to Go's RE2 engine, which cannot do " + kind}
}

func (t *javaRegexTranslator) peek() (rune, int) {
	if t.pos >= len(t.src) {
		return -1, 0
	}
	return utf8.DecodeRuneInString(t.src[t.pos:])
}

func (t *javaRegexTranslator) translate() (string, error) {
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
		return "", t.invalid("Unclosed group")
	}
	return string(t.out), nil
}

// literal writes a character that matches itself, in both cases when it
// is an ASCII letter and (?i) is on.
func (t *javaRegexTranslator) literal(r rune) {
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
func (t *javaRegexTranslator) quantifier() error {
	qstart := t.pos
	r, _ := t.peek()
	t.pos++
	empty := t.last == itemNone || t.last == itemEmpty || t.last == itemQuantified
	if r != '{' && empty {
		t.pos--
		return t.invalid("Dangling meta character '%c'", r)
	}
	if r == '{' {
		end := strings.IndexByte(t.src[t.pos:], '}')
		if end < 0 {
			return t.invalid("Illegal repetition")
		}
		body := t.src[t.pos : t.pos+end]
		lo, hi, ok := parsePatternRepetition(body)
		switch {
		case !ok:
			return t.invalid("Illegal repetition")
		case lo > hi && hi >= 0:
			return t.invalid("Illegal repetition range")
		case lo > 1000 || hi > 1000:
			return unsupported("a repetition count above 1000 ({"+body+"})", "repetitions beyond 1000")
		}
		t.pos += end + 1
	}
	switch next, _ := t.peek(); next {
	case '?':
		t.pos++
	case '+':
		t.pos++
		q := t.src[qstart:t.pos]
		return unsupported("the possessive quantifier "+q, "possessive quantifiers ("+q+")")
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
func (t *javaRegexTranslator) group() error {
	rest := t.src[t.pos:]
	switch {
	case !strings.HasPrefix(rest, "?"):
		t.captures++
		t.open("(")
		return nil
	case strings.HasPrefix(rest, "?:"):
		t.pos += 2
		t.open("(?:")
		return nil
	case strings.HasPrefix(rest, "?="), strings.HasPrefix(rest, "?!"),
		strings.HasPrefix(rest, "?<="), strings.HasPrefix(rest, "?<!"):
		what := "lookahead (" + rest[:2] + "...)"
		if rest[1] == '<' {
			what = "lookbehind (" + rest[:3] + "...)"
		}
		return unsupported(what, "lookahead or lookbehind")
	case strings.HasPrefix(rest, "?>"):
		return unsupported("the atomic group (?>...)", "atomic groups")
	case strings.HasPrefix(rest, "?<"):
		t.pos += 2
		name, err := t.groupName()
		if err != nil {
			return err
		}
		t.captures++
		t.names[name] = t.captures
		t.open("(?P<" + name + ">")
		return nil
	}
	return t.inlineFlags()
}

func (t *javaRegexTranslator) open(s string) {
	t.groups = append(t.groups, patternGroup{start: len(t.out), flags: t.flags})
	t.write(itemEmpty, s)
}

func (t *javaRegexTranslator) closeGroup() error {
	if len(t.groups) == 0 {
		return t.invalid("Unmatched closing ')'")
	}
	g := t.groups[len(t.groups)-1]
	t.groups = t.groups[:len(t.groups)-1]
	t.flags = g.flags
	t.out = append(t.out, ')')
	t.last, t.lastAt = itemAtom, g.start
	return nil
}

// groupName reads a named group's name and its '>', as Pattern.groupname:
// an ASCII letter, then ASCII letters and digits.
func (t *javaRegexTranslator) groupName() (string, error) {
	start := t.pos
	isLetter := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	if t.pos >= len(t.src) || !isLetter(t.src[t.pos]) {
		return "", t.invalid("capturing group name does not start with a Latin letter")
	}
	for t.pos < len(t.src) && (isLetter(t.src[t.pos]) || t.src[t.pos] >= '0' && t.src[t.pos] <= '9') {
		t.pos++
	}
	name := t.src[start:t.pos]
	if t.pos >= len(t.src) || t.src[t.pos] != '>' {
		return "", t.invalid("named capturing group is missing trailing '>'")
	}
	t.pos++
	if _, dup := t.names[name]; dup {
		return "", t.invalid("Named capturing group <%s> is already defined", name)
	}
	return name, nil
}

// inlineFlags reads (?flags) or (?flags:...): i, s and m are followed,
// the others refused. (?flags) changes the flags to the end of the
// enclosing group and writes nothing but m, which RE2 follows itself.
func (t *javaRegexTranslator) inlineFlags() error {
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
			return unsupported(javaFlagNames[c], "the inline flag "+string(c)+" (Sluice takes i, m and s)")
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
			return t.invalid("Unknown inline modifier")
		}
	}
	return t.invalid("Unknown inline modifier")
}

// escape translates what follows a backslash outside a class.
func (t *javaRegexTranslator) escape() error {
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
func (t *javaRegexTranslator) escapeItem() (item string, lit rune, err error) {
	r, n := t.peek()
	if r < 0 {
		return "", -1, t.invalid("Unexpected internal error")
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
			return "", -1, unsupported(`the grapheme boundary \b{g}`, "grapheme boundaries")
		}
		return `\` + string(r), -1, nil
	case 'A', 'z':
		return `\` + string(r), -1, nil
	case 'Z':
		return "", -1, unsupported(`\Z`, "the end but for a final line terminator")
	case 'G':
		return "", -1, unsupported(`\G`, "the end of the previous match")
	case 'X':
		return "", -1, unsupported(`\X`, "grapheme clusters")
	case 'N':
		return "", -1, unsupported(`the named character \N{...}`, "characters by name")
	case 'k':
		return "", -1, unsupported(`the backreference \k<name>`, "named backreferences")
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
			return "", -1, t.invalid("Illegal control escape sequence")
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
		return "", -1, unsupported(`the backreference \`+string(r), "backreferences")
	case isASCIILetter(r):
		return "", -1, t.invalid("Illegal/unsupported escape sequence")
	}
	return "", r, nil // an escaped character is itself
}

// removeQEQuoting rewrites \Q...\E quotes as escaped characters before
// parsing, exactly as Pattern.RemoveQEQuoting does (a digit that opens a
// quote becomes \x3N so that it cannot extend an escape before it).
func removeQEQuoting(src []rune) []rune {
	i := 0
	for i < len(src)-1 {
		if src[i] != '\\' {
			i++
		} else if src[i+1] != 'Q' {
			i += 2
		} else {
			break
		}
	}
	if i >= len(src)-1 {
		return src
	}
	at := func(k int) rune {
		if k < len(src) {
			return src[k]
		}
		return 0
	}
	out := append([]rune(nil), src[:i]...)
	i += 2
	inQuote, beginQuote := true, true
	for i < len(src) {
		c := src[i]
		i++
		switch {
		case c >= 0x80 || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			out = append(out, c)
		case c >= '0' && c <= '9':
			if beginQuote {
				out = append(out, '\\', 'x', '3')
			}
			out = append(out, c)
		case c != '\\':
			if inQuote {
				out = append(out, '\\')
			}
			out = append(out, c)
		case inQuote:
			if at(i) == 'E' {
				i++
				inQuote = false
			} else {
				out = append(out, '\\', '\\')
			}
		default:
			if at(i) == 'Q' {
				i++
				inQuote, beginQuote = true, true
				continue
			}
			out = append(out, c)
			if i != len(src) {
				out = append(out, src[i])
				i++
			}
		}
		beginQuote = false
	}
	return out
}

// octal reads \0n, \0nn or \0mnn (m at most 3).
func (t *javaRegexTranslator) octal() (string, rune, error) {
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
		return "", -1, t.invalid("Illegal octal escape sequence")
	}
	return "", rune(v), nil
}

// hexEscape reads \xhh or \x{h...h}.
func (t *javaRegexTranslator) hexEscape() (string, rune, error) {
	rest := t.src[t.pos:]
	if strings.HasPrefix(rest, "{") {
		end := strings.IndexByte(rest, '}')
		if end > 1 {
			if v, err := strconv.ParseUint(rest[1:end], 16, 32); err == nil && v <= unicode.MaxRune {
				t.pos += end + 1
				return "", rune(v), nil
			}
		}
		return "", -1, t.invalid("Illegal hexadecimal escape sequence")
	}
	if len(rest) >= 2 {
		if v, err := strconv.ParseUint(rest[:2], 16, 8); err == nil {
			t.pos += 2
			return "", rune(v), nil
		}
	}
	return "", -1, t.invalid("Illegal hexadecimal escape sequence")
}

// unicodeEscape reads \uhhhh, a surrogate pair of them being one character.
func (t *javaRegexTranslator) unicodeEscape() (string, rune, error) {
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
		return "", -1, t.invalid("Illegal Unicode escape sequence")
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
		return "", -1, unsupported(fmt.Sprintf(`a lone surrogate (\u%04X)`, r), "unpaired surrogates")
	}
	return "", r, nil
}

// class translates a character class after its '['. Java's unions
// ([a[b]]) and intersections (&&) are refused; a '-' that starts no range
// is a '-'; with (?i), ASCII letters and ranges take both cases.
func (t *javaRegexTranslator) class() error {
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
			return t.invalid("Unclosed character class")
		case r == ']' && !first:
			t.pos += n
			b.WriteByte(']')
			t.write(itemAtom, b.String())
			return nil
		case r == '[':
			return unsupported("a nested character class [...[...]...]", "character class unions ([a[b]])")
		case r == '&' && strings.HasPrefix(t.src[t.pos:], "&&"):
			return unsupported("a character class intersection [...&&...]", "character class intersections (&&)")
		}
		lo, set, isSet, err := t.classItem(false)
		if err != nil {
			return err
		}
		if isSet {
			b.WriteString(set)
			continue
		}
		hi := lo
		if rest := t.src[t.pos:]; strings.HasPrefix(rest, "-") && len(rest) > 1 && rest[1] != ']' && rest[1] != '[' {
			t.pos++
			var hiIsSet bool
			if hi, _, hiIsSet, err = t.classItem(true); err != nil {
				return err
			}
			if hiIsSet || hi < lo {
				return t.invalid("Illegal character range")
			}
		}
		t.classRange(&b, lo, hi)
	}
}

// classItem reads a character of a class (lo), or a set of them (set,
// RE2 class items, isSet). inRange is for the end of a range, where Java
// reads \v as the character \x0B, as it does before a '-'.
func (t *javaRegexTranslator) classItem(inRange bool) (lo rune, set string, isSet bool, err error) {
	r, n := t.peek()
	t.pos += n
	if r != '\\' {
		return r, "", false, nil
	}
	if next, _ := t.peek(); next == 'v' && (inRange || strings.HasPrefix(t.src[t.pos+1:], "-")) {
		t.pos++
		return 0x0B, "", false, nil // Java reads \v in a range as \x0B
	}
	if next, _ := t.peek(); strings.ContainsRune("bBAzRGZXNk", next) {
		t.pos++
		return 0, "", false, t.invalid("Illegal/unsupported escape sequence")
	}
	item, lit, err := t.escapeItem()
	if err != nil || lit >= 0 {
		return lit, "", false, err
	}
	return 0, item, true, nil
}

// classRange writes the range lo-hi as RE2 class items.
func (t *javaRegexTranslator) classRange(b *strings.Builder, lo, hi rune) {
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

// javaFlagNames are the inline flags RE2 cannot follow, by Java's names.
var javaFlagNames = map[byte]string{
	'd': "the UNIX_LINES flag (?d)", 'u': "the UNICODE_CASE flag (?u)", 'x': "the COMMENTS flag (?x)",
	'U': "the UNICODE_CHARACTER_CLASS flag (?U)", 'c': "the CANON_EQ flag (?c)",
}

// javaPosixClasses are Java's POSIX character classes (US-ASCII, as Java
// has them without UNICODE_CHARACTER_CLASS) as RE2 class items, and their
// complements.
var javaPosixClasses = map[string][2]string{
	"Lower": {"[:lower:]", "[:^lower:]"}, "Upper": {"[:upper:]", "[:^upper:]"}, "ASCII": {"[:ascii:]", "[:^ascii:]"},
	"Alpha": {"[:alpha:]", "[:^alpha:]"}, "Digit": {"[:digit:]", "[:^digit:]"}, "Alnum": {"[:alnum:]", "[:^alnum:]"},
	"Punct": {"[:punct:]", "[:^punct:]"}, "Graph": {"[:graph:]", "[:^graph:]"}, "Print": {"[:print:]", "[:^print:]"},
	"Blank": {"[:blank:]", "[:^blank:]"}, "Cntrl": {"[:cntrl:]", "[:^cntrl:]"}, "XDigit": {"[:xdigit:]", "[:^xdigit:]"},
	"Space": {"[:space:]", "[:^space:]"}, "L1": {`\x00-\x{FF}`, `\x{100}-\x{10FFFF}`}, "all": {`\x00-\x{10FFFF}`, ""},
}

// goCategories are the Unicode general categories Java and Go mean alike
// (Go's C lacks the unassigned Cn, which Java's has).
var goCategories = map[string]bool{
	"L": true, "Lu": true, "Ll": true, "Lt": true, "Lm": true, "Lo": true,
	"M": true, "Mn": true, "Mc": true, "Me": true, "N": true, "Nd": true, "Nl": true, "No": true,
	"P": true, "Pc": true, "Pd": true, "Ps": true, "Pe": true, "Pi": true, "Pf": true, "Po": true,
	"S": true, "Sm": true, "Sc": true, "Sk": true, "So": true, "Z": true, "Zs": true, "Zl": true, "Zp": true,
	"Cc": true, "Cf": true, "Co": true, "Cs": true,
}

// noGoTable are categories Java has and Go's unicode package lacks (Cn,
// and the groups that include it or mix categories).
var noGoTable = map[string]bool{"C": true, "Cn": true, "LC": true, "LD": true}

// javaBinaryProperties are the names \p{IsX} takes as Unicode binary
// properties (CharPredicates.forUnicodeProperty), upper-cased.
var javaBinaryProperties = strings.Fields(`ALPHA LOWER UPPER SPACE PUNCT XDIGIT ALNUM CNTRL DIGIT BLANK GRAPH PRINT
	ALPHABETIC ASSIGNED CONTROL EMOJI EMOJI_PRESENTATION EMOJI_MODIFIER EMOJI_MODIFIER_BASE EMOJI_COMPONENT
	EXTENDED_PICTOGRAPHIC HEXDIGIT HEX_DIGIT IDEOGRAPHIC JOINCONTROL JOIN_CONTROL LETTER LOWERCASE
	NONCHARACTERCODEPOINT NONCHARACTER_CODE_POINT TITLECASE PUNCTUATION UPPERCASE WHITESPACE WHITE_SPACE WORD`)

// javaProperty is what a \p name resolves to: a POSIX class, a general
// category or a script (Go's spelling).
type javaProperty struct {
	posix, category, script string
}

// property translates \p{...} or \P{...} (or \pL), after the p, into RE2
// class items. Under (?i) Java makes \p{Lower}, \p{Upper} and the cased
// letter categories match either case.
func (t *javaRegexTranslator) property(negated bool) (string, error) {
	name := ""
	if strings.HasPrefix(t.src[t.pos:], "{") {
		end := strings.IndexByte(t.src[t.pos:], '}')
		if end < 0 {
			return "", t.invalid("Unclosed character family")
		}
		name = t.src[t.pos+1 : t.pos+end]
		t.pos += end + 1
		if name == "" {
			return "", t.invalid("Empty character family")
		}
	} else if r, n := t.peek(); r >= 0 {
		name = string(r)
		t.pos += n
	}
	p, err := t.resolveProperty(name)
	if err != nil {
		return "", err
	}
	not := map[bool]int{false: 0, true: 1}[negated]
	switch {
	case p.posix != "" && t.flags.caseless && (p.posix == "Lower" || p.posix == "Upper"):
		if negated {
			return "", unsupported(`\P{`+name+`} with (?i)`, "negated case classes under ASCII case insensitivity")
		}
		return "a-zA-Z", nil
	case p.posix != "":
		if items := javaPosixClasses[p.posix][not]; items != "" {
			return items, nil
		}
		return "", unsupported(`\P{`+name+`}`, "a class that matches nothing")
	case p.category != "" && t.flags.caseless && (p.category == "Lu" || p.category == "Ll" || p.category == "Lt"):
		if negated {
			return "", unsupported(`\P{`+name+`} with (?i)`, "negated case classes under ASCII case insensitivity")
		}
		return `\p{Lu}\p{Ll}\p{Lt}`, nil
	}
	goName := p.category + p.script
	return [2]string{`\p{`, `\P{`}[not] + goName + "}", nil
}

// resolveProperty resolves a \p name as Pattern.family does, refusing
// what Java refuses and what Go has no table for.
func (t *javaRegexTranslator) resolveProperty(name string) (javaProperty, error) {
	var p javaProperty
	if k, v, ok := strings.Cut(name, "="); ok {
		switch strings.ToLower(k) {
		case "sc", "script":
			p = javaScript(v)
		case "gc", "general_category":
			p = javaCategoryOrPosix(v)
		case "blk", "block":
			return p, unsupported(`the Unicode block \p{`+name+`}`, "Unicode blocks")
		}
		if p == (javaProperty{}) {
			return p, t.invalid("Unknown Unicode property {name=<%s>, value=<%s>}", strings.ToLower(k), v)
		}
		return p, nil
	}
	switch {
	case strings.HasPrefix(name, "In"):
		return p, unsupported(`the Unicode block \p{`+name+`}`, "Unicode blocks")
	case strings.HasPrefix(name, "Is"):
		short := name[2:]
		if noGoTable[short] {
			return p, unsupported(`\p{`+name+`}`, "the category "+short)
		}
		for _, b := range javaBinaryProperties {
			if strings.ToUpper(short) == b {
				return p, unsupported(`the Unicode property \p{`+name+`}`, "Unicode binary properties")
			}
		}
		if p = javaCategoryOrPosix(short); p == (javaProperty{}) {
			p = javaScript(short)
		}
	case strings.HasPrefix(name, "java"):
		return p, unsupported(`\p{`+name+`}`, "Java's java* classes")
	case noGoTable[name]:
		return p, unsupported(`\p{`+name+`}`, "the category "+name)
	default:
		p = javaCategoryOrPosix(name)
	}
	if p == (javaProperty{}) {
		return p, t.invalid("Unknown character property name {%s}", name)
	}
	return p, nil
}

// javaCategoryOrPosix is a general category or POSIX class by Java's name;
// zero for a name it is not.
func javaCategoryOrPosix(name string) javaProperty {
	if goCategories[name] {
		return javaProperty{category: name}
	}
	if _, ok := javaPosixClasses[name]; ok {
		return javaProperty{posix: name}
	}
	return javaProperty{}
}

// javaScript is a Unicode script by a name in any case, as Java takes it.
func javaScript(name string) javaProperty {
	for k := range unicode.Scripts {
		if strings.EqualFold(k, name) {
			return javaProperty{script: k}
		}
	}
	return javaProperty{}
}
