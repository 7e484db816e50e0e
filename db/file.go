package db

import (
	"net/url"
	"strings"
)

// EmbeddedFile says whether dsn names an embedded (SQLite) database, and
// if so the path of its file: empty for an in-memory one. Server
// databases are not embedded.
func EmbeddedFile(dsn string) (path string, embedded bool) {
	d, _, err := dialectFor(dsn)
	if err != nil || d.name != "sqlite" {
		return "", false
	}
	path, query, _ := strings.Cut(dsn, "?")
	if rest, ok := strings.CutPrefix(path, "file:"); ok {
		path = strings.TrimPrefix(rest, "//")
		if q, err := url.ParseQuery(query); err == nil && q.Get("mode") == "memory" {
			return "", true
		}
	}
	if path == "" || path == ":memory:" {
		return "", true
	}
	return path, true
}
