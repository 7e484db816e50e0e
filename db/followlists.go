package db

import "sync"

// followLists keeps, for suggestions, the newest follows of the users
// whose lists were read (each a user's newest SuggestionsPerVia
// followees), with the version of that user's follows they were read at.
// Every change to a user's follows bumps its version, by trigger
// (migration 9, SQLite), whoever writes, so a list held at the version a
// statement has just read is the list that statement would read: reading
// a version is one seek where reading a list walks up to 400 index
// entries, 0.26-0.34 µs each, most of a suggestions call's cost
// (docs/decisions/suggestion-list-cache.md). Lists are never changed once held.
type followLists struct {
	mu    sync.Mutex
	lists map[int64]followList
	held  int // the cost of all lists held (see listCost)
	limit int
}

type followList struct {
	version int64
	ids     []int64
}

// followListsIDs bounds what is held, in ids (see listCost): 8 bytes
// each, 4 MiB of ids and at most 65,536 lists with their map entries,
// against the peak RSS of 100 MB issue 15 asks.
const followListsIDs = 1 << 19

// listCost is what a list counts against the bound: its ids, and eight
// more for its map entry and slice header, so that many short lists are
// bounded too.
func listCost(ids []int64) int { return len(ids) + 8 }

func newFollowLists(limit int) *followLists {
	return &followLists{lists: map[int64]followList{}, limit: limit}
}

// get returns the list of user id if it is held at version. A nil
// followLists holds nothing.
func (l *followLists) get(id, version int64) ([]int64, bool) {
	if l == nil {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fl, ok := l.lists[id]
	if !ok || fl.version != version {
		return nil, false
	}
	return fl.ids, true
}

// put holds the list of user id, read at version, unless it holds one of
// a later version; to make room it drops other lists, whichever the map
// gives first.
func (l *followLists) put(id, version int64, ids []int64) {
	if l == nil || listCost(ids) > l.limit {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.lists[id]; ok {
		if old.version > version {
			return
		}
		l.held -= listCost(old.ids)
		delete(l.lists, id)
	}
	for other, fl := range l.lists {
		if l.held+listCost(ids) <= l.limit {
			break
		}
		l.held -= listCost(fl.ids)
		delete(l.lists, other)
	}
	l.lists[id] = followList{version: version, ids: ids}
	l.held += listCost(ids)
}
