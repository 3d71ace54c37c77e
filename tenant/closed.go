package tenant

import (
	"sync"
	"sync/atomic"
)

// Closed is the set of tenants being erased: the router answers their
// hooks 503 tenant_erasing (router step 6). Reading it takes no lock and
// allocates nothing; it changes only when an erase starts or ends.
type Closed struct {
	mu  sync.Mutex
	set atomic.Pointer[map[string]struct{}]
}

// Close adds tenant to the set.
func (c *Closed) Close(tenant string) { c.change(tenant, true) }

// Open removes tenant from the set.
func (c *Closed) Open(tenant string) { c.change(tenant, false) }

func (c *Closed) change(tenant string, closed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := map[string]struct{}{}
	if old := c.set.Load(); old != nil {
		for t := range *old {
			next[t] = struct{}{}
		}
	}
	if closed {
		next[tenant] = struct{}{}
	} else {
		delete(next, tenant)
	}
	if len(next) == 0 {
		c.set.Store(nil)
		return
	}
	c.set.Store(&next)
}

// IsClosed reports whether tenant is being erased. A nil Closed closes
// nothing.
func (c *Closed) IsClosed(tenant []byte) bool {
	if c == nil {
		return false
	}
	m := c.set.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[string(tenant)]
	return ok
}
