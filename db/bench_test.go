package db

import (
	"context"
	"os"
	"testing"
)

// benchStore opens the database named by FOLLOWS_BENCH_DB, a graph made
// with `go run ./bench gen` and imported; benchmarks skip without it.
func benchStore(b *testing.B) *Store {
	path := os.Getenv("FOLLOWS_BENCH_DB")
	if path == "" {
		b.Skip("set FOLLOWS_BENCH_DB to an imported graph (see BENCHMARKS.md)")
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkFollowPages50(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	users, err := s.ListUsers(ctx, 0, 50)
	if err != nil {
		b.Fatal(err)
	}
	qs := make([]PageQuery, len(users))
	for i, u := range users {
		qs[i] = PageQuery{User: u.ID, First: 10}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.FollowPages(ctx, Followers, qs); err != nil {
			b.Fatal(err)
		}
	}
}
