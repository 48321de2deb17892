package worker

import (
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/basicauth"
	"github.com/sluice-io/sluice/internal/rest"
	"github.com/sluice-io/sluice/internal/tlsconf"
)

// The REST API's listeners, as Kafka Connect's RestServer opens them:
//
//   - listeners: one or more http:// or https:// host:port; every one
//     serves the whole API (default http://:8083);
//   - admin.listeners: absent, the /admin endpoints are served on the
//     listeners above; present, only on these (and not on the main
//     listeners); empty, nowhere. An admin listener with a main listener's
//     address and protocol shares it rather than binding twice;
//   - https listeners take their TLS from listeners.https.ssl.* (admin
//     listeners: admin.listeners.https.ssl.*) when any key with that
//     prefix is given, else from the worker's ssl.* keys: Connect's
//     all-or-nothing prefix rule (AbstractConfig.valuesWithPrefixAllOrNothing);
//   - rest.advertised.listener picks the protocol (and the listener) whose
//     URL the worker gives out; by default http when there is an http
//     listener, else https.
//
// The REST extensions (basic authentication), the CORS filter and
// response.http.headers.config apply to the main listeners only, as in
// Connect, whose admin listeners serve the admin resources alone.

const (
	listenersHTTPSPrefix      = "listeners.https."
	adminListenersHTTPSPrefix = "admin.listeners.https."
)

// listener is one protocol://host:port entry.
type listener struct {
	scheme string // http or https
	addr   string // host:port
}

func (l listener) String() string { return l.scheme + "://" + l.addr }

// parseListenerList reads a list of protocol://host:port, as Connect's
// listeners and admin.listeners; empty entries are skipped, as Connect
// skips them.
func parseListenerList(key, v string) ([]listener, error) {
	var out []listener
	var errs []error
	for _, entry := range connectors.SplitList(v) {
		l, err := parseListener(key, entry)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, l)
	}
	return out, errors.Join(errs...)
}

// parseListener reads one protocol://host:port. An empty host listens on
// every interface, as in Connect.
func parseListener(key, entry string) (listener, error) {
	scheme, rest, ok := strings.Cut(entry, "://")
	if !ok {
		return listener{}, fmt.Errorf("%s: %q is not protocol://host:port", key, entry)
	}
	scheme = strings.ToLower(scheme)
	if scheme != "http" && scheme != "https" {
		return listener{}, fmt.Errorf("%s: %q: the protocol must be http or https", key, entry)
	}
	rest, _, _ = strings.Cut(rest, "/") // Connect's pattern ignores a path
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		return listener{}, fmt.Errorf("%s: %q is not protocol://host:port", key, entry)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return listener{}, fmt.Errorf("%s: %q: %q is not a port", key, entry, port)
	}
	return listener{scheme: scheme, addr: net.JoinHostPort(host, port)}, nil
}

// restListeners is what applyListeners resolved.
type restListeners struct {
	main []listener
	// admin are admin.listeners' entries when the key is given
	// (adminSplit): empty turns the /admin endpoints off.
	admin      []listener
	adminSplit bool
	// advertised is the protocol of the URL given out.
	advertised string
	// mainTLS and adminTLS serve the https listeners.
	mainTLS, adminTLS *tls.Config
	// headers are response.http.headers.config's (nil: none).
	headers *rest.ResponseHeaders
	// replaced is the listeners key's value when RESTAddr replaced it.
	replaced string
}

// applyListeners resolves listeners, admin.listeners, their TLS and
// rest.advertised.listener. RESTAddr, when set, replaces the listeners
// key with one http listener there (a flag wins over the key); once
// resolved, RESTAddr holds the advertised listener's address.
func (c *Config) applyListeners() error {
	if c.listeners != nil {
		return nil // resolved already (Resolve, then Start)
	}
	r := &restListeners{}
	var errs []error
	v, given := c.Props["listeners"]
	switch {
	case c.RESTAddr != "":
		r.main = []listener{{"http", c.RESTAddr}}
		if given {
			r.replaced = v
		}
	case given:
		ls, err := parseListenerList("listeners", v)
		errs = append(errs, err)
		if err == nil && len(ls) == 0 {
			errs = append(errs, errors.New("listeners: the list is empty; give at least one http://host:port or https://host:port"))
		}
		r.main = ls
	default:
		r.main = []listener{{"http", ":8083"}}
	}
	if v, ok := c.Props["admin.listeners"]; ok {
		ls, err := parseListenerList("admin.listeners", v)
		errs = append(errs, err)
		r.admin, r.adminSplit = ls, true
	}
	switch adv := strings.ToLower(strings.TrimSpace(c.Props["rest.advertised.listener"])); adv {
	case "":
		// Connect's default: http if some listener is http, else https.
		r.advertised = "http"
		if !slices.ContainsFunc(r.main, func(l listener) bool { return l.scheme == "http" }) && len(r.main) > 0 {
			r.advertised = "https"
		}
	case "http", "https":
		r.advertised = adv
		if !slices.ContainsFunc(r.main, func(l listener) bool { return l.scheme == adv }) && len(r.main) > 0 {
			errs = append(errs, fmt.Errorf("rest.advertised.listener: %s, but listeners has no %s listener (%s)", adv, adv, listenerList(r.main)))
		}
	default:
		errs = append(errs, fmt.Errorf("rest.advertised.listener: %q: give http or https", adv))
	}
	var err error
	if r.headers, err = rest.ParseResponseHeaders(c.Props[rest.ResponseHeadersKey]); err != nil {
		errs = append(errs, err)
	}
	if slices.ContainsFunc(r.main, isHTTPS) {
		if r.mainTLS, err = listenerTLS(c.Props, listenersHTTPSPrefix); err != nil {
			errs = append(errs, err)
		}
	}
	if slices.ContainsFunc(r.admin, isHTTPS) {
		if r.adminTLS, err = listenerTLS(c.Props, adminListenersHTTPSPrefix); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.listeners = r
	if c.RESTAddr == "" {
		c.RESTAddr = r.advertisedListener().addr
	}
	return nil
}

func isHTTPS(l listener) bool { return l.scheme == "https" }

func listenerList(ls []listener) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = l.String()
	}
	return strings.Join(s, ",")
}

// advertisedListener is the first main listener of the advertised protocol.
func (r *restListeners) advertisedListener() listener {
	for _, l := range r.main {
		if l.scheme == r.advertised {
			return l
		}
	}
	return r.main[0]
}

// sslProps are the ssl.* keys an https listener takes: those under prefix
// (without it) when any key has the prefix, else the worker's own.
func sslProps(props map[string]string, prefix string) (map[string]string, string) {
	prefixed := map[string]string{}
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			prefixed[rest] = v
		}
	}
	if len(prefixed) > 0 {
		return prefixed, prefix + "ssl.*"
	}
	return props, "ssl.*"
}

// listenerTLS is the TLS configuration of the https listeners whose keys
// have prefix; its errors name the keys' prefix, never a value.
func listenerTLS(props map[string]string, prefix string) (*tls.Config, error) {
	ssl, from := sslProps(props, prefix)
	m, err := tlsconf.Load(ssl)
	if err != nil {
		return nil, fmt.Errorf("https %s (from the %s keys): %w", strings.TrimSuffix(prefix, ".https."), from, err)
	}
	cfg, err := m.Server("")
	if err != nil {
		return nil, fmt.Errorf("https %s (from the %s keys): %w", strings.TrimSuffix(prefix, ".https."), from, err)
	}
	return cfg, nil
}

// restServer is one open listener and what it serves.
type restServer struct {
	l     listener
	ln    net.Listener
	srv   *http.Server
	admin bool // an admin listener (not a main one)
}

// URL is the listener's URL with the port it was given.
func (s *restServer) URL() string {
	return s.l.scheme + "://" + advertised(s.ln.Addr().String())
}

// open binds every listener. A failure closes those opened.
func (r *restListeners) open() ([]*restServer, error) {
	var out []*restServer
	bind := func(l listener, admin bool, tlsCfg *tls.Config) error {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			what := "REST API"
			if admin {
				what = "admin listener"
			}
			return fmt.Errorf("%s cannot listen on %s: %w", what, l.addr, err)
		}
		if l.scheme == "https" {
			ln = tls.NewListener(ln, tlsCfg)
		}
		out = append(out, &restServer{l: l, ln: ln, admin: admin})
		return nil
	}
	for _, l := range r.main {
		if err := bind(l, false, r.mainTLS); err != nil {
			closeAll(out)
			return nil, err
		}
	}
	for _, l := range r.admin {
		if slices.Contains(r.main, l) {
			continue // shares the main listener (sharesAdmin)
		}
		if err := bind(l, true, r.adminTLS); err != nil {
			closeAll(out)
			return nil, err
		}
	}
	return out, nil
}

func closeAll(servers []*restServer) {
	for _, s := range servers {
		s.ln.Close()
	}
}

// restHandlers are what a listener serves: the main API (with the
// worker's authentication and CORS) and the admin endpoints.
type restHandlers struct {
	api     http.Handler // the whole API, /admin included
	auth    basicauth.Checker
	cors    *rest.CORS
	log     zerolog.Logger
	routing *restListeners
}

// handler is what the listener s serves.
func (h restHandlers) handler(s *restServer) http.Handler {
	r := h.routing
	switch {
	case s.admin:
		// Connect's admin listeners serve the admin resources alone,
		// without the REST extensions or CORS.
		return onlyAdmin(h.api, true)
	case r.adminSplit && !slices.Contains(r.admin, s.l):
		return h.secured(onlyAdmin(h.api, false))
	}
	return h.secured(h.api)
}

// secured wraps a main listener's handler as Connect's filters do: the
// response headers (on every answer, 401s included), CORS (before the
// authentication, so that a preflight, which carries no credentials, is
// answered) and the authentication.
func (h restHandlers) secured(next http.Handler) http.Handler {
	if h.auth != nil {
		next = basicauth.Middleware(h.auth, h.log, next)
	}
	if h.cors != nil {
		next = h.cors.Wrap(next)
	}
	if h.routing.headers != nil {
		next = h.routing.headers.Wrap(next)
	}
	return next
}

// isAdminPath tells the admin endpoints' paths.
func isAdminPath(p string) bool { return p == "/admin" || strings.HasPrefix(p, "/admin/") }

// onlyAdmin serves the /admin paths alone (admin) or every path but them:
// the others are answered 404 in Connect's error shape.
func onlyAdmin(next http.Handler, admin bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isAdminPath(r.URL.Path) != admin {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error_code":404,"message":"HTTP 404 Not Found"}` + "\n"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveREST starts serving every listener.
func (w *Worker) serveREST(h restHandlers) {
	for _, s := range w.servers {
		s.srv = &http.Server{Handler: h.handler(s), ReadHeaderTimeout: 10 * time.Second,
			// TLS handshake failures (a client without a certificate, a
			// plain HTTP request on an https listener) are the client's
			// problem: logged at debug, not printed to stderr.
			ErrorLog: stdlog.New(debugWriter{h.log.With().Str("listener", s.l.String()).Logger()}, "", 0)}
		go func(s *restServer) {
			if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				w.log.Error().Err(err).Str("listener", s.l.String()).Msg("REST server stopped")
			}
		}(s)
	}
}

// debugWriter writes the http.Server's own log lines at debug.
type debugWriter struct{ log zerolog.Logger }

func (d debugWriter) Write(p []byte) (int, error) {
	d.log.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
