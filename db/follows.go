package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Pair is one possible follow: Follower follows Followee.
type Pair struct {
	Follower, Followee int64
}

// Statements of the write transactions, prepared when the store opens (see
// writeStatements).
const (
	deleteFollow    = `DELETE FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`
	countPairBlocks = `SELECT COUNT(*) FROM Blocks WHERE (BlockerId = ? AND BlockedId = ?) OR (BlockerId = ? AND BlockedId = ?)`
	updateFollow    = `UPDATE Follows SET Muted = COALESCE(?, Muted), NotificationsEnabled = COALESCE(?, NotificationsEnabled)
WHERE FollowerId = ? AND FolloweeId = ?`
	selectFollow = `SELECT CreatedAt, Muted, NotificationsEnabled FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`
)

// Follow is the outcome of a follow: both users as they are after it,
// counts included, and when the follow began. Already is true when it
// existed before; At is then its original time.
type Follow struct {
	Follower, Followee          User
	At                          time.Time
	Already                     bool
	Muted, NotificationsEnabled bool
}

// Follow records that follower follows followee. Following again is not an
// error, also when two follows of one pair race. A deactivated follower
// gets ErrDeactivated, a deactivated followee ErrNotFound, and a block
// either way ErrBlocked.
func (s *Store) Follow(ctx context.Context, follower, followee int64) (Follow, error) {
	var f Follow
	var event int64
	err := s.inTx(ctx, func(r runner) error {
		event = 0 // of an attempt rolled back
		var err error
		if f.Follower, f.Followee, err = requireActive(ctx, r, follower, followee, ErrSelfFollow); err != nil {
			return err
		}
		var blocks int
		if err := r.queryRow(ctx, countPairBlocks, []any{follower, followee, followee, follower}, &blocks); err != nil {
			return err
		}
		if blocks > 0 {
			return ErrBlocked
		}
		var raw any
		err = r.queryRow(ctx, s.q.insertFollow, []any{follower, followee}, &raw)
		f.NotificationsEnabled = true // the column's default
		if errors.Is(err, sql.ErrNoRows) {
			f.Already = true
			err = r.queryRow(ctx, selectFollow, []any{follower, followee}, &raw, &f.Muted, &f.NotificationsEnabled)
		}
		if err != nil {
			return err
		}
		if !f.Already {
			// Read back what the count triggers did, rather than add one
			// in Go to what was read before: the payload's counts are the
			// database's after the write, whatever committed since that
			// read (on a server database at READ COMMITTED, anything that
			// did not wait for the rows' locks).
			if f.Follower, f.Followee, err = requireUsers(ctx, r, follower, followee); err != nil {
				return err
			}
		}
		if f.At, err = s.d.scanTime(raw); err != nil || f.Already {
			return err
		}
		event, err = r.addEvent(ctx, EventFollowed, follower, followee, f.At)
		return err
	})
	if err != nil {
		return Follow{}, fmt.Errorf("follow %d -> %d: %w", follower, followee, err)
	}
	s.feed.saw(event)
	return f, nil
}

// Unfollow is the outcome of an unfollow: both users as they are after it,
// and whether there was a follow to remove.
type Unfollow struct {
	Follower, Followee User
	Was                bool
}

// Unfollow removes the follow of followee by follower, if there is one.
func (s *Store) Unfollow(ctx context.Context, follower, followee int64) (Unfollow, error) {
	var u Unfollow
	var event int64
	err := s.inTx(ctx, func(r runner) error {
		event = 0 // of an attempt rolled back
		var err error
		if u.Follower, u.Followee, err = requireActive(ctx, r, follower, followee, nil); err != nil {
			return err
		}
		res, err := r.exec(ctx, deleteFollow, follower, followee)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if u.Was = n > 0; !u.Was {
			return nil
		}
		// Read back, as Follow does.
		if u.Follower, u.Followee, err = requireUsers(ctx, r, follower, followee); err != nil {
			return err
		}
		event, err = r.addEvent(ctx, EventUnfollowed, follower, followee, nowUTC())
		return err
	})
	if err != nil {
		return Unfollow{}, fmt.Errorf("unfollow %d -> %d: %w", follower, followee, err)
	}
	s.feed.saw(event)
	return u, nil
}

// requireUsers reads, inside the write transaction, both ends of a follow,
// so that the caller learns which one is missing rather than meeting an
// anonymous foreign key failure. It locks both rows (the dialect's
// rowLocker) until the transaction ends: on a server database no one deletes
// or deactivates them meanwhile, and a user being deleted is found
// missing here, once the delete commits, rather than tripping a foreign
// key later.
func requireUsers(ctx context.Context, r runner, follower, followee int64) (User, User, error) {
	rows, err := r.query(ctx, r.s.q.selectPairUsers, follower, followee)
	if err != nil {
		return User{}, User{}, err
	}
	found, err := scanUsers(rows)
	if err != nil {
		return User{}, User{}, err
	}
	var a, b User
	for _, u := range found {
		if u.ID == follower {
			a = u
		} else if u.ID == followee {
			b = u
		}
	}
	switch {
	case a.ID == 0:
		return a, b, ErrFollowerNotFound
	case b.ID == 0:
		return a, b, ErrNotFound
	}
	return a, b, nil
}

// requireActive is requireUsers for an actor acting on a target, and the
// one place the deactivation rule is checked: a deactivated actor may not
// act (whatever the target), and a deactivated target is not found. The
// actor is checked first, so a deactivated account learns that before
// anything about the target. self is the error for acting on oneself, or
// nil where that is just a target that is not found.
func requireActive(ctx context.Context, r runner, actor, target int64, self error) (User, User, error) {
	a, b, err := requireUsers(ctx, r, actor, target)
	switch {
	case errors.Is(err, ErrFollowerNotFound):
		return a, b, err
	case a.Deactivated:
		return a, b, ErrDeactivated
	case actor == target && self != nil:
		return a, b, self
	case err != nil:
		return a, b, err
	case b.Deactivated:
		return a, b, ErrNotFound
	}
	return a, b, nil
}

// UpdateFollow changes the settings of follower's follow of followee; a nil
// setting stays as it is. Not following is ErrNotFound.
func (s *Store) UpdateFollow(ctx context.Context, follower, followee int64, muted, notifications *bool) (Follow, error) {
	f := Follow{Already: true}
	err := s.inTx(ctx, func(r runner) error {
		var err error
		if f.Follower, f.Followee, err = requireActive(ctx, r, follower, followee, nil); err != nil {
			return err
		}
		res, err := r.exec(ctx, updateFollow, nullBool(muted), nullBool(notifications), follower, followee)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		var raw any
		if err := r.queryRow(ctx, selectFollow, []any{follower, followee}, &raw, &f.Muted, &f.NotificationsEnabled); err != nil {
			return err
		}
		f.At, err = s.d.scanTime(raw)
		return err
	})
	if err != nil {
		return Follow{}, fmt.Errorf("update follow %d -> %d: %w", follower, followee, err)
	}
	return f, nil
}

func nullBool(b *bool) sql.NullBool {
	if b == nil {
		return sql.NullBool{}
	}
	return sql.NullBool{Bool: *b, Valid: true}
}

// FollowState is whether a follow exists and, if it does, its settings.
type FollowState struct {
	Exists, Muted, NotificationsEnabled bool
}

// Follows reports, for each pair, whether that follow exists and its
// settings.
func (s *Store) Follows(ctx context.Context, pairs []Pair) ([]FollowState, error) {
	states, err := lookup(ctx, s, s.q.followsExist, pairList(pairs), pairs, func(r *rows) (p Pair, st FollowState, err error) {
		st.Exists = true
		err = r.Scan(&p.Follower, &p.Followee, &st.Muted, &st.NotificationsEnabled)
		return p, st, err
	})
	if err != nil {
		return nil, fmt.Errorf("look up follows: %w", err)
	}
	return states, nil
}

// pairList passes a batch of pairs as one JSON parameter of [follower,
// followee] arrays, as idList does ids.
func pairList(pairs []Pair) string {
	list := make([][2]int64, len(pairs))
	for i, p := range pairs {
		list[i] = [2]int64{p.Follower, p.Followee}
	}
	b, _ := json.Marshal(list)
	return string(b)
}
