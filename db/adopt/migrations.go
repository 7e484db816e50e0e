package adopt

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// The migrations that follow an adoption run in the adopting transaction,
// not by goose: goose's Provider begins a transaction of its own for each
// migration on a *sql.DB, so it cannot run inside the caller's, and the
// adoption must commit whole with them or not at all, and its dry run must
// run them to say what the real run does (docs/decisions/adoption.md).
// Goose's parser of its files is internal to goose, so Statements below
// reads the little of goose's file format the migrations use, and a test
// (TestStatementsAreGooses) holds it to what goose itself runs.

// Statements splits a goose migration's Up section into statements: one
// ends at a line ending in ";", except inside StatementBegin/End.
// Comments between statements stay with the statement that follows them.
func Statements(src string) []string {
	var out, cur []string
	up, block := false, false
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		switch trimmed {
		case "-- +goose Up":
			up = true
			continue
		case "-- +goose Down":
			up = false
			continue
		case "-- +goose StatementBegin":
			block = true
			continue
		case "-- +goose StatementEnd":
			block = false
			out = append(out, strings.TrimSpace(strings.Join(cur, "\n")))
			cur = nil
			continue
		}
		if !up || (trimmed == "" && len(cur) == 0) {
			continue
		}
		cur = append(cur, line)
		if !block && strings.HasSuffix(trimmed, ";") && !strings.HasPrefix(trimmed, "--") {
			out = append(out, strings.TrimSpace(strings.Join(cur, "\n")))
			cur = nil
		}
	}
	return out
}

// createFollowsSchema runs migration 1's statements that are missing:
// everything but the Users table, which EF Core made, and objects that
// exist already under their name.
func (a adoption) createFollowsSchema(ctx context.Context) error {
	files, err := a.files()
	if err != nil {
		return err
	}
	for _, stmt := range Statements(files[0].src) {
		name := createdName(stmt)
		if name == "Users" {
			continue
		}
		there, err := a.d.Exists(ctx, a.tx, name)
		if err != nil {
			return err
		}
		if there {
			continue
		}
		if _, err := a.tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("adopt: %s: %w", name, err)
		}
	}
	return nil
}

// A migration statement that adds one column, or creates an index or
// table, and the names it adds; the migrations add one column a
// statement, so that each can be skipped alone.
var (
	addColumnRE   = regexp.MustCompile(`(?is)^ALTER TABLE\s+["\[]?(\w+)["\]]?\s+ADD\s+(?:COLUMN\s+)?["\[]?(\w+)["\]]?\s+(.*?);?$`)
	createIndexRE = regexp.MustCompile(`(?is)^CREATE\s+(?:UNIQUE\s+)?INDEX\s+["\[]?(\w+)["\]]?`)
)

// createdName is the name a CREATE TABLE or CREATE INDEX statement
// creates.
func createdName(stmt string) string {
	for _, line := range strings.Split(stmt, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "CREATE") {
			if i := strings.IndexAny(line, `"[`); i >= 0 {
				if j := strings.IndexAny(line[i+1:], `"]`); j >= 0 {
					return line[i+1 : i+1+j]
				}
			}
		}
	}
	return ""
}

// withoutComments drops a statement's leading comment lines.
func withoutComments(stmt string) string {
	for {
		stmt = strings.TrimSpace(stmt)
		if !strings.HasPrefix(stmt, "--") {
			return stmt
		}
		_, rest, _ := strings.Cut(stmt, "\n")
		stmt = rest
	}
}

// migration is one of a dialect's migration files.
type migration struct {
	version int64
	name    string
	src     string
}

// files are the dialect's migration files, in version order.
func (a adoption) files() ([]migration, error) {
	return migrationFiles(a.migrations)
}

func migrationFiles(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("migration %s: no version: %w", e.Name(), err)
		}
		src, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, e.Name(), string(src)})
	}
	slices.SortFunc(out, func(a, b migration) int { return int(a.version - b.version) })
	return out, nil
}

// laterColumn is a column a migration after the first adds to a table:
// its type and the default the migration gives it.
type laterColumn struct {
	typ, dflt, def string
}

// laterColumns are the columns the migrations after the first add to
// table, read from their ALTER TABLE ... ADD statements.
func (a adoption) laterColumns(table string) (map[string]laterColumn, error) {
	files, err := a.files()
	if err != nil {
		return nil, err
	}
	out := map[string]laterColumn{}
	for _, m := range files[1:] {
		for _, stmt := range Statements(m.src) {
			sub := addColumnRE.FindStringSubmatch(withoutComments(stmt))
			if sub == nil || sub[1] != table {
				continue
			}
			def := strings.TrimSpace(sub[3])
			typ, _, _ := strings.Cut(def, " ")
			c := laterColumn{typ: strings.ToLower(typ), def: def}
			if _, d, ok := strings.Cut(def, " DEFAULT "); ok {
				c.dflt = strings.TrimSpace(d)
			}
			out[sub[2]] = c
		}
	}
	return out, nil
}

// migrateInTx runs, in the adopting transaction, the migrations not applied yet,
// recording each in goose's table as goose would. A statement that adds a
// column or an index that is there already is skipped: an EF model may
// have added Follows' settings, and adoption checked their definition. A
// migration goose must run outside a transaction, and those after it, are
// left to goose, which runs after the commit.
func (a adoption) migrateInTx(ctx context.Context) ([]string, error) {
	st, err := database.NewStore(a.d.Goose(), goose.DefaultTablename)
	if err != nil {
		return nil, err
	}
	applied := map[int64]bool{}
	list, err := st.ListMigrations(ctx, a.tx)
	if err != nil {
		return nil, fmt.Errorf("read the applied migrations: %w", err)
	}
	for _, m := range list {
		applied[m.Version] = m.IsApplied
	}
	files, err := a.files()
	if err != nil {
		return nil, err
	}
	var ran []string
	for _, m := range files {
		if applied[m.version] {
			continue
		}
		if strings.Contains(m.src, "-- +goose NO TRANSACTION") {
			break
		}
		for _, stmt := range Statements(m.src) {
			there, err := a.alreadyThere(ctx, withoutComments(stmt))
			if err != nil {
				return ran, fmt.Errorf("migration %s: %w", m.name, err)
			}
			if there {
				continue
			}
			if _, err := a.tx.ExecContext(ctx, stmt); err != nil {
				return ran, fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		if err := st.Insert(ctx, a.tx, database.InsertRequest{Version: m.version}); err != nil {
			return ran, fmt.Errorf("record migration %s: %w", m.name, err)
		}
		ran = append(ran, m.name)
	}
	return ran, nil
}

// alreadyThere reports whether stmt adds a column or an index that exists.
func (a adoption) alreadyThere(ctx context.Context, stmt string) (bool, error) {
	if sub := addColumnRE.FindStringSubmatch(stmt); sub != nil {
		cols, err := a.d.Columns(ctx, a.tx, sub[1])
		return slices.ContainsFunc(cols, func(c Column) bool { return c.Name == sub[2] }), err
	}
	if sub := createIndexRE.FindStringSubmatch(stmt); sub != nil {
		return a.d.Exists(ctx, a.tx, sub[1])
	}
	return false, nil
}

// markMigrated records, in goose's own table (made if need be), that the
// given migrations are applied, after goose's version 0.
func (a adoption) markMigrated(ctx context.Context, versions ...int64) error {
	st, err := database.NewStore(a.d.Goose(), goose.DefaultTablename)
	if err != nil {
		return err
	}
	if err := st.CreateVersionTable(ctx, a.tx); err != nil {
		return fmt.Errorf("adopt: create the migration table: %w", err)
	}
	for _, v := range append([]int64{0}, versions...) {
		if err := st.Insert(ctx, a.tx, database.InsertRequest{Version: v}); err != nil {
			return fmt.Errorf("adopt: record migration %d: %w", v, err)
		}
	}
	return nil
}
