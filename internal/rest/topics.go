package rest

import (
	"net/http"
)

func (h *handler) topicRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /connectors/{c}/topics":       h.getTopics,
		"PUT /connectors/{c}/topics/reset": h.resetTopics,
	}
}

// getTopics answers {"<name>":{"topics":[...]}}.
func (h *handler) getTopics(w http.ResponseWriter, r *http.Request) {
	topics, err := h.c.Topics(r.PathValue("c"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, topics)
}

// resetTopics answers 202 without a body, as Connect's
// Response.accepted().build().
func (h *handler) resetTopics(w http.ResponseWriter, r *http.Request) {
	if err := h.c.ResetTopics(r.Context(), r.PathValue("c")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
