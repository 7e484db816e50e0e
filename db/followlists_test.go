package db

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
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
	t.Parallel()
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

// openLogged opens the store at path with opts, its log kept in the
// buffer returned.
func openLogged(t *testing.T, path string, opts ...Option) (*Store, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	s, err := Open(context.Background(), path, append(opts, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &logs
}

// sameAsReference fails the test unless every user's suggestions are the
// reference's.
func sameAsReference(t *testing.T, s *Store, ids []int64, after string) {
	t.Helper()
	for _, id := range ids {
		want := reference(t, s, SuggestionQuery{User: id, First: 10})
		got, err := s.Suggestions(context.Background(), []SuggestionQuery{{User: id, First: 10}})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[0], want) {
			t.Fatalf("after %s, suggestions for user %d:\n got %v\nwant %v", after, id, got[0], want)
		}
	}
}

// newestFollows has users follow, as an app writing Follows itself, the
// people they do not follow yet, newer than any follow: each becomes
// their newest, and so in their list.
func newestFollows(t *testing.T, s *Store, users []int64) {
	t.Helper()
	for i, f := range users {
		for j := range 3 {
			_, err := s.db.ExecContext(context.Background(), `INSERT OR IGNORE INTO Follows (FollowerId, FolloweeId, CreatedAt)
SELECT ?1, u.Id, '2030-01-01 00:00:00.0000000' FROM Users AS u
WHERE u.Id <> ?1 AND u.Id NOT IN (SELECT FolloweeId FROM Follows WHERE FollowerId = ?1)
ORDER BY (u.Id * 7919 + ?2) % 101 LIMIT 1`, f, i*3+j)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// An app that drops one of the triggers that keep FollowVersions (EF
// Core's rebuild of a table drops every trigger its model does not
// create), or replaces it with its own, turns the list cache off at the
// next start, with a warning in the log naming the trigger and how to
// restore it: suggestions then stay right through writes that move no
// version. Restored as the log says, the next start has the cache on.
func TestSuggestionListCacheNeedsItsTriggers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, change string }{
		{"dropped", `DROP TRIGGER "TR_Follows_Insert_Version"`},
		{"replaced", `DROP TRIGGER "TR_Follows_Insert_Version";
CREATE TRIGGER "TR_Follows_Insert_Version" AFTER INSERT ON "Follows" BEGIN SELECT 1; END`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "follows.db")
			app, _ := openLogged(t, path)
			ids := skewedGraph(t, app, 60)
			if _, err := app.db.ExecContext(ctx, c.change); err != nil {
				t.Fatal(err)
			}
			s, logs := openLogged(t, path)
			if !strings.Contains(logs.String(), "suggestion list cache off") || !strings.Contains(logs.String(), "TR_Follows_Insert_Version") {
				t.Errorf("the log does not say the cache is off for want of TR_Follows_Insert_Version:\n%s", logs)
			}
			if _, _, on := s.SuggestionListCounts(); on {
				t.Error("the store keeps lists without their trigger")
			}
			sameAsReference(t, s, ids, "the first reads")
			newestFollows(t, app, ids[:30])
			sameAsReference(t, s, ids, "an app's inserts with no trigger to bump versions")

			_, restore, err := sqliteFollowVersionFaults(ctx, app.db)
			if err != nil {
				t.Fatal(err)
			}
			// The text log quotes the value, its quotes escaped.
			if !strings.Contains(logs.String(), strings.ReplaceAll(restore[len(restore)-1], `"`, `\"`)) {
				t.Errorf("the log does not give the statement that restores the trigger, %s:\n%s", restore[len(restore)-1], logs)
			}
			if _, err := app.db.ExecContext(ctx, strings.Join(restore, "\n")); err != nil {
				t.Fatalf("the statements the log gives: %v", err)
			}
			restored, logs := openLogged(t, path)
			if _, _, on := restored.SuggestionListCounts(); !on || logs.Len() > 0 {
				t.Errorf("with the trigger restored, the cache is on = %v; the log says:\n%s", on, logs)
			}
		})
	}
}

// The operator's switch: off, suggestions read every list each time
// (one statement more than a call whose lists are held), hold none, and
// do not ask for the triggers; on, the default, a second call reads none.
func TestSuggestionCacheSwitch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "follows.db")
	s, _ := openLogged(t, path)
	ids := skewedGraph(t, s, 60)
	statements := func(s *Store) int64 {
		c, st := WithStats(ctx)
		if _, err := s.Suggestions(c, []SuggestionQuery{{User: ids[0], First: 10}}); err != nil {
			t.Fatal(err)
		}
		return st.Queries()
	}

	off, logs := openLogged(t, path, WithSuggestionCache(false))
	if !strings.Contains(logs.String(), "suggestion list cache off") {
		t.Errorf("switched off, the log does not say so:\n%s", logs)
	}
	if first, second := statements(off), statements(off); first != second {
		t.Errorf("switched off, a second call ran %d statements, the first %d", second, first)
	}
	if hits, misses, on := off.SuggestionListCounts(); on || hits+misses > 0 {
		t.Errorf("switched off, the store counts lists: %d hits, %d misses, on = %v", hits, misses, on)
	}
	sameAsReference(t, off, ids, "reads with the cache off")

	const deleteTrigger = `CREATE TRIGGER "TR_Follows_Delete_Version" AFTER DELETE ON "Follows" BEGIN
    INSERT INTO "FollowVersions" ("UserId", "Version") VALUES (OLD."FollowerId", 1)
    ON CONFLICT ("UserId") DO UPDATE SET "Version" = "Version" + 1;
END`
	if _, err := s.db.ExecContext(ctx, `DROP TRIGGER "TR_Follows_Delete_Version"`); err != nil {
		t.Fatal(err)
	}
	_, logs = openLogged(t, path, WithSuggestionCache(false))
	if strings.Contains(logs.String(), "TR_Follows") {
		t.Errorf("switched off, the store still checks the triggers:\n%s", logs)
	}
	if _, err := s.db.ExecContext(ctx, deleteTrigger); err != nil {
		t.Fatal(err)
	}

	on, logs := openLogged(t, path, WithSuggestionCache(true))
	if logs.Len() > 0 {
		t.Errorf("switched on, with its triggers, the log says:\n%s", logs)
	}
	if first, second := statements(on), statements(on); second != first-1 {
		t.Errorf("switched on, a second call ran %d statements after %d: its lists are not held", second, first)
	}
	if hits, misses, ok := on.SuggestionListCounts(); !ok || hits == 0 || misses == 0 {
		t.Errorf("switched on, %d hits and %d misses, on = %v", hits, misses, ok)
	}
}
