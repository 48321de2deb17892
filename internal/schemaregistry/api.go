package schemaregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/internal/basicauth"
)

// ContentType is the media type of every answer, Confluent's.
const ContentType = "application/vnd.schemaregistry.v1+json"

// maxBody bounds a request body: schemas are small.
const maxBody = 8 << 20

// Handler serves Confluent's Schema Registry REST API.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern string, h func(*http.Request) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
			req.Body = http.MaxBytesReader(w, req.Body, maxBody)
			v, err := h(req)
			if err != nil {
				writeError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, v)
		})
	}
	route("GET /{$}", func(*http.Request) (any, error) { return struct{}{}, nil })
	route("GET /schemas", r.listSchemas)
	route("GET /schemas/types", func(*http.Request) (any, error) {
		return []string{TypeJSON, TypeProtobuf, TypeAvro}, nil
	})
	route("GET /schemas/ids/{id}", r.getSchemaByID)
	mux.HandleFunc("GET /schemas/ids/{id}/schema", r.rawSchemaByID)
	route("GET /schemas/ids/{id}/subjects", r.subjectsOfID)
	route("GET /schemas/ids/{id}/versions", r.versionsOfID)

	route("GET /subjects", r.listSubjects)
	route("GET /subjects/{subject}/versions", r.listVersions)
	route("POST /subjects/{subject}/versions", r.register)
	route("GET /subjects/{subject}/versions/{version}", r.getVersion)
	mux.HandleFunc("GET /subjects/{subject}/versions/{version}/schema", r.rawSchemaOfVersion)
	route("GET /subjects/{subject}/versions/{version}/referencedby", r.referencedBy)
	route("POST /subjects/{subject}", r.lookup)
	route("DELETE /subjects/{subject}", r.deleteSubject)
	route("DELETE /subjects/{subject}/versions/{version}", r.deleteVersion)

	route("POST /compatibility/subjects/{subject}/versions/{version}", r.checkCompatibility)
	route("POST /compatibility/subjects/{subject}/versions", r.checkCompatibility)

	route("GET /config", r.getSetting(compatibilitySetting))
	route("PUT /config", r.putConfig)
	route("DELETE /config", r.deleteConfig)
	route("GET /config/{subject}", r.getSetting(compatibilitySetting))
	route("PUT /config/{subject}", r.putConfig)
	route("DELETE /config/{subject}", r.deleteConfig)

	route("GET /mode", r.getSetting(modeSetting))
	route("PUT /mode", r.putMode)
	route("GET /mode/{subject}", r.getSetting(modeSetting))
	route("PUT /mode/{subject}", r.putMode)
	route("DELETE /mode/{subject}", r.deleteMode)

	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, pattern := mux.Handler(req); pattern == "" {
			// ServeMux would answer in plain text; Confluent's clients
			// expect its JSON error shape for every answer.
			if routedForAnotherMethod(mux, req) {
				writeError(w, &apiError{405, 405, "HTTP 405 Method Not Allowed"})
				return
			}
			writeError(w, &apiError{404, 404, "HTTP 404 Not Found"})
			return
		}
		mux.ServeHTTP(w, req)
	})
}

// routedForAnotherMethod reports whether req's path has a route under
// another method, which makes a wrong method a 405 rather than a 404.
func routedForAnotherMethod(mux *http.ServeMux, req *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if m == req.Method {
			continue
		}
		other := req.Clone(req.Context())
		other.Method = m
		if _, pattern := mux.Handler(other); pattern != "" {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, fmt.Errorf("encoding the answer: %w", err))
		return
	}
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{500, 50001, err.Error()}
	}
	writeJSON(w, ae.status, map[string]any{"error_code": ae.code, "message": ae.msg})
}

// flag reads a boolean query parameter; a value that is not a boolean is
// an error naming the parameter.
func flag(req *http.Request, name string) (bool, error) {
	v := req.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errBadRequest(fmt.Sprintf("query parameter %s=%q is not true or false", name, v))
	}
	return b, nil
}

// flags reads several boolean query parameters at once.
func flags(req *http.Request, names ...string) ([]bool, error) {
	out := make([]bool, len(names))
	for i, n := range names {
		b, err := flag(req, n)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// refuseParams answers an error for query parameters of Confluent's API
// that Sluice does not implement, rather than ignoring them.
func refuseParams(req *http.Request, names ...string) error {
	q := req.URL.Query()
	for _, n := range names {
		if q.Has(n) {
			return errBadRequest(fmt.Sprintf("query parameter %q is not supported by Sluice's schema registry", n))
		}
	}
	return nil
}

// subjectOf is the {subject} path segment. Confluent's schema contexts
// (":.context:subject") are not implemented, so such names are refused
// rather than treated as plain subjects.
func subjectOf(req *http.Request) (string, error) {
	s := req.PathValue("subject")
	if strings.HasPrefix(s, ":.") {
		return "", errUnprocessable(fmt.Sprintf("subject %q names a schema context; Sluice's schema registry has only the default context", s))
	}
	return s, nil
}

// decode reads a JSON body into v, refusing fields v does not have.
func decode(req *http.Request, v any) error {
	d := json.NewDecoder(req.Body)
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var maxErr *http.MaxBytesError
		switch {
		case errors.As(err, &maxErr):
			return errUnprocessable(fmt.Sprintf("request body larger than %d bytes", maxErr.Limit))
		case errors.Is(err, io.EOF):
			return errUnprocessable("empty request body")
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return errUnprocessable("Unrecognized field: " + strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return errUnprocessable("malformed JSON body: " + err.Error())
	}
	if d.More() {
		return errUnprocessable("request body holds more than one JSON value")
	}
	return nil
}

// version is a version in a path: a number from 1, or "latest" / -1.
// latest is returned as 0.
func parseVersion(s string) (int, error) {
	if s == "latest" || s == "-1" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, errInvalidVersion(s)
	}
	return n, nil
}

func parseID(req *http.Request) (int, error) {
	s := req.PathValue("id")
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, &apiError{404, 40403, fmt.Sprintf("Schema %s not found", s)}
	}
	return n, nil
}

// schemaAnswer is a schema as GET /schemas/ids/{id} answers it.
type schemaAnswer struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	MaxID      *int        `json:"maxId,omitempty"`
}

// versionAnswer is one version as GET /subjects/{s}/versions/{v} answers it.
type versionAnswer struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
	Deleted    bool        `json:"deleted,omitempty"`
}

func answerOf(v *schemaVersion) versionAnswer {
	return versionAnswer{Subject: v.Subject, Version: v.Version, ID: v.ID, SchemaType: v.SchemaType,
		References: v.References, Schema: v.Schema, Deleted: v.Deleted}
}

func (r *Registry) schemaOfID(req *http.Request) (*schemaVersion, int, error) {
	id, err := parseID(req)
	if err != nil {
		return nil, 0, err
	}
	if err := refuseParams(req, "referenceFormat", "findTags"); err != nil {
		return nil, 0, err
	}
	if _, err := subjectParam(req); err != nil {
		return nil, 0, err
	}
	var found *schemaVersion
	var maxID int
	err = r.read(req.Context(), func(st *state) error {
		vs := st.byID(id, true)
		if len(vs) == 0 {
			return errSchemaNotFound(id)
		}
		maxID = st.maxID
		found, err = formatted(st, vs[0], req.URL.Query().Get("format"))
		return err
	})
	return found, maxID, err
}

// formatted is v with its schema text as ?format= asks: as stored (no
// format, or "default"), or for Protobuf "serialized", the base64
// FileDescriptorProto that Confluent's Python deserializer reads.
func formatted(st *state, v *schemaVersion, format string) (*schemaVersion, error) {
	switch {
	case format == "" || format == "default":
		return v, nil
	case format == "serialized" && v.typ() == TypeProtobuf:
		p, err := parseStored(st, v)
		if err != nil {
			return nil, err
		}
		text, err := serializedDescriptor(p.proto)
		if err != nil {
			return nil, err
		}
		out := *v
		out.Schema = text
		return &out, nil
	}
	return nil, errBadRequest(fmt.Sprintf("format=%q is not supported for %s schemas (Sluice knows default, and serialized for PROTOBUF)", format, v.typ()))
}

// subjectParam is the ?subject= of the schema-by-id endpoints. Confluent
// uses it to pick a schema context; with only the default context, the
// answer is the same for every plain subject.
func subjectParam(req *http.Request) (string, error) {
	s := req.URL.Query().Get("subject")
	if strings.HasPrefix(s, ":.") {
		return "", errUnprocessable(fmt.Sprintf("subject %q names a schema context; Sluice's schema registry has only the default context", s))
	}
	return s, nil
}

func (r *Registry) getSchemaByID(req *http.Request) (any, error) {
	fetchMax, err := flag(req, "fetchMaxId")
	if err != nil {
		return nil, err
	}
	v, maxID, err := r.schemaOfID(req)
	if err != nil {
		return nil, err
	}
	a := schemaAnswer{Schema: v.Schema, SchemaType: v.SchemaType, References: v.References}
	if fetchMax {
		a.MaxID = &maxID
	}
	return a, nil
}

func (r *Registry) rawSchemaByID(w http.ResponseWriter, req *http.Request) {
	v, _, err := r.schemaOfID(req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeRaw(w, v.Schema)
}

// writeRaw answers a schema's text itself, as Confluent's /schema
// endpoints do.
func writeRaw(w http.ResponseWriter, schema string) {
	w.Header().Set("Content-Type", ContentType)
	_, _ = io.WriteString(w, schema)
}

// usesOfID lists the versions that hold schema id, soft-deleted ones with
// ?deleted=true; an id that no version holds at all is 40403.
func (r *Registry) usesOfID(req *http.Request) ([]*schemaVersion, error) {
	id, err := parseID(req)
	if err != nil {
		return nil, err
	}
	deleted, err := flag(req, "deleted")
	if err != nil {
		return nil, err
	}
	var uses []*schemaVersion
	err = r.read(req.Context(), func(st *state) error {
		if len(st.byID(id, true)) == 0 {
			return errSchemaNotFound(id)
		}
		uses = st.byID(id, deleted)
		return nil
	})
	return uses, err
}

func (r *Registry) subjectsOfID(req *http.Request) (any, error) {
	uses, err := r.usesOfID(req)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, v := range uses {
		if len(out) == 0 || out[len(out)-1] != v.Subject {
			out = append(out, v.Subject)
		}
	}
	return out, nil
}

type subjectVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

func (r *Registry) versionsOfID(req *http.Request) (any, error) {
	uses, err := r.usesOfID(req)
	if err != nil {
		return nil, err
	}
	out := []subjectVersion{}
	for _, v := range uses {
		out = append(out, subjectVersion{v.Subject, v.Version})
	}
	return out, nil
}

// listing reads ?deleted and ?deletedOnly: which versions a listing
// shows.
type listing struct{ deleted, deletedOnly bool }

func listingOf(req *http.Request) (listing, error) {
	fl, err := flags(req, "deleted", "deletedOnly")
	if err != nil {
		return listing{}, err
	}
	return listing{deleted: fl[0] || fl[1], deletedOnly: fl[1]}, nil
}

// shows reports whether a listing includes v.
func (l listing) shows(v *schemaVersion) bool {
	if l.deletedOnly {
		return v.Deleted
	}
	return l.deleted || !v.Deleted
}

func (r *Registry) listSubjects(req *http.Request) (any, error) {
	l, err := listingOf(req)
	if err != nil {
		return nil, err
	}
	prefix := req.URL.Query().Get("subjectPrefix")
	out := []string{}
	err = r.read(req.Context(), func(st *state) error {
		for _, s := range st.subjectNames(l.deleted) {
			if !strings.HasPrefix(s, prefix) {
				continue
			}
			if l.deletedOnly && len(st.versions(s, false)) > 0 {
				continue // Confluent: only subjects whose versions are all soft-deleted
			}
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

func (r *Registry) listVersions(req *http.Request) (any, error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	l, err := listingOf(req)
	if err != nil {
		return nil, err
	}
	out := []int{}
	err = r.read(req.Context(), func(st *state) error {
		out = out[:0]
		if len(st.versions(subject, l.deleted)) == 0 {
			return errSubjectNotFound(subject)
		}
		for _, v := range st.versions(subject, true) {
			if l.shows(v) {
				out = append(out, v.Version)
			}
		}
		return nil
	})
	return out, err
}

// listSchemas is GET /schemas: every version of every subject, in subject
// and version order, with Confluent's subjectPrefix, deleted,
// latestOnly, offset and limit.
func (r *Registry) listSchemas(req *http.Request) (any, error) {
	l, err := listingOf(req)
	if err != nil {
		return nil, err
	}
	latestOnly, err := flag(req, "latestOnly")
	if err != nil {
		return nil, err
	}
	offset, limit, err := page(req)
	if err != nil {
		return nil, err
	}
	prefix := req.URL.Query().Get("subjectPrefix")
	out := []versionAnswer{}
	err = r.read(req.Context(), func(st *state) error {
		for _, s := range st.subjectNames(true) {
			if !strings.HasPrefix(s, prefix) {
				continue
			}
			var shown []*schemaVersion
			for _, v := range st.versions(s, true) {
				if l.shows(v) {
					shown = append(shown, v)
				}
			}
			if latestOnly && len(shown) > 0 {
				shown = shown[len(shown)-1:]
			}
			for _, v := range shown {
				out = append(out, answerOf(v))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out = out[min(offset, len(out)):]
	if limit >= 0 && limit < len(out) {
		out = out[:limit]
	}
	return out, nil
}

// page reads ?offset (default 0) and ?limit (default -1: all).
func page(req *http.Request) (offset, limit int, err error) {
	limit = -1
	for _, p := range []struct {
		name string
		into *int
		min  int
	}{{"offset", &offset, 0}, {"limit", &limit, -1}} {
		v := req.URL.Query().Get(p.name)
		if v == "" {
			continue
		}
		n, convErr := strconv.Atoi(v)
		if convErr != nil || n < p.min {
			return 0, 0, errBadRequest(fmt.Sprintf("query parameter %s=%q is not a number from %d", p.name, v, p.min))
		}
		*p.into = n
	}
	return offset, limit, nil
}

// findVersion resolves a subject's version from the path: "latest" is the
// newest live version, or the newest of all with deleted.
func findVersion(st *state, subject, version string, deleted bool) (*schemaVersion, error) {
	n, err := parseVersion(version)
	if err != nil {
		return nil, err
	}
	vs := st.versions(subject, deleted)
	if len(vs) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	if n == 0 {
		return vs[len(vs)-1], nil
	}
	for _, v := range vs {
		if v.Version == n {
			return v, nil
		}
	}
	return nil, errVersionNotFound(version)
}

func (r *Registry) versionOf(req *http.Request) (*schemaVersion, error) {
	subject, err := subjectOf(req)
	if err != nil {
		return nil, err
	}
	deleted, err := flag(req, "deleted")
	if err != nil {
		return nil, err
	}
	if err := refuseParams(req, "referenceFormat", "findTags"); err != nil {
		return nil, err
	}
	var found *schemaVersion
	err = r.read(req.Context(), func(st *state) error {
		v, err := findVersion(st, subject, req.PathValue("version"), deleted)
		if err != nil {
			return err
		}
		found, err = formatted(st, v, req.URL.Query().Get("format"))
		return err
	})
	return found, err
}

func (r *Registry) getVersion(req *http.Request) (any, error) {
	v, err := r.versionOf(req)
	if err != nil {
		return nil, err
	}
	return answerOf(v), nil
}

func (r *Registry) rawSchemaOfVersion(w http.ResponseWriter, req *http.Request) {
	v, err := r.versionOf(req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeRaw(w, v.Schema)
}

func (r *Registry) referencedBy(req *http.Request) (any, error) {
	v, err := r.versionOf(req)
	if err != nil {
		return nil, err
	}
	var ids []int
	err = r.read(req.Context(), func(st *state) error {
		ids = st.referencedBy(v.Subject, v.Version)
		return nil
	})
	if ids == nil {
		ids = []int{}
	}
	return ids, err
}

// RequireUsers lets through the requests whose basic credentials c
// accepts, as Confluent's registry does with authentication.method=BASIC,
// and answers the others 401 in Confluent's error shape. The reason goes
// to the debug log, never the password.
func RequireUsers(c basicauth.Checker, log zerolog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, password, err := basicauth.Credentials(req)
		if err == nil && !c.Authenticate(user, password) {
			err = fmt.Errorf("user %q: wrong password or unknown user", user)
		}
		if err != nil {
			log.Debug().Str("method", req.Method).Str("path", req.URL.Path).Str("remote", req.RemoteAddr).Str("why", err.Error()).
				Msg("schema registry request failed authentication")
			w.Header().Set("WWW-Authenticate", `Basic realm="SchemaRegistry", charset="UTF-8"`)
			writeError(w, &apiError{401, 401, "Unauthorized"})
			return
		}
		next.ServeHTTP(w, req)
	})
}
