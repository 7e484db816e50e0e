package db

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// The per-user lists and the conditions that every dialect's statements
// share. A dialect writes how it batches a list query (SQLite: UNION ALL
// branches; SQL Server: CROSS APPLY over a JSON batch) once, as a
// template, and fillLists makes each list's statement from it: a new list
// is a row of listShapes, a new dialect a template, and neither writes
// the conditions again.

// listShape is what tells one per-user list from another. Its entries are
// rows of table (aliased alias), owner is the column holding the list's
// user and other the column holding the user listed; also, if not empty,
// is a further condition on an entry. Every list is ordered newest first
// by (CreatedAt, other), which the index on (owner, CreatedAt, other)
// serves as a seek either way.
type listShape struct {
	table, alias, owner, other, also string
}

var listShapes = map[listKind]listShape{
	listFollowers: {table: "Follows", alias: "f", owner: "FolloweeId", other: "FollowerId"},
	listFollowing: {table: "Follows", alias: "f", owner: "FollowerId", other: "FolloweeId"},
	// Mutual follows walk the user's own following list, newest first, and
	// keep those who follow back: the cost is bounded by the user's own
	// list, whatever the popularity of the people in it. A block removes
	// the follows both ways, so no blocked user can be a mutual follow.
	listMutual: {table: "Follows", alias: "f", owner: "FollowerId", other: "FolloweeId", also: followsBack("f")},
	// The people the user blocks, newest block first.
	listBlocked: {table: "Blocks", alias: "b", owner: "BlockerId", other: "BlockedId"},
}

// pageWay is which way a page goes through its list: forward, from its
// `after` cursor or the list's start, or backward, from its `before`
// cursor or the list's end.
type pageWay int

const (
	forward pageWay = iota
	backward
)

// seek is how a statement reads an index for a page: down, from the
// cursor it starts at toward smaller keys, largest first, or up. A
// template writes the comparison with the cursor a page starts at as
// {from}, with the one it stops at as {to}, and the order as {order}.
type seek struct{ from, to, order string }

var (
	down = seek{from: "<", to: ">", order: "DESC"}
	up   = seek{from: ">", to: "<", order: "ASC"}
)

// listSeeks are how a per-user list, newest first, is read each way:
// forward down its index, backward up it, so that a backward page costs a
// forward one's seek; the store puts its rows back in the list's order
// (see Store.pages).
var listSeeks = [...]seek{forward: down, backward: up}

func (k seek) fill(tmpl string) string {
	return strings.NewReplacer("{from}", k.from, "{to}", k.to, "{order}", k.order).Replace(tmpl)
}

// fillLists makes each list's statement for each way from a dialect's
// template, which names the parts of a list as {table}, {e} (the entry's
// alias), {owner} and {other}, has {also} where an entry's further
// condition goes (with its AND), and {from}, {to} and {order} (see seek).
func fillLists(tmpl string) [2]map[listKind]string {
	var out [2]map[listKind]string
	for way, k := range listSeeks {
		out[way] = make(map[listKind]string, len(listShapes))
		for kind, l := range listShapes {
			also := ""
			if l.also != "" {
				also = " AND " + l.also
			}
			out[way][kind] = strings.NewReplacer("{table}", l.table, "{e}", l.alias, "{owner}", l.owner, "{other}", l.other, "{also}", also).Replace(k.fill(tmpl))
		}
	}
	return out
}

// fillUsers makes Query.users' statement for each way from a dialect's
// template: the users go by id ascending, so forward reads up the primary
// key and backward down it (the template writes only {order}).
func fillUsers(tmpl string) [2]string {
	return [2]string{forward: up.fill(tmpl), backward: down.fill(tmpl)}
}

// active is the condition that the Users row aliased u is an active
// account: a deactivated account keeps its rows but is left out of every
// list and every count until it reactivates.
func active(u string) string { return u + ".DeactivatedAt IS NULL" }

// activeUser joins, as alias, the Users row whose Id is id, when that
// user is active.
func activeUser(alias, id string) string {
	return "Users AS " + alias + " ON " + alias + ".Id = " + id + " AND " + active(alias)
}

// followsBack is the condition that the followee of the follow aliased f
// follows its follower too.
func followsBack(f string) string {
	return "EXISTS (SELECT 1 FROM Follows AS b WHERE b.FollowerId = " + f + ".FolloweeId AND b.FolloweeId = " + f + ".FollowerId)"
}

// notBlocked is the condition that neither of the users whose ids are x and
// y blocks the other.
func notBlocked(x, y string) string {
	return "NOT EXISTS (SELECT 1 FROM Blocks AS b WHERE b.BlockerId = " + x + " AND b.BlockedId = " + y + ")" +
		" AND NOT EXISTS (SELECT 1 FROM Blocks AS b WHERE b.BlockerId = " + y + " AND b.BlockedId = " + x + ")"
}

// mutualCount is how many of the people the user whose id is user follows
// follow it back: the length of its mutual list.
func mutualCount(user string) string {
	return `(SELECT COUNT(*) FROM Follows AS f JOIN ` + activeUser("o", "f.FolloweeId") + `
  WHERE f.FollowerId = ` + user + ` AND ` + followsBack("f") + `)`
}

// SuggestionBudget bounds one user's suggestions: the people it follows
// count as "via" newest first (CreatedAt, then FolloweeId, descending),
// each with every one of its own follows, for as long as the sum of their
// FollowingCount (each at least 1) stays within the budget; the first
// followee that would pass it, and every older one, is left out, and the
// answer is then sampled (Suggestion.Sampled). At most SuggestionBudget+1
// of the user's follows are read, so an account following 20,000 popular
// users costs what the budget allows, whoever asks. On the large benchmark
// graph the largest such sum for any user is 29,090 (the largest following
// count 843), so every user there gets the exact ranking
// (docs/decisions/suggestions-budget.md).
const SuggestionBudget = 50_000

// followeeCost is what one of the people the user follows, whose Users
// row is aliased v, costs against the budget: its following count, at
// least 1, or 1 when it is deactivated (its follows do not count). Every
// dialect sums it the same way.
func followeeCost(v string) string {
	return "CASE WHEN " + active(v) + " AND " + v + ".FollowingCount > 1 THEN " + v + ".FollowingCount ELSE 1 END"
}

// candidateUsers reads the users of the ids idSet selects, each row
// userColumns and then the UserRenames count, from the same snapshot.
func candidateUsers(idSet string) string {
	return `SELECT ` + userColumns + `, (SELECT r.Renames FROM UserRenames AS r) FROM Users AS u WHERE u.Id IN (` + idSet + `)`
}

// jsonPages is a batch of page queries as one JSON parameter, for the
// dialects that read it as a table: per query, its position, the user,
// how many rows (one more than the page: the extra one tells that more
// follow), and the cursors it reads from and up to (see PageQuery.ends),
// each as its time in layout and its id.
func jsonPages(qs []PageQuery, layout string) string {
	batch := make([][7]any, len(qs))
	for i, q := range qs {
		from, to := q.ends()
		batch[i] = [7]any{i, q.User, q.size() + 1,
			from.At.UTC().Format(layout), min(from.ID, math.MaxInt32), to.At.UTC().Format(layout), min(to.ID, math.MaxInt32)}
	}
	b, _ := json.Marshal(batch)
	return string(b)
}

// jsonSuggestions is a batch of suggestion queries as one JSON parameter:
// per query, its position, the user, how many, and the budget (see
// SuggestionBudget). It is written with strconv, not encoding/json, whose
// reflection was 3% of the server's CPU for a suggestions request on
// PostgreSQL, for four integers a query.
func jsonSuggestions(qs []SuggestionQuery, budget int) string {
	b := make([]byte, 0, 2+len(qs)*32)
	b = append(b, '[')
	for i, q := range qs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, q.User, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(q.First), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(budget), 10)
		b = append(b, ']')
	}
	return string(append(b, ']'))
}

// listUsersLimit is UsersPage's statement where LIMIT is the way to say it.
var listUsersLimit = fillUsers(`SELECT ` + userColumns + ` FROM Users AS u WHERE u.Id BETWEEN ? AND ? AND ` + active("u") + ` ORDER BY u.Id {order} LIMIT ?`)
