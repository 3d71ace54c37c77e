package archive

import (
	"sync"

	"github.com/ankusa/ankusa/envelope"
)

// refCache remembers the reference Claim made for a (store, event id), so
// a retried delivery of the hook, or a second sink with the same store,
// does not pack the body again. It holds at most n entries (about 200
// bytes each), the oldest going first.
type refCache struct {
	mu   sync.Mutex
	m    map[refKey]refEntry
	ring []refKey
	next int
}

type refKey struct {
	store string
	id    envelope.ID
}

type refEntry struct {
	tenant string
	ref    envelope.Claim
}

func newRefCache(n int) *refCache {
	return &refCache{m: make(map[refKey]refEntry, n), ring: make([]refKey, n)}
}

func (c *refCache) get(store string, id envelope.ID, tenant string) (envelope.Claim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[refKey{store, id}]
	if !ok || e.tenant != tenant {
		return envelope.Claim{}, false
	}
	return e.ref, true
}

func (c *refCache) put(store string, id envelope.ID, tenant string, ref envelope.Claim) {
	k := refKey{store, id}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok {
		if old := c.ring[c.next]; old.store != "" {
			delete(c.m, old)
		}
		c.ring[c.next] = k
		c.next = (c.next + 1) % len(c.ring)
	}
	c.m[k] = refEntry{tenant: tenant, ref: ref}
}

// dropTenant forgets the tenant's references (its packs are being
// deleted).
func (c *refCache) dropTenant(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if e.tenant == tenant {
			delete(c.m, k)
		}
	}
}

// drop forgets one hook's reference (its pack is gone). A ring slot may
// still name it: reusing that slot later evicts the key early, which a
// cache may do.
func (c *refCache) drop(store string, id envelope.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, refKey{store, id})
}
