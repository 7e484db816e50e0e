package db

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
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
	t.Parallel()
	if testing.Short() {
		t.Skip("SKIPPED under -short: comparing every user's suggestions with the reference statement is long; it runs without -short")
	}
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
// and however many ask: on SQLite the followees, their lists where the
// store does not hold them (see followLists), the users that can rank and,
// where deactivated users leave a list short, the rest.
func TestSuggestionsStatementsDoNotGrowWithUsers(t *testing.T) {
	t.Parallel()
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
		if got := st.Queries(); got < 1 || got > 4 {
			t.Errorf("suggestions for %d users ran %d statements, want 1 to 4", n, got)
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

// The lists suggestions keep in memory (followLists) are read again
// whenever their user's follows change, whoever changes them: this
// server's own writes, another server's on the same file, an app writing
// the tables itself (inserts, deletes and an update of a follow's time),
// a block, a deleted user and a bulk import. After each, with every list
// already held, every user's suggestions are the reference's.
func TestSuggestionsFollowListsSeeEveryWriter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("SKIPPED under -short: comparing every user's suggestions with the reference after each kind of writer is long; it runs without -short")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "follows.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Open(ctx, path) // another server on the same file
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// 120 users: the reference reads each user's answer the slow way,
	// seven times over, and under the race detector 200 took minutes.
	ids := skewedGraph(t, s, 120)
	check := func(after string) {
		t.Helper()
		for _, id := range ids {
			want := reference(t, s, SuggestionQuery{User: id, First: 10})
			got, err := s.Suggestions(ctx, []SuggestionQuery{{User: id, First: 10}})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[0], want) {
				t.Fatalf("after %s, suggestions for user %d:\n got %v\nwant %v", after, id, got[0], want)
			}
		}
	}
	check("the first reads")
	if s.lists.held == 0 {
		t.Fatal("no list is held after the first reads")
	}
	// The most followed users: changes to who follows them move the most
	// via counts.
	var top []int64
	rows, err := s.db.QueryContext(ctx, `SELECT Id FROM Users ORDER BY FollowerCount DESC, Id LIMIT 20`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		top = append(top, id)
	}
	rows.Close()
	for _, step := range everyWriterSteps(t, s, other, top) {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		check(step.name)
	}
}

// writerStep is one way TestSuggestionsFollowListsSeeEveryWriter changes
// the follows of users whose lists are held.
type writerStep struct {
	name string
	do   func() error
}

// everyWriterSteps are the writers' steps, s this server and other
// another on the same file, each touching the follows of top, the most
// followed users.
func everyWriterSteps(t *testing.T, s, other *Store, top []int64) []writerStep {
	ctx := context.Background()
	// Each step changes lists that are held; for each, the users whose
	// newest follows include one of the top users are those it touches.
	followers := func(n int) []int64 { return followersOf(t, s, top, n) }
	refused := refusedWrite
	return []writerStep{
		{"this server's unfollows and follows", func() error {
			for i, f := range followers(10) {
				if _, err := s.Unfollow(ctx, f, top[i%len(top)]); refused(err) != nil {
					return err
				}
				if _, err := s.Follow(ctx, f, top[(i+7)%len(top)]); refused(err) != nil {
					return err
				}
			}
			return nil
		}},
		{"another server's follows", func() error {
			for i, f := range followers(10) {
				if _, err := other.Follow(ctx, f, top[(i+3)%len(top)]); refused(err) != nil {
					return err
				}
			}
			return nil
		}},
		{"an app's update of a follow's time", func() error {
			// On this graph every list holds all its user's follows, so
			// a time moved changes no answer; it must still bump the
			// follower's version, as a longer list would change.
			f := followers(1)[0]
			version := func() (v int64) {
				if err := other.db.QueryRowContext(ctx, `SELECT coalesce((SELECT Version FROM FollowVersions WHERE UserId = ?), 0)`, f).Scan(&v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			before := version()
			_, err := other.db.ExecContext(ctx, `UPDATE Follows SET CreatedAt = '2031-01-01 00:00:00.0000000'
WHERE rowid = (SELECT rowid FROM Follows WHERE FollowerId = ? ORDER BY CreatedAt LIMIT 1)`, f)
			if after := version(); after <= before {
				t.Errorf("a follow's time moved by an UPDATE left its follower's version at %d", after)
			}
			return err
		}},
		{"an app's own inserts and deletes", func() error {
			fs := followers(9)
			for i, f := range fs[:6] {
				if _, err := other.db.ExecContext(ctx, `INSERT OR IGNORE INTO Follows (FollowerId, FolloweeId, CreatedAt) VALUES (?, ?, '2030-01-01 00:00:00.0000000')`, f, top[(i+11)%len(top)]); err != nil {
					return err
				}
			}
			for _, f := range fs[6:9] {
				if _, err := other.db.ExecContext(ctx, `DELETE FROM Follows WHERE FollowerId = ? AND FolloweeId IN (SELECT value FROM json_each(?))`, f, idList(top)); err != nil {
					return err
				}
			}
			// The follows the graph left between blocked pairs, as the
			// import below refuses to load beside them.
			if _, err := other.db.ExecContext(ctx, `DELETE FROM Follows WHERE EXISTS (SELECT 1 FROM Blocks AS b
  WHERE b.BlockerId IN (Follows.FollowerId, Follows.FolloweeId) AND b.BlockedId IN (Follows.FollowerId, Follows.FolloweeId))`); err != nil {
				return err
			}
			return nil
		}},
		{"a block", func() error {
			for _, f := range followers(5) {
				if _, err := other.Block(ctx, top[0], f); refused(err) != nil {
					return err
				}
			}
			return nil
		}},
		{"a deleted user", func() error {
			_, err := other.DeleteUser(ctx, top[1])
			return err
		}},
		{"a bulk import", func() error {
			var rows []FollowRow
			at := time.Date(2032, 1, 1, 0, 0, 0, 0, time.UTC)
			for i, f := range followers(20) {
				if f == top[1] {
					continue
				}
				rows = append(rows, FollowRow{Follower: f, Followee: top[2+i%5], At: at})
			}
			// Only new follows between users who do not block each other:
			// the import refuses the others.
			var fresh []FollowRow
			for _, r := range rows {
				var taken bool
				err := other.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM Follows WHERE FollowerId = ?1 AND FolloweeId = ?2)
  OR EXISTS (SELECT 1 FROM Blocks WHERE BlockerId IN (?1, ?2) AND BlockedId IN (?1, ?2))`, r.Follower, r.Followee).Scan(&taken)
				if err != nil {
					return err
				}
				if !taken && r.Follower != r.Followee {
					fresh = append(fresh, r)
				}
			}
			if len(fresh) == 0 {
				return errors.New("no follow to import")
			}
			_, err := other.Import(ctx, seqOf[UserRow](), seqOf(fresh...), 0, nil)
			return err
		}},
	}
}

// followersOf are up to n users who follow one of top, in id order.
func followersOf(t *testing.T, s *Store, top []int64, n int) []int64 {
	var out []int64
	rows, err := s.db.QueryContext(context.Background(), `SELECT DISTINCT FollowerId FROM Follows WHERE FolloweeId IN (SELECT value FROM json_each(?)) ORDER BY FollowerId LIMIT ?`, idList(top), n)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// refusedWrite is nil for a write the graph refuses (its deactivated
// users and blocks refuse some follows): those are no change, and no
// error in the steps.
func refusedWrite(err error) error {
	for _, e := range []error{ErrDeactivated, ErrNotFound, ErrBlocked, ErrSelfFollow} {
		if errors.Is(err, e) {
			return nil
		}
	}
	return err
}

// followLists keeps under its bound, counting each list's entry as well
// as its ids, drops the least recently used list first, and never trades
// a list for an older one.
func TestFollowListsBound(t *testing.T) {
	l := newFollowLists(100)
	for id := range int64(50) {
		l.put(id, 1, []int64{id})
		if l.held > 100 {
			t.Fatalf("after %d lists of one id, %d held against a bound of 100", id+1, l.held)
		}
	}
	fit := 100 / listCost([]int64{0})
	if n := l.lru.Len(); n != fit {
		t.Errorf("%d one-id lists held under a bound of 100, want %d", n, fit)
	}
	// The last fit put are held; the oldest of them, read now, is the
	// most recently used, so the next put drops the one after it.
	oldest := int64(50 - fit)
	if _, ok := l.get(oldest, 1); !ok {
		t.Fatalf("list %d, among the last %d put, is not held", oldest, fit)
	}
	l.put(50, 1, []int64{50})
	if _, ok := l.get(oldest, 1); !ok {
		t.Errorf("list %d, just read, was dropped to make room", oldest)
	}
	if _, ok := l.get(oldest+1, 1); ok {
		t.Errorf("list %d, the least recently used, is still held", oldest+1)
	}
	l.put(7, 3, []int64{1, 2})
	l.put(7, 2, []int64{3})
	if ids, ok := l.get(7, 3); !ok || len(ids) != 2 {
		t.Errorf("list 7 at version 3: got %v, %v; an older put replaced it", ids, ok)
	}
	if _, ok := l.get(7, 2); ok {
		t.Error("list 7 is held at version 2 too")
	}
	l.put(1000, 1, make([]int64, 200))
	if _, ok := l.get(1000, 1); ok {
		t.Error("a list over the whole bound is held")
	}
	var none *followLists
	none.put(1, 1, nil)
	if _, ok := none.get(1, 1); ok {
		t.Error("a nil followLists holds a list")
	}
}
