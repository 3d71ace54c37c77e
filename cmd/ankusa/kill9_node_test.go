package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
)

// crashNode is the config and directories of the appliance under test,
// and its admin bearer token (scope tenant:*).
type crashNode struct {
	*testNode
	token string
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
	n := &crashNode{testNode: newTestNode(t), token: rand.Text()}
	sum := sha256.Sum256([]byte(n.token))
	writeConfig(t, n.testNode, fmt.Sprintf(crashYAML, n.dataDir, n.listen, n.admin, hex.EncodeToString(sum[:])))
	return n
}

func (n *crashNode) segmentDir() string { return filepath.Join(n.dataDir, "segments") }
