package adopt

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// An EF Core model that gives User.Name no length and no index, as the
// article's does, makes it nvarchar(max) on SQL Server (EF's type mapping
// gives an unbounded string nvarchar(max), and nvarchar(450) only to a
// key or index column), in the database's default collation. Migration
// 1's CREATE UNIQUE INDEX [IX_Users_Name] cannot take that column as a
// key ("Column '%.*ls' in table '%.*ls' is of a type that is invalid for
// use as a key column in an index", Msg 1919), and under a case-sensitive
// default collation would let alice and Alice both sign up. So, inside
// the adopting transaction and before migration 1's statements are
// replayed, adoption makes Name what migration 1 makes it, nvarchar(450)
// NOT NULL, in the collation every SQL Server database of the server
// gives it, once the rows are known to fit:
//
//   - no name is longer than 450 UTF-16 code units (900 bytes, what
//     nvarchar(450) holds; "Maximum capacity specifications for SQL
//     Server": 1,700 bytes for a nonclustered index key), else ALTER
//     COLUMN would fail with a truncation error;
//   - no two names are equal in that collation (the shared check, by
//     NameKey), else the unique index would fail (Msg 1505);
//   - no index other than one on Name alone, and no statistics made by
//     CREATE STATISTICS, covers the column: ALTER TABLE ("ALTER COLUMN")
//     refuses to change the type or collation of a column an index or
//     such statistics use. An index on Name alone is dropped, and
//     migration 1's IX_Users_Name, unique, takes its place; any other is
//     refused by name, for the DBA to drop and make again after.
//     Statistics SQL Server made itself on Name (an app that looked users
//     up by name has them) are dropped first, as migration 11 drops them:
//     "ALTER TABLE" says ALTER COLUMN drops them, but "Set or Change the
//     Column Collation" lists distribution statistics "generated
//     automatically" among what stops a collation change, and the query
//     optimizer makes them again when it wants them.
//
// The ALTER statement is exactly migration 11's (which makes the same
// change on databases the server made itself, and so does nothing after
// adoption).

// nameCollation is Users.Name's collation on SQL Server: case-insensitive
// whatever the database's default, as NOCASE on SQLite and lower() on
// PostgreSQL.
const nameCollation = "Latin1_General_100_CI_AS"

// fitNameStmt is the statement that makes Users.Name what the server's
// migrations make it.
const fitNameStmt = `ALTER TABLE [Users] ALTER COLUMN [Name] nvarchar(450) COLLATE ` + nameCollation + ` NOT NULL`

// longNamesCheck lists (the first 20 by id of) the users whose name
// nvarchar(450) cannot hold. DATALENGTH counts bytes, trailing spaces
// included (LEN does not count those), of the name as nvarchar, whatever
// Name's type is now: nvarchar(n) holds n byte-pairs.
const longNamesCheck = `SELECT TOP (20) CONCAT(Id, ' ', LEFT(Name, 40), '... (', DATALENGTH(CAST(Name AS nvarchar(max))) / 2, ' characters)')
FROM Users WHERE DATALENGTH(CAST(Name AS nvarchar(max))) > 900 ORDER BY Id`

// NameKey compares names in nameCollation, as IX_Users_Name will once
// Name is in it: GROUP BY and = then take the same names for one as the
// unique index, trailing spaces ignored as SQL Server's comparisons do.
// lower() would not do: it compares in the column's collation, which may
// ignore accents (..._CI_AI) where the index will not.
func (sqlserver) NameKey(col string) string { return col + ` COLLATE ` + nameCollation }

func (sqlserver) NameChecks() map[string]string {
	return map[string]string{
		"a name longer than the 450 characters Users.Name holds (IX_Users_Name's key; the first 20 by id)": longNamesCheck,
	}
}

// nameColumn is Users.Name as sys.columns describes it: type, max_length
// in bytes (-1 for max), collation and nullability.
type nameColumn struct {
	typ       string
	maxLength int
	collation string
	nullable  bool
}

func (c nameColumn) right() bool {
	return c.typ == "nvarchar" && c.maxLength == 900 && c.collation == nameCollation && !c.nullable
}

func (c nameColumn) String() string {
	n := "max"
	if c.maxLength >= 0 {
		size := c.maxLength
		if strings.HasPrefix(c.typ, "n") {
			size /= 2
		}
		n = strconv.Itoa(size)
	}
	s := c.typ + "(" + n + ")"
	if c.collation != "" {
		s += " COLLATE " + c.collation
	}
	if c.nullable {
		return s + " NULL"
	}
	return s + " NOT NULL"
}

// nameUser is an index or statistics on Users that uses Name: its kind
// (sys.indexes' type_desc, or STATISTICS), whether it belongs to a
// constraint or has a filter, and how many columns it has, included ones
// counted.
type nameUser struct {
	name, kind           string
	constraint, filtered bool
	columns              int
}

// alone is an index on Name alone that migration 1's IX_Users_Name
// replaces.
func (u nameUser) alone() bool {
	return u.kind == "NONCLUSTERED" && !u.constraint && !u.filtered && u.columns == 1
}

// fitNameSteps are the statements that make Users.Name right, and what
// stops them (users of the column that adoption will not drop).
func fitNameSteps(c nameColumn, users []nameUser) ([]Step, []string) {
	if c.right() {
		return nil, nil
	}
	var steps []Step
	var refused []string
	for _, u := range users {
		if u.kind == autoStatistics {
			steps = append(steps, Step{
				Says: fmt.Sprintf("drop the statistics %s SQL Server made itself on Users (Name), which would stop the collation change; the optimizer makes them again", u.name),
				Stmt: `DROP STATISTICS [Users].` + bracket(u.name),
			})
			continue
		}
		if !u.alone() {
			refused = append(refused, fmt.Sprintf("the %s %s on Users uses Name (with other columns, a filter or a constraint): SQL Server cannot change Name to nvarchar(450) COLLATE %s under it; drop it, adopt, and make it again", strings.ToLower(u.kind), u.name, nameCollation))
			continue
		}
		steps = append(steps, Step{
			Says: fmt.Sprintf("drop the index %s on Users (Name), which SQL Server will not change the column under; migration 1's IX_Users_Name, unique, takes its place", u.name),
			Stmt: `DROP INDEX ` + bracket(u.name) + ` ON [Users]`,
		})
	}
	if len(refused) > 0 {
		return nil, refused
	}
	return append(steps, Step{
		Says: fmt.Sprintf("make Users.Name nvarchar(450) COLLATE %s NOT NULL (it is %s), before migration 1 creates IX_Users_Name on it: an index key holds at most 900 bytes, and the collation compares names without regard to case whatever the database's default; no name is longer, none shared", nameCollation, c),
		Stmt: fitNameStmt,
	}), nil
}

// autoStatistics is the kind nameUsersQuery gives statistics the query
// optimizer made on Name.
const autoStatistics = "AUTO STATISTICS"

// bracket quotes a name from the catalogue as QUOTENAME does.
func bracket(name string) string { return "[" + strings.ReplaceAll(name, "]", "]]") + "]" }

const (
	nameColumnQuery = `SELECT TYPE_NAME(c.user_type_id), c.max_length, COALESCE(c.collation_name, N''), c.is_nullable
FROM sys.columns AS c WHERE c.object_id = OBJECT_ID(N'Users') AND c.name = N'Name'`
	nameUsersQuery = `SELECT i.name, i.type_desc, CASE WHEN i.is_primary_key = 1 OR i.is_unique_constraint = 1 THEN 1 ELSE 0 END, i.has_filter,
  (SELECT COUNT(*) FROM sys.index_columns AS x WHERE x.object_id = i.object_id AND x.index_id = i.index_id)
FROM sys.indexes AS i
WHERE i.object_id = OBJECT_ID(N'Users') AND EXISTS (SELECT 1 FROM sys.index_columns AS ic
  WHERE ic.object_id = i.object_id AND ic.index_id = i.index_id AND ic.column_id = COLUMNPROPERTY(i.object_id, 'Name', 'ColumnId'))
UNION ALL
SELECT s.name, CASE WHEN s.auto_created = 1 THEN N'` + autoStatistics + `' ELSE N'STATISTICS' END, 0, 0, 0 FROM sys.stats AS s
WHERE s.object_id = OBJECT_ID(N'Users') AND (s.user_created = 1 OR s.auto_created = 1) AND EXISTS (SELECT 1 FROM sys.stats_columns AS sc
  WHERE sc.object_id = s.object_id AND sc.stats_id = s.stats_id AND sc.column_id = COLUMNPROPERTY(s.object_id, 'Name', 'ColumnId'))`
)

// FitName reads Users.Name and what uses it, and runs fitNameSteps.
func (sqlserver) FitName(ctx context.Context, tx Tx) ([]string, error) {
	var c nameColumn
	if err := queryRow(ctx, tx, nameColumnQuery, nil, &c.typ, &c.maxLength, &c.collation, &c.nullable); err != nil {
		return nil, fmt.Errorf("read Users.Name: %w", err)
	}
	if c.right() {
		return nil, nil
	}
	var users []nameUser
	err := scanRows(ctx, tx, nameUsersQuery, func(rs *sql.Rows) error {
		var u nameUser
		err := rs.Scan(&u.name, &u.kind, &u.constraint, &u.filtered, &u.columns)
		users = append(users, u)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the indexes on Users.Name: %w", err)
	}
	steps, refused := fitNameSteps(c, users)
	if len(refused) > 0 {
		return nil, &Error{Problems: refused}
	}
	var says []string
	for _, st := range steps {
		if err := exec(ctx, tx, st.Stmt); err != nil {
			return says, fmt.Errorf("%s: %w", st.Stmt, err)
		}
		says = append(says, st.Says)
	}
	return says, nil
}

// CreatedAtProblem refuses a Follows.CreatedAt that is not datetime2. The
// server's keyset cursors carry a follow's time read from the column and
// compare the column with it as a datetime2(7) parameter (go-mssqldb
// sends a civil.DateTime so). datetime is "rounded to increments of
// .000, .003, or .007 seconds" ("datetime (Transact-SQL)"), and "under
// database compatibility level 130, implicit conversions from datetime to
// datetime2 data types show improved accuracy by accounting for the
// fractional milliseconds" (12:45:37.333 compares as 12:45:37.3333333),
// so the stored time and the one a cursor carries need not compare
// equal: pages skip or repeat follows at their edges. A
// datetime2 of any scale is taken: the cursor carries the stored value
// exactly, and widening it to datetime2(7) to compare loses nothing
// (a smaller scale only makes more follows share a time, which the keyset
// orders by id).
func (sqlserver) CreatedAtProblem(c Column) string {
	if c.Type == "datetime2" {
		return ""
	}
	return fmt.Sprintf("Follows.CreatedAt is %s, not datetime2: the server's keyset cursors compare it with datetime2(7) times, and %s, so pages would skip or repeat follows at their edges; make it datetime2 first: ALTER TABLE [Follows] ALTER COLUMN [CreatedAt] datetime2(7) NOT NULL (dropping the indexes and default on CreatedAt before, and making them again after)",
		c.Type, createdAtWhy(c.Type))
}

func createdAtWhy(typ string) string {
	switch typ {
	case "datetime":
		return "datetime rounds to 1/300 of a second (.000, .003, .007), so the time a cursor carries is not the one stored"
	case "smalldatetime":
		return "smalldatetime keeps whole minutes, so the time a cursor carries is not the one stored"
	}
	return "the server writes, reads and compares CreatedAt as a UTC datetime2, the type EF Core gives a DateTime"
}
