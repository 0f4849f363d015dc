package main

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"sluice/ops"
)

// serveDebug serves Go's runtime profiles (/debug/pprof/...) for profiling a running broker,
// e.g. `go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=30`.
func serveDebug(addr string, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	logger.Info("serving profiles", "addr", ln.Addr().String())
	go func() {
		if err := http.Serve(ln, mux); err != nil {
			logger.Warn("debug listener stopped", "err", err)
		}
	}()
	return nil
}

// observeRequest is wire.Config.ObserveRequest for the metrics server s, nil without one (so
// --http-addr off costs the request path nothing).
func observeRequest(s *ops.Server) func(key, version int16, elapsed time.Duration) {
	if s == nil {
		return nil
	}
	return s.ObserveRequest
}
