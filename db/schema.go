package db

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"follows/db/adopt"
)

// Dialects are the database kinds the store speaks.
var Dialects = []string{"sqlite", "sqlserver", "postgres"}

// SchemaScript returns the DDL the migrations apply for a dialect, in
// order, as one script a DBA can review or run by hand: what goose runs
// at start-up, without touching any database. Statements are separated
// by GO for SQL Server's tools.
func SchemaScript(dialect string) (string, error) {
	if !slices.Contains(Dialects, dialect) {
		return "", fmt.Errorf("unknown dialect %q: one of %s", dialect, strings.Join(Dialects, ", "))
	}
	dir := "migrations/" + dialect
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "-- The follows schema for %s, as its migrations create it.\n", dialect)
	for _, e := range entries {
		src, err := fs.ReadFile(migrations, dir+"/"+e.Name())
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\n-- Migration %s\n", e.Name())
		for _, stmt := range adopt.Statements(string(src)) {
			b.WriteString("\n" + stmt + "\n")
			if dialect == "sqlserver" {
				b.WriteString("GO\n")
			}
		}
	}
	return b.String(), nil
}
