package db

// EmbeddedFile says whether dsn names an embedded database, one kept in a
// file the server opens itself (SQLite), and if so the path of its file:
// empty for an in-memory one. Server databases are not embedded.
func EmbeddedFile(dsn string) (path string, embedded bool) {
	d, _, err := dialectFor(dsn)
	if err != nil {
		return "", false
	}
	f, ok := d.(fileDatabase)
	if !ok {
		return "", false
	}
	return f.filePath(dsn), true
}
