package db

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Direction picks one of a user's two follow lists.
type Direction int

const (
	Followers Direction = iota // who follows the user
	Following                  // whom the user follows
)

func (d Direction) String() string {
	if d == Following {
		return "following"
	}
	return "followers"
}

// Cursor is a keyset position in a list ordered newest first: the follow's
// time and the other user's id, which breaks ties. The zero Cursor is the
// start of the list.
type Cursor struct {
	At time.Time
	ID int64
}

// IsZero reports whether c is the start of a list.
func (c Cursor) IsZero() bool { return c.At.IsZero() && c.ID == 0 }

// PageQuery asks for a page of one user's list, as the Relay cursor
// connections spec pages: of the entries between the cursors After and
// Before (a zero cursor leaves that end open), the First from the start,
// or, when Backward, the Last from the end. It is comparable, so a
// request-scoped loader can use it as its key.
type PageQuery struct {
	User          int64
	After, Before Cursor
	First         int
	Backward      bool
	Last          int
	// Brief says that the caller shows of each user listed only its id
	// and name; a list that can tell those from memory then reads no
	// row for them (see SuggestionQuery.Brief).
	Brief bool
}

// size is how many entries the page asks for.
func (q PageQuery) size() int {
	if q.Backward {
		return q.Last
	}
	return q.First
}

// cursors are the cursors the page gives, in the order it reads them:
// the one it reads from and the one it reads up to, a forward page from
// After toward Before, a backward one from Before toward After. A cursor
// not given is zero.
func (q PageQuery) cursors() (from, to Cursor) {
	if q.Backward {
		return q.Before, q.After
	}
	return q.After, q.Before
}

// ends are cursors, each one not given replaced by the cursor past that
// end of every list.
func (q PageQuery) ends() (from, to Cursor) {
	from, to = q.cursors()
	start, stop := pastNewest, pastOldest
	if q.Backward {
		start, stop = stop, start
	}
	if from.IsZero() {
		from = start
	}
	if to.IsZero() {
		to = stop
	}
	return from, to
}

// way is which way the page reads its list.
func (q PageQuery) way() pageWay {
	if q.Backward {
		return backward
	}
	return forward
}

// Edge is an entry of a follow list: the other user and when the follow
// began.
type Edge struct {
	User User
	At   time.Time
}

// newestFirst orders edges as every per-user list is: by time, then by
// the other user's id, both descending, as the keyset index reads them.
func newestFirst(a, b Edge) int {
	if c := b.At.Compare(a.At); c != 0 {
		return c
	}
	return cmp.Compare(b.User.ID, a.User.ID)
}

// Page is a slice of a list, in the list's order. HasNext tells whether
// entries of the page's range follow it, HasPrevious whether some precede
// it. A page learns only of the side it reads toward: a forward page's
// HasPrevious and a backward page's HasNext are false.
type Page struct {
	Edges       []Edge
	HasNext     bool
	HasPrevious bool
}

// Suggestion is a user followed by Via of the people someone follows;
// Sampled when the budget counted only the newest of those (see
// SuggestionBudget).
type Suggestion struct {
	User    User
	Via     int
	Sampled bool
}

// SuggestionQuery asks for the First best suggestions for User. Brief
// says that the caller shows of each suggested user only its id and name:
// a user whose name is held at the count the call read (see
// rankCandidates) is then not read at all, and its Suggestion.User has
// only ID and Name set.
type SuggestionQuery struct {
	User  int64
	First int
	Brief bool
}

// listKind names the per-user lists a dialect batches.
type listKind int

const (
	listFollowers listKind = iota
	listFollowing
	listMutual
	listBlocked
)

// pastNewest and pastOldest are cursors beyond either end of every list,
// newer and older than any entry: a page that gives no cursor for an end
// of its range reads from or up to one of them when its statement
// compares cursors.
var (
	pastNewest = Cursor{At: time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC), ID: math.MaxInt32}
	pastOldest = Cursor{At: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), ID: 0}
)

// MaxBatch is the most queries one batch statement answers; loaders must
// not send more.
const MaxBatch = 128

// FollowPages returns, for each query, a page of the user's followers or
// following, newest follow first, and reads the users along, if any.
func (s *Store) FollowPages(ctx context.Context, dir Direction, qs []PageQuery, along *Along) ([]Page, error) {
	kind := listFollowers
	if dir == Following {
		kind = listFollowing
	}
	pages, err := s.pages(ctx, kind, qs, along)
	if err != nil {
		return nil, fmt.Errorf("load %s pages: %w", dir, err)
	}
	return pages, nil
}

// MutualPages returns, for each query, a page of the people the user
// follows who follow the user back, newest follow by the user first, and
// reads the users along, if any.
func (s *Store) MutualPages(ctx context.Context, qs []PageQuery, along *Along) ([]Page, error) {
	pages, err := s.pages(ctx, listMutual, qs, along)
	if err != nil {
		return nil, fmt.Errorf("load mutual follows: %w", err)
	}
	return pages, nil
}

// BlockedPage returns a page of the people a user blocks, newest first.
func (s *Store) BlockedPage(ctx context.Context, q PageQuery) (Page, error) {
	pages, err := s.pages(ctx, listBlocked, []PageQuery{q}, nil)
	if err != nil {
		return Page{}, fmt.Errorf("load blocked users: %w", err)
	}
	return pages[0], nil
}

// MutualCounts returns, for each id, how many of the people it follows
// follow it back.
func (s *Store) MutualCounts(ctx context.Context, ids []int64) ([]int, error) {
	counts, err := lookup(ctx, s, s.q.mutualCounts, idList(ids), ids, func(r *rows) (id int64, n int, err error) {
		err = r.Scan(&id, &n)
		return id, n, err
	})
	if err != nil {
		return nil, fmt.Errorf("count mutual follows: %w", err)
	}
	return counts, nil
}

// pages answers a batch of page queries of one kind of list. Forward and
// backward pages read the index in opposite orders, so each way that the
// batch holds is one statement. A statement may return more rows than a
// page asks for (see pageBranch), and in no promised order: each page's
// rows are put in the list's order here and cut to the page's size at the
// end it was read from, the row past it telling that more follow. The
// users along come with the first statement.
func (s *Store) pages(ctx context.Context, kind listKind, qs []PageQuery, along *Along) ([]Page, error) {
	out := make([]Page, len(qs))
	for _, way := range []pageWay{forward, backward} {
		var batch []PageQuery
		var at []int // the position in qs of each of batch
		for i, q := range qs {
			if q.way() == way {
				batch = append(batch, q)
				at = append(at, i)
			}
		}
		if len(batch) == 0 {
			continue
		}
		text, args := s.d.pagesQuery(kind, way, batch)
		// One row's destinations serve every row: each is copied out.
		var k int
		var e Edge
		var raw any
		dest := append([]any{&k, &raw}, e.User.scanDest()...)
		short := append([]any{&k, &raw}, e.User.scanListDest()...)
		cols := 0
		err := s.scanAlong(ctx, text, args, along,
			func(rows *rows) error {
				if cols == 0 {
					// A dialect's statement reads userColumns or
					// listUserColumns: its columns say which.
					names, err := rows.Columns()
					if err != nil {
						return err
					}
					if cols = len(names); cols == len(short) {
						dest = short
					}
				}
				if err := rows.Scan(dest...); err != nil {
					return err
				}
				t, err := s.d.scanTime(raw)
				if err != nil {
					return err
				}
				e.At = t
				p := &out[at[k]]
				if p.Edges == nil {
					// A page's rows are one more than it asks for, at most.
					p.Edges = make([]Edge, 0, batch[k].size()+1)
				}
				p.Edges = append(p.Edges, e)
				return nil
			})
		if err != nil {
			return nil, err
		}
	}
	for i, q := range qs {
		p := &out[i]
		slices.SortFunc(p.Edges, newestFirst)
		n := q.size()
		if len(p.Edges) <= n {
			continue
		}
		if q.Backward {
			p.Edges, p.HasPrevious = p.Edges[len(p.Edges)-n:], true
		} else {
			p.Edges, p.HasNext = p.Edges[:n], true
		}
	}
	return out, nil
}

// scanBatch runs a batch statement and hands each row to scan.
func (s *Store) scanBatch(ctx context.Context, text string, args []any, scan func(rows *rows) error) error {
	return scanRows(ctx, s.read(), text, scan, args...)
}
