package javaregex

import (
	"errors"
	"strings"
	"testing"
)

// jpSubjects are the texts TestJavaPattern matches each pattern against.
var jpSubjects = []string{``, `a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", `abc`, `ABC`, `aa`, `aaa`, `aaaaaa`, `x.y`, `xzy`, "\n", "\r", "\u000b", "\t", ` `, "\u00a0", "\u2028", "\u0085", `-`, `]`, `[`, `&`, `1`, `12`, "\u0663", `topic-1`, "\u001b", "\u0001", "\U0001f600", `{2}`, `a-b`, `_`, `b`}

// TestJavaPattern pins Compile against java.util.regex: each
// pattern matches exactly the subjects Java's Matcher.matches does (as
// Java 17 and 25 do). They cover what the translation changes: Java's
// \s, \h, \v, \R and '.', ASCII-only case insensitivity, quotations,
// classes that start with ']' or hold a '-', Java's escapes, POSIX and
// Unicode properties, and repetitions RE2 cannot take as written.
func TestJavaPattern(t *testing.T) {
	tests := []struct {
		pattern string
		matches []string
	}{
		{`a`, []string{`a`}},
		{`a*`, []string{``, `a`, `aa`, `aaa`, `aaaaaa`}},
		{`a{2}{3}`, []string{`aa`}},
		{`a*{2}`, []string{``, `a`, `aa`, `aaa`, `aaaaaa`}},
		{`(?i)k`, []string{`k`, `K`}},
		{`(?i)\u00e9`, []string{"\u00e9"}},
		{`(?i)[a-c]`, []string{`a`, `A`, `b`}},
		{`(?i)[Z-a]`, []string{`a`, `A`, `]`, `[`, `_`}},
		{`(?i)[^a]`, []string{`k`, `K`, "\u212a", "\u00e9", "\u00c9", "\n", "\r", "\u000b", "\t", ` `, "\u00a0", "\u2028", "\u0085", `-`, `]`, `[`, `&`, `1`, "\u0663", "\u001b", "\u0001", "\U0001f600", `_`, `b`}},
		{`(?i)\x41`, []string{`a`, `A`}},
		{`(?i)\p{Lower}`, []string{`a`, `A`, `k`, `K`, `b`}},
		{`(?i)\p{Lu}`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", `b`}},
		{`(?i:a)A`, []string{}},
		{`(?i)a(?-i)a`, []string{`aa`}},
		{`.`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", "\u000b", "\t", ` `, "\u00a0", `-`, `]`, `[`, `&`, `1`, "\u0663", "\u001b", "\u0001", "\U0001f600", `_`, `b`}},
		{`(?s).`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", "\n", "\r", "\u000b", "\t", ` `, "\u00a0", "\u2028", "\u0085", `-`, `]`, `[`, `&`, `1`, "\u0663", "\u001b", "\u0001", "\U0001f600", `_`, `b`}},
		{`\s`, []string{"\n", "\r", "\u000b", "\t", ` `}},
		{`[\s]`, []string{"\n", "\r", "\u000b", "\t", ` `}},
		{`\S`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", "\u00a0", "\u2028", "\u0085", `-`, `]`, `[`, `&`, `1`, "\u0663", "\u001b", "\u0001", "\U0001f600", `_`, `b`}},
		{`[^\s]`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", "\u00a0", "\u2028", "\u0085", `-`, `]`, `[`, `&`, `1`, "\u0663", "\u001b", "\u0001", "\U0001f600", `_`, `b`}},
		{`[\S]`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", "\u00a0", "\u2028", "\u0085", `-`, `]`, `[`, `&`, `1`, "\u0663", "\u001b", "\u0001", "\U0001f600", `_`, `b`}},
		{`\h`, []string{"\t", ` `, "\u00a0"}},
		{`\H`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", "\n", "\r", "\u000b", "\u2028", "\u0085", `-`, `]`, `[`, `&`, `1`, "\u0663", "\u001b", "\u0001", "\U0001f600", `_`, `b`}},
		{`\v`, []string{"\n", "\r", "\u000b", "\u2028", "\u0085"}},
		{`[\v]`, []string{"\n", "\r", "\u000b", "\u2028", "\u0085"}},
		{`\V`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", "\t", ` `, "\u00a0", `-`, `]`, `[`, `&`, `1`, "\u0663", "\u001b", "\u0001", "\U0001f600", `_`, `b`}},
		{`\R`, []string{"\n", "\r", "\u000b", "\u2028", "\u0085"}},
		{`x.y`, []string{`x.y`, `xzy`}},
		{`\Qx.y\E`, []string{`x.y`}},
		{`\Qab\E*`, []string{`a`}},
		{`[\Q]\E]`, []string{`]`}},
		{`[]a]`, []string{`a`, `]`}},
		{`[^]a]`, []string{`A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", "\n", "\r", "\u000b", "\t", ` `, "\u00a0", "\u2028", "\u0085", `-`, `[`, `&`, `1`, "\u0663", "\u001b", "\u0001", "\U0001f600", `_`, `b`}},
		{`[\d-z]`, []string{`-`, `1`}},
		{`[a-]`, []string{`a`, `-`}},
		{`[-a]`, []string{`a`, `-`}},
		{`(?)a`, []string{`a`}},
		{`\x{1F600}`, []string{"\U0001f600"}},
		{`\uD83D\uDE00`, []string{"\U0001f600"}},
		{`\u00e9`, []string{"\u00e9"}},
		{`\0141`, []string{`a`}},
		{`\0377`, []string{}},
		{`\c[`, []string{"\u001b"}},
		{`\e`, []string{"\u001b"}},
		{`\ca`, []string{}},
		{`\p{Alpha}+`, []string{`a`, `A`, `k`, `K`, `abc`, `ABC`, `aa`, `aaa`, `aaaaaa`, `xzy`, `b`}},
		{`\p{Punct}`, []string{`-`, `]`, `[`, `&`, `_`}},
		{`\P{L}`, []string{"\n", "\r", "\u000b", "\t", ` `, "\u00a0", "\u2028", "\u0085", `-`, `]`, `[`, `&`, `1`, "\u0663", "\u001b", "\u0001", "\U0001f600", `_`}},
		{`\pL`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", `b`}},
		{`\p{IsL}`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", `b`}},
		{`\p{Lu}`, []string{`A`, `K`, "\u212a", "\u00c9"}},
		{`\p{IsLatin}+`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", `abc`, `ABC`, `aa`, `aaa`, `aaaaaa`, `xzy`, `b`}},
		{`\p{sc=Latin}`, []string{`a`, `A`, `k`, `K`, "\u212a", "\u00e9", "\u00c9", `b`}},
		{`\p{gc=Ll}`, []string{`a`, `k`, "\u00e9", `b`}},
		{`\p{Space}`, []string{"\n", "\r", "\u000b", "\t", ` `}},
		{`\p{XDigit}+`, []string{`a`, `A`, `abc`, `ABC`, `aa`, `aaa`, `aaaaaa`, `1`, `12`, `b`}},
		{`[\p{Lower}\d]+`, []string{`a`, `k`, `abc`, `aa`, `aaa`, `aaaaaa`, `xzy`, `1`, `12`, `b`}},
		{`\d+`, []string{`1`, `12`}},
		{`\w+`, []string{`a`, `A`, `k`, `K`, `abc`, `ABC`, `aa`, `aaa`, `aaaaaa`, `xzy`, `1`, `12`, `_`, `b`}},
		{`\W`, []string{"\u212a", "\u00e9", "\u00c9", "\n", "\r", "\u000b", "\t", ` `, "\u00a0", "\u2028", "\u0085", `-`, `]`, `[`, `&`, "\u0663", "\u001b", "\u0001", "\U0001f600"}},
		{`^a$`, []string{`a`}},
		{`a|`, []string{``, `a`}},
		{`|a`, []string{``, `a`}},
		{`^*a`, []string{`a`}},
		{`\b{2}a`, []string{`a`}},
		{`(a)(?<n>b)?`, []string{`a`}},
		{`topic-\d`, []string{`topic-1`}},
		{`[a-c&]`, []string{`a`, `&`, `b`}},
		{`\&`, []string{`&`}},
		{`\#`, []string{}},
		{`\_`, []string{`_`}},
		{`\-`, []string{`-`}},
		{`\]`, []string{`]`}},
		{`\u00e9|\t`, []string{"\u00e9", "\t"}},
		{`a{0}`, []string{``}},
		{`a{1,2}b?`, []string{`a`, `aa`}},
		{`(?:)`, []string{``}},
		{`()`, []string{``}},
		{`x{0,0}`, []string{``}},
	}
	for _, tt := range tests {
		jre, err := Compile(tt.pattern)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.pattern, err)
			continue
		}
		re := jre.Whole
		var got []string
		for _, s := range jpSubjects {
			if re.MatchString(s) {
				got = append(got, s)
			}
		}
		if strings.Join(got, "|") != strings.Join(tt.matches, "|") {
			t.Errorf("%q (as %s) matches %q, want %q", tt.pattern, re, got, tt.matches)
		}
	}
}

// TestJavaPatternRefused: what Java refuses is refused as invalid; what
// Java takes and RE2 cannot do is refused, naming it.
func TestJavaPatternRefused(t *testing.T) {
	tests := []struct {
		pattern string
		invalid bool
		want    string
	}{
		{"[", true, "Unclosed character class"},
		{"[]", true, "Unclosed character class"},
		{"a{", true, "Illegal repetition"},
		{"a{,3}", true, "Illegal repetition"},
		{"x{2,1}", true, "Illegal repetition range"},
		{"x{a}", true, "Illegal repetition"},
		{"*a", true, "Dangling meta character '*'"},
		{"a**", true, "Dangling meta character '*'"},
		{"a|*", true, "Dangling meta character '*'"},
		{"(?i)*", true, "Dangling meta character '*'"},
		{`\Q\E*`, true, "Dangling meta character '*'"},
		{"(a", true, "Unclosed group"},
		{"a)", true, "Unmatched closing ')'"},
		{`\y`, true, "Illegal/unsupported escape sequence"},
		{`[\b]`, true, "Illegal/unsupported escape sequence"},
		{`\0`, true, "Illegal octal escape sequence"},
		{`\x4`, true, "Illegal hexadecimal escape sequence"},
		{`\u12`, true, "Illegal Unicode escape sequence"},
		{`\`, true, "Unexpected internal error"},
		{"[z-a]", true, "Illegal character range"},
		{`[a-\d]`, true, "Illegal character range"},
		{"(?P<n>a)", true, "Unknown inline modifier"},
		{"(?#c)", true, "Unknown inline modifier"},
		{"(?<n_1>a)", true, "named capturing group is missing trailing '>'"},
		{"(?<n>a)(?<n>b)", true, "Named capturing group <n> is already defined"},
		{`(a)\1`, false, "backreferences"},
		{`(?<n>a)\k<n>`, false, "named backreferences"},
		{"(?=a)", false, "lookahead or lookbehind"},
		{"(?<!a)b", false, "lookahead or lookbehind"},
		{"(?>a)", false, "atomic groups"},
		{"a++", false, "possessive quantifiers (++)"},
		{"a{2}+", false, "possessive quantifiers ({2}+)"},
		{"a{1001}", false, "repetitions beyond 1000"},
		{"[a[b]]", false, "character class unions"},
		{"[a-z&&[^aeiou]]", false, "character class intersections"},
		{`\G`, false, `\G`},
		{`a\Z`, false, `\Z`},
		{`\X`, false, "grapheme clusters"},
		{`\b{g}`, false, "grapheme boundaries"},
		{`\N{LATIN SMALL LETTER A}`, false, "characters by name"},
		{`\p{InGreek}`, false, `\p{InGreek}`},
		{`\p{IsAlphabetic}`, false, `\p{IsAlphabetic}`},
		{`\p{javaLowerCase}`, false, `\p{javaLowerCase}`},
		{`(?i)\P{Lu}`, false, `\P{Lu} with (?i)`},
		{"(?x)a b", false, "the inline flag x"},
		{"(?u)a", false, "the inline flag u"},
		{"(?U)a", false, "the inline flag U"},
		{"(?d)a", false, "the inline flag d"},
		{`\uD83D`, false, "a lone surrogate"},
	}
	for _, tt := range tests {
		_, err := Compile(tt.pattern)
		var pe *Error
		if !errors.As(err, &pe) || pe.invalid != tt.invalid || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%q) error = %v, want invalid=%v and %q", tt.pattern, err, tt.invalid, tt.want)
		}
	}
}

// TestJavaPatternRE2Limits: a pattern Java takes that is too large for RE2
// is refused as RE2's limit, not as invalid.
func TestJavaPatternRE2Limits(t *testing.T) {
	_, err := Compile("((a{1000}){1000}){1000}")
	var pe *Error
	if !errors.As(err, &pe) || pe.invalid {
		t.Errorf("error = %v, want RE2's size limit", err)
	}
}

// TestJavaRegexMerged pins what the one translator took from each of the
// two it replaced: groups numbered and named as Java numbers them (for
// RegexRouter's $n and ${name}), \Q...\E removed before parsing as
// Pattern.RemoveQEQuoting does (so a quoted character can start a range),
// and a \p name Java does not know refused as invalid, not as RE2's lack.
func TestJavaRegexMerged(t *testing.T) {
	re, err := Compile(`(?:x)(?<a>y)((z))`)
	if err != nil {
		t.Fatal(err)
	}
	if re.Names["a"] != 1 || re.Find.NumSubexp() != 3 || !re.Whole.MatchString("xyz") {
		t.Errorf("groups %d, names %v", re.Find.NumSubexp(), re.Names)
	}
	if re, err := Compile(`[\Qa\E-c]`); err != nil || !re.Whole.MatchString("b") {
		t.Errorf(`[\Qa\E-c]: %v, want a range a-c`, err)
	}
	_, err = Compile(`\p{Latin}`)
	var pe *Error
	if !errors.As(err, &pe) || !pe.invalid || !strings.Contains(err.Error(), "Unknown character property name {Latin}") {
		t.Errorf(`\p{Latin}: %v, want Java's unknown property`, err)
	}
}
