package transforms

import (
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/javaregex"
)

// RegexRouter: Connect's RegexRouter, which renames a record's topic when
// the whole topic matches regex: the first match of regex in the topic is
// replaced by replacement (Matcher.matches, then Matcher.replaceFirst),
// with Java's $n, ${name} and \ escapes.
//
// regex is a Java regular expression, run on Go's RE2 (internal/javaregex, as TopicNameMatches' pattern): a
// pattern RE2 cannot run, such as one with a backreference or lookaround,
// is refused at validation, naming the key.
var _ = addTransform(connectors.TransformPlugin{Class: pkg + "RegexRouter", New: func() connectors.Transform { return &regexRouter{} }})

func regexRouterConfig() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: "regex", Type: connectors.TypeString, Required: true, Importance: connectors.High,
			Doc: "Regular expression to use for matching.", Validate: validJavaRegex}).
		Define(connectors.ConfigKey{Name: "replacement", Type: connectors.TypeString, Required: true, Importance: connectors.High,
			Doc: "Replacement string."})
}

// validJavaRegex is Connect's RegexValidator, refusing also the patterns
// RE2 cannot run. A pattern Java refuses says "Invalid regex", as
// Connect's does; one RE2 cannot run names the construct.
func validJavaRegex(v string) error {
	_, err := javaregex.Compile(javaTrim(v))
	return err
}

type regexRouter struct {
	regex       *javaregex.Regex
	replacement javaReplacement
	// routed remembers the topics already routed: a task writes to few
	// topics, and the answer for one never changes, so the regex runs once
	// per topic rather than once per record. Bounded, for a task that
	// writes to very many.
	routed map[string]routing
}

// routing is what RegexRouter does with one topic.
type routing struct {
	matches bool
	topic   string
	err     error
}

// maxRouted bounds regexRouter.routed.
const maxRouted = 1024

func (t *regexRouter) Config() *connectors.ConfigDef { return regexRouterConfig() }

func (t *regexRouter) Configure(props map[string]string) error {
	pattern, _ := configString(props, "regex")
	re, err := javaregex.Compile(pattern)
	if err != nil {
		return keyError("regex", pattern, err.Error())
	}
	t.regex = re
	replacement, _ := configString(props, "replacement")
	t.replacement = parseJavaReplacement(replacement, re)
	return nil
}

func (t *regexRouter) Apply(r *connectors.Record) (*connectors.Record, error) {
	to, ok := t.routed[r.Topic]
	if !ok {
		to = t.route(r.Topic)
		if t.routed == nil || len(t.routed) >= maxRouted {
			t.routed = map[string]routing{}
		}
		t.routed[r.Topic] = to
	}
	switch {
	case !to.matches:
		return r, nil
	case to.err != nil:
		return nil, to.err
	}
	r.Topic = to.topic
	return r, nil
}

// route is Connect's RegexRouter on one topic: the whole topic must match,
// then the first match is replaced.
func (t *regexRouter) route(topic string) routing {
	if !t.regex.Whole.MatchString(topic) {
		return routing{}
	}
	to, err := t.replacement.replaceFirst(t.regex, topic)
	return routing{matches: true, topic: to, err: err}
}

func (t *regexRouter) Close() error { return nil }

// javaReplacement is a replacement string as Matcher.appendReplacement
// reads it: literal text and group references. Java reads it on each
// replacement and throws on a bad one; we read it once and return the
// same error on each replacement, so a bad replacement fails exactly the
// records whose topic matches, as in Connect.
type javaReplacement struct {
	parts []replacementPart
	err   error
}

// replacementPart is literal text, or group's text when group >= 0.
type replacementPart struct {
	text  string
	group int
}

// parseJavaReplacement reads replacement as appendExpandedReplacement: \c
// is c; $n takes as many digits as make a group number the pattern has
// (the first digit always counts); ${name} names a group.
func parseJavaReplacement(replacement string, re *javaregex.Regex) javaReplacement {
	groups := re.Find.NumSubexp()
	var parts []replacementPart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, replacementPart{text: lit.String(), group: -1})
			lit.Reset()
		}
	}
	fail := func(format string, args ...any) javaReplacement {
		return javaReplacement{err: fmt.Errorf(format, args...)}
	}
	s := []rune(replacement)
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return fail("character to be escaped is missing")
			}
			lit.WriteRune(s[i+1])
			i += 2
		case '$':
			i++
			if i == len(s) {
				return fail("Illegal group reference: group index is missing")
			}
			var ref int
			var err error
			if ref, i, err = groupReference(s, i, groups, re.Names); err != nil {
				return javaReplacement{err: err}
			}
			flush()
			parts = append(parts, replacementPart{group: ref})
		default:
			lit.WriteRune(c)
			i++
		}
	}
	flush()
	return javaReplacement{parts: parts}
}

// groupReference reads the reference after a '$' at s[i], returning the
// group and the index after it.
func groupReference(s []rune, i, groups int, names map[string]int) (int, int, error) {
	isDigit := func(c rune) bool { return c >= '0' && c <= '9' }
	if s[i] == '{' {
		i++
		begin := i
		for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || isDigit(s[i])) {
			i++
		}
		if begin == i {
			return 0, 0, fmt.Errorf("named capturing group has 0 length name")
		}
		if i == len(s) || s[i] != '}' {
			return 0, 0, fmt.Errorf("named capturing group is missing trailing '}'")
		}
		name := string(s[begin:i])
		if isDigit(s[begin]) {
			return 0, 0, fmt.Errorf("capturing group name {%s} starts with digit character", name)
		}
		n, ok := names[name]
		if !ok {
			return 0, 0, fmt.Errorf("No group with name {%s}", name)
		}
		return n, i + 1, nil
	}
	if !isDigit(s[i]) {
		return 0, 0, fmt.Errorf("Illegal group reference")
	}
	ref := int(s[i] - '0')
	i++
	for i < len(s) && isDigit(s[i]) {
		next := ref*10 + int(s[i]-'0')
		if next > groups {
			break
		}
		ref = next
		i++
	}
	if ref > groups {
		return 0, 0, fmt.Errorf("No group %d", ref)
	}
	return ref, i, nil
}

// replaceFirst is Matcher.replaceFirst: the first match of re in s (Java
// and RE2 pick the same leftmost-first match) replaced by the expansion.
func (j javaReplacement) replaceFirst(re *javaregex.Regex, s string) (string, error) {
	m := re.Find.FindStringSubmatchIndex(s)
	if m == nil {
		return s, nil
	}
	if j.err != nil {
		return "", j.err
	}
	var b strings.Builder
	b.WriteString(s[:m[0]])
	for _, p := range j.parts {
		if p.group < 0 {
			b.WriteString(p.text)
		} else if m[2*p.group] >= 0 {
			b.WriteString(s[m[2*p.group]:m[2*p.group+1]])
		}
	}
	b.WriteString(s[m[1]:])
	return b.String(), nil
}
