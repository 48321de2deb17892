package transforms

// Java regular expressions (java.util.regex.Pattern) on Go's RE2.
//
// Connect compiles a transform's regex with Pattern.compile. We translate
// the pattern to RE2 syntax token by token, with Java's rules: which
// characters are special where (a '{' that is no valid quantifier is an
// error, a ']' first in a class is a literal), what \s, \v, \h, '.' and
// the POSIX \p{...} classes match, the escapes RE2 lacks (\uXXXX, \e, \cX,
// Java's octal \0nn), and inline flags. What Java rejects we reject; what
// Java accepts but RE2 cannot run (backreferences, lookaround, atomic
// groups, possessive quantifiers, \G, \Z, \R, \X, \N{...}, \b{g}, class
// intersections and nested classes, Unicode blocks and binary properties,
// the java* classes, the x, U and c flags, repetition counts above 1000)
// is refused by name, so that a config is refused at validation rather
// than matching differently.
//
// Known differences on inputs Kafka topic names cannot contain (they are
// [a-zA-Z0-9._-] only): '$' without MULTILINE matches only at the very
// end (Java also matches before a final line terminator), MULTILINE '^'
// and '$' know only \n as a line terminator, and case-insensitive matching
// folds non-ASCII letters as Go does (Java folds only ASCII unless the u
// flag is set).

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// javaRegexError is a pattern Java itself rejects.
type javaRegexError struct {
	desc  string
	index int
}

func (e *javaRegexError) Error() string { return fmt.Sprintf("%s near index %d", e.desc, e.index) }

// unsupportedRegexError is a pattern Java accepts that RE2 cannot run.
type unsupportedRegexError struct{ what string }

func (e *unsupportedRegexError) Error() string {
	return e.what + " cannot be translated to Go's RE2 regular expressions"
}

// javaRegex is a compiled Java pattern.
type javaRegex struct {
	re    *regexp.Regexp // the pattern, unanchored (Matcher.find)
	whole *regexp.Regexp // the pattern matching a whole input (Matcher.matches)
	names map[string]int // named groups' numbers
}

// compileJavaRegex is Pattern.compile for the patterns RE2 can run.
func compileJavaRegex(pattern string) (*javaRegex, error) {
	t := &regexTranslator{src: removeQEQuoting([]rune(pattern)), names: map[string]int{}}
	goSyntax, err := t.translate()
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(goSyntax)
	if err != nil {
		return nil, &unsupportedRegexError{fmt.Sprintf("%q (%v)", pattern, err)}
	}
	whole, err := regexp.Compile(`\A(?:` + goSyntax + `)\z`)
	if err != nil {
		return nil, &unsupportedRegexError{fmt.Sprintf("%q (%v)", pattern, err)}
	}
	return &javaRegex{re: re, whole: whole, names: t.names}, nil
}

// regexFlags are the inline flags that change how we translate.
type regexFlags struct {
	multiline, dotall, unixLines bool
}

type regexTranslator struct {
	src    []rune
	pos    int
	flags  regexFlags
	groups int
	names  map[string]int
}

func (t *regexTranslator) errorf(format string, args ...any) error {
	return &javaRegexError{desc: fmt.Sprintf(format, args...), index: t.pos}
}

func (t *regexTranslator) eof() bool { return t.pos >= len(t.src) }

func (t *regexTranslator) peek() rune {
	if t.eof() {
		return -1
	}
	return t.src[t.pos]
}

func (t *regexTranslator) translate() (string, error) {
	out, err := t.expr()
	if err != nil {
		return "", err
	}
	if !t.eof() { // a ')' without its '('
		return "", t.errorf("Unmatched closing ')'")
	}
	return out, nil
}

// expr is alternatives up to the end or an unmatched ')'.
func (t *regexTranslator) expr() (string, error) {
	var b strings.Builder
	for {
		s, err := t.seq()
		if err != nil {
			return "", err
		}
		b.WriteString(s)
		if t.peek() != '|' {
			return b.String(), nil
		}
		t.pos++
		b.WriteByte('|')
	}
}

// seq is a sequence of quantified atoms, as Pattern.sequence.
func (t *regexTranslator) seq() (string, error) {
	var b strings.Builder
	for !t.eof() {
		var atom string
		var err error
		switch c := t.peek(); c {
		case '|', ')':
			return b.String(), nil
		case '(':
			var flagsOnly bool
			if atom, flagsOnly, err = t.group(); err != nil {
				return "", err
			}
			if flagsOnly {
				b.WriteString(atom) // (?i) applies to the rest of the group
				continue
			}
		case '?', '*', '+':
			t.pos++
			return "", t.errorf("Dangling meta character '%c'", c)
		case '{':
			atom = "" // Java: an empty atom, so "{2}" repeats nothing
		default:
			if atom, err = t.atom(); err != nil {
				return "", err
			}
		}
		q, err := t.quantifier()
		if err != nil {
			return "", err
		}
		if q != "" {
			atom = "(?:" + atom + ")" + q
		}
		b.WriteString(atom)
	}
	return b.String(), nil
}

// atom is one unquantified element other than a group.
func (t *regexTranslator) atom() (string, error) {
	c := t.src[t.pos]
	t.pos++
	switch c {
	case '[':
		return t.class()
	case '\\':
		return t.escape()
	case '.':
		switch {
		case t.flags.dotall:
			return `(?s:.)`, nil
		case t.flags.unixLines:
			return `[^\n]`, nil
		}
		return `[^\n\r\x{85}\x{2028}\x{2029}]`, nil
	case '^':
		if t.flags.multiline {
			return `(?m:^)`, nil
		}
		return `\A`, nil
	case '$':
		if t.flags.multiline {
			return `(?m:$)`, nil
		}
		return `\z`, nil
	}
	return goRegexLiteral(c), nil
}

// quantifier parses Java's ?, *, +, {n}, {n,}, {n,m} with an optional lazy
// '?', refusing the possessive '+'.
func (t *regexTranslator) quantifier() (string, error) {
	var q string
	switch c := t.peek(); c {
	case '?', '*', '+':
		t.pos++
		q = string(c)
	case '{':
		var err error
		if q, err = t.counted(); err != nil {
			return "", err
		}
	default:
		return "", nil
	}
	switch t.peek() {
	case '?':
		t.pos++
		q += "?"
	case '+':
		return "", &unsupportedRegexError{"the possessive quantifier " + q + "+"}
	}
	return q, nil
}

// maxRepeat is RE2's largest repetition count.
const maxRepeat = 1000

func (t *regexTranslator) counted() (string, error) {
	t.pos++ // '{'
	num := func() (int, bool, error) {
		start := t.pos
		for !t.eof() && t.peek() >= '0' && t.peek() <= '9' {
			t.pos++
		}
		if t.pos == start {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(string(t.src[start:t.pos]), 10, 32)
		if err != nil {
			return 0, true, t.errorf("Illegal repetition range")
		}
		return int(n), true, nil
	}
	lo, ok, err := num()
	if err != nil {
		return "", err
	}
	if !ok {
		return "", t.errorf("Illegal repetition")
	}
	hi, q := lo, fmt.Sprintf("{%d}", lo)
	if t.peek() == ',' {
		t.pos++
		if t.peek() == '}' {
			hi, q = -1, fmt.Sprintf("{%d,}", lo)
		} else {
			if hi, _, err = num(); err != nil {
				return "", err
			}
			q = fmt.Sprintf("{%d,%d}", lo, hi)
		}
	}
	if t.peek() != '}' {
		return "", t.errorf("Unclosed counted closure")
	}
	t.pos++
	if hi != -1 && hi < lo {
		return "", t.errorf("Illegal repetition range")
	}
	if lo > maxRepeat || hi > maxRepeat {
		return "", &unsupportedRegexError{"a repetition count above 1000 (" + q + ")"}
	}
	return q, nil
}

// group translates a group from its '(' to its ')', quantifier not
// included. flagsOnly reports an inline modifier such as (?i), which has
// no group of its own.
func (t *regexTranslator) group() (out string, flagsOnly bool, err error) {
	t.pos++ // '('
	saved := t.flags
	open := "("
	if t.peek() == '?' {
		t.pos++
		switch c := t.peek(); {
		case c == ':':
			t.pos++
			open = "(?:"
		case c == '=' || c == '!':
			return "", false, &unsupportedRegexError{"lookahead (?" + string(c) + "...)"}
		case c == '>':
			return "", false, &unsupportedRegexError{"the atomic group (?>...)"}
		case c == '<':
			t.pos++
			if p := t.peek(); p == '=' || p == '!' {
				return "", false, &unsupportedRegexError{"lookbehind (?<" + string(p) + "...)"}
			}
			name, err := t.groupName()
			if err != nil {
				return "", false, err
			}
			t.groups++
			t.names[name] = t.groups
			open = "(?P<" + name + ">"
		case c == '$' || c == '@':
			return "", false, t.errorf("Unknown group type")
		default:
			goFlags, err := t.inlineFlags()
			if err != nil {
				return "", false, err
			}
			if t.peek() == ')' {
				t.pos++
				return goFlags, true, nil
			}
			if t.peek() != ':' {
				return "", false, t.errorf("Unknown inline modifier")
			}
			t.pos++
			open = "(?:" + goFlags
		}
	} else {
		t.groups++
	}
	inner, err := t.expr()
	if err != nil {
		return "", false, err
	}
	if t.peek() != ')' {
		return "", false, t.errorf("Unclosed group")
	}
	t.pos++
	t.flags = saved
	return open + inner + ")", false, nil
}

// groupName reads a named group's name and its '>', as Pattern.groupname.
func (t *regexTranslator) groupName() (string, error) {
	start := t.pos
	isLetter := func(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	if !isLetter(t.peek()) {
		return "", t.errorf("capturing group name does not start with a Latin letter")
	}
	for isLetter(t.peek()) || t.peek() >= '0' && t.peek() <= '9' {
		t.pos++
	}
	name := string(t.src[start:t.pos])
	if t.peek() != '>' {
		return "", t.errorf("named capturing group is missing trailing '>'")
	}
	t.pos++
	if _, dup := t.names[name]; dup {
		return "", t.errorf("Named capturing group <%s> is already defined", name)
	}
	return name, nil
}

// inlineFlags reads flags such as i-s (up to ':' or ')'), applies them to
// the translator and returns what Go must be told: only the i flag; we
// translate '.', '^' and '$' ourselves for the others.
func (t *regexTranslator) inlineFlags() (string, error) {
	on := true
	goFlags := ""
	for !t.eof() {
		c := t.peek()
		switch c {
		case ':', ')':
			if goFlags != "" {
				goFlags = "(?" + goFlags + ")"
			}
			return goFlags, nil
		case '-':
			on = false
		case 'i':
			if on {
				goFlags += "i"
			} else {
				goFlags = strings.TrimSuffix(goFlags, "-") + "-i"
			}
		case 'm':
			t.flags.multiline = on
		case 's':
			t.flags.dotall = on
		case 'd':
			t.flags.unixLines = on
		case 'u': // UNICODE_CASE: Go's folding is Unicode already
		case 'x':
			return "", &unsupportedRegexError{"the COMMENTS flag (?x)"}
		case 'U':
			return "", &unsupportedRegexError{"the UNICODE_CHARACTER_CLASS flag (?U)"}
		case 'c':
			return "", &unsupportedRegexError{"the CANON_EQ flag (?c)"}
		default:
			return "", t.errorf("Unknown inline modifier")
		}
		t.pos++
	}
	return "", t.errorf("Unknown inline modifier")
}

// goRegexLiteral writes r so that Go matches it literally, in or out of a
// class.
func goRegexLiteral(r rune) string {
	switch {
	case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'):
		return string(r)
	case r > ' ' && r < 0x7f:
		return `\` + string(r)
	}
	return fmt.Sprintf(`\x{%x}`, r)
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

// escape translates what follows a '\' outside a class.
func (t *regexTranslator) escape() (string, error) {
	if t.eof() {
		return "", t.errorf("Unexpected internal error")
	}
	c := t.src[t.pos]
	switch c {
	case 'A':
		t.pos++
		return `\A`, nil
	case 'z':
		t.pos++
		return `\z`, nil
	case 'B':
		t.pos++
		return `\B`, nil
	case 'b':
		t.pos++
		if t.peek() == '{' {
			return "", &unsupportedRegexError{`the grapheme boundary \b{g}`}
		}
		return `\b`, nil
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "", &unsupportedRegexError{`the backreference \` + string(c)}
	case 'k':
		return "", &unsupportedRegexError{`the backreference \k<name>`}
	case 'G', 'Z', 'R', 'X':
		return "", &unsupportedRegexError{`\` + string(c)}
	case 'N':
		return "", &unsupportedRegexError{`the named character \N{...}`}
	}
	set, ch, err := t.escapeIn(false, false)
	if err != nil {
		return "", err
	}
	if set != nil {
		return set.goClass(), nil
	}
	return goRegexLiteral(ch), nil
}

// escapeIn reads an escape (after its '\') that stands for a character or
// a set of characters, the escapes valid both in and out of classes.
// inRange marks \v as the character \x0B, as Java reads it next to a '-'
// in a class.
func (t *regexTranslator) escapeIn(inClass, inRange bool) (*charSet, rune, error) {
	if t.eof() {
		return nil, 0, t.errorf("Unexpected internal error")
	}
	c := t.src[t.pos]
	t.pos++
	switch c {
	case 'v':
		if inRange {
			return nil, 0x0b, nil
		}
	case 'N':
		return nil, 0, &unsupportedRegexError{`the named character \N{...}`}
	case '0':
		return t.octal()
	case 'x':
		return t.hex()
	case 'u':
		return t.unicode()
	case 'c':
		if t.eof() {
			return nil, 0, t.errorf("Illegal control escape sequence")
		}
		t.pos++
		return nil, t.src[t.pos-1] ^ 64, nil
	case 'a':
		return nil, '\a', nil
	case 'e':
		return nil, 0x1b, nil
	case 'f':
		return nil, '\f', nil
	case 'n':
		return nil, '\n', nil
	case 'r':
		return nil, '\r', nil
	case 't':
		return nil, '\t', nil
	case 'p', 'P':
		s, err := t.property(c == 'P')
		return s, 0, err
	}
	if s := predefinedClass(c); s != nil {
		return s, 0, nil
	}
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		t.pos--
		return nil, 0, t.errorf("Illegal/unsupported escape sequence")
	}
	return nil, c, nil // any other character escaped is itself
}

func isOctal(c rune) bool { return c >= '0' && c <= '7' }

// octal reads \0n, \0nn or \0mnn (m <= 3).
func (t *regexTranslator) octal() (*charSet, rune, error) {
	var d []rune
	for len(d) < 3 && isOctal(t.peek()) {
		d = append(d, t.peek())
		t.pos++
	}
	if len(d) == 3 && d[0] > '3' {
		d = d[:2]
		t.pos--
	}
	if len(d) == 0 {
		return nil, 0, t.errorf("Illegal octal escape sequence")
	}
	n, _ := strconv.ParseInt(string(d), 8, 32)
	return nil, rune(n), nil
}

func isHex(c rune) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// hex reads \xhh or \x{h...h}.
func (t *regexTranslator) hex() (*charSet, rune, error) {
	if t.pos+1 < len(t.src) && isHex(t.src[t.pos]) && isHex(t.src[t.pos+1]) {
		n, _ := strconv.ParseInt(string(t.src[t.pos:t.pos+2]), 16, 32)
		t.pos += 2
		return nil, rune(n), nil
	}
	if t.peek() == '{' && t.pos+1 < len(t.src) && isHex(t.src[t.pos+1]) {
		t.pos++
		n := int64(0)
		for isHex(t.peek()) {
			v, _ := strconv.ParseInt(string(t.peek()), 16, 32)
			n = n<<4 + v
			if n > unicode.MaxRune {
				return nil, 0, t.errorf("Hexadecimal codepoint is too big")
			}
			t.pos++
		}
		if t.peek() != '}' {
			return nil, 0, t.errorf("Unclosed hexadecimal escape sequence")
		}
		t.pos++
		return nil, rune(n), nil
	}
	return nil, 0, t.errorf("Illegal hexadecimal escape sequence")
}

// unicode reads \uhhhh, joining a surrogate pair written as two escapes.
func (t *regexTranslator) unicode() (*charSet, rune, error) {
	read4 := func() (rune, bool) {
		if t.pos+4 > len(t.src) {
			return 0, false
		}
		for _, c := range t.src[t.pos : t.pos+4] {
			if !isHex(c) {
				return 0, false
			}
		}
		n, _ := strconv.ParseInt(string(t.src[t.pos:t.pos+4]), 16, 32)
		t.pos += 4
		return rune(n), true
	}
	n, ok := read4()
	if !ok {
		return nil, 0, t.errorf("Illegal Unicode escape sequence")
	}
	if n >= 0xd800 && n < 0xdc00 && t.pos+1 < len(t.src) && t.src[t.pos] == '\\' && t.src[t.pos+1] == 'u' {
		save := t.pos
		t.pos += 2
		if lo, ok := read4(); ok && lo >= 0xdc00 && lo < 0xe000 {
			return nil, (n-0xd800)<<10 + (lo - 0xdc00) + 0x10000, nil
		}
		t.pos = save
	}
	if n >= 0xd800 && n < 0xe000 {
		return nil, 0, &unsupportedRegexError{fmt.Sprintf(`the lone surrogate \u%04x`, n)}
	}
	return nil, n, nil
}

// class translates a character class after its '[', as Pattern.clazz:
// a ']' right after the '[' (or "[^") is a literal, a '-' makes a range
// between two characters, and nested classes and && intersections, which
// RE2 lacks, are refused.
func (t *regexTranslator) class() (string, error) {
	neg := false
	if t.peek() == '^' {
		t.pos++
		neg = true
	}
	var items strings.Builder
	for first := true; ; first = false {
		if t.eof() {
			return "", t.errorf("Unclosed character class")
		}
		c := t.peek()
		switch {
		case c == '[':
			return "", &unsupportedRegexError{"a nested character class [...[...]...]"}
		case c == '&' && t.pos+1 < len(t.src) && t.src[t.pos+1] == '&':
			return "", &unsupportedRegexError{"a character class intersection [...&&...]"}
		case c == ']' && !first:
			t.pos++
			if neg {
				return "[^" + items.String() + "]", nil
			}
			return "[" + items.String() + "]", nil
		}
		item, err := t.classItem()
		if err != nil {
			return "", err
		}
		items.WriteString(item)
	}
}

// classItem reads one member of a class: a character, a range or a set.
func (t *regexTranslator) classItem() (string, error) {
	var ch rune
	if t.peek() == '\\' {
		t.pos++
		inRange := t.pos+1 < len(t.src) && t.src[t.pos+1] == '-'
		set, r, err := t.escapeIn(true, inRange)
		if err != nil {
			return "", err
		}
		if set != nil {
			return set.items(), nil
		}
		ch = r
	} else {
		ch = t.src[t.pos]
		t.pos++
	}
	if t.peek() != '-' || t.pos+1 >= len(t.src) || t.src[t.pos+1] == '[' || t.src[t.pos+1] == ']' {
		return goRegexLiteral(ch), nil
	}
	t.pos++ // '-'
	end := t.src[t.pos]
	t.pos++
	if end == '\\' {
		set, r, err := t.escapeIn(true, true)
		if err != nil {
			return "", err
		}
		end = r
		if set != nil {
			end = -1
		}
	}
	if end < ch {
		return "", t.errorf("Illegal character range")
	}
	return goRegexLiteral(ch) + "-" + goRegexLiteral(end), nil
}

// charSet is a set of characters: inclusive ranges (lo, hi pairs), or one
// of Go's Unicode classes (\p{goName}, \P{goName} when neg).
type charSet struct {
	ranges []rune
	goName string
	neg    bool
}

func (s *charSet) complement() *charSet {
	if s.goName != "" {
		return &charSet{goName: s.goName, neg: !s.neg}
	}
	var out []rune
	next := rune(0)
	for i := 0; i < len(s.ranges); i += 2 {
		if s.ranges[i] > next {
			out = append(out, next, s.ranges[i]-1)
		}
		next = s.ranges[i+1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, next, unicode.MaxRune)
	}
	return &charSet{ranges: out}
}

// items is the set inside a Go class.
func (s *charSet) items() string {
	if s.goName != "" {
		if s.neg {
			return `\P{` + s.goName + `}`
		}
		return `\p{` + s.goName + `}`
	}
	var b strings.Builder
	for i := 0; i < len(s.ranges); i += 2 {
		b.WriteString(goRegexLiteral(s.ranges[i]))
		if s.ranges[i+1] != s.ranges[i] {
			b.WriteString("-" + goRegexLiteral(s.ranges[i+1]))
		}
	}
	return b.String()
}

// goClass is the set on its own.
func (s *charSet) goClass() string {
	if s.goName != "" {
		return s.items()
	}
	if len(s.ranges) == 0 {
		return `[^\x00-\x{10ffff}]`
	}
	return "[" + s.items() + "]"
}

func ranges(pairs ...rune) *charSet { return &charSet{ranges: pairs} }

// predefinedClass is \d, \w, \s, \h, \v and their complements, with
// Java's ASCII meanings (\s includes \x0B, which RE2's \s lacks; \v is
// vertical whitespace, not RE2's \x0B).
func predefinedClass(c rune) *charSet {
	var s *charSet
	switch unicode.ToLower(c) {
	case 'd':
		s = ranges('0', '9')
	case 'w':
		s = ranges('0', '9', 'A', 'Z', '_', '_', 'a', 'z')
	case 's':
		s = ranges('\t', '\r', ' ', ' ')
	case 'h':
		s = ranges(' ', ' ', 0xa0, 0xa0, 0x1680, 0x1680, 0x180e, 0x180e, 0x2000, 0x200a, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000)
	case 'v':
		s = ranges('\n', '\r', 0x85, 0x85, 0x2028, 0x2029)
	default:
		return nil
	}
	if unicode.IsUpper(c) {
		return s.complement()
	}
	return s
}

// posixClasses are Java's ASCII POSIX classes (\p{Alpha}...).
var posixClasses = map[string]*charSet{
	"Lower":  ranges('a', 'z'),
	"Upper":  ranges('A', 'Z'),
	"ASCII":  ranges(0, 0x7f),
	"Alpha":  ranges('A', 'Z', 'a', 'z'),
	"Digit":  ranges('0', '9'),
	"Alnum":  ranges('0', '9', 'A', 'Z', 'a', 'z'),
	"Punct":  ranges('!', '/', ':', '@', '[', '`', '{', '~'),
	"Graph":  ranges('!', '~'),
	"Print":  ranges(' ', '~'),
	"Blank":  ranges('\t', '\t', ' ', ' '),
	"Cntrl":  ranges(0, 0x1f, 0x7f, 0x7f),
	"XDigit": ranges('0', '9', 'A', 'F', 'a', 'f'),
	"Space":  ranges('\t', '\r', ' ', ' '),
	"L1":     ranges(0, 0xff),
	"all":    ranges(0, unicode.MaxRune),
}

// goCategories are the Unicode general categories Java and Go mean alike.
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

// property translates \p{...} or \P{...} (after the p), resolving the
// name as Pattern.family does.
func (t *regexTranslator) property(neg bool) (*charSet, error) {
	var name string
	if t.peek() != '{' {
		if t.eof() {
			return nil, t.errorf("Unknown character property name {}")
		}
		name = string(t.src[t.pos])
		t.pos++
	} else {
		end := t.pos
		for end < len(t.src) && t.src[end] != '}' {
			end++
		}
		if end >= len(t.src) {
			return nil, t.errorf("Unclosed character family")
		}
		name = string(t.src[t.pos+1 : end])
		t.pos = end + 1
		if name == "" {
			return nil, t.errorf("Empty character family")
		}
	}
	s, err := t.resolveProperty(name)
	if err != nil || !neg {
		return s, err
	}
	return s.complement(), nil
}

func (t *regexTranslator) resolveProperty(name string) (*charSet, error) {
	if k, v, ok := strings.Cut(name, "="); ok {
		var s *charSet
		switch strings.ToLower(k) {
		case "sc", "script":
			s = goScript(v)
		case "gc", "general_category":
			s = javaPropertyClass(v)
		case "blk", "block":
			return nil, &unsupportedRegexError{`the Unicode block \p{` + name + `}`}
		}
		if s == nil {
			return nil, t.errorf("Unknown Unicode property {name=<%s>, value=<%s>}", strings.ToLower(k), v)
		}
		return s, nil
	}
	var s *charSet
	switch {
	case strings.HasPrefix(name, "In"):
		return nil, &unsupportedRegexError{`the Unicode block \p{` + name + `}`}
	case strings.HasPrefix(name, "Is"):
		short := name[2:]
		if noGoTable[short] {
			return nil, &unsupportedRegexError{`\p{` + name + `}`}
		}
		for _, p := range javaBinaryProperties {
			if strings.ToUpper(short) == p {
				return nil, &unsupportedRegexError{`the Unicode property \p{` + name + `}`}
			}
		}
		if s = javaPropertyClass(short); s == nil {
			s = goScript(short)
		}
	case strings.HasPrefix(name, "java") || noGoTable[name]:
		return nil, &unsupportedRegexError{`\p{` + name + `}`}
	default:
		s = javaPropertyClass(name)
	}
	if s == nil {
		return nil, t.errorf("Unknown character property name {%s}", name)
	}
	return s, nil
}

// javaPropertyClass is a general category or POSIX class by Java's name;
// nil for a name it is not.
func javaPropertyClass(name string) *charSet {
	if goCategories[name] {
		return &charSet{goName: name}
	}
	return posixClasses[name]
}

// goScript is a Unicode script by a name any case, as Java accepts it.
func goScript(name string) *charSet {
	for k := range unicode.Scripts {
		if strings.EqualFold(k, name) {
			return &charSet{goName: k}
		}
	}
	return nil
}
