package rest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// ResponseHeadersKey is Connect's key for extra REST response headers.
const ResponseHeadersKey = "response.http.headers.config"

// ResponseHeaders are the headers response.http.headers.config adds to
// every answer, as Connect's Jetty HeaderFilter does: a comma-separated
// list of `[action] [header name]:[header value]`, where the action is set
// (replace), add (append), setDate or addDate (the value is milliseconds
// from now, written as an HTTP date). They are written before the API
// answers, so the API's own headers (Content-Type) win, as in Jetty.
type ResponseHeaders struct {
	rules []headerRule
}

type headerRule struct {
	name, value string
	add, date   bool
	offset      time.Duration
}

// ParseResponseHeaders validates the key's value as Connect's
// RestServerConfig does, naming the key and the bad entry; nil when the
// value is empty.
func ParseResponseHeaders(v string) (*ResponseHeaders, error) {
	entries := connectors.SplitList(v)
	if len(entries) == 0 {
		return nil, nil
	}
	h := &ResponseHeaders{}
	for _, e := range entries {
		action, header, ok := strings.Cut(strings.TrimSpace(e), " ")
		if !ok {
			return nil, fmt.Errorf("%s: invalid format of header config %q: expected '[action] [header name]:[header value]'", ResponseHeadersKey, e)
		}
		var r headerRule
		switch strings.ToLower(action) {
		case "set":
		case "add":
			r.add = true
		case "setdate":
			r.date = true
		case "adddate":
			r.add, r.date = true, true
		default:
			return nil, fmt.Errorf("%s: invalid header config action %q in %q: expected one of set, add, setDate, addDate", ResponseHeadersKey, action, e)
		}
		parts := strings.Split(strings.TrimSpace(header), ":")
		if len(parts) != 2 {
			return nil, fmt.Errorf("%s: invalid format of header name and header value pair %q: expected '[header name]:[header value]'", ResponseHeadersKey, header)
		}
		r.name, r.value = strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1])
		if r.name == "" || strings.ContainsAny(r.name, " \t\r\n") {
			return nil, fmt.Errorf("%s: invalid header name %q in %q", ResponseHeadersKey, r.name, e)
		}
		if r.date {
			ms, err := strconv.ParseInt(r.value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: a %s header's value is milliseconds from now, not %q", ResponseHeadersKey, e, action, r.value)
			}
			r.offset = time.Duration(ms) * time.Millisecond
		}
		h.rules = append(h.rules, r)
	}
	return h, nil
}

// Wrap returns next with the headers added to every answer.
func (h *ResponseHeaders) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := w.Header()
		for _, rule := range h.rules {
			v := rule.value
			if rule.date {
				v = time.Now().Add(rule.offset).UTC().Format(http.TimeFormat)
			}
			if rule.add {
				out.Add(rule.name, v)
			} else {
				out.Set(rule.name, v)
			}
		}
		next.ServeHTTP(w, r)
	})
}
