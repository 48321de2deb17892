package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"

	"github.com/sluice-io/sluice/internal/control"
)

// errorBody is Connect's error shape.
type errorBody struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Configs hold URLs with '&' (JDBC URLs): keep them readable, as
	// Connect's Jackson does.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		_ = json.NewEncoder(&buf).Encode(errorBody{ErrorCode: code, Message: "encoding the response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{ErrorCode: code, Message: msg})
}

// readBody reads a JSON request body within the handler's bound. A body declared
// as something other than JSON gets 415; a missing Content-Type is taken as
// JSON, as curl users often send none.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Unsupported Content-Type %q: send application/json", ct))
			return nil, false
		}
	}
	// ServeHTTP bounded r.Body.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		if isMaxBytes(err) {
			h.tooLarge(w)
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "Reading the request body: "+err.Error())
		return nil, false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		writeError(w, http.StatusBadRequest, "Request body is empty: expected a JSON object")
		return nil, false
	}
	return body, true
}

// readObject reads a body that must be one JSON object.
func (h *handler) readObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, bool) {
	body, ok := h.readBody(w, r)
	if !ok {
		return nil, false
	}
	obj, err := control.ParseObject(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	return obj, true
}

// readConfig reads a body that is a config: one JSON object of strings.
func (h *handler) readConfig(w http.ResponseWriter, r *http.Request) (map[string]string, bool) {
	body, ok := h.readBody(w, r)
	if !ok {
		return nil, false
	}
	obj, err := control.ParseObject(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	cfg, err := configFromObject(obj, "Request body")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	return cfg, true
}

// configMap reads a config object. Values must be strings; numbers and
// booleans are taken as their JSON text, as Connect's Jackson coerces them,
// so that {"tasks.max": 2} works. Every bad value is named at once.
func configMap(raw json.RawMessage, what string) (map[string]string, error) {
	if kind := control.JSONKind(raw); kind != "an object" {
		return nil, fmt.Errorf("%s must be a JSON object of string values, not %s", what, kind)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("%s is not a valid JSON object: %v", what, err)
	}
	return configFromObject(obj, what)
}

func configFromObject(obj map[string]json.RawMessage, what string) (map[string]string, error) {
	cfg := make(map[string]string, len(obj))
	var bad []string
	for k, v := range obj {
		switch kind := control.JSONKind(v); kind {
		case "a string":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				bad = append(bad, fmt.Sprintf("%q: %v", k, err))
				continue
			}
			cfg[k] = s
		case "a number", "a boolean":
			cfg[k] = string(bytes.TrimSpace(v))
		default:
			bad = append(bad, fmt.Sprintf("%q must be a string, not %s", k, kind))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("%s has %d invalid config value(s): %s", what, len(bad), strings.Join(bad, "; "))
	}
	return cfg, nil
}

// optionalString reads a string field; absent and null are both absent.
func optionalString(obj map[string]json.RawMessage, field string) (string, bool, error) {
	raw, ok := obj[field]
	if !ok || control.IsJSONNull(raw) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("Field %q must be a string, not %s", field, control.JSONKind(raw))
	}
	return s, true, nil
}
