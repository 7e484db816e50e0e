package db

import (
	"context"
	"fmt"
)

// The count rule. A user's FollowerCount is the number of follows of it
// whose follower is active, and its FollowingCount the number of follows by
// it whose followee is active: the lengths of its two lists. The triggers
// (in each dialect's migrations) apply the rule to every follow any writer
// inserts, deletes or moves, in the writer's own transaction.
// followerCount and followingCount state the rule whole, for what must
// recount rather than adjust: the check and its repair, the bulk import
// (which sets the triggers aside) and deactivation (which changes whom
// every count around an account counts).
//
// They leave out deactivated users with NOT IN over the deactivated ids,
// which SQLite reads once per statement, rather than with a join to Users
// per follow as the lists do: a recount of the large graph took about a
// fifth of the time in this form that it took with the join
// (docs/decisions/one-count-rule.md).
func followerCount(user string) string {
	return `(SELECT COUNT(*) FROM Follows AS f WHERE f.FolloweeId = ` + user + ` AND ` + counted("FollowerId") + `)`
}

func followingCount(user string) string {
	return `(SELECT COUNT(*) FROM Follows AS f WHERE f.FollowerId = ` + user + ` AND ` + counted("FolloweeId") + `)`
}

// counted is the rule's condition on a follow f, counted for the user at
// one of its ends: the other end, in column other, is not deactivated.
func counted(other string) string {
	return `f.` + other + ` NOT IN (` + deactivatedIDs + `)`
}

var deactivatedIDs = `SELECT d.Id FROM Users AS d WHERE NOT (` + active("d") + `)`

// bumpFollowingVersion is the assignment that every statement setting
// FollowingCount outside the count triggers makes as well: a user's
// FollowingVersion goes up whenever its following list may have changed,
// and the triggers bump it in the same UPDATE as the count. The store's
// lists kept in memory are read again when it moves (followLists). A
// recount after a deactivation bumps it with no list changed, which costs
// those users' lists one more read, not a wrong answer.
const bumpFollowingVersion = `FollowingVersion = FollowingVersion + 1`

// recountUsers is the statement that sets the counts of the users whose
// ids affected selects by the count rule.
func recountUsers(affected string) string {
	return `UPDATE Users SET FollowerCount = ` + followerCount("Users.Id") + `,
  FollowingCount = ` + followingCount("Users.Id") + `, ` + bumpFollowingVersion + `
WHERE Id IN (` + affected + `)`
}

// recountUsersGrouped is recountUsers for a bulk import, which touches
// most users: the rule applied in one pass over the follow table grouped
// by each end, rather than in two index lookups per user. On PostgreSQL
// those lookups read the freshly loaded rows in the followees' scattered
// order, about three times slower than grouped; on SQLite the two cost
// about the same, so one form serves both
// (docs/decisions/one-count-rule.md).
func recountUsersGrouped(affected string) string {
	grouped := func(end, other string) string {
		return `SELECT f.` + end + ` AS Id, COUNT(*) AS n FROM Follows AS f WHERE ` + counted(other) + ` GROUP BY f.` + end
	}
	return `UPDATE Users SET FollowerCount = coalesce(c.Followers, 0), FollowingCount = coalesce(c.Following, 0),
  ` + bumpFollowingVersion + `
FROM (SELECT u.Id, fr.n AS Followers, fg.n AS Following FROM Users AS u
  LEFT JOIN (` + grouped("FolloweeId", "FollowerId") + `) AS fr ON fr.Id = u.Id
  LEFT JOIN (` + grouped("FollowerId", "FolloweeId") + `) AS fg ON fg.Id = u.Id
  WHERE u.Id IN (` + affected + `)) AS c
WHERE Users.Id = c.Id`
}

// aroundUser selects a user (id, three times), the users it follows and
// those who follow it: whose counts its deactivation or deletion changes.
const aroundUser = `SELECT FolloweeId FROM Follows WHERE FollowerId = ?
  UNION SELECT FollowerId FROM Follows WHERE FolloweeId = ? UNION SELECT ?`

// recountAround recounts, after a user's (id, three times) deactivation or
// reactivation, the users around it (aroundUser).
var recountAround = recountUsers(aroundUser)

var checkCounts = `SELECT * FROM (
  SELECT ` + userColumns + `, ` + followerCount("u.Id") + ` AS Followers, ` + followingCount("u.Id") + ` AS Following
  FROM Users AS u) AS c
WHERE c.FollowerCount <> c.Followers OR c.FollowingCount <> c.Following
ORDER BY c.Id`

// Drift is a user whose kept counts differ from a recount of its follows.
type Drift struct {
	User                               User // with the counts as kept
	RecountFollowers, RecountFollowing int
}

// CheckCounts recounts every user's follows and returns the users whose
// kept counts differ; with repair, it also recounts those users' counts
// in place, in the same transaction. The triggers keep the counts, so
// drift means someone wrote around them (a dropped trigger, a bulk load
// with triggers off).
func (s *Store) CheckCounts(ctx context.Context, repair bool) ([]Drift, error) {
	var drift []Drift
	err := s.inTx(ctx, func(r runner) error {
		rows, err := r.query(ctx, checkCounts)
		if err != nil {
			return err
		}
		defer rows.Close()
		var ids []int64
		for rows.Next() {
			var d Drift
			if err := rows.Scan(append(d.User.scanDest(), &d.RecountFollowers, &d.RecountFollowing)...); err != nil {
				return err
			}
			drift = append(drift, d)
			ids = append(ids, d.User.ID)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		if !repair || len(ids) == 0 {
			return nil
		}
		_, err = r.exec(ctx, s.q.recountIDs, idList(ids))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("check follow counts: %w", err)
	}
	return drift, nil
}
