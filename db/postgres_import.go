package db

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL's bulk import: rows go in with COPY (bulkCopier), the follow
// table's indexes, triggers and foreign keys set aside meanwhile.

// bulkTxSetup gives memory for rebuilding the set-aside indexes in one
// sort rather than in runs merged from disk, and for the grouped recount
// (recountUsersGrouped), whose hash tables hold a row per user: with the
// default 4 MB they spilled to disk at a million users and the recount
// had run 23 minutes unfinished (docs/decisions/ten-times-larger.md).
// SET LOCAL, the import's transaction alone: a session SET would outlive
// it on a pooled server connection (docs/pgbouncer.md).
//
// The lock comes first: whether the follow table is empty decides how
// the import loads it (truncateEmptyFollows, setAsideFollowKey), and a
// follow another connection wrote after that was read would be lost to
// the TRUNCATE. The import's DDL takes the same lock a moment later
// anyway.
func (*postgresDialect) bulkTxSetup() []string {
	return []string{`LOCK TABLE "Follows" IN ACCESS EXCLUSIVE MODE`,
		`SET LOCAL maintenance_work_mem = '256MB'`, `SET LOCAL work_mem = '256MB'`}
}
func (*postgresDialect) bulkSetup() []string { return nil }
func (*postgresDialect) bulkReset() []string { return nil }

func (*postgresDialect) afterImport() []string {
	return []string{
		// Imported users keep their ids, which the identity sequence
		// did not give: it moves past the highest, never back (a
		// deleted user's id is not given again).
		`SELECT setval(s.seq, GREATEST(m.top, COALESCE(pg_sequence_last_value(s.seq), 0)))
FROM (SELECT pg_get_serial_sequence('"Users"', 'Id')::regclass AS seq) AS s,
     (SELECT max("Id") AS top FROM "Users") AS m
WHERE m.top IS NOT NULL`,
		// The planner's statistics describe the tables as they are
		// now, before the first query rather than when autovacuum gets
		// round to it.
		`ANALYZE "Users", "Follows"`,
	}
}

// copies: every table goes in with COPY.
func (*postgresDialect) copies(string) bool { return true }

// postgresFollowsAside are the objects on Follows that a bulk import sets
// aside, with the statements that make them again: the secondary indexes
// (not the primary key's: setAsideFollowKey sets that aside only where
// the table is empty, and otherwise it finds a row there already), the
// triggers the server made (the counts'), and the foreign keys, whose
// checks, a lookup in Users for each end of each row, made loading the
// large graph's follows several times slower
// (docs/decisions/postgres-tuning.md). The import checks both
// ends of every row itself, and adding the keys back checks all rows
// again in one pass.
const postgresFollowsAside = `SELECT 'INDEX', i.indexname, i.indexdef FROM pg_indexes AS i
WHERE i.schemaname = current_schema() AND i.tablename = 'Follows'
  AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conrelid = '"Follows"'::regclass AND c.conname = i.indexname)
UNION ALL
SELECT 'TRIGGER', t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger AS t
WHERE t.tgrelid = '"Follows"'::regclass AND NOT t.tgisinternal
UNION ALL
SELECT 'CONSTRAINT', c.conname, 'ALTER TABLE "Follows" ADD CONSTRAINT ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid)
FROM pg_constraint AS c WHERE c.conrelid = '"Follows"'::regclass AND c.contype = 'f'`

// setAsideFollowIndexes drops the follow table's secondary
// indexes, count trigger and foreign keys (postgresFollowsAside), and
// returns what recreates them from their definitions in the catalogue:
// building an index once from all rows is far faster than keeping it
// through millions of inserts, and the import recounts what the trigger
// would have counted. DDL is transactional on PostgreSQL, so a refused
// import leaves them as they were.
func (*postgresDialect) setAsideFollowIndexes(ctx context.Context, r runner) (restore func() error, err error) {
	if err := truncateEmptyFollows(ctx, r); err != nil {
		return nil, err
	}
	return setAside(ctx, r, postgresFollowsAside, func(kind, name string) string {
		// Names from the catalogue, quoted; no value of a row.
		switch kind {
		case "TRIGGER":
			return "DROP TRIGGER " + pgx.Identifier{name}.Sanitize() + ` ON "Follows"`
		case "CONSTRAINT":
			return `ALTER TABLE "Follows" DROP CONSTRAINT ` + pgx.Identifier{name}.Sanitize()
		}
		return "DROP INDEX " + pgx.Identifier{name}.Sanitize()
	})
}

// postgresFollowsKey is the follow table's primary key, with the
// statement that makes it again.
const postgresFollowsKey = `SELECT 'CONSTRAINT', c.conname, 'ALTER TABLE "Follows" ADD CONSTRAINT ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid)
FROM pg_constraint AS c WHERE c.conrelid = '"Follows"'::regclass AND c.contype = 'p'`

// setAsideFollowKey drops the follow table's primary key when the table
// is empty and nothing refers to it (emptyFollows), for restore to build
// again from all rows once they are in: keeping it through the large
// graph's COPY made loading the follows take 6.4-7.3 s instead of
// 4.0-4.9 s, where building it after takes about 1 s
// (docs/decisions/postgres-queries.md).
func (*postgresDialect) setAsideFollowKey(ctx context.Context, r runner) (restore func() error, err error) {
	var empty bool
	if err := r.queryRow(ctx, emptyFollows, nil, &empty); err != nil || !empty {
		return nil, err
	}
	return setAside(ctx, r, postgresFollowsKey, func(_, name string) string {
		return `ALTER TABLE "Follows" DROP CONSTRAINT ` + pgx.Identifier{name}.Sanitize()
	})
}

// emptyFollows is whether the follow table has no rows and no other
// table's foreign key refers to it, which TRUNCATE would refuse.
const emptyFollows = `SELECT NOT EXISTS (SELECT 1 FROM "Follows")
  AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.confrelid = '"Follows"'::regclass AND c.contype = 'f')`

// truncateEmptyFollows truncates the follow table when it is empty, which
// loses nothing and gives it new files in the import's transaction: with
// wal_level = minimal PostgreSQL then writes the rows COPY loads, and the
// primary key kept through it, straight to the files rather than to the
// write-ahead log too, as a table created in the transaction would be
// (docs/decisions/postgres-queries.md). At any other wal_level it costs
// nothing.
func truncateEmptyFollows(ctx context.Context, r runner) error {
	var empty bool
	if err := r.queryRow(ctx, emptyFollows, nil, &empty); err != nil {
		return err
	}
	if !empty {
		return nil
	}
	_, err := r.tx.ExecContext(ctx, `TRUNCATE "Follows"`)
	return err
}

// setImportedCounts sets the counts the import counted as the follows
// went by (see followLoad.setCounts): one UPDATE from a JSON array,
// where recounting grouped the follow table twice, which took longer
// than loading it.
func (*postgresDialect) setImportedCounts() string {
	return `UPDATE Users AS u SET FollowerCount = (c.value ->> 1)::integer, FollowingCount = (c.value ->> 2)::integer,
  ` + bumpFollowingVersion + `
FROM jsonb_array_elements(?::jsonb) AS c WHERE u.Id = (c.value ->> 0)::integer`
}

// usersWithCounts: yes. An UPDATE of every imported user wrote each row
// again and left the first version dead, with a second entry in each
// index its columns did not keep HOT: Users and its primary key were twice
// their size after an import, until a VACUUM FULL, and every lookup of a
// user paid for it (docs/decisions/postgres-queries.md).
func (*postgresDialect) usersWithCounts() bool { return true }

// copyRows writes rows with COPY through pgx's own connection, which
// database/sql's conn wraps, inside the transaction open on it: several
// times faster than INSERTs. A row PostgreSQL refuses is found by the line
// its error's context names ("COPY Follows, line 12").
func (*postgresDialect) copyRows(ctx context.Context, b bulkRun, table string, cols []string, rows [][]any) error {
	return b.conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("COPY needs pgx's connection, not %T", dc)
		}
		_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			if m := copyLine.FindStringSubmatch(pe.Where); m != nil {
				line, _ := strconv.Atoi(m[1])
				return &failedRow{row: line - 1, err: err}
			}
		}
		return err
	})
}

var copyLine = regexp.MustCompile(`(?m)^COPY [^,]*, line (\d+)`)

// keepUserIDsAbove moves the Users identity past last, never back.
func (*postgresDialect) keepUserIDsAbove(ctx context.Context, r runner, last int64) error {
	if last == 0 {
		return nil
	}
	_, err := r.exec(ctx, `SELECT setval(s.seq, GREATEST(?, COALESCE(pg_sequence_last_value(s.seq), 0)))
FROM (SELECT pg_get_serial_sequence('"Users"', 'Id')::regclass AS seq) AS s`, last)
	return err
}

// lastUserID reads the highest id the Users identity has given
// out, deleted users' included; 0 before the first.
func (*postgresDialect) lastUserID(ctx context.Context, r runner) (int64, error) {
	var last int64
	err := r.queryRow(ctx, `SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence('"Users"', 'Id')), 0)`, nil, &last)
	return last, err
}
