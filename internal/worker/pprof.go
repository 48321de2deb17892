package worker

import (
	"net/http"
	"net/http/pprof"
)

// withPprof serves Go's profiles under /debug/pprof/ beside the REST API
// when Config.EnablePprof is set (the --pprof flag), so that they are behind
// the same listeners, TLS and authentication. Off by default: a profile
// shows the process's code paths and, in a goroutine dump, the arguments
// of its calls, which only an operator who asked for it should see.
func (w *Worker) withPprof(api http.Handler) http.Handler {
	if !w.cfg.EnablePprof {
		return api
	}
	mux := http.NewServeMux()
	// pprof.Index serves the named profiles (heap, goroutine, allocs,
	// block, mutex, threadcreate) under /debug/pprof/<name>.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.Handle("/", api)
	return mux
}
