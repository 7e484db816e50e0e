package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"

	"follows/db/adopt"
	"follows/db/pgtest"
)

// eachDialect runs fn on a fresh store of every dialect: SQLite always,
// PostgreSQL when POSTGRES_DSN names a server, SQL Server when MSSQL_DSN
// names a database (emptied first); the others skip, saying so.
func eachDialect(t *testing.T, fn func(t *testing.T, s *Store)) {
	for _, d := range []struct {
		name string
		open opener
	}{{"sqlite", openTestStore}, {"postgres", openPostgres}, {"sqlserver", openSQLServer}} {
		t.Run(d.name, func(t *testing.T) {
			if d.name == "sqlserver" && os.Getenv("MSSQL_DSN") == "" {
				t.Skip(sqlserverSkip)
			}
			if d.name == "postgres" && !pgtest.Available() {
				t.Skip(pgtest.SkipMessage("the PostgreSQL run"))
			}
			if d.name != "sqlserver" { // SQL Server's tests share one database
				t.Parallel()
			}
			fn(t, d.open(t))
		})
	}
}

// authorWithPost signs up a user whom a row of another application's
// table (Posts, dropped when the test ends) refers to.
func authorWithPost(t *testing.T, s *Store) User {
	t.Helper()
	a, err := s.CreateUser(context.Background(), "author")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.rawExec(`CREATE TABLE Posts (Id int NOT NULL PRIMARY KEY, AuthorId int NOT NULL REFERENCES Users (Id))`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.rawExec(`DROP TABLE Posts`) })
	if _, err := s.rawExec(`INSERT INTO Posts (Id, AuthorId) VALUES (1, ?)`, a.ID); err != nil {
		t.Fatal(err)
	}
	return a
}

// A user that another application's table still refers to cannot be
// deleted, and the store says why rather than failing with an unclassified
// driver error (which a client would see as INTERNAL) or "not found".
func TestDeleteUserStillReferenced(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a := authorWithPost(t, s)
		_, err := s.DeleteUser(ctx, a.ID)
		if !errors.Is(err, ErrStillReferenced) || errors.Is(err, ErrNotFound) {
			t.Fatalf("delete a user a post refers to: %v, want ErrStillReferenced", err)
		}
		if _, err := s.UserByName(ctx, "author"); err != nil {
			t.Errorf("the user is gone after the refused delete: %v", err)
		}
	})
}

// The SQL an EF Core 11 app sends for its writes (the article measures EF
// Core 11), statement for statement, with the model of docs/efcore/ (the
// one for each dialect), so that the schema is shown to take the app's
// write paths without .NET. Sources, per provider, read in dotnet/efcore at
// the 11.0 release branch (and unchanged since 10.0 unless said):
//
//   - SQLite (Microsoft.EntityFrameworkCore.Sqlite): with
//     UseSqlReturningClause(false), as docs/efcore's model sets on Users
//     and Follows, SqliteUpdateSqlGenerator falls back to
//     UpdateAndSelectSqlGenerator: the INSERT, then a SELECT of the
//     generated columns "WHERE changes() = 1 AND" the key ("rowid" =
//     last_insert_rowid() for an identity key); a DELETE, then "SELECT
//     changes()". Without it: one statement with RETURNING (see
//     TestEFCoreSQLiteReturning). Microsoft.Data.Sqlite runs a command's
//     statements one after the other, binding @p0... by name.
//   - SQL Server (Microsoft.EntityFrameworkCore.SqlServer): every
//     SaveChanges batch starts "SET NOCOUNT ON;" (AppendBatchHeader), and
//     a batch that needs no transaction of its own is prefixed with "SET
//     IMPLICIT_TRANSACTIONS OFF;" (PrependEnsureAutocommit, called by
//     ReaderModificationCommandBatch.Complete when !RequiresTransaction): a
//     lone DELETE; an INSERT that reads generated values back runs in a
//     transaction EF Core begins, without the prefix. On a table with
//     HasTrigger (EF Core 7's breaking change "SQL Server tables with
//     triggers now require special EF Core configuration"), the INSERT,
//     then a SELECT of the generated columns "WHERE @@ROWCOUNT = 1 AND" the
//     key ([Id] = scope_identity() for an identity key); a DELETE, then
//     "SELECT @@ROWCOUNT"; from four rows of one table in one batch
//     (MergeIntoMinimumThreshold), MERGE ... OUTPUT ... INTO a @inserted0
//     table variable, then a SELECT joined to it (SqlServerUpdateSqlGenerator;
//     below four, one INSERT and SELECT per row). Without HasTrigger:
//     OUTPUT without INTO (OUTPUT INSERTED... or OUTPUT 1), which SQL
//     Server refuses on a table with an enabled trigger for the statement's
//     own action (error 334; TestEFCoreSQLServerWithoutHasTrigger and
//     TestSQLServerOutputWithoutIntoRule). EF Core batches several
//     commands of one SaveChanges into one DbCommand (MinBatchSize 1); the
//     test sends option 2's two deletes one after the other in the same
//     transaction, the same statements in the same order. SqlClient sends
//     each batch as sp_executesql with its parameter declarations, as the
//     test does.
//   - PostgreSQL (Npgsql.EntityFrameworkCore.PostgreSQL): INSERT ...
//     RETURNING the generated columns; DELETE alone, its rows affected
//     checked by the provider. EF Core writes @p0...; Npgsql rewrites them
//     to $1... before sending, so the statements are written as sent.
//   - ExecuteDelete, the article's "delete the follows, then the user":
//     one DELETE with the table's alias, SQL Server's "DELETE FROM [f] FROM
//     [Follows] AS [f]" form. The parameter is named after the captured
//     variable, @id: EF Core 10's "Simplify parameter names" (dotnet/efcore
//     #35200) replaced EF Core 8/9's @__id_0. On SQL Server, EF Core 11
//     puts "SET NOCOUNT OFF;" before it (dotnet/efcore #37827: a SaveChanges
//     batch leaves the session's NOCOUNT on, and an ExecuteDelete after it
//     on the same open connection reported -1 rows); EF Core 10 sends the
//     DELETE alone.
//
// Adding a follow through the skip navigation (user.Following.Add(other),
// with UsingEntity<Follow>) saves the same INSERT of the join entity as
// adding a Follow: EF Core creates the Follow itself. Loading the
// navigation first is a SELECT, which writes nothing and is left out.

// efCommand is one DbCommand EF Core sends: its statements, the names of
// its parameters in the order of args, their SQL Server declarations, and
// how EF Core reads the outcome.
type efCommand struct {
	stmts  []string
	params []string
	decl   string // for sp_executesql, SQL Server only
	check  efCheck
	// saveChanges: a SaveChanges batch (SQL Server's SET NOCOUNT ON); not
	// an ExecuteDelete.
	saveChanges bool
	// autocommit: a SaveChanges batch that needs no transaction of its own
	// (SQL Server's SET IMPLICIT_TRANSACTIONS OFF before it).
	autocommit bool
}

type efCheck int

const (
	efRow      efCheck = iota // the last statement returns the one row EF Core reads back
	efCount                   // the last statement returns the rows affected (changes(), @@ROWCOUNT)
	efAffected                // the provider reads the statement's rows affected (Npgsql)
	efReturned                // ExecuteDelete: the rows affected go to the app, unchecked
)

// efWrites are one provider's commands for the write paths.
type efWrites struct {
	insertUser, insertFollow, deleteFollow, deleteUser efCommand
	executeDeleteFollows, executeDeleteUser            efCommand
}

var efWritesFor = map[string]efWrites{
	"sqlite": {
		insertUser: efCommand{stmts: []string{`INSERT INTO "Users" ("DeactivatedAt", "ExternalId", "Name")
VALUES (@p0, @p1, @p2);`, `SELECT "Id", "FollowerCount", "FollowingCount", "FollowingVersion", "SecurityStamp"
FROM "Users"
WHERE changes() = 1 AND "rowid" = last_insert_rowid();`}, params: []string{"p0", "p1", "p2"}, check: efRow, saveChanges: true},
		insertFollow: efCommand{stmts: []string{`INSERT INTO "Follows" ("FollowerId", "FolloweeId")
VALUES (@p0, @p1);`, `SELECT "CreatedAt", "Muted", "NotificationsEnabled"
FROM "Follows"
WHERE changes() = 1 AND "FollowerId" = @p0 AND "FolloweeId" = @p1;`}, params: []string{"p0", "p1"}, check: efRow, saveChanges: true},
		deleteFollow: efCommand{stmts: []string{`DELETE FROM "Follows"
WHERE "FollowerId" = @p0 AND "FolloweeId" = @p1;`, `SELECT changes();`}, params: []string{"p0", "p1"}, check: efCount, saveChanges: true},
		deleteUser: efCommand{stmts: []string{`DELETE FROM "Users"
WHERE "Id" = @p0;`, `SELECT changes();`}, params: []string{"p0"}, check: efCount, saveChanges: true},
		executeDeleteFollows: efCommand{stmts: []string{`DELETE FROM "Follows" AS "f"
WHERE "f"."FollowerId" = @id OR "f"."FolloweeId" = @id`}, params: []string{"id"}, check: efReturned},
		executeDeleteUser: efCommand{stmts: []string{`DELETE FROM "Users" AS "u"
WHERE "u"."Id" = @id`}, params: []string{"id"}, check: efReturned},
	},
	"postgres": {
		insertUser: efCommand{stmts: []string{`INSERT INTO "Users" ("DeactivatedAt", "ExternalId", "Name")
VALUES ($1, $2, $3)
RETURNING "Id", "FollowerCount", "FollowingCount", "FollowingVersion", "SecurityStamp";`}, check: efRow, saveChanges: true},
		insertFollow: efCommand{stmts: []string{`INSERT INTO "Follows" ("FollowerId", "FolloweeId")
VALUES ($1, $2)
RETURNING "CreatedAt", "Muted", "NotificationsEnabled";`}, check: efRow, saveChanges: true},
		deleteFollow: efCommand{stmts: []string{`DELETE FROM "Follows"
WHERE "FollowerId" = $1 AND "FolloweeId" = $2;`}, check: efAffected, saveChanges: true},
		deleteUser: efCommand{stmts: []string{`DELETE FROM "Users"
WHERE "Id" = $1;`}, check: efAffected, saveChanges: true},
		executeDeleteFollows: efCommand{stmts: []string{`DELETE FROM "Follows" AS f
WHERE f."FollowerId" = $1 OR f."FolloweeId" = $1`}, check: efReturned},
		executeDeleteUser: efCommand{stmts: []string{`DELETE FROM "Users" AS u
WHERE u."Id" = $1`}, check: efReturned},
	},
	"sqlserver": {
		insertUser: efCommand{stmts: []string{`INSERT INTO [Users] ([DeactivatedAt], [ExternalId], [Name])
VALUES (@p0, @p1, @p2);`, `SELECT [Id], [FollowerCount], [FollowingCount], [FollowingVersion], [SecurityStamp]
FROM [Users]
WHERE @@ROWCOUNT = 1 AND [Id] = scope_identity();`}, params: []string{"p0", "p1", "p2"}, decl: "@p0 datetime2(7), @p1 nvarchar(450), @p2 nvarchar(450)", check: efRow, saveChanges: true},
		insertFollow: efCommand{stmts: []string{`INSERT INTO [Follows] ([FollowerId], [FolloweeId])
VALUES (@p0, @p1);`, `SELECT [CreatedAt], [Muted], [NotificationsEnabled]
FROM [Follows]
WHERE @@ROWCOUNT = 1 AND [FollowerId] = @p0 AND [FolloweeId] = @p1;`}, params: []string{"p0", "p1"}, decl: "@p0 int, @p1 int", check: efRow, saveChanges: true},
		deleteFollow: efCommand{stmts: []string{`DELETE FROM [Follows]
WHERE [FollowerId] = @p0 AND [FolloweeId] = @p1;`, `SELECT @@ROWCOUNT;`}, params: []string{"p0", "p1"}, decl: "@p0 int, @p1 int", check: efCount, saveChanges: true, autocommit: true},
		deleteUser: efCommand{stmts: []string{`DELETE FROM [Users]
WHERE [Id] = @p0;`, `SELECT @@ROWCOUNT;`}, params: []string{"p0"}, decl: "@p0 int", check: efCount, saveChanges: true, autocommit: true},
		executeDeleteFollows: efCommand{stmts: []string{`SET NOCOUNT OFF;`, `DELETE FROM [f]
FROM [Follows] AS [f]
WHERE [f].[FollowerId] = @id OR [f].[FolloweeId] = @id`}, params: []string{"id"}, decl: "@id int", check: efReturned},
		executeDeleteUser: efCommand{stmts: []string{`SET NOCOUNT OFF;`, `DELETE FROM [u]
FROM [Users] AS [u]
WHERE [u].[Id] = @id`}, params: []string{"id"}, decl: "@id int", check: efReturned},
	},
}

// sqlParam is a parameter name as EF Core writes it in a statement.
var sqlParam = regexp.MustCompile(`@(\w+)`)

// send runs one EF Core command in tx, as its provider sends it, checks
// the outcome as EF Core does, and returns the row EF Core reads back
// (efRow) or nil.
func (c efCommand) send(t *testing.T, dialect string, tx *sql.Tx, args ...any) []any {
	t.Helper()
	// The last statement returns the rows EF Core reads (efRow, efCount).
	reads := c.check == efRow || c.check == efCount
	var r *sql.Rows
	var affected int64
	switch dialect {
	case "sqlite":
		// Microsoft.Data.Sqlite runs the statements in turn, binding
		// each @name the statement has.
		for i, stmt := range c.stmts {
			var bound []any
			seen := map[string]bool{}
			for _, m := range sqlParam.FindAllStringSubmatch(stmt, -1) {
				if !seen[m[1]] {
					seen[m[1]] = true
					bound = append(bound, sql.Named(m[1], args[indexOf(t, c.params, m[1])]))
				}
			}
			r, affected = runStatement(t, tx, stmt, stmt, bound, reads && i == len(c.stmts)-1)
		}
	case "postgres":
		r, affected = runStatement(t, tx, c.stmts[0], c.stmts[0], args, reads)
	case "sqlserver":
		batch := strings.Join(c.stmts, "\n")
		if c.saveChanges {
			batch = "SET NOCOUNT ON;\n" + batch
		}
		if c.autocommit {
			batch = "SET IMPLICIT_TRANSACTIONS OFF;\n" + batch
		}
		text, bound := spExecuteSQL(batch, c.decl, c.params, args)
		r, affected = runStatement(t, tx, batch, text, bound, reads)
	}
	switch c.check {
	case efAffected:
		if affected != 1 {
			t.Fatalf("%s\n-> %d rows affected; EF Core expects 1 (DbUpdateConcurrencyException)", c.stmts[0], affected)
		}
		return nil
	case efReturned:
		return nil
	}
	defer r.Close()
	cols, err := r.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for r.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("%s\n-> %v", strings.Join(c.stmts, "\n"), err)
	}
	if len(rows) != 1 {
		t.Fatalf("%s\n-> %d rows; EF Core expects 1 (DbUpdateConcurrencyException)", strings.Join(c.stmts, "\n"), len(rows))
	}
	if c.check == efCount {
		if n := fmt.Sprint(rows[0][0]); n != "1" {
			t.Fatalf("%s\n-> %s rows affected; EF Core expects 1 (DbUpdateConcurrencyException)", strings.Join(c.stmts, "\n"), n)
		}
		return nil
	}
	return rows[0]
}

// runStatement runs text in tx (shown in failures as shown), and returns
// its rows if it reads them, else its rows affected.
func runStatement(t *testing.T, tx *sql.Tx, shown, text string, args []any, reads bool) (*sql.Rows, int64) {
	t.Helper()
	if reads {
		r, err := tx.Query(text, args...)
		if err != nil {
			t.Fatalf("%s\n-> %v", shown, err)
		}
		return r, 0
	}
	res, err := tx.Exec(text, args...)
	if err != nil {
		t.Fatalf("%s\n-> %v", shown, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		t.Fatal(err)
	}
	return nil, n
}

// spExecuteSQL is the call SqlClient makes for a parameterized batch:
// sp_executesql with the batch, its parameter declarations, and each
// parameter by EF Core's name, here given go-mssqldb's @p1... in turn.
func spExecuteSQL(batch, decl string, names []string, args []any) (string, []any) {
	text := "EXEC sp_executesql N'" + strings.ReplaceAll(batch, "'", "''") + "', N'" + decl + "'"
	for i, name := range names {
		text += fmt.Sprintf(", @%s = @p%d", name, i+1)
	}
	return text, args
}

func indexOf(t *testing.T, names []string, name string) int {
	t.Helper()
	for i, n := range names {
		if n == name {
			return i
		}
	}
	t.Fatalf("parameter @%s not among %v", name, names)
	return -1
}

// saveChanges runs fn's commands in one transaction, as SaveChanges (or
// an ExecuteDelete) does.
func saveChanges(t *testing.T, s *Store, fn func(tx *sql.Tx)) {
	t.Helper()
	tx, err := s.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	fn(tx)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// requireExactCounts fails the test if any kept count differs from a
// recount by the count rule (the store's check).
func requireExactCounts(t *testing.T, s *Store, after string) {
	t.Helper()
	drift, err := s.CheckCounts(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drift {
		t.Errorf("after %s: %s keeps %d followers, %d following; the follows say %d, %d",
			after, d.User.Name, d.User.FollowerCount, d.User.FollowingCount, d.RecountFollowers, d.RecountFollowing)
	}
}

// The article's write paths, as EF Core sends them, on the server's
// schema: follows through the join entity and the skip navigation, an
// unfollow, a user deleted through the cascade (option 2: EF Core deletes
// the loaded follows by the user, the database the follows of it), a
// deactivated one too, and a user deleted by "delete the follows, then the
// user" (option 3), each with blocks both ways. Counts stay exact
// throughout, by the store's own check, and nothing of the deleted users
// is left.
func TestEFCoreWritePaths(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ef := efWritesFor[s.d.name()]
		ctx := context.Background()
		id := map[string]int64{}
		for _, name := range []string{"ann", "ben", "cat", "dan", "eve", "fay"} {
			var row []any
			// Every property EF Core does not generate goes in the
			// INSERT, nulls included; SecurityStamp and the counts never.
			saveChanges(t, s, func(tx *sql.Tx) { row = ef.insertUser.send(t, s.d.name(), tx, nil, nil, name) })
			id[name] = asInt64(t, row[0])
			var stored string
			if err := s.rawQueryRow(`SELECT SecurityStamp FROM Users WHERE Id = ?`, id[name]).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(row[4]); got != stored || !ValidStamp(got) {
				t.Errorf("EF Core reads back %s's stamp as %q; the row holds %q", name, got, stored)
			}
			if got := fmt.Sprint(row[3]); got != "0" {
				t.Errorf("EF Core reads back %s's FollowingVersion as %s; want 0, following no one", name, got)
			}
		}
		// Users' FollowingVersion goes up whenever the users they follow
		// change, whoever writes: each step below says whose versions it
		// moves, and the others' stay.
		versions := func() map[string]int64 {
			t.Helper()
			out := map[string]int64{}
			for name, uid := range id {
				var v int64
				err := s.rawQueryRow(`SELECT FollowingVersion FROM Users WHERE Id = ?`, uid).Scan(&v)
				if errors.Is(err, sql.ErrNoRows) {
					continue // deleted
				}
				if err != nil {
					t.Fatal(err)
				}
				out[name] = v
			}
			return out
		}
		requireMoved := func(after string, before map[string]int64, moved ...string) {
			t.Helper()
			for name, v := range versions() {
				if want := slices.Contains(moved, name); (v > before[name]) != want || v < before[name] {
					t.Errorf("after %s %s's FollowingVersion went from %d to %d; want it moved: %v", after, name, before[name], v, want)
				}
			}
		}
		before := versions()
		follow := func(who, whom string) {
			t.Helper()
			var row []any
			saveChanges(t, s, func(tx *sql.Tx) { row = ef.insertFollow.send(t, s.d.name(), tx, id[who], id[whom]) })
			var stored any
			if err := s.rawQueryRow(`SELECT CreatedAt FROM Follows WHERE FollowerId = ? AND FolloweeId = ?`, id[who], id[whom]).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(row[0]) != fmt.Sprint(stored) {
				t.Errorf("EF Core reads back %s -> %s's CreatedAt as %v; the row holds %v", who, whom, row[0], stored)
			}
		}
		// Through the join entity (context.Follows.Add).
		for _, p := range [][2]string{{"ann", "ben"}, {"cat", "ben"}, {"dan", "ben"}, {"ben", "cat"},
			{"eve", "fay"}, {"fay", "eve"}, {"ann", "fay"}, {"dan", "fay"}, {"cat", "eve"}, {"eve", "ann"}} {
			follow(p[0], p[1])
		}
		// Through the skip navigation (ann.Following.Add(cat)): the same
		// INSERT of the join entity.
		follow("ann", "cat")
		requireExactCounts(t, s, "the follows")
		requireMoved("the follows", before, "ann", "ben", "cat", "dan", "eve", "fay")

		// Unfollow (context.Follows.Remove, or ann.Following.Remove(cat)).
		before = versions()
		saveChanges(t, s, func(tx *sql.Tx) { ef.deleteFollow.send(t, s.d.name(), tx, id["ann"], id["cat"]) })
		requireExactCounts(t, s, "the unfollow")
		requireMoved("the unfollow", before, "ann")

		// Blocks both ways around ben, eve and fay: the server's.
		for _, b := range [][2]string{{"ben", "eve"}, {"fay", "ben"}, {"eve", "dan"}, {"ann", "eve"}, {"fay", "cat"}} {
			if _, err := s.rawExec(`INSERT INTO Blocks (BlockerId, BlockedId) VALUES (?, ?)`, id[b[0]], id[b[1]]); err != nil {
				t.Fatal(err)
			}
		}

		// Option 2: context.Users.Remove(ben) with ben.Following loaded
		// (ClientCascade): EF Core deletes ben -> cat, then ben; the
		// FolloweeId cascade deletes ann, cat, dan -> ben.
		before = versions()
		saveChanges(t, s, func(tx *sql.Tx) {
			ef.deleteFollow.send(t, s.d.name(), tx, id["ben"], id["cat"])
			ef.deleteUser.send(t, s.d.name(), tx, id["ben"])
		})
		requireGone(t, s, id["ben"])
		requireExactCounts(t, s, "deleting ben through the cascade")
		requireMoved("deleting ben through the cascade", before, "ann", "cat", "dan")

		// Option 2 for a deactivated user: fay, whom eve, ann and dan
		// follow. Their counts never counted her and must not drop.
		if _, _, err := s.SetDeactivated(ctx, id["fay"], true); err != nil {
			t.Fatal(err)
		}
		requireExactCounts(t, s, "deactivating fay")
		// Their follows of fay go, so their lists change: the versions
		// move though the counts do not.
		before = versions()
		saveChanges(t, s, func(tx *sql.Tx) {
			ef.deleteFollow.send(t, s.d.name(), tx, id["fay"], id["eve"])
			ef.deleteUser.send(t, s.d.name(), tx, id["fay"])
		})
		requireGone(t, s, id["fay"])
		requireExactCounts(t, s, "deleting the deactivated fay through the cascade")
		requireMoved("deleting the deactivated fay through the cascade", before, "ann", "dan", "eve")

		// Option 3 for eve, who blocked dan and whom ann blocked:
		// context.Follows.Where(f => f.FollowerId == id || f.FolloweeId
		// == id).ExecuteDelete(), then context.Users.Where(u => u.Id ==
		// id).ExecuteDelete().
		before = versions()
		saveChanges(t, s, func(tx *sql.Tx) { ef.executeDeleteFollows.send(t, s.d.name(), tx, id["eve"]) })
		saveChanges(t, s, func(tx *sql.Tx) { ef.executeDeleteUser.send(t, s.d.name(), tx, id["eve"]) })
		requireGone(t, s, id["eve"])
		requireExactCounts(t, s, "deleting eve's follows, then eve")
		requireMoved("deleting eve's follows, then eve", before, "cat")
	})
}

// requireGone fails the test if any row of the user, or referring to it,
// is left.
func requireGone(t *testing.T, s *Store, id int64) {
	t.Helper()
	var n int
	err := s.rawQueryRow(`SELECT (SELECT COUNT(*) FROM Users WHERE Id = ?)
  + (SELECT COUNT(*) FROM Follows WHERE FollowerId = ? OR FolloweeId = ?)
  + (SELECT COUNT(*) FROM Blocks WHERE BlockerId = ? OR BlockedId = ?)`, id, id, id, id, id).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("user %d: %d rows of it or referring to it left", id, n)
	}
}

func asInt64(t *testing.T, v any) int64 {
	t.Helper()
	switch v := v.(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case int:
		return int64(v)
	}
	t.Fatalf("an id of type %T", v)
	return 0
}

// A user deleted through the FolloweeId cascade (a plain DELETE of the
// user, once its own follows are gone: EF Core's Remove) brings its
// followers' FollowingCount down, and a deactivated one, whom those counts
// never counted, leaves them as they were. On SQL Server the first delete
// runs with TR_Users_Delete disabled, so that the cascade itself deletes
// the follows after the user's row: the count trigger must not need that
// row.
func TestDeleteThroughCascadeKeepsCounts(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		id := users(t, s, "ann", "ben", "cat", "dan")
		for _, p := range [][2]string{{"ann", "cat"}, {"ben", "cat"}, {"cat", "dan"}, {"ann", "dan"}, {"ben", "dan"}, {"dan", "ann"}} {
			if _, err := s.Follow(ctx, id[p[0]], id[p[1]]); err != nil {
				t.Fatal(err)
			}
		}
		deleteThroughCascade := func(name string) {
			t.Helper()
			if _, err := s.rawExec(`DELETE FROM Follows WHERE FollowerId = ?`, id[name]); err != nil {
				t.Fatal(err)
			}
			if _, err := s.rawExec(`DELETE FROM Users WHERE Id = ?`, id[name]); err != nil {
				t.Fatal(err)
			}
			requireGone(t, s, id[name])
		}
		if s.d.name() == "sqlserver" {
			if _, err := s.rawExec(`DISABLE TRIGGER [TR_Users_Delete] ON [Users]`); err != nil {
				t.Fatal(err)
			}
			deleteThroughCascade("cat")
			if _, err := s.rawExec(`ENABLE TRIGGER [TR_Users_Delete] ON [Users]`); err != nil {
				t.Fatal(err)
			}
		} else {
			deleteThroughCascade("cat")
		}
		requireExactCounts(t, s, "deleting cat through the cascade")
		if _, _, err := s.SetDeactivated(ctx, id["dan"], true); err != nil {
			t.Fatal(err)
		}
		deleteThroughCascade("dan")
		requireExactCounts(t, s, "deleting the deactivated dan through the cascade")
	})
}

// Finding 7 on SQLite: EF Core's RETURNING (its default since EF Core 7
// when the table does not say UseSqlReturningClause(false)) reports a row
// as the INSERT made it, before AFTER INSERT triggers ran. What that means
// for the server's two such triggers, exactly:
//
//   - TR_Follows_CreatedAt_Form pads a CreatedAt to seven fractional
//     digits. The column's default is already padded, so the CreatedAt
//     RETURNING reads back is the one stored. A CreatedAt the app sets
//     (EF Core writes "yyyy-MM-dd HH:mm:ss.FFFFFFF", zeros trimmed) is not
//     read back; the stored, padded text is the same instant.
//   - TR_Users_SecurityStamp gives a row inserted with the default, an
//     empty string, its random stamp, so RETURNING reads back the empty
//     string while the row holds the stamp: an app that maps
//     SecurityStamp must set UseSqlReturningClause(false) on Users
//     (docs/efcore does, on Follows too), and then reads the stored stamp
//     (TestEFCoreWritePaths).
func TestEFCoreSQLiteReturning(t *testing.T) {
	t.Parallel()
	s := openTestStore(t)
	var id int64
	var stamp string
	// Microsoft.EntityFrameworkCore.Sqlite's SqliteUpdateSqlGenerator,
	// AppendInsertReturningOperation.
	if err := s.db.QueryRow(`INSERT INTO "Users" ("DeactivatedAt", "ExternalId", "Name")
VALUES (@p0, @p1, @p2)
RETURNING "Id", "FollowerCount", "FollowingCount", "FollowingVersion", "SecurityStamp";`,
		sql.Named("p0", nil), sql.Named("p1", nil), sql.Named("p2", "ann")).Scan(&id, new(int), new(int), new(int64), &stamp); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := s.db.QueryRow(`SELECT "SecurityStamp" FROM "Users" WHERE "Id" = ?`, id).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stamp != "" || !ValidStamp(stored) {
		t.Errorf("RETURNING read the stamp as %q, the row holds %q: want '' and a stamp (the trigger runs after RETURNING)", stamp, stored)
	}
	if err := s.db.QueryRow(`INSERT INTO "Users" ("Name") VALUES ('ben') RETURNING "Id"`).Scan(new(int64)); err != nil {
		t.Fatal(err)
	}

	// The column's default: what RETURNING reads is what is stored.
	var returned string
	if err := s.db.QueryRow(`INSERT INTO "Follows" ("FollowerId", "FolloweeId")
VALUES (@p0, @p1)
RETURNING "CreatedAt", "Muted", "NotificationsEnabled";`, sql.Named("p0", id), sql.Named("p1", id+1)).Scan(&returned, new(bool), new(bool)); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow(`SELECT "CreatedAt" FROM "Follows" WHERE "FollowerId" = ?`, id).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if returned != stored || len(stored) != len(sqliteTime) {
		t.Errorf("RETURNING read CreatedAt %q, the row holds %q: want the same, seven fractional digits", returned, stored)
	}

	// A CreatedAt the app sets, in EF Core's form: padded when stored,
	// the same instant.
	set := time.Date(2024, 5, 1, 10, 0, 0, 500000000, time.UTC)
	sent := set.Format("2006-01-02 15:04:05.9999999")
	if sent != "2024-05-01 10:00:00.5" {
		t.Fatalf("EF Core's form of %v is %q", set, sent)
	}
	if err := s.db.QueryRow(`INSERT INTO "Follows" ("FollowerId", "FolloweeId", "CreatedAt")
VALUES (@p0, @p1, @p2)
RETURNING "Muted", "NotificationsEnabled";`, sql.Named("p0", id+1), sql.Named("p1", id), sql.Named("p2", sent)).Scan(new(bool), new(bool)); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow(`SELECT "CreatedAt" FROM "Follows" WHERE "FollowerId" = ?`, id+1).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != "2024-05-01 10:00:00.5000000" {
		t.Errorf("the app's CreatedAt %q is stored as %q, want it padded", sent, stored)
	}
	if got, err := parseSQLiteTime(stored); err != nil || !got.Equal(set) {
		t.Errorf("the stored CreatedAt reads as %v (%v), want %v", got, err, set)
	}
	requireExactCounts(t, s, "the inserts")
}

// efWithoutHasTrigger is what an EF Core app whose model lacks HasTrigger
// sends on SQL Server: OUTPUT without INTO (SqlServerUpdateSqlGenerator's
// AppendInsertReturningOperation, AppendUpdateReturningOperation and
// AppendDeleteReturningOperation: OUTPUT INSERTED.<generated columns>, or
// OUTPUT 1 for the rows-affected check when nothing is read back). Whether
// SQL Server refuses each is the documented rule ("OUTPUT clause
// (Transact-SQL)", Triggers): "If the OUTPUT clause is specified without
// also specifying the INTO keyword, the target of the DML operation cannot
// have any enabled trigger defined on it for the given DML action. For
// example, if the OUTPUT clause is defined in an UPDATE statement, the
// target table cannot have any enabled UPDATE triggers." Users has only an
// INSTEAD OF DELETE trigger, so its INSERT and UPDATE go through, as the
// server's own sign-up (insertUser) does; Follows has its count trigger for
// every action. TestSQLServerOutputWithoutIntoRule holds each refused
// below to the triggers the migrations define; the live test sends them.
// EF Core declares triggers per table, not per action: one HasTrigger
// switches every write to the table to the INSERT/DELETE-then-SELECT
// path, so Users needs it for its deletes alone.
var efWithoutHasTrigger = []struct {
	name, stmt, decl string
	args             func(ann, ben int64) []any
	// refused: SQL Server answers error 334, "The target table '%.*ls' of
	// the DML statement cannot have any enabled triggers if the statement
	// contains an OUTPUT clause without INTO clause." ("Database engine
	// events and errors"; the message says "any", the rule above says
	// for the statement's action).
	refused bool
}{
	{"insert a user", `INSERT INTO [Users] ([DeactivatedAt], [ExternalId], [Name])
OUTPUT INSERTED.[Id], INSERTED.[FollowerCount], INSERTED.[FollowingCount], INSERTED.[FollowingVersion], INSERTED.[SecurityStamp]
VALUES (@p0, @p1, @p2);`, "@p0 datetime2(7), @p1 nvarchar(450), @p2 nvarchar(450)",
		func(_, _ int64) []any { return []any{nil, nil, "cat"} }, false},
	// The counts and FollowingVersion are generated on add and update,
	// so read back.
	{"update a user", `UPDATE [Users] SET [DeactivatedAt] = @p0
OUTPUT INSERTED.[FollowerCount], INSERTED.[FollowingCount], INSERTED.[FollowingVersion]
WHERE [Id] = @p1;`, "@p0 datetime2(7), @p1 int",
		func(ann, _ int64) []any { return []any{nil, ann} }, false},
	{"delete a user", `DELETE FROM [Users]
OUTPUT 1
WHERE [Id] = @p0;`, "@p0 int",
		func(_, ben int64) []any { return []any{ben} }, true},
	{"follow", `INSERT INTO [Follows] ([FollowerId], [FolloweeId])
OUTPUT INSERTED.[CreatedAt], INSERTED.[Muted], INSERTED.[NotificationsEnabled]
VALUES (@p0, @p1);`, "@p0 int, @p1 int",
		func(ann, ben int64) []any { return []any{ben, ann} }, true},
	{"mute a follow", `UPDATE [Follows] SET [Muted] = @p0
OUTPUT 1
WHERE [FollowerId] = @p1 AND [FolloweeId] = @p2;`, "@p0 bit, @p1 int, @p2 int",
		func(ann, ben int64) []any { return []any{true, ann, ben} }, true},
	{"unfollow", `DELETE FROM [Follows]
OUTPUT 1
WHERE [FollowerId] = @p0 AND [FolloweeId] = @p1;`, "@p0 int, @p1 int",
		func(ann, ben int64) []any { return []any{ann, ben} }, true},
}

// Without HasTrigger, an EF Core app's writes to Follows, and its deletes
// from Users, fail with error 334; its inserts into and updates of Users
// do not (efWithoutHasTrigger says why). Only SQL Server can show it.
func TestEFCoreSQLServerWithoutHasTrigger(t *testing.T) {
	if os.Getenv("MSSQL_DSN") == "" {
		t.Skip(sqlserverSkip)
	}
	s := openSQLServer(t)
	ctx := context.Background()
	a, err := s.CreateUser(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateUser(ctx, "ben")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Follow(ctx, a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	for _, c := range efWithoutHasTrigger {
		t.Run(c.name, func(t *testing.T) {
			args := c.args(a.ID, b.ID)
			names := []string{"p0", "p1", "p2"}[:len(args)]
			// A lone command: EF Core needs no transaction for it.
			text, args := spExecuteSQL("SET IMPLICIT_TRANSACTIONS OFF;\nSET NOCOUNT ON;\n"+c.stmt, c.decl, names, args)
			rows, err := s.db.QueryContext(ctx, text, args...)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			var me mssql.Error
			switch {
			case c.refused && (!errors.As(err, &me) || me.Number != 334):
				t.Errorf("%s\n-> %v, want error 334", c.stmt, err)
			case !c.refused && err != nil:
				t.Errorf("%s\n-> %v, want it to run: no trigger on the table for this action", c.stmt, err)
			}
		})
	}
	requireExactCounts(t, s, "the statements without HasTrigger")
}

// sqlserverTriggers reads, from the SQL Server migrations' Up sections in
// order, which DML actions of each table have an enabled trigger once they
// have all run: CREATE, ALTER (or CREATE OR ALTER) TRIGGER [name] ON [table]
// AFTER|FOR|INSTEAD OF actions, DROP TRIGGER, DISABLE and ENABLE TRIGGER.
func sqlserverTriggers(t *testing.T) map[string]map[string]bool {
	t.Helper()
	define := regexp.MustCompile(`(?is)\b(?:CREATE\s+OR\s+ALTER|CREATE|ALTER)\s+TRIGGER\s+\[?([\w.]+)\]?\s+ON\s+\[?(\w+)\]?\s+(?:WITH\s+[\w\s,]+?\s+)?(?:AFTER|FOR|INSTEAD\s+OF)\s+((?:INSERT|UPDATE|DELETE)(?:\s*,\s*(?:INSERT|UPDATE|DELETE))*)`)
	drop := regexp.MustCompile(`(?is)\bDROP\s+TRIGGER\s+(?:IF\s+EXISTS\s+)?\[?([\w.]+)\]?`)
	toggle := regexp.MustCompile(`(?is)\b(DISABLE|ENABLE)\s+TRIGGER\s+\[?([\w.]+)\]?\s+ON\s+\[?(\w+)\]?`)
	comment := regexp.MustCompile(`--[^\n]*`)
	type trigger struct {
		table    string
		actions  []string
		disabled bool
	}
	triggers := map[string]*trigger{}
	entries, err := fs.ReadDir(migrations, "migrations/sqlserver")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		src, err := fs.ReadFile(migrations, "migrations/sqlserver/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range adopt.Statements(string(src)) {
			stmt = comment.ReplaceAllString(stmt, "")
			if m := define.FindStringSubmatch(stmt); m != nil {
				var actions []string
				for _, a := range strings.Split(m[3], ",") {
					actions = append(actions, strings.ToUpper(strings.TrimSpace(a)))
				}
				triggers[m[1]] = &trigger{table: m[2], actions: actions}
			} else if m := drop.FindStringSubmatch(stmt); m != nil {
				delete(triggers, m[1])
			} else if m := toggle.FindStringSubmatch(stmt); m != nil && triggers[m[2]] != nil {
				triggers[m[2]].disabled = strings.EqualFold(m[1], "DISABLE")
			}
		}
	}
	on := map[string]map[string]bool{}
	for _, tr := range triggers {
		if tr.disabled {
			continue
		}
		if on[tr.table] == nil {
			on[tr.table] = map[string]bool{}
		}
		for _, a := range tr.actions {
			on[tr.table][a] = true
		}
	}
	return on
}

// bareOutput says, for a statement with an OUTPUT clause that has no INTO,
// the table it writes and its action (INSERT, UPDATE or DELETE, MERGE's
// actions included); ok is false for a statement without one.
func bareOutput(stmt string) (table string, actions []string, ok bool) {
	stmt = regexp.MustCompile(`--[^\n]*`).ReplaceAllString(stmt, "")
	target := regexp.MustCompile(`(?is)^\s*(?:(INSERT)\s+(?:INTO\s+)?|(UPDATE)\s+|(DELETE)\s+(?:FROM\s+)?|(MERGE)\s+(?:INTO\s+)?)\[?(\w+)\]?`)
	// The OUTPUT clause runs to the clause after it: INTO, or the VALUES,
	// SELECT, WHERE or FROM of the statement, or its end.
	output := regexp.MustCompile(`(?is)\bOUTPUT\b(.*?)(?:\b(INTO)\b|\bVALUES\b|\bSELECT\b|\bWHERE\b|\bFROM\b|\bDEFAULT\s+VALUES\b|;|$)`)
	for _, one := range strings.Split(stmt, ";") {
		m := target.FindStringSubmatch(one)
		o := output.FindStringSubmatch(one)
		if m == nil || o == nil || o[2] != "" {
			continue
		}
		action := strings.ToUpper(m[1] + m[2] + m[3] + m[4])
		if action == "MERGE" {
			return m[5], []string{"INSERT", "UPDATE", "DELETE"}, true
		}
		return m[5], []string{action}, true
	}
	return "", nil, false
}

// SQL Server refuses OUTPUT without INTO exactly on a table with an
// enabled trigger for the statement's action (efWithoutHasTrigger quotes
// the rule). Here, against the triggers the SQL Server migrations define:
// the server's own statements with OUTPUT never meet one (sign-up's
// insertUser may keep its bare OUTPUT: Users' only trigger is for DELETE),
// and the live test's expectations (TestEFCoreSQLServerWithoutHasTrigger)
// are the rule's, not "any trigger on the table".
func TestSQLServerOutputWithoutIntoRule(t *testing.T) {
	triggered := sqlserverTriggers(t)
	if !triggered["Users"]["DELETE"] || !triggered["Follows"]["INSERT"] {
		t.Fatalf("read the triggers %v from the migrations: TR_Users_Delete or TR_Follows_Counts is missing", triggered)
	}
	refuses := func(stmt string) (string, bool) {
		table, actions, ok := bareOutput(stmt)
		if !ok {
			return "", false
		}
		for _, a := range actions {
			if triggered[table][a] {
				return table + " has an enabled " + a + " trigger", true
			}
		}
		return "", false
	}
	d := &sqlserverDialect{}
	for _, stmt := range []string{d.insertUser(), d.insertEvent(), d.insertFollow()} {
		if why, ok := refuses(stmt); ok {
			t.Errorf("the server sends\n%s\nwith OUTPUT without INTO, and %s: SQL Server refuses it (error 334)", stmt, why)
		}
	}
	if _, _, ok := bareOutput(d.insertUser()); !ok {
		t.Errorf("insertUser no longer has a bare OUTPUT; the rule's live case is gone: %s", d.insertUser())
	}
	for _, c := range efWithoutHasTrigger {
		if _, _, ok := bareOutput(c.stmt); !ok {
			t.Errorf("%s: no OUTPUT without INTO in %s", c.name, c.stmt)
			continue
		}
		why, refused := refuses(c.stmt)
		if refused != c.refused {
			if why == "" {
				why = "no enabled trigger on its table for its action"
			}
			t.Errorf("%s: the live test expects refused=%v, but %s\n%s", c.name, c.refused, why, c.stmt)
		}
	}
}

// Four follows or more in one SaveChanges on a table with HasTrigger:
// MERGE with OUTPUT INTO a table variable, then a SELECT joined to it
// (SqlServerUpdateSqlGenerator.AppendBulkInsertOperation, from
// MergeIntoMinimumThreshold, 4, rows; below it, one INSERT and SELECT per
// row, the statements TestEFCoreWritePaths sends). The keys are written,
// not generated, so the batch needs EF Core's own transaction: no SET
// IMPLICIT_TRANSACTIONS OFF.
func TestEFCoreSQLServerBatchedFollows(t *testing.T) {
	if os.Getenv("MSSQL_DSN") == "" {
		t.Skip(sqlserverSkip)
	}
	s := openSQLServer(t)
	ctx := context.Background()
	var ids []int64
	for _, name := range []string{"ann", "ben", "cat"} {
		u, err := s.CreateUser(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
	}
	batch := `SET NOCOUNT ON;
DECLARE @inserted0 TABLE ([FollowerId] int, [FolloweeId] int, [_Position] [int]);
MERGE [Follows] USING (
VALUES (@p0, @p1, 0),
(@p2, @p3, 1),
(@p4, @p5, 2),
(@p6, @p7, 3)) AS i ([FollowerId], [FolloweeId], _Position) ON 1=0
WHEN NOT MATCHED THEN
INSERT ([FollowerId], [FolloweeId])
VALUES (i.[FollowerId], i.[FolloweeId])
OUTPUT INSERTED.[FollowerId], INSERTED.[FolloweeId], i._Position
INTO @inserted0;

SELECT [t].[CreatedAt], [t].[Muted], [t].[NotificationsEnabled] FROM [Follows] t
INNER JOIN @inserted0 i ON ([t].[FollowerId] = [i].[FollowerId]) AND ([t].[FolloweeId] = [i].[FolloweeId])
ORDER BY [i].[_Position];`
	text, args := spExecuteSQL(batch, "@p0 int, @p1 int, @p2 int, @p3 int, @p4 int, @p5 int, @p6 int, @p7 int",
		[]string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"},
		[]any{ids[0], ids[2], ids[1], ids[2], ids[2], ids[0], ids[0], ids[1]})
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, text, args...)
	if err != nil {
		t.Fatalf("%s\n-> %v", batch, err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s\n-> %v", batch, err)
	}
	rows.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("EF Core reads back %d rows, want 4", n)
	}
	requireExactCounts(t, s, "four follows in one batch")
}

// The EF Core model in docs/efcore names every key, constraint, index and
// trigger the migrations create, on any dialect, and no other: an app with
// that model finds nothing to migrate, and declares HasTrigger on every
// table with a trigger (SQL Server refuses EF Core's OUTPUT writes for the
// actions a trigger is for, error 334: TestSQLServerOutputWithoutIntoRule).
func TestEFCoreModelNames(t *testing.T) {
	src, err := os.ReadFile("../docs/efcore/FollowsContext.cs")
	if err != nil {
		t.Fatal(err)
	}
	// DF_ names are SQL Server's default constraints, which the model
	// leaves unnamed (it says why in a comment).
	name := regexp.MustCompile(`\b(?:PK|FK|IX|CK|TR)_[A-Za-z_]+`)
	inModel := map[string]bool{}
	for _, n := range name.FindAllString(string(src), -1) {
		inModel[n] = true
	}
	inSchema := map[string]bool{}
	for _, d := range Dialects {
		script, err := SchemaScript(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range name.FindAllString(script, -1) {
			inSchema[n] = true
		}
	}
	for n := range inSchema {
		if !inModel[n] {
			t.Errorf("the migrations create %s; docs/efcore/FollowsContext.cs does not name it", n)
		}
	}
	for n := range inModel {
		if !inSchema[n] {
			t.Errorf("docs/efcore/FollowsContext.cs names %s, which no migration creates", n)
		}
	}
	for _, trigger := range []string{`HasTrigger("TR_Follows_Counts")`, `HasTrigger("TR_Users_Delete")`, `UseSqlReturningClause(false)`} {
		if !strings.Contains(string(src), trigger) {
			t.Errorf("the model lacks %s", trigger)
		}
	}
}

// The column details the EF Core model must repeat so that an app's
// migrations find nothing to change, read from the migrations themselves
// so that a new migration the model lags behind fails here: every
// collation SQL Server's give a column (UseCollation), every width of an
// nvarchar column (HasMaxLength), PostgreSQL's GENERATED ALWAYS
// identities (UseIdentityAlwaysColumn; Npgsql's default is BY DEFAULT),
// every column a migration adds (a property of the CLR type and
// nullability the column's type maps to), every column a trigger keeps
// (ValueGeneratedOnAddOrUpdate), and on every dialect a column for each
// property.
func TestEFCoreModelColumns(t *testing.T) {
	src, err := os.ReadFile("../docs/efcore/FollowsContext.cs")
	if err != nil {
		t.Fatal(err)
	}
	model := string(src)
	script := func(dialect string) string {
		s, err := SchemaScript(dialect)
		if err != nil {
			t.Fatal(err)
		}
		return regexp.MustCompile(`--[^\n]*`).ReplaceAllString(s, "")
	}
	sqlserver := script("sqlserver")
	for _, m := range regexp.MustCompile(`(?i)\bCOLLATE\s+(\w+)`).FindAllStringSubmatch(sqlserver, -1) {
		if want := `UseCollation("` + m[1] + `")`; !strings.Contains(model, want) {
			t.Errorf("a SQL Server migration gives a column COLLATE %s; the model lacks %s", m[1], want)
		}
	}
	for _, m := range regexp.MustCompile(`\[(\w+)\]\s+nvarchar\((\d+)\)`).FindAllStringSubmatch(sqlserver, -1) {
		if want := "HasMaxLength(" + m[2] + ")"; !strings.Contains(model, want) {
			t.Errorf("a SQL Server migration makes %s nvarchar(%s); the model has no %s", m[1], m[2], want)
		}
	}
	always := len(regexp.MustCompile(`(?i)GENERATED\s+ALWAYS\s+AS\s+IDENTITY`).FindAllString(script("postgres"), -1))
	if got := strings.Count(model, "UseIdentityAlwaysColumn()"); got != always {
		t.Errorf("the PostgreSQL migrations make %d GENERATED ALWAYS identity columns; the model declares %d UseIdentityAlwaysColumn()", always, got)
	}

	// Every column a SQL Server migration adds to a table is a property
	// of the table's entity in Entities.cs, of the CLR type EF Core maps
	// to the column's type, nullable where the column is.
	props := efEntityProperties(t)
	entity := map[string]string{"Users": "User", "Follows": "Follow", "Blocks": "Block"}
	clr := map[string]string{"int": "int", "bigint": "long", "smallint": "short", "bit": "bool", "datetime2": "DateTime", "nvarchar": "string"}
	for _, m := range regexp.MustCompile(`(?i)ALTER TABLE \[(\w+)\] ADD \[(\w+)\] (\w+)[^;]*?\b(NOT NULL|NULL)\b`).FindAllStringSubmatch(sqlserver, -1) {
		want := clr[strings.ToLower(m[3])]
		if !strings.EqualFold(m[4], "NOT NULL") {
			want += "?"
		}
		if got, ok := props[entity[m[1]]][m[2]]; !ok || got != want {
			t.Errorf("a SQL Server migration adds %s.%s %s %s; Entities.cs declares %s.%s as %q, want %s", m[1], m[2], m[3], m[4], entity[m[1]], m[2], got, want)
		}
	}
	// Every column a trigger keeps (SET [X] = u.[X] + ...) the model marks
	// generated, so that EF Core never sends it and reads it back.
	generated := regexp.MustCompile(`ValueGeneratedOnAddOrUpdate\(\)`)
	for _, m := range regexp.MustCompile(`\[(\w+)\] = u\.\[(\w+)\] \+`).FindAllStringSubmatch(sqlserver, -1) {
		if m[1] != m[2] {
			continue
		}
		byName := strings.Contains(model, "nameof(User."+m[1]+")")
		byLambda := regexp.MustCompile(`Property\(x => x\.` + m[1] + `\)[^;]*\.ValueGeneratedOnAddOrUpdate\(\)`).MatchString(model)
		if !(byName && generated.MatchString(model)) && !byLambda {
			t.Errorf("the SQL Server count trigger keeps Users.%s; the model does not mark it ValueGeneratedOnAddOrUpdate", m[1])
		}
	}
	// And every dialect's migrations make each scalar property's column
	// (ViewerWrite is PostgreSQL's alone, UserRename SQLite's and
	// PostgreSQL's).
	quote := map[string]func(string) string{
		"sqlite":    func(c string) string { return `"` + c + `"` },
		"postgres":  func(c string) string { return `"` + c + `"` },
		"sqlserver": func(c string) string { return "[" + c + "]" },
	}
	for _, d := range Dialects {
		text := script(d)
		for class, cols := range props {
			if class == "ViewerWrite" && d != "postgres" || class == "UserRename" && d == "sqlserver" {
				continue
			}
			for col := range cols {
				if !strings.Contains(text, quote[d](col)) {
					t.Errorf("Entities.cs declares %s.%s; the %s migrations make no column %s", class, col, d, quote[d](col))
				}
			}
		}
	}
}

// efEntityProperties reads docs/efcore/Entities.cs: each class's scalar
// properties (navigations left out), by name, with their C# types.
func efEntityProperties(t *testing.T) map[string]map[string]string {
	t.Helper()
	src, err := os.ReadFile("../docs/efcore/Entities.cs")
	if err != nil {
		t.Fatal(err)
	}
	scalar := map[string]bool{"int": true, "long": true, "short": true, "bool": true, "DateTime": true, "string": true}
	out := map[string]map[string]string{}
	class := ""
	classRE := regexp.MustCompile(`^public class (\w+)`)
	propRE := regexp.MustCompile(`^\s*public ([\w<>]+\??) (\w+) \{`)
	for _, line := range strings.Split(string(src), "\n") {
		if m := classRE.FindStringSubmatch(line); m != nil {
			class = m[1]
			out[class] = map[string]string{}
		} else if m := propRE.FindStringSubmatch(line); m != nil && class != "" && scalar[strings.TrimSuffix(m[1], "?")] {
			out[class][m[2]] = m[1]
		}
	}
	if len(out["User"]) == 0 || len(out["Follow"]) == 0 {
		t.Fatalf("read no properties of User or Follow from Entities.cs: %v", out)
	}
	return out
}

// Finding 4 of the SQL Server review, as an EF Core app meets it: the app
// deletes, in a transaction of its own, a user that a table of its own
// still refers to, after writing something else in that transaction. The
// foreign key refuses the delete on every dialect; what is left of the
// transaction differs, and docs/efcore/porting.md tells the app so:
//
//   - SQLite: the failed statement alone is undone; the transaction and
//     its earlier write go on, as with the article's plain schema.
//   - PostgreSQL: any error aborts the transaction; its later statements
//     fail (SQLSTATE 25P02) until it is rolled back.
//   - SQL Server: the 547 is raised inside TR_Users_Delete, the INSTEAD OF
//     DELETE trigger, where XACT_ABORT is on ("SET XACT_ABORT
//     (Transact-SQL)": "OFF is the default setting in a T-SQL statement,
//     while ON is the default setting in a trigger"; "When SET XACT_ABORT
//     is ON, if a Transact-SQL statement raises a run-time error, the
//     entire transaction is terminated and rolled back"). The earlier
//     write is gone at once, before the app rolls back. With the
//     article's schema (no trigger) the 547 would have ended only the
//     statement.
func TestEFCoreFailedUserDeleteInTransaction(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a := authorWithPost(t, s)
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		// The app's earlier write in its transaction.
		if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO Users (Name) VALUES ('bystander')`)); err != nil {
			t.Fatal(err)
		}
		// EF Core's Remove, as it sends it (efWritesFor's deleteUser).
		ef := efWritesFor[s.d.name()].deleteUser
		q, args := ef.stmts[0], []any{sql.Named("p0", a.ID)}
		switch s.d.name() {
		case "postgres":
			args = []any{a.ID}
		case "sqlserver":
			q, args = spExecuteSQL(q, ef.decl, ef.params, []any{a.ID})
		}
		_, err = tx.ExecContext(ctx, q, args...)
		if err == nil {
			t.Fatalf("%s\n-> deleted a user a post refers to", ef.stmts[0])
		}
		var bystanders int
		switch s.d.name() {
		case "sqlite":
			if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT COUNT(*) FROM Users WHERE Name = 'bystander'`)).Scan(&bystanders); err != nil || bystanders != 1 {
				t.Errorf("after the refused delete the transaction's earlier write reads %d (%v), want 1: SQLite undoes the statement alone", bystanders, err)
			}
			if err := tx.Commit(); err != nil {
				t.Errorf("commit after the refused delete: %v", err)
			}
		case "postgres":
			if err := tx.QueryRowContext(ctx, s.d.rebind(`SELECT COUNT(*) FROM Users WHERE Name = 'bystander'`)).Scan(&bystanders); err == nil || !strings.Contains(err.Error(), "25P02") {
				t.Errorf("a statement after the refused delete: %v, want 25P02 (the transaction is aborted)", err)
			}
		case "sqlserver":
			var me mssql.Error
			got547 := errors.As(err, &me) && me.Number == 547
			for _, e := range me.All {
				got547 = got547 || e.Number == 547
			}
			if !got547 {
				t.Errorf("the refused delete: %v, want error 547", err)
			}
			// Read past locks from another session: a live transaction
			// would still hold its uncommitted bystander.
			if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM Users WITH (NOLOCK) WHERE Name = 'bystander'`).Scan(&bystanders); err != nil || bystanders != 0 {
				t.Errorf("after the 547 inside TR_Users_Delete the transaction's earlier write still reads %d (%v), want 0: the whole transaction rolled back", bystanders, err)
			}
		}
		if _, err := s.UserByName(ctx, "author"); err != nil {
			t.Errorf("the user is gone after the refused delete: %v", err)
		}
	})
}
