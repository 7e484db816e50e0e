package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pressly/goose/v3"

	"follows/db/adopt"
)

// A graph is read out for export or copy without changing its database:
// OpenGraph connects read-only (a SQLite file with mode=ro and
// query_only, PostgreSQL in a READ ONLY transaction) and neither adopts nor
// migrates. It reads what the database has, whatever its shape: the
// server's own at any migration, or an EF Core database not adopted yet
// (Follows as an explicit entity, or EF's UserUser join table); a column
// an older shape lacks is exported as its default (no stamp, active, no
// external id, not muted, notifications on), and UserUser's rows, which
// have no time, as followed when the read began. Everything is read in
// one transaction, a snapshot where the dialect gives one (SQLite,
// PostgreSQL's REPEATABLE READ); SQL Server's is READ COMMITTED, since
// go-mssqldb has no read-only transaction and SNAPSHOT needs the
// database's consent: export it while it takes no writes.

// GraphReader reads one graph out of a database, in one transaction;
// Close ends it.
type GraphReader struct {
	r       runner
	cols    map[string]map[string]bool
	closeDB func() error
	// Shape is the database's shape (see adopt.go): ShapeOurs, or an EF
	// Core shape read as it is.
	Shape string
	// LastUserID is the highest user id the database ever gave out.
	LastUserID int64
	// readAt is when the read began: the time of UserUser's follows.
	readAt time.Time
}

// OpenGraph opens the database named by dsn read-only, to read its graph
// (see GraphReader), changing nothing in it.
func OpenGraph(ctx context.Context, dsn string) (*GraphReader, error) {
	d, connStr, err := dialectFor(dsn)
	if err != nil {
		return nil, err
	}
	if f, ok := d.(fileDatabase); ok {
		if _, err := os.Stat(f.filePath(dsn)); err != nil {
			return nil, fmt.Errorf("%s: %w", location(d, dsn), err)
		}
		connStr = f.readOnly(dsn)
	}
	if err := refuseUnfinished(ctx, d, dsn); err != nil {
		return nil, fmt.Errorf("%s: %w", location(d, dsn), err)
	}
	sqlDB, err := sql.Open(d.driver(), connStr)
	if err != nil {
		return nil, err
	}
	s := &Store{db: sqlDB, d: d, q: newStatements(d)}
	g, err := s.readGraph(ctx)
	if err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("%s: %w", location(d, dsn), err)
	}
	closeTx := g.closeDB
	g.closeDB = func() error {
		closeTx()
		return sqlDB.Close()
	}
	return g, nil
}

// ReadGraph reads the store's own graph (see GraphReader).
func (s *Store) ReadGraph(ctx context.Context) (*GraphReader, error) { return s.readGraph(ctx) }

func (s *Store) readGraph(ctx context.Context) (_ *GraphReader, err error) {
	a := adoptionOf(s.d)
	if a == nil {
		return nil, fmt.Errorf("export: not built for %s", s.d.name())
	}
	tx, err := s.db.BeginTx(ctx, s.d.exportTx())
	if err != nil {
		return nil, fmt.Errorf("export: begin: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	g := &GraphReader{r: runner{s: s, tx: tx}, cols: map[string]map[string]bool{}, closeDB: tx.Rollback, readAt: nowUTC().Truncate(time.Microsecond)}
	// The columns of each table there is, as adoption reads them.
	tables := map[string]bool{}
	for _, table := range []string{"Users", "Follows", "UserUser", "Blocks", goose.DefaultTablename} {
		defs, err := a.Columns(ctx, adoptionTx{tx, s.d}, table)
		if err != nil {
			return nil, fmt.Errorf("export: read the catalogue: %w", err)
		}
		if len(defs) == 0 {
			continue
		}
		tables[table], g.cols[table] = true, map[string]bool{}
		for _, c := range defs {
			g.cols[table][c.Name] = true
		}
	}
	if !tables["Users"] {
		return nil, errors.New("export: no Users table: not a database of this model")
	}
	if g.Shape, err = adopt.ShapeOf(tables); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if g.Shape == ShapeOurs {
		if err := g.checkVersion(ctx); err != nil {
			return nil, err
		}
	}
	if g.LastUserID, err = s.d.lastUserID(ctx, g.r); err != nil {
		return nil, fmt.Errorf("export: read the last user id: %w", err)
	}
	return g, nil
}

// checkVersion refuses a database migrated past what this build knows:
// its tables may hold what this build would not export.
func (g *GraphReader) checkVersion(ctx context.Context) error {
	known, err := latestMigration(g.r.s.d.name())
	if err != nil {
		return err
	}
	var at int64
	if err := g.r.queryRow(ctx, `SELECT COALESCE(MAX(version_id), 0) FROM `+goose.DefaultTablename, nil, &at); err != nil {
		return fmt.Errorf("export: read the migration version: %w", err)
	}
	if at > known {
		return fmt.Errorf("export: the database is at migration %d, past this build's %d: export it with the build that migrated it", at, known)
	}
	return nil
}

// latestMigration is the highest migration number this build has for a
// dialect.
func latestMigration(dialect string) (int64, error) {
	entries, err := fs.ReadDir(migrations, "migrations/"+dialect)
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		if v, err := strconv.ParseInt(num, 10, 64); err == nil && v > latest {
			latest = v
		}
	}
	return latest, nil
}

// Close ends the read.
func (g *GraphReader) Close() error { return g.closeDB() }

// Graph is the whole graph, each table's rows in key order; read its
// sequences one after another, not side by side (one transaction).
func (g *GraphReader) Graph(ctx context.Context) Graph {
	return Graph{Users: g.Users(ctx), Blocks: g.Blocks(ctx), Follows: g.Follows(ctx), LastUserID: g.LastUserID}
}

// present is the columns of want that table has, and where each of
// them goes among them (-1 when absent).
func (g *GraphReader) present(table string, want []string) (cols []string, at []int) {
	for _, c := range want {
		if g.cols[table][c] {
			at = append(at, len(cols))
			cols = append(cols, c)
		} else {
			at = append(at, -1)
		}
	}
	return cols, at
}

// Users yields every user, by id, with its stamp, deactivation and
// external id.
func (g *GraphReader) Users(ctx context.Context) iter.Seq2[UserRow, error] {
	cols, at := g.present("Users", userImportColumns)
	return readRows(ctx, g.r, "read users", `SELECT `+strings.Join(cols, ", ")+` FROM Users ORDER BY Id`, func(rows *rows) (u UserRow, err error) {
		var stamp, external sql.NullString
		var deactivated any
		dest := []any{&u.ID, &u.Name, &stamp, &deactivated, &external}
		if err := rows.Scan(pick(dest, at)...); err != nil {
			return u, err
		}
		u.SecurityStamp, u.ExternalID = stamp.String, external.String
		if deactivated != nil {
			u.DeactivatedAt, err = g.r.s.d.scanTime(deactivated)
		}
		return u, err
	})
}

// Follows yields every follow, by follower and followee, with its
// settings.
func (g *GraphReader) Follows(ctx context.Context) iter.Seq2[FollowRow, error] {
	if g.Shape == ShapeConvention {
		// EF's names, quoted: PostgreSQL would fold them.
		return readRows(ctx, g.r, "read UserUser", `SELECT "FollowersId", "FollowingId" FROM "UserUser" ORDER BY "FollowersId", "FollowingId"`, func(rows *rows) (f FollowRow, err error) {
			f.At = g.readAt
			return f, rows.Scan(&f.Follower, &f.Followee)
		})
	}
	cols, at := g.present("Follows", followImportColumns)
	return readRows(ctx, g.r, "read follows", `SELECT `+strings.Join(cols, ", ")+` FROM Follows ORDER BY FollowerId, FolloweeId`, func(rows *rows) (f FollowRow, err error) {
		var created any
		notifications := true
		dest := []any{&f.Follower, &f.Followee, &created, &f.Muted, &notifications}
		if err := rows.Scan(pick(dest, at)...); err != nil {
			return f, err
		}
		f.NotificationsOff = !notifications
		f.At, err = g.r.s.d.scanTime(created)
		return f, err
	})
}

// Blocks yields every block, by blocker and blocked; none where the
// database has no Blocks table.
func (g *GraphReader) Blocks(ctx context.Context) iter.Seq2[BlockRow, error] {
	if g.cols["Blocks"] == nil {
		return func(func(BlockRow, error) bool) {}
	}
	return readRows(ctx, g.r, "read blocks", `SELECT BlockerId, BlockedId, CreatedAt FROM Blocks ORDER BY BlockerId, BlockedId`, func(rows *rows) (b BlockRow, err error) {
		var created any
		if err := rows.Scan(&b.Blocker, &b.Blocked, &created); err != nil {
			return b, err
		}
		b.At, err = g.r.s.d.scanTime(created)
		return b, err
	})
}

// pick is the destinations of the columns present, in their order.
func pick(dest []any, at []int) []any {
	var out []any
	for i, a := range at {
		if a >= 0 {
			out = append(out, dest[i])
		}
	}
	return out
}

// readRows yields the rows of a query as scan reads them, or the error,
// wrapped with what, that ends them.
func readRows[T any](ctx context.Context, r runner, what, query string, scan func(*rows) (T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		rows, err := r.query(ctx, query)
		if err != nil {
			yield(zero, fmt.Errorf("%s: %w", what, err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				yield(zero, fmt.Errorf("%s: %w", what, err))
				return
			}
			if !yield(v, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(zero, fmt.Errorf("%s: %w", what, err))
		}
	}
}
