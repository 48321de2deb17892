package rest

import (
	"net/http"

	"github.com/sluice-io/sluice/internal/control"
)

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
	offs, err := control.ParseOffsetsObject(obj)
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
