package filter

import "sync"

// maxCached bounds the cache: past it, one program is evicted for each
// one added. Each is a source's filter, so this is thousands of sources
// with filters all different before it evicts anything.
const maxCached = 8192

// programs caches Compile's answers by expression, errors included (a
// stored source that never went through validation must not have its
// broken filter compiled again for every hook). A hit takes a read lock;
// the dispatcher's row writer looks up a filter once per hook.
var programs = &cache{m: map[string]compiled{}}

type compiled struct {
	p   *Program
	err error
}

type cache struct {
	mu sync.RWMutex
	m  map[string]compiled
}

func (c *cache) get(expr string) (compiled, bool) {
	c.mu.RLock()
	r, ok := c.m[expr]
	c.mu.RUnlock()
	return r, ok
}

func (c *cache) put(expr string, r compiled) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCached {
		for k := range c.m { // an arbitrary one: map order
			delete(c.m, k)
			break
		}
	}
	c.m[expr] = r
}
