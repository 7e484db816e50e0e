package db

import "strconv"

// SQLite ranks suggestions in Go (listSuggester): its SQL would group and
// order them by sorting. These are the statements that read their data.

func (*sqliteDialect) suggestionLists() string { return sqliteSuggestionLists }

func (*sqliteDialect) bumpFollowVersions() string {
	return `INSERT INTO FollowVersions (UserId, Version) SELECT value, 1 FROM json_each(?) WHERE true
ON CONFLICT (UserId) DO UPDATE SET Version = Version + 1`
}

// sqliteSuggestionFollowees is one user's share of the data its
// suggestions come from, as rows (k, Ids), Ids a comma-separated list:
// with k the query's position, the active people the user follows, only
// the newest follows counting (see SuggestionVia), each followed by the
// version of its own follows (0 where it has none: see followLists);
// with k -1 minus the position, the people the user follows and the
// people it blocks or is blocked by, whom suggestions leave out. Each part
// is a range of an index that covers it: the counting and excluding that
// SQLite would do by sorting groups on disk pages and by a lookup per row,
// Go does on the ids in memory (tally.count). A list in one row rather
// than a row per id costs a third less
// (docs/decisions/suggestions-ranked-in-go.md): the driver's work
// per row outweighs SQLite's per id.
var sqliteSuggestionFollowees = `SELECT ? AS k, group_concat(mine.FolloweeId || ',' || coalesce(fv.Version, 0))
FROM (` + sqliteNewestFollowees("?", SuggestionVia) + `) AS mine
  JOIN ` + activeUser("v", "mine.FolloweeId") + `
  LEFT JOIN FollowVersions AS fv ON fv.UserId = mine.FolloweeId
UNION ALL
SELECT ?, group_concat(x.Id) FROM (
  SELECT f.FolloweeId AS Id FROM Follows AS f WHERE f.FollowerId = ?
  UNION ALL
  SELECT b.BlockedId FROM Blocks AS b WHERE b.BlockerId = ?
  UNION ALL
  SELECT b.BlockerId FROM Blocks AS b WHERE b.BlockedId = ?) AS x`

// sqliteSuggestionLists reads, for the users of an id list, as rows (Id,
// Version, Ids), the version of their follows and the people they
// followed last, the newest SuggestionsPerVia, as a comma-separated list:
// one statement, one snapshot, so a list is the one its version names.
//
// The newest follows are those the other dialects' LATERAL and CROSS
// APPLY take (ORDER BY CreatedAt DESC, FolloweeId DESC LIMIT n): SQLite
// has no LATERAL join, but a scalar subquery may hold a LIMIT per row, so
// each list is one walk of the (FollowerId, CreatedAt, FolloweeId) index;
// a bound by time at the n-th newest follow, as this statement had
// before, walked it twice and let follows tied at the bound's time all in.
var sqliteSuggestionLists = `SELECT m.value, coalesce(fv.Version, 0),
  (SELECT group_concat(theirs.FolloweeId) FROM (` + sqliteNewestFollowees("m.value", SuggestionsPerVia) + `) AS theirs)
FROM json_each(?) AS m LEFT JOIN FollowVersions AS fv ON fv.UserId = m.value`

// sqliteNewestFollowees are, as rows (FolloweeId), the people the user
// whose id is owner followed last, the newest n.
func sqliteNewestFollowees(owner string, n int) string {
	return `SELECT nf.FolloweeId FROM Follows AS nf WHERE nf.FollowerId = ` + owner + `
    ORDER BY nf.CreatedAt DESC, nf.FolloweeId DESC LIMIT ` + strconv.Itoa(n)
}

func (*sqliteDialect) suggestionFollowees(qs []SuggestionQuery) (string, []any) {
	args := func(k int, user int64) []any { return []any{k, user, -1 - k, user, user, user} }
	return unionBatch(sqliteSuggestionFollowees, len(qs),
		func(i int) []any { return args(i, qs[i].User) }, args(len(qs), 0))
}
