package api

import (
	"context"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// acceptedCache is a cache of gqlgen's (graphql.Cache) that keeps only what
// admission accepted: gqlgen adds to its caches before our limits have run
// (the query cache after validation, the persisted-query extension before
// the query is even parsed), so its Add does nothing, and admission adds a
// request's entries with accept once the request has passed every limit.
// It holds at most a number of entries and of bytes, as the caller weighs
// them, dropping the least recently used first.
type acceptedCache[V any] struct {
	maxBytes int

	mu    sync.Mutex
	lru   *simplelru.LRU[string, weighed[V]]
	bytes int
}

type weighed[V any] struct {
	value  V
	weight int
}

func newAcceptedCache[V any](entries, maxBytes int) *acceptedCache[V] {
	c := &acceptedCache[V]{maxBytes: maxBytes}
	// The callback runs under c.mu, from the calls to c.lru below.
	lru, err := simplelru.NewLRU(entries, func(_ string, e weighed[V]) { c.bytes -= e.weight })
	if err != nil {
		panic(err) // entries is not positive: a programming error
	}
	c.lru = lru
	return c
}

func (c *acceptedCache[V]) Get(_ context.Context, key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(key)
	return e.value, ok
}

// Add does nothing: see accept.
func (c *acceptedCache[V]) Add(context.Context, string, V) {}

// accept keeps value under key, weighing weight bytes besides the key's,
// and drops the least recently used entries until the cache is within its
// bytes again. A value heavier than the whole cache is not kept.
func (c *acceptedCache[V]) accept(key string, value V, weight int) {
	weight += len(key)
	if weight > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(key)
	c.lru.Add(key, weighed[V]{value, weight})
	c.bytes += weight
	for c.bytes > c.maxBytes {
		c.lru.RemoveOldest()
	}
}

// size is the number of entries and their weight in bytes.
func (c *acceptedCache[V]) size() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}
