package rest

import (
	"net/http"

	"github.com/sluice-io/sluice/internal/control"
)

func (h *handler) loggerRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /admin/loggers":        h.listLoggers,
		"GET /admin/loggers/{name}": h.getLogger,
		"PUT /admin/loggers/{name}": h.setLogger,
	}
}

func (h *handler) listLoggers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.c.Loggers())
}

func (h *handler) getLogger(w http.ResponseWriter, r *http.Request) {
	l, err := h.c.Logger(r.PathValue("name"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

// setLogger answers 200 with the loggers whose level was set (scope
// worker) or 204 once the level is in the config topic (scope cluster).
func (h *handler) setLogger(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	obj, ok := h.readObject(w, r)
	if !ok {
		return
	}
	level, present, err := optionalString(obj, "level")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !present {
		writeError(w, http.StatusBadRequest, `Desired 'level' parameter was not specified in request: expected {"level": "DEBUG"}`)
		return
	}
	rawScope := r.URL.Query().Get("scope")
	scope, known := control.ParseLoggerScope(rawScope)
	if !known {
		// Connect, too, warns and carries on at the worker scope.
		h.log.Warn().Str("scope", rawScope).Str("namespace", name).
			Msg("invalid scope in request to adjust a log level; using scope worker")
	}
	changed, err := h.c.SetLogger(r.Context(), name, level, scope)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if scope == control.ScopeCluster {
		h.log.Info().Str("namespace", name).Str("log_level", level).Msg("cluster-wide log level written to the config topic")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.log.Info().Str("namespace", name).Str("log_level", level).Strs("loggers", changed).Msg("log level set on this worker")
	writeJSON(w, http.StatusOK, changed)
}
