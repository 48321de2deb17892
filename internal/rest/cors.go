package rest

import (
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// CORS defaults of Jetty's CrossOriginFilter, which Connect installs for
// access.control.allow.origin and configures with nothing but the origins
// and access.control.allow.methods.
const (
	DefaultCORSMethods = "GET,POST,HEAD"
	corsHeaders        = "X-Requested-With,Content-Type,Accept,Origin"
	corsMaxAge         = "1800"
)

// CORS answers cross-origin requests as Connect's Jetty CrossOriginFilter
// does, for origins (access.control.allow.origin: a comma-separated list
// in which * allows any origin and an entry with * matches as a wildcard)
// and methods (access.control.allow.methods; empty takes GET,POST,HEAD):
//
//   - a request from an allowed origin gets Access-Control-Allow-Origin
//     (the origin itself) and Access-Control-Allow-Credentials: true;
//   - a preflight (OPTIONS with Access-Control-Request-Method) from an
//     allowed origin asking for an allowed method and headers also gets
//     the allowed methods and headers and a max age of 1800 s;
//   - requests from other origins get no CORS headers.
//
// Unlike Jetty in Connect, the preflight is answered here (204) and not
// passed on: a browser sends it without credentials, and the REST API
// behind would refuse it (401) or not know OPTIONS (405).
type CORS struct {
	anyOrigin bool
	origins   []string
	patterns  []*regexp.Regexp
	methods   []string
	headers   []string
}

// NewCORS returns the filter for the two keys' values; nil when origins is
// empty, as Connect then installs none.
func NewCORS(origins, methods string) *CORS {
	list := connectors.SplitList(origins)
	if len(list) == 0 {
		return nil
	}
	c := &CORS{methods: connectors.SplitList(methods), headers: connectors.SplitList(corsHeaders)}
	if len(c.methods) == 0 {
		c.methods = connectors.SplitList(DefaultCORSMethods)
	}
	for _, o := range list {
		switch {
		case o == "*":
			c.anyOrigin = true
		case strings.Contains(o, "*"):
			// Jetty's wildcard: * matches anything, the rest literally.
			c.patterns = append(c.patterns, regexp.MustCompile("^"+strings.ReplaceAll(regexp.QuoteMeta(o), `\*`, ".*")+"$"))
		default:
			c.origins = append(c.origins, o)
		}
	}
	return c
}

// allowed reports whether an Origin header's value (one origin, or several
// separated by spaces) names an allowed origin.
func (c *CORS) allowed(origin string) bool {
	if c.anyOrigin {
		return true
	}
	for _, o := range strings.Fields(origin) {
		if slices.Contains(c.origins, o) || slices.ContainsFunc(c.patterns, func(p *regexp.Regexp) bool { return p.MatchString(o) }) {
			return true
		}
	}
	return false
}

// Wrap returns next behind the filter.
func (c *CORS) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !c.anyOrigin {
			w.Header().Add("Vary", "Origin")
		}
		if !c.allowed(origin) {
			next.ServeHTTP(w, r)
			return
		}
		requested := r.Header.Get("Access-Control-Request-Method")
		if r.Method == http.MethodOptions && requested != "" {
			if c.preflightAllowed(requested, r.Header.Get("Access-Control-Request-Headers")) {
				h := w.Header()
				c.allowOrigin(h, origin)
				h.Set("Access-Control-Max-Age", corsMaxAge)
				h.Set("Access-Control-Allow-Methods", strings.Join(c.methods, ","))
				h.Set("Access-Control-Allow-Headers", strings.Join(c.headers, ","))
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		c.allowOrigin(w.Header(), origin)
		next.ServeHTTP(w, r)
	})
}

func (c *CORS) allowOrigin(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
}

// preflightAllowed checks a preflight's method and headers (compared
// without case, as Jetty does).
func (c *CORS) preflightAllowed(method, headers string) bool {
	if !slices.ContainsFunc(c.methods, func(m string) bool { return strings.EqualFold(m, strings.TrimSpace(method)) }) {
		return false
	}
	for _, h := range connectors.SplitList(headers) {
		if !slices.ContainsFunc(c.headers, func(a string) bool { return strings.EqualFold(a, h) }) {
			return false
		}
	}
	return true
}
