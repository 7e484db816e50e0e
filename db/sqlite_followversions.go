package db

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"

	"follows/db/adopt"
)

// followVersionTriggers are the triggers on Follows that bump
// FollowVersions (migrations 9 and 10), on which the suggestion list
// cache relies (see followLists).
var followVersionTriggers = []string{"TR_Follows_Insert_Version", "TR_Follows_Delete_Version", "TR_Follows_Update_Version"}

// sqliteFollowVersionFaults compares the follow version triggers of the
// database with the definitions the migrations last gave them, and
// returns what is wrong (a trigger missing, on another table, or defined
// otherwise) with the statements that put it right. Definitions compare
// as SQL text with comments dropped and spaces collapsed, letter case
// aside: SQLite keeps a trigger's text as it was created, so a trigger
// that differs in anything else was made by someone else, and may not
// bump what these do.
func sqliteFollowVersionFaults(ctx context.Context, db *sql.DB) (faults, restore []string, err error) {
	want, err := sqliteTriggerDefinitions()
	if err != nil {
		return nil, nil, err
	}
	type trigger struct{ table, sql string }
	have := map[string]trigger{}
	rows, err := db.QueryContext(ctx, `SELECT name, tbl_name, coalesce(sql, '') FROM sqlite_schema WHERE type = 'trigger'`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var t trigger
		if err := rows.Scan(&name, &t.table, &t.sql); err != nil {
			return nil, nil, err
		}
		have[strings.ToLower(name)] = t
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	for _, name := range followVersionTriggers {
		def, ok := want[strings.ToLower(name)]
		if !ok {
			return nil, nil, fmt.Errorf("no migration creates trigger %s", name)
		}
		drop := `DROP TRIGGER "` + name + `";`
		switch t, ok := have[strings.ToLower(name)]; {
		case !ok:
			faults = append(faults, fmt.Sprintf("trigger %s is missing", name))
			restore = append(restore, def+";")
		case !strings.EqualFold(t.table, "Follows"):
			faults = append(faults, fmt.Sprintf("trigger %s is on table %s, not Follows", name, t.table))
			restore = append(restore, drop, def+";")
		case !strings.EqualFold(oneLineSQL(t.sql), def):
			faults = append(faults, fmt.Sprintf("trigger %s is not the one the migrations create", name))
			restore = append(restore, drop, def+";")
		}
	}
	return faults, restore, nil
}

var createTriggerRE = regexp.MustCompile(`(?i)^CREATE\s+TRIGGER\s+"([^"]+)"`)

// sqliteTriggerDefinitions are the triggers the SQLite migrations create,
// by lower-cased name, each as the last migration to create it defines
// it, in oneLineSQL's form.
var sqliteTriggerDefinitions = sync.OnceValues(func() (map[string]string, error) {
	dir := "migrations/sqlite"
	entries, err := fs.ReadDir(migrations, dir) // in name order: migration order
	if err != nil {
		return nil, err
	}
	defs := map[string]string{}
	for _, e := range entries {
		src, err := fs.ReadFile(migrations, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		for _, stmt := range adopt.Statements(string(src)) {
			stmt = oneLineSQL(stmt)
			if m := createTriggerRE.FindStringSubmatch(stmt); m != nil {
				defs[strings.ToLower(m[1])] = stmt
			}
		}
	}
	return defs, nil
})

// oneLineSQL is a statement without its comment lines, its trailing
// semicolon, or runs of white space.
func oneLineSQL(stmt string) string {
	var kept []string
	for _, line := range strings.Split(stmt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			kept = append(kept, line)
		}
	}
	return strings.TrimSuffix(strings.Join(strings.Fields(strings.Join(kept, " ")), " "), ";")
}
