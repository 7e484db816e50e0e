package db

import (
	"context"
	"database/sql"
	"fmt"
	"os"
)

// unfinishedImport is what every opener says of a file whose import did
// not finish, the server's start-up included: what happened, that
// nothing will read the file (export and copy neither: what they would
// read may be a graph without its follows), and what to do.
const unfinishedImport = "an import into this file did not finish (the process ended while loading), so it may hold part of a graph and nothing reads it, export and copy included: delete the file and run the import again"

// refuseUnfinished refuses the SQLite file of dsn when it still carries
// the mark of an import that did not finish (see startNewFile): its
// follow table may be half written, or written and never checked. Every
// opener asks, through the one rule (see unfinished.go), before anything
// else reads or changes the file. The server's start-up check also looks
// for the mark (integrityCheck), but only after migrating.
func (d *sqliteDialect) refuseUnfinished(ctx context.Context, dsn string) error {
	path := d.filePath(dsn)
	if path == "" {
		return nil // in memory
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return nil // no file yet, or a new one: nothing was imported into it
	}
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("read the file's import mark: %w", err)
	}
	defer raw.Close()
	var version int64
	if err := raw.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return fmt.Errorf("read the file's import mark: %w", err)
	}
	if version == sqliteImportMark {
		return &CorruptError{Problems: []string{unfinishedImport}}
	}
	return nil
}
