package db

import "fmt"

// PostgreSQL's list statements: pages and suggestions, each one statement
// for a batch of users given as one JSON parameter.

func (*postgresDialect) pagesQuery(kind listKind, way pageWay, qs []PageQuery) (string, []any) {
	return postgresListTexts[way][kind], []any{jsonPages(qs, postgresTime)}
}

func (*postgresDialect) suggestionsQuery(qs []SuggestionQuery) (string, []any) {
	return postgresSuggestionsText, []any{jsonSuggestions(qs)}
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

// The suggestions statement looks candidates up in Users by key, most
// shared first, and only as many as the page needs: the candidates come
// sorted by Via, so that an incremental sort on (Via, Name, Id) stops at
// the LIMIT once a Via's group is complete, and OFFSET 0 keeps the
// planner from turning the lookups into a join, which it did with a scan
// of all of Users. For a typical user of the large graph that is a few
// dozen lookups rather than hundreds, and an order of magnitude faster
// (docs/decisions/postgres-tuning.md).
var postgresSuggestionsText = `SELECT q.k, s.*
FROM (SELECT (j.value ->> 0)::integer AS k, (j.value ->> 1)::integer AS UserId, (j.value ->> 2)::integer AS Lim
      FROM jsonb_array_elements(?::jsonb) AS j) AS q
CROSS JOIN LATERAL (
  SELECT c.Via, ` + userColumns + `
  FROM (` + suggestionCandidates("SELECT q.UserId AS Id", postgresNewestFollows) + ` ORDER BY Via DESC) AS c
  CROSS JOIN LATERAL (SELECT * FROM Users AS u WHERE u.Id = c.Id AND ` + active("u") + ` OFFSET 0) AS u
  ORDER BY c.Via DESC, u.Name ASC, c.Id ASC
  LIMIT q.Lim) AS s`

// postgresNewestFollows joins, as alias, the newest n follows by owner: an
// index seek of n entries, whatever the length of owner's list.
func postgresNewestFollows(alias, owner string, n int) string {
	return fmt.Sprintf(`CROSS JOIN LATERAL (SELECT nf.FolloweeId FROM Follows AS nf WHERE nf.FollowerId = %[2]s
          ORDER BY nf.CreatedAt DESC, nf.FolloweeId DESC LIMIT %[3]d) AS %[1]s`, alias, owner, n)
}
