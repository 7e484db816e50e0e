package db

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"follows/db/pgtest"
)

// referenceSuggestions is what a user's suggestions are, said the plain
// way: one SQLite statement that counts, excludes and ranks (the server's
// own statement until it learned to rank in Go, kept here as the
// definition the store must match), with the budget as a running sum over
// all the user's follows, newest first (see SuggestionBudget). ?1 is the
// user, ?2 how many, ?3 the budget: at math.MaxInt64 nothing is left out,
// and it is the exact ranking over every follow of every active followee.
// The second column says whether the budget left a followee out.
var referenceSuggestions = `WITH m AS (
  SELECT mine.FolloweeId, v.DeactivatedAt IS NULL AS Active,
    sum(CASE WHEN v.DeactivatedAt IS NULL AND v.FollowingCount > 1 THEN v.FollowingCount ELSE 1 END)
      OVER (ORDER BY mine.CreatedAt DESC, mine.FolloweeId DESC) AS Run
  FROM Follows AS mine JOIN Users AS v ON v.Id = mine.FolloweeId
  WHERE mine.FollowerId = ?1)
SELECT s.Via, (SELECT coalesce(max(Run) > ?3, 0) FROM m), ` + userColumns + `
FROM (SELECT f2.FolloweeId AS Id, COUNT(*) AS Via
      FROM m JOIN Follows AS f2 ON f2.FollowerId = m.FolloweeId
      WHERE m.Active AND m.Run <= ?3
        AND f2.FolloweeId <> ?1
        AND NOT EXISTS (SELECT 1 FROM Follows AS f3 WHERE f3.FollowerId = ?1 AND f3.FolloweeId = f2.FolloweeId)
        AND NOT EXISTS (SELECT 1 FROM Blocks AS b WHERE b.BlockerId = ?1 AND b.BlockedId = f2.FolloweeId)
        AND NOT EXISTS (SELECT 1 FROM Blocks AS b WHERE b.BlockerId = f2.FolloweeId AND b.BlockedId = ?1)
      GROUP BY f2.FolloweeId) AS s
JOIN Users AS u ON u.Id = s.Id AND u.DeactivatedAt IS NULL
ORDER BY s.Via DESC, u.Name ASC, s.Id ASC LIMIT ?2`

// skewedGraph fills s with a graph that exercises every rule of
// suggestions: popularity skewed so that via counts tie at every rank,
// names whose order is not id order (mixed case, punctuation), users who
// follow more than 25 people who follow more than 400 (the bounds before
// the budget), follow times so coarse that many tie, blocks both ways and
// deactivated users (both written as another program might: the follows
// between a blocked pair left in place, the counts unchanged). The same n
// gives the same graph on every dialect. It returns the users' ids.
func skewedGraph(t *testing.T, s *Store, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(15, 1))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
	taken := map[string]bool{}
	users := make([]UserRow, n)
	ids := make([]int64, n)
	for i := range users {
		name := ""
		for name == "" || taken[strings.ToLower(name)] {
			b := make([]byte, 1+rng.IntN(4))
			for j := range b {
				b[j] = letters[rng.IntN(len(letters))]
			}
			name = string(b)
		}
		taken[strings.ToLower(name)] = true
		ids[i] = int64(i + 1)
		users[i] = UserRow{ID: ids[i], Name: name}
	}
	// Popular accounts are spread over the ids, not the lowest.
	popular := rng.Perm(n)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var follows []FollowRow
	for i := range n {
		// Lognormal out-degree: median 20; the five most followed
		// users follow 450 (if there are that many others).
		deg := min(int(math.Exp(3+1.3*rng.NormFloat64())), n-1)
		if slices.Contains(popular[:5], i) {
			deg = min(450, n-1)
		}
		seen := map[int]bool{i: true}
		for len(seen) <= deg {
			j := popular[int(float64(n)*math.Pow(rng.Float64(), 2.5))]
			if seen[j] {
				continue
			}
			seen[j] = true
			follows = append(follows, FollowRow{Follower: ids[i], Followee: ids[j], At: at.Add(time.Duration(rng.IntN(300)) * time.Second)})
		}
	}
	if _, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil); err != nil {
		t.Fatal(err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	exec := func(q string, args ...any) {
		if _, err := tx.ExecContext(ctx, s.d.rebind(q), runner{s: s}.args(args)...); err != nil {
			t.Fatal(err)
		}
	}
	for range n * 2 {
		a, b := ids[rng.IntN(n)], ids[popular[int(float64(n)*math.Pow(rng.Float64(), 2))]]
		if a == b {
			continue
		}
		exec(`INSERT INTO Blocks (BlockerId, BlockedId) VALUES (?, ?) ON CONFLICT DO NOTHING`, a, b)
	}
	for range n / 20 {
		id := ids[popular[int(float64(n)*math.Pow(rng.Float64(), 2))]]
		exec(`UPDATE Users SET DeactivatedAt = ? WHERE Id = ?`, s.d.timeArg(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)), id)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// Suggestions give, for every user, batched or not, exactly what the
// reference statement gives: the same users, via counts and order, ties
// included, with blocks and deactivation respected. Within the default
// budget that is the exact ranking for every user of the graph, among
// them many who follow more than 25 people, some of whom follow more than
// 400 (the bounds before the budget, which cut their answers); with a
// budget of 60 many users' answers are sampled, and are the ranking of
// the newest follows that fit.
func TestSuggestionsMatchTheReference(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("SKIPPED under -short: comparing every user's suggestions with the reference statement is long; it runs without -short")
	}
	s := openTestStore(t)
	ids := skewedGraph(t, s, 500)
	var past int
	if err := s.db.QueryRow(`SELECT count(*) FROM Users AS u WHERE u.FollowingCount > 25 AND EXISTS (
  SELECT 1 FROM Follows AS f JOIN Users AS v ON v.Id = f.FolloweeId WHERE f.FollowerId = u.Id AND v.FollowingCount > 400)`).Scan(&past); err != nil || past < 50 {
		t.Fatalf("%d users follow more than 25 people, some of whom follow more than 400 (%v): want 50 or more", past, err)
	}
	all := references(t, s, ids, math.MaxInt64)
	for _, sgs := range all {
		for _, sg := range sgs {
			if sg.Sampled {
				t.Fatalf("the reference says a user's suggestions are sampled with no budget: %v", sg)
			}
		}
	}
	matchReferences(t, s, s, ids, all)

	s.suggestionBudget = 60
	all = references(t, s, ids, 60)
	var sampled, whole int
	for _, sgs := range all {
		if len(sgs) > 0 && sgs[0].Sampled {
			sampled++
		} else if len(sgs) > 0 {
			whole++
		}
	}
	if sampled < 100 || whole < 20 {
		t.Fatalf("with a budget of 60, %d users' suggestions are sampled and %d whole: too few of either to test the budget", sampled, whole)
	}
	matchReferences(t, s, s, ids, all)
}

// The same on PostgreSQL, which reads the same data (its own statement)
// and ranks it with the same Go: the same graph on both, its answers the
// reference's on SQLite.
func TestSuggestionsMatchTheReferenceOnPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("SKIPPED under -short: comparing every user's suggestions with the reference statement is long; it runs without -short")
	}
	if !pgtest.Available() {
		t.Skip(pgtest.SkipMessage("the PostgreSQL suggestions"))
	}
	lite, pg := openTestStore(t), openPostgres(t)
	ids := skewedGraph(t, lite, 500)
	if got := skewedGraph(t, pg, 500); !reflect.DeepEqual(got, ids) {
		t.Fatal("the two graphs' users differ")
	}
	matchReferences(t, lite, pg, ids, references(t, lite, ids, math.MaxInt64))
	lite.suggestionBudget, pg.suggestionBudget = 60, 60
	matchReferences(t, lite, pg, ids, references(t, lite, ids, 60))
}

// references are every user's suggestions, whole, by the reference
// statement on ref (SQLite) with the budget.
func references(t *testing.T, ref *Store, ids []int64, budget int64) map[int64][]Suggestion {
	t.Helper()
	all := map[int64][]Suggestion{}
	for _, id := range ids {
		all[id] = reference(t, ref, SuggestionQuery{User: id, First: -1}, budget)
	}
	return all
}

// matchReferences asks s for every user's suggestions, in batches of 1 to
// 9 users, for several firsts, and compares them with all, each cut to its
// first (the order is total: ids break the last ties). ref is the store
// all came from, whose users' names s's must be.
func matchReferences(t *testing.T, ref, s *Store, ids []int64, all map[int64][]Suggestion) {
	t.Helper()
	ctx := context.Background()
	var ties, cut int
	for _, first := range []int{1, 3, 10, 2000} {
		for start := 0; start < len(ids); {
			size := 1 + (start/7)%9 // batches of 1 to 9 users
			var qs []SuggestionQuery
			for _, id := range ids[start:min(start+size, len(ids))] {
				qs = append(qs, SuggestionQuery{User: id, First: first})
			}
			start += size
			got, err := s.Suggestions(ctx, qs, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range qs {
				want := all[q.User]
				if len(want) > first {
					want = want[:first]
				}
				if !sameSuggestions(got[i], want) {
					t.Fatalf("suggestions for user %d, first %d, budget %d:\n got %v\nwant %v", q.User, q.First, s.budget(), got[i], want)
				}
				if len(want) == first && first > 1 {
					cut++
					if want[first-1].Via == want[first-2].Via {
						ties++
					}
				}
			}
		}
	}
	// The graph must make the ranking work: lists cut at their first,
	// and many of them at a tie decided by name.
	t.Logf("%d lists cut at their first, %d of them within a tie", cut, ties)
	if cut < 300 || ties < 150 {
		t.Errorf("the graph gave %d cut lists, %d cut within a tie: too few to test the ranking", cut, ties)
	}
}

// sameSuggestions compares two answers by user id, name, via count and
// sampled: the users' other columns (their times) come in each dialect's
// precision.
func sameSuggestions(a, b []Suggestion) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].User.ID != b[i].User.ID || a[i].User.Name != b[i].User.Name || a[i].Via != b[i].Via || a[i].Sampled != b[i].Sampled {
			return false
		}
	}
	return true
}

func reference(t *testing.T, s *Store, q SuggestionQuery, budget int64) []Suggestion {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), referenceSuggestions, q.User, q.First, budget)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []Suggestion
	for rows.Next() {
		var sg Suggestion
		if err := rows.Scan(append([]any{&sg.Via, &sg.Sampled}, sg.User.scanDest()...)...); err != nil {
			t.Fatal(err)
		}
		out = append(out, sg)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A batch of suggestions costs a fixed number of statements, whoever asks
// and however many ask: on SQLite and PostgreSQL one that reads every
// user's data, one the followees' lists not held in memory (none when all
// are), one the users that can rank and, where deactivated users leave a
// list short, one for the rest; on SQL Server one.
func TestSuggestionsStatementsDoNotGrowWithUsers(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ids := skewedGraph(t, s, 300)
		for _, n := range []int{1, 50} {
			var qs []SuggestionQuery
			for _, id := range ids[:n] {
				qs = append(qs, SuggestionQuery{User: id, First: 10})
			}
			ctx, st := WithStats(context.Background())
			if _, err := s.Suggestions(ctx, qs, nil); err != nil {
				t.Fatal(err)
			}
			if got := st.Queries(); got < 1 || got > 4 {
				t.Errorf("suggestions for %d users ran %d statements, want 1 to 4", n, got)
			}
		}
	})
}

// A user whose followees' follows pass the budget gets the ranking of its
// newest followees that fit, each with every one of its follows, and
// every suggestion says it is sampled; a deactivated followee counts none
// of its follows and costs 1; within the budget nothing is sampled.
func TestSuggestionsPastTheBudget(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		// me follows, newest first: a (follows 10, 11), d (deactivated,
		// follows 15), b (10, 12, 13) and c (10, 14). Their costs: 2, 1,
		// 3 and 2, so running sums 2, 3, 6 and 8.
		const me, a, b, c, d = 1, 2, 3, 4, 5
		var users []UserRow
		for id := int64(1); id <= 15; id++ {
			users = append(users, UserRow{ID: id, Name: fmt.Sprintf("u%02d", id)})
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		tick := func() time.Time { at = at.Add(time.Second); return at }
		var follows []FollowRow
		for _, f := range [][2]int64{{c, 10}, {c, 14}, {b, 10}, {b, 12}, {b, 13}, {d, 15}, {a, 10}, {a, 11}, {me, c}, {me, b}, {me, d}, {me, a}} {
			follows = append(follows, FollowRow{Follower: f[0], Followee: f[1], At: tick()})
		}
		if _, err := s.Import(ctx, seqOf(users...), seqOf(follows...), 0, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.SetDeactivated(ctx, d, true); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			budget  int
			want    string
			sampled bool
		}{
			{SuggestionBudget, "u10:3 u11:1 u12:1 u13:1 u14:1", false},
			{8, "u10:3 u11:1 u12:1 u13:1 u14:1", false},
			{7, "u10:2 u11:1 u12:1 u13:1", true},
			{6, "u10:2 u11:1 u12:1 u13:1", true},
			{5, "u10:1 u11:1", true},
			{2, "u10:1 u11:1", true},
			{1, "", true},
		} {
			s.suggestionBudget = c.budget
			got, err := s.Suggestions(ctx, []SuggestionQuery{{User: me, First: 10}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var said []string
			for _, sg := range got[0] {
				said = append(said, fmt.Sprintf("%s:%d", sg.User.Name, sg.Via))
				if sg.Sampled != c.sampled {
					t.Errorf("budget %d: %s sampled %v, want %v", c.budget, sg.User.Name, sg.Sampled, c.sampled)
				}
			}
			if strings.Join(said, " ") != c.want {
				t.Errorf("budget %d: suggestions %q, want %q", c.budget, strings.Join(said, " "), c.want)
			}
		}
	})
}

// An id list reads as strconv reads each of its ids, long and signed ones
// too, and a list with anything else in it is refused.
func TestAppendIDs(t *testing.T) {
	for _, c := range []struct {
		list string
		want []int64
		bad  bool
	}{
		{"", nil, false},
		{"7", []int64{7}, false},
		{"1,22,333,0", []int64{1, 22, 333, 0}, false},
		{"999999999999999999,9223372036854775807,-5", []int64{999999999999999999, 9223372036854775807, -5}, false},
		{"1,,2", nil, true},
		{"1,x", nil, true},
		{"9223372036854775808", nil, true},
	} {
		got, err := appendIDs(nil, c.list)
		if (err != nil) != c.bad || !c.bad && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %v, %v", c.list, got, err)
		}
	}
}

// jsonSuggestions, written by hand, is the JSON encoding/json writes for
// the same batch.
func TestJSONSuggestions(t *testing.T) {
	for _, qs := range [][]SuggestionQuery{nil, {{User: 7, First: 10}}, {{User: 1, First: 0}, {User: 1 << 40, First: 100, Brief: true}}} {
		batch := [][4]any{}
		for i, q := range qs {
			batch = append(batch, [4]any{i, q.User, q.First, 50_000})
		}
		want, _ := json.Marshal(batch)
		if got := jsonSuggestions(qs, 50_000); got != string(want) {
			t.Errorf("jsonSuggestions(%v) = %s, want %s", qs, got, want)
		}
	}
}

// mergeRuns sorts ids made of sorted runs as slices.Sort would, whatever
// the number of runs (odd, even, one, none), their lengths (empty ones
// too) and the ids repeated within and across them.
func TestMergeRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var buf []int64
	for range 2000 {
		var ids []int64
		var ends []int
		for range r.IntN(40) {
			run := make([]int64, r.IntN(12))
			for i := range run {
				run[i] = r.Int64N(50)
			}
			slices.Sort(run)
			ids = append(ids, run...)
			ends = append(ends, len(ids))
		}
		want := slices.Sorted(slices.Values(ids))
		var got []int64
		got, buf = mergeRuns(slices.Clone(ids), slices.Clone(ends), buf)
		if !slices.Equal(got, want) {
			t.Fatalf("mergeRuns(%v, %v) = %v, want %v", ids, ends, got, want)
		}
	}
}

// BenchmarkCountRuns times what count does before it counts, for a
// viewer of the large graph (30 lists of 200 ids: the people a typical
// viewer follows follow more than the mean): merging the sorted lists
// against sorting all their ids.
func BenchmarkCountRuns(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var ids []int64
	var ends []int
	for range 30 {
		run := make([]int64, 200)
		for i := range run {
			run[i] = r.Int64N(100_000)
		}
		slices.Sort(run)
		ids = append(ids, run...)
		ends = append(ends, len(ids))
	}
	work := make([]int64, len(ids))
	b.Run("sort", func(b *testing.B) {
		for b.Loop() {
			copy(work, ids)
			slices.Sort(work)
		}
	})
	b.Run("merge", func(b *testing.B) {
		var buf []int64
		runs := make([]int, len(ends))
		for b.Loop() {
			copy(work, ids)
			copy(runs, ends)
			work, buf = mergeRuns(work, runs, buf)
		}
	})
}
