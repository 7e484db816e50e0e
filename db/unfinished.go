package db

import "context"

// An import that did not finish must not be read as a graph: a file
// loaded the fast way may hold its users and no follows, and a copy or
// export of it would say it succeeded with the follows lost. So every
// opener — Open (the server, migrate, import, check-counts, copy's
// destination), OpenGraph (export, copy's source) and PlanAdoption
// (migrate -dry-run) — asks refuseUnfinished first, before anything
// else reads or changes the database, and gets the same error.
//
// Only a database kept in a file can be left half loaded
// (fileDatabase: a new SQLite file, see sqliteStartNewFile). On
// PostgreSQL and SQL Server the whole import, the set-aside indexes and
// triggers included, is one transaction: a process killed mid-import
// leaves the database as it was before, so there is no mark to look
// for.
func refuseUnfinished(ctx context.Context, d dialect, dsn string) error {
	if f, ok := d.(fileDatabase); ok {
		return f.refuseUnfinished(ctx, dsn)
	}
	return nil
}
