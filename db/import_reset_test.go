package db

import (
	"context"
	"database/sql"
	"strings"
	"testing"
)

// resetFails is SQLite with a bulk import whose connection cannot be put
// back: the database refuses its reset (a statement on a table there is
// not), standing for `PRAGMA foreign_keys = ON` failing, which SQLite
// gives no way to make fail on demand.
type resetFails struct{ *sqliteDialect }

func (resetFails) bulkReset() []string {
	return []string{`PRAGMA cache_size = ` + sqliteCacheSize, `DELETE FROM NoSuchTable`}
}

// A bulk import turns foreign key enforcement off on its connection; a
// connection whose reset failed must not go back to the pool, where the
// next request would write without it.
func TestImportDiscardsAConnectionItCannotReset(t *testing.T) {
	s := openTestStore(t)
	s.d = resetFails{&sqliteDialect{}}
	ctx := context.Background()
	_, err := s.Import(ctx, seqOf(UserRow{ID: 1, Name: "ann"}, UserRow{ID: 2, Name: "ben"}),
		seqOf(FollowRow{Follower: 1, Followee: 2}), 0, nil)
	if err == nil || !strings.Contains(err.Error(), "NoSuchTable") {
		t.Errorf("import: %v, want the failed reset", err)
	}
	// Every connection the pool holds, the import's among them if it
	// went back, taken at once.
	var conns []*sql.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range sqlitePoolSize {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		var on int
		if err := conn.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&on); err != nil {
			t.Fatal(err)
		}
		if on != 1 {
			t.Errorf("pooled connection %d has foreign_keys = %d after the import", i, on)
		}
	}
}
