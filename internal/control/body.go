package control

// Request bodies as both front doors (REST and the admin actor) take them:
// the JSON shape checks that name what is wrong and where.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ParseObject parses body as exactly one JSON object, saying where it
// fails: the line and column of a syntax error, the field of a wrong type.
func ParseObject(body []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, malformed(body, err)
	}
	off := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		for off < int64(len(body)) && strings.ContainsRune(" \t\r\n", rune(body[off])) {
			off++
		}
		line, col := position(body, off)
		return nil, fmt.Errorf("Malformed JSON in request body at line %d, column %d (offset %d): unexpected data after the JSON object", line, col, off)
	}
	if kind := JSONKind(raw); kind != "an object" {
		return nil, fmt.Errorf("Request body must be a JSON object, not %s", kind)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, malformed(body, err)
	}
	return obj, nil
}

func malformed(body []byte, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// Offset counts the offending byte too; point at it.
		off := max(se.Offset-1, 0)
		line, col := position(body, off)
		return fmt.Errorf("Malformed JSON in request body at line %d, column %d (offset %d): %v", line, col, off, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := position(body, int64(len(body)))
		return fmt.Errorf("Malformed JSON in request body at line %d, column %d (offset %d): unexpected end of input", line, col, len(body))
	}
	return fmt.Errorf("Malformed JSON in request body: %v", err)
}

// position turns a 0-based byte offset into a 1-based line and column.
func position(body []byte, off int64) (line, col int) {
	if off > int64(len(body)) {
		off = int64(len(body))
	}
	before := body[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

func JSONKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func IsJSONNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// ParseOffsets reads the body of PATCH /connectors/{c}/offsets, for the
// admin actor, which takes the same JSON.
func ParseOffsets(body []byte) ([]ConnectorOffset, error) {
	obj, err := ParseObject(body)
	if err != nil {
		return nil, err
	}
	return ParseOffsetsObject(obj)
}

// ParseOffsetsObject reads {"offsets":[{"partition":{...},"offset":{...}|null}]}.
// It checks the shape only, naming every bad entry; what a partition and
// an offset must hold depends on the connector's type, which the control
// plane checks. Numbers stay json.Number, so that a 64-bit offset keeps
// every digit. An unknown field in an entry is refused: a misspelt
// "offset" would otherwise read as null and delete the offset.
func ParseOffsetsObject(obj map[string]json.RawMessage) ([]ConnectorOffset, error) {
	raw, ok := obj["offsets"]
	if !ok || IsJSONNull(raw) {
		return nil, fmt.Errorf(`Partitions / offsets need to be provided for an alter offsets request: the body needs an "offsets" field, as in {"offsets": [{"partition": {...}, "offset": {...}}]}`)
	}
	if kind := JSONKind(raw); kind != "an array" {
		return nil, fmt.Errorf(`Field "offsets" must be a JSON array of {"partition": {...}, "offset": {...}} objects, not %s`, kind)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf(`Field "offsets" is not a valid JSON array: %v`, err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("Partitions / offsets need to be provided for an alter offsets request")
	}
	var bad []string
	out := make([]ConnectorOffset, 0, len(entries))
	for i, e := range entries {
		at := fmt.Sprintf("offsets[%d]", i)
		if kind := JSONKind(e); kind != "an object" {
			bad = append(bad, fmt.Sprintf(`%s must be a JSON object {"partition": {...}, "offset": {...}}, not %s`, at, kind))
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(e, &fields); err != nil {
			bad = append(bad, fmt.Sprintf("%s is not a valid JSON object: %v", at, err))
			continue
		}
		var unknown []string
		for k := range fields {
			if k != "partition" && k != "offset" {
				unknown = append(unknown, fmt.Sprintf("%q", k))
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			bad = append(bad, fmt.Sprintf(`%s has unknown field(s) %s: an entry has only "partition" and "offset"`, at, strings.Join(unknown, ", ")))
			continue
		}
		var co ConnectorOffset
		var err error
		if co.Partition, err = optionalObject(fields, "partition"); err != nil {
			bad = append(bad, at+"."+err.Error())
		}
		if co.Offset, err = optionalObject(fields, "offset"); err != nil {
			bad = append(bad, at+"."+err.Error())
		}
		out = append(out, co)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("The offsets in the request are invalid and contain the following %d error(s):\n%s", len(bad), strings.Join(bad, "\n"))
	}
	return out, nil
}

// optionalObject reads field as a JSON object, nil when absent or null.
func optionalObject(fields map[string]json.RawMessage, field string) (map[string]any, error) {
	raw, ok := fields[field]
	if !ok || IsJSONNull(raw) {
		return nil, nil
	}
	if kind := JSONKind(raw); kind != "an object" {
		return nil, fmt.Errorf("%s must be a JSON object or null, not %s", field, kind)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s is not a valid JSON object: %v", field, err)
	}
	return m, nil
}
