package segment

import (
	"container/list"
	"sync"
)

// blockKey names a block: the segment's first seq and the block's index.
// A block of the open segment keeps its key once the segment is sealed (a
// flushed block never changes), so dispatch's reads of recent hooks hit
// the cache before and after the seal alike.
type blockKey struct {
	seg   uint64
	block int
}

// blockCache keeps decompressed blocks, least recently used out first,
// within a byte budget, so that dispatch and fetches of recent hooks do
// not decompress the same block again and again. Safe for concurrent use.
type blockCache struct {
	mu     sync.Mutex
	budget int64
	size   int64
	lru    *list.List // of *cachedBlock, most recent at the front
	m      map[blockKey]*list.Element
}

type cachedBlock struct {
	key blockKey
	raw []byte
}

func newBlockCache(budget int64) *blockCache {
	return &blockCache{budget: budget, lru: list.New(), m: map[blockKey]*list.Element{}}
}

// get returns the block's raw bytes; the caller must not modify them.
func (c *blockCache) get(k blockKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[k]
	if !ok {
		blockCacheMisses.Inc()
		return nil, false
	}
	blockCacheHits.Inc()
	c.lru.MoveToFront(el)
	return el.Value.(*cachedBlock).raw, true
}

// put adds a block; one larger than the whole budget is not kept.
func (c *blockCache) put(k blockKey, raw []byte) {
	n := int64(len(raw))
	if n > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return
	}
	c.m[k] = c.lru.PushFront(&cachedBlock{key: k, raw: raw})
	c.size += n
	for c.size > c.budget {
		el := c.lru.Back()
		b := el.Value.(*cachedBlock)
		c.lru.Remove(el)
		delete(c.m, b.key)
		c.size -= int64(len(b.raw))
	}
	blockCacheBytes.Set(float64(c.size))
}

// dropSegment forgets every block of the segment whose first seq is seg
// (removed by retention).
func (c *blockCache) dropSegment(seg uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.m {
		if k.seg == seg {
			c.size -= int64(len(el.Value.(*cachedBlock).raw))
			c.lru.Remove(el)
			delete(c.m, k)
		}
	}
	blockCacheBytes.Set(float64(c.size))
}
