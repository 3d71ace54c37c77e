package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/archive"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dedupe"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/lifecycle"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
	"github.com/ankusa/ankusa/wal"
)

// exitFatal is the exit code after a storage failure (a failed fsync).
const exitFatal = 3

// drainTimeout is how long stop gives both listeners to answer what they
// admitted. deploy/systemd/ankusa.service's TimeoutStopSec must be longer
// (deploy's test holds it to that), or the manager kills a draining node.
const drainTimeout = 30 * time.Second

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
	setProcs(log)
	for _, w := range config.Warnings(cfg) {
		log.Warn("config: " + w)
	}
	// The signals are caught before the start: a stop asked for during
	// it (a long WAL recovery, or a manager that stops the node as soon
	// as its admin listener answers) waits for the start to end and
	// drains, instead of Go's default exit.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	notify := newNotifierFromEnv(log)
	notify.status("starting: opening the stores, recovering the WAL")
	n, err := start(cfg, *recovery, log)
	if err != nil {
		log.Error("cannot start", zap.Error(err))
		notify.status("cannot start: " + err.Error())
		return 1
	}
	drain := func(s os.Signal) int {
		log.Info("draining", zap.String("signal", s.String()))
		notify.stopping("draining after " + s.String())
		return n.stop()
	}
	select {
	case s := <-sig:
		return drain(s) // asked for during the start: never ready
	default:
	}
	// start returns once recovery is done and both listeners are bound
	// (net.Listen) with their Serve loops started: a connection made from
	// here on is accepted and answered, so the node is ready.
	notify.ready(fmt.Sprintf("serving hooks on %s, admin on %s", n.publicAddr, n.admin.Addr()))
	if *path == "" {
		n.banner(os.Stderr)
	}
	select {
	case s := <-sig:
		return drain(s)
	case err := <-n.serveErr:
		log.Error("public listener failed; draining", zap.Error(err))
		notify.stopping("draining: the public listener failed: " + err.Error())
		n.stop()
		return 1
	}
}

// node is one running appliance: its stages, which start opens in
// dependency order and stop closes in reverse. Each field is set once,
// before the stages that use it open.
type node struct {
	cfg *config.Config
	log *zap.Logger

	storage  *storage // the monitor of data_dir's free space (storage.go)
	meta     *meta.Store
	sources  source.Store
	wal      *wal.WAL             // wal.type: disk
	segments *segment.Store       // wal.type: disk
	uploader *archive.Uploader    // an archive, and the node has the archive role
	dispatch *dispatch.Dispatcher // wal.type: disk
	direct   *dispatch.Direct     // wal.type: none
	fleet    *dedupe.Fleet        // dedupe.scope: fleet
	rdb      *redis.Client        // rate_limits.scope: fleet
	// sourceFleet and sourceRDB are the redis source store's.
	sourceFleet *source.Fleet
	sourceRDB   *redis.Client
	// claims are claims.stores (nil without); stopClaims ends their
	// retention.
	claims     *archive.Claims
	stopClaims func()

	lifecycle     *lifecycle.Lifecycle // the outbox's publisher and sweep
	lifecycleSink dispatch.Sink        // lifecycle.sink, nil without
	stopLifecycle context.CancelFunc

	policy *tenant.Policy // every tenant's limits: the router's and the admin API's
	queues *tenant.Queues // the router's queue caps: the erase waits for a tenant's to empty
	// fleetLimiter is the fleet's buckets (rate_limits.scope: fleet; over
	// rdb), whose keys an erase deletes.
	fleetLimiter *tenant.FleetLimiter

	// eraser runs the tenant erases; closed is the set of tenants being
	// erased, which the router answers 503 tenant_erasing.
	eraser *tenant.Eraser
	closed *tenant.Closed
	// resumed are the erases a kill interrupted, read once at boot.
	resumed []tenant.EraseJob
	// archive and layout are the archive (nil without), where an erase
	// writes the tenant's tombstone object.
	archive archive.Backend
	layout  archive.Layout
	// stopCtx is done once the node stops; eraseWG counts the archive
	// tombstone writes resumed at boot.
	stopCtx    context.Context
	cancelStop context.CancelFunc
	eraseWG    sync.WaitGroup
	router     *edge.Router
	admin      *admin.Server
	public     *fasthttp.Server
	publicAddr string
	serveErr   chan error
	// tokenPath is where admin.bootstrap_token keeps the node's admin
	// token; tokenMinted the token when this start minted it.
	tokenPath, tokenMinted string
}

// start opens every stage and starts serving. On an error, what was
// opened is closed again.
func start(cfg *config.Config, recovery string, log *zap.Logger) (*node, error) {
	n := &node{cfg: cfg, log: log, serveErr: make(chan error, 1), closed: &tenant.Closed{}}
	n.stopCtx, n.cancelStop = context.WithCancel(context.Background())
	if err := n.open(recovery); err != nil {
		if n.admin != nil {
			_ = n.admin.Close()
		}
		n.closeStorage()
		return nil, err
	}
	return n, nil
}

// open opens the stages in dependency order: the meta store, the storage
// stages (the WAL, the segment store, the archive uploader and dispatch,
// or with wal.type: none the direct commit step), the router over them,
// the admin listener, and last the public listener.
func (n *node) open(recovery string) error {
	if err := n.openMeta(); err != nil {
		return err
	}
	ordinal, err := n.claimIdentity()
	if err != nil {
		return err
	}
	if err := n.openLifecycle(ordinal); err != nil {
		return err
	}
	if err := n.openSources(); err != nil {
		return err
	}
	if err := n.openClaims(); err != nil {
		return err
	}
	if err := n.openEraser(); err != nil {
		return err
	}
	var commit edge.Committer
	if n.cfg.WAL.Type == "none" {
		commit, err = n.openDirect(ordinal)
	} else {
		commit, err = n.openDisk(recovery, ordinal)
	}
	if err != nil {
		return err
	}
	n.closeErasingPen()
	n.startClaims()
	n.followSources()
	if err := n.openRouter(commit); err != nil {
		return err
	}
	if err := n.openAdmin(); err != nil {
		return err
	}
	if err := n.openPublic(); err != nil {
		return err
	}
	if err := n.resumeErases(); err != nil {
		return err
	}
	n.admin.SetReady(true)
	n.log.Info("serving", zap.String("listen", n.publicAddr), zap.String("admin", n.cfg.Admin.Listen),
		zap.String("node", n.cfg.Node.Name), zap.String("resolver", n.cfg.RouteResolver.Type), zap.Int("sources", n.sources.Snapshot().Len()), zap.String("source_store", n.cfg.SourceStore.Type))
	return nil
}

// openDisk opens the stages of wal.type: disk and returns the WAL as the
// edge's commit step. The intake exists first: the WAL hands committed
// hooks to it, and dispatch, which reads hooks back from the segment
// store, drains it once open.
func (n *node) openDisk(recovery string, ordinal uint16) (edge.Committer, error) {
	in := dispatch.NewIntake(dispatch.IntakeOptions{
		Sources:    n.sources,
		MaxBytes:   int64(n.cfg.Dispatch.IntakeBytes),
		DedupeNode: n.cfg.Dedupe.Scope == "node",
	})
	if err := n.openWAL(recovery, ordinal, in.Handoff); err != nil {
		return nil, err
	}
	backend, layout, err := archive.Open(n.cfg.Archive)
	if err != nil {
		return nil, err
	}
	n.archive, n.layout = backend, layout
	if err := n.openSegments(backend, layout); err != nil {
		return nil, err
	}
	if err := n.openUploader(backend, layout); err != nil {
		return nil, err
	}
	if err := n.openDispatch(in); err != nil {
		return nil, err
	}
	return n.wal, nil
}

func (n *node) openPublic() error {
	ln, err := edge.ListenWith(n.cfg.Listen, edge.ListenOptionsFrom(n.cfg, n.log))
	if err != nil {
		return err
	}
	n.publicAddr = ln.Addr().String()
	n.public = edge.NewServer(n.router, n.cfg.Limits, n.log)
	go func() {
		if err := n.public.Serve(ln); err != nil {
			n.serveErr <- err
		}
	}()
	return nil
}

// stop drains: stop accepting, let every admitted request finish its
// commit, close the WAL (committing what is queued and recording the
// numbering floor), close the meta store.
func (n *node) stop() int {
	n.admin.SetReady(false)
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	code := 0
	if err := n.public.ShutdownWithContext(ctx); err != nil {
		n.log.Error("public listener did not drain in time", zap.Error(err))
		code = 1
	}
	if err := n.admin.Shutdown(ctx); err != nil {
		n.log.Error("admin listener did not drain in time", zap.Error(err))
		code = 1
	}
	if !n.closeStorage() {
		code = 1
	}
	n.log.Info("stopped", zap.Int("exit", code))
	return code
}

// closeStorage closes what open opened, in reverse order; false when
// something did not close cleanly.
func (n *node) closeStorage() bool {
	good := true
	check := func(what string, err error) {
		if err != nil {
			n.log.Error("cannot close "+what, zap.Error(err))
			good = false
		}
	}
	// The erases stop where they are first (each resumes at the next
	// boot): their stages use everything below.
	n.cancelStop()
	if n.eraser != nil {
		n.eraser.Close()
	}
	n.eraseWG.Wait()
	// The redis source store stops following Redis first: a change it
	// applies reaches dispatch, which closes next.
	if n.sourceFleet != nil {
		n.sourceFleet.Close()
	}
	if n.dispatch != nil {
		check("dispatch", n.dispatch.Close())
	}
	if n.uploader != nil {
		n.uploader.Close()
	}
	if n.segments != nil {
		check("the segment store", n.segments.Close())
	}
	if n.direct != nil {
		check("the direct delivery stage", n.direct.Close())
	}
	n.closeClaims()
	if n.fleet != nil {
		_ = n.fleet.Close()
	}
	if n.rdb != nil {
		_ = n.rdb.Close()
	}
	if n.sourceRDB != nil {
		_ = n.sourceRDB.Close()
	}
	if n.wal != nil {
		check("wal", n.wal.Close())
	}
	n.closeLifecycle()
	if n.meta != nil {
		check("meta store", n.meta.Close())
	}
	if n.storage != nil {
		n.storage.close()
	}
	return good
}
