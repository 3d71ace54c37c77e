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
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/archive"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/envelope"
	"github.com/ankusa/ankusa/internal/redisx"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
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
	dispatch   atomic.Pointer[dispatch.Dispatcher]
	uploader   atomic.Pointer[archive.Uploader]
	direct     *dispatch.Direct // wal.type: none
	router     *edge.Router
	fleet      *dedupe.Fleet  // dedupe.scope: fleet
	rdb        *redis.Client  // rate_limits.scope: fleet
	policy     *tenant.Policy // every tenant's limits, overrides included
	public     interface{ ShutdownWithContext(context.Context) error }
	admin      *http.Server
	publicAddr string
	serveErr   chan error
	ready      atomic.Bool
}

func start(cfg *config.Config, recovery string, log *zap.Logger) (*node, error) {
	dataDir := cfg.Node.DataDir
	if err := vfsutil.MkdirAllSynced(vfs.Default, dataDir); err != nil {
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
	sources := source.NewStatic(cfg)
	var commit edge.Committer
	if cfg.WAL.Type == "none" {
		commit, err = n.openDirect(cfg, ordinal, sources, log)
	} else {
		commit, err = n.openDisk(cfg, recovery, ordinal, sources, log)
	}
	if err != nil {
		n.closeStorage(log)
		return nil, err
	}

	resolver, err := edge.NewResolver(cfg.RouteResolver)
	if err != nil {
		n.closeStorage(log)
		return nil, err
	}
	// Every tenant's limits: the config's, and overrides set at runtime
	// (stored in the meta store, so they survive a restart).
	n.policy = tenant.NewPolicy(cfg.RateLimits)
	if err := n.policy.LoadOverrides(n.meta); err != nil {
		n.closeStorage(log)
		return nil, err
	}
	limiter, err := n.rateLimiter(cfg, log)
	if err != nil {
		n.closeStorage(log)
		return nil, err
	}
	stage, err := n.dedupeStage(cfg, log)
	if err != nil {
		n.closeStorage(log)
		return nil, err
	}
	var pen edge.Pen
	if d := n.dispatch.Load(); d != nil {
		pen = penAdapter{d}
	}
	mono := monotonic()
	var known func(string) bool
	var full func() bool
	if w := n.wal; w != nil {
		known = func(t string) bool { _, ok := w.Ordinal(t); return ok }
		full = func() bool { return w.TenantCount() >= cfg.Tenants.Max }
	}
	n.router = edge.NewRouter(edge.Options{
		Resolver:      resolver,
		Sources:       sources,
		RoutesEnabled: cfg.Routes.Enabled,
		WAL:           commit,
		Limits:        cfg.Limits,
		Logger:        log,
		Pen:           pen,
		Dedupe:        stage,
		Tenants:       limiter,
		Queues:        tenant.NewPolicyQueues(n.policy),
		Mono:          mono,
		TenantKnown:   known,
		TenantsFull:   full,
		NewTenants:    tenant.NewBucket(cfg.Tenants.CreateRate, cfg.Tenants.CreateBurst, mono()),
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

// openDisk opens the WAL, the segment store and dispatch (wal.type: disk)
// and returns the WAL as the edge's commit step.
func (n *node) openDisk(cfg *config.Config, recovery string, ordinal uint16, sources *source.Static, log *zap.Logger) (edge.Committer, error) {
	ms := n.meta
	dataDir := cfg.Node.DataDir
	sugar := log.Sugar()
	floorSeq, floorID, err := ms.WALCheckpoint()
	if err != nil {
		return nil, err
	}
	// The catalogue outlives the WAL files behind it (DESIGN.md §6 item 1).
	catSeq, catID, err := segment.Floor(ms)
	if err != nil {
		return nil, err
	}
	if catSeq > floorSeq {
		floorSeq, floorID = catSeq, catID
	}
	// Rows are keyed by seq: a seq at or below the dispatch checkpoint is
	// never given again, even after -wal-recovery=truncate cut the log.
	dispSeq, err := ms.DispatchCheckpoint()
	if err != nil {
		return nil, err
	}
	floorSeq = max(floorSeq, dispSeq)
	tenants, err := ms.Tenants()
	if err != nil {
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
		MaxTenants:    cfg.Tenants.Max,
		Recovery:      recovery,
		Logf:          func(f string, a ...any) { sugar.Warnf(f, a...) },
		OnFatal:       fatalStorage(log),
		OnDurable: func(b []*wal.Request) {
			if d := n.dispatch.Load(); d != nil {
				d.Handoff(b)
			}
		},
		OnTenant: func(name string, ord uint32) {
			if err := ms.SetTenant(name, ord); err != nil {
				log.Error("cannot mirror tenant ordinal", zap.String("tenant", name), zap.Error(err))
			}
		},
	})
	if err != nil {
		return nil, err
	}
	n.wal = w
	log.Info("wal recovered", zap.Uint64("last_seq", w.LastSeq()), zap.Stringer("last_id", w.LastID()), zap.Int("tenants", w.TenantCount()))
	backend, layout, err := archive.Open(cfg.Archive)
	if err != nil {
		return nil, err
	}
	var remote segment.Remote
	if backend != nil {
		remote = archive.NewReader(backend, layout, cfg.Node.Name)
		if !slices.Contains(cfg.Node.Roles, "archive") {
			log.Warn("archive is configured but node.roles lacks archive: segments are not uploaded, so none is ever removed from local disk", zap.String("archive", backend.String()))
		}
	}
	n.segments, err = segment.Open(segment.Options{
		FS:          vfs.Default,
		Dir:         filepath.Join(dataDir, "segments"),
		Log:         w,
		Meta:        ms,
		MaxBytes:    int64(cfg.Segment.MaxBytes),
		MaxAge:      time.Duration(cfg.Segment.MaxAge),
		RetainLocal: time.Duration(cfg.Segment.RetainLocal),
		// Until dispatch has opened, nothing is deleted (DESIGN.md §6
		// item 3: keep it rather than guess).
		DispatchCheckpoint: func() uint64 {
			if d := n.dispatch.Load(); d != nil {
				return d.Checkpoint()
			}
			return 0
		},
		Remote: remote,
		OnSealed: func() {
			if u := n.uploader.Load(); u != nil {
				u.Notify()
			}
		},
		CanRemoveLocal: func(e meta.SegmentEntry) bool {
			if backend != nil {
				// Archived: fetch and retries read the archive from now on
				// (DESIGN.md §6 item 3: only after a synced archived mark).
				return e.Archived
			}
			d := n.dispatch.Load()
			if d == nil {
				return false
			}
			live, err := ms.HoldsLive(e.FirstSeq, e.LastSeq)
			if err != nil {
				log.Error("cannot tell whether a segment still holds undelivered hooks; keeping it", zap.String("segment", e.Name), zap.Error(err))
			}
			return err == nil && !live
		},
		Logger:  log,
		OnFatal: fatalStorage(log),
	})
	if err != nil {
		return nil, err
	}
	if last, ok, err := ms.LastSegment(); err == nil && ok {
		log.Info("segments recovered", zap.Uint64("last_sealed_seq", last.LastSeq))
	}
	if backend != nil && slices.Contains(cfg.Node.Roles, "archive") {
		u, err := archive.StartUploader(archive.UploaderOptions{
			Backend: backend, Layout: layout, Node: cfg.Node.Name, Meta: ms,
			FS: vfs.Default, Dir: filepath.Join(dataDir, "segments"),
			Concurrency: cfg.Archive.Concurrency,
			Logger:      log, OnFatal: fatalStorage(log),
		})
		if err != nil {
			return nil, err
		}
		n.uploader.Store(u)
		if s3, ok := backend.(*archive.S3); ok {
			// An unreachable archive does not stop ingest (segments wait on
			// local disk), but a wrong bucket must be seen at once.
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := s3.Check(ctx); err != nil {
					log.Error("archive: cannot reach the bucket; segments stay on local disk until it answers", zap.Error(err))
				}
			}()
		}
		log.Info("archiving sealed segments", zap.String("archive", backend.String()), zap.String("prefix", layout.Prefix))
	}

	d, err := dispatch.Open(dispatch.Options{
		Meta:    ms,
		Hooks:   n.segments,
		Sources: sources,
		NewSink: newSink(cfg, log),
		Ordinal: w.Ordinal,
		LastSeq: w.LastSeq(),
		// The attempt log costs disk per delivery; its TTL is the knob.
		IntakeBytes:   int64(cfg.Dispatch.IntakeBytes),
		AttemptLogTTL: time.Duration(cfg.Dispatch.AttemptLogTTL),
		DedupeNode:    cfg.Dedupe.Scope == "node",
		MaxPenBytes:   int64(cfg.Limits.MaxQuarantineBytes),
		Logger:        log,
		OnFatal:       fatalStorage(log),
	})
	if err != nil {
		return nil, err
	}
	n.dispatch.Store(d)

	return w, nil
}

// dedupeStage is router step 13 for the configured scope, or nil when no
// source dedupes.
func (n *node) dedupeStage(cfg *config.Config, log *zap.Logger) (*dedupe.Stage, error) {
	uses := false
	for _, s := range cfg.Sources {
		uses = uses || s.Dedupe != nil
	}
	if !uses {
		return nil, nil
	}
	if cfg.Dedupe.Scope == "fleet" {
		redis.SetLogger(redisLogger{log.Named("redis")})
		f, err := dedupe.NewFleet(dedupe.FleetOptions{URL: cfg.Redis.URL, Namespace: cfg.Redis.Namespace, Logger: log})
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := f.Ping(ctx); err != nil {
			// Dedupe never drops a hook: without Redis, hooks go through
			// as new ones until it answers.
			log.Warn("dedupe.scope is fleet and Redis does not answer; hooks are not deduplicated until it does", zap.String("redis.url", redactURL(cfg.Redis.URL)), zap.Error(err))
		}
		n.fleet = f
		return dedupe.NewFleetStage(f, log), nil
	}
	d := n.dispatch.Load()
	if d == nil {
		return nil, errors.New("dedupe.scope: node needs the node's log (wal.type: disk)")
	}
	return dedupe.NewNodeStage(dedupe.NewNode(n.meta, n.wal.Ordinal), d.Written, log), nil
}

// monotonic is a monotonic clock in nanoseconds.
func monotonic() func() int64 {
	start := time.Now()
	return func() int64 { return int64(time.Since(start)) }
}

// rateLimiter is the tenants' token buckets: on the node, or shared
// through Redis (rate_limits.scope: fleet).
func (n *node) rateLimiter(cfg *config.Config, log *zap.Logger) (edge.RateLimiter, error) {
	if cfg.RateLimits.Scope != "fleet" {
		return tenant.NewPolicyLimiter(n.policy, monotonic()), nil
	}
	redis.SetLogger(redisLogger{log.Named("redis")})
	rdb, addr, err := redisx.NewClient(cfg.Redis.URL)
	if err != nil {
		return nil, err
	}
	n.rdb = rdb
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		log.Warn("rate_limits.scope is fleet and Redis does not answer; each node limits tenants with its own buckets until it does", zap.String("redis.url", addr), zap.Error(err))
	}
	return tenant.NewPolicyFleetLimiter(n.policy, rdb, cfg.Redis.Namespace, monotonic(), log), nil
}

// redactURL is u with its password replaced, for logs.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable)"
	}
	return p.Redacted()
}

// redisLogger routes go-redis's own lines (failed dials at the start of an
// outage) into the node's log.
type redisLogger struct{ log *zap.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn(fmt.Sprintf(format, v...))
}

// penAdapter is the dispatcher's quarantine pen as the edge asks for it.
type penAdapter struct{ d *dispatch.Dispatcher }

func (p penAdapter) Reserve(tenant string, size int64) edge.PenAnswer {
	switch ok, closed := p.d.ReservePen(tenant, size); {
	case ok:
		return edge.PenOK
	case closed:
		return edge.PenClosed
	}
	return edge.PenFull
}

func (p penAdapter) Unreserve(size int64) { p.d.UnreservePen(size) }

// openDirect is wal.type: none: hooks go to their sinks before the 201.
func (n *node) openDirect(cfg *config.Config, ordinal uint16, sources *source.Static, log *zap.Logger) (edge.Committer, error) {
	log.Warn("wal.type is none: a hook is acknowledged only once every sink of its source has taken it; nothing is stored on this node, so there are no retries, segments or hook fetches")
	d, err := dispatch.OpenDirect(dispatch.DirectOptions{Meta: n.meta, Sources: sources, NewSink: newSink(cfg, log), Node: ordinal, Logger: log})
	if err != nil {
		return nil, err
	}
	n.direct = d
	return d, nil
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
		if n.wal != nil && n.wal.Failed() {
			http.Error(w, "wal failed", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !n.ready.Load() || (n.wal != nil && n.wal.Failed()) {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	// Profiles, for measuring before optimising; the admin listener is
	// loopback by default.
	opts := admin.Options{Tokens: cfg.Admin.Tokens, Logger: log}
	if n.segments != nil {
		opts.Hooks = hookFetcher{n.segments}
	}
	if d := n.dispatch.Load(); d != nil {
		opts.Deliveries = deliveries{d}
		opts.Quarantine = quarantine{d}
	}
	if err := admin.Register(mux, opts); err != nil {
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
	if d := n.dispatch.Load(); d != nil {
		if err := d.Close(); err != nil {
			log.Error("cannot close dispatch", zap.Error(err))
			good = false
		}
	}
	if u := n.uploader.Load(); u != nil {
		u.Close()
	}
	if n.segments != nil {
		if err := n.segments.Close(); err != nil {
			log.Error("cannot close the segment store", zap.Error(err))
			good = false
		}
	}
	if n.direct != nil {
		if err := n.direct.Close(); err != nil {
			log.Error("cannot close the direct delivery stage", zap.Error(err))
			good = false
		}
	}
	if n.fleet != nil {
		_ = n.fleet.Close()
	}
	if n.rdb != nil {
		_ = n.rdb.Close()
	}
	if n.wal == nil {
		// wal.type: none, or a start that failed before the WAL opened.
	} else if err := n.wal.Close(); err != nil {
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
	// A hook whose segment retention removed from local disk is read from
	// the archive; with no archive it is not on this node any more.
	if errors.Is(err, segment.ErrNotFound) || errors.Is(err, segment.ErrRemoved) {
		return nil, fmt.Errorf("%w: %w", admin.ErrHookNotFound, err)
	}
	return e, err
}
