package admin

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"
)

// Health says whether the node's storage has failed (the WAL: a failed
// write or sync stops it for good).
type Health interface{ Failed() bool }

// Server is the admin listener: the /v1 API behind the token guard, and,
// open to anyone who can reach the listener (loopback by default),
// /metrics (Prometheus text), /healthz (503 once storage has failed),
// /readyz (503 until SetReady(true), and once storage has failed) and the
// profiles under /debug/pprof/.
type Server struct {
	srv    *http.Server
	ln     net.Listener
	health Health
	ready  atomic.Bool
	log    *zap.Logger
}

// Listen checks o, listens on addr (config key admin.listen) and serves.
func Listen(addr string, o Options) (*Server, error) {
	mux := http.NewServeMux()
	if err := Register(mux, o); err != nil {
		return nil, err
	}
	s := &Server{health: o.Health, log: o.Logger}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.registerOpen(mux)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (config key admin.listen): %w", addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin listener failed", zap.Error(err))
		}
	}()
	return s, nil
}

// registerOpen adds the routes that need no token.
func (s *Server) registerOpen(mux *http.ServeMux) {
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		metrics.WritePrometheus(w, true)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if s.failed() {
			http.Error(w, "wal failed", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() || s.failed() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	// Profiles, for measuring before optimising.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

func (s *Server) failed() bool { return s.health != nil && s.health.Failed() }

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// SetReady says whether the node serves hooks (/readyz).
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Close stops the listener and closes every connection.
func (s *Server) Close() error { return s.srv.Close() }
