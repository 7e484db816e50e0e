package db

import (
	"context"
	"database/sql"
	"slices"
)

// Along is users a batch of lists reads along with its pages: a
// request's root users (user(id:), node, nodes, and the viewer its token
// claims), whose first lists a request reads in the same moment. Where
// the dialect can (userRider: PostgreSQL), they come in the lists' own
// statement, so that a profile or a viewer's suggestions cost one
// statement, not two (docs/decisions/following-versions.md measures the
// second statement at a fifth of such a request's CPU, server and
// database together); elsewhere the call reads them itself, first.
//
// The batch methods that take one (FollowPages, MutualPages,
// Suggestions) fill Users, in the order of IDs, a missing user nil, as
// UsersByID returns them, and leave it nil when they fail.
type Along struct {
	IDs   []int64
	Users []*User
}

// read reports whether a call has users to read along.
func (a *Along) read() bool { return a != nil && len(a.IDs) > 0 && a.Users == nil }

// scanAlong is scanBatch reading along's users with the statement: in it,
// where the dialect can, else before it.
func (s *Store) scanAlong(ctx context.Context, text string, args []any, along *Along, scan func(*rows) error) error {
	if !along.read() {
		return s.scanBatch(ctx, text, args, scan)
	}
	rider, ok := s.d.(userRider)
	if !ok {
		users, err := s.UsersByID(ctx, along.IDs)
		if err != nil {
			return err
		}
		if err := s.scanBatch(ctx, text, args, scan); err != nil {
			return err
		}
		along.Users = users
		return nil
	}
	found := make(map[int64]*User, len(along.IDs))
	var id sql.NullInt64
	var lead []any // the row's own columns, scanned by scan
	err := s.scanBatch(ctx, rider.withUsers(text), append(args, idList(along.IDs)), func(r *rows) error {
		if lead == nil {
			cols, err := r.Rows.Columns()
			if err != nil {
				return err
			}
			lead = slices.Repeat([]any{discard{}}, len(cols))
			lead[0] = &id
		}
		if err := r.Rows.Scan(lead...); err != nil {
			return err
		}
		if !id.Valid {
			// A row of the batch's own: its columns come after the
			// user's (see withUsers), which scan does not see.
			r.hidden = userCount
			defer func() { r.hidden = 0 }()
			return scan(r)
		}
		var u User
		dest := append(u.scanDest(), lead[userCount:]...)
		if err := r.Rows.Scan(dest...); err != nil {
			return err
		}
		found[u.ID] = &u
		return nil
	})
	if err != nil {
		return err
	}
	along.Users = make([]*User, len(along.IDs))
	for i, id := range along.IDs {
		along.Users[i] = found[id]
	}
	return nil
}

// userCount is how many columns userColumns are.
var userCount = len(new(User).scanDest())

// discard is a scan destination that keeps nothing.
type discard struct{}

func (discard) Scan(any) error { return nil }

// discards are destinations for the users' columns, which a row of the
// batch's own leaves null and its reader does not see.
var discards = slices.Repeat([]any{discard{}}, userCount)
