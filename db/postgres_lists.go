package db

import "sync"

// PostgreSQL's list statements: pages and suggestions, each one statement
// for a batch of users given as one JSON parameter.

func (*postgresDialect) pagesQuery(kind listKind, way pageWay, qs []PageQuery) (string, []any) {
	return postgresListTexts[way][kind], []any{jsonPages(qs, postgresTime)}
}

func (*postgresDialect) suggestionData(qs []SuggestionQuery, budget int) (string, []any) {
	return postgresSuggestionData, []any{jsonSuggestions(qs, budget)}
}

// The list statements: for each query in the JSON batch, LATERAL seeks
// that user's index range from the cursor the page starts at (backwards
// for a forward page, forwards for a backward one), by the row-value
// comparison the index serves as one range, up to the cursor it stops at,
// and stops at the query's own LIMIT. The users are joined inside, so
// that each query's rows come out in the order it read them. A page
// without a cursor for an end of its range carries one past that end of
// every list.
var postgresListTexts = fillLists(`SELECT q.k, p.*
FROM (SELECT (j.value ->> 0)::integer AS k, (j.value ->> 1)::integer AS UserId, (j.value ->> 2)::integer AS Lim,
             (j.value ->> 3)::timestamptz AS FromAt, (j.value ->> 4)::integer AS FromId,
             (j.value ->> 5)::timestamptz AS ToAt, (j.value ->> 6)::integer AS ToId
      FROM jsonb_array_elements(?::jsonb) AS j) AS q
CROSS JOIN LATERAL (
  SELECT {e}.CreatedAt, ` + listUserColumns + `
  FROM {table} AS {e} JOIN ` + activeUser("u", "{e}.{other}") + `
  WHERE {e}.{owner} = q.UserId AND ({e}.CreatedAt, {e}.{other}) {from} (q.FromAt, q.FromId)
    AND ({e}.CreatedAt, {e}.{other}) {to} (q.ToAt, q.ToId){also}
  ORDER BY {e}.CreatedAt {order}, {e}.{other} {order}
  LIMIT q.Lim) AS p`)

// postgresSuggestionData reads suggestions' data for a batch of users
// given as one JSON parameter (see listSuggester, and
// sqliteSuggestionData, which reads the same the same way): per user, its
// newest follows off the keyset index, at most budget+1 of them, with the
// running sum of their cost, those the budget takes as id:version pairs;
// and the ids to leave out. The store takes the lists from memory or
// reads them (postgresFollowingLists), counts and ranks in Go. Ranking in
// SQL (this dialect's statement until the budget) grouped every follow
// read and probed Follows and Blocks twice for each, which cost
// PostgreSQL more CPU than PostGraphile's plain join and group
// (docs/decisions/suggestions-budget.md).
var postgresSuggestionData = `WITH q AS (
  SELECT (j.value ->> 0)::integer AS k, (j.value ->> 1)::integer AS UserId, (j.value ->> 3)::integer AS Budget
  FROM jsonb_array_elements(?::jsonb) AS j)
SELECT q.k, d.Sampled, d.Heads
FROM q CROSS JOIN LATERAL (
  SELECT (coalesce(max(m.Run) > q.Budget, false))::integer::bigint AS Sampled,
    string_agg(CASE WHEN m.Active AND m.Run <= q.Budget THEN m.FolloweeId::text || ':' || m.Version::text END, ',') AS Heads
  FROM (SELECT mine.FolloweeId, ` + active("v") + ` AS Active, v.FollowingVersion AS Version,
          sum(` + followeeCost("v") + `) OVER (ORDER BY mine.CreatedAt DESC, mine.FolloweeId DESC ROWS UNBOUNDED PRECEDING) AS Run
        FROM (SELECT nf.FolloweeId, nf.CreatedAt FROM Follows AS nf WHERE nf.FollowerId = q.UserId
              ORDER BY nf.CreatedAt DESC, nf.FolloweeId DESC LIMIT q.Budget + 1) AS mine
          JOIN Users AS v ON v.Id = mine.FolloweeId) AS m) AS d
UNION ALL
SELECT -1 - q.k, (SELECT r.Renames FROM UserRenames AS r), (SELECT string_agg(x.Id::text, ',') FROM (
    SELECT f.FolloweeId AS Id FROM Follows AS f WHERE f.FollowerId = q.UserId
    UNION ALL
    SELECT bl.BlockedId FROM Blocks AS bl WHERE bl.BlockerId = q.UserId
    UNION ALL
    SELECT bl.BlockerId FROM Blocks AS bl WHERE bl.BlockedId = q.UserId) AS x)
FROM q`

// postgresFollowingLists reads users' following lists, each with its
// version from the same snapshot: the list is one range of the primary
// key, (FollowerId, FolloweeId), read index only.
var postgresFollowingLists = `SELECT u.Id, u.FollowingVersion,
  (SELECT string_agg(f.FolloweeId::text, ',') FROM Follows AS f WHERE f.FollowerId = u.Id)
FROM Users AS u WHERE u.Id IN (` + postgresIDSet + `)`

func (*postgresDialect) followingLists() string { return postgresFollowingLists }

// candidateUsers reads the users suggestions rank, with the rename count
// of the same snapshot, at which their names are held.
func (*postgresDialect) candidateUsers() string { return candidateUsers(postgresIDSet) }

// withUsers puts a batch statement and the users to read along with it
// side by side: a full join on false is every row of each with the
// other's columns null, one statement with one plan, where a UNION ALL
// would need the batch's columns spelled out to pad the users' rows.
func (*postgresDialect) withUsers(text string) string {
	if t, ok := postgresWithUsers.Load(text); ok {
		return t.(string)
	}
	t := `WITH m AS (` + text + `),
a AS (SELECT ` + userColumns + ` FROM Users AS u WHERE u.Id IN (` + postgresIDSet + `))
SELECT a.*, m.* FROM m FULL JOIN a ON false`
	postgresWithUsers.Store(text, t)
	return t
}

// postgresWithUsers holds withUsers' statements by the batch's text, so
// that each is made once (and its rebinding found by its text).
var postgresWithUsers sync.Map
