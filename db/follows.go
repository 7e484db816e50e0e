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
	selectFollowTime = `SELECT CreatedAt FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`
	deleteFollow     = `DELETE FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`
	selectPairUsers  = `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Id IN (?, ?)`
)

// Follow is the outcome of a follow: both users as they are after it,
// counts included, and when the follow began. Already is true when it
// existed before; At is then its original time.
type Follow struct {
	Follower, Followee User
	At                 time.Time
	Already            bool
}

// Follow records that follower follows followee. Following again is not an
// error, also when two follows of one pair race.
func (s *Store) Follow(ctx context.Context, follower, followee int64) (Follow, error) {
	if follower == followee {
		return Follow{}, ErrSelfFollow
	}
	var f Follow
	err := s.inTx(ctx, func(r runner) error {
		var err error
		if f.Follower, f.Followee, err = requireUsers(ctx, r, follower, followee); err != nil {
			return err
		}
		var raw any
		err = r.queryRow(ctx, s.d.insertFollow, []any{follower, followee}, &raw)
		if errors.Is(err, sql.ErrNoRows) {
			f.Already = true
			err = r.queryRow(ctx, selectFollowTime, []any{follower, followee}, &raw)
		}
		if err != nil {
			return err
		}
		if !f.Already {
			// What the count triggers just did; the transaction holds the
			// write lock, so nothing else moved the counts meanwhile.
			f.Follower.FollowingCount++
			f.Followee.FollowerCount++
		}
		f.At, err = s.d.scanTime(raw)
		return err
	})
	if err != nil {
		return Follow{}, fmt.Errorf("follow %d -> %d: %w", follower, followee, err)
	}
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
	err := s.inTx(ctx, func(r runner) error {
		var err error
		if u.Follower, u.Followee, err = requireUsers(ctx, r, follower, followee); err != nil {
			return err
		}
		res, err := r.exec(ctx, deleteFollow, follower, followee)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if u.Was = n > 0; u.Was {
			u.Follower.FollowingCount--
			u.Followee.FollowerCount--
		}
		return err
	})
	if err != nil {
		return Unfollow{}, fmt.Errorf("unfollow %d -> %d: %w", follower, followee, err)
	}
	return u, nil
}

// requireUsers reads, inside the write transaction, both ends of a follow,
// so that the caller learns which one is missing rather than meeting an
// anonymous foreign key failure.
func requireUsers(ctx context.Context, r runner, follower, followee int64) (User, User, error) {
	rows, err := r.query(ctx, selectPairUsers, follower, followee)
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

// FollowsExist reports, for each pair, whether that follow exists.
func (s *Store) FollowsExist(ctx context.Context, pairs []Pair) ([]bool, error) {
	list := make([][2]int64, len(pairs))
	for i, p := range pairs {
		list[i] = [2]int64{p.Follower, p.Followee}
	}
	b, _ := json.Marshal(list)
	rows, err := s.read().query(ctx, s.d.followsExist, string(b))
	if err != nil {
		return nil, fmt.Errorf("look up follows: %w", err)
	}
	defer rows.Close()
	found := make(map[Pair]bool, len(pairs))
	for rows.Next() {
		var p Pair
		if err := rows.Scan(&p.Follower, &p.Followee); err != nil {
			return nil, fmt.Errorf("look up follows: %w", err)
		}
		found[p] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up follows: %w", err)
	}
	out := make([]bool, len(pairs))
	for i, p := range pairs {
		out[i] = found[p]
	}
	return out, nil
}
