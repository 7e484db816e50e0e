package adopt

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// An adopted Follows table is checked by what its constraints say, not by
// their names: the server's writes and counts rely on the primary key
// (FollowerId, FolloweeId), on no row following itself, and on exactly one
// cascade path from Users, through FolloweeId, with the other key NO
// ACTION (the article's choice: SQL Server refuses two cascade paths, error
// 1785, and every dialect behaves the same). Each dialect reads the
// definition from its catalogue into a table.

// table is a table's definition as its catalogue says it.
type table struct {
	columns []Column
	pk      []string
	checks  []checkDef
	fks     []fkDef
	// sql is SQLite's CREATE TABLE text (for its CHECKs and WITHOUT
	// ROWID); empty elsewhere.
	sql string
}

// Column is a table's column as its catalogue says it.
type Column struct {
	Name string
	// Type is in lower case, without length.
	Type                string
	NotNull, HasDefault bool
	// Default is the default's expression text, where the catalogue
	// gives it.
	Default string
	// Generated is set for a column the database computes.
	Generated bool
}

type checkDef struct{ name, expr string }

// fkDef is one column of a foreign key; onDelete is "CASCADE", "NO
// ACTION", "RESTRICT", "SET NULL" or "SET DEFAULT".
type fkDef struct {
	name, column, refTable, refColumn, onDelete string
	// columns is how many columns the key has.
	columns int
}

func (d table) column(name string) (Column, bool) {
	for _, c := range d.columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// followsKeys are the server's foreign keys on Follows.
var followsKeys = []keySpec{
	{column: "FolloweeId", name: "FK_Follows_Users_FolloweeId", cascade: true},
	{column: "FollowerId", name: "FK_Follows_Users_FollowerId"},
}

type keySpec struct {
	column, name string
	cascade      bool
}

// noSelfFollow is the server's CHECK on Follows.
const noSelfFollow = "CK_Follows_NoSelfFollow"

// fixes are what verifyFollows found missing or wrong and the adoption
// makes right, with what the plan says of each.
type fixes struct {
	// check: add CK_Follows_NoSelfFollow.
	check bool
	// keys to (re)create; drop are the existing keys' names they replace.
	keys []keySpec
	drop []string
	// defaults to give columns the server's writes leave out.
	defaults map[string]laterColumn
	says     []string
}

func (f fixes) none() bool { return !f.check && len(f.keys) == 0 && len(f.defaults) == 0 }

// verifyFollows compares Follows' definition with what the server needs,
// given the columns later migrations add (which the table may have
// already), and returns what adoption can make right and what it must
// refuse, saying why. The rows have been checked first: none follows
// itself or a missing user, so a CHECK or key added holds for them.
func verifyFollows(def table, later map[string]laterColumn) (fixes, []string) {
	var fx fixes
	var refused []string
	refuse := func(format string, args ...any) { refused = append(refused, fmt.Sprintf(format, args...)) }
	for _, c := range []string{"FollowerId", "FolloweeId", "CreatedAt"} {
		if _, ok := def.column(c); !ok {
			refuse("Follows has no column %s: not the article's Follow entity", c)
		}
	}
	if !slices.Equal(def.pk, []string{"FollowerId", "FolloweeId"}) {
		refuse("the primary key of Follows is (%s), not (FollowerId, FolloweeId): the server finds a follow, and refuses a second of the same pair, by that key", strings.Join(def.pk, ", "))
	}
	hasCheck := false
	for _, c := range def.checks {
		if isNoSelfFollow(c.expr) {
			hasCheck = true
		}
	}
	if !hasCheck {
		named := false
		for _, c := range def.checks {
			if strings.EqualFold(c.name, noSelfFollow) {
				named = true
				refuse("the CHECK named %s says %s, not FollowerId <> FolloweeId: rename or drop it, and adoption adds the right one", c.name, c.expr)
			}
		}
		if !named {
			fx.check = true
			fx.says = append(fx.says, "add "+noSelfFollow+" CHECK (FollowerId <> FolloweeId): missing, and no row follows itself")
		}
	}
	for _, k := range followsKeys {
		var found []fkDef
		for _, fk := range def.fks {
			if fk.column == k.column {
				found = append(found, fk)
			}
		}
		want := "NO ACTION"
		if k.cascade {
			want = "CASCADE"
		}
		switch {
		case len(found) == 0:
			fx.keys = append(fx.keys, k)
			fx.says = append(fx.says, fmt.Sprintf("add %s: %s references Users (Id) ON DELETE %s; missing, and every row's user exists", k.name, k.column, want))
			continue
		case len(found) > 1:
			refuse("Follows has %d foreign keys on %s: the server needs one, to Users (Id)", len(found), k.column)
			continue
		}
		fk := found[0]
		if fk.columns != 1 || !strings.EqualFold(fk.refTable, "Users") || !strings.EqualFold(fk.refColumn, "Id") {
			refuse("the foreign key %s on Follows.%s references %s (%s) over %d columns, not Users (Id): not the article's model", fk.name, k.column, fk.refTable, fk.refColumn, fk.columns)
			continue
		}
		ok := fk.onDelete == "CASCADE"
		if !k.cascade {
			// RESTRICT refuses the same deletes as NO ACTION (EF's
			// OnDelete(Restrict) on SQLite and PostgreSQL).
			ok = fk.onDelete == "NO ACTION" || fk.onDelete == "RESTRICT"
		}
		if ok {
			continue
		}
		fx.keys = append(fx.keys, k)
		fx.drop = append(fx.drop, fk.name)
		why := "deleting a user deletes the follows it is followed by, once"
		if !k.cascade {
			why = "exactly one key cascades (the article's choice; SQL Server refuses two cascade paths, error 1785), so an app deletes a user's follows before the user"
		}
		fx.says = append(fx.says, fmt.Sprintf("make %s ON DELETE %s, not %s: %s", k.column+"'s foreign key", want, fk.onDelete, why))
	}
	for _, c := range def.columns {
		lc, isLater := later[c.Name]
		switch {
		case c.Generated:
			refuse("Follows.%s is a generated column: the server cannot rebuild or write it", c.Name)
		case isLater && c.Type != lc.typ:
			refuse("Follows.%s is %s; the server's migrations make it %s", c.Name, c.Type, lc.typ)
		case isLater && c.NotNull && !c.HasDefault && lc.dflt != "":
			if fx.defaults == nil {
				fx.defaults = map[string]laterColumn{}
			}
			fx.defaults[c.Name] = lc
			fx.says = append(fx.says, fmt.Sprintf("give Follows.%s the default %s, which the server's follows, not setting it, take", c.Name, lc.dflt))
		case !isLater && c.NotNull && !c.HasDefault && !slices.Contains([]string{"FollowerId", "FolloweeId", "CreatedAt"}, c.Name):
			refuse("Follows.%s is NOT NULL without a default: the server's follows, which do not set it, would be refused; give it a default or make it nullable", c.Name)
		}
	}
	return fx, refused
}

// isNoSelfFollow reports whether a CHECK's expression says FollowerId <>
// FolloweeId, however quoted, parenthesised or spelled (!=, either order).
func isNoSelfFollow(expr string) bool {
	e := strings.ToLower(expr)
	e = strings.NewReplacer(`"`, "", "[", "", "]", "", "`", "", "(", "", ")", "", " ", "", "\t", "", "\n", "", "!=", "<>").Replace(e)
	e = strings.TrimPrefix(e, "check")
	return e == "followerid<>followeeid" || e == "followeeid<>followerid"
}

// clause is the foreign key's definition on Follows, the server's way.
func (k keySpec) clause() string {
	c := `CONSTRAINT ` + k.name + ` FOREIGN KEY (` + k.column + `) REFERENCES Users (Id)`
	if k.cascade {
		c += ` ON DELETE CASCADE`
	}
	return c
}

// checkClause is the no-self-follow CHECK's definition.
const checkClause = `CONSTRAINT ` + noSelfFollow + ` CHECK (FollowerId <> FolloweeId)`

// alterFollows makes fixes with ALTER TABLE, where the dialect can
// (PostgreSQL, SQL Server): statements written once, which the dialect's
// rebind quotes.
func alterFollows(ctx context.Context, tx Tx, d interface {
	Dialect
	Defaulter
}, fx fixes) error {
	var stmts []string
	for _, name := range fx.drop {
		stmts = append(stmts, `ALTER TABLE Follows DROP CONSTRAINT `+d.Quote(name))
	}
	for _, k := range fx.keys {
		stmts = append(stmts, `ALTER TABLE Follows ADD `+k.clause())
	}
	if fx.check {
		stmts = append(stmts, `ALTER TABLE Follows ADD `+checkClause)
	}
	for _, col := range slices.Sorted(maps.Keys(fx.defaults)) {
		stmts = append(stmts, d.SetDefault("Follows", col, fx.defaults[col]))
	}
	for _, st := range stmts {
		if err := exec(ctx, tx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

// catalogue is a dialect's queries of its catalogue: tables selects the
// names of the tables there are; exists counts the tables, indexes and
// constraints named by its parameter; columns selects, for the table named
// by its parameter, name, type (lower case, no length), NOT NULL, has a
// default, the default's text (or null) and generated; pk selects the
// primary key's columns of Follows in order; checks each CHECK's name and
// expression; fks each foreign key column's key name, column, referenced
// table and column, delete action and the key's number of columns. Where
// checks is empty, sql selects the CREATE TABLE text they are read from
// (SQLite). Each dialect's adoption embeds its catalogue.
type catalogue struct {
	tables, exists, columns, pk, checks, fks, sql string
}

func (q catalogue) Tables(ctx context.Context, tx Tx) (map[string]bool, error) {
	tables := map[string]bool{}
	err := scanRows(ctx, tx, q.tables, func(rs *sql.Rows) error {
		var name string
		err := rs.Scan(&name)
		tables[name] = true
		return err
	})
	return tables, err
}

func (q catalogue) Exists(ctx context.Context, tx Tx, name string) (bool, error) {
	var n int
	err := queryRow(ctx, tx, q.exists, []any{name}, &n)
	return n > 0, err
}

func (q catalogue) Follows(ctx context.Context, tx Tx) (table, error) {
	var def table
	var err error
	def.columns, err = q.Columns(ctx, tx, "Follows")
	if err == nil {
		err = scanRows(ctx, tx, q.pk, func(rs *sql.Rows) error {
			var name string
			err := rs.Scan(&name)
			def.pk = append(def.pk, name)
			return err
		})
	}
	if err == nil {
		err = scanRows(ctx, tx, q.fks, func(rs *sql.Rows) error {
			var fk fkDef
			err := rs.Scan(&fk.name, &fk.column, &fk.refTable, &fk.refColumn, &fk.onDelete, &fk.columns)
			fk.onDelete = strings.ReplaceAll(strings.ToUpper(fk.onDelete), "_", " ")
			def.fks = append(def.fks, fk)
			return err
		})
	}
	if err == nil && q.checks != "" {
		err = scanRows(ctx, tx, q.checks, func(rs *sql.Rows) error {
			var c checkDef
			err := rs.Scan(&c.name, &c.expr)
			def.checks = append(def.checks, c)
			return err
		})
	}
	if err == nil && q.sql != "" {
		if err = queryRow(ctx, tx, q.sql, nil, &def.sql); err == nil && q.checks == "" {
			def.checks = sqliteChecks(def.sql)
		}
	}
	return def, err
}

func (q catalogue) Columns(ctx context.Context, tx Tx, table string) ([]Column, error) {
	var cols []Column
	err := scanRows(ctx, tx, q.columns, func(rs *sql.Rows) error {
		var c Column
		var dflt *string
		err := rs.Scan(&c.Name, &c.Type, &c.NotNull, &c.HasDefault, &dflt, &c.Generated)
		if dflt != nil {
			c.Default = *dflt
		}
		cols = append(cols, c)
		return err
	}, table)
	return cols, err
}
