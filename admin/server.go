package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/console"
	"github.com/ankusa/ankusa/segment"
)

// Health says whether the node's storage has failed (the WAL: a failed
// write or sync stops it for good).
type Health interface{ Failed() bool }

// Storage says why the node refuses hooks for want of disk space ("" when
// it does not): the node's storage monitor, DESIGN.md §6 item 10.
type Storage interface{ NoSpace() string }

// DamageReport lists the node's damaged local segments (*segment.Store):
// /readyz names each, and still answers 200, since ingest and every other
// hook are unaffected and taking the node out of the load balancer would
// not bring the hooks back; the operator restores or accepts the loss.
type DamageReport interface{ Damaged() []segment.Damage }

// ListenerOptions bound what a client may hold of the admin listener
// (config keys admin.*); a zero field takes the config default.
type ListenerOptions struct {
	ReadTimeout       time.Duration // admin.read_timeout: a whole request, body included
	ReadHeaderTimeout time.Duration // admin.read_header_timeout
	WriteTimeout      time.Duration // admin.write_timeout
	IdleTimeout       time.Duration // admin.idle_timeout: a keep-alive connection between requests
	MaxConnections    int           // admin.max_connections: one past it is 503 overloaded
	MaxBodyBytes      int64         // admin.max_body_bytes: 413 past it
}

// defaultMaxBody bounds a body read outside a front (a bare mux).
const defaultMaxBody = config.DefaultAdminMaxBodyBytes

// maxHeaderBytes bounds a request's header: admin requests carry a token
// and little else.
const maxHeaderBytes = 64 << 10

// EnsureDefaults fills every zero field with the config default.
func (l *ListenerOptions) EnsureDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&l.ReadTimeout, config.DefaultAdminReadTimeout)
	def(&l.ReadHeaderTimeout, config.DefaultAdminReadHeaderTimeout)
	def(&l.WriteTimeout, config.DefaultAdminWriteTimeout)
	def(&l.IdleTimeout, config.DefaultAdminIdleTimeout)
	if l.MaxConnections == 0 {
		l.MaxConnections = config.DefaultAdminMaxConnections
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = config.DefaultAdminMaxBodyBytes
	}
}

// Server is the admin listener: the /v1 API behind the token guard, the
// profiles under /debug/pprof/ behind the debug scope, and, open to anyone
// who can reach the listener (loopback by default), /metrics (Prometheus
// text), /healthz (503 once storage has failed) and /readyz (503 until
// SetReady(true), once storage has failed, and while the disk is full,
// naming it), and the operator's console under /console/.
type Server struct {
	srv     *http.Server
	ln      *limitListener
	health  Health
	storage Storage
	damage  DamageReport
	ready   atomic.Bool
	log     *zap.Logger
	limits  ListenerOptions
}

// Listen checks o, listens on addr (config key admin.listen) and serves,
// within o.Listener's bounds.
func Listen(addr string, o Options) (*Server, error) {
	auth, err := NewAuth(o.Tokens)
	if err != nil {
		return nil, err
	}
	s := &Server{health: o.Health, storage: o.Storage, damage: o.Damage, log: o.Logger, limits: o.Listener}
	s.limits.EnsureDefaults()
	if s.log == nil {
		s.log = zap.NewNop()
	}
	mux := http.NewServeMux()
	if err := register(mux, auth, o); err != nil {
		return nil, err
	}
	s.registerOpen(mux, auth)
	registerConsole(mux)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (config key admin.listen): %w", addr, err)
	}
	s.ln = newLimitListener(ln, s.limits.MaxConnections)
	s.srv = &http.Server{
		Handler:           &front{mux: mux, auth: auth, maxBody: s.limits.MaxBodyBytes},
		ReadTimeout:       s.limits.ReadTimeout,
		ReadHeaderTimeout: s.limits.ReadHeaderTimeout,
		WriteTimeout:      s.limits.WriteTimeout,
		IdleTimeout:       s.limits.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          zap.NewStdLog(s.log.Named("admin-http")),
	}
	go func() {
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin listener failed", zap.Error(err))
		}
	}()
	return s, nil
}

// registerOpen adds the routes that need no token, and the profiles.
func (s *Server) registerOpen(mux router, auth *Auth) {
	mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		metrics.WritePrometheus(w, true)
	}))
	mux.Handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if s.failed() {
			http.Error(w, "wal failed", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	mux.Handle("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() || s.failed() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		if s.storage != nil {
			if why := s.storage.NoSpace(); why != "" {
				http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
		if s.damage != nil {
			for _, d := range s.damage.Damaged() {
				fmt.Fprintln(w, "damaged:", d.String())
			}
		}
	}))
	// Profiles, for measuring before optimising: the index serves the
	// named ones (heap, goroutine, allocs, block, mutex, threadcreate).
	mux.Handle("GET /debug/pprof/", auth.DebugGuard(http.HandlerFunc(pprof.Index)))
	mux.Handle("GET /debug/pprof/profile", auth.DebugGuard(s.timed(pprof.Profile, 30, true)))
	mux.Handle("GET /debug/pprof/symbol", auth.DebugGuard(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("GET /debug/pprof/trace", auth.DebugGuard(s.timed(pprof.Trace, 1, false)))
}

// timed serves a profile that runs for ?seconds= (def when absent): it
// must end inside admin.write_timeout, or the answer would be cut, so a
// longer one is 400 naming the key. With whole, seconds must be a whole
// number (the CPU profile reads no fraction: it would run for its default
// instead).
func (s *Server) timed(h http.HandlerFunc, def float64, whole bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sec, v := def, r.URL.Query().Get("seconds")
		if v != "" {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil || !(n > 0) || whole && n != float64(int64(n)) {
				kind := "a number"
				if whole {
					kind = "a whole number"
				}
				writeError(w, http.StatusBadRequest, codeInvalidQuery, fmt.Sprintf("seconds: %q must be %s of seconds above 0", v, kind))
				return
			}
			sec = n
		}
		if limit := s.limits.WriteTimeout; time.Duration(sec*float64(time.Second)) >= limit-time.Second/2 {
			writeError(w, http.StatusBadRequest, codeInvalidQuery, fmt.Sprintf(
				"seconds: %v is not below admin.write_timeout (%s) less half a second, so the profile could not be sent; ask for fewer seconds or raise admin.write_timeout", sec, limit))
			return
		}
		h(w, r)
	})
}

// registerConsole mounts the operator's console (package console): static
// files that need no token, since every piece of data the page shows is an
// API call with the operator's own. It is not part of the API, so the
// OpenAPI document (and Patterns) leave it out.
func registerConsole(mux router) {
	mux.Handle("GET /console/", console.Handler())
	mux.Handle("GET /console", console.Redirect())
}

func (s *Server) failed() bool { return s.health != nil && s.health.Failed() }

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// SetReady says whether the node serves hooks (/readyz).
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// Close stops the listener and closes every connection.
func (s *Server) Close() error { return s.srv.Close() }

// Shutdown stops accepting and waits, until ctx is done, for the requests
// in flight to be answered (a write commits before the stores close);
// then it closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	return err
}
