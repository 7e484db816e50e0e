package db

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A SQLite database is a file the server opens itself (fileDatabase),
// checked for damage as it opens (integrityChecker).

func (*sqliteDialect) location(dsn string) string { return "SQLite database " + sqlitePath(dsn) }

func (*sqliteDialect) createFile(dsn string) error { return createSQLiteFile(dsn) }

// adoptionConn opens a SQLite file for adopting it: its write lock
// taken when the transaction begins, so that instances started together
// adopt one after another, and foreign keys not enforced.
func (*sqliteDialect) adoptionConn(dsn string) string {
	params := "_pragma=busy_timeout(10000)&_pragma=foreign_keys(0)"
	if _, q, _ := strings.Cut(dsn, "?"); strings.Contains(q, "mode=ro") {
		params += "&mode=ro"
	} else {
		params += "&_txlock=immediate"
	}
	return "file:" + sqlitePath(dsn) + "?" + params
}

// readOnly has none of the server's settings: WAL would rewrite the
// header.
func (*sqliteDialect) readOnly(dsn string) string {
	return "file:" + sqlitePath(dsn) + "?mode=ro&_pragma=query_only(1)&_pragma=busy_timeout(10000)"
}

// filePath is the path of dsn's file: empty for an in-memory database.
func (*sqliteDialect) filePath(dsn string) string {
	path, query, _ := strings.Cut(dsn, "?")
	if rest, ok := strings.CutPrefix(path, "file:"); ok {
		path = strings.TrimPrefix(rest, "//")
		if q, err := url.ParseQuery(query); err == nil && q.Get("mode") == "memory" {
			return ""
		}
	}
	if path == ":memory:" {
		return ""
	}
	return path
}

// busy: instances starting together on one new file can find it busy
// (see checkIntegrity).
func (*sqliteDialect) busy(err error) bool { return sqliteBusy(err) }

// integrityCheck refuses a file an import did not finish loading (see
// sqliteStartNewFile), whatever quick_check finds; that comes first, as
// quick_check may run out of time.
func (*sqliteDialect) integrityCheck() string {
	return `SELECT '` + strings.ReplaceAll(unfinishedImport, "'", "''") + `'
FROM pragma_user_version WHERE user_version = ` + strconv.Itoa(sqliteImportMark) + `
UNION ALL SELECT * FROM pragma_quick_check`
}

// sqlitePath is the file a SQLite dsn (a path, or a file: URI) names.
func sqlitePath(dsn string) string {
	path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	return path
}

// createSQLiteFile makes a SQLite dsn's file, if there is none yet,
// readable and writable by its owner only: SQLite would make it with the
// umask's mode, world-readable as a rule, and the graph is nobody else's to
// read. SQLite gives the -wal and -shm files the database file's mode. An
// existing file is left as it is; an in-memory or read-only dsn has no
// file to make.
func createSQLiteFile(dsn string) error {
	path := sqlitePath(dsn)
	_, query, _ := strings.Cut(dsn, "?")
	if path == "" || path == ":memory:" || strings.Contains(query, "mode=memory") || strings.Contains(query, "mode=ro") {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the folder %s does not exist", filepath.Dir(path))
	case err != nil:
		return fmt.Errorf("create the file: %w", err)
	}
	return f.Close()
}
