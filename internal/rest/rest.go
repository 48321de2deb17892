// Package rest serves Kafka Connect's REST API over a control plane, with
// Connect's paths, JSON shapes, status codes and error body
// {"error_code": <status>, "message": "..."}, so that scripts and tools
// written for Connect work against Sluice unchanged.
package rest

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/control"
)

// MaxBodyBytes is the default bound of a request body (1 MiB); connector
// configs are far smaller. Kafka Connect has no such bound and no key for
// one: the worker's --rest-max-body-bytes flag changes it.
const MaxBodyBytes = 1 << 20

type handler struct {
	c       control.API
	log     zerolog.Logger
	mux     *http.ServeMux
	maxBody int64
}

// Option changes a handler's defaults.
type Option func(*handler)

// WithMaxBody bounds request bodies to n bytes (default MaxBodyBytes); a
// larger body is answered 413.
func WithMaxBody(n int64) Option {
	return func(h *handler) {
		if n > 0 {
			h.maxBody = n
		}
	}
}

// NewHandler returns the REST API over c.
func NewHandler(c control.API, log zerolog.Logger, opts ...Option) http.Handler {
	h := &handler{c: c, log: log, mux: http.NewServeMux(), maxBody: MaxBodyBytes}
	for _, o := range opts {
		o(h)
	}
	routes := map[string]http.HandlerFunc{
		"GET /{$}":                                   h.root,
		"GET /health":                                h.health,
		"GET /connectors":                            h.listConnectors,
		"POST /connectors":                           h.createConnector,
		"GET /connectors/{c}":                        h.getInfo,
		"DELETE /connectors/{c}":                     h.deleteConnector,
		"GET /connectors/{c}/config":                 h.getConfig,
		"PUT /connectors/{c}/config":                 h.putConfig,
		"GET /connectors/{c}/status":                 h.getStatus,
		"GET /connectors/{c}/tasks":                  h.getTasks,
		"GET /connectors/{c}/tasks/{t}/status":       h.getTaskStatus,
		"PUT /connectors/{c}/pause":                  h.pause,
		"PUT /connectors/{c}/resume":                 h.resume,
		"GET /connector-plugins":                     h.listPlugins,
		"GET /connector-plugins/{p}/config":          h.pluginConfig,
		"PUT /connector-plugins/{p}/config/validate": h.validate,
	}
	for _, more := range []map[string]http.HandlerFunc{h.lifecycleRoutes(), h.offsetRoutes(), h.topicRoutes(), h.loggerRoutes()} {
		maps.Copy(routes, more)
	}
	for pattern, f := range routes {
		h.mux.HandleFunc(pattern, f)
	}
	return h
}

// statusWriter remembers the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			requestFields(h.log.Error(), r).Interface("panic", p).Msg("REST handler panicked")
			if sw.status == 0 {
				writeError(sw, http.StatusInternalServerError, fmt.Sprintf("internal error: %v", p))
			}
		}
		requestFields(h.log.Debug(), r).Int("status", sw.status).Dur("duration", time.Since(start)).Msg("request")
	}()
	if r.ContentLength > h.maxBody {
		// Declared too large: refused before a byte of it is read.
		h.tooLarge(sw)
		return
	}
	r.Body = http.MaxBytesReader(sw, r.Body, h.maxBody)
	// Connect answers /connectors/ like /connectors, and scripts rely on it.
	if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path = strings.TrimSuffix(p, "/")
		u.RawPath = strings.TrimSuffix(u.RawPath, "/")
		r2.URL = &u
		r = r2
	}
	if p := r.URL.Path; p == "" || path.Clean(p) != p {
		// ServeMux would redirect to the clean path with an HTML body;
		// no Connect path has empty, . or .. segments.
		writeError(sw, http.StatusNotFound, "HTTP 404 Not Found")
		return
	}
	if _, pattern := h.mux.Handler(r); pattern == "" {
		h.unrouted(sw, r)
		return
	}
	h.mux.ServeHTTP(sw, r)
}

// requestFields adds a request's method and path to e and, for a request
// about a connector or a task, the connector and task fields that every
// other line about them carries, so that one filter finds them all.
func requestFields(e *zerolog.Event, r *http.Request) *zerolog.Event {
	e = e.Str("method", r.Method).Str("path", r.URL.Path)
	if c := r.PathValue("c"); c != "" {
		e = e.Str("connector", c)
	}
	if t, err := strconv.Atoi(r.PathValue("t")); err == nil {
		e = e.Int("task", t)
	}
	return e
}

// unrouted answers what no route matches with Connect's JSON errors instead
// of ServeMux's plain text: 405 with Allow when the path exists for another
// method, else 404.
func (h *handler) unrouted(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := h.mux.Handler(probe); pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) == 0 {
		writeError(w, http.StatusNotFound, "HTTP 404 Not Found")
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, http.StatusMethodNotAllowed, "HTTP 405 Method Not Allowed")
}

// fail answers err with its status; errors that are not the client's fault
// are logged, since the client only sees the message.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := control.StatusCode(err)
	if code >= 500 && code != http.StatusServiceUnavailable {
		h.log.Error().Err(err).Str("method", r.Method).Str("path", r.URL.Path).Msg("request failed")
	}
	writeError(w, code, err.Error())
}

func (h *handler) root(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.c.ServerInfo())
}

func (h *handler) health(w http.ResponseWriter, r *http.Request) {
	hs := h.c.Health()
	writeJSON(w, hs.Code, hs)
}

func (h *handler) listConnectors(w http.ResponseWriter, r *http.Request) {
	names, err := h.c.Connectors()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	expand, ok := r.URL.Query()["expand"]
	if !ok {
		writeJSON(w, http.StatusOK, names)
		return
	}
	out := make(map[string]map[string]any, len(names))
	for _, n := range names {
		entry, err := h.expand(n, expand)
		if control.StatusCode(err) == http.StatusNotFound {
			// Deleted between listing and looking up: Connect leaves it out.
			continue
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		out[n] = entry
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) expand(name string, expand []string) (map[string]any, error) {
	entry := map[string]any{}
	for _, e := range expand {
		switch e {
		case "status":
			st, err := h.c.Status(name)
			if err != nil {
				return nil, err
			}
			entry["status"] = st
		case "info":
			info, err := h.c.Info(name)
			if err != nil {
				return nil, err
			}
			entry["info"] = info
		default:
			// Connect ignores expansions it does not know.
			h.log.Debug().Str("expand", e).Msg("ignoring unknown expansion")
		}
	}
	return entry, nil
}

func location(name string) string { return "/connectors/" + url.PathEscape(name) }

func (h *handler) createConnector(w http.ResponseWriter, r *http.Request) {
	obj, ok := h.readObject(w, r)
	if !ok {
		return
	}
	rawCfg, present := obj["config"]
	if !present || control.IsJSONNull(rawCfg) {
		writeError(w, http.StatusBadRequest, `Request body is missing the "config" field; expected {"name": "...", "config": {...}}`)
		return
	}
	cfg, err := configMap(rawCfg, `"config"`)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	name, present, err := optionalString(obj, "name")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !present {
		name = cfg["name"]
	}
	initial, _, err := optionalString(obj, "initial_state")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	info, err := h.c.Create(r.Context(), name, cfg, control.InitialState(initial))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Location", location(name))
	writeJSON(w, http.StatusCreated, info)
}

func (h *handler) getInfo(w http.ResponseWriter, r *http.Request) {
	info, err := h.c.Info(r.PathValue("c"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (h *handler) deleteConnector(w http.ResponseWriter, r *http.Request) {
	if err := h.c.Delete(r.Context(), r.PathValue("c")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) getConfig(w http.ResponseWriter, r *http.Request) {
	cfg, err := h.c.Config(r.PathValue("c"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, cfg)
}

func (h *handler) putConfig(w http.ResponseWriter, r *http.Request) {
	cfg, ok := h.readConfig(w, r)
	if !ok {
		return
	}
	name := r.PathValue("c")
	info, created, err := h.c.PutConfig(r.Context(), name, cfg)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if created {
		w.Header().Set("Location", location(name))
		writeJSON(w, http.StatusCreated, info)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (h *handler) getStatus(w http.ResponseWriter, r *http.Request) {
	st, err := h.c.Status(r.PathValue("c"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (h *handler) getTasks(w http.ResponseWriter, r *http.Request) {
	tasks, err := h.c.Tasks(r.PathValue("c"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, tasks)
}

func (h *handler) getTaskStatus(w http.ResponseWriter, r *http.Request) {
	name, t := r.PathValue("c"), r.PathValue("t")
	id, err := strconv.Atoi(t)
	if err != nil || id < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Task %q of connector %s not found: task ids are non-negative integers", t, name))
		return
	}
	st, err := h.c.TaskStatus(name, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (h *handler) pause(w http.ResponseWriter, r *http.Request) {
	if err := h.c.Pause(r.Context(), r.PathValue("c")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (h *handler) resume(w http.ResponseWriter, r *http.Request) {
	if err := h.c.Resume(r.Context(), r.PathValue("c")); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (h *handler) listPlugins(w http.ResponseWriter, r *http.Request) {
	connectorsOnly := true
	if v := r.URL.Query().Get("connectorsOnly"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("Invalid connectorsOnly %q: must be true or false", v))
			return
		}
		connectorsOnly = b
	}
	writeJSON(w, http.StatusOK, h.c.Plugins(connectorsOnly))
}

func (h *handler) pluginConfig(w http.ResponseWriter, r *http.Request) {
	keys, err := h.c.PluginConfig(r.PathValue("p"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, keys)
}

func (h *handler) validate(w http.ResponseWriter, r *http.Request) {
	cfg, ok := h.readConfig(w, r)
	if !ok {
		return
	}
	res, err := h.c.Validate(r.PathValue("p"), cfg)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *handler) tooLarge(w http.ResponseWriter) {
	writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body exceeds %d bytes", h.maxBody))
}

// isMaxBytes reports whether reading the body hit the bound.
func isMaxBytes(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}
