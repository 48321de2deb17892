// Package jaas reads Java's JAAS login configuration: the single-section
// text of Kafka's sasl.jaas.config (ParseEntries) and the file that a JVM
// takes from -Djava.security.auth.login.config, whose named sections hold
// the same entries (ParseFile):
//
//	KafkaConnect {
//	  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
//	  file="/etc/connect/users.properties";
//	};
//
// Both are tokenized as Java's StreamTokenizer does, so '/' starts a
// comment: paths are given quoted, as Java requires.
package jaas

import (
	"fmt"
	"strings"
)

// ParseFile parses a JAAS configuration file into its sections by name
// (`Name { entry; ... };`). A name given twice is refused, as Java
// refuses it.
func ParseFile(text string) (map[string][]Entry, error) {
	tz := &tokenizer{src: []rune(text)}
	sections := map[string][]Entry{}
	for {
		tok := tz.next()
		if tok.kind == tokEOF {
			return sections, nil
		}
		if !tok.hasText() || tok.text == "" {
			return nil, fmt.Errorf("expected a section name, found %s", tok.describe())
		}
		name := tok.text
		if _, dup := sections[name]; dup {
			return nil, fmt.Errorf("section %q is given twice", name)
		}
		if t := tz.next(); t.kind != tokOrdinary || t.char != '{' {
			return nil, fmt.Errorf("section %s: expected '{', found %s", name, t.describe())
		}
		entries, err := sectionEntries(tz)
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", name, err)
		}
		if t := tz.next(); t.kind != tokOrdinary || t.char != ';' {
			return nil, fmt.Errorf("section %s: expected ';' after '}', found %s", name, t.describe())
		}
		sections[name] = entries
	}
}

// sectionEntries reads entries up to the section's closing brace.
func sectionEntries(tz *tokenizer) ([]Entry, error) {
	var out []Entry
	for {
		tok := tz.next()
		switch {
		case tok.kind == tokOrdinary && tok.char == '}':
			return out, nil
		case tok.kind == tokEOF:
			return nil, fmt.Errorf("no closing '}'")
		}
		e, err := parseEntry(tz, tok)
		if err != nil {
			return nil, err
		}
		for name, v := range e.Options {
			if strings.Contains(v, "${") {
				// Java expands ${system.property} in a file's values;
				// Sluice has no JVM system properties, and a literal
				// would be wrong.
				return nil, fmt.Errorf("login module %s, option %s: ${...} system property expansion is not supported; give the value itself",
					e.LoginModule, name)
			}
		}
		out = append(out, e)
	}
}

// IsControlFlag reports whether s is one of JAAS's control flags.
func IsControlFlag(s string) bool {
	switch s {
	case "required", "requisite", "sufficient", "optional":
		return true
	}
	return false
}
