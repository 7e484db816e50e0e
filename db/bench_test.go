package db

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// benchStore opens the database named by FOLLOWS_BENCH_DB, a graph made
// with `go run ./bench gen` and imported; benchmarks skip without it.
func benchStore(b *testing.B) *Store {
	path := os.Getenv("FOLLOWS_BENCH_DB")
	if path == "" {
		b.Skip("set FOLLOWS_BENCH_DB to an imported graph (see docs/benchmarks.md)")
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkFollowPages50(b *testing.B) { benchmarkFollowPages50(b, PageQuery{First: 10}) }

// The oldest 10 followers of 50 users cost what the newest 10 cost.
func BenchmarkFollowPages50Backward(b *testing.B) {
	benchmarkFollowPages50(b, PageQuery{Backward: true, Last: 10})
}

func benchmarkFollowPages50(b *testing.B, page PageQuery) {
	s := benchStore(b)
	ctx := context.Background()
	users, err := s.UsersPage(ctx, PageQuery{First: 50})
	if err != nil {
		b.Fatal(err)
	}
	qs := make([]PageQuery, len(users.Edges))
	for i, e := range users.Edges {
		qs[i] = page
		qs[i].User = e.User.ID
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.FollowPages(ctx, Followers, qs, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// typicalUsers are users following about the median number of people.
func typicalUsers(b *testing.B, s *Store, n int) []int64 {
	return benchIDs(b, s, `SELECT Id FROM Users WHERE FollowingCount BETWEEN 15 AND 25 ORDER BY Id LIMIT ?`, n)
}

// benchIDs are the ids a benchmark's query picks.
func benchIDs(b *testing.B, s *Store, query string, args ...any) []int64 {
	rows, err := s.db.Query(s.d.rebind(query), args...)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func mostFollowed(b *testing.B, s *Store) int64 {
	var id int64
	if err := s.db.QueryRow(s.d.rebind(`SELECT Id FROM Users ORDER BY FollowerCount DESC LIMIT 1`)).Scan(&id); err != nil {
		b.Fatal(err)
	}
	return id
}

func BenchmarkFollowersFirstPage(b *testing.B) {
	s := benchStore(b)
	for _, tc := range []struct {
		name string
		user int64
	}{{"typical", typicalUsers(b, s, 1)[0]}, {"most-followed", mostFollowed(b, s)}} {
		// The newest 20, and (-oldest) the oldest 20, read backward from
		// the list's other end.
		for suffix, q := range map[string]PageQuery{"": {First: 20}, "-oldest": {Backward: true, Last: 20}} {
			q.User = tc.user
			b.Run(tc.name+suffix, func(b *testing.B) { benchmarkFollowersPage(b, s, q) })
		}
	}
}

// A page deep down the most followed user's list costs what its first
// page costs.
func BenchmarkFollowersDeepPage(b *testing.B) {
	s, top, deep := deepCursor(b)
	benchmarkFollowersPage(b, s, PageQuery{User: top, First: 20, After: deep})
}

// So does the page before that cursor, paging backward.
func BenchmarkFollowersDeepPageBackward(b *testing.B) {
	s, top, deep := deepCursor(b)
	benchmarkFollowersPage(b, s, PageQuery{User: top, Backward: true, Last: 20, Before: deep})
}

// deepCursor is a cursor 25,000 deep in the most followed user's list (or
// at its end).
func deepCursor(b *testing.B) (*Store, int64, Cursor) {
	s := benchStore(b)
	top := mostFollowed(b, s)
	q := PageQuery{User: top, First: 100}
	for range 250 {
		p, err := s.FollowPages(context.Background(), Followers, []PageQuery{q}, nil)
		if err != nil || !p[0].HasNext {
			break
		}
		last := p[0].Edges[len(p[0].Edges)-1]
		q.After = Cursor{At: last.At, ID: last.User.ID}
	}
	return s, top, q.After
}

func benchmarkFollowersPage(b *testing.B, s *Store, q PageQuery) {
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.FollowPages(context.Background(), Followers, []PageQuery{q}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSuggestions(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	ids := typicalUsers(b, s, 50)
	i := 0
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := s.Suggestions(ctx, []SuggestionQuery{{User: ids[i%len(ids)], First: 10}}, nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// Eight goroutines on two cores, as the load test's eight clients: what
// the pool, the page caches and SQLite's locks cost under concurrency.
func BenchmarkSuggestionsParallel(b *testing.B) {
	s := benchStore(b)
	suggestInParallel(b, s, typicalUsers(b, s, 50), func(int) int { return 0 })
}

// suggestInParallel asks the suggestions of ids in turn from eight
// goroutines on two cores, each starting at the place start gives it out
// of len(ids).
func suggestInParallel(b *testing.B, s *Store, ids []int64, start func(n int) int) {
	ctx := context.Background()
	b.SetParallelism(4) // GOMAXPROCS is 2 here: 8 goroutines
	defer reportCPU(b)()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := start(len(ids))
		for pb.Next() {
			if _, err := s.Suggestions(ctx, []SuggestionQuery{{User: ids[i%len(ids)], First: 10}}, nil); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// reportCPU adds the process's CPU time per operation to a benchmark's
// results, which on a shared machine says more than the wall clock does;
// defer the function it returns.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkMutualPages(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	ids := typicalUsers(b, s, 50)
	i := 0
	for b.Loop() {
		if _, err := s.MutualPages(ctx, []PageQuery{{User: ids[i%len(ids)], First: 20}}, nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// Follow then unfollow, so the graph ends as it began.
func BenchmarkFollowUnfollow(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	me, other := typicalUsers(b, s, 1)[0], mostFollowed(b, s)
	s.Unfollow(ctx, me, other)
	for b.Loop() {
		if _, err := s.Follow(ctx, me, other); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Unfollow(ctx, me, other); err != nil {
			b.Fatal(err)
		}
	}
}
