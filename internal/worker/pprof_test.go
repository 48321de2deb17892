package worker

import (
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
)

func startPprofWorker(t *testing.T, enable bool, props map[string]string) string {
	t.Helper()
	w := startUnconnected(t, Config{Cluster: "pp", Props: props, EnablePprof: enable})
	main, _ := w.ListenerURLs()
	return main[0]
}

// The profiles are off unless asked for (--pprof): a worker at its
// defaults answers /debug/pprof/ 404.
func TestPprofOffByDefault(t *testing.T) {
	base := startPprofWorker(t, false, map[string]string{"listeners": "http://127.0.0.1:0"})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine"} {
		if code := status(t, http.DefaultClient, base+p); code != http.StatusNotFound {
			t.Errorf("GET %s at the defaults: %d, want 404", p, code)
		}
	}
}

// With --pprof the profiles are served behind the REST API's basic
// authentication: 401 without the credentials of a REST user, the profile
// with them.
func TestPprofNeedsTheRESTCredentials(t *testing.T) {
	base := startPprofWorker(t, true, basicAuthProps(t, "operator", "profile-secret"))
	url := base + "/debug/pprof/goroutine?debug=1"
	if code := status(t, http.DefaultClient, url); code != http.StatusUnauthorized {
		t.Fatalf("GET /debug/pprof/goroutine without credentials: %d, want 401", code)
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("operator:profile-secret")))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
		t.Fatalf("GET /debug/pprof/goroutine with credentials: %d %.200q, want 200 and the profile", res.StatusCode, body)
	}
}
