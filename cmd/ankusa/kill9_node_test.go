package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// crashNode is the config and directories of the appliance under test.
type crashNode struct {
	dir     string // working directory of every process
	config  string
	dataDir string
	listen  string
	admin   string
	token   string // admin bearer token, scope tenant:*
}

// crashYAML: the tenant-in-path resolver with a finite default rate limit
// (required with it) and a few tenants of their own, a shared source
// without a verifier that trusts the URL's tenant, small WAL files so the
// run rotates through many of them, kills included, and small segments
// sealed on size and on age, so that sealing runs all the time under load
// (at about 20 MiB/s of bodies, one seal every 10-15 ms) and by age within
// a moment of the last boot going idle. WAL files are deleted under load
// as their hooks are sealed and pass the dispatch checkpoint; segments
// stay local (segment.retain_local defaults to 24h), so they tile the log
// from seq 1. The admin token reads every tenant's hooks; log level info
// keeps the segment store's boot recovery ("removed a partial segment",
// "adopted a whole segment") in the log.
const crashYAML = `node: {name: crash, data_dir: %s}
listen: %s
admin:
  listen: %s
  tokens: [{name: crash, sha256: %s, scopes: ["tenant:*"]}]
limits: {max_body_bytes: 256KiB}
route_resolver: {type: tenantpath, prefix: [webhooks]}
rate_limits:
  default: {rate: 100000, burst: 100000}
  tenants:
    t0: {rate: 200000, burst: 200000}
    t1: {rate: 150000, burst: 150000}
    t2: {rate: 150000, burst: 150000}
wal: {type: disk, max_file_bytes: 4MiB}
segment: {max_bytes: 256KiB, max_age: 200ms}
log: {level: info, format: json}
sources:
  open:
    verify: {type: none}
    trust_url_tenant: true
`

// newCrashNode writes the config into a fresh temporary directory and has
// the binary check it.
func newCrashNode(t *testing.T) *crashNode {
	t.Helper()
	dir := t.TempDir()
	n := &crashNode{
		dir:     dir,
		config:  filepath.Join(dir, "ankusa.yaml"),
		dataDir: filepath.Join(dir, "data"),
		listen:  freeAddr(t),
		admin:   freeAddr(t),
		token:   rand.Text(),
	}
	sum := sha256.Sum256([]byte(n.token))
	yaml := fmt.Sprintf(crashYAML, n.dataDir, n.listen, n.admin, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(n.config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, dir, "check-config", "-config", n.config); code != 0 {
		t.Fatalf("the harness's own config does not check (exit %d):\n%s", code, stderr)
	}
	return n
}

func (n *crashNode) walDir() string { return filepath.Join(n.dataDir, "wal") }

func (n *crashNode) segmentDir() string { return filepath.Join(n.dataDir, "segments") }

// serve starts `ankusa serve` on the node's data directory and waits until
// it is ready.
func (n *crashNode) serve(t *testing.T) *proc {
	t.Helper()
	p := startProc(t, n.dir, "serve", "-config", n.config)
	p.waitReady(n.admin)
	return p
}
