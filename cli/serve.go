package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/wal"
)

// exitFatal is the exit code after a storage failure (a failed fsync).
const exitFatal = 3

func serve(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", "", "config file (default: the embedded default)")
	recovery := fs.String("wal-recovery", wal.RecoverStrict, "strict: refuse to start on a corrupt WAL record before the tail; truncate: cut the log there")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *recovery != wal.RecoverStrict && *recovery != wal.RecoverTruncate {
		fmt.Fprintf(os.Stderr, "ankusa: -wal-recovery=%q must be strict or truncate\n", *recovery)
		return 2
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		printProblems(err)
		return exitConfig
	}
	log, err := newLogger(cfg.Log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ankusa:", err)
		return exitConfig
	}
	defer log.Sync()
	n, err := start(cfg, *recovery, log)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		return 1
	}
	if *path == "" {
		fmt.Fprintf(os.Stderr, "\nAnkusa is running on its embedded default config (data under %s).\nSend a hook:\n\n  curl -i -X POST http://%s/webhooks/demo -H 'content-type: application/json' -d '{\"hello\":\"world\"}'\n\nMetrics: http://%s/metrics   Stop: Ctrl-C\n\n", cfg.Node.DataDir, n.publicAddr, cfg.Admin.Listen)
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Info("draining", zap.String("signal", s.String()))
		return n.stop(log)
	case err := <-n.serveErr:
		log.Error("public listener failed; draining", zap.Error(err))
		n.stop(log)
		return 1
	}
}

type node struct {
	meta       *meta.Store
	wal        *wal.WAL
	segments   *segment.Store
	router     *edge.Router
	public     interface{ ShutdownWithContext(context.Context) error }
	admin      *http.Server
	publicAddr string
	serveErr   chan error
	ready      atomic.Bool
}

func start(cfg *config.Config, recovery string, log *zap.Logger) (*node, error) {
	if cfg.Archive.Type != "none" {
		log.Warn("archive is configured but this build does not archive yet; hooks stay in the local WAL", zap.String("archive.type", cfg.Archive.Type))
	}
	for _, name := range cfg.SourceNames() {
		if len(cfg.Sources[name].Sinks) > 0 {
			log.Warn("source has sinks but this build does not dispatch yet; its hooks are stored in the WAL and not delivered", zap.String("source", name))
		}
	}
	dataDir := cfg.Node.DataDir
	if err := wal.MkdirAllSynced(vfs.Default, dataDir); err != nil {
		return nil, fmt.Errorf("cannot create node.data_dir %q: %w", dataDir, err)
	}
	sugar := log.Sugar()
	ms, err := meta.Open(meta.Options{
		Dir:    filepath.Join(dataDir, "meta"),
		Logf:   func(f string, a ...any) { sugar.Debugf("pebble: "+f, a...) },
		Errorf: func(f string, a ...any) { sugar.Errorf("pebble: "+f, a...) },
		Fatalf: func(f string, a ...any) { sugar.Fatalf("pebble: "+f, a...) },
	})
	if err != nil {
		return nil, err
	}
	n := &node{meta: ms, serveErr: make(chan error, 1)}
	ordinal, err := nodeIdentity(cfg, ms)
	if err != nil {
		ms.Close()
		return nil, err
	}
	floorSeq, floorID, err := ms.WALCheckpoint()
	if err != nil {
		ms.Close()
		return nil, err
	}
	// The catalogue outlives the WAL files behind it (DESIGN.md §6 item 1).
	catSeq, catID, err := segment.Floor(ms)
	if err != nil {
		ms.Close()
		return nil, err
	}
	if catSeq > floorSeq {
		floorSeq, floorID = catSeq, catID
	}
	tenants, err := ms.Tenants()
	if err != nil {
		ms.Close()
		return nil, err
	}
	w, err := wal.Open(wal.Options{
		FS:            vfs.Default,
		Dir:           filepath.Join(dataDir, "wal"),
		MaxFileBytes:  int64(cfg.WAL.MaxFileBytes),
		MaxBatchBytes: int64(cfg.WAL.MaxBatchBytes),
		Node:          ordinal,
		FloorSeq:      floorSeq,
		FloorID:       floorID,
		Tenants:       tenants,
		Recovery:      recovery,
		Logf:          func(f string, a ...any) { sugar.Warnf(f, a...) },
		OnFatal:       fatalStorage(log),
		OnTenant: func(name string, ord uint32) {
			if err := ms.SetTenant(name, ord); err != nil {
				log.Error("cannot mirror tenant ordinal", zap.String("tenant", name), zap.Error(err))
			}
		},
	})
	if err != nil {
		ms.Close()
		return nil, err
	}
	n.wal = w
	log.Info("wal recovered", zap.Uint64("last_seq", w.LastSeq()), zap.Stringer("last_id", w.LastID()), zap.Int("tenants", w.TenantCount()))
	n.segments, err = segment.Open(segment.Options{
		FS:          vfs.Default,
		Dir:         filepath.Join(dataDir, "segments"),
		Log:         w,
		Meta:        ms,
		MaxBytes:    int64(cfg.Segment.MaxBytes),
		MaxAge:      time.Duration(cfg.Segment.MaxAge),
		RetainLocal: time.Duration(cfg.Segment.RetainLocal),
		// No dispatch stage yet: DispatchCheckpoint stays nil, so no WAL
		// file is deleted (DESIGN.md §6 item 3: keep it rather than guess).
		Logger:  log,
		OnFatal: fatalStorage(log),
	})
	if err != nil {
		n.closeStorage(log)
		return nil, err
	}
	if last, ok, err := ms.LastSegment(); err == nil && ok {
		log.Info("segments recovered", zap.Uint64("last_sealed_seq", last.LastSeq))
	}

	resolver, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		n.closeStorage(log)
		return nil, err
	}
	n.router = edge.NewRouter(edge.Options{
		Resolver:      resolver,
		Sources:       source.NewStatic(cfg),
		RoutesEnabled: cfg.Routes.Enabled,
		WAL:           w,
		Limits:        cfg.Limits,
		Logger:        log,
	})
	if err := n.startAdmin(cfg, log); err != nil {
		n.closeStorage(log)
		return nil, err
	}
	ln, err := edge.Listen(cfg.Listen, cfg.Limits.MaxConnections)
	if err != nil {
		n.admin.Close()
		n.closeStorage(log)
		return nil, err
	}
	n.publicAddr = ln.Addr().String()
	srv := edge.NewServer(n.router, cfg.Limits, log)
	n.public = srv
	go func() {
		if err := srv.Serve(ln); err != nil {
			n.serveErr <- err
		}
	}()
	n.ready.Store(true)
	log.Info("serving", zap.String("listen", n.publicAddr), zap.String("admin", cfg.Admin.Listen),
		zap.String("node", cfg.Node.Name), zap.String("resolver", cfg.RouteResolver.Type), zap.Int("sources", len(cfg.Sources)))
	return n, nil
}

// nodeIdentity checks the data directory belongs to this node and returns
// its ordinal.
func nodeIdentity(cfg *config.Config, ms *meta.Store) (uint16, error) {
	ordinal := nameOrdinal(cfg.Node.Name)
	if cfg.Node.Ordinal != nil {
		ordinal = uint16(*cfg.Node.Ordinal)
	}
	stored, found, err := ms.NodeIdentity()
	if err != nil {
		return 0, err
	}
	if found {
		if stored.Name != cfg.Node.Name || stored.Ordinal != ordinal {
			return 0, fmt.Errorf("node.data_dir %q belongs to node %q (ordinal %d), not %q (ordinal %d): a node's name and ordinal are part of its event ids and archive keys; use the original node.name and node.ordinal or another data_dir",
				cfg.Node.DataDir, stored.Name, stored.Ordinal, cfg.Node.Name, ordinal)
		}
		return ordinal, nil
	}
	return ordinal, ms.SetNodeIdentity(meta.Node{Name: cfg.Node.Name, Ordinal: ordinal, CreatedAt: time.Now().UTC()})
}

// nameOrdinal derives a node ordinal from its name; fleets set
// node.ordinal to rule out collisions.
func nameOrdinal(name string) uint16 {
	h := fnv.New32a()
	h.Write([]byte(name))
	s := h.Sum32()
	return uint16(s>>16) ^ uint16(s)
}

func (n *node) startAdmin(cfg *config.Config, log *zap.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		metrics.WritePrometheus(w, true)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if n.wal.Failed() {
			http.Error(w, "wal failed", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !n.ready.Load() || n.wal.Failed() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	// Profiles, for measuring before optimising; the admin listener is
	// loopback by default.
	if err := admin.Register(mux, admin.Options{Tokens: cfg.Admin.Tokens, Hooks: hookFetcher{n.segments}, Logger: log}); err != nil {
		return err
	}
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", cfg.Admin.Listen)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (config key admin.listen): %w", cfg.Admin.Listen, err)
	}
	n.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := n.admin.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin listener failed", zap.Error(err))
		}
	}()
	return nil
}

// stop drains: stop accepting, let every admitted request finish its
// commit, close the WAL (committing what is queued), record the numbering
// floor, close the meta store.
func (n *node) stop(log *zap.Logger) int {
	n.ready.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := 0
	if err := n.public.ShutdownWithContext(ctx); err != nil {
		log.Error("public listener did not drain in time", zap.Error(err))
		code = 1
	}
	_ = n.admin.Close()
	if !n.closeStorage(log) {
		code = 1
	}
	log.Info("stopped", zap.Int("exit", code))
	return code
}

// fatalStorage is the OnFatal of the storage stages: nothing past a failed
// write or sync is acknowledged; stop at once (DESIGN.md §6 item 8).
func fatalStorage(log *zap.Logger) func(error) {
	return func(err error) {
		log.Error("storage failure: stopping the node", zap.Error(err))
		_ = log.Sync()
		os.Exit(exitFatal)
	}
}

func (n *node) closeStorage(log *zap.Logger) bool {
	good := true
	if n.segments != nil {
		if err := n.segments.Close(); err != nil {
			log.Error("cannot close the segment store", zap.Error(err))
			good = false
		}
	}
	if err := n.wal.Close(); err != nil {
		log.Error("cannot close wal", zap.Error(err))
		good = false
	} else if err := n.meta.SetWALCheckpoint(n.wal.LastSeq(), n.wal.LastID()); err != nil {
		log.Error("cannot record wal checkpoint", zap.Error(err))
		good = false
	}
	if err := n.meta.Close(); err != nil {
		log.Error("cannot close meta store", zap.Error(err))
		good = false
	}
	return good
}

func newLogger(c config.Log) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.Set(c.Level); err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	zc := zap.NewProductionConfig()
	if c.Format == "console" {
		zc = zap.NewDevelopmentConfig()
		zc.DisableStacktrace = true
	}
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.Sampling = nil
	return zc.Build()
}

// hookFetcher serves the admin API's hook fetch from the segment store.
type hookFetcher struct{ s *segment.Store }

func (f hookFetcher) Fetch(_ context.Context, _ string, id envelope.ID) (*envelope.Envelope, error) {
	e, err := f.s.Fetch(id)
	// A hook whose segment retention removed from local disk is not on this
	// node any more; reading it from the archive arrives with the archive.
	if errors.Is(err, segment.ErrNotFound) || errors.Is(err, segment.ErrRemoved) {
		return nil, fmt.Errorf("%w: %w", admin.ErrHookNotFound, err)
	}
	return e, err
}
