package db

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
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

// The statements below answer one query for each of many users in a single
// statement: one UNION ALL branch per user, each of which seeks that user's
// index range and stops at its LIMIT. Unlike ROW_NUMBER() over partitions,
// the cost does not grow with the size of a popular user's list. Each
// branch's first column is the position of its query in the batch.
//
// A branch compares a cursor only for pages after the first; see
// pageBranch for how its LIMIT is written.
var (
	followersBranch = `SELECT * FROM (
  SELECT ? AS k, f.CreatedAt, ` + userColumns + `
  FROM Follows AS f JOIN Users AS u ON u.Id = f.FollowerId
  WHERE f.FolloweeId = ? /*after*/AND (f.CreatedAt, f.FollowerId) < (?, ?)/*end*/
  ORDER BY f.CreatedAt DESC, f.FollowerId DESC LIMIT /*limit*/)`
	followingBranch = `SELECT * FROM (
  SELECT ? AS k, f.CreatedAt, ` + userColumns + `
  FROM Follows AS f JOIN Users AS u ON u.Id = f.FolloweeId
  WHERE f.FollowerId = ? /*after*/AND (f.CreatedAt, f.FolloweeId) < (?, ?)/*end*/
  ORDER BY f.CreatedAt DESC, f.FolloweeId DESC LIMIT /*limit*/)`
	// Mutual follows walk the user's own following list, newest first, and
	// keep those who follow back: the cost is bounded by the user's own
	// list, whatever the popularity of the people in it.
	mutualBranch = `SELECT * FROM (
  SELECT ? AS k, f.CreatedAt, ` + userColumns + `
  FROM Follows AS f JOIN Users AS u ON u.Id = f.FolloweeId
  WHERE f.FollowerId = ? /*after*/AND (f.CreatedAt, f.FolloweeId) < (?, ?)/*end*/
    AND EXISTS (SELECT 1 FROM Follows AS b WHERE b.FollowerId = f.FolloweeId AND b.FolloweeId = f.FollowerId)
  ORDER BY f.CreatedAt DESC, f.FolloweeId DESC LIMIT /*limit*/)`
	// Suggestions are the people followed by those the user follows: the
	// cost is the sum of their following lists, never a popular account's
	// followers.
	suggestionsBranch = `SELECT * FROM (
  SELECT ? AS k, s.Via, ` + userColumns + `
  FROM (SELECT f2.FolloweeId AS Id, COUNT(*) AS Via
        FROM Follows AS f1 JOIN Follows AS f2 ON f2.FollowerId = f1.FolloweeId
        WHERE f1.FollowerId = ? AND f2.FolloweeId <> f1.FollowerId
          AND NOT EXISTS (SELECT 1 FROM Follows AS f3 WHERE f3.FollowerId = f1.FollowerId AND f3.FolloweeId = f2.FolloweeId)
        GROUP BY f2.FolloweeId) AS s
  JOIN Users AS u ON u.Id = s.Id
  ORDER BY s.Via DESC, u.Name ASC, s.Id ASC LIMIT ?)`
)

// limitBuckets are the LIMITs written into pages after the first: the
// smallest that holds first+1 rows, the extra rows dropped in Go.
var limitBuckets = []int{11, 21, 51, 101}

// pageBranch makes a list branch's text. A first page compares no cursor
// and binds its LIMIT. A later page compares the cursor and has its LIMIT
// written in as one of limitBuckets (our constant, never a client's value):
// SQLite re-prepares, on every run, a statement whose bound LIMIT meets a
// bound range on an index, which for fifty branches tripled its cost
// (measured: 2.9 ms against 0.9 ms).
func pageBranch(tmpl string, after bool, limit int) string {
	head, rest, _ := strings.Cut(tmpl, "/*after*/")
	cond, tail, _ := strings.Cut(rest, "/*end*/")
	if !after {
		return head + strings.Replace(tail, "/*limit*/", "?", 1)
	}
	return head + cond + strings.Replace(tail, "/*limit*/", strconv.Itoa(limit), 1)
}

// FollowPages returns, for each query, a page of the user's followers or
// following, newest follow first.
func (s *Store) FollowPages(ctx context.Context, dir Direction, qs []PageQuery) ([]Page, error) {
	branch := followersBranch
	if dir == Following {
		branch = followingBranch
	}
	pages, err := s.pages(ctx, branch, qs)
	if err != nil {
		return nil, fmt.Errorf("load %s pages: %w", dir, err)
	}
	return pages, nil
}

// MutualPages returns, for each query, a page of the people the user
// follows who follow the user back, newest follow by the user first.
func (s *Store) MutualPages(ctx context.Context, qs []PageQuery) ([]Page, error) {
	pages, err := s.pages(ctx, mutualBranch, qs)
	if err != nil {
		return nil, fmt.Errorf("load mutual follows: %w", err)
	}
	return pages, nil
}

// MutualCounts returns, for each id, how many of the people it follows
// follow it back.
func (s *Store) MutualCounts(ctx context.Context, ids []int64) ([]int, error) {
	rows, err := s.read().query(ctx, `
SELECT k.value, (SELECT COUNT(*) FROM Follows AS f
                 WHERE f.FollowerId = k.value
                   AND EXISTS (SELECT 1 FROM Follows AS b WHERE b.FollowerId = f.FolloweeId AND b.FolloweeId = f.FollowerId))
FROM json_each(?) AS k`, idList(ids))
	if err != nil {
		return nil, fmt.Errorf("count mutual follows: %w", err)
	}
	defer rows.Close()
	byID := make(map[int64]int, len(ids))
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("count mutual follows: %w", err)
		}
		byID[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count mutual follows: %w", err)
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, nil
}

// Suggestions returns, for each query, the users followed by the most of
// the people the user follows, excluding the user and those it already
// follows; ties go by name.
func (s *Store) Suggestions(ctx context.Context, qs []SuggestionQuery) ([][]Suggestion, error) {
	out := make([][]Suggestion, len(qs))
	err := s.batch(ctx, suggestionsBranch, len(qs),
		func(i int) []any { return []any{i, qs[i].User, qs[i].First} },
		[]any{-1, 0, 0},
		func(rows *sql.Rows) error {
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

func (s *Store) pages(ctx context.Context, tmpl string, qs []PageQuery) ([]Page, error) {
	out := make([]Page, len(qs))
	// A batch is all first pages, or else every branch compares a cursor,
	// a first page's being one past the end of its list.
	after, limit := false, 0
	for _, q := range qs {
		after = after || !q.After.IsZero()
		limit = max(limit, q.First+1)
	}
	end := Cursor{At: time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC), ID: math.MaxInt64}
	args := func(i int) []any {
		// One more row than asked tells whether another page follows.
		q := qs[i]
		return []any{i, q.User, q.First + 1}
	}
	pad := []any{-1, 0, 0}
	if after {
		for _, b := range limitBuckets {
			if b >= limit {
				limit = b
				break
			}
		}
		args = func(i int) []any {
			q := qs[i]
			c := q.After
			if c.IsZero() {
				c = end
			}
			return []any{i, q.User, s.d.timeArg(c.At), c.ID}
		}
		pad = []any{-1, 0, s.d.timeArg(end.At), 0}
	}
	err := s.batch(ctx, pageBranch(tmpl, after, limit), len(qs), args, pad,
		func(rows *sql.Rows) error {
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

type unionKey struct {
	branch string
	size   int
}

var unionTexts sync.Map // unionKey -> string

// unionText is size copies of branch joined by UNION ALL, built once.
func unionText(branch string, size int) string {
	k := unionKey{branch, size}
	if t, ok := unionTexts.Load(k); ok {
		return t.(string)
	}
	t := strings.TrimSuffix(strings.Repeat(branch+"\nUNION ALL\n", size), "\nUNION ALL\n")
	unionTexts.Store(k, t)
	return t
}

// batchSizes are the branch counts a batch statement is padded to, so that
// a handful of statement texts, each prepared once, serve every batch.
var batchSizes = []int{1, 2, 4, 8, 16, 32, 64, 128}

// MaxBatch is the most queries one batch statement answers; loaders must
// not send more.
const MaxBatch = 128

// batch runs n queries as one UNION ALL statement of branch, padded with
// branches that match nothing, and hands each row to scan. args gives a
// query's parameters, the first being its position, which each row echoes
// in its first column.
func (s *Store) batch(ctx context.Context, branch string, n int, args func(i int) []any, pad []any, scan func(rows *sql.Rows) error) error {
	if n == 0 {
		return nil
	}
	if n > MaxBatch {
		return fmt.Errorf("batch of %d exceeds %d", n, MaxBatch)
	}
	size := batchSizes[len(batchSizes)-1]
	for _, b := range batchSizes {
		if b >= n {
			size = b
			break
		}
	}
	var params []any
	for i := range size {
		if i < n {
			params = append(params, args(i)...)
		} else {
			params = append(params, pad...)
		}
	}
	rows, err := s.read().query(ctx, unionText(branch, size), params...)
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
