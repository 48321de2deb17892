// Package jaas reads Java's JAAS login configuration: the file that a JVM
// takes from -Djava.security.auth.login.config (named sections of login
// module entries), and the single-section text of Kafka's sasl.jaas.config.
// Both are parsed as Java's tokenizer reads them, so that a file written
// for Kafka Connect means the same to Sluice:
//
//	KafkaConnect {
//	  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
//	  file="/etc/connect/users.properties";
//	};
//
// Comments are // to the end of the line and /* ... */. Values are words
// ([A-Za-z0-9._$*-]) or strings quoted with " or ', with Java's escapes.
package jaas

import (
	"fmt"
	"strings"
)

// Entry is one login module line of a section.
type Entry struct {
	// Module is the login module's class name.
	Module string
	// Flag is required, requisite, sufficient or optional (lower case).
	Flag string
	// Options are the module's name=value options.
	Options map[string]string
}

// Flags are JAAS's control flags.
var Flags = []string{"required", "requisite", "sufficient", "optional"}

// ParseFile parses a JAAS configuration file into its sections by name.
// A name given twice is refused, as Java refuses it.
func ParseFile(text string) (map[string][]Entry, error) {
	p := &parser{lx: lexer{src: text}}
	sections := map[string][]Entry{}
	for {
		tok, err := p.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			return sections, nil
		}
		if tok.kind != tokWord && tok.kind != tokString {
			return nil, p.errorf(tok, "expected a section name, found %s", tok)
		}
		name := tok.text
		if _, dup := sections[name]; dup {
			return nil, p.errorf(tok, "section %q is given twice", name)
		}
		if err := p.expect('{'); err != nil {
			return nil, err
		}
		entries, err := p.entries(true)
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", name, err)
		}
		if err := p.expect(';'); err != nil {
			return nil, fmt.Errorf("section %s: %w", name, err)
		}
		sections[name] = entries
	}
}

// ParseEntries parses login module entries without a section around them,
// as Kafka's sasl.jaas.config holds them: `Module flag k="v" ...;` once or
// more.
func ParseEntries(text string) ([]Entry, error) {
	p := &parser{lx: lexer{src: text}}
	entries, err := p.entries(false)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("no login module entry: expected `LoginModuleClass required option=\"value\";`")
	}
	return entries, nil
}

type parser struct {
	lx     lexer
	peeked *token
}

func (p *parser) next() (token, error) {
	if p.peeked != nil {
		t := *p.peeked
		p.peeked = nil
		return t, nil
	}
	return p.lx.next()
}

func (p *parser) peek() (token, error) {
	if p.peeked == nil {
		t, err := p.lx.next()
		if err != nil {
			return t, err
		}
		p.peeked = &t
	}
	return *p.peeked, nil
}

func (p *parser) errorf(t token, format string, args ...any) error {
	return fmt.Errorf("line %d: %s", t.line, fmt.Sprintf(format, args...))
}

func (p *parser) expect(punct byte) error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t.kind != tokPunct || t.text[0] != punct {
		return p.errorf(t, "expected %q, found %s", punct, t)
	}
	return nil
}

// entries reads login module entries up to the section's closing brace
// (inSection) or the end of the text.
func (p *parser) entries(inSection bool) ([]Entry, error) {
	var out []Entry
	for {
		t, err := p.next()
		if err != nil {
			return nil, err
		}
		switch {
		case inSection && t.kind == tokPunct && t.text == "}":
			return out, nil
		case !inSection && t.kind == tokEOF:
			return out, nil
		case t.kind == tokEOF:
			return nil, p.errorf(t, "the section has no closing '}'")
		case t.kind != tokWord:
			return nil, p.errorf(t, "expected a login module class name, found %s", t)
		}
		e, err := p.entry(t.text)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
}

// entry reads the rest of an entry after its module name: the flag, the
// options and the closing ';'.
func (p *parser) entry(module string) (Entry, error) {
	e := Entry{Module: module, Options: map[string]string{}}
	t, err := p.next()
	if err != nil {
		return e, err
	}
	flag := strings.ToLower(t.text)
	if t.kind != tokWord || !isFlag(flag) {
		return e, p.errorf(t, "login module %s: expected a control flag (%s), found %s", module, strings.Join(Flags, ", "), t)
	}
	e.Flag = flag
	for {
		t, err := p.next()
		if err != nil {
			return e, err
		}
		if t.kind == tokPunct && t.text == ";" {
			return e, nil
		}
		if t.kind != tokWord {
			return e, p.errorf(t, "login module %s: expected an option name or ';', found %s", module, t)
		}
		name := t.text
		if err := p.expect('='); err != nil {
			return e, fmt.Errorf("login module %s, option %s: %w", module, name, err)
		}
		v, err := p.next()
		if err != nil {
			return e, err
		}
		if v.kind != tokWord && v.kind != tokString {
			return e, p.errorf(v, "login module %s, option %s: expected a value, found %s", module, name, v)
		}
		if strings.Contains(v.text, "${") {
			// Java expands ${system.property} here; Sluice has no JVM
			// system properties to expand, and a literal would be wrong.
			return e, p.errorf(v, "login module %s, option %s: ${...} system property expansion is not supported; give the value itself", module, name)
		}
		e.Options[name] = v.text
	}
}

func isFlag(s string) bool {
	for _, f := range Flags {
		if s == f {
			return true
		}
	}
	return false
}
