package db

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
)

// followLists are users' following lists (the ids of the users each
// follows) kept in memory for suggestions, each with the FollowingVersion
// it was read at. Suggestions read the versions of the lists they need
// with the rest of their data, take a held list whose version is the one
// read, and read the others, each with its version, in one statement: a
// list and its version come from one statement, one snapshot, so they
// match, and a held list is one the database held at that version. The
// count triggers bump a user's version in the same UPDATE that changes its
// following count, whoever writes, and whatever sets the counts around
// the triggers bumps it too (bumpFollowingVersion), so a list that changed
// is never taken for one that did not. Nothing is needed between server
// instances: each keeps its own lists, and each asks the database.
//
// Why hold them: under 3,000 different viewers in turn, a suggestions call
// read about a thousand index entries, a range for each followee, and
// SQLite's work per entry was most of the call's CPU
// (docs/decisions/cold-suggestions.md). The lists those viewers need are
// about 43,000, 1.5 million ids, which fit in a few MiB kept as
// varint-coded gaps (docs/decisions/following-versions.md).
//
// The bound is on bytes, the coded lists plus a fixed charge for each;
// past it, lists not asked for since the clock hand last passed them go
// first (CLOCK, a cheap approximation of least recently used).
type followLists struct {
	mu      sync.Mutex
	at      map[int64]int32 // user -> index in held
	held    []heldList
	free    []int32 // indexes in held with no list
	hand    int
	size    int // bytes charged for the lists held
	max     int
	hits    atomic.Int64
	misses  atomic.Int64
	entries atomic.Int64
}

// heldList is a user's following list at a version.
type heldList struct {
	user, version int64
	ids           []byte // sorted, each the gap from the one before, uvarint
	used, live    bool
}

// heldListCharge is what a list costs against the bound beside its
// bytes: its slot, its map entry and its allocation's rounding.
const heldListCharge = 96

// FollowListBytes is the default bound on the lists held: the many-viewers
// workload of the benchmark harness needs about 7 MiB of it.
const FollowListBytes = 12 << 20

func newFollowLists(max int) *followLists {
	return &followLists{at: map[int64]int32{}, max: max}
}

// lookup sets, for each head whose list is held at its version, its ids,
// and appends the users of the others to missing.
func (c *followLists) lookup(heads []listHead, missing []int64) []int64 {
	c.mu.Lock()
	for i := range heads {
		h := &heads[i]
		if j, ok := c.at[h.user]; ok && c.held[j].version == h.version {
			c.held[j].used = true
			h.ids, h.ok = c.held[j].ids, true
			continue
		}
		missing = append(missing, h.user)
	}
	c.mu.Unlock()
	n := int64(len(missing))
	c.hits.Add(int64(len(heads)) - n)
	c.misses.Add(n)
	return missing
}

// put holds user's list at version, in place of any it held. A list held
// at a higher version stays: a slower reader's older list must not
// replace it.
func (c *followLists) put(user, version int64, ids []byte) {
	charge := len(ids) + heldListCharge
	if charge > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if j, ok := c.at[user]; ok {
		h := &c.held[j]
		if h.version >= version {
			return
		}
		c.size += len(ids) - len(h.ids)
		h.version, h.ids, h.used = version, ids, true
		return
	}
	for c.size+charge > c.max && c.evict() {
	}
	var j int32
	if n := len(c.free); n > 0 {
		j, c.free = c.free[n-1], c.free[:n-1]
	} else {
		c.held = append(c.held, heldList{})
		j = int32(len(c.held) - 1)
	}
	c.held[j] = heldList{user: user, version: version, ids: ids, live: true}
	c.at[user] = j
	c.size += charge
	c.entries.Add(1)
}

// evict drops one list, the first the hand finds not used since it last
// passed, and says whether there was one to drop.
func (c *followLists) evict() bool {
	for range 2*len(c.held) + 1 {
		if len(c.held) == 0 {
			return false
		}
		c.hand %= len(c.held)
		h := &c.held[c.hand]
		c.hand++
		if !h.live {
			continue
		}
		if h.used {
			h.used = false
			continue
		}
		delete(c.at, h.user)
		c.size -= len(h.ids) + heldListCharge
		c.free = append(c.free, int32(c.hand-1))
		*h = heldList{}
		c.entries.Add(-1)
		return true
	}
	return false
}

// listHead is a list a suggestions call needs: whose, at which version,
// and its ids once found (ok).
type listHead struct {
	user, version int64
	ids           []byte
	ok            bool
}

// codeList codes ids (a list as read, in any order) for holding: sorted,
// the first as a signed varint, each other as its gap from the one before
// it, an unsigned one. It reuses ids' order.
func codeList(ids []int64) []byte {
	slices.Sort(ids)
	b := make([]byte, 0, 2*len(ids)+8)
	for i, id := range ids {
		if i == 0 {
			b = binary.AppendVarint(b, id)
		} else {
			b = binary.AppendUvarint(b, uint64(id-ids[i-1]))
		}
	}
	return b
}

// appendList appends the ids of a list codeList coded to dst.
func appendList(dst []int64, b []byte) []int64 {
	if len(b) == 0 {
		return dst
	}
	last, n := binary.Varint(b)
	if n <= 0 {
		return dst // not a list codeList made; none is held
	}
	dst = append(dst, last)
	for b = b[n:]; len(b) > 0; b = b[n:] {
		var gap uint64
		if gap, n = binary.Uvarint(b); n <= 0 {
			return dst
		}
		last += int64(gap)
		dst = append(dst, last)
	}
	return dst
}
