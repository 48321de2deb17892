// Package javaprops reads Java properties files, the format of Kafka
// Connect's worker and connector files and of the files FileConfigProvider
// reads secrets from.
package javaprops

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Parse reads a Java properties file as java.util.Properties.load
// does, which is how Kafka Connect reads its worker files, its
// standalone connector files and FileConfigProvider's files, so that a
// file written for Connect means the same here:
//
//   - a key ends at the first unescaped '=', ':' or whitespace; the
//     separator may have whitespace around it, and whitespace alone
//     separates too (key value); a key with nothing after it has the
//     empty value;
//   - lines whose first non-blank character is '#' or '!' are comments,
//     blank lines are skipped, leading whitespace is not part of the key;
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading whitespace is dropped;
//   - \t \n \r \f and \uXXXX are escapes, and a backslash before any
//     other character stands for that character (\=, \:, \#, \ , \\).
//
// Values keep their trailing whitespace, as in Java; callers trim them
// where Connect's ConfigDef would. Unlike Java's load(InputStream), which
// reads ISO-8859-1, a file that is valid UTF-8 is read as UTF-8 (any other
// is read as ISO-8859-1, as Java would). Duplicate keys: the last wins.
func Parse(b []byte) (map[string]string, error) {
	props := map[string]string{}
	for _, l := range logicalLines(decodeProperties(b)) {
		k, v, err := splitProperty(l.text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", l.line, err)
		}
		props[k] = v
	}
	return props, nil
}

// decodeProperties returns the file's text: UTF-8 when it is valid UTF-8,
// else ISO-8859-1, Java's encoding for properties files.
func decodeProperties(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// logicalLine is one key-value line, continuations joined, with the
// number of the natural line it starts on.
type logicalLine struct {
	line int
	text string
}

func logicalLines(text string) []logicalLine {
	natural := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	var out []logicalLine
	var cur strings.Builder
	start, open := 0, false
	for i, raw := range natural {
		line := strings.TrimLeft(raw, " \t\f")
		if !open {
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			start = i + 1
		}
		if continues(line) {
			cur.WriteString(line[:len(line)-1])
			open = true
			continue
		}
		cur.WriteString(line)
		out = append(out, logicalLine{start, cur.String()})
		cur.Reset()
		open = false
	}
	if open { // a continuation at the end of the file: the line ends there
		out = append(out, logicalLine{start, cur.String()})
	}
	return out
}

// continues reports whether a natural line ends in an odd number of
// backslashes: its last one escapes the line break.
func continues(line string) bool {
	n := len(line) - len(strings.TrimRight(line, `\`))
	return n%2 == 1
}

// splitProperty splits a logical line into its key and value, then
// unescapes both (Properties.load0).
func splitProperty(line string) (key, value string, err error) {
	keyEnd, valueStart, sep := len(line), len(line), false
	escaped := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if !escaped && (c == '=' || c == ':') {
			keyEnd, valueStart, sep = i, i+1, true
			break
		}
		if !escaped && (c == ' ' || c == '\t' || c == '\f') {
			keyEnd, valueStart = i, i+1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for valueStart < len(line) {
		c := line[valueStart]
		if c == '=' || c == ':' {
			if sep {
				break
			}
			sep = true
		} else if c != ' ' && c != '\t' && c != '\f' {
			break
		}
		valueStart++
	}
	if key, err = unescapeProperty(line[:keyEnd]); err != nil {
		return "", "", err
	}
	if value, err = unescapeProperty(line[valueStart:]); err != nil {
		return "", "", err
	}
	return key, value, nil
}

// unescapeProperty resolves the escapes of a key or value
// (Properties.loadConvert); \uXXXX pairs that encode a UTF-16 surrogate
// pair become one character, and a lone surrogate becomes U+FFFD.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	var high rune // a high surrogate from a \uXXXX escape, awaiting its pair
	flushHigh := func() {
		if high != 0 {
			b.WriteRune(utf8.RuneError)
			high = 0
		}
	}
	write := func(r rune) {
		flushHigh()
		b.WriteRune(r)
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			r, size := utf8.DecodeRuneInString(s[i:])
			write(r)
			i += size - 1
			continue
		}
		if i+1 == len(s) {
			break // a lone trailing backslash is dropped, as Java does
		}
		i++
		switch s[i] {
		case 't':
			write('\t')
		case 'n':
			write('\n')
		case 'r':
			write('\r')
		case 'f':
			write('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uXXXX escape: \%s`, s[i:])
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uXXXX escape: \%s`, s[i:i+5])
			}
			i += 4
			switch r := rune(n); {
			case utf16.IsSurrogate(r) && r < 0xdc00:
				flushHigh()
				high = r
			case utf16.IsSurrogate(r) && high != 0:
				b.WriteRune(utf16.DecodeRune(high, r))
				high = 0
			default:
				write(r)
			}
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			write(r)
			i += size - 1
		}
	}
	flushHigh()
	return b.String(), nil
}
