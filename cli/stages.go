package cli

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/ankusa/ankusa/admin"
	"github.com/ankusa/ankusa/archive"
	"github.com/ankusa/ankusa/config"
	"github.com/ankusa/ankusa/dispatch"
	"github.com/ankusa/ankusa/edge"
	"github.com/ankusa/ankusa/internal/redisx"
	"github.com/ankusa/ankusa/internal/vfsutil"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/secrets"
	"github.com/ankusa/ankusa/segment"
	"github.com/ankusa/ankusa/source"
	"github.com/ankusa/ankusa/tenant"
	"github.com/ankusa/ankusa/wal"
)

// Each open* below builds one stage's Options from the config and opens
// it; the rules the stages keep (DESIGN.md §6) are the stages' own.

func (n *node) openMeta() error {
	dataDir := n.cfg.Node.DataDir
	if err := vfsutil.MkdirAllSynced(vfs.Default, dataDir); err != nil {
		return fmt.Errorf("cannot create node.data_dir %q: %w", dataDir, err)
	}
	reserve := int64(n.cfg.Storage.ReserveBytes)
	if err := checkBootSpace(dataDir, reserve); err != nil {
		return err
	}
	n.storage = newStorage(dataDir, reserve, n.log)
	n.storage.start()
	sugar := n.log.Sugar()
	ms, err := meta.Open(meta.Options{
		FS:     newWaitFS(n.storage.fs(), metaWriteWait),
		Dir:    filepath.Join(dataDir, "meta"),
		Logf:   func(f string, a ...any) { sugar.Debugf("pebble: "+f, a...) },
		Errorf: func(f string, a ...any) { sugar.Errorf("pebble: "+f, a...) },
		Fatalf: func(f string, a ...any) { sugar.Fatalf("pebble: "+f, a...) },
	})
	n.meta = ms
	return err
}

// openSources opens the source store: the config's sources (static), or
// those and the ones written through the admin API, kept in the node's
// meta store (persistent) or in Redis (redis), their secrets sealed under
// secrets.kek when it is set. A stored source that fails today's rules
// keeps serving and is named in the log; one whose secrets no configured
// key opens stops the boot, named.
func (n *node) openSources() error {
	if n.cfg.SourceStore.Type == "static" {
		n.sources = source.NewStatic(n.cfg)
		return nil
	}
	kr, err := keyring(n.cfg)
	if err != nil {
		return err
	}
	po := source.PersistentOptions{Config: n.cfg, Context: sourceContext(n.cfg), Keyring: kr}
	var warnings []string
	switch n.cfg.SourceStore.Type {
	case "redis":
		redis.SetLogger(redisLogger{n.log.Named("redis")})
		rdb, addr, err := redisx.NewClientWith("source_store.url", n.cfg.SourceStore.URL, source.FleetTimeout)
		if err != nil {
			return err
		}
		n.sourceRDB = rdb
		f, w, err := source.OpenFleet(source.FleetOptions{
			PersistentOptions: po, Redis: rdb, Addr: addr,
			Namespace: n.cfg.SourceStore.Namespace,
			Tick:      time.Duration(n.cfg.SourceStore.TickMs) * time.Millisecond,
			Meta:      n.meta, Log: n.log.Named("source_store"),
		})
		if err != nil {
			return err
		}
		// Run starts once dispatch follows the store (followSources).
		n.sourceFleet, n.sources, warnings = f, f, w
	default:
		po.Backend = source.MetaBackend{Store: n.meta}
		p, w, err := source.OpenPersistent(po)
		if err != nil {
			return err
		}
		n.sources, warnings = p, w
	}
	for _, w := range warnings {
		n.log.Warn(w)
	}
	return nil
}

// keyring is the keyring of secrets.kek and secrets.kek_previous (one
// that seals nothing when no kek is set).
func keyring(cfg *config.Config) (*secrets.Keyring, error) {
	parse := func(key string, s config.Secret) ([]byte, error) {
		if s.Value == "" {
			return nil, nil
		}
		b, err := config.ParseKEK(s.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		return b, nil
	}
	kek, err := parse("secrets.kek", cfg.Secrets.KEK)
	if err != nil {
		return nil, err
	}
	prev, err := parse("secrets.kek_previous", cfg.Secrets.KEKPrevious)
	if err != nil {
		return nil, err
	}
	kr, err := secrets.NewKeyring(kek, prev)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return kr, nil
}

// followSources has dispatch follow the store's writes: a changed sink is
// rebuilt for its next attempt, a removed one closed once idle.
func (n *node) followSources() {
	if n.sourceFleet != nil {
		// The redis store follows Redis from here: every change it
		// applies reaches dispatch.
		defer n.sourceFleet.Run(context.Background())
	}
	p, ok := n.sources.(interface{ OnPublish(func(*source.Snapshot)) })
	if !ok {
		return
	}
	p.OnPublish(func(*source.Snapshot) {
		if n.dispatch != nil {
			n.dispatch.SourcesChanged()
		}
		if n.direct != nil {
			n.direct.SourcesChanged()
		}
	})
}

// claimIdentity records the node's name and ordinal in its data directory,
// or checks them against the recorded ones, and returns the ordinal.
func (n *node) claimIdentity() (uint16, error) {
	ordinal := nameOrdinal(n.cfg.Node.Name)
	if n.cfg.Node.Ordinal != nil {
		ordinal = uint16(*n.cfg.Node.Ordinal)
	}
	if err := n.meta.ClaimNode(meta.Node{Name: n.cfg.Node.Name, Ordinal: ordinal, CreatedAt: time.Now().UTC()}); err != nil {
		return 0, fmt.Errorf("node.data_dir %q: %w", n.cfg.Node.DataDir, err)
	}
	return ordinal, nil
}

// nameOrdinal derives a node ordinal from its name; fleets set
// node.ordinal to rule out collisions.
func nameOrdinal(name string) uint16 {
	h := fnv.New32a()
	h.Write([]byte(name))
	s := h.Sum32()
	return uint16(s>>16) ^ uint16(s)
}

func (n *node) openWAL(recovery string, ordinal uint16, onDurable func([]*wal.Request)) error {
	w, err := wal.Open(wal.Options{
		FS:            vfs.Default,
		Dir:           filepath.Join(n.cfg.Node.DataDir, "wal"),
		MaxFileBytes:  int64(n.cfg.WAL.MaxFileBytes),
		MaxBatchBytes: int64(n.cfg.WAL.MaxBatchBytes),
		Node:          ordinal,
		Meta:          n.meta,
		MaxTenants:    n.cfg.Tenants.Max,
		Recovery:      recovery,
		Logf:          n.log.Sugar().Warnf,
		OnFatal:       fatalStorage(n.log),
		OnDurable:     onDurable,
	})
	if err != nil {
		return err
	}
	n.wal = w
	n.storage.setWAL(w)
	n.log.Info("wal recovered", zap.Uint64("last_seq", w.LastSeq()), zap.Stringer("last_id", w.LastID()), zap.Int("tenant_ordinals", w.TenantCount()))
	return nil
}

func (n *node) openSegments(backend archive.Backend, layout archive.Layout) error {
	var remote segment.Remote
	var repair segment.Repairer
	dir := filepath.Join(n.cfg.Node.DataDir, "segments")
	if backend != nil {
		remote = archive.NewReader(backend, layout, n.cfg.Node.Name)
		r, err := archive.NewRestorer(archive.RestorerOptions{Backend: backend, Layout: layout, Node: n.cfg.Node.Name, FS: vfs.Default, Dir: dir})
		if err != nil {
			return err
		}
		repair = r
		if !slices.Contains(n.cfg.Node.Roles, "archive") {
			n.log.Warn("archive is configured but node.roles lacks archive: segments are not uploaded, so none is ever removed from local disk", zap.String("archive", backend.String()))
		}
	}
	s, err := segment.Open(segment.Options{
		FS:          n.storage.fs(),
		Dir:         dir,
		Log:         n.wal,
		Meta:        n.meta,
		MaxBytes:    int64(n.cfg.Segment.MaxBytes),
		MaxAge:      time.Duration(n.cfg.Segment.MaxAge),
		RetainLocal: time.Duration(n.cfg.Segment.RetainLocal),
		Keeper:      n.meta,
		Archiving:   backend != nil,
		Remote:      remote,
		ScrubRate:   scrubRate(n.cfg.Segment),
		NoDict:      n.cfg.Segment.Dictionary != nil && !*n.cfg.Segment.Dictionary,
		Repair:      repair,
		Logger:      n.log,
		OnFatal:     fatalStorage(n.log),
	})
	if err != nil {
		return err
	}
	n.segments = s
	if last, ok, err := n.meta.LastSegment(); err == nil && ok {
		n.log.Info("segments recovered", zap.Uint64("last_sealed_seq", last.LastSeq))
	}
	return nil
}

// scrubRate is segment.scrub_rate (0: off); a config not defaulted by
// config.Load has the default.
func scrubRate(c config.Segment) int64 {
	if c.ScrubRate == nil {
		return config.DefaultScrubRate
	}
	return int64(*c.ScrubRate)
}

// openUploader starts the archive uploader when there is an archive and
// the node has the archive role.
func (n *node) openUploader(backend archive.Backend, layout archive.Layout) error {
	if backend == nil || !slices.Contains(n.cfg.Node.Roles, "archive") {
		return nil
	}
	u, err := archive.StartUploader(archive.UploaderOptions{
		Backend: backend, Layout: layout, Node: n.cfg.Node.Name, Meta: n.meta,
		FS: vfs.Default, Dir: filepath.Join(n.cfg.Node.DataDir, "segments"),
		Sealed:      n.segments.Sealed(),
		Concurrency: n.cfg.Archive.Concurrency,
		Logger:      n.log, OnFatal: fatalStorage(n.log),
	})
	if err != nil {
		return err
	}
	n.uploader = u
	if s3, ok := backend.(*archive.S3); ok {
		// An unreachable archive does not stop ingest (segments wait on
		// local disk), but a wrong bucket must be seen at once.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s3.Check(ctx); err != nil {
				n.log.Error("archive: cannot reach the bucket; segments stay on local disk until it answers", zap.Error(err))
			}
		}()
	}
	n.log.Info("archiving sealed segments", zap.String("archive", backend.String()), zap.String("prefix", layout.Prefix))
	return nil
}

func (n *node) openDispatch(in *dispatch.Intake) error {
	erased, err := n.erasedOrdinals()
	if err != nil {
		return err
	}
	d, err := dispatch.Open(dispatch.Options{
		// No row is rebuilt for a hook of an erased tenant, or of one
		// being erased (DESIGN.md §6 item 4).
		Erased:  erased,
		Meta:    n.meta,
		Hooks:   n.segments,
		Sources: n.sources,
		Intake:  in,
		NewSink: n.newSink(),
		Ordinal: n.wal.Ordinal,
		LastSeq: n.wal.LastSeq(),
		// A loss the operator accepted at recovery: the seqs past the
		// log's end are numbered again.
		SeqsReused: n.wal.LossAccepted(),
		// The attempt log costs disk per delivery; its TTL is the knob.
		AttemptLogTTL: time.Duration(n.cfg.Dispatch.AttemptLogTTL),
		MaxPenBytes:   int64(n.cfg.Limits.MaxQuarantineBytes),
		Logger:        n.log,
		OnFatal:       fatalStorage(n.log),
	})
	if err != nil {
		return err
	}
	n.dispatch = d
	return nil
}

// The policy serves the admin API as it is.
var _ admin.RateLimits = (*tenant.Policy)(nil)

// openAdmin starts the admin listener over the stages that serve it, as
// they are: the admin API holds the policy of its routes (a release's
// verification, the audit rows), the stages the rows.
func (n *node) openAdmin() error {
	a := n.cfg.Admin
	tokens := a.Tokens
	if a.BootstrapToken {
		tok, path, minted, err := admin.BootstrapToken(admin.BootstrapOptions{Store: n.meta, FS: vfs.Default, Dir: n.cfg.Node.DataDir})
		if err != nil {
			return err
		}
		tokens = append(append([]config.AdminToken(nil), tokens...), tok)
		n.tokenPath, n.tokenMinted = path, minted
	}
	opts := admin.Options{Tokens: tokens, Sources: n.sources, Logger: n.log, Resolver: n.cfg.RouteResolver, Listener: admin.ListenerOptions{
		ReadTimeout: a.ReadTimeout.D(), ReadHeaderTimeout: a.ReadHeaderTimeout.D(), WriteTimeout: a.WriteTimeout.D(),
		IdleTimeout: a.IdleTimeout.D(), MaxConnections: a.MaxConnections, MaxBodyBytes: int64(a.MaxBodyBytes),
	}}
	// The meta store's tenant mirror, overrides and audit log; the
	// dispatcher's live counts (ahead of the checkpointed ones in meta).
	opts.Tenants, opts.Audit = n.meta, n.meta
	// The lifecycle outbox's replay: every node keeps it, with or
	// without a lifecycle sink (opened before the admin listener).
	if n.lifecycle != nil {
		opts.Events = n.lifecycle
	}
	if n.policy != nil {
		opts.Limits, opts.Overrides = n.policy, n.meta
	}
	if n.wal != nil {
		opts.Health = n.wal
	}
	opts.Storage = n.storage
	if n.claims != nil {
		opts.Claims = claimReader{n.claims}
	}
	if n.segments != nil {
		opts.Hooks, opts.Damage = n.segments, n.segments
	}
	opts.Erase = eraseAdmin{n}
	if n.dispatch != nil {
		opts.Deliveries = n.dispatch
		opts.Quarantine = n.dispatch
		opts.Backlog = n.dispatch
		opts.Counts = n.dispatch
	}
	s, err := admin.Listen(a.Listen, opts)
	if err != nil {
		return err
	}
	n.admin = s
	return nil
}

// openDirect is wal.type: none: hooks go to their sinks before the 201.
func (n *node) openDirect(ordinal uint16) (edge.Committer, error) {
	n.log.Warn("wal.type is none: a hook is acknowledged only once every sink of its source has taken it; nothing is stored on this node, so there are no retries, segments or hook fetches")
	d, err := dispatch.OpenDirect(dispatch.DirectOptions{
		Meta: n.meta, Sources: n.sources, NewSink: n.newSink(),
		Node: ordinal, MaxTenants: n.cfg.Tenants.Max, Logger: n.log,
	})
	if err != nil {
		return nil, err
	}
	n.direct = d
	return d, nil
}
