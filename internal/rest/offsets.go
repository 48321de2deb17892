package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/sluice-io/sluice/internal/control"
)

// OffsetsController is the connector offsets API (KIP-875) of the control
// plane.
type OffsetsController interface {
	Offsets(ctx context.Context, name string) (control.ConnectorOffsets, error)
	AlterOffsets(ctx context.Context, name string, offs []control.ConnectorOffset) (control.Message, error)
	ResetOffsets(ctx context.Context, name string) (control.Message, error)
}

func (h *handler) offsetRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /connectors/{c}/offsets":    h.getOffsets,
		"PATCH /connectors/{c}/offsets":  h.alterOffsets,
		"DELETE /connectors/{c}/offsets": h.resetOffsets,
	}
}

func (h *handler) getOffsets(w http.ResponseWriter, r *http.Request) {
	offs, err := h.c.Offsets(r.Context(), r.PathValue("c"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, offs)
}

func (h *handler) alterOffsets(w http.ResponseWriter, r *http.Request) {
	obj, ok := h.readObject(w, r)
	if !ok {
		return
	}
	offs, err := parseOffsets(obj)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	msg, err := h.c.AlterOffsets(r.Context(), r.PathValue("c"), offs)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, msg)
}

func (h *handler) resetOffsets(w http.ResponseWriter, r *http.Request) {
	msg, err := h.c.ResetOffsets(r.Context(), r.PathValue("c"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, msg)
}

// ParseOffsets reads the body of PATCH /connectors/{c}/offsets, for the
// admin actor, which takes the same JSON.
func ParseOffsets(body []byte) ([]control.ConnectorOffset, error) {
	obj, err := parseObject(body)
	if err != nil {
		return nil, err
	}
	return parseOffsets(obj)
}

// parseOffsets reads {"offsets":[{"partition":{...},"offset":{...}|null}]}.
// It checks the shape only, naming every bad entry; what a partition and
// an offset must hold depends on the connector's type, which the control
// plane checks. Numbers stay json.Number, so that a 64-bit offset keeps
// every digit. An unknown field in an entry is refused: a misspelt
// "offset" would otherwise read as null and delete the offset.
func parseOffsets(obj map[string]json.RawMessage) ([]control.ConnectorOffset, error) {
	raw, ok := obj["offsets"]
	if !ok || isNull(raw) {
		return nil, fmt.Errorf(`Partitions / offsets need to be provided for an alter offsets request: the body needs an "offsets" field, as in {"offsets": [{"partition": {...}, "offset": {...}}]}`)
	}
	if kind := kindOf(raw); kind != "an array" {
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
	out := make([]control.ConnectorOffset, 0, len(entries))
	for i, e := range entries {
		at := fmt.Sprintf("offsets[%d]", i)
		if kind := kindOf(e); kind != "an object" {
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
		var co control.ConnectorOffset
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
	if !ok || isNull(raw) {
		return nil, nil
	}
	if kind := kindOf(raw); kind != "an object" {
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
