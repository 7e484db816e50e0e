package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

const (
	insertBlock = `INSERT INTO Blocks (BlockerId, BlockedId)
SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM Blocks WHERE BlockerId = ? AND BlockedId = ?)`
	deletePairFollows = `DELETE FROM Follows WHERE (FollowerId = ? AND FolloweeId = ?) OR (FollowerId = ? AND FolloweeId = ?)`
	deleteBlock       = `DELETE FROM Blocks WHERE BlockerId = ? AND BlockedId = ?`
)

// Block is the outcome of a block: both users as they are after it, whether
// the block existed already, and how many follows it removed.
type Block struct {
	Blocker, Blocked User
	Already          bool
	RemovedFollows   int
}

// Block records that blocker blocks blocked and removes the follows
// between them, both ways, in the same transaction; those removals are
// not follow events (see events.go). Blocking again is not
// an error. While the block stands neither can follow the other.
func (s *Store) Block(ctx context.Context, blocker, blocked int64) (Block, error) {
	var b Block
	err := s.inTx(ctx, func(r runner) error {
		if _, _, err := requireActive(ctx, r, blocker, blocked, ErrSelfBlock); err != nil {
			return err
		}
		res, err := r.exec(ctx, insertBlock, blocker, blocked, blocker, blocked)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		b.Already = n == 0
		res, err = r.exec(ctx, deletePairFollows, blocker, blocked, blocked, blocker)
		if err != nil {
			return err
		}
		removed, err := res.RowsAffected()
		if err != nil {
			return err
		}
		b.RemovedFollows = int(removed)
		// Read back: the count triggers moved both users' counts.
		b.Blocker, b.Blocked, err = requireUsers(ctx, r, blocker, blocked)
		return err
	})
	if err != nil {
		return Block{}, fmt.Errorf("block %d -> %d: %w", blocker, blocked, err)
	}
	return b, nil
}

// Unblock removes blocker's block of blocked and reports whether there was
// one.
func (s *Store) Unblock(ctx context.Context, blocker, blocked int64) (bool, error) {
	var was bool
	err := s.inTx(ctx, func(r runner) error {
		if _, _, err := requireActive(ctx, r, blocker, blocked, nil); err != nil {
			return err
		}
		res, err := r.exec(ctx, deleteBlock, blocker, blocked)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		was = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("unblock %d -> %d: %w", blocker, blocked, err)
	}
	return was, nil
}

// BlocksExist reports, for each pair, whether Follower (the blocker)
// blocks Followee (the blocked).
func (s *Store) BlocksExist(ctx context.Context, pairs []Pair) ([]bool, error) {
	blocks, err := lookup(ctx, s, s.q.blocksExist, pairList(pairs), pairs, func(r *rows) (p Pair, _ bool, err error) {
		err = r.Scan(&p.Follower, &p.Followee)
		return p, true, err
	})
	if err != nil {
		return nil, fmt.Errorf("look up blocks: %w", err)
	}
	return blocks, nil
}

// BlockRelation is whether a viewer blocks a user and the user the viewer.
type BlockRelation struct {
	ViewerBlocks, BlocksViewer bool
}

// viewerBlocks reads the blocks between a viewer and the users of a list,
// both ways, with the viewer's security stamp beside each: the caller
// needs no statement of its own to check that the viewer's token still
// holds. Without a block there is nothing to check, whoever asks.
// idSet is the dialect's (see dialect.idSet).
func viewerBlocks(idSet string) string {
	return `SELECT b.BlockerId, b.BlockedId, v.SecurityStamp FROM Blocks AS b JOIN Users AS v ON v.Id = ?
WHERE (b.BlockerId = v.Id AND b.BlockedId IN (` + idSet + `)) OR (b.BlockedId = v.Id AND b.BlockerId IN (` + idSet + `))`
}

// ViewerBlocks reports, for each of users, whether viewer blocks it and
// it blocks viewer, in one statement for both ways. holds is told the
// viewer's security stamp when there is a block to report, and answers
// whether the viewer's credential still holds for it; when it does not,
// no block is reported, as for a request without a viewer.
func (s *Store) ViewerBlocks(ctx context.Context, viewer int64, users []int64, holds func(stamp string) bool) ([]BlockRelation, error) {
	at := make(map[int64]int, len(users))
	for i, id := range users {
		at[id] = i
	}
	out := make([]BlockRelation, len(users))
	list := idList(users)
	ok := true
	err := scanRows(ctx, s.read(), viewerBlocks(s.d.idSet()), func(r *rows) error {
		var blocker, blocked int64
		var stamp string
		if err := r.Scan(&blocker, &blocked, &stamp); err != nil {
			return err
		}
		if ok = ok && holds(stamp); !ok {
			return nil
		}
		if blocker == viewer {
			if i, found := at[blocked]; found {
				out[i].ViewerBlocks = true
			}
		}
		if blocked == viewer {
			if i, found := at[blocker]; found {
				out[i].BlocksViewer = true
			}
		}
		return nil
	}, viewer, list, list)
	if err != nil {
		return nil, fmt.Errorf("look up blocks of user %d: %w", viewer, err)
	}
	if !ok {
		return make([]BlockRelation, len(users)), nil
	}
	return out, nil
}

const (
	deactivateUser = `UPDATE Users SET DeactivatedAt = ? WHERE Id = ? AND DeactivatedAt IS NULL`
	reactivateUser = `UPDATE Users SET DeactivatedAt = NULL WHERE Id = ? AND DeactivatedAt IS NOT NULL`
	selectUserByID = `SELECT ` + userColumns + ` FROM Users AS u WHERE u.Id = ?`
)

// SetDeactivated deactivates a user (or reactivates it, with false) and,
// in the same transaction, recounts the users around it: counts leave out
// deactivated users, so deactivating one takes it out of the counts of
// everyone it follows and everyone who follows it, and reactivating puts
// it back. Rows are kept, so reactivation restores every list and count as
// it was, follow dates included. changed is false when the user was
// already in that state.
//
// The recount reads the lists of everyone around the account, where
// adjusting each count by one did not: for the most followed account of
// the benchmark graph it holds the write lock for seconds rather than a
// fraction of one (docs/decisions/one-count-rule.md). Deactivation is
// rare; one rule is worth it.
func (s *Store) SetDeactivated(ctx context.Context, id int64, deactivated bool) (u User, changed bool, err error) {
	err = s.inTx(ctx, func(r runner) error {
		if err := lockAround(ctx, r, id); err != nil {
			return err
		}
		stmt, args := reactivateUser, []any{id}
		if deactivated {
			stmt, args = deactivateUser, []any{s.d.timeArg(nowUTC()), id}
		}
		res, err := r.exec(ctx, stmt, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if changed = n > 0; changed {
			if _, err := r.exec(ctx, recountAround, id, id, id); err != nil {
				return err
			}
		}
		err = r.queryRow(ctx, selectUserByID, []any{id}, u.scanDest()...)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		return err
	})
	if err != nil {
		return User{}, false, fmt.Errorf("set user %d deactivated=%v: %w", id, deactivated, err)
	}
	return u, changed, nil
}

// CountBlocked returns how many active users a user blocks.
func (s *Store) CountBlocked(ctx context.Context, blocker int64) (int, error) {
	var n int
	err := s.read().queryRow(ctx, `SELECT COUNT(*) FROM Blocks AS b JOIN Users AS u ON u.Id = b.BlockedId
WHERE b.BlockerId = ? AND u.DeactivatedAt IS NULL`, []any{blocker}, &n)
	if err != nil {
		return 0, fmt.Errorf("count blocked users: %w", err)
	}
	return n, nil
}
