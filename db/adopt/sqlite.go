package adopt

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/pressly/goose/v3/database"
)

// SQLite is the adoption of a SQLite file. It reads Follows' definition
// from pragma_table_xinfo and pragma_foreign_key_list, and its CHECKs from
// the CREATE TABLE text, which is the only place SQLite keeps them; it
// makes fixes by rebuilding Follows (see FixFollows).
func SQLite() Dialect { return sqlite{sqliteCatalogue} }

type sqlite struct{ catalogue }

var (
	_ DamageChecker = sqlite{}
	_ KeyChecker    = sqlite{}
)

var sqliteCatalogue = catalogue{
	tables: `SELECT name FROM sqlite_schema WHERE type = 'table'`,
	exists: `SELECT COUNT(*) FROM sqlite_schema WHERE name = ?`,
	columns: `SELECT name, lower(type), "notnull", dflt_value IS NOT NULL, dflt_value, hidden IN (2, 3)
FROM pragma_table_xinfo(?) ORDER BY cid`,
	pk: `SELECT name FROM pragma_table_info('Follows') WHERE pk > 0 ORDER BY pk`,
	// SQLite keeps no name for a key: the one given says which it is.
	fks: `SELECT CONCAT('FOREIGN KEY (', f."from", ') REFERENCES ', f."table"), f."from", f."table", coalesce(f."to", 'Id'), f.on_delete,
  (SELECT COUNT(*) FROM pragma_foreign_key_list('Follows') AS g WHERE g.id = f.id)
FROM pragma_foreign_key_list('Follows') AS f ORDER BY f.id, f.seq`,
	sql: `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'Follows'`,
}

func (sqlite) Goose() database.Dialect  { return database.DialectSQLite3 }
func (sqlite) Quote(name string) string { return `"` + name + `"` }

// NameKey: IX_Users_Name is on Name COLLATE NOCASE, which folds ASCII
// letters only, as lower() does without ICU.
func (sqlite) NameKey(col string) string { return `lower(` + col + `)` }

// NameChecks: none. A TEXT column holds a name of any length and indexes
// it (a key only has to fit in the file's pages, which overflow), so an
// EF Core Name needs no change on SQLite.
func (sqlite) NameChecks() map[string]string                 { return nil }
func (sqlite) FitName(context.Context, Tx) ([]string, error) { return nil, nil }

// CreatedAtProblem: none. EF Core writes DateTime as TEXT, and a later
// migration rewrites every CreatedAt in the server's one fixed form.
func (sqlite) CreatedAtProblem(Column) string { return "" }
func (sqlite) JoinEntitySteps() []Step        { return nil }
func (sqlite) LaterSteps() string {
	return ", and write every CreatedAt in one fixed form (seven fractional digits)"
}

// Damaged: adoption runs before the store's integrity check, which needs
// the server's settings (WAL), so a damaged file is refused first.
func (sqlite) Damaged() string {
	return `SELECT quick_check FROM pragma_quick_check WHERE quick_check <> 'ok'`
}

// BrokenKeys: foreign keys are not enforced while adopting (see
// FixFollows); every row is checked before the commit.
func (sqlite) BrokenKeys() string {
	return `SELECT CONCAT("table", ' row ', rowid, ' refers to a missing row of ', parent) FROM pragma_foreign_key_check`
}

var constraintNameRE = regexp.MustCompile(`(?i)CONSTRAINT\s+(?:"([^"]+)"|\[([^\]]+)\]|` + "`([^`]+)`" + `|(\w+))\s*$`)

// sqliteChecks finds the CHECK clauses of a CREATE TABLE text, each with
// the name its CONSTRAINT gives it, if any: a small scanner that skips
// literals and quoted names.
func sqliteChecks(sql string) []checkDef {
	var out []checkDef
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; c {
		case '\'', '"', '`', '[':
			end := byte(c)
			if c == '[' {
				end = ']'
			}
			if j := strings.IndexByte(sql[i+1:], end); j >= 0 {
				i += j + 1
			}
			continue
		}
		if !hasWordAt(sql, i, "CHECK") {
			continue
		}
		j := i + len("CHECK")
		for j < len(sql) && (sql[j] == ' ' || sql[j] == '\t' || sql[j] == '\n' || sql[j] == '\r') {
			j++
		}
		if j >= len(sql) || sql[j] != '(' {
			continue
		}
		depth, k := 0, j
		for ; k < len(sql); k++ {
			if sql[k] == '\'' || sql[k] == '"' {
				if e := strings.IndexByte(sql[k+1:], sql[k]); e >= 0 {
					k += e + 1
				}
				continue
			}
			if sql[k] == '(' {
				depth++
			} else if sql[k] == ')' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if k >= len(sql) {
			break
		}
		chk := checkDef{expr: strings.TrimSpace(sql[j+1 : k])}
		if m := constraintNameRE.FindStringSubmatch(sql[:i]); m != nil {
			chk.name = m[1] + m[2] + m[3] + m[4]
		}
		out = append(out, chk)
		i = k
	}
	return out
}

// hasWordAt reports whether word, in any case, stands alone at s[i:].
func hasWordAt(s string, i int, word string) bool {
	isWord := func(b byte) bool {
		return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	if i+len(word) > len(s) || !strings.EqualFold(s[i:i+len(word)], word) {
		return false
	}
	return (i == 0 || !isWord(s[i-1])) && (i+len(word) == len(s) || !isWord(s[i+len(word)]))
}

// FixFollows makes fixes on SQLite, whose ALTER TABLE can add
// neither a CHECK nor a foreign key, nor change a default: it rebuilds
// Follows by the procedure SQLite documents (ALTER TABLE, "making other
// kinds of table schema changes"), inside the adopting transaction and
// with foreign keys not enforced: create the new table, copy the rows,
// drop the old one, rename the new, and make its indexes and triggers
// again. Every column is kept with its type, NOT NULL and default; its
// CHECKs are kept, and its keys but those fixed. (A column's COLLATE is
// not kept: the server's model has none.)
func (sqlite) FixFollows(ctx context.Context, tx Tx, def table, fx fixes) error {
	var objects []string
	rows, err := query(ctx, tx, `SELECT sql FROM sqlite_schema WHERE tbl_name = 'Follows' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var sql string
		if err := rows.Scan(&sql); err != nil {
			rows.Close()
			return err
		}
		objects = append(objects, sql)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	q := func(n string) string { return `"` + n + `"` }
	var parts, names []string
	for _, c := range def.columns {
		col := q(c.Name) + " " + strings.ToUpper(c.Type)
		if c.NotNull {
			col += " NOT NULL"
		}
		if lc, ok := fx.defaults[c.Name]; ok {
			col += " DEFAULT " + lc.dflt
		} else if c.HasDefault {
			col += " DEFAULT " + c.Default
		}
		parts = append(parts, col)
		names = append(names, q(c.Name))
	}
	parts = append(parts, `CONSTRAINT "PK_Follows" PRIMARY KEY ("FollowerId", "FolloweeId")`)
	for _, c := range def.checks {
		if c.name != "" {
			parts = append(parts, `CONSTRAINT `+q(c.name)+` CHECK (`+c.expr+`)`)
		} else {
			parts = append(parts, `CHECK (`+c.expr+`)`)
		}
	}
	if fx.check {
		parts = append(parts, checkClause)
	}
	fixed := map[string]bool{}
	for _, k := range fx.keys {
		parts = append(parts, k.clause())
		fixed[k.column] = true
	}
	for _, fk := range def.fks {
		if fixed[fk.column] {
			continue
		}
		if fk.columns != 1 {
			return fmt.Errorf("a foreign key of Follows over %d columns (%s), which rebuilding it would not keep", fk.columns, fk.name)
		}
		key := `FOREIGN KEY (` + q(fk.column) + `) REFERENCES ` + q(fk.refTable) + ` (` + q(fk.refColumn) + `)`
		for _, k := range followsKeys {
			if k.column == fk.column {
				key = `CONSTRAINT ` + q(k.name) + ` ` + key
			}
		}
		if fk.onDelete != "NO ACTION" {
			key += ` ON DELETE ` + fk.onDelete
		}
		parts = append(parts, key)
	}
	create := "CREATE TABLE \"Follows_adopting\" (\n    " + strings.Join(parts, ",\n    ") + "\n)"
	if strings.Contains(strings.ToUpper(def.sql), "WITHOUT ROWID") {
		create += " WITHOUT ROWID"
	}
	cols := strings.Join(names, ", ")
	stmts := append([]string{
		create,
		`INSERT INTO "Follows_adopting" (` + cols + `) SELECT ` + cols + ` FROM "Follows"`,
		`DROP TABLE "Follows"`,
		`ALTER TABLE "Follows_adopting" RENAME TO "Follows"`,
	}, objects...)
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("rebuild Follows: %.60q: %w", st, err)
		}
	}
	return nil
}
