package offsets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// canonicalJSON encodes v as compact JSON with sorted object keys (Go sorts
// map keys) and without HTML escaping, which is what Kafka Connect's Jackson
// writes for the same value. Values are first put through decodeJSON, so that
// 3, int32(3) and a json.Number "3" all encode alike.
func canonicalJSON(v any) ([]byte, error) {
	raw, err := encodeJSON(v)
	if err != nil {
		return nil, err
	}
	norm, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	return encodeJSON(norm)
}

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// decodeJSON decodes one JSON value; numbers become int64 when they are
// written as integers that fit, float64 otherwise, so that a task reading
// back an offset it wrote as an integer gets an integer.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return normalizeNumbers(v)
}

func normalizeNumbers(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", x, err)
		}
		return f, nil
	case map[string]any:
		for k, e := range x {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
		return x, nil
	case []any:
		for i, e := range x {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
		return x, nil
	default:
		return v, nil
	}
}

// decodeObject decodes a JSON object (or null, giving nil).
func decodeObject(data []byte) (map[string]any, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON object, got %T", v)
	}
	return m, nil
}
