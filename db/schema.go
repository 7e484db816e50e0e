package db

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"follows/db/adopt"
)

// Dialects are the database kinds the store speaks, by name.
var Dialects = []string{"sqlite", "sqlserver", "postgres"}

// allDialects are the dialects Dialects names.
var allDialects = []dialect{&sqliteDialect{}, &sqlserverDialect{}, &postgresDialect{}}

// scriptBatches is a dialect whose tools run a script in batches, each
// ended by a line of its own (SQL Server's GO): SchemaScript ends each
// statement with one.
type scriptBatches interface {
	batchSeparator() string
}

// SchemaScript returns the DDL the migrations apply for a dialect (by
// name), in order, as one script a DBA can review or run by hand: what
// goose runs at start-up, without touching any database. Statements are
// separated by GO for SQL Server's tools (see scriptBatches).
func SchemaScript(name string) (string, error) {
	i := slices.IndexFunc(allDialects, func(d dialect) bool { return d.name() == name })
	if i < 0 {
		return "", fmt.Errorf("unknown dialect %q: one of %s", name, strings.Join(Dialects, ", "))
	}
	sep, batches := allDialects[i].(scriptBatches)
	dir := "migrations/" + name
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "-- The follows schema for %s, as its migrations create it.\n", name)
	for _, e := range entries {
		src, err := fs.ReadFile(migrations, dir+"/"+e.Name())
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\n-- Migration %s\n", e.Name())
		for _, stmt := range adopt.Statements(string(src)) {
			b.WriteString("\n" + stmt + "\n")
			if batches {
				b.WriteString(sep.batchSeparator() + "\n")
			}
		}
	}
	return b.String(), nil
}
