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
	selectPairUsers  = `SELECT Id FROM Users WHERE Id IN (?, ?)`
)

// Follow records that follower follows followee and returns when that
// began. Following again is not an error: already is true and at is the
// time of the existing follow, also when two follows of one pair race.
func (s *Store) Follow(ctx context.Context, follower, followee int64) (at time.Time, already bool, err error) {
	if follower == followee {
		return time.Time{}, false, ErrSelfFollow
	}
	err = s.inTx(ctx, func(r runner) error {
		if err := requireUsers(ctx, r, follower, followee); err != nil {
			return err
		}
		var raw any
		err := r.queryRow(ctx, s.d.insertFollow, []any{follower, followee}, &raw)
		if errors.Is(err, sql.ErrNoRows) {
			already = true
			err = r.queryRow(ctx, selectFollowTime, []any{follower, followee}, &raw)
		}
		if err != nil {
			return err
		}
		at, err = s.d.scanTime(raw)
		return err
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("follow %d -> %d: %w", follower, followee, err)
	}
	return at, already, nil
}

// Unfollow removes the follow of followee by follower and reports whether
// there was one.
func (s *Store) Unfollow(ctx context.Context, follower, followee int64) (was bool, err error) {
	err = s.inTx(ctx, func(r runner) error {
		if err := requireUsers(ctx, r, follower, followee); err != nil {
			return err
		}
		res, err := r.exec(ctx, deleteFollow, follower, followee)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		was = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("unfollow %d -> %d: %w", follower, followee, err)
	}
	return was, nil
}

// requireUsers checks, inside the write transaction, that both ends of a
// follow exist, so that the caller learns which one is missing rather than
// meeting an anonymous foreign key failure.
func requireUsers(ctx context.Context, r runner, follower, followee int64) error {
	rows, err := r.query(ctx, selectPairUsers, follower, followee)
	if err != nil {
		return err
	}
	defer rows.Close()
	var haveFollower, haveFollowee bool
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		haveFollower = haveFollower || id == follower
		haveFollowee = haveFollowee || id == followee
	}
	if err := rows.Err(); err != nil {
		return err
	}
	switch {
	case !haveFollower:
		return ErrFollowerNotFound
	case !haveFollowee:
		return ErrNotFound
	}
	return nil
}

// FollowsExist reports, for each pair, whether that follow exists.
func (s *Store) FollowsExist(ctx context.Context, pairs []Pair) ([]bool, error) {
	list := make([][2]int64, len(pairs))
	for i, p := range pairs {
		list[i] = [2]int64{p.Follower, p.Followee}
	}
	b, _ := json.Marshal(list)
	rows, err := s.read().query(ctx, `
SELECT f.FollowerId, f.FolloweeId
FROM json_each(?) AS p
JOIN Follows AS f ON f.FollowerId = p.value ->> 0 AND f.FolloweeId = p.value ->> 1`, string(b))
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
