package db

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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
// held. The store keeps one only where those triggers are as the
// migrations made them (see startFollowLists).
type followLists struct {
	mu    sync.Mutex
	lru   *simplelru.LRU[int64, followList]
	held  int // the cost of all lists held (see listCost)
	limit int

	// hits and misses count the lists get was asked for: held at the
	// version asked, or not (for /metrics, see Store.SuggestionListCounts).
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

// WithSuggestionCache turns the suggestion list cache on (the default) or
// off. Off, suggestions read every list they need from the database, as
// they do where the cache's triggers are missing, and the triggers are
// not checked: the switch for an operator who would rather not trust a
// database other programs change the schema of.
func WithSuggestionCache(on bool) Option {
	return func(s *Store) { s.listsOff = !on }
}

// WithLogger has the store log what it decides at Open that an operator
// should know (whether the suggestion list cache is on, and why not) to
// log rather than slog.Default.
func WithLogger(log *slog.Logger) Option {
	return func(s *Store) { s.log = log }
}

// SuggestionListCounts says how many of the lists suggestions needed were
// held at their version (hits) and how many were read from the database
// (misses) since Open; on is false where the store keeps no lists (a
// dialect that ranks suggestions in SQL, the cache switched off, or its
// triggers missing), and the counts are then zero.
func (s *Store) SuggestionListCounts() (hits, misses uint64, on bool) {
	if s.lists == nil {
		return 0, 0, false
	}
	return s.lists.hits.Load(), s.lists.misses.Load(), true
}

// startFollowLists gives the store its list cache, after the migrations,
// where suggestions use one: unless switched off, and only if the
// triggers that keep the versions are those the migrations made. An app
// sharing the file can drop them (EF Core rebuilds a table it cannot
// ALTER, dropping the triggers its model does not create), and the lists
// held would then outlive the follows they were read from; without the
// cache every suggestion reads its lists, and is right either way. The
// log says once which it is, and how to restore the triggers.
func (s *Store) startFollowLists(ctx context.Context) error {
	if _, ok := s.d.(listSuggester); !ok {
		return nil // suggestions are ranked in SQL: nothing to keep
	}
	log := s.log
	if log == nil {
		log = slog.Default()
	}
	if s.listsOff {
		log.Info("suggestion list cache off", "reason", "switched off")
		return nil
	}
	faults, restore, err := sqliteFollowVersionFaults(ctx, s.db)
	if err != nil {
		return fmt.Errorf("check the follow version triggers: %w", err)
	}
	if len(faults) > 0 {
		log.Warn("suggestion list cache off: suggestions read every list from the database",
			"reason", strings.Join(faults, "; "),
			"restore", "recreate the triggers as the migrations define them (follows schema -dialect sqlite prints them), then restart",
			"statements", strings.Join(restore, " "))
		return nil
	}
	s.lists = newFollowLists(followListsIDs)
	return nil
}
