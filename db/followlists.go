package db

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// followLists keeps, for suggestions, the newest follows of the users
// whose lists were read (each a user's newest SuggestionsPerVia
// followees), with the version of that user's follows they were read at.
// Every change to a user's follows bumps its version, by trigger
// (migrations 9 and 10, SQLite), whoever writes, so a list held at the
// version a statement has just read is the list that statement would
// read: reading a version is one seek where reading a list walks its
// index entries, most of a suggestions call's cost
// (docs/decisions/suggestion-list-cache.md). Lists are never changed once
// held.
type followLists struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[int64, followList]
	held  int // the cost of all lists held (see listCost)
	limit int

	// hits and misses count the lists get was asked for: held at the
	// version asked, or not (for /metrics).
	hits, misses atomic.Uint64
}

type followList struct {
	version int64
	ids     []int64
}

// followListsIDs bounds what is held, in ids (see listCost): 8 bytes
// each, 4 MiB of ids and at most 65,536 lists with their entries, well
// inside the server's memory budget.
const followListsIDs = 1 << 19

// listCost is what a list counts against the bound: its ids, and eight
// more for its entry and slice header, so that many short lists are
// bounded too.
func listCost(ids []int64) int { return len(ids) + 8 }

func newFollowLists(limit int) *followLists {
	l := &followLists{limit: limit}
	// Every list costs at least 8, so the count never reaches limit: the
	// cost bound, in put, is the one that evicts. The callback runs
	// under l.mu, from the calls to l.lru in put.
	lru, err := simplelru.NewLRU(max(limit, 1), func(_ int64, fl followList) { l.held -= listCost(fl.ids) })
	if err != nil {
		panic(err) // the size is positive
	}
	l.lru = lru
	return l
}

// get returns the list of user id if it is held at version, and makes it
// the most recently used. A nil followLists holds nothing, and counts
// nothing.
func (l *followLists) get(id, version int64) ([]int64, bool) {
	if l == nil {
		return nil, false
	}
	l.mu.Lock()
	fl, ok := l.lru.Get(id)
	l.mu.Unlock()
	if !ok || fl.version != version {
		l.misses.Add(1)
		return nil, false
	}
	l.hits.Add(1)
	return fl.ids, true
}

// put holds the list of user id, read at version, unless it holds one of
// a later version; to make room it drops the least recently used lists.
func (l *followLists) put(id, version int64, ids []int64) {
	if l == nil || listCost(ids) > l.limit {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.lru.Peek(id); ok {
		if old.version > version {
			return
		}
		l.lru.Remove(id)
	}
	for l.held+listCost(ids) > l.limit {
		if _, _, ok := l.lru.RemoveOldest(); !ok {
			break
		}
	}
	l.lru.Add(id, followList{version: version, ids: ids})
	l.held += listCost(ids)
}
