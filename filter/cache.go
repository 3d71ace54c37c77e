package filter

import "sync"

// maxCached bounds the cache: past it, one program is evicted for each
// one added. Each is a source's filter, so this is thousands of sources
// with filters all different before it evicts anything.
const maxCached = 8192

// programs caches Compile's programs by expression. A hit takes a read
// lock; the dispatcher's row writer looks up a filter once per hook.
var programs = &cache{m: map[string]*Program{}}

type cache struct {
	mu sync.RWMutex
	m  map[string]*Program
}

func (c *cache) get(expr string) *Program {
	c.mu.RLock()
	p := c.m[expr]
	c.mu.RUnlock()
	return p
}

func (c *cache) put(expr string, p *Program) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCached {
		for k := range c.m { // an arbitrary one: map order
			delete(c.m, k)
			break
		}
	}
	c.m[expr] = p
}
