package db

// SQLite ranks suggestions in Go (listSuggester): its SQL would group and
// order them by sorting. This is the statement that reads their data.

// sqliteSuggestionData is one user's share of the data its suggestions
// come from, as rows (k, N, Heads): with k the query's position, the
// people the user follows whose lists the budget takes (see
// SuggestionBudget), as id:FollowingVersion pairs, and N 1 if it left any
// out; with k -1 minus the position, the people the user follows and the
// people it blocks or is blocked by, whom suggestions leave out, and N
// the rename count the held names are checked by (heldNames).
//
// The user's follows are read newest first off the keyset index, at most
// budget+1 of them (each costs at least 1, so the one past that is past
// the budget anyway), with a running sum of their cost. The lists
// themselves the store holds (followLists) or reads with
// sqliteFollowingLists; the counting and excluding that SQLite would do
// by sorting groups on disk pages and by a lookup per row, Go does on the
// ids in memory (tally.count). A list in one row rather than a row per id
// costs a third less (docs/decisions/suggestions-ranked-in-go.md): the
// driver's work per row outweighs SQLite's per id.
var sqliteSuggestionData = `SELECT ? AS k, coalesce(max(m.Run) > ?, 0),
  group_concat(CASE WHEN m.Active AND m.Run <= ? THEN m.FolloweeId || ':' || m.Version END)
FROM (SELECT mine.FolloweeId, ` + active("v") + ` AS Active, v.FollowingVersion AS Version,
        sum(` + followeeCost("v") + `) OVER (ORDER BY mine.CreatedAt DESC, mine.FolloweeId DESC ROWS UNBOUNDED PRECEDING) AS Run
      FROM (SELECT nf.FolloweeId, nf.CreatedAt FROM Follows AS nf WHERE nf.FollowerId = ?
            ORDER BY nf.CreatedAt DESC, nf.FolloweeId DESC LIMIT ?) AS mine
        JOIN Users AS v ON v.Id = mine.FolloweeId) AS m
UNION ALL
SELECT -1 - ?, (SELECT r.Renames FROM UserRenames AS r), group_concat(x.Id) FROM (
  SELECT f.FolloweeId AS Id FROM Follows AS f WHERE f.FollowerId = ?
  UNION ALL
  SELECT b.BlockedId FROM Blocks AS b WHERE b.BlockerId = ?
  UNION ALL
  SELECT b.BlockerId FROM Blocks AS b WHERE b.BlockedId = ?) AS x`

func (*sqliteDialect) suggestionData(qs []SuggestionQuery, budget int) (string, []any) {
	args := func(k int, user int64) []any {
		return []any{k, budget, budget, user, budget + 1, k, user, user, user}
	}
	return unionBatch(sqliteSuggestionData, len(qs),
		func(i int) []any { return args(i, qs[i].User) }, args(len(qs), 0))
}

// sqliteFollowingLists reads users' following lists, each with its
// version from the same snapshot: the list is one range of the primary
// key, (FollowerId, FolloweeId), which covers it.
var sqliteFollowingLists = `SELECT u.Id, u.FollowingVersion,
  (SELECT group_concat(f.FolloweeId) FROM Follows AS f WHERE f.FollowerId = u.Id)
FROM Users AS u WHERE u.Id IN (` + sqliteIDSet + `)`

func (*sqliteDialect) followingLists() string { return sqliteFollowingLists }

// candidateUsers reads the users suggestions rank, with the rename count
// of the same snapshot, at which their names are held.
func (*sqliteDialect) candidateUsers() string { return candidateUsers(sqliteIDSet) }
