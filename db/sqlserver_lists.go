package db

// SQL Server's list statements: Query.users' page, and pages and
// suggestions, each one statement for a batch of users given as one JSON
// parameter.

func (*sqlserverDialect) listUsers() [2]string { return sqlserverListUsers }

var sqlserverListUsers = fillUsers(`SELECT TOP (@p3) ` + userColumns + ` FROM Users AS u WHERE u.Id BETWEEN @p1 AND @p2 AND ` + active("u") + ` ORDER BY u.Id {order}`)

// The list statements: for each query in the JSON batch, CROSS APPLY seeks
// that user's index range from the cursor the page starts at (down for a
// forward page, up for a backward one) up to the cursor it stops at, and
// stops at TOP (Lim). SQL Server has no row-value comparison; the OR form
// below still seeks the index. A page without a cursor for an end of its
// range carries one past that end of every list.
var sqlserverListTexts = fillLists(`SELECT q.k, {e}.CreatedAt, ` + userColumns + `
FROM OPENJSON(?) WITH (k int '$[0]', UserId int '$[1]', Lim int '$[2]',
                       FromAt datetime2(7) '$[3]', FromId int '$[4]', ToAt datetime2(7) '$[5]', ToId int '$[6]') AS q
CROSS APPLY (SELECT TOP (q.Lim) {e}.{other} AS Other, {e}.CreatedAt
             FROM {table} AS {e} JOIN ` + activeUser("a", "{e}.{other}") + `
             WHERE {e}.{owner} = q.UserId
               AND ({e}.CreatedAt {from} q.FromAt OR ({e}.CreatedAt = q.FromAt AND {e}.{other} {from} q.FromId))
               AND ({e}.CreatedAt {to} q.ToAt OR ({e}.CreatedAt = q.ToAt AND {e}.{other} {to} q.ToId)){also}
             ORDER BY {e}.CreatedAt {order}, {e}.{other} {order}) AS {e}
JOIN Users AS u ON u.Id = {e}.Other`)

// sqlserverSuggestionsText ranks suggestions in SQL within the budget
// (see SuggestionBudget): for each query in the JSON batch, the user's
// followees the budget takes (sqlserverBudgeted), every follow of each,
// grouped and counted, never the user, anyone it follows, blocks or is
// blocked by, the best first by Via, Name, Id.
var sqlserverSuggestionsText = `SELECT q.k, sm.Sampled, s.Via, ` + userColumns + `
FROM OPENJSON(?) WITH (k int '$[0]', UserId int '$[1]', Lim int '$[2]', Budget int '$[3]') AS q
CROSS APPLY (SELECT CASE WHEN MAX(m.Run) > q.Budget THEN CAST(1 AS bit) ELSE CAST(0 AS bit) END AS Sampled
             FROM (` + sqlserverBudgeted + `) AS m) AS sm
CROSS APPLY (SELECT TOP (q.Lim) c.Id, c.Via FROM
               (SELECT f2.FolloweeId AS Id, COUNT(*) AS Via
                FROM (` + sqlserverBudgeted + `) AS m
                  JOIN Follows AS f2 ON f2.FollowerId = m.FolloweeId
                WHERE m.Active = 1 AND m.Run <= q.Budget
                  AND f2.FolloweeId <> q.UserId
                  AND NOT EXISTS (SELECT 1 FROM Follows AS f3 WHERE f3.FollowerId = q.UserId AND f3.FolloweeId = f2.FolloweeId)
                  AND ` + notBlocked("q.UserId", "f2.FolloweeId") + `
                GROUP BY f2.FolloweeId) AS c
             JOIN ` + activeUser("n", "c.Id") + `
             ORDER BY c.Via DESC, n.Name ASC, c.Id ASC) AS s
JOIN Users AS u ON u.Id = s.Id`

// sqlserverBudgeted are, as rows (FolloweeId, Active, Run), the newest
// budget+1 follows of the user q.UserId, whether each followee is active,
// and the running sum of their cost (followeeCost), newest first.
var sqlserverBudgeted = `SELECT mine.FolloweeId, CASE WHEN ` + active("v") + ` THEN 1 ELSE 0 END AS Active,
                  SUM(CAST(` + followeeCost("v") + ` AS bigint)) OVER (ORDER BY mine.CreatedAt DESC, mine.FolloweeId DESC ROWS UNBOUNDED PRECEDING) AS Run
                FROM (SELECT TOP (q.Budget + 1) nf.FolloweeId, nf.CreatedAt FROM Follows AS nf WHERE nf.FollowerId = q.UserId
                      ORDER BY nf.CreatedAt DESC, nf.FolloweeId DESC) AS mine
                  JOIN Users AS v ON v.Id = mine.FolloweeId`

// sqlserverTime is how a datetime2(7) travels inside OPENJSON.
const sqlserverTime = "2006-01-02T15:04:05.0000000"

func (*sqlserverDialect) pagesQuery(kind listKind, way pageWay, qs []PageQuery) (string, []any) {
	return sqlserverListTexts[way][kind], []any{jsonPages(qs, sqlserverTime)}
}

func (*sqlserverDialect) suggestionsQuery(qs []SuggestionQuery, budget int) (string, []any) {
	return sqlserverSuggestionsText, []any{jsonSuggestions(qs, budget)}
}
