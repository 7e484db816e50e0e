package db

import (
	"math/rand/v2"
	"testing"
)

// manyViewers are n users who follow someone, drawn at random (seeded):
// the side-by-side harness's many-viewers workload, where each request is
// another viewer's.
func manyViewers(b *testing.B, s *Store, n int) []int64 {
	ids := benchIDs(b, s, `SELECT Id FROM Users WHERE FollowingCount > 0 ORDER BY Id`)
	rng := rand.New(rand.NewPCG(4242, 1))
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids[:min(n, len(ids))]
}

// Suggestions for 3,000 different viewers in turn, by eight goroutines on
// two cores, as the harness's many-viewers workload asks them.
func BenchmarkSuggestionsManyViewers(b *testing.B) {
	s := benchStore(b)
	suggestInParallel(b, s, manyViewers(b, s, 3000), rand.IntN)
}
