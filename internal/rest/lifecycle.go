package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sluice-io/sluice/internal/control"
)

// lifecycleRoutes are the writes that change a connector's config or
// state besides create and delete.
func (h *handler) lifecycleRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"PATCH /connectors/{c}/config":           h.patchConfig,
		"PUT /connectors/{c}/stop":               h.stop,
		"POST /connectors/{c}/restart":           h.restart,
		"POST /connectors/{c}/tasks/{t}/restart": h.restartTask,
	}
}

// patchConfig merges the body into the config: strings (and numbers or
// booleans, as their text) set a key, null removes it.
func (h *handler) patchConfig(w http.ResponseWriter, r *http.Request) {
	obj, ok := h.readObject(w, r)
	if !ok {
		return
	}
	patch := make(map[string]*string, len(obj))
	set := map[string]json.RawMessage{}
	for k, v := range obj {
		if control.IsJSONNull(v) {
			patch[k] = nil
			continue
		}
		set[k] = v
	}
	cfg, err := configFromObject(set, "Request body")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	for k, v := range cfg {
		patch[k] = &v
	}
	info, err := h.c.PatchConfig(r.Context(), r.PathValue("c"), patch)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// stop answers 204, as Connect's void resource method does (pause and
// resume answer 202).
func (h *handler) stop(w http.ResponseWriter, r *http.Request) {
	if err := h.c.Stop(r.Context(), r.PathValue("c")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// boolParam reads a query parameter as Connect's JAX-RS does: absent is
// false, and anything but true/false is refused with the parameter named.
func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("Invalid %s %q: must be true or false", name, v)
	}
	return b, nil
}

// restart answers 204 for Connect's plain connector restart (both flags
// false) and 202 with the status showing RESTARTING otherwise.
func (h *handler) restart(w http.ResponseWriter, r *http.Request) {
	includeTasks, err := boolParam(r, "includeTasks")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	onlyFailed, err := boolParam(r, "onlyFailed")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	st, err := h.c.Restart(r.Context(), r.PathValue("c"), includeTasks, onlyFailed)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !includeTasks && !onlyFailed {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusAccepted, st)
}

func (h *handler) restartTask(w http.ResponseWriter, r *http.Request) {
	name, t := r.PathValue("c"), r.PathValue("t")
	id, err := strconv.Atoi(t)
	if err != nil || id < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Task %q of connector %s not found: task ids are non-negative integers", t, name))
		return
	}
	if err := h.c.RestartTask(r.Context(), name, id); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
