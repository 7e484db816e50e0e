package adopt_test

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	_ "follows/db" // registers the "sqlite" driver
	"follows/db/adopt"
)

// Adoption runs the migrations in its own transaction, reading goose's
// files with adopt.Statements, since goose's parser is internal to goose:
// what it reads must be what goose runs. Both make a new SQLite database
// from the migrations, and the two schemas are the same, object by
// object.
func TestStatementsAreGooses(t *testing.T) {
	ctx := context.Background()
	fsys := os.DirFS("../migrations/sqlite")
	byGoose := memoryDB(t, "by-goose")
	p, err := goose.NewProvider(goose.DialectSQLite3, byGoose, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("goose: %v", err)
	}
	byReader := memoryDB(t, "by-reader")
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	for _, name := range files {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range adopt.Statements(string(src)) {
			if _, err := byReader.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, stmt)
			}
		}
	}
	schema := func(db *sql.DB) string {
		rows, err := db.Query(`SELECT type, name, coalesce(sql, '') FROM sqlite_schema WHERE name <> 'goose_db_version' AND name NOT LIKE 'sqlite_%' ORDER BY type, name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var typ, name, text string
			if err := rows.Scan(&typ, &name, &text); err != nil {
				t.Fatal(err)
			}
			b.WriteString(typ + " " + name + "\n" + text + "\n")
		}
		return b.String()
	}
	if g, r := schema(byGoose), schema(byReader); g != r || !strings.Contains(g, "TRIGGER") {
		t.Errorf("goose made\n%s\nthe reader's statements made\n%s", g, r)
	}
}

// memoryDB is a new SQLite database in memory, one connection's.
func memoryDB(t *testing.T, name string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+name+"?mode=memory")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}
