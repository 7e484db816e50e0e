package db

import "fmt"

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

var sqlserverSuggestionsText = `SELECT q.k, s.Via, ` + userColumns + `
FROM OPENJSON(?) WITH (k int '$[0]', UserId int '$[1]', Lim int '$[2]') AS q
CROSS APPLY (SELECT TOP (q.Lim) c.Id, c.Via FROM
               (` + suggestionCandidates("SELECT q.UserId AS Id", sqlserverNewestFollows) + `) AS c
             JOIN ` + activeUser("n", "c.Id") + `
             ORDER BY c.Via DESC, n.Name ASC, c.Id ASC) AS s
JOIN Users AS u ON u.Id = s.Id`

// sqlserverNewestFollows joins, as alias, the newest n follows by owner.
func sqlserverNewestFollows(alias, owner string, n int) string {
	return fmt.Sprintf(`CROSS APPLY (SELECT TOP (%[3]d) nf.FolloweeId FROM Follows AS nf WHERE nf.FollowerId = %[2]s
          ORDER BY nf.CreatedAt DESC, nf.FolloweeId DESC) AS %[1]s`, alias, owner, n)
}

// sqlserverTime is how a datetime2(7) travels inside OPENJSON.
const sqlserverTime = "2006-01-02T15:04:05.0000000"

func (*sqlserverDialect) pagesQuery(kind listKind, way pageWay, qs []PageQuery) (string, []any) {
	return sqlserverListTexts[way][kind], []any{jsonPages(qs, sqlserverTime)}
}

func (*sqlserverDialect) suggestionsQuery(qs []SuggestionQuery) (string, []any) {
	return sqlserverSuggestionsText, []any{jsonSuggestions(qs)}
}
