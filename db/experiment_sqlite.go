package db

import (
	"context"
	"fmt"
	"os"
)

// Temporary: the experiment of the page writer's decision record. With
// FOLLOWS_EXPERIMENT_SQLITE set, an import into a new file loads the held
// follows through SQLite, tuned for a new file, instead of writing pages.
// Its value is the PRAGMA statements to run first, ';'-separated.
func experimentSQLite() string { return os.Getenv("FOLLOWS_EXPERIMENT_SQLITE") }

func (l *followLoad) experimentViaSQLite(ctx context.Context, pragmas string) error {
	r := l.r
	if _, err := r.tx.ExecContext(ctx, pragmas); err != nil {
		return fmt.Errorf("experiment pragmas: %w", err)
	}
	restore, err := r.s.d.setAsideFollowIndexes(ctx, r)
	if err != nil {
		return err
	}
	sink := r.s.rowSink(ctx, r, "Follows", followImportColumns, func(v []any) string { return fmt.Sprintf("follow %v -> %v", v[0], v[1]) })
	m := l.pages
	for _, i := range m.pk {
		f := m.row(int(i))
		if err := sink.add(f.Pos, f.Follower, f.Followee, r.s.d.timeArg(f.At), f.Muted, !f.NotificationsOff); err != nil {
			return err
		}
	}
	if err := sink.flush(); err != nil {
		return err
	}
	return restore()
}
