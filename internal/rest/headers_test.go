package rest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/internal/rest"
)

func TestResponseHeaders(t *testing.T) {
	h, err := rest.ParseResponseHeaders("set X-Frame-Options: DENY, add Cache-Control: no-store, ADD Cache-Control: private, setDate Expires: 3600000, set Content-Type: text/html")
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json") // the API's own header wins
		w.WriteHeader(200)
	})).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	got := rec.Header()
	if got.Get("X-Frame-Options") != "DENY" || strings.Join(got.Values("Cache-Control"), ",") != "no-store,private" ||
		got.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", got)
	}
	exp, err := http.ParseTime(got.Get("Expires"))
	if err != nil || exp.Before(time.Now().Add(59*time.Minute)) || exp.After(time.Now().Add(61*time.Minute)) {
		t.Fatalf("Expires %q (%v), want an hour from now", got.Get("Expires"), err)
	}
	if h, err := rest.ParseResponseHeaders(" "); h != nil || err != nil {
		t.Fatalf("empty value: %v %v", h, err)
	}
	for in, want := range map[string]string{
		"X-Frame-Options:DENY":      "invalid format of header config",
		"put X-Frame-Options: DENY": `invalid header config action "put"`,
		"set X-Frame-Options":       "header name and header value pair",
		"set X-A: b: c":             "header name and header value pair",
		"set : DENY":                "invalid header name",
		"set X Frame: DENY":         "invalid header name",
		"addDate Expires: tomorrow": "milliseconds from now",
	} {
		if _, err := rest.ParseResponseHeaders(in); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), rest.ResponseHeadersKey) {
			t.Errorf("%q: %v, want an error naming the key and %q", in, err, want)
		}
	}
}
