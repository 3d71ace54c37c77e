package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/ankusa/ankusa/archive"
	"github.com/ankusa/ankusa/envelope"
)

const claimUsage = "usage: ankusa claim get -config FILE [-o FILE] REF\n" +
	"  REF: a claim's JSON ({\"store\":...,\"key\":...,\"offset\":...,\"length\":...,\"sha256\":...}),\n" +
	"       or its base64url form (no padding), as the admin API's claims route takes it\n" +
	"       ankusa claim delete -config FILE -tenant T\n" +
	"  deletes every claim pack of tenant T (claims/tenant=T/) in every claim store; run it\n" +
	"  when no node delivers T's hooks (a pack being uploaded lands after it)\n"

// claim runs `ankusa claim get`: it reads the body a claim reference
// names from the claim store the config names (one ranged read, checked
// against the claim's SHA-256) and writes it to stdout or -o FILE. Exit 0,
// 1 when the body cannot be read or does not match, 2 for bad flags, 78
// for a config without the claim's store.
func claim(args []string) int {
	if len(args) > 0 && args[0] == "delete" {
		return claimDelete(args[1:])
	}
	if len(args) == 0 || args[0] != "get" {
		fmt.Fprint(os.Stderr, claimUsage)
		return 2
	}
	fs := flag.NewFlagSet("claim get", flag.ContinueOnError)
	path := fs.String("config", "", "config file naming the claim stores (claims.stores)")
	out := fs.String("o", "", "write the body to `FILE` instead of stdout")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, claimUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(os.Stderr, "ankusa claim get: want one REF, got %d arguments\n%s", fs.NArg(), claimUsage)
		return 2
	}
	ref, err := parseClaimArg(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "ankusa claim get: REF: %v\n%s", err, claimUsage)
		return 2
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		printProblems(err)
		return exitConfig
	}
	if _, ok := cfg.Claims.Stores[ref.Store]; !ok {
		fmt.Fprintf(os.Stderr, "config: claims.stores has no store %q (it has %v)\n", ref.Store, cfg.ClaimStoreNames())
		return exitConfig
	}
	node := cfg.Node.Name
	if node == "" {
		node = "claim-get"
	}
	c, err := archive.OpenClaims(archive.ClaimsOptions{Stores: cfg.Claims.Stores, Node: node,
		MaxReadBytes: max(int64(cfg.Limits.MaxBodyBytes), ref.Length)})
	if err != nil {
		printProblems(err)
		return exitConfig
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	body, err := c.Read(ctx, ref)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ankusa claim get:", err)
		return 1
	}
	if *out == "" {
		_, err = os.Stdout.Write(body)
	} else {
		err = os.WriteFile(*out, body, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ankusa claim get: cannot write the body:", err)
		return 1
	}
	return 0
}

// parseClaimArg reads REF: a claim's JSON, or its base64url form.
func parseClaimArg(s string) (envelope.Claim, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") {
		return envelope.ParseClaim([]byte(s))
	}
	return envelope.ParseClaimRef(s)
}

// claimDelete runs `ankusa claim delete -tenant T`: it deletes the prefix
// claims/tenant=T/ in every claim store of the config, and prints how many
// packs went from each. Exit 0, 1 when a store fails (what was deleted
// stays deleted; run it again), 2 for bad flags, 78 for a config without
// claim stores.
func claimDelete(args []string) int {
	fs := flag.NewFlagSet("claim delete", flag.ContinueOnError)
	path := fs.String("config", "", "config file naming the claim stores (claims.stores)")
	tenant := fs.String("tenant", "", "the tenant whose claims are deleted")
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, claimUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *tenant == "" {
		fmt.Fprintf(os.Stderr, "ankusa claim delete: want -tenant and no arguments\n%s", claimUsage)
		return 2
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		printProblems(err)
		return exitConfig
	}
	if len(cfg.Claims.Stores) == 0 {
		fmt.Fprintln(os.Stderr, "config: claims.stores is empty: there are no claims to delete")
		return exitConfig
	}
	node := cfg.Node.Name
	if node == "" {
		node = "claim-delete"
	}
	c, err := archive.OpenClaims(archive.ClaimsOptions{Stores: cfg.Claims.Stores, Node: node})
	if err != nil {
		printProblems(err)
		return exitConfig
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := c.DeleteTenant(ctx, *tenant)
	fmt.Printf("deleted %d claim packs of tenant %s from %d claim stores\n", n, *tenant, len(cfg.Claims.Stores))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ankusa claim delete:", err)
		return 1
	}
	return 0
}
