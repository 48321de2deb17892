package ui

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"

	"github.com/sluice-io/sluice/internal/control"
)

//go:embed assets
var assets embed.FS

// Handler serves the dashboard: GET /ui (the page), GET /ui/assets/...
// (its script and style sheet) and GET /ui/state (the view as JSON, built
// by build for every request). It is mounted behind the REST API's
// listeners, so the same authentication applies; the page's script calls
// the REST API on the same origin, where the browser sends the
// credentials it already has.
func Handler(build func(ctx context.Context) (View, error)) http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	mux := http.NewServeMux()
	files := http.FileServerFS(sub)
	mux.Handle("GET /ui/assets/", http.StripPrefix("/ui/assets/", noCache(files)))
	mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		page, err := assets.ReadFile("assets/index.html")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(page)
	})
	mux.HandleFunc("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui", http.StatusMovedPermanently)
	})
	mux.HandleFunc("GET /ui/state", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		v, err := build(r.Context())
		if err != nil {
			code := control.StatusCode(err)
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	})
	return mux
}

// noCache makes the browser revalidate the assets, so that a worker
// upgraded in place serves its own script, not the one cached.
func noCache(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}
