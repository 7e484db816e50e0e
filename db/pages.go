package db

import (
	"context"
	"fmt"
	"math"
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

// PageQuery asks for the First entries of one user's list after a cursor.
// It is comparable, so a request-scoped loader can use it as its key.
type PageQuery struct {
	User  int64
	After Cursor
	First int
}

// Edge is an entry of a follow list: the other user and when the follow
// began.
type Edge struct {
	User User
	At   time.Time
}

// Page is a slice of a list; HasNext tells whether entries follow it.
type Page struct {
	Edges   []Edge
	HasNext bool
}

// Suggestion is a user followed by Via of the people someone follows.
type Suggestion struct {
	User User
	Via  int
}

// SuggestionQuery asks for the First best suggestions for User.
type SuggestionQuery struct {
	User  int64
	First int
}

// listKind names the per-user lists a dialect batches.
type listKind int

const (
	listFollowers listKind = iota
	listFollowing
	listMutual
	listBlocked
)

// endOfList is a cursor past every real entry: pages after a cursor start
// there when a batch mixes first and later pages.
var endOfList = Cursor{At: time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC), ID: math.MaxInt32}

// MaxBatch is the most queries one batch statement answers; loaders must
// not send more.
const MaxBatch = 128

// FollowPages returns, for each query, a page of the user's followers or
// following, newest follow first.
func (s *Store) FollowPages(ctx context.Context, dir Direction, qs []PageQuery) ([]Page, error) {
	kind := listFollowers
	if dir == Following {
		kind = listFollowing
	}
	pages, err := s.pages(ctx, kind, qs)
	if err != nil {
		return nil, fmt.Errorf("load %s pages: %w", dir, err)
	}
	return pages, nil
}

// MutualPages returns, for each query, a page of the people the user
// follows who follow the user back, newest follow by the user first.
func (s *Store) MutualPages(ctx context.Context, qs []PageQuery) ([]Page, error) {
	pages, err := s.pages(ctx, listMutual, qs)
	if err != nil {
		return nil, fmt.Errorf("load mutual follows: %w", err)
	}
	return pages, nil
}

// BlockedPage returns a page of the people a user blocks, newest first.
func (s *Store) BlockedPage(ctx context.Context, q PageQuery) (Page, error) {
	pages, err := s.pages(ctx, listBlocked, []PageQuery{q})
	if err != nil {
		return Page{}, fmt.Errorf("load blocked users: %w", err)
	}
	return pages[0], nil
}

// MutualCounts returns, for each id, how many of the people it follows
// follow it back.
func (s *Store) MutualCounts(ctx context.Context, ids []int64) ([]int, error) {
	counts, err := lookup(ctx, s, s.d.mutualCounts, idList(ids), ids, func(r *rows) (id int64, n int, err error) {
		err = r.Scan(&id, &n)
		return id, n, err
	})
	if err != nil {
		return nil, fmt.Errorf("count mutual follows: %w", err)
	}
	return counts, nil
}

// Suggestions returns, for each query, the users followed by the most of
// the people the user follows, excluding the user and those it already
// follows; ties go by name.
func (s *Store) Suggestions(ctx context.Context, qs []SuggestionQuery) ([][]Suggestion, error) {
	out := make([][]Suggestion, len(qs))
	if len(qs) == 0 {
		return out, nil
	}
	text, args := s.d.suggestionsQuery(qs)
	err := s.scanBatch(ctx, text, args, func(rows *rows) error {
		var i int
		var sg Suggestion
		if err := rows.Scan(append([]any{&i, &sg.Via}, sg.User.scanDest()...)...); err != nil {
			return err
		}
		out[i] = append(out[i], sg)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load suggestions: %w", err)
	}
	return out, nil
}

func (s *Store) pages(ctx context.Context, kind listKind, qs []PageQuery) ([]Page, error) {
	out := make([]Page, len(qs))
	if len(qs) == 0 {
		return out, nil
	}
	text, args := s.d.pagesQuery(kind, qs)
	err := s.scanBatch(ctx, text, args,
		func(rows *rows) error {
			var i int
			var e Edge
			var raw any
			if err := rows.Scan(append([]any{&i, &raw}, e.User.scanDest()...)...); err != nil {
				return err
			}
			at, err := s.d.scanTime(raw)
			if err != nil {
				return err
			}
			e.At = at
			p := &out[i]
			if len(p.Edges) == qs[i].First {
				p.HasNext = true
				return nil // and rows past first+1, from a LIMIT bucket
			}
			p.Edges = append(p.Edges, e)
			return nil
		})
	return out, err
}

// scanBatch runs a batch statement and hands each row to scan.
func (s *Store) scanBatch(ctx context.Context, text string, args []any, scan func(rows *rows) error) error {
	rows, err := s.read().query(ctx, text, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
