package graphcsv_test

import (
	"errors"
	"iter"
	"os"
	"path/filepath"
	"testing"

	"follows/db"
	"follows/graphcsv"
)

// An export that fails partway (here its follows cannot be read after
// the first) leaves nothing at its destination, not a folder of some
// files, and nothing beside it: the folder appears, renamed into place,
// only when every file is written.
func TestAnExportCutShortLeavesNoFolder(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "graph")
	cut := errors.New("the database went away")
	g := db.Graph{
		Users:  rows(db.UserRow{ID: 1, Name: "alice"}, db.UserRow{ID: 2, Name: "bob"}),
		Blocks: rows[db.BlockRow](),
		Follows: func(yield func(db.FollowRow, error) bool) {
			if yield(db.FollowRow{Follower: 1, Followee: 2}, nil) {
				yield(db.FollowRow{}, cut)
			}
		},
		LastUserID: 2,
	}
	if _, err := graphcsv.WriteDir(dest, g); !errors.Is(err, cut) {
		t.Errorf("an export whose follows failed: %v, want the failure", err)
	}
	if entries, err := os.ReadDir(parent); err != nil || len(entries) != 0 {
		t.Errorf("an export cut short left %v (%v); want nothing", entries, err)
	}
}

func rows[T any](vals ...T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, v := range vals {
			if !yield(v, nil) {
				return
			}
		}
	}
}
