package db

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// referenceSuggestions is what a user's suggestions are, said the plain
// way: one SQLite statement that counts, excludes and ranks (the server's
// own statement until it learned to rank in Go, kept here as the
// definition the store must match), its newest follows taken as the
// other dialects' LIMITs take them. ?1 is the user, ?2 how many.
var referenceSuggestions = fmt.Sprintf(`SELECT s.Via, `+userColumns+`
FROM (SELECT f2.FolloweeId AS Id, COUNT(*) AS Via
      FROM Follows AS f1
      JOIN Users AS v ON v.Id = f1.FolloweeId AND v.DeactivatedAt IS NULL
      JOIN Follows AS f2 ON f2.FollowerId = f1.FolloweeId
      WHERE f1.FollowerId = ?1
        AND f1.FolloweeId IN (SELECT n.FolloweeId FROM Follows AS n WHERE n.FollowerId = ?1
                              ORDER BY n.CreatedAt DESC, n.FolloweeId DESC LIMIT %d)
        AND f2.FolloweeId IN (SELECT n.FolloweeId FROM Follows AS n WHERE n.FollowerId = f1.FolloweeId
                              ORDER BY n.CreatedAt DESC, n.FolloweeId DESC LIMIT %d)
        AND f2.FolloweeId <> ?1
        AND NOT EXISTS (SELECT 1 FROM Follows AS f3 WHERE f3.FollowerId = ?1 AND f3.FolloweeId = f2.FolloweeId)
        AND NOT EXISTS (SELECT 1 FROM Blocks AS b WHERE b.BlockerId = ?1 AND b.BlockedId = f2.FolloweeId)
        AND NOT EXISTS (SELECT 1 FROM Blocks AS b WHERE b.BlockerId = f2.FolloweeId AND b.BlockedId = ?1)
      GROUP BY f2.FolloweeId) AS s
JOIN Users AS u ON u.Id = s.Id AND u.DeactivatedAt IS NULL
ORDER BY s.Via DESC, u.Name ASC, s.Id ASC LIMIT ?2`, SuggestionVia, SuggestionsPerVia)

// skewedGraph fills s with a graph that exercises every rule of
// suggestions: popularity skewed so that via counts tie at every rank,
// names whose order is not id order (mixed case, punctuation), users who
// follow more than SuggestionVia and SuggestionsPerVia people, follow times
// so coarse that the newest-follows bounds fall inside ties, blocks both
// ways and deactivated users (both written as another program might: the
// follows between a blocked pair left in place, the counts unchanged). It returns the users' ids.
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
		// Lognormal out-degree: median 20, a few over 400.
		deg := min(int(math.Exp(3+1.3*rng.NormFloat64())), n-1)
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
	for range n * 2 {
		a, b := ids[rng.IntN(n)], ids[popular[int(float64(n)*math.Pow(rng.Float64(), 2))]]
		if a == b {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO Blocks (BlockerId, BlockedId) VALUES (?, ?)`, a, b); err != nil {
			t.Fatal(err)
		}
	}
	for range n / 20 {
		id := ids[popular[int(float64(n)*math.Pow(rng.Float64(), 2))]]
		if _, err := tx.ExecContext(ctx, `UPDATE Users SET DeactivatedAt = '2026-02-01 00:00:00.0000000' WHERE Id = ?`, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// Suggestions give, for every user, batched or not, exactly what the
// reference statement gives: the same users, via counts and order, ties
// included, with blocks and deactivation respected.
func TestSuggestionsMatchTheReference(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	ids := skewedGraph(t, s, 400)
	// The order is total (ids break the last ties), so each user's
	// reference, read whole once, cut to first is its answer for first.
	all := map[int64][]Suggestion{}
	for _, id := range ids {
		all[id] = reference(t, s, SuggestionQuery{User: id, First: -1})
	}
	var ties, cut int
	for _, first := range []int{1, 3, 10, 2000} {
		for start := 0; start < len(ids); {
			size := 1 + (start/7)%9 // batches of 1 to 9 users
			var qs []SuggestionQuery
			for _, id := range ids[start:min(start+size, len(ids))] {
				qs = append(qs, SuggestionQuery{User: id, First: first})
			}
			start += size
			got, err := s.Suggestions(ctx, qs)
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range qs {
				want := all[q.User]
				if len(want) > first {
					want = want[:first]
				}
				if !reflect.DeepEqual(got[i], want) {
					t.Fatalf("suggestions for user %d, first %d:\n got %v\nwant %v", q.User, q.First, got[i], want)
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
	if cut < 400 || ties < 200 {
		t.Errorf("the graph gave %d cut lists, %d cut within a tie: too few to test the ranking", cut, ties)
	}
}

func reference(t *testing.T, s *Store, q SuggestionQuery) []Suggestion {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), referenceSuggestions, q.User, q.First)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []Suggestion
	for rows.Next() {
		var sg Suggestion
		if err := rows.Scan(append([]any{&sg.Via}, sg.User.scanDest()...)...); err != nil {
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
// and however many ask.
func TestSuggestionsStatementsDoNotGrowWithUsers(t *testing.T) {
	s := openTestStore(t)
	ids := skewedGraph(t, s, 300)
	for _, n := range []int{1, 50} {
		var qs []SuggestionQuery
		for _, id := range ids[:n] {
			qs = append(qs, SuggestionQuery{User: id, First: 10})
		}
		ctx, st := WithStats(context.Background())
		if _, err := s.Suggestions(ctx, qs); err != nil {
			t.Fatal(err)
		}
		if got := st.Queries(); got < 1 || got > 3 {
			t.Errorf("suggestions for %d users ran %d statements, want 1 to 3", n, got)
		}
	}
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
