package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/ankusa/ankusa/internal/redisx"
	"github.com/ankusa/ankusa/meta"
	"github.com/ankusa/ankusa/source"
)

// rewrap re-seals every stored secret under secrets.kek (DESIGN.md
// §2.12): the step of a key rotation between setting the new kek (the old
// one in kek_previous) and removing kek_previous. The node must be
// stopped (its meta store is opened here); the other nodes of a redis
// store may run. It is idempotent: killed midway, run it again.
func rewrap(args []string) int {
	fs := flag.NewFlagSet("rewrap", flag.ContinueOnError)
	path := fs.String("config", "", "config file")
	rate := fs.Int("rate", 0, "rewrite at most this many sources per second (0: no bound), to spare a busy Redis")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *path == "" || *rate < 0 {
		fmt.Fprintln(os.Stderr, "usage: ankusa rewrap -config FILE [-rate N]")
		return 2
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		printProblems(err)
		return exitConfig
	}
	if !cfg.Secrets.KEK.IsSet() {
		fmt.Fprintln(os.Stderr, "rewrap: secrets.kek is not set: there is no key to seal under")
		return exitConfig
	}
	kr, err := keyring(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rewrap:", err)
		return exitConfig
	}
	dir := filepath.Join(cfg.Node.DataDir, "meta")
	if _, err := os.Stat(dir); err != nil {
		fmt.Fprintf(os.Stderr, "rewrap: node.data_dir %q holds no meta store (%v): nothing to rewrap there; is it the node's?\n", cfg.Node.DataDir, err)
		return 1
	}
	ms, err := meta.Open(meta.Options{Dir: dir})
	if err != nil {
		fmt.Fprintf(os.Stderr, "rewrap: cannot open the meta store under node.data_dir %q (stop the node first): %v\n", cfg.Node.DataDir, err)
		return 1
	}
	defer ms.Close()
	o := source.RewrapOptions{Config: cfg, Keyring: kr, Meta: ms, Rate: *rate,
		Progress: func(part string, read, rewrapped int) {
			fmt.Printf("rewrap: %s: %d sources read, %d rewrapped\n", part, read, rewrapped)
		}}
	if cfg.SourceStore.Type == "redis" {
		rdb, addr, err := redisx.NewClientWith("source_store.url", cfg.SourceStore.URL, source.FleetTimeout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rewrap:", err)
			return exitConfig
		}
		defer rdb.Close()
		o.Redis, o.Addr, o.Namespace = rdb, addr, cfg.SourceStore.Namespace
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	parts, err := source.Rewrap(ctx, o)
	total, sources := 0, 0
	for _, p := range parts {
		fmt.Printf("rewrap: %s: %d sources read, %d rewrapped (%d secrets), %d already under secrets.kek or holding none", p.Part, p.Read, p.Rewrapped, p.Secrets, p.Read-p.Rewrapped-p.Skipped)
		if p.Skipped > 0 {
			fmt.Printf(", %d changed by a node meanwhile (run rewrap again)", p.Skipped)
		}
		fmt.Println()
		total += p.Secrets
		sources += p.Rewrapped
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rewrap:", err)
		return 1
	}
	fmt.Printf("rewrapped %d secrets in %d source records\n", total, sources)
	return 0
}
