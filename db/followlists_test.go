package db

import (
	"context"
	"path/filepath"
	"testing"
)

// followVersion is user id's version in FollowVersions, 0 where it has no
// row.
func followVersion(t *testing.T, s *Store, id int64) int64 {
	t.Helper()
	var v int64
	err := s.db.QueryRowContext(context.Background(),
		`SELECT coalesce((SELECT Version FROM FollowVersions WHERE UserId = ?), 0)`, id).Scan(&v)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// An UPDATE of Follows bumps the follower's version only where it changes
// what a list holds (who follows whom, and when): muting a follow or
// turning its notifications off, through the store or by an app's own
// UPDATE, leaves the lists suggestions hold valid.
func TestFollowVersionsOnlyForListColumns(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "follows.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.LoadSample(ctx); err != nil {
		t.Fatal(err)
	}
	alice, bob, carol := int64(1), int64(2), int64(3)
	yes, no := true, false
	for _, step := range []struct {
		name string
		do   func() error
		bump bool
	}{
		{"the store mutes a follow", func() error {
			_, err := s.UpdateFollow(ctx, alice, bob, &yes, nil)
			return err
		}, false},
		{"the store turns a follow's notifications off", func() error {
			_, err := s.UpdateFollow(ctx, alice, bob, nil, &no)
			return err
		}, false},
		{"an app unmutes a follow", func() error {
			_, err := s.db.ExecContext(ctx, `UPDATE Follows SET Muted = 0, NotificationsEnabled = 1 WHERE FollowerId = ?`, alice)
			return err
		}, false},
		{"an app moves a follow's time", func() error {
			_, err := s.db.ExecContext(ctx, `UPDATE Follows SET CreatedAt = '2031-01-01 00:00:00.0000000' WHERE FollowerId = ? AND FolloweeId = ?`, alice, bob)
			return err
		}, true},
		{"an app changes whom a follow is of", func() error {
			_, err := s.db.ExecContext(ctx, `UPDATE Follows SET FolloweeId = ? WHERE FollowerId = ? AND FolloweeId = ?`, 4, alice, carol)
			return err
		}, true},
	} {
		before := followVersion(t, s, alice)
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		after := followVersion(t, s, alice)
		if step.bump && after <= before {
			t.Errorf("%s: alice's version stayed at %d", step.name, after)
		}
		if !step.bump && after != before {
			t.Errorf("%s: alice's version moved from %d to %d, though her list is the same", step.name, before, after)
		}
	}
}
