package db

import (
	"context"
	"fmt"
)

// SampleUsers and SampleFollows are the small graph that -demo loads and
// the tests check: follows are made in this order, so the last is newest.
var (
	SampleUsers   = []string{"alice", "bob", "carol", "dave"}
	SampleFollows = [][2]string{
		{"alice", "bob"},
		{"alice", "carol"},
		{"bob", "alice"},
		{"carol", "dave"},
		{"bob", "dave"},
	}
)

// LoadSample adds the sample graph to an empty database and reports whether
// it did; a database that has any active user is left as it is.
func (s *Store) LoadSample(ctx context.Context) (bool, error) {
	n, err := s.CountUsers(ctx)
	if err != nil || n > 0 {
		return false, err
	}
	ids := map[string]int64{}
	for _, name := range SampleUsers {
		u, err := s.CreateUser(ctx, name)
		if err != nil {
			return false, fmt.Errorf("load sample graph: %w", err)
		}
		ids[name] = u.ID
	}
	for _, f := range SampleFollows {
		if _, err := s.Follow(ctx, ids[f[0]], ids[f[1]]); err != nil {
			return false, fmt.Errorf("load sample graph: %w", err)
		}
	}
	return true, nil
}
