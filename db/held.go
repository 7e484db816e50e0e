package db

import (
	"sync"
	"sync/atomic"
)

// held are values the store keeps in memory by key (a user id), each with
// the version of the database's data it was read at: a reader takes a
// value only at the version it read itself, so a value held is never
// taken for a changed one. Suggestions keep followees' lists this way
// (followLists) and candidates' names (heldNames).
//
// The bound is on bytes, as charge reckons them; past it, values not
// asked for since the clock hand last passed them go first (CLOCK, a
// cheap approximation of least recently used).
type held[V any] struct {
	mu      sync.Mutex
	at      map[int64]int32 // key -> index in slots
	slots   []heldSlot[V]
	free    []int32 // indexes in slots with no value
	hand    int
	size    int // bytes charged for the values held
	max     int
	charge  func(V) int
	hits    atomic.Int64
	misses  atomic.Int64
	entries atomic.Int64
}

// heldSlot is a key's value at a version.
type heldSlot[V any] struct {
	key, version int64
	v            V
	used, live   bool
}

// heldCharge is what a value costs against the bound beside its own
// bytes: its slot, its map entry and its allocation's rounding.
const heldCharge = 96

func newHeld[V any](max int, charge func(V) int) *held[V] {
	return &held[V]{at: map[int64]int32{}, max: max, charge: charge}
}

// with runs fn with the lock held, fn's get giving key's value if it is
// held at version; it counts the hits and misses.
func (c *held[V]) with(fn func(get func(key, version int64) (V, bool))) {
	var hits, misses int64
	c.mu.Lock()
	fn(func(key, version int64) (V, bool) {
		if j, ok := c.at[key]; ok && c.slots[j].version == version {
			c.slots[j].used = true
			hits++
			return c.slots[j].v, true
		}
		misses++
		var zero V
		return zero, false
	})
	c.mu.Unlock()
	c.hits.Add(hits)
	c.misses.Add(misses)
}

// put holds key's value at version, in place of any it held. A value held
// at a higher version stays: a slower reader's older value must not
// replace it. A value that would take more than a quarter of the bound
// is not held.
func (c *held[V]) put(key, version int64, v V) {
	charge := c.charge(v)
	if charge > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if j, ok := c.at[key]; ok {
		h := &c.slots[j]
		if h.version >= version {
			return
		}
		c.size += charge - c.charge(h.v)
		h.version, h.v, h.used = version, v, true
		return
	}
	for c.size+charge > c.max && c.evict() {
	}
	var j int32
	if n := len(c.free); n > 0 {
		j, c.free = c.free[n-1], c.free[:n-1]
	} else {
		c.slots = append(c.slots, heldSlot[V]{})
		j = int32(len(c.slots) - 1)
	}
	c.slots[j] = heldSlot[V]{key: key, version: version, v: v, live: true}
	c.at[key] = j
	c.size += charge
	c.entries.Add(1)
}

// evict drops one value, the first the hand finds not used since it last
// passed, and says whether there was one to drop.
func (c *held[V]) evict() bool {
	for range 2*len(c.slots) + 1 {
		if len(c.slots) == 0 {
			return false
		}
		c.hand %= len(c.slots)
		j := c.hand
		c.hand++
		h := &c.slots[j]
		if !h.live {
			continue
		}
		if h.used {
			h.used = false
			continue
		}
		delete(c.at, h.key)
		c.size -= c.charge(h.v)
		c.free = append(c.free, int32(j))
		*h = heldSlot[V]{}
		c.entries.Add(-1)
		return true
	}
	return false
}

func (c *held[V]) stats() HeldStats {
	return HeldStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Held: c.entries.Load()}
}
