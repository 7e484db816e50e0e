package db

import (
	"encoding/json"
	"math"
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
// serves as a seek.
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

// fillLists makes each list's statement from a dialect's template, which
// names the parts of a list as {table}, {e} (the entry's alias),
// {owner} and {other}, and has {also} where an entry's further condition
// goes (with its AND).
func fillLists(tmpl string) map[listKind]string {
	out := make(map[listKind]string, len(listShapes))
	for kind, l := range listShapes {
		also := ""
		if l.also != "" {
			also = " AND " + l.also
		}
		out[kind] = strings.NewReplacer("{table}", l.table, "{e}", l.alias, "{owner}", l.owner, "{other}", l.other, "{also}", also).Replace(tmpl)
	}
	return out
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

// The bound on one user's suggestions: only the user's newest
// SuggestionVia follows count as "via", and of each of those only its
// newest SuggestionsPerVia follows, so that one call reads at most
// SuggestionVia × SuggestionsPerVia (10,000) follows, whoever asks.
// Without it an account following 20,000 users cost 1.5 s of SQL a call.
// On the large benchmark graph (BENCHMARKS.md) the worst case, a user whose
// 25 newest follows each follow 3,000 others, costs about 40 ms of CPU. A
// typical user (15 to 25 follows) has all its follows counted, and the
// answers of 194 of 200 typical users are unchanged; the other six follow
// someone who follows more than 400, and see a via count or two lower by
// one, the ties below them reordered.
const (
	SuggestionVia     = 25
	SuggestionsPerVia = 400
)

// suggestionCandidates are, as rows (Id, Via), the people followed by the
// active people the user follows, with how many of those follow each:
// never the user, nor anyone it follows already, blocks or is blocked by.
// Only the newest follows count (see SuggestionVia). me is a one-row
// query whose Id is the user's; newest is the dialect's join of the newest
// n follows by a user, as rows of Follows aliased alias whose FolloweeId is
// the one followed (see sqliteNewestFollows).
func suggestionCandidates(me string, newest func(alias, owner string, n int) string) string {
	return `SELECT f2.FolloweeId AS Id, COUNT(*) AS Via
        FROM (` + me + `) AS me
        ` + newest("f1", "me.Id", SuggestionVia) + `
        JOIN ` + activeUser("v", "f1.FolloweeId") + `
        ` + newest("f2", "f1.FolloweeId", SuggestionsPerVia) + `
        WHERE f2.FolloweeId <> me.Id
          AND NOT EXISTS (SELECT 1 FROM Follows AS f3 WHERE f3.FollowerId = me.Id AND f3.FolloweeId = f2.FolloweeId)
          AND ` + notBlocked("me.Id", "f2.FolloweeId") + `
        GROUP BY f2.FolloweeId`
}

// jsonPages is a batch of page queries as one JSON parameter, for the
// dialects that read it as a table: per query, its position, the user,
// how many rows (First+1: the extra one tells that another page follows),
// the cursor's time in layout and its id. A first page's cursor is one
// past the end of every list.
func jsonPages(qs []PageQuery, layout string) string {
	batch := make([][5]any, len(qs))
	for i, q := range qs {
		c := q.After
		if c.IsZero() {
			c = endOfList
		}
		batch[i] = [5]any{i, q.User, q.First + 1, c.At.UTC().Format(layout), min(c.ID, math.MaxInt32)}
	}
	b, _ := json.Marshal(batch)
	return string(b)
}

// jsonSuggestions is a batch of suggestion queries as one JSON parameter:
// per query, its position, the user and how many.
func jsonSuggestions(qs []SuggestionQuery) string {
	batch := make([][3]any, len(qs))
	for i, q := range qs {
		batch[i] = [3]any{i, q.User, q.First}
	}
	b, _ := json.Marshal(batch)
	return string(b)
}
