package archive

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The keys of claim packs (DESIGN.md §2.6), all built here:
//
//	<prefix>/claims/tenant=<t>/source=<s>/<yyyy>/<mm>/<dd>/<node>-<pack id>.pack
//
// The date is the UTC day the pack was sealed; the pack id is 24 lower-case
// hex digits, the sealing time in unix nanoseconds (16) and a counter of
// the process (8), so a node's packs list in time order and the time of a
// pack is read from its key. Tenant and source names match config.NameRE
// (no "/"), so the prefix "claims/tenant=a/" never holds tenant ab's packs.

// packSuffix ends the key of every claim pack.
const packSuffix = ".pack"

// ClaimsPrefix is where every claim pack of the store is.
func (l Layout) ClaimsPrefix() string { return l.join("claims/") }

// ClaimTenantPrefix is where tenant t's claim packs are: deleting it
// deletes the tenant's claims and nobody else's.
func (l Layout) ClaimTenantPrefix(t string) string { return l.join("claims/tenant=", t, "/") }

// PackKey is the key of a pack of tenant t and source s sealed by node at
// at, the n-th of the process.
func (l Layout) PackKey(t, s, node string, at time.Time, n uint32) string {
	day := at.UTC().Format("2006/01/02")
	id := fmt.Sprintf("%016x%08x", uint64(at.UnixNano()), n)
	return l.join("claims/tenant=", t, "/source=", s, "/", day, "/", node, "-", id, packSuffix)
}

// parsePackKey reads the node and the opening time from a pack's key;
// ok is false for a key that is not a pack's.
func parsePackKey(key string) (node string, at time.Time, ok bool) {
	stem, ok := strings.CutSuffix(key, packSuffix)
	if !ok {
		return "", time.Time{}, false
	}
	if i := strings.LastIndexByte(stem, '/'); i >= 0 {
		stem = stem[i+1:]
	}
	i := strings.LastIndexByte(stem, '-')
	if i <= 0 || len(stem)-i-1 != 24 {
		return "", time.Time{}, false
	}
	ns, err := strconv.ParseUint(stem[i+1:i+17], 16, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	if _, err := strconv.ParseUint(stem[i+17:], 16, 32); err != nil {
		return "", time.Time{}, false
	}
	return stem[:i], time.Unix(0, int64(ns)).UTC(), true
}
