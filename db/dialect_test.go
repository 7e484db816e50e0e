package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
)

// The exact DDL the SQL Server issue asks for, names included.
const wantFollowsDDL = `CREATE TABLE [Follows] (
    [FollowerId] int NOT NULL,
    [FolloweeId] int NOT NULL,
    [CreatedAt] datetime2 NOT NULL DEFAULT (SYSUTCDATETIME()),
    CONSTRAINT [PK_Follows] PRIMARY KEY ([FollowerId], [FolloweeId]),
    CONSTRAINT [CK_Follows_NoSelfFollow] CHECK (FollowerId <> FolloweeId),
    CONSTRAINT [FK_Follows_Users_FolloweeId] FOREIGN KEY ([FolloweeId]) REFERENCES [Users] ([Id]) ON DELETE CASCADE,
    CONSTRAINT [FK_Follows_Users_FollowerId] FOREIGN KEY ([FollowerId]) REFERENCES [Users] ([Id])
);`

func TestSQLServerDDL(t *testing.T) {
	script, err := SchemaScript("sqlserver")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(script, wantFollowsDDL+"\nGO\n") {
		t.Errorf("the SQL Server script lacks the Follows table exactly as specified:\n%s", script)
	}
	for _, want := range []string{
		"CREATE TABLE [Users]", "CONSTRAINT [PK_Users] PRIMARY KEY ([Id])", "CREATE UNIQUE INDEX [IX_Users_Name]",
		"CREATE INDEX [IX_Follows_FolloweeId_CreatedAt_FollowerId] ON [Follows] ([FolloweeId], [CreatedAt], [FollowerId]);",
		"CREATE INDEX [IX_Follows_FollowerId_CreatedAt_FolloweeId] ON [Follows] ([FollowerId], [CreatedAt], [FolloweeId]);",
		"CREATE TRIGGER [TR_Follows_Counts] ON [Follows] AFTER INSERT, UPDATE, DELETE",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the SQL Server script lacks %q", want)
		}
	}
	// A second cascade path would make SQL Server refuse a table (1785).
	for _, stmt := range strings.Split(script, "\nGO\n") {
		if strings.Contains(stmt, "CREATE TABLE") && strings.Count(stmt, "ON DELETE CASCADE") > 1 {
			t.Errorf("a table with two cascade paths:\n%s", stmt)
		}
	}
	if n := strings.Count(script, "ON DELETE CASCADE"); n != 2 {
		t.Errorf("%d ON DELETE CASCADE in the script, want 2 (Follows.FolloweeId, Blocks.BlockedId)", n)
	}
	if strings.Contains(script, "+goose") {
		t.Error("goose annotations left in the script")
	}
}

func TestSQLiteScript(t *testing.T) {
	script, err := SchemaScript("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`CONSTRAINT "CK_Follows_NoSelfFollow" CHECK (FollowerId <> FolloweeId)`, `CREATE TRIGGER "TR_Follows_Insert_Counts"`} {
		if !strings.Contains(script, want) {
			t.Errorf("the SQLite script lacks %q", want)
		}
	}
	if _, err := SchemaScript("oracle"); err == nil {
		t.Error("a script for an unknown dialect")
	}
}

// SQL Server's errors, built as go-mssqldb returns them.
func TestClassifySQLServer(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"duplicate follow", mssql.Error{Number: 2627, Message: "Violation of PRIMARY KEY constraint 'PK_Follows'. Cannot insert duplicate key in object 'dbo.Follows'."}, errRetry},
		{"duplicate follow is a duplicate", mssql.Error{Number: 2627, Message: "Violation of PRIMARY KEY constraint 'PK_Follows'. Cannot insert duplicate key in object 'dbo.Follows'."}, errDuplicate},
		{"name taken", mssql.Error{Number: 2601, Message: "Cannot insert duplicate key row in object 'dbo.Users' with unique index 'IX_Users_Name'."}, ErrNameTaken},
		{"self-follow", mssql.Error{Number: 547, Message: "The INSERT statement conflicted with the CHECK constraint \"CK_Follows_NoSelfFollow\"."}, ErrSelfFollow},
		{"missing user", mssql.Error{Number: 547, Message: "The INSERT statement conflicted with the FOREIGN KEY constraint \"FK_Follows_Users_FolloweeId\"."}, ErrNotFound},
		{"deadlock", mssql.Error{Number: 1205, Message: "Transaction (Process ID 52) was deadlocked on lock resources with another process and has been chosen as the deadlock victim."}, errRetry},
		{"wrapped", fmt.Errorf("follow 1 -> 2: %w", mssql.Error{Number: 547, Message: "conflicted with the CHECK constraint \"CK_Follows_NoSelfFollow\""}), ErrSelfFollow},
		{"pointer", &mssql.Error{Number: 1205, Message: "deadlock victim"}, errRetry},
		{"filegroup full", mssql.Error{Number: 1105, Message: "Could not allocate space for object 'dbo.Users'.'PK_Users' in database 'follows' because the 'PRIMARY' filegroup is full."}, ErrStorageFull},
		{"log full", mssql.Error{Number: 9002, Message: "The transaction log for database 'follows' is full due to 'LOG_BACKUP'."}, ErrStorageFull},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := classifySQLServer(tc.err)
			if !errors.Is(got, tc.want) {
				t.Errorf("classify = %v, want %v", got, tc.want)
			}
			var me mssql.Error
			var pme *mssql.Error
			if !errors.As(got, &me) && !errors.As(got, &pme) {
				t.Error("the driver error is no longer wrapped, so logs lose it")
			}
		})
	}
	other := mssql.Error{Number: 208, Message: "Invalid object name 'Nope'."}
	if got := classifySQLServer(other); errors.Is(got, ErrNotFound) || errors.Is(got, errRetry) {
		t.Errorf("an unrelated error classified as %v", got)
	}
}

// SQLite's errors, from real statements on a real file.
func TestClassifySQLite(t *testing.T) {
	t.Parallel()
	s := openTestStore(t)
	ctx := context.Background()
	a, _ := s.CreateUser(ctx, "a")
	b, _ := s.CreateUser(ctx, "b")
	if _, err := s.Follow(ctx, a.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, stmt string
		args       []any
		want       error
	}{
		{"self-follow", `INSERT INTO Follows (FollowerId, FolloweeId) VALUES (?, ?)`, []any{a.ID, a.ID}, ErrSelfFollow},
		{"missing user", `INSERT INTO Follows (FollowerId, FolloweeId) VALUES (?, ?)`, []any{a.ID, 999}, ErrNotFound},
		{"name taken", `INSERT INTO Users (Name) VALUES (?)`, []any{"A"}, ErrNameTaken},
		{"duplicate follow", `INSERT INTO Follows (FollowerId, FolloweeId) VALUES (?, ?)`, []any{a.ID, b.ID}, errDuplicate},
		{"duplicate user id", `INSERT INTO Users (Id, Name) VALUES (?, ?)`, []any{a.ID, "c"}, errDuplicate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.db.Exec(tc.stmt, tc.args...)
			if got := classifySQLite(err); !errors.Is(got, tc.want) {
				t.Errorf("classify(%v) = %v, want %v", err, got, tc.want)
			}
		})
	}
}

func TestRebindAtP(t *testing.T) {
	got := rebindAtP(`SELECT a FROM t WHERE x = ? AND y = '?' AND z IN (?, ?)`)
	if want := `SELECT a FROM t WHERE x = @p1 AND y = '?' AND z IN (@p2, @p3)`; got != want {
		t.Errorf("rebind = %s\nwant   %s", got, want)
	}
}

// A transaction that lost a race runs again, a bounded number of times.
func TestTransactionRetry(t *testing.T) {
	t.Parallel()
	s := openTestStore(t)
	for _, tc := range []struct{ failures, wantRuns int }{{1, 2}, {2, 3}, {5, maxTxAttempts}} {
		runs := 0
		err := s.inTx(context.Background(), func(r runner) error {
			runs++
			if runs <= tc.failures {
				return fmt.Errorf("deadlock: %w", errRetry)
			}
			return nil
		})
		if runs != tc.wantRuns || (tc.failures < maxTxAttempts) != (err == nil) {
			t.Errorf("%d failures: %d runs, err %v; want %d runs", tc.failures, runs, err, tc.wantRuns)
		}
	}
}

// A transaction whose function panics is rolled back: the next write gets
// the write lock at once rather than waiting for a transaction nobody
// will end.
func TestTransactionPanicReleasesTheLock(t *testing.T) {
	s := openTestStore(t)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not reach the caller")
			}
		}()
		s.inTx(context.Background(), func(r runner) error {
			if _, err := r.exec(context.Background(), s.q.insertUser, "ghost", newStamp()); err != nil {
				t.Fatal(err)
			}
			panic("in the middle of a transaction")
		})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := s.CreateUser(ctx, "next"); err != nil {
		t.Fatalf("a write after the panic: %v", err)
	}
	if _, err := s.UserByName(context.Background(), "ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the panicking transaction's user: %v, want ErrNotFound (rolled back)", err)
	}
}

// Every dialect's list statements read a page each way as its template
// says: from the cursor it starts at, up to the one it stops at, in the
// order of the way, with what it binds; SQL Server's included, which no
// test here can run.
func TestListStatementsEachWay(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	before := Cursor{At: at, ID: 42}
	after := Cursor{At: at.Add(-time.Hour), ID: 9}
	pages := [...][]PageQuery{
		forward:  {{User: 7, First: 4, After: after}},
		backward: {{User: 7, Backward: true, Last: 4, Before: before}},
	}
	for _, c := range []struct {
		d    dialect
		want [2][]string // in the text of each way, in order
		args [2]string   // each way's parameters, as %v prints them
	}{
		{&sqliteDialect{}, [2][]string{
			{"WHERE f.FolloweeId = ? AND (f.CreatedAt, f.FollowerId) < (?, ?)\n", "ORDER BY f.CreatedAt DESC, f.FollowerId DESC LIMIT 11)"},
			{"WHERE f.FolloweeId = ? AND (f.CreatedAt, f.FollowerId) > (?, ?)\n", "ORDER BY f.CreatedAt ASC, f.FollowerId ASC LIMIT 11)"},
		}, [2]string{
			"[0 7 2025-01-02 02:04:05.0000006 9]",
			"[0 7 2025-01-02 03:04:05.0000006 42]",
		}},
		{&sqlserverDialect{}, [2][]string{
			{"WHERE f.FolloweeId = q.UserId\n",
				"AND (f.CreatedAt < q.FromAt OR (f.CreatedAt = q.FromAt AND f.FollowerId < q.FromId))\n",
				"AND (f.CreatedAt > q.ToAt OR (f.CreatedAt = q.ToAt AND f.FollowerId > q.ToId))\n",
				"ORDER BY f.CreatedAt DESC, f.FollowerId DESC) AS f"},
			{"WHERE f.FolloweeId = q.UserId\n",
				"AND (f.CreatedAt > q.FromAt OR (f.CreatedAt = q.FromAt AND f.FollowerId > q.FromId))\n",
				"AND (f.CreatedAt < q.ToAt OR (f.CreatedAt = q.ToAt AND f.FollowerId < q.ToId))\n",
				"ORDER BY f.CreatedAt ASC, f.FollowerId ASC) AS f"},
		}, [2]string{
			`[[[0,7,5,"2025-01-02T02:04:05.0000006",9,"0001-01-01T00:00:00.0000000",0]]]`,
			`[[[0,7,5,"2025-01-02T03:04:05.0000006",42,"9999-12-31T23:59:59.9999999",2147483647]]]`,
		}},
		{&postgresDialect{}, [2][]string{
			{"WHERE f.FolloweeId = q.UserId AND (f.CreatedAt, f.FollowerId) < (q.FromAt, q.FromId)\n",
				"AND (f.CreatedAt, f.FollowerId) > (q.ToAt, q.ToId)\n",
				"ORDER BY f.CreatedAt DESC, f.FollowerId DESC\n  LIMIT q.Lim"},
			{"WHERE f.FolloweeId = q.UserId AND (f.CreatedAt, f.FollowerId) > (q.FromAt, q.FromId)\n",
				"AND (f.CreatedAt, f.FollowerId) < (q.ToAt, q.ToId)\n",
				"ORDER BY f.CreatedAt ASC, f.FollowerId ASC\n  LIMIT q.Lim"},
		}, [2]string{
			`[[[0,7,5,"2025-01-02T02:04:05.000000Z",9,"0001-01-01T00:00:00.000000Z",0]]]`,
			`[[[0,7,5,"2025-01-02T03:04:05.000000Z",42,"9999-12-31T23:59:59.999999Z",2147483647]]]`,
		}},
	} {
		for way, qs := range pages {
			text, args := c.d.pagesQuery(listFollowers, pageWay(way), qs)
			rest := text
			for _, want := range c.want[way] {
				_, after, found := strings.Cut(rest, want)
				if !found {
					t.Errorf("%s, way %d: lacks, or has out of order, %q:\n%s", c.d.name(), way, want, text)
					break
				}
				rest = after
			}
			if got := fmt.Sprint(args); got != c.args[way] {
				t.Errorf("%s, way %d: binds %s, want %s", c.d.name(), way, got, c.args[way])
			}
		}
		// Query.users: by id ascending forward, descending backward,
		// between two ids.
		for way, order := range []string{forward: "ORDER BY u.Id ASC", backward: "ORDER BY u.Id DESC"} {
			if text := c.d.listUsers()[way]; !strings.Contains(text, order) || !strings.Contains(text, "u.Id BETWEEN ") {
				t.Errorf("%s: users, way %d: %s", c.d.name(), way, text)
			}
		}
	}
}

// SQLite's times are read as time.Parse reads them, the server's own form
// digit by digit and anything else by time.Parse.
func TestParseSQLiteTime(t *testing.T) {
	for _, s := range []string{
		"2024-06-06 12:35:00.2881950", "2024-06-06 12:35:00.0000000", "0001-01-01 00:00:00.0000000",
		"9999-12-31 23:59:59.9999999", "2024-02-29 01:02:03.0000001", "2023-02-29 01:02:03.0000000",
		"2024-04-31 01:02:03.0000000", "2024-13-01 01:02:03.0000000", "2024-00-01 01:02:03.0000000",
		"2024-01-00 01:02:03.0000000", "2024-01-01 24:00:00.0000000", "2024-01-01 23:60:00.0000000",
		"2024-01-01 23:59:60.0000000", "2024-01-01 23:59:59.000000x", "2024-01-01T23:59:59.0000000",
		"2024-01-01 23:59:59", "2024-01-01 23:59:59.123", "2024-1-01 23:59:59.00000000", "+024-01-01 23:59:59.0000000",
	} {
		want, werr := time.Parse(time.DateTime, s)
		got, err := parseSQLiteTime(s)
		if (err != nil) != (werr != nil) || !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("%q: got %v, %v; time.Parse %v, %v", s, got, err, want, werr)
		}
	}
}

// Every dialect the store speaks ranks suggestions one way or the other,
// bulk-imports and exports (the compiler checks each capability's
// methods; this checks which capabilities each has), and Dialects names
// them all.
func TestEveryDialectHasWhatTheStoreNeeds(t *testing.T) {
	var names []string
	for _, d := range allDialects {
		names = append(names, d.name())
		_, inSQL := d.(sqlSuggester)
		_, inGo := d.(listSuggester)
		if inSQL == inGo {
			t.Errorf("%s: ranks suggestions in SQL %v, in Go %v: want one of them", d.name(), inSQL, inGo)
		}
		if _, ok := d.(bulkLoader); !ok {
			t.Errorf("%s: no bulk import", d.name())
		}
		if _, ok := d.(adopter); !ok {
			t.Errorf("%s: no adoption, nor export", d.name())
		}
		if st := newStatements(d); st.usersByID == "" || st.recountIDs == "" || st.insertFollow == "" {
			t.Errorf("%s: statements missing: %+v", d.name(), st)
		}
	}
	if !slices.Equal(names, Dialects) {
		t.Errorf("the dialects are %v, Dialects says %v", names, Dialects)
	}
}
